# Inputs of the msk-hudi-sink module. They mirror the parameters of the repository's SAM template.yaml
# (snake_case of the same names); tests/deploy checks that the two stay in step.

variable "name" {
  description = "Prefix of every resource name: functions <name>-writer / <name>-coordinator, lock table <name>-lock, created bucket <name>-<account>-<region>. Lower case, 2-30 characters."
  type        = string
  default     = "msk-hudi-sink"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,28}[a-z0-9]$", var.name))
    error_message = "name must be 2-30 characters of lower-case letters, digits and dashes, starting with a letter."
  }
}

variable "writer_zip" {
  description = "Path of the writer package built by `cargo lambda build --release --arm64 --output-format zip` (target/lambda/hudi-sink-writer/bootstrap.zip)."
  type        = string
  validation {
    condition     = endswith(var.writer_zip, ".zip")
    error_message = "writer_zip must be the path of a .zip file."
  }
}

variable "coordinator_zip" {
  description = "Path of the coordinator package built by `cargo lambda build --release --arm64 --output-format zip` (target/lambda/hudi-sink-coordinator/bootstrap.zip)."
  type        = string
  validation {
    condition     = endswith(var.coordinator_zip, ".zip")
    error_message = "coordinator_zip must be the path of a .zip file."
  }
}

variable "msk_cluster_arn" {
  description = "MSK cluster ARN (provisioned or serverless). Required unless kafka_bootstrap_servers is set; topic and group ARNs for the kafka-cluster permissions are derived from it."
  type        = string
  default     = ""
  validation {
    condition     = var.msk_cluster_arn == "" || can(regex("^arn:aws[a-z-]*:kafka:[a-z0-9-]+:[0-9]{12}:cluster/[^/]+/[^/]+$", var.msk_cluster_arn))
    error_message = "msk_cluster_arn must be an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>) or empty."
  }
}

variable "kafka_bootstrap_servers" {
  description = "Self-managed Kafka only: comma-separated host:port list. Setting it selects a self-managed Kafka event source instead of MSK."
  type        = string
  default     = ""
  validation {
    condition     = var.kafka_bootstrap_servers == "" || can(regex("^[A-Za-z0-9.-]+:[0-9]+(,[A-Za-z0-9.-]+:[0-9]+)*$", var.kafka_bootstrap_servers))
    error_message = "kafka_bootstrap_servers must be a comma-separated list of host:port, or empty."
  }
}

variable "topic" {
  description = "The Kafka topic of the single-topic form (one table, hoodie.table.name = hoodie_table_name). Set this or topics."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^$|^[A-Za-z0-9._-]{1,249}$", var.topic))
    error_message = "topic must be a legal Kafka topic name."
  }
}

variable "topics" {
  description = "The many-tables form: the topics' names after topic_prefix ([\"customers\", \"orders\"] for pg.public.customers and pg.public.orders). One event source mapping per topic (consumer group <consumer_group_id>-<name>); the topic <topic_prefix><name> fills the table <table_name_prefix><name> under <table_prefix>/. Set this or topic."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for n in var.topics : can(regex("^[A-Za-z0-9_]{1,128}$", n))]) && length(distinct([for n in var.topics : replace(n, "_", "")])) == length(var.topics)
    error_message = "topics must be distinct names of letters, digits and _ (the part of each topic after topic_prefix; they must stay distinct without their underscores, as SAM's logical ids drop them)."
  }
}

variable "topic_prefix" {
  description = "With topics - what every topic starts with (pg.public. for Debezium's <prefix>.<schema>.<table>)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{0,120}$", var.topic_prefix))
    error_message = "topic_prefix must be at most 120 characters legal in a Kafka topic name."
  }
}

variable "table_name_prefix" {
  description = "Required with topics - what every table's name starts with (shop_ makes shop_customers from pg.public.customers)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^$|^[A-Za-z_][A-Za-z0-9_]{0,63}$", var.table_name_prefix))
    error_message = "table_name_prefix must start a legal hoodie.table.name: a letter or _, then letters, digits and _."
  }
}

variable "consumer_group_id" {
  description = "Kafka consumer group of the event source mapping. Set explicitly so the IAM group ARN is known and a replaced mapping resumes from the committed offsets (starting_position is then ignored)."
  type        = string
  validation {
    condition     = can(regex("^[A-Za-z0-9_.+=@-]{1,200}$", var.consumer_group_id))
    error_message = "consumer_group_id must be 1-200 characters of letters, digits and _.+=@-."
  }
}

variable "starting_position" {
  description = "Where a new consumer group starts (ignored when the group already has committed offsets)."
  type        = string
  default     = "TRIM_HORIZON"
  validation {
    condition     = contains(["TRIM_HORIZON", "LATEST"], var.starting_position)
    error_message = "starting_position must be TRIM_HORIZON or LATEST."
  }
}

variable "kafka_secret_arn" {
  description = "Secrets Manager secret with the SASL/SCRAM user and password. Empty with MSK = IAM authentication (kafka-cluster permissions); with self-managed Kafka = no authentication."
  type        = string
  default     = ""
  validation {
    condition     = var.kafka_secret_arn == "" || can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$", var.kafka_secret_arn))
    error_message = "kafka_secret_arn must be a Secrets Manager secret ARN or empty."
  }
}

variable "kafka_secret_kms_key_arn" {
  description = "Customer managed KMS key that encrypts kafka_secret_arn (MSK requires one for SCRAM secrets); the event source mapping decrypts the secret with it. Empty = the secret uses the AWS managed key."
  type        = string
  default     = ""
  validation {
    condition     = var.kafka_secret_kms_key_arn == "" || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kafka_secret_kms_key_arn))
    error_message = "kafka_secret_kms_key_arn must be a KMS key ARN or empty."
  }
}

variable "kafka_auth_type" {
  description = "SASL mechanism of kafka_secret_arn for self-managed Kafka (MSK supports SCRAM-SHA-512 only)."
  type        = string
  default     = "SASL_SCRAM_512_AUTH"
  validation {
    condition     = contains(["SASL_SCRAM_512_AUTH", "SASL_SCRAM_256_AUTH"], var.kafka_auth_type)
    error_message = "kafka_auth_type must be SASL_SCRAM_512_AUTH or SASL_SCRAM_256_AUTH."
  }
}

variable "self_managed_subnet_ids" {
  description = "Self-managed Kafka in a VPC only: subnets the event source mapping polls from (at most 16)."
  type        = list(string)
  default     = []
  validation {
    condition     = length(var.self_managed_subnet_ids) <= 16 && alltrue([for s in var.self_managed_subnet_ids : can(regex("^subnet-[0-9a-f]+$", s))])
    error_message = "self_managed_subnet_ids must be at most 16 subnet ids."
  }
}

variable "self_managed_security_group_id" {
  description = "Self-managed Kafka in a VPC only: security group of the pollers' network interfaces."
  type        = string
  default     = ""
  validation {
    condition     = var.self_managed_security_group_id == "" || can(regex("^sg-[0-9a-f]+$", var.self_managed_security_group_id))
    error_message = "self_managed_security_group_id must be a security group id or empty."
  }
}

variable "batch_size" {
  description = "Maximum records per invocation (a batch is also cut at the 6 MB invoke payload limit)."
  type        = number
  default     = 10000
  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10000 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size must be an integer from 1 to 10000."
  }
}

variable "maximum_batching_window_in_seconds" {
  description = "How long the event source mapping gathers records before invoking (fewer, larger commits)."
  type        = number
  default     = 30
  validation {
    condition     = var.maximum_batching_window_in_seconds >= 0 && var.maximum_batching_window_in_seconds <= 300
    error_message = "maximum_batching_window_in_seconds must be from 0 to 300."
  }
}

variable "minimum_pollers" {
  description = "0 = on-demand polling; 1-200 = provisioned mode with this many pollers at least."
  type        = number
  default     = 0
  validation {
    condition     = var.minimum_pollers >= 0 && var.minimum_pollers <= 200
    error_message = "minimum_pollers must be from 0 to 200."
  }
}

variable "maximum_pollers" {
  description = "Provisioned mode only (minimum_pollers > 0): upper bound of pollers (capped at the partition count)."
  type        = number
  default     = 200
  validation {
    condition     = var.maximum_pollers >= 1 && var.maximum_pollers <= 2000
    error_message = "maximum_pollers must be from 1 to 2000."
  }
}

variable "on_failure_destination_arn" {
  description = "Optional SQS queue that receives the metadata of a batch the event source mapping gives up on (its offsets and timestamps; the records stay in Kafka)."
  type        = string
  default     = ""
  validation {
    condition     = var.on_failure_destination_arn == "" || can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.on_failure_destination_arn))
    error_message = "on_failure_destination_arn must be an SQS queue ARN or empty."
  }
}

variable "existing_bucket_name" {
  description = "Use this existing bucket for the table and the dead letters instead of creating one (its encryption, public access block and TLS-only policy are then yours to set)."
  type        = string
  default     = ""
  validation {
    condition     = var.existing_bucket_name == "" || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.existing_bucket_name))
    error_message = "existing_bucket_name must be a bucket name or empty."
  }
}

variable "table_prefix" {
  description = "Key prefix of the Hudi table in the bucket, without leading or trailing slash (hoodie.base.path)."
  type        = string
  default     = "tables/trips"
  validation {
    condition     = can(regex("^[A-Za-z0-9_=.-]+(/[A-Za-z0-9_=.-]+)*$", var.table_prefix))
    error_message = "table_prefix must be a key prefix without leading or trailing slash."
  }
}

variable "dead_letter_prefix" {
  description = "Key prefix for dead letters, without leading or trailing slash (hudi.sink.dead.letter.path)."
  type        = string
  default     = "dead-letters/trips"
  validation {
    condition     = can(regex("^[A-Za-z0-9_=.-]+(/[A-Za-z0-9_=.-]+)*$", var.dead_letter_prefix))
    error_message = "dead_letter_prefix must be a key prefix without leading or trailing slash."
  }
}

variable "table_properties_uri" {
  description = "s3:// URI of the table's Java properties file (env HUDI_SINK_CONFIG); readable by both functions."
  type        = string
  validation {
    condition     = can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$", var.table_properties_uri))
    error_message = "table_properties_uri must be s3://bucket/key."
  }
}

variable "glue_schema_registry" {
  description = "\"true\" when the topic carries Avro framed for the AWS Glue Schema Registry (hudi.sink.value.format=avro): the writer may call glue:GetSchemaVersion (on any resource, since a schema version id is not an ARN)."
  type        = string
  default     = "false"
  validation {
    condition     = contains(["true", "false"], var.glue_schema_registry)
    error_message = "glue_schema_registry must be \"true\" or \"false\"."
  }
}

variable "schema_uri" {
  description = "Optional s3:// URI of the Avro schema file named by hoodie.streamer.schemaprovider.source.schema.file (readable by the writer). With topics, each table's: $table stands for the table's name (s3://my-config/schemas/$table.avsc), as in the properties file."
  type        = string
  default     = ""
  validation {
    condition     = var.schema_uri == "" || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$", var.schema_uri))
    error_message = "schema_uri must be s3://bucket/key or empty."
  }
}

variable "noncurrent_version_expiration_days" {
  description = "Created bucket only: days a deleted or replaced object version is kept (undo window)."
  type        = number
  default     = 7
  validation {
    condition     = var.noncurrent_version_expiration_days >= 1 && var.noncurrent_version_expiration_days <= 3650
    error_message = "noncurrent_version_expiration_days must be from 1 to 3650."
  }
}

variable "glue_database_name" {
  description = "Glue Data Catalog database the coordinator syncs the table into after every commit (hoodie.datasource.hive_sync.database, with hoodie.datasource.meta.sync.enable=true and hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool), in the deployment's account and region. Empty = no catalog sync and no Glue permission."
  type        = string
  default     = ""
  validation {
    condition     = var.glue_database_name == "" || can(regex("^[a-z0-9_-]{1,255}$", var.glue_database_name))
    error_message = "glue_database_name must be 1-255 characters of lower-case letters, digits, _ and -, or empty."
  }
}

variable "glue_table_name" {
  description = "Required with glue_database_name: Glue table of the sync (hoodie.datasource.hive_sync.table; Hudi's default is hoodie.table.name, lower case). The coordinator may write the tables <name>, <name>_ro and <name>_rt (a merge-on-read table registers the last two)."
  type        = string
  default     = ""
  validation {
    condition     = var.glue_table_name == "" || can(regex("^[a-z0-9_-]{1,255}$", var.glue_table_name))
    error_message = "glue_table_name must be 1-255 characters of lower-case letters, digits, _ and -, or empty."
  }
}

variable "writer_memory_size" {
  description = "Writer memory in MB (CPU scales with it; 1 vCPU at 1769 MB)."
  type        = number
  default     = 2048
  validation {
    condition     = var.writer_memory_size >= 128 && var.writer_memory_size <= 10240
    error_message = "writer_memory_size must be from 128 to 10240."
  }
}

variable "writer_timeout" {
  description = "Writer timeout in seconds (Kafka event source mappings allow at most 840)."
  type        = number
  default     = 840
  validation {
    condition     = var.writer_timeout >= 30 && var.writer_timeout <= 840
    error_message = "writer_timeout must be from 30 to 840 seconds."
  }
}

variable "coordinator_memory_size" {
  description = "Coordinator memory in MB. Clustering rewrites base files of up to hoodie.parquet.max.file.size (120 MiB) in memory, like the writer: the same 2048 MB, above the 1769 MB of one full vCPU for Parquet encoding."
  type        = number
  default     = 2048
  validation {
    condition     = var.coordinator_memory_size >= 128 && var.coordinator_memory_size <= 10240
    error_message = "coordinator_memory_size must be from 128 to 10240."
  }
}

variable "coordinator_timeout" {
  description = "Coordinator timeout in seconds. Begin and commit take milliseconds; a scheduled table-services run (clean, archive, clustering rewrites of files up to ~100 MiB) gets the Lambda maximum."
  type        = number
  default     = 900
  validation {
    condition     = var.coordinator_timeout >= 10 && var.coordinator_timeout <= 900
    error_message = "coordinator_timeout must be from 10 to 900 seconds."
  }
}

variable "table_services_schedule" {
  description = "EventBridge Scheduler expression for the coordinator's table services (rollback of failed writes, clean, archive, clustering)."
  type        = string
  default     = "rate(15 minutes)"
  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.table_services_schedule))
    error_message = "table_services_schedule must be a rate(...) or cron(...) expression."
  }
}

variable "log_level" {
  description = "RUST_LOG of both functions."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["error", "warn", "info", "debug", "trace"], var.log_level)
    error_message = "log_level must be error, warn, info, debug or trace."
  }
}

variable "log_retention_days" {
  description = "CloudWatch Logs retention of both functions' log groups."
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch Logs supports."
  }
}

variable "tags" {
  description = "Tags added to every resource that takes tags."
  type        = map(string)
  default     = {}
}

# ------------------------------------------------------------------ alarms and dashboard

variable "hoodie_table_name" {
  description = "Required with topic (empty with topics, whose tables are named by the routes) - hoodie.table.name of the table properties file: the value of the Table dimension of the sink's metrics (namespace MskHudiSink), which the dead-letter, catalog-sync, commit-failure and service-failure alarms and the dashboard select."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^$|^[A-Za-z0-9_.-]{1,255}$", var.hoodie_table_name))
    error_message = "hoodie_table_name must be 1-255 characters of letters, digits and _.-."
  }
}

variable "alarm_email" {
  description = "Address that receives the alarms: creates the SNS topic <name>-alarms (encrypted with a KMS key of this module that CloudWatch may use) and subscribes the address (confirm the e-mail). Empty = no topic. At most one of alarm_email and alarm_topic_arn; with neither the alarms have no actions."
  type        = string
  default     = ""
  validation {
    condition     = var.alarm_email == "" || can(regex("^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$", var.alarm_email))
    error_message = "alarm_email must be an e-mail address or empty."
  }
}

variable "alarm_topic_arn" {
  description = "Existing SNS topic the alarms notify instead of a created one (an encrypted topic's key policy must let cloudwatch.amazonaws.com use the key). Empty = none."
  type        = string
  default     = ""
  validation {
    condition     = var.alarm_topic_arn == "" || can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN or empty."
  }
}

variable "alarm_period" {
  description = "Period in seconds of every alarm and of the dashboard's graphs."
  type        = number
  default     = 300
  validation {
    condition     = contains([60, 300, 900, 3600], var.alarm_period)
    error_message = "alarm_period must be 60, 300, 900 or 3600."
  }
}

variable "error_alarm_evaluation_periods" {
  description = "Periods in a row above the threshold before the error alarms fire (writer errors and throttles, coordinator errors, dead letters, catalog sync failures, commit failures, service failures)."
  type        = number
  default     = 1
  validation {
    condition     = var.error_alarm_evaluation_periods >= 1 && var.error_alarm_evaluation_periods <= 24
    error_message = "error_alarm_evaluation_periods must be from 1 to 24."
  }
}

variable "lag_alarm_evaluation_periods" {
  description = "Periods in a row above the threshold before the sustained-condition alarms fire (offset lag, coordinator duration)."
  type        = number
  default     = 3
  validation {
    condition     = var.lag_alarm_evaluation_periods >= 1 && var.lag_alarm_evaluation_periods <= 24
    error_message = "lag_alarm_evaluation_periods must be from 1 to 24."
  }
}

variable "offset_lag_threshold" {
  description = "Records the writer's consumer group may be behind the topic (AWS/Lambda OffsetLag, Maximum) before the offset-lag alarm fires."
  type        = number
  default     = 100000
  validation {
    condition     = var.offset_lag_threshold >= 0
    error_message = "offset_lag_threshold must not be negative."
  }
}

variable "writer_errors_threshold" {
  description = "Failed writer invocations per period (AWS/Lambda Errors, Sum) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.writer_errors_threshold >= 0
    error_message = "writer_errors_threshold must not be negative."
  }
}

variable "writer_throttles_threshold" {
  description = "Throttled writer invocations per period (AWS/Lambda Throttles, Sum) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.writer_throttles_threshold >= 0
    error_message = "writer_throttles_threshold must not be negative."
  }
}

variable "coordinator_errors_threshold" {
  description = "Failed coordinator invocations per period (AWS/Lambda Errors, Sum: any request that failed, including those the commit-failure and service-failure alarms count) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.coordinator_errors_threshold >= 0
    error_message = "coordinator_errors_threshold must not be negative."
  }
}

variable "dead_letter_threshold" {
  description = "Dead-lettered records per period (MskHudiSink RecordsDeadLettered, Sum) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.dead_letter_threshold >= 0
    error_message = "dead_letter_threshold must not be negative."
  }
}

variable "catalog_sync_failures_threshold" {
  description = "With glue_database_name - failed catalog syncs per period (MskHudiSink CatalogSyncFailures, Sum) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.catalog_sync_failures_threshold >= 0
    error_message = "catalog_sync_failures_threshold must not be negative."
  }
}

variable "commit_failures_threshold" {
  description = "Failed commit, submit or close steps per period (MskHudiSink CommitFailures, Sum; with topics per table) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.commit_failures_threshold >= 0
    error_message = "commit_failures_threshold must not be negative."
  }
}

variable "service_failures_threshold" {
  description = "Failed table-services runs per period (MskHudiSink ServiceFailures, Sum: scheduled runs; with topics the inline services of each table) above which the alarm fires."
  type        = number
  default     = 0
  validation {
    condition     = var.service_failures_threshold >= 0
    error_message = "service_failures_threshold must not be negative."
  }
}

variable "coordinator_duration_threshold_percent" {
  description = "Percent of coordinator_timeout that the coordinator's longest invocation (AWS/Lambda Duration, Maximum) may reach before the duration alarm fires."
  type        = number
  default     = 80
  validation {
    condition     = var.coordinator_duration_threshold_percent >= 1 && var.coordinator_duration_threshold_percent <= 100
    error_message = "coordinator_duration_threshold_percent must be from 1 to 100."
  }
}
