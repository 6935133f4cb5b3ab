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
  description = "s3:// URI of the table properties file (see README, Deploy)."
  type        = string
}

variable "schema_uri" {
  description = "s3:// URI of the Avro schema named by hoodie.streamer.schemaprovider.source.schema.file, or empty."
  type        = string
  default     = ""
}
