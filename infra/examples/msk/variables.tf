variable "region" {
  description = "AWS region of the MSK cluster (the event source mapping must be in the cluster's region)."
  type        = string
  default     = "eu-west-1"
}

variable "msk_cluster_arn" {
  description = "ARN of the MSK cluster (IAM authentication enabled)."
  type        = string
}

variable "topic" {
  description = "Kafka topic to ingest."
  type        = string
  default     = "trips"
}

variable "table_properties_uri" {
  description = "s3:// URI of the table properties file (see docs/deploy.md, the table properties file)."
  type        = string
}

variable "schema_uri" {
  description = "s3:// URI of the Avro schema named by hoodie.streamer.schemaprovider.source.schema.file, or empty."
  type        = string
  default     = ""
}

variable "glue_database_name" {
  description = "Glue database the coordinator syncs the table into (hoodie.datasource.hive_sync.database), or empty for no catalog sync."
  type        = string
  default     = ""
}

variable "glue_table_name" {
  description = "Glue table of the sync (hoodie.datasource.hive_sync.table, by default hoodie.table.name); required with glue_database_name."
  type        = string
  default     = ""
}

variable "hoodie_table_name" {
  description = "hoodie.table.name of the table properties file (the Table dimension of the sink's metrics, which the alarms and the dashboard select)."
  type        = string
}

variable "alarm_email" {
  description = "Address that receives the alarms through a created, encrypted SNS topic (confirm the subscription), or empty for alarms without actions."
  type        = string
  default     = ""
}
