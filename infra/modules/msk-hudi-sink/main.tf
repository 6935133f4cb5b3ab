# msk-hudi-sink: Kafka (Amazon MSK or self-managed) -> Apache Hudi v6 copy-on-write tables on S3.
# The same resources as the repository's SAM template.yaml: writer function + Kafka event source mapping,
# coordinator function + table-services schedule, DynamoDB lock table, S3 table bucket (or an existing one);
# alarms.tf: CloudWatch alarms, the dashboard and the optional alarm topic. With `topics` (one table per topic)
# the writer is routed and commits in process: no coordinator function (it serves one table only), one event
# source mapping, role grant and set of alarms per topic (topics.tf).

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  partition = data.aws_partition.current.partition
  region    = data.aws_region.current.region
  account   = data.aws_caller_identity.current.account_id

  create_bucket            = var.existing_bucket_name == ""
  is_msk                   = var.msk_cluster_arn != ""
  is_self_managed          = var.kafka_bootstrap_servers != ""
  has_secret               = var.kafka_secret_arn != ""
  has_secret_key           = local.has_secret && var.kafka_secret_kms_key_arn != ""
  is_msk_iam               = local.is_msk && !local.has_secret
  needs_network_interfaces = local.is_msk || length(var.self_managed_subnet_ids) > 0
  is_provisioned           = var.minimum_pollers > 0
  has_on_failure           = var.on_failure_destination_arn != ""
  has_schema               = var.schema_uri != ""
  has_glue                 = var.glue_database_name != ""
  has_glue_registry        = var.glue_schema_registry == "true"
  is_routed                = length(var.topics) > 0
  is_single                = !local.is_routed

  writer_name      = "${var.name}-writer"
  coordinator_name = "${var.name}-coordinator"
  bucket_name      = local.create_bucket ? aws_s3_bucket.table[0].id : var.existing_bucket_name
  bucket_arn       = "arn:${local.partition}:s3:::${local.bucket_name}"
  coordinator_arn  = "arn:${local.partition}:lambda:${local.region}:${local.account}:function:${local.coordinator_name}"

  # arn:<p>:kafka:<region>:<account>:cluster/<name>/<uuid> -> the topic and group ARNs of IAM access control.
  kafka_arn_prefix   = local.is_msk ? split(":cluster/", var.msk_cluster_arn)[0] : ""
  kafka_cluster_path = local.is_msk ? split(":cluster/", var.msk_cluster_arn)[1] : ""
  kafka_topic_arn    = "${local.kafka_arn_prefix}:topic/${local.kafka_cluster_path}/${var.topic}"
  kafka_group_arn    = "${local.kafka_arn_prefix}:group/${local.kafka_cluster_path}/${var.consumer_group_id}"

  properties_object_arn = "arn:${local.partition}:s3:::${split("s3://", var.table_properties_uri)[1]}"
  schema_object_arn     = local.has_schema ? "arn:${local.partition}:s3:::${split("s3://", var.schema_uri)[1]}" : ""

  # Glue resource ARNs of the catalog sync: the account's catalog, the database, and the one table as
  # copy-on-write (or merge-on-read with skip_ro_suffix) and merge-on-read (<table>_ro, <table>_rt) register it.
  glue_arn_prefix    = "arn:${local.partition}:glue:${local.region}:${local.account}"
  glue_table_arn     = "${local.glue_arn_prefix}:table/${var.glue_database_name}/${var.glue_table_name}"
  glue_resource_arns = ["${local.glue_arn_prefix}:catalog", "${local.glue_arn_prefix}:database/${var.glue_database_name}", local.glue_table_arn, "${local.glue_table_arn}_ro", "${local.glue_table_arn}_rt"]

  # The catalog sync lines of deployment_properties when a Glue database is given; the leading "" puts them on
  # lines of their own after the line they are appended to.
  glue_properties = local.has_glue ? join("\n", [
    "",
    "hoodie.datasource.meta.sync.enable=true",
    "hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
    "hoodie.datasource.hive_sync.database=${var.glue_database_name}",
    "hoodie.datasource.hive_sync.table=${var.glue_table_name}",
  ]) : ""

  # The many-tables form: name -> its topic and its table; the tables of the routes, and the route lines of
  # the properties file (a .properties value doubles its backslashes).
  topic_names  = toset(var.topics)
  topic_tables = [for n in var.topics : "${var.table_name_prefix}${n}"]
  route_properties = join("\n", [
    "hudi.sink.route.topics.topic.regex=${join("\\\\.", split(".", var.topic_prefix))}(.+)",
    "hudi.sink.route.topics.table=${var.table_name_prefix}$1",
  ])

  single_properties = <<-EOT
    hoodie.base.path=s3://${local.bucket_name}/${var.table_prefix}
    hoodie.write.lock.dynamodb.table=${aws_dynamodb_table.lock.name}
    hoodie.write.lock.dynamodb.region=${local.region}
    hudi.sink.coordinator.function=${local.is_single ? aws_lambda_function.coordinator[0].function_name : ""}
    hudi.sink.dead.letter.path=s3://${local.bucket_name}/${var.dead_letter_prefix}${local.glue_properties}
  EOT
  # Routed: $table stands for each table's name; no coordinator function (a routed configuration refuses it).
  routed_properties = <<-EOT
    hoodie.base.path=s3://${local.bucket_name}/${var.table_prefix}/$table
    hoodie.write.lock.dynamodb.table=${aws_dynamodb_table.lock.name}
    hoodie.write.lock.dynamodb.region=${local.region}
    hudi.sink.dead.letter.path=s3://${local.bucket_name}/${var.dead_letter_prefix}/$table
    ${local.route_properties}${local.routed_glue_properties}
  EOT
  routed_glue_properties = local.has_glue ? join("\n", [
    "",
    "hoodie.datasource.meta.sync.enable=true",
    "hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
    "hoodie.datasource.hive_sync.database=${var.glue_database_name}",
  ]) : ""

  # The request of events/coordinator-services.json.
  services_request = jsonencode({ op = "services" })

  environment = {
    HUDI_SINK_CONFIG = var.table_properties_uri
    RUST_LOG         = var.log_level
  }
}

# ------------------------------------------------------------------ storage

resource "aws_s3_bucket" "table" {
  # checkov:skip=CKV_AWS_18: Server access logs need a second bucket; audit S3 data access with CloudTrail data events instead.
  # checkov:skip=CKV_AWS_144: Cross-region replication is a disaster-recovery choice of the user, not of the sink.
  # checkov:skip=CKV_AWS_145: SSE-S3 (AES256): SSE-KMS would add kms:Decrypt/GenerateDataKey to every reader and writer role and a KMS request per object.
  # checkov:skip=CKV2_AWS_62: No consumer of object events; readers poll the Hudi timeline.
  count  = local.create_bucket ? 1 : 0
  bucket = "${var.name}-${local.account}-${local.region}"
  tags   = var.tags
}

resource "aws_s3_bucket_server_side_encryption_configuration" "table" {
  count  = local.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.table[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "table" {
  count                   = local.create_bucket ? 1 : 0
  bucket                  = aws_s3_bucket.table[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "table" {
  count  = local.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.table[0].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

# Versioning gives an undo window for objects a writer or a table service deletes or replaces; Hudi never
# overwrites a data file, so only timeline and rollback deletes create noncurrent versions, and the lifecycle
# rule expires them (and their delete markers) so listings stay fast.
resource "aws_s3_bucket_versioning" "table" {
  count  = local.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.table[0].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "table" {
  count  = local.create_bucket ? 1 : 0
  bucket = aws_s3_bucket.table[0].id
  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }
    expiration {
      expired_object_delete_marker = true
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
  depends_on = [aws_s3_bucket_versioning.table]
}

data "aws_iam_policy_document" "tls_only" {
  count = local.create_bucket ? 1 : 0
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.table[0].arn, "${aws_s3_bucket.table[0].arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "table" {
  count      = local.create_bucket ? 1 : 0
  bucket     = aws_s3_bucket.table[0].id
  policy     = data.aws_iam_policy_document.tls_only[0].json
  depends_on = [aws_s3_bucket_public_access_block.table]
}

# The layout of Hudi's DynamoDBBasedLockProvider: string hash key named `key`, one item per table.
resource "aws_dynamodb_table" "lock" {
  # checkov:skip=CKV_AWS_119: Encrypted with the AWS owned DynamoDB key; lock items hold only owner names, lease times and version UUIDs, no table data.
  name         = "${var.name}-lock"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "key"

  attribute {
    name = "key"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  tags = var.tags
}

# ------------------------------------------------------------------ logs

resource "aws_cloudwatch_log_group" "writer" {
  # checkov:skip=CKV_AWS_158: CloudWatch Logs encrypts at rest by default; the logs carry no record values.
  # checkov:skip=CKV_AWS_338: Retention is the log_retention_days variable; operational logs rarely need a year.
  name              = "/aws/lambda/${local.writer_name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

# Adding `count` to the coordinator's resources keeps an existing single-topic deployment's objects: Terraform
# moves each to instance [0].
resource "aws_cloudwatch_log_group" "coordinator" {
  # checkov:skip=CKV_AWS_158: CloudWatch Logs encrypts at rest by default; the logs carry no record values.
  # checkov:skip=CKV_AWS_338: Retention is the log_retention_days variable; operational logs rarely need a year.
  count             = local.is_single ? 1 : 0
  name              = "/aws/lambda/${local.coordinator_name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

# ------------------------------------------------------------------ functions

resource "aws_lambda_function" "writer" {
  # checkov:skip=CKV_AWS_116: A function dead-letter queue covers asynchronous invocations only; the Kafka event source mapping invokes synchronously and has its own on-failure destination.
  # checkov:skip=CKV_AWS_117: The event source mapping reaches the brokers through its own network interfaces in the cluster's VPC; the function talks only to S3, DynamoDB and Lambda.
  # checkov:skip=CKV_AWS_115: Concurrency is bounded by the topic's partition count; reserved concurrency would only throttle the mapping and shrink its pollers.
  # checkov:skip=CKV_AWS_173: The environment holds only a configuration URI and a log level, no secret.
  # checkov:skip=CKV_AWS_272: Code signing needs a signing profile the user owns; the package is built from source by cargo lambda.
  # checkov:skip=CKV_AWS_50: No X-Ray instrumentation in the functions; metrics go out as CloudWatch EMF lines and logs as JSON.
  function_name    = local.writer_name
  description      = "msk-hudi-sink writer - one event source mapping batch to one committed Hudi instant"
  role             = aws_iam_role.writer.arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = ["arm64"]
  filename         = var.writer_zip
  source_code_hash = filebase64sha256(var.writer_zip)
  memory_size      = var.writer_memory_size
  timeout          = var.writer_timeout

  environment {
    variables = local.environment
  }

  tags       = var.tags
  depends_on = [aws_cloudwatch_log_group.writer]

  lifecycle {
    precondition {
      condition     = local.is_msk != local.is_self_managed
      error_message = "Set exactly one of msk_cluster_arn (Amazon MSK) and kafka_bootstrap_servers (self-managed Kafka)."
    }
    precondition {
      condition     = (var.topic != "") != local.is_routed
      error_message = "Set exactly one of topic (one table) and topics (one table per topic)."
    }
    precondition {
      condition     = local.is_routed || var.hoodie_table_name != ""
      error_message = "topic needs hoodie_table_name (hoodie.table.name of the properties file)."
    }
    precondition {
      condition     = local.is_single || (var.table_name_prefix != "" && var.hoodie_table_name == "" && var.glue_table_name == "")
      error_message = "topics needs table_name_prefix, and the routes name its tables (<table_name_prefix><name>, also in Glue): leave hoodie_table_name and glue_table_name empty. The coordinator function serves one table, so this form commits in the writer."
    }
    precondition {
      condition     = local.is_single || !local.has_schema || length(split("$table", var.schema_uri)) == 2
      error_message = "With topics, schema_uri is every table's schema file: it names the table once as $table (s3://my-config/schemas/$table.avsc)."
    }
    precondition {
      condition     = local.is_routed || (var.topic_prefix == "" && var.table_name_prefix == "")
      error_message = "topic_prefix and table_name_prefix belong to topics."
    }
  }
}

resource "aws_lambda_function" "coordinator" {
  # checkov:skip=CKV_AWS_116: Writers invoke it synchronously and retry; a missed scheduled table-services run is repeated by the next one.
  # checkov:skip=CKV_AWS_117: It talks only to S3, DynamoDB and Glue; no VPC is needed.
  # checkov:skip=CKV_AWS_115: Its work is serialised by the DynamoDB lock; reserved concurrency could throttle writers' commits.
  # checkov:skip=CKV_AWS_173: The environment holds only a configuration URI and a log level, no secret.
  # checkov:skip=CKV_AWS_272: Code signing needs a signing profile the user owns; the package is built from source by cargo lambda.
  # checkov:skip=CKV_AWS_50: No X-Ray instrumentation in the functions; metrics go out as CloudWatch EMF lines and logs as JSON.
  count            = local.is_single ? 1 : 0
  function_name    = local.coordinator_name
  description      = "msk-hudi-sink coordinator - begin, commit and abort instants under the lock; table services"
  role             = aws_iam_role.coordinator[0].arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = ["arm64"]
  filename         = var.coordinator_zip
  source_code_hash = filebase64sha256(var.coordinator_zip)
  memory_size      = var.coordinator_memory_size
  timeout          = var.coordinator_timeout

  environment {
    variables = local.environment
  }

  tags       = var.tags
  depends_on = [aws_cloudwatch_log_group.coordinator[0]]

  lifecycle {
    precondition {
      condition     = (var.glue_database_name == "") == (var.glue_table_name == "")
      error_message = "Set both glue_database_name and glue_table_name (hoodie.datasource.hive_sync.table, by default hoodie.table.name), or neither."
    }
  }
}

resource "aws_scheduler_schedule" "table_services" {
  # checkov:skip=CKV_AWS_297: The schedule's only payload is the constant {"op":"services"}; an AWS owned key protects it.
  count               = local.is_single ? 1 : 0
  name                = "${var.name}-table-services"
  description         = "msk-hudi-sink table services (rollback of failed writes, clean, archive, clustering)"
  schedule_expression = var.table_services_schedule

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_function.coordinator[0].arn
    role_arn = aws_iam_role.scheduler[0].arn
    input    = local.services_request
    retry_policy {
      maximum_retry_attempts = 0
    }
  }
}

# ------------------------------------------------------------------ Kafka event source mapping

resource "aws_lambda_event_source_mapping" "writer" {
  count                              = local.is_single ? 1 : 0
  function_name                      = aws_lambda_function.writer.arn
  event_source_arn                   = local.is_msk ? var.msk_cluster_arn : null
  topics                             = [var.topic]
  starting_position                  = var.starting_position
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_in_seconds

  dynamic "amazon_managed_kafka_event_source_config" {
    for_each = local.is_msk ? [1] : []
    content {
      consumer_group_id = var.consumer_group_id
    }
  }

  dynamic "self_managed_event_source" {
    for_each = local.is_self_managed ? [1] : []
    content {
      endpoints = {
        KAFKA_BOOTSTRAP_SERVERS = var.kafka_bootstrap_servers
      }
    }
  }

  dynamic "self_managed_kafka_event_source_config" {
    for_each = local.is_self_managed ? [1] : []
    content {
      consumer_group_id = var.consumer_group_id
    }
  }

  # SASL/SCRAM (MSK supports SCRAM-SHA-512 only); no entry = IAM authentication on MSK.
  dynamic "source_access_configuration" {
    for_each = local.has_secret ? [1] : []
    content {
      type = local.is_msk ? "SASL_SCRAM_512_AUTH" : var.kafka_auth_type
      uri  = var.kafka_secret_arn
    }
  }

  dynamic "source_access_configuration" {
    for_each = local.is_self_managed ? var.self_managed_subnet_ids : []
    content {
      type = "VPC_SUBNET"
      uri  = "subnet:${source_access_configuration.value}"
    }
  }

  dynamic "source_access_configuration" {
    for_each = local.is_self_managed && var.self_managed_security_group_id != "" ? [1] : []
    content {
      type = "VPC_SECURITY_GROUP"
      uri  = "security_group:${var.self_managed_security_group_id}"
    }
  }

  dynamic "provisioned_poller_config" {
    for_each = local.is_provisioned ? [1] : []
    content {
      minimum_pollers = var.minimum_pollers
      maximum_pollers = var.maximum_pollers
    }
  }

  dynamic "destination_config" {
    for_each = local.has_on_failure ? [1] : []
    content {
      on_failure {
        destination_arn = var.on_failure_destination_arn
      }
    }
  }

  # The mapping checks its role's permissions when it starts.
  depends_on = [aws_iam_role_policy.writer]
}
