"""The alarms and the dashboard of template.yaml and the Terraform module: the same alarms, metrics, thresholds
and targets in both, per table and per topic in the list form. Run with `make test-deploy`.
"""

from __future__ import annotations

import json
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iac  # noqa: E402
from scenarios import (  # noqa: E402
    ACCOUNT,
    ALARM_TOPIC,
    REGION,
    ROOT,
    ROUTED,
    SCENARIOS,
    drift,
    snake,
    tf_variables,
)

ALARMS = {
    "writer-offset-lag": ("AWS/Lambda", "OffsetLag", "FunctionName", "writer", "Maximum"),
    "writer-errors": ("AWS/Lambda", "Errors", "FunctionName", "writer", "Sum"),
    "writer-throttles": ("AWS/Lambda", "Throttles", "FunctionName", "writer", "Sum"),
    "dead-letters": ("EMF", "RecordsDeadLettered", "EMF", None, "Sum"),
    "catalog-sync-failures": ("EMF", "CatalogSyncFailures", "EMF", None, "Sum"),
    "commit-failures": ("EMF", "CommitFailures", "EMF", None, "Sum"),
    "service-failures": ("EMF", "ServiceFailures", "EMF", None, "Sum"),
    "coordinator-errors": ("AWS/Lambda", "Errors", "FunctionName", "coordinator", "Sum"),
    "coordinator-duration": ("AWS/Lambda", "Duration", "FunctionName", "coordinator", "Maximum"),
}
# Alarm suffix -> (threshold parameter, evaluation periods parameter).
ALARM_PARAMETERS = {
    "writer-offset-lag": ("OffsetLagThreshold", "LagAlarmEvaluationPeriods"),
    "writer-errors": ("WriterErrorsThreshold", "ErrorAlarmEvaluationPeriods"),
    "writer-throttles": ("WriterThrottlesThreshold", "ErrorAlarmEvaluationPeriods"),
    "dead-letters": ("DeadLetterThreshold", "ErrorAlarmEvaluationPeriods"),
    "catalog-sync-failures": ("CatalogSyncFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "commit-failures": ("CommitFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "service-failures": ("ServiceFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "coordinator-errors": ("CoordinatorErrorsThreshold", "ErrorAlarmEvaluationPeriods"),
    "coordinator-duration": ("CoordinatorDurationThresholdPercent", "LagAlarmEvaluationPeriods"),
}
# Many tables: alarm suffix of each table -> (EMF metric, threshold parameter, evaluation periods parameter). The
# routed writer commits each table in process and prints, under the table's name, what the coordinator function
# prints for one table: the same metrics, alarmed with the same thresholds and periods as the single table's.
TABLE_ALARMS = {
    "dead-letters": ("RecordsDeadLettered", "DeadLetterThreshold", "ErrorAlarmEvaluationPeriods"),
    "failed-parts": ("BatchFailures", "CommitFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "commit-failures": ("CommitFailures", "CommitFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "catalog-sync-failures": ("CatalogSyncFailures", "CatalogSyncFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
    "service-failures": ("ServiceFailures", "ServiceFailuresThreshold", "ErrorAlarmEvaluationPeriods"),
}


def table_alarm_suffixes(glue):
    """The alarms of each routed table: the lag of its topic and the EMF ones (catalog sync only with Glue)."""
    return ["offset-lag"] + [s for s in TABLE_ALARMS if glue or s != "catalog-sync-failures"]


ALARM_TARGETS = {
    "none": {},
    "email": {"AlarmEmail": "data-oncall@example.com"},
    "topic": {"AlarmTopicArn": ALARM_TOPIC},
}


def alarms_and_dashboard(template=None, module=None, template_text=None, module_files=None) -> list[str]:
    """Every difference between the alarms, dashboards and alarm topics of SAM and Terraform, over the scenarios
    and the three alarm targets."""
    template = template or iac.load_template(template_text)
    module = module or iac.load_module(module_files)
    problems = []
    for scenario, base in SCENARIOS.items():
        for target, extra in ALARM_TARGETS.items():
            params = {k: v for k, v in base.items() if k not in ("AlarmEmail", "AlarmTopicArn")}
            params.update(extra)
            name = f"{scenario}/{target}"
            variables = tf_variables(params)
            sam = iac.sam_alarms(template, params, ACCOUNT, REGION)
            tf = iac.tf_alarms(module, variables, ACCOUNT, REGION)
            for alarm in sorted(set(sam) | set(tf)):
                s = dict(sam.get(alarm, {}), logical_id=None)
                t = dict(tf.get(alarm, {}), logical_id=None)
                if s != t:
                    problems.append(f"{name}: alarm {alarm}: SAM {sam.get(alarm)} Terraform {tf.get(alarm)}")
            sd = iac.sam_dashboard(template, params, ACCOUNT, REGION)
            td = iac.tf_dashboard(module, variables, ACCOUNT, REGION)
            if sd != td:
                problems.append(f"{name}: dashboard: SAM {json.dumps(sd)} Terraform {json.dumps(td)}")
            cfn = iac.CfnEvaluator(template, params, ACCOUNT, REGION)
            tfe = iac.TfEvaluator(module, variables, ACCOUNT, REGION)
            sam_kinds = sorted(r["Type"] for n, r in cfn.t["Resources"].items()
                               if r["Type"].startswith(("AWS::SNS::", "AWS::KMS::")) and cfn.resource_exists(n))
            tf_kinds = sorted(t for (t, n) in tfe.resources if t.startswith(("aws_sns_", "aws_kms_"))
                              and tfe.resource_exists(t, n))
            want = {"AWS::KMS::Key": "aws_kms_key", "AWS::SNS::Subscription": "aws_sns_topic_subscription",
                    "AWS::SNS::Topic": "aws_sns_topic"}
            if sorted(want[k] for k in sam_kinds) != tf_kinds:
                problems.append(f"{name}: alarm topic resources: SAM {sam_kinds} Terraform {tf_kinds}")
    return problems


class Alarms(unittest.TestCase):
    def setUp(self):
        self.template = iac.load_template()
        self.module = iac.load_module()
        self.emf = iac.emf_metrics()

    def params(self, scenario="msk-iam-new-bucket", **extra):
        params = {k: v for k, v in SCENARIOS[scenario].items() if k not in ("AlarmEmail", "AlarmTopicArn")}
        params.update(extra)
        return params

    def sam(self, params):
        return iac.sam_alarms(self.template, params, ACCOUNT, REGION)

    def test_sam_and_terraform_create_the_same_alarms_dashboard_and_topic(self):
        problems = alarms_and_dashboard(self.template, self.module)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_parity_check_rejects_broken_copies(self):
        tf_files = {p.name: p.read_text() for p in sorted(iac.MODULE.glob("*.tf"))}
        template = iac.TEMPLATE.read_text()
        broken_tf = [
            # another statistic
            ('metric_name         = "OffsetLag"\n  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }\n  statistic           = "Maximum"',
             'metric_name         = "OffsetLag"\n  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }\n  statistic           = "Average"'),
            # the wrong function
            ('metric_name         = "Throttles"\n  dimensions          = { FunctionName = aws_lambda_function.writer.function_name }',
             'metric_name         = "Throttles"\n  dimensions          = { FunctionName = local.coordinator_function_name }'),
            # the catalog alarm without a Glue database
            ("count               = local.has_glue && local.is_single ? 1 : 0", "count               = 1"),
            # many tables: the coordinator's alarms kept without a coordinator
            ('resource "aws_cloudwatch_metric_alarm" "coordinator_errors" {\n  count               = local.is_single ? 1 : 0',
             'resource "aws_cloudwatch_metric_alarm" "coordinator_errors" {\n  count               = 1'),
            # many tables: a search of another metric on the dashboard
            ('[{ id = "bytes", expression = "SEARCH(\'{MskHudiSink,Table} MetricName=\\"BytesWritten\\"',
             '[{ id = "bytes", expression = "SEARCH(\'{MskHudiSink,Table} MetricName=\\"FilesWritten\\"'),
            # the alarms silent with a topic
            ('alarm_actions   = local.alarm_topic_arn == "" ? [] : [local.alarm_topic_arn]', "alarm_actions   = []"),
            # a dashboard metric of the wrong table
            ('["MskHudiSink", "BytesWritten", "Table", var.hoodie_table_name]', '["MskHudiSink", "BytesWritten", "Table", var.name]'),
            # the topic created without an e-mail address
            ('resource "aws_sns_topic_subscription" "alarm_email" {\n  count     = local.has_alarm_email ? 1 : 0',
             'resource "aws_sns_topic_subscription" "alarm_email" {\n  count     = 1'),
        ]
        for old, new in broken_tf:
            self.assertEqual(tf_files["alarms.tf"].count(old), 1, old)
            files = dict(tf_files, **{"alarms.tf": tf_files["alarms.tf"].replace(old, new, 1)})
            self.assertNotEqual(alarms_and_dashboard(module_files=files), [], f"Terraform drift not caught: {new}")
        # The alarms of each topic and table (many tables).
        broken_topics = [
            # the lag of the writer instead of the topic's mapping
            ("dimensions          = { EventSourceMappingUUID = aws_lambda_event_source_mapping.topic[each.key].uuid }",
             "dimensions          = { FunctionName = aws_lambda_function.writer.function_name }"),
            # the dead letters of another table
            ('metric_name         = "RecordsDeadLettered"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }',
             'metric_name         = "RecordsDeadLettered"\n  dimensions          = { Table = each.key }'),
            # another threshold
            ('metric_name         = "BatchFailures"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }\n  statistic           = "Sum"\n  period              = var.alarm_period\n  evaluation_periods  = var.error_alarm_evaluation_periods\n  threshold           = var.commit_failures_threshold',
             'metric_name         = "BatchFailures"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }\n  statistic           = "Sum"\n  period              = var.alarm_period\n  evaluation_periods  = var.error_alarm_evaluation_periods\n  threshold           = var.writer_errors_threshold'),
            # a table's catalog-sync alarm without the Glue sync, its failed commits on the failed parts
            ("for_each            = local.has_glue ? local.topic_names : toset([])",
             "for_each            = local.topic_names"),
            ('metric_name         = "CommitFailures"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }',
             'metric_name         = "BatchFailures"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }'),
            # a table's service failures under the single table's name
            ('metric_name         = "ServiceFailures"\n  dimensions          = { Table = "${var.table_name_prefix}${each.key}" }',
             'metric_name         = "ServiceFailures"\n  dimensions          = { Table = var.hoodie_table_name }'),
        ]
        for old, new in broken_topics:
            self.assertEqual(tf_files["topics.tf"].count(old), 1, old)
            files = dict(tf_files, **{"topics.tf": tf_files["topics.tf"].replace(old, new, 1)})
            self.assertNotEqual(alarms_and_dashboard(module_files=files), [], f"Terraform drift not caught: {new}")
        broken_sam = [
            ("      Namespace: MskHudiSink\n      MetricName: RecordsDeadLettered\n",
             "      Namespace: MskHudiSink\n      MetricName: RecordsDeadLetteredTotal\n"),
            # many tables: a table's alarm on the single table's name, the lag of the writer instead of the
            # topic's mapping, another threshold, a search of another metric
            ("          MetricName: RecordsDeadLettered\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }",
             "          MetricName: RecordsDeadLettered\n          Dimensions:\n            - { Name: Table, Value: !Ref HoodieTableName }"),
            ('- { Name: EventSourceMappingUUID, Value: !Sub "${WriterTopicEventSource&{Name}}" }',
             '- { Name: FunctionName, Value: !Ref WriterFunction }'),
            ("          MetricName: BatchFailures\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }\n          Statistic: Sum\n          Period: !Ref AlarmPeriod\n          EvaluationPeriods: !Ref ErrorAlarmEvaluationPeriods\n          Threshold: !Ref CommitFailuresThreshold",
             "          MetricName: BatchFailures\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }\n          Statistic: Sum\n          Period: !Ref AlarmPeriod\n          EvaluationPeriods: !Ref ErrorAlarmEvaluationPeriods\n          Threshold: !Ref WriterErrorsThreshold"),
            # many tables: a table's catalog-sync alarm without the Glue sync, its failed commits on the failed
            # parts, its service failures under the single table's name, a failure missing from the dashboard
            ("        Condition: HasGlueRouted\n", "        Condition: IsRouted\n"),
            ("          MetricName: CommitFailures\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }",
             "          MetricName: BatchFailures\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }"),
            ("          MetricName: ServiceFailures\n          Dimensions:\n            - { Name: Table, Value: !Sub \"${TableNamePrefix}${Name}\" }",
             "          MetricName: ServiceFailures\n          Dimensions:\n            - { Name: Table, Value: !Ref HoodieTableName }"),
            ('[{"id": "servicefailures", "expression": "SEARCH(\'{MskHudiSink,Table} MetricName=\\"ServiceFailures\\"',
             '[{"id": "servicefailures", "expression": "SEARCH(\'{MskHudiSink,Table} MetricName=\\"BatchFailures\\"'),
            ('[{"id": "written", "expression": "SEARCH(\'{MskHudiSink,Table} MetricName=\\"RecordsWritten\\"',
             '[{"id": "written", "expression": "SEARCH(\'{MskHudiSink,Table} MetricName=\\"RecordsIn\\"'),
            ("      EvaluationPeriods: !Ref LagAlarmEvaluationPeriods\n      Threshold: !Ref OffsetLagThreshold",
             "      EvaluationPeriods: !Ref ErrorAlarmEvaluationPeriods\n      Threshold: !Ref OffsetLagThreshold"),
            ("Expression: !Sub 100 * duration / (${CoordinatorTimeout} * 1000)", "Expression: !Sub 100 * duration / 900000"),
            ('["AWS/Lambda", "OffsetLag", "FunctionName", "${WriterFunction}"],\n                      ["MskHudiSink", "MaxLag"',
             '["AWS/Lambda", "OffsetLag", "FunctionName", "${CoordinatorFunction}"],\n                      ["MskHudiSink", "MaxLag"'),
        ]
        for old, new in broken_sam:
            self.assertEqual(template.count(old), 1, old)
            self.assertNotEqual(alarms_and_dashboard(template_text=template.replace(old, new)), [],
                                f"SAM drift not caught: {new}")

    def test_alarms_watch_the_metrics_the_code_emits(self):
        functions = {"writer": "trips-sink-writer", "coordinator": "trips-sink-coordinator"}
        for glue in (False, True):
            extra = {"GlueDatabaseName": "lake", "GlueTableName": "trips"} if glue else {}
            alarms = self.sam(self.params(**extra))
            want = {f"trips-sink-{s}" for s in ALARMS if glue or s != "catalog-sync-failures"}
            self.assertEqual(set(alarms), want)
            for suffix, (namespace, metric, dimension, function, statistic) in ALARMS.items():
                name = f"trips-sink-{suffix}"
                if name not in alarms:
                    continue
                alarm = alarms[name]
                if namespace == "EMF":
                    namespace, dimension = self.emf["namespace"], self.emf["dimension"]
                    self.assertIn(metric, self.emf["names"], f"{metric} is not emitted by metrics.rs")
                    value = "trips"  # HoodieTableName
                else:
                    value = functions[function]
                ((got_namespace, got_metric, got_dims),) = iac.alarm_metrics(alarm)
                self.assertEqual((got_namespace, got_metric, dict(got_dims)), (namespace, metric, {dimension: value}), name)
                stat = alarm["statistic"] or next(q["metric"]["stat"] for q in alarm["queries"] if q["metric"])
                self.assertEqual(stat, statistic, name)
                self.assertEqual(alarm["comparison"], "GreaterThanThreshold", name)
                self.assertEqual(alarm["treat_missing_data"], "notBreaching", name)
                self.assertTrue(alarm["description"] and "docs/operations.md" in alarm["description"], name)

    def test_thresholds_and_periods_are_parameters(self):
        params = SCENARIOS["msk-scram-existing-bucket-everything"]
        alarms = self.sam(params)
        for suffix, (threshold, periods) in ALARM_PARAMETERS.items():
            alarm = alarms[f"orders-{suffix}"]
            self.assertEqual(alarm["threshold"], float(params[threshold]), suffix)
            self.assertEqual(alarm["evaluation_periods"], float(params[periods]), suffix)
            period = alarm["period"] or next(q["metric"]["period"] for q in alarm["queries"] if q["metric"])
            self.assertEqual(period, float(params["AlarmPeriod"]), suffix)
        # The duration alarm compares the longest invocation with CoordinatorDurationThresholdPercent of the
        # timeout: 90 % of 600 s.
        duration = alarms["orders-coordinator-duration"]
        (expression,) = [q for q in duration["queries"] if q["return_data"]]
        self.assertEqual(expression["expression"], "100 * duration / (600 * 1000)")
        (metric,) = [q for q in duration["queries"] if q["metric"]]
        self.assertEqual(metric["id"], "duration")
        self.assertFalse(metric["return_data"])
        # Every new parameter is in the console's "Alarms and dashboard" group.
        groups = self.template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
        (group,) = [g for g in groups if g["Label"]["default"] == "Alarms and dashboard"]
        used = {p for pair in ALARM_PARAMETERS.values() for p in pair}
        self.assertLessEqual(used | {"HoodieTableName", "AlarmEmail", "AlarmTopicArn", "AlarmPeriod"},
                             set(group["Parameters"]))

    def test_alarm_actions_are_conditional(self):
        topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:trips-sink-alarms"
        for target, extra, actions in (("none", {}, []), ("email", ALARM_TARGETS["email"], [topic]),
                                       ("topic", ALARM_TARGETS["topic"], [ALARM_TOPIC])):
            params = self.params(**extra)
            for alarm in self.sam(params).values():
                self.assertEqual(alarm["alarm_actions"], actions, target)
                self.assertEqual(alarm["ok_actions"], actions, target)
                self.assertTrue(alarm["actions_enabled"])
            for alarm in iac.tf_alarms(self.module, tf_variables(params), ACCOUNT, REGION).values():
                self.assertEqual(alarm["alarm_actions"], actions, target)
            ev = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
            created = {n for n in ("AlarmTopic", "AlarmTopicKey", "AlarmEmailSubscription") if ev.resource_exists(n)}
            self.assertEqual(created, {"AlarmTopic", "AlarmTopicKey", "AlarmEmailSubscription"} if target == "email" else set())
            output = self.template["Outputs"]["AlarmTopicArn"]
            self.assertEqual(ev.condition(output["Condition"]), bool(actions))
            if actions:
                self.assertEqual(ev.eval(output["Value"]), actions[0])
            if target == "email":
                sub = ev.eval(self.template["Resources"]["AlarmEmailSubscription"]["Properties"])
                self.assertEqual(sub, {"TopicArn": topic, "Protocol": "email", "Endpoint": extra["AlarmEmail"]})
        # At most one target: the rule (SAM) and the dashboard's precondition (Terraform).
        rule = self.template["Rules"]["AlarmTargetGiven"]["Assertions"]
        dashboard = iac.blocks(self.module, "resource")[("aws_cloudwatch_dashboard", "sink")]
        for email, arn, ok in (("", "", True), ("a@example.com", "", True), ("", ALARM_TOPIC, True),
                               ("a@example.com", ALARM_TOPIC, False)):
            params = self.params(AlarmEmail=email, AlarmTopicArn=arn)
            ev = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
            self.assertEqual(all(ev.eval(a["Assert"]) for a in rule), ok, (email, arn))
            tf = iac.TfEvaluator(self.module, tf_variables(params), ACCOUNT, REGION)
            conditions = [tf.value(pre["condition"]) for lc in dashboard["lifecycle"] for pre in lc["precondition"]]
            self.assertEqual(conditions, [ok], (email, arn))

    def test_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use(self):
        res = self.template["Resources"]
        self.assertEqual(res["AlarmTopic"]["Properties"]["KmsMasterKeyId"], {"Fn::GetAtt": ["AlarmTopicKey", "Arn"]})
        self.assertTrue(res["AlarmTopicKey"]["Properties"]["EnableKeyRotation"])
        params = self.params(**ALARM_TARGETS["email"])
        ev = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
        sam_policy = ev.eval(res["AlarmTopicKey"]["Properties"]["KeyPolicy"])
        tf = iac.TfEvaluator(self.module, tf_variables(params), ACCOUNT, REGION)
        resources = iac.blocks(self.module, "resource")
        key = resources[("aws_kms_key", "alarms")]
        self.assertIs(tf.value(key["enable_key_rotation"]), True)
        self.assertEqual(json.loads(tf.value(key["policy"])), sam_policy)
        self.assertEqual(tf.value(resources[("aws_sns_topic", "alarms")]["kms_master_key_id"]),
                         tf.resource_attr("aws_kms_key", "alarms", 0, "arn"))
        statements = {s["Sid"]: s for s in sam_policy["Statement"]}
        self.assertEqual(set(statements), {"AccountAdministration", "CloudWatchAlarmsPublish"})
        self.assertEqual(statements["AccountAdministration"]["Principal"], {"AWS": f"arn:aws:iam::{ACCOUNT}:root"})
        publish = statements["CloudWatchAlarmsPublish"]
        self.assertEqual(publish["Principal"], {"Service": "cloudwatch.amazonaws.com"})
        self.assertEqual(sorted(publish["Action"]), ["kms:Decrypt", "kms:GenerateDataKey*"])
        self.assertEqual(publish["Condition"], {"StringEquals": {"aws:SourceAccount": ACCOUNT}})

    def test_alarms_and_dashboard_need_no_function_permission(self):
        # CloudWatch evaluates alarms and draws dashboards itself: the roles stay exactly the least-privilege list
        # (LeastPrivilege above), and no role may publish metrics, touch the alarm topic or its key.
        for scenario in SCENARIOS:
            for extra in ALARM_TARGETS.values():
                params = self.params(scenario, **extra)
                for role, statements in iac.sam_policies(self.template, params, ACCOUNT, REGION).items():
                    for sid, st in statements.items():
                        for action in st["actions"]:
                            self.assertFalse(action.startswith(("cloudwatch:", "sns:", "logs:PutMetric")), (role, sid))
                            if action.startswith("kms:"):
                                self.assertEqual(sid, "KafkaSecretKey", (role, sid))
        kinds = {r["Type"] for r in iac.CfnEvaluator(self.template, self.params(ROUTED[0]), ACCOUNT, REGION)
                 .t["Resources"].values()} | {r["Type"] for r in self.template["Resources"].values() if "Type" in r}
        self.assertNotIn("AWS::IAM::Policy", kinds)
        self.assertNotIn("AWS::SNS::TopicPolicy", kinds)
        tf_kinds = {t for (t, _) in iac.blocks(self.module, "resource")}
        self.assertNotIn("aws_sns_topic_policy", tf_kinds)

    def test_many_tables_have_alarms_per_topic_and_table(self):
        for scenario in ROUTED:
            params = self.params(scenario, AlarmEmail="data-oncall@example.com")
            name = params["AppName"]
            names = params["Topics"].split(",")
            tables = [params["TableNamePrefix"] + n for n in names]
            alarms = self.sam(params)
            want = {f"{name}-writer-{s}" for s in ("offset-lag", "errors", "throttles")}
            glue = bool(params.get("GlueDatabaseName"))
            want |= {f"{name}-{t}-{s}" for t in tables for s in table_alarm_suffixes(glue)}
            # No coordinator function, so none of its own alarms (its errors, its duration); the metrics it prints
            # for one table the routed writer prints per table.
            self.assertEqual(set(alarms), want, scenario)
            topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:{name}-alarms"
            for n, table in zip(names, tables):
                lag = alarms[f"{name}-{table}-offset-lag"]
                self.assertEqual((lag["namespace"], lag["metric"], lag["statistic"]), ("AWS/Lambda", "OffsetLag", "Maximum"))
                self.assertEqual(lag["dimensions"],
                                 {"EventSourceMappingUUID": f"<event-source-mapping:{params['TopicPrefix']}{n}>"})
                self.assertEqual(lag["threshold"], float(params.get("OffsetLagThreshold", 100000)))
                for suffix, (metric, threshold, periods) in TABLE_ALARMS.items():
                    if not glue and suffix == "catalog-sync-failures":
                        continue
                    alarm = alarms[f"{name}-{table}-{suffix}"]
                    self.assertEqual((alarm["namespace"], alarm["metric"], alarm["statistic"]),
                                     (self.emf["namespace"], metric, "Sum"), suffix)
                    self.assertIn(metric, self.emf["names"])
                    self.assertEqual(alarm["dimensions"], {self.emf["dimension"]: table})
                    default = self.template["Parameters"][threshold]["Default"]
                    self.assertEqual(alarm["threshold"], float(params.get(threshold, default)), suffix)
                    default = self.template["Parameters"][periods]["Default"]
                    self.assertEqual(alarm["evaluation_periods"], float(params.get(periods, default)), suffix)
                    self.assertEqual(alarm["comparison"], "GreaterThanThreshold", suffix)
                    self.assertTrue(alarm["description"] and "docs/operations.md" in alarm["description"], suffix)
                    # The single table's alarm on the same metric has the same threshold and periods.
                    if suffix in ALARM_PARAMETERS:
                        self.assertEqual(ALARM_PARAMETERS[suffix], (threshold, periods), suffix)
            for alarm in alarms.values():
                self.assertEqual(alarm["alarm_actions"], [topic])
                self.assertEqual(alarm["ok_actions"], [topic])
                self.assertEqual(alarm["treat_missing_data"], "notBreaching")

    def test_dashboard_parses_and_names_every_alarmed_metric(self):
        for scenario in SCENARIOS:
            if scenario in ROUTED:
                self.check_routed_dashboard(self.params(scenario))
                continue
            params = self.params(scenario, GlueDatabaseName="lake", GlueTableName="t")
            dashboard = iac.sam_dashboard(self.template, params, ACCOUNT, REGION)
            self.assertEqual(dashboard["name"], params.get("AppName", "msk-hudi-sink"))
            body = dashboard["body"]
            shown = iac.dashboard_metrics(body)
            for name, alarm in self.sam(params).items():
                for metric in iac.alarm_metrics(alarm):
                    self.assertIn(metric, shown, f"{name} watches {metric}, which the dashboard lacks")
            table = params["HoodieTableName"]
            for namespace, metric, dims in shown:
                if namespace == self.emf["namespace"]:
                    self.assertIn(metric, self.emf["names"], f"dashboard metric {metric} is not emitted by metrics.rs")
                    self.assertEqual(dict(dims), {self.emf["dimension"]: table})
            names = {m for _, m, _ in shown}
            # Records, bytes and lag of the table; errors, dead letters, commit conflicts, failed commits,
            # table-services runs and writer batches, coordinator duration.
            self.assertLessEqual({"RecordsIn", "RecordsWritten", "BytesWritten", "MaxLag", "OffsetLag", "Errors",
                                  "Throttles", "RecordsDeadLettered", "CommitConflicts", "CatalogSyncFailures",
                                  "CommitFailures", "ServiceFailures", "BatchFailures", "Duration"}, names)
            for widget in body["widgets"]:
                props = widget["properties"]
                self.assertEqual(props["region"], REGION)
                self.assertEqual(props["period"], int(params.get("AlarmPeriod", 300)))
                self.assertLessEqual(widget["x"] + widget["width"], 24)
            # The coordinator's duration as a percent of its timeout, as its alarm computes it.
            expressions = [line[0]["expression"] for w in body["widgets"] for line in w["properties"]["metrics"]
                           if isinstance(line[0], dict)]
            timeout = params.get("CoordinatorTimeout", "900")
            self.assertEqual(expressions, [f"100 * duration / ({timeout} * 1000)"])

    def check_routed_dashboard(self, params):
        """Many tables: records, bytes and lag per table through search expressions over the tables' names,
        the largest offset lag of the topics, and every alarmed metric."""
        body = iac.sam_dashboard(self.template, params, ACCOUNT, REGION)["body"]
        shown = iac.dashboard_metrics(body)
        searched = {}
        for widget in body["widgets"]:
            props = widget["properties"]
            self.assertEqual(props["region"], REGION)
            self.assertEqual(props["period"], int(params.get("AlarmPeriod", 300)))
            self.assertLessEqual(widget["x"] + widget["width"], 24)
            for line in props["metrics"]:
                if isinstance(line[0], dict):
                    m = re.fullmatch(r"SEARCH\('\{(\w+),(\w+)\} MetricName=\"(\w+)\" (\w+) \(([\w ]+)\)', '(\w+)', (\d+)\)",
                                     line[0]["expression"])
                    self.assertTrue(m, line[0]["expression"])
                    namespace, dimension, metric, prefix, names, stat, period = m.groups()
                    self.assertEqual((namespace, dimension), (self.emf["namespace"], self.emf["dimension"]))
                    self.assertIn(metric, self.emf["names"])
                    self.assertEqual(prefix, params["TableNamePrefix"])
                    self.assertEqual(names.split(" OR "), params["Topics"].split(","))
                    self.assertEqual(int(period), props["period"])
                    searched[metric] = stat
        self.assertLessEqual({"RecordsIn", "RecordsWritten", "BytesWritten", "MaxLag", "RecordsDeadLettered",
                              "BatchFailures", "CommitConflicts", "CommitFailures", "CatalogSyncFailures",
                              "ServiceFailures"}, set(searched))
        writer = f"{params['AppName']}-writer"
        for metric in ("OffsetLag", "Errors", "Throttles"):
            self.assertIn(("AWS/Lambda", metric, (("FunctionName", writer),)), shown)
        for alarm in self.sam(params).values():
            for namespace, metric, dims in iac.alarm_metrics(alarm):
                if namespace == self.emf["namespace"]:
                    self.assertIn(metric, searched, f"{alarm} is not on the dashboard")
                elif dict(dims).get("EventSourceMappingUUID"):
                    # A topic's lag: the writer's OffsetLag line draws the largest of them.
                    self.assertEqual(metric, "OffsetLag")
                else:
                    self.assertIn((namespace, metric, dims), shown)

    def test_documentation_names_every_alarm_and_parameter(self):
        operations = (ROOT / "docs" / "operations.md").read_text()
        self.assertTrue("\n## Alarms and dashboard\n" in operations, "docs/operations.md: no Alarms and dashboard")
        for suffix in ALARMS:
            self.assertTrue(f"`<name>-{suffix}`" in operations, f"docs/operations.md does not explain {suffix}")
        deploy = (ROOT / "docs" / "deploy.md").read_text()
        params = ["HoodieTableName", "AlarmEmail", "AlarmTopicArn", "AlarmPeriod"]
        params += sorted({p for pair in ALARM_PARAMETERS.values() for p in pair})
        for param in params:
            for name in (param, snake(param)):
                self.assertTrue(f"`{name}`" in deploy, f"docs/deploy.md does not name {name}")


if __name__ == "__main__":
    unittest.main()
