# Example: ingest one MSK topic (IAM authentication) into a Hudi table in a new bucket.
#
#   cargo lambda build --release --arm64 --output-format zip   # from the repository root
#   cd infra/examples/msk
#   terraform init
#   terraform apply -var msk_cluster_arn=arn:aws:kafka:... -var table_properties_uri=s3://.../trips.properties \
#     -var hoodie_table_name=trips -var alarm_email=oncall@example.com

module "sink" {
  source = "../../modules/msk-hudi-sink"

  name            = "trips-sink"
  writer_zip      = "${path.root}/../../../target/lambda/hudi-sink-writer/bootstrap.zip"
  coordinator_zip = "${path.root}/../../../target/lambda/hudi-sink-coordinator/bootstrap.zip"

  msk_cluster_arn   = var.msk_cluster_arn
  topic             = var.topic
  consumer_group_id = "hudi-sink-${var.topic}"
  starting_position = "TRIM_HORIZON"

  batch_size                         = 10000
  maximum_batching_window_in_seconds = 30

  table_prefix         = "tables/${var.topic}"
  dead_letter_prefix   = "dead-letters/${var.topic}"
  table_properties_uri = var.table_properties_uri
  schema_uri           = var.schema_uri

  # Glue Data Catalog sync (empty = none); deployment_properties then lists the sync keys.
  glue_database_name = var.glue_database_name
  glue_table_name    = var.glue_table_name

  writer_memory_size = 2048

  # Alarms and dashboard: the Table dimension of the sink's metrics, and who gets the alarms (empty = nobody).
  hoodie_table_name = var.hoodie_table_name
  alarm_email       = var.alarm_email

  tags = {
    app = "msk-hudi-sink"
  }
}
