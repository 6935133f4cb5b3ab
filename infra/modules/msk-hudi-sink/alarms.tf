# Alarms and dashboard: the same resources as the "alarms and dashboard" section of template.yaml.
# CloudWatch reads the metrics itself: no function role gains a permission. The sink's own metrics (namespace
# MskHudiSink, dimension Table = hoodie.table.name) come from the EMF lines of crates/hudi-sink/src/metrics.rs;
# docs/operations.md (Alarms and dashboard) says what each alarm means and what to do.

locals {
  has_alarm_email = var.alarm_email != ""
  alarm_topic_arn = local.has_alarm_email ? aws_sns_topic.alarms[0].arn : var.alarm_topic_arn
  alarm_actions   = local.alarm_topic_arn == "" ? [] : [local.alarm_topic_arn]

  coordinator_function_name = local.is_single ? aws_lambda_function.coordinator[0].function_name : ""
}

resource "aws_kms_key" "alarms" {
  count               = local.has_alarm_email ? 1 : 0
  description         = "msk-hudi-sink - encrypts the alarm topic; CloudWatch may use it to publish"
  enable_key_rotation = true
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministration"
        Effect    = "Allow"
        Principal = { AWS = "arn:${local.partition}:iam::${local.account}:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      # The AWS managed key of SNS cannot be used by CloudWatch alarms; this key lets them publish.
      {
        Sid       = "CloudWatchAlarmsPublish"
        Effect    = "Allow"
        Principal = { Service = "cloudwatch.amazonaws.com" }
        Action    = ["kms:Decrypt", "kms:GenerateDataKey*"]
        Resource  = "*"
        Condition = { StringEquals = { "aws:SourceAccount" = local.account } }
      },
    ]
  })
  tags = var.tags
}

resource "aws_sns_topic" "alarms" {
  count             = local.has_alarm_email ? 1 : 0
  name              = "${var.name}-alarms"
  display_name      = "${var.name} alarms"
  kms_master_key_id = aws_kms_key.alarms[0].arn
  tags              = var.tags
}

resource "aws_sns_topic_subscription" "alarm_email" {
  count     = local.has_alarm_email ? 1 : 0
  topic_arn = aws_sns_topic.alarms[0].arn
  protocol  = "email"
  endpoint  = var.alarm_email
}

resource "aws_cloudwatch_metric_alarm" "writer_offset_lag" {
  alarm_name          = "${var.name}-writer-offset-lag"
  alarm_description   = "The writer's consumer group is falling behind the topic (records not yet committed to the table). See docs/operations.md, Alarms and dashboard."
  namespace           = "AWS/Lambda"
  metric_name         = "OffsetLag"
  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }
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

resource "aws_cloudwatch_metric_alarm" "writer_errors" {
  alarm_name          = "${var.name}-writer-errors"
  alarm_description   = "Writer invocations failed; the event source mapping redelivers their batches. See docs/operations.md, Alarms and dashboard."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.writer_errors_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "writer_throttles" {
  alarm_name          = "${var.name}-writer-throttles"
  alarm_description   = "Writer invocations were throttled (account or reserved concurrency exhausted). See docs/operations.md, Alarms and dashboard."
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.writer_throttles_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "dead_letters" {
  count               = local.is_single ? 1 : 0
  alarm_name          = "${var.name}-dead-letters"
  alarm_description   = "Records were written to the dead-letter prefix instead of the table. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "RecordsDeadLettered"
  dimensions          = { Table = var.hoodie_table_name }
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

resource "aws_cloudwatch_metric_alarm" "catalog_sync_failures" {
  count               = local.has_glue && local.is_single ? 1 : 0
  alarm_name          = "${var.name}-catalog-sync-failures"
  alarm_description   = "The coordinator's Glue Data Catalog sync failed after a commit (the commit itself stands). See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "CatalogSyncFailures"
  dimensions          = { Table = var.hoodie_table_name }
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

resource "aws_cloudwatch_metric_alarm" "commit_failures" {
  count               = local.is_single ? 1 : 0
  alarm_name          = "${var.name}-commit-failures"
  alarm_description   = "A coordinator commit, submit or close request failed; the writer's batch is redelivered. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "CommitFailures"
  dimensions          = { Table = var.hoodie_table_name }
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

resource "aws_cloudwatch_metric_alarm" "service_failures" {
  count               = local.is_single ? 1 : 0
  alarm_name          = "${var.name}-service-failures"
  alarm_description   = "A table-services run failed (scheduled, or inline after a commit); the next schedule or commit retries it. See docs/operations.md, Alarms and dashboard."
  namespace           = "MskHudiSink"
  metric_name         = "ServiceFailures"
  dimensions          = { Table = var.hoodie_table_name }
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

# Every failed coordinator invocation (error type CoordinatorFailed), whatever the request: also begins, aborts,
# joins and requests that failed before reaching the table, which the two alarms above do not count.
resource "aws_cloudwatch_metric_alarm" "coordinator_errors" {
  count               = local.is_single ? 1 : 0
  alarm_name          = "${var.name}-coordinator-errors"
  alarm_description   = "Coordinator invocations failed (any request; failed commits and table-services runs also have their own alarms). See docs/operations.md, Alarms and dashboard."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = local.coordinator_function_name }
  statistic           = "Sum"
  period              = var.alarm_period
  evaluation_periods  = var.error_alarm_evaluation_periods
  threshold           = var.coordinator_errors_threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

# The longest coordinator invocation of a period as a percentage of its timeout (metric math, as in
# template.yaml, where CloudFormation cannot multiply a parameter).
resource "aws_cloudwatch_metric_alarm" "coordinator_duration" {
  count               = local.is_single ? 1 : 0
  alarm_name          = "${var.name}-coordinator-duration"
  alarm_description   = "The coordinator's longest invocation is near its timeout (table services run long; a timed-out run is retried by the next schedule). See docs/operations.md, Alarms and dashboard."
  evaluation_periods  = var.lag_alarm_evaluation_periods
  threshold           = var.coordinator_duration_threshold_percent
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  actions_enabled     = true
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags

  metric_query {
    id          = "duration"
    return_data = false
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Duration"
      dimensions  = { FunctionName = local.coordinator_function_name }
      period      = var.alarm_period
      stat        = "Maximum"
    }
  }

  metric_query {
    id          = "percent"
    label       = "Longest invocation, percent of the timeout"
    expression  = "100 * duration / (${var.coordinator_timeout} * 1000)"
    return_data = true
  }
}

locals {
  single_dashboard = jsonencode({
    widgets = [
      {
        type   = "metric"
        x      = 0
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Records of table ${var.hoodie_table_name}"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            ["MskHudiSink", "RecordsIn", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsWritten", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsDeleted", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsDeduped", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsSkipped", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsIgnoredOlder", "Table", var.hoodie_table_name],
            ["MskHudiSink", "DeleteMisses", "Table", var.hoodie_table_name],
            ["MskHudiSink", "RecordsDeadLettered", "Table", var.hoodie_table_name],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Bytes and files written to table ${var.hoodie_table_name}"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            ["MskHudiSink", "BytesWritten", "Table", var.hoodie_table_name],
            ["MskHudiSink", "FilesWritten", "Table", var.hoodie_table_name, { yAxis = "right" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "Lag: Kafka offsets (left) and oldest record age in ms (right)"
          region = local.region
          view   = "timeSeries"
          stat   = "Maximum"
          period = var.alarm_period
          metrics = [
            ["AWS/Lambda", "OffsetLag", "FunctionName", aws_lambda_function.writer.function_name],
            ["MskHudiSink", "MaxLag", "Table", var.hoodie_table_name, { yAxis = "right" }],
          ]
          annotations = { horizontal = [{ label = "offset lag alarm", value = var.offset_lag_threshold }] }
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "Function errors and throttles"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.writer.function_name, { label = "writer errors" }],
            ["AWS/Lambda", "Throttles", "FunctionName", aws_lambda_function.writer.function_name, { label = "writer throttles" }],
            ["AWS/Lambda", "Errors", "FunctionName", local.coordinator_function_name, { label = "coordinator errors" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 12
        width  = 12
        height = 6
        properties = {
          title  = "Dead letters, conflicts and failures"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            ["MskHudiSink", "RecordsDeadLettered", "Table", var.hoodie_table_name],
            ["MskHudiSink", "CommitConflicts", "Table", var.hoodie_table_name],
            ["MskHudiSink", "CommitRetries", "Table", var.hoodie_table_name],
            ["MskHudiSink", "CatalogSyncFailures", "Table", var.hoodie_table_name],
            ["MskHudiSink", "CommitFailures", "Table", var.hoodie_table_name],
            ["MskHudiSink", "ServiceFailures", "Table", var.hoodie_table_name],
            ["MskHudiSink", "BatchFailures", "Table", var.hoodie_table_name],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 12
        width  = 12
        height = 6
        properties = {
          title  = "Coordinator duration, percent of its timeout"
          region = local.region
          view   = "timeSeries"
          period = var.alarm_period
          metrics = [
            [{ id = "percent", expression = "100 * duration / (${var.coordinator_timeout} * 1000)", label = "longest invocation, percent of the timeout" }],
            ["AWS/Lambda", "Duration", "FunctionName", local.coordinator_function_name, { id = "duration", stat = "Maximum", visible = false }],
          ]
          yAxis       = { left = { min = 0, max = 100 } }
          annotations = { horizontal = [{ label = "duration alarm", value = var.coordinator_duration_threshold_percent }] }
        }
      },
    ]
  })

  # With topics the graphs search the tables' series (tokens of table_name_prefix and of the names), one line
  # per table, as in template.yaml.
  topic_search = join(" OR ", var.topics)
  routed_dashboard = jsonencode({
    widgets = [
      {
        type   = "metric"
        x      = 0
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Records in and written per table (${var.table_name_prefix}*)"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            [{ id = "recordsin", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"RecordsIn\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "in" }],
            [{ id = "written", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"RecordsWritten\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "written" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Bytes written per table (${var.table_name_prefix}*)"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            [{ id = "bytes", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"BytesWritten\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "bytes" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "Lag: Kafka offsets, largest of the topics (left) and oldest record age in ms per table (right)"
          region = local.region
          view   = "timeSeries"
          stat   = "Maximum"
          period = var.alarm_period
          metrics = [
            ["AWS/Lambda", "OffsetLag", "FunctionName", aws_lambda_function.writer.function_name],
            [{ id = "maxlag", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"MaxLag\" ${var.table_name_prefix} (${local.topic_search})', 'Maximum', ${var.alarm_period})", label = "age", yAxis = "right" }],
          ]
          annotations = { horizontal = [{ label = "offset lag alarm", value = var.offset_lag_threshold }] }
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "Writer errors and throttles"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.writer.function_name, { label = "writer errors" }],
            ["AWS/Lambda", "Throttles", "FunctionName", aws_lambda_function.writer.function_name, { label = "writer throttles" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 12
        width  = 24
        height = 6
        properties = {
          title  = "Dead letters, failed parts and conflicts per table"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            [{ id = "deadletters", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"RecordsDeadLettered\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "dead letters" }],
            [{ id = "failures", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"BatchFailures\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "failed parts" }],
            [{ id = "conflicts", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"CommitConflicts\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "conflicts" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 18
        width  = 24
        height = 6
        properties = {
          title  = "Commit, catalog sync and table-service failures per table"
          region = local.region
          view   = "timeSeries"
          stat   = "Sum"
          period = var.alarm_period
          metrics = [
            [{ id = "commitfailures", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"CommitFailures\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "commit failures" }],
            [{ id = "catalogfailures", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"CatalogSyncFailures\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "catalog sync failures" }],
            [{ id = "servicefailures", expression = "SEARCH('{MskHudiSink,Table} MetricName=\"ServiceFailures\" ${var.table_name_prefix} (${local.topic_search})', 'Sum', ${var.alarm_period})", label = "service failures" }],
          ]
        }
      },
    ]
  })
}

resource "aws_cloudwatch_dashboard" "sink" {
  dashboard_name = var.name
  dashboard_body = local.is_routed ? local.routed_dashboard : local.single_dashboard

  lifecycle {
    precondition {
      condition     = var.alarm_email == "" || var.alarm_topic_arn == ""
      error_message = "Set at most one of alarm_email (a created topic) and alarm_topic_arn (an existing topic)."
    }
  }
}
