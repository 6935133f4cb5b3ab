output "writer_function_name" {
  description = "Writer function name."
  value       = aws_lambda_function.writer.function_name
}

output "writer_function_arn" {
  description = "Writer function ARN."
  value       = aws_lambda_function.writer.arn
}

output "coordinator_function_name" {
  description = "Coordinator function name (hudi.sink.coordinator.function); null with topics."
  value       = local.is_single ? aws_lambda_function.coordinator[0].function_name : null
}

output "coordinator_function_arn" {
  description = "Coordinator function ARN; null with topics."
  value       = local.is_single ? aws_lambda_function.coordinator[0].arn : null
}

output "event_source_mapping_id" {
  description = "UUID of the writer's event source mapping (aws lambda get-event-source-mapping --uuid ...); null with topics (aws lambda list-event-source-mappings --function-name <name>-writer)."
  value       = local.is_single ? aws_lambda_event_source_mapping.writer[0].uuid : null
}

output "lock_table_name" {
  description = "DynamoDB lock table (hoodie.write.lock.dynamodb.table)."
  value       = aws_dynamodb_table.lock.name
}

output "lock_table_arn" {
  description = "DynamoDB lock table ARN."
  value       = aws_dynamodb_table.lock.arn
}

output "bucket_name" {
  description = "S3 bucket holding the table and the dead letters."
  value       = local.bucket_name
}

output "base_path" {
  description = "Table base path (hoodie.base.path; with topics every table's, $table standing for its name)."
  value       = "s3://${local.bucket_name}/${var.table_prefix}${local.is_routed ? "/$table" : ""}"
}

output "dead_letter_path" {
  description = "Dead-letter location (hudi.sink.dead.letter.path; with topics every table's)."
  value       = "s3://${local.bucket_name}/${var.dead_letter_prefix}${local.is_routed ? "/$table" : ""}"
}

output "writer_role_arn" {
  description = "Writer execution role ARN."
  value       = aws_iam_role.writer.arn
}

output "coordinator_role_arn" {
  description = "Coordinator execution role ARN; null with topics."
  value       = local.is_single ? aws_iam_role.coordinator[0].arn : null
}

output "writer_log_group_name" {
  description = "Writer log group (JSON logs and one EMF metrics line per invocation)."
  value       = aws_cloudwatch_log_group.writer.name
}

output "coordinator_log_group_name" {
  description = "Coordinator log group; null with topics."
  value       = local.is_single ? aws_cloudwatch_log_group.coordinator[0].name : null
}

output "deployment_properties" {
  description = "The deployment-bound lines of the table properties file (append them to your table's keys); with topics the routes and the shared keys of every table, without a coordinator function."
  value       = local.is_single ? local.single_properties : local.routed_properties
}

output "route_properties" {
  description = "With topics, the route of the properties file (docs/routing.md): every topic <topic_prefix><name> into the table <table_name_prefix><name>, as written in a .properties file (backslashes doubled); null with topic."
  value       = local.is_routed ? local.route_properties : null
}

output "glue_database_name" {
  description = "Glue database of the catalog sync (hoodie.datasource.hive_sync.database, with hoodie.datasource.meta.sync.enable=true and hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool); empty = no sync."
  value       = var.glue_database_name
}

output "glue_table_name" {
  description = "Glue table of the catalog sync (hoodie.datasource.hive_sync.table; merge-on-read adds _ro and _rt); empty = no sync."
  value       = var.glue_table_name
}

output "alarm_topic_arn" {
  description = "SNS topic the alarms notify (the created <name>-alarms topic, or alarm_topic_arn); empty = the alarms have no actions."
  value       = local.alarm_topic_arn
}

output "dashboard_name" {
  description = "CloudWatch dashboard of the table's records, bytes, lag, errors and coordinator duration."
  value       = aws_cloudwatch_dashboard.sink.dashboard_name
}
