# Least-privilege roles. The statements (Sid, actions, resources, and the condition under which each exists)
# are the same as in template.yaml; tests/deploy/least_privilege.json is the list both are checked against.

data "aws_iam_policy_document" "lambda_trust" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "scheduler_trust" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

# ------------------------------------------------------------------ writer

resource "aws_iam_role" "writer" {
  name               = "${var.name}-writer"
  description        = "msk-hudi-sink writer - Kafka event source mapping, table writes, coordinator calls"
  assume_role_policy = data.aws_iam_policy_document.lambda_trust.json
  tags               = var.tags
}

data "aws_iam_policy_document" "writer" {
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.writer.arn}:*"]
  }

  statement {
    sid       = "TableObjects"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = ["${local.bucket_arn}/${var.table_prefix}/*"]
  }

  statement {
    sid       = "TableList"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.table_prefix}/*"]
    }
  }

  statement {
    sid       = "DeadLetterObjects"
    actions   = ["s3:PutObject"]
    resources = ["${local.bucket_arn}/${var.dead_letter_prefix}/*"]
  }

  statement {
    sid       = "ConfigObjects"
    actions   = ["s3:GetObject"]
    resources = [local.properties_object_arn]
  }

  # With topics each table's schema file: schema_uri with $table replaced by the table's name.
  dynamic "statement" {
    for_each = local.has_schema ? [1] : []
    content {
      sid       = "SchemaObject"
      actions   = ["s3:GetObject"]
      resources = local.is_routed ? [for t in local.topic_tables : replace(local.schema_object_arn, "$table", t)] : [local.schema_object_arn]
    }
  }

  # The writer's schema-registry reads: a version id is not an ARN, so no resource can be named.
  dynamic "statement" {
    for_each = local.has_glue_registry ? [1] : []
    content {
      sid       = "GlueSchemaVersions"
      actions   = ["glue:GetSchemaVersion"]
      resources = ["*"]
    }
  }

  dynamic "statement" {
    for_each = local.is_single ? [1] : []
    content {
      sid       = "LockItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
      resources = [aws_dynamodb_table.lock.arn]
    }
  }

  # With topics: each table's lock item only (Hudi's DynamoDB lock keys its item by the table name).
  dynamic "statement" {
    for_each = local.is_routed ? [1] : []
    content {
      sid       = "LockItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
      resources = [aws_dynamodb_table.lock.arn]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = local.topic_tables
      }
    }
  }

  dynamic "statement" {
    for_each = local.is_single ? [1] : []
    content {
      sid       = "InvokeCoordinator"
      actions   = ["lambda:InvokeFunction"]
      resources = [local.coordinator_arn]
    }
  }

  # A routed writer commits and runs the inline table services itself: compaction uploads its base files in
  # parts and aborts an upload that failed.
  dynamic "statement" {
    for_each = local.is_routed ? [1] : []
    content {
      sid       = "TableUploads"
      actions   = ["s3:AbortMultipartUpload"]
      resources = ["${local.bucket_arn}/${var.table_prefix}/*"]
    }
  }

  # A routed writer syncs each table to Glue itself after its commit: <table>, <table>_ro, <table>_rt.
  dynamic "statement" {
    for_each = local.has_glue && local.is_routed ? [1] : []
    content {
      sid = "CatalogSync"
      actions = [
        "glue:GetDatabase",
        "glue:CreateDatabase",
        "glue:GetTable",
        "glue:CreateTable",
        "glue:UpdateTable",
        "glue:BatchGetPartition",
        "glue:GetPartitions",
        "glue:BatchCreatePartition",
        "glue:BatchUpdatePartition",
        "glue:BatchDeletePartition",
      ]
      resources = concat(
        ["${local.glue_arn_prefix}:catalog", "${local.glue_arn_prefix}:database/${var.glue_database_name}"],
        [for t in local.topic_tables : "${local.glue_arn_prefix}:table/${var.glue_database_name}/${t}"],
        [for t in local.topic_tables : "${local.glue_arn_prefix}:table/${var.glue_database_name}/${t}_ro"],
        [for t in local.topic_tables : "${local.glue_arn_prefix}:table/${var.glue_database_name}/${t}_rt"],
      )
    }
  }

  # Used by the event source mapping (not by our code) to find the brokers; scoped to the cluster.
  dynamic "statement" {
    for_each = local.is_msk ? [1] : []
    content {
      sid       = "KafkaClusterMetadata"
      actions   = ["kafka:DescribeCluster", "kafka:DescribeClusterV2", "kafka:GetBootstrapBrokers"]
      resources = [var.msk_cluster_arn]
    }
  }

  # IAM access control of the MSK data plane, used by the event source mapping's consumer.
  dynamic "statement" {
    for_each = local.is_msk_iam ? [1] : []
    content {
      sid       = "KafkaConnect"
      actions   = ["kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration"]
      resources = [var.msk_cluster_arn]
    }
  }

  # The topic and group of the single form, or every topic of the list with its own group.
  dynamic "statement" {
    for_each = local.is_msk_iam ? [1] : []
    content {
      sid       = "KafkaTopic"
      actions   = ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"]
      resources = local.is_routed ? [for n in var.topics : "${local.kafka_arn_prefix}:topic/${local.kafka_cluster_path}/${var.topic_prefix}${n}"] : [local.kafka_topic_arn]
    }
  }

  dynamic "statement" {
    for_each = local.is_msk_iam ? [1] : []
    content {
      sid       = "KafkaGroup"
      actions   = ["kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"]
      resources = local.is_routed ? [for n in var.topics : "${local.kafka_arn_prefix}:group/${local.kafka_cluster_path}/${var.consumer_group_id}-${n}"] : [local.kafka_group_arn]
    }
  }

  # The event source mapping polls through network interfaces it creates in the cluster's subnets. These
  # actions need "*": the Describe* actions support no resource-level permissions, and the interfaces are
  # created in subnets and security groups chosen by the service (the MSK cluster's), whose ids this module
  # does not know.
  dynamic "statement" {
    for_each = local.needs_network_interfaces ? [1] : []
    content {
      sid = "EventSourceNetworkInterfaces"
      actions = [
        "ec2:CreateNetworkInterface",
        "ec2:DeleteNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeVpcs",
      ]
      resources = ["*"] # checkov:skip=CKV_AWS_111: see above; ENI actions of the event source mapping
    }
  }

  dynamic "statement" {
    for_each = local.has_secret ? [1] : []
    content {
      sid       = "KafkaSecret"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [var.kafka_secret_arn]
    }
  }

  dynamic "statement" {
    for_each = local.has_secret_key ? [1] : []
    content {
      sid       = "KafkaSecretKey"
      actions   = ["kms:Decrypt"]
      resources = [var.kafka_secret_kms_key_arn]
      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = ["secretsmanager.${local.region}.amazonaws.com"]
      }
    }
  }

  dynamic "statement" {
    for_each = local.has_on_failure ? [1] : []
    content {
      sid       = "OnFailureDestination"
      actions   = ["sqs:SendMessage"]
      resources = [var.on_failure_destination_arn]
    }
  }
}

resource "aws_iam_role_policy" "writer" {
  name   = "writer"
  role   = aws_iam_role.writer.id
  policy = data.aws_iam_policy_document.writer.json
}

# ------------------------------------------------------------------ coordinator

resource "aws_iam_role" "coordinator" {
  count              = local.is_single ? 1 : 0
  name               = "${var.name}-coordinator"
  description        = "msk-hudi-sink coordinator - timeline commits under the lock, table services"
  assume_role_policy = data.aws_iam_policy_document.lambda_trust.json
  tags               = var.tags
}

data "aws_iam_policy_document" "coordinator" {
  count = local.is_single ? 1 : 0
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.coordinator[0].arn}:*"]
  }

  # Timeline files and table services: clustering reads (Get) and writes (Put) base files, clean and rollback
  # delete them (DeleteObject, also for DeleteObjects), archival deletes timeline files; compaction uploads its
  # base files in parts and aborts an upload that failed (AbortMultipartUpload); every service lists the table
  # (ListBucket on the table prefix only).
  statement {
    sid       = "TableObjects"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${local.bucket_arn}/${var.table_prefix}/*"]
  }

  statement {
    sid       = "TableList"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.table_prefix}/*"]
    }
  }

  statement {
    sid       = "ConfigObjects"
    actions   = ["s3:GetObject"]
    resources = [local.properties_object_arn]
  }

  statement {
    sid       = "LockItems"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.lock.arn]
  }

  # Glue Data Catalog sync after every commit (Hudi's AwsGlueCatalogSyncTool calls): the database (created when
  # missing and hoodie.datasource.hive_sync.auto_create_database is on), the table and its partitions. Glue
  # authorises a table or partition call on the catalog, database and table ARNs, a database call on the
  # catalog and database ARNs. Only the one table: <name>, <name>_ro and <name>_rt.
  dynamic "statement" {
    for_each = local.has_glue ? [1] : []
    content {
      sid = "CatalogSync"
      actions = [
        "glue:GetDatabase",
        "glue:CreateDatabase",
        "glue:GetTable",
        "glue:CreateTable",
        "glue:UpdateTable",
        "glue:BatchGetPartition",
        "glue:GetPartitions",
        "glue:BatchCreatePartition",
        "glue:BatchUpdatePartition",
        "glue:BatchDeletePartition",
      ]
      resources = local.glue_resource_arns
    }
  }
}

resource "aws_iam_role_policy" "coordinator" {
  count  = local.is_single ? 1 : 0
  name   = "coordinator"
  role   = aws_iam_role.coordinator[0].id
  policy = data.aws_iam_policy_document.coordinator[0].json
}

# ------------------------------------------------------------------ scheduler

resource "aws_iam_role" "scheduler" {
  count              = local.is_single ? 1 : 0
  name               = "${var.name}-scheduler"
  description        = "msk-hudi-sink - EventBridge Scheduler invokes the coordinator's table services"
  assume_role_policy = data.aws_iam_policy_document.scheduler_trust.json
  tags               = var.tags
}

data "aws_iam_policy_document" "scheduler" {
  count = local.is_single ? 1 : 0
  statement {
    sid       = "InvokeCoordinator"
    actions   = ["lambda:InvokeFunction"]
    resources = [local.coordinator_arn]
  }
}

resource "aws_iam_role_policy" "scheduler" {
  count  = local.is_single ? 1 : 0
  name   = "scheduler"
  role   = aws_iam_role.scheduler[0].id
  policy = data.aws_iam_policy_document.scheduler[0].json
}
