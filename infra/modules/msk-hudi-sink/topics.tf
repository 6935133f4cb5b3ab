# The many-tables form (`topics`): for each name, the event source mapping of <topic_prefix><name> and the alarms
# of that topic and of its table <table_name_prefix><name>, as the Fn::ForEach loop of template.yaml. The routed
# writer's grants for the topics and tables are the writer statements of iam.tf.

resource "aws_lambda_event_source_mapping" "topic" {
  for_each                           = local.topic_names
  function_name                      = aws_lambda_function.writer.arn
  event_source_arn                   = local.is_msk ? var.msk_cluster_arn : null
  topics                             = ["${var.topic_prefix}${each.key}"]
  starting_position                  = var.starting_position
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_in_seconds

  # One consumer group per mapping: a group shared by mappings of different topics would rebalance their
  # pollers against each other.
  dynamic "amazon_managed_kafka_event_source_config" {
    for_each = local.is_msk ? [1] : []
    content {
      consumer_group_id = "${var.consumer_group_id}-${each.key}"
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
      consumer_group_id = "${var.consumer_group_id}-${each.key}"
    }
  }

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

# OffsetLag of one topic's mapping alone (dimension EventSourceMappingUUID).
resource "aws_cloudwatch_metric_alarm" "topic_offset_lag" {
  for_each            = local.topic_names
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-offset-lag"
  alarm_description   = "The consumer group of topic ${var.topic_prefix}${each.key} is falling behind it (records not yet committed to table ${var.table_name_prefix}${each.key}). See docs/operations.md, Alarms and dashboard."
  namespace           = "AWS/Lambda"
  metric_name         = "OffsetLag"
  dimensions          = { EventSourceMappingUUID = aws_lambda_event_source_mapping.topic[each.key].uuid }
  statistic           = "Maximum"
  period              = var.alarm_period
  evaluation_periods  = var.lag_alarm_evaluation_periods
  threshold           = var.offset_lag_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "table_dead_letters" {
  for_each            = local.topic_names
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-dead-letters"
  alarm_description   = "Records of table ${var.table_name_prefix}${each.key} were written to the dead-letter prefix instead of the table. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "RecordsDeadLettered"
  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.dead_letter_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

# A routed writer commits in process: a table whose part failed (its write or its commit) prints BatchFailures
# under its name; the batch is redelivered.
resource "aws_cloudwatch_metric_alarm" "table_failed_parts" {
  for_each            = local.topic_names
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-failed-parts"
  alarm_description   = "The writer failed to write or commit table ${var.table_name_prefix}${each.key}'s part of a batch; the batch is redelivered. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "BatchFailures"
  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.commit_failures_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

# What follows each table's commit in the routed writer's in-process coordinator, printed under the table's name
# as the coordinator function prints it for one table: failed commit steps (the batch is redelivered), failed
# Glue syncs and failed inline table services (the commit stands).

resource "aws_cloudwatch_metric_alarm" "table_commit_failures" {
  for_each            = local.topic_names
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-commit-failures"
  alarm_description   = "A commit, submit or close step of table ${var.table_name_prefix}${each.key} failed in the writer; the batch is redelivered. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "CommitFailures"
  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.commit_failures_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "table_catalog_sync_failures" {
  for_each            = local.has_glue ? local.topic_names : toset([])
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-catalog-sync-failures"
  alarm_description   = "The Glue Data Catalog sync of table ${var.table_name_prefix}${each.key} failed after a commit (the commit itself stands). See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "CatalogSyncFailures"
  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.catalog_sync_failures_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "table_service_failures" {
  for_each            = local.topic_names
  alarm_name          = "${var.name}-${var.table_name_prefix}${each.key}-service-failures"
  alarm_description   = "An inline table service (clean and archive, compaction, clustering) of table ${var.table_name_prefix}${each.key} failed after a commit; the next commit retries it. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "ServiceFailures"
  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.service_failures_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
