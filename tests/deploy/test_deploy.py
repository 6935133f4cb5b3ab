"""Deployment packaging checks (issue 4, acceptance 1 and 2): template.yaml and infra/ are valid for the tools
AWS users run (cfn-lint, sam validate --lint, checkov) and grant exactly the least-privilege list of
tests/deploy/least_privilege.json, SAM and Terraform alike, for every supported deployment shape.

Run with `make test-deploy` (creates .venv-deploy). No AWS account or network is used.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iac  # noqa: E402

ROOT = iac.ROOT
BIN = Path(sys.executable).parent
ACCOUNT = "111122223333"
REGION = "eu-west-1"
CLUSTER = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/trips-cluster/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3"
SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:AmazonMSK_trips-AbCdEf"
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:trips-sink-failures"
ALARM_TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:data-platform-alarms"

# Deployment shapes, as SAM parameters. The Terraform variables are derived with `tf_variables`.
SCENARIOS = {
    "msk-iam-new-bucket": {
        "AppName": "trips-sink",
        "MskClusterArn": CLUSTER,
        "Topic": "trips",
        "ConsumerGroupId": "hudi-sink-trips",
        "TablePropertiesUri": "s3://config-bucket/sinks/trips.properties",
        "HoodieTableName": "trips",
    },
    "msk-scram-existing-bucket-everything": {
        "AppName": "orders",
        "MskClusterArn": CLUSTER,
        "Topic": "orders.v1",
        "ConsumerGroupId": "orders-group",
        "KafkaSecretArn": SECRET,
        "KafkaSecretKmsKeyArn": KEY,
        "ExistingBucketName": "lake.example",
        "TablePrefix": "warehouse/orders",
        "DeadLetterPrefix": "dlq/orders",
        "TablePropertiesUri": "s3://lake.example/config/orders.properties",
        "SchemaUri": "s3://lake.example/config/orders.avsc",
        "OnFailureDestinationArn": QUEUE,
        "MinimumPollers": "2",
        "MaximumPollers": "8",
        "GlueDatabaseName": "lakehouse",
        "GlueTableName": "orders_v1",
        "GlueSchemaRegistry": "true",
        "HoodieTableName": "orders",
        "AlarmEmail": "data-oncall@example.com",
        "AlarmPeriod": "60",
        "ErrorAlarmEvaluationPeriods": "2",
        "LagAlarmEvaluationPeriods": "5",
        "OffsetLagThreshold": "250000",
        "WriterErrorsThreshold": "3",
        "WriterThrottlesThreshold": "1",
        "CoordinatorErrorsThreshold": "2",
        "DeadLetterThreshold": "10",
        "CatalogSyncFailuresThreshold": "1",
        "CommitFailuresThreshold": "4",
        "ServiceFailuresThreshold": "5",
        "CoordinatorDurationThresholdPercent": "90",
        "CoordinatorTimeout": "600",
    },
    "self-managed-scram-vpc": {
        "AppName": "trips-sink",
        "KafkaBootstrapServers": "kafka-1.internal:9096,kafka-2.internal:9096",
        "Topic": "trips",
        "ConsumerGroupId": "hudi-sink-trips",
        "KafkaSecretArn": SECRET,
        "KafkaAuthType": "SASL_SCRAM_256_AUTH",
        "SelfManagedSubnet1": "subnet-0a1b2c3d",
        "SelfManagedSubnet2": "subnet-0e1f2a3b",
        "SelfManagedSecurityGroupId": "sg-0123abcd",
        "TablePropertiesUri": "s3://config-bucket/sinks/trips.properties",
        "GlueDatabaseName": "streaming-lake",
        "GlueTableName": "trips",
        "HoodieTableName": "trips",
        "AlarmTopicArn": ALARM_TOPIC,
    },
    "self-managed-public-no-auth": {
        "KafkaBootstrapServers": "kafka.example.com:9092",
        "Topic": "trips",
        "ConsumerGroupId": "hudi-sink-trips",
        "TablePropertiesUri": "s3://config-bucket/sinks/trips.properties",
        "HoodieTableName": "trips_v2",
    },
    # Many tables: one table per Debezium topic, through one routed writer (docs/deploy.md, Many tables).
    "msk-iam-topics-glue": {
        "AppName": "shop-sink",
        "MskClusterArn": CLUSTER,
        "Topics": "customers,orders,order_items",
        "TopicPrefix": "pg.public.",
        "TableNamePrefix": "shop_",
        "ConsumerGroupId": "hudi-sink-shop",
        "TablePrefix": "tables",
        "DeadLetterPrefix": "dead-letters",
        "TablePropertiesUri": "s3://config-bucket/sinks/shop.properties",
        "GlueDatabaseName": "lake",
        "AlarmEmail": "data-oncall@example.com",
        "DeadLetterThreshold": "5",
        "CommitFailuresThreshold": "2",
        "OffsetLagThreshold": "50000",
    },
    "self-managed-scram-topics": {
        "AppName": "shop-sink",
        "KafkaBootstrapServers": "kafka-1.internal:9096",
        "Topics": "customers,orders,items",
        "TopicPrefix": "pg.public.",
        "TableNamePrefix": "shop_",
        "ConsumerGroupId": "hudi-sink-shop",
        "KafkaSecretArn": SECRET,
        "SelfManagedSubnet1": "subnet-0a1b2c3d",
        "SelfManagedSecurityGroupId": "sg-0123abcd",
        "TablePropertiesUri": "s3://config-bucket/sinks/shop.properties",
        "SchemaUri": "s3://config-bucket/schemas/$table.avsc",
        "MinimumPollers": "1",
        "MaximumPollers": "4",
        "OnFailureDestinationArn": QUEUE,
        "AlarmTopicArn": ALARM_TOPIC,
    },
}
ROUTED = [name for name, params in SCENARIOS.items() if params.get("Topics")]

# SAM parameter -> Terraform variable where the name is not simply the snake_case of the parameter.
PARAMETER_RENAMES = {
    "AppName": "name",
    "SelfManagedSubnet1": "self_managed_subnet_ids",
    "SelfManagedSubnet2": "self_managed_subnet_ids",
    "SelfManagedSubnet3": "self_managed_subnet_ids",
}
TF_ONLY_VARIABLES = {"writer_zip", "coordinator_zip", "tags"}

# Outputs a user needs, in both (SAM name -> Terraform name), and the Terraform-only convenience output.
OUTPUTS = {
    "WriterFunctionName": "writer_function_name",
    "WriterFunctionArn": "writer_function_arn",
    "CoordinatorFunctionName": "coordinator_function_name",
    "CoordinatorFunctionArn": "coordinator_function_arn",
    "EventSourceMappingId": "event_source_mapping_id",
    "LockTableName": "lock_table_name",
    "LockTableArn": "lock_table_arn",
    "BucketName": "bucket_name",
    "BasePath": "base_path",
    "DeadLetterPath": "dead_letter_path",
    "WriterRoleArn": "writer_role_arn",
    "CoordinatorRoleArn": "coordinator_role_arn",
    "WriterLogGroupName": "writer_log_group_name",
    "CoordinatorLogGroupName": "coordinator_log_group_name",
    "GlueDatabaseName": "glue_database_name",
    "GlueTableName": "glue_table_name",
    "AlarmTopicArn": "alarm_topic_arn",
    "DashboardName": "dashboard_name",
    "RouteProperties": "route_properties",
}
TF_ONLY_OUTPUTS = {"deployment_properties"}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def tf_variables(params: dict) -> dict:
    out = {"writer_zip": "w.zip", "coordinator_zip": "c.zip"}
    subnets = []
    for key, value in params.items():
        if key.startswith("SelfManagedSubnet"):
            subnets.append(value)
            continue
        if key == "Topics":
            out["topics"] = value.split(",") if value else []
            continue
        name = PARAMETER_RENAMES.get(key, snake(key))
        out[name] = int(value) if re.fullmatch(r"\d+", value) and name != "name" else value
    if subnets:
        out["self_managed_subnet_ids"] = subnets
    return out


def placeholders(params: dict, template: dict) -> tuple[dict, dict]:
    """Placeholder values and `when` flags of least_privilege.json for a scenario."""
    p = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    p.update(params)
    name = p["AppName"]
    cluster = p["MskClusterArn"]
    values = {
        "partition": "aws",
        "region": REGION,
        "account": ACCOUNT,
        "name": name,
        "bucket": p["ExistingBucketName"] or f"{name}-{ACCOUNT}-{REGION}",
        "table_prefix": p["TablePrefix"],
        "dead_letter_prefix": p["DeadLetterPrefix"],
        "properties_path": p["TablePropertiesUri"].removeprefix("s3://"),
        "schema_path": p["SchemaUri"].removeprefix("s3://"),
        "msk_cluster_arn": cluster,
        "kafka_arn_prefix": cluster.split(":cluster/")[0],
        "kafka_cluster_path": cluster.split(":cluster/")[-1],
        "topic": p["Topic"],
        "consumer_group_id": p["ConsumerGroupId"],
        "kafka_secret_arn": p["KafkaSecretArn"],
        "kafka_secret_kms_key_arn": p["KafkaSecretKmsKeyArn"],
        "on_failure_destination_arn": p["OnFailureDestinationArn"],
        "glue_database": p["GlueDatabaseName"],
        "glue_table": p["GlueTableName"],
    }
    names = [n for n in p["Topics"].split(",") if n]
    values.update(names=names, topics=[p["TopicPrefix"] + n for n in names],
                  tables=[p["TableNamePrefix"] + n for n in names])
    values["schema_paths"] = [values["schema_path"].replace("$table", t) for t in values["tables"]]
    is_msk = bool(cluster)
    routed = bool(names)
    flags = {
        "is_routed": routed,
        "is_single": not routed,
        "is_msk_iam_single": is_msk and not p["KafkaSecretArn"] and not routed,
        "is_msk_iam_routed": is_msk and not p["KafkaSecretArn"] and routed,
        "has_glue_routed": bool(p["GlueDatabaseName"]) and routed,
        "has_schema_single": bool(p["SchemaUri"]) and not routed,
        "has_schema_routed": bool(p["SchemaUri"]) and routed,
        "is_msk": is_msk,
        "is_msk_iam": is_msk and not p["KafkaSecretArn"],
        "needs_network_interfaces": is_msk or bool(p["SelfManagedSubnet1"]),
        "has_secret": bool(p["KafkaSecretArn"]),
        "has_secret_key": bool(p["KafkaSecretArn"]) and bool(p["KafkaSecretKmsKeyArn"]),
        "has_on_failure_destination": bool(p["OnFailureDestinationArn"]),
        "has_schema": bool(p["SchemaUri"]),
        "has_glue": bool(p["GlueDatabaseName"]),
        "has_glue_registry": p["GlueSchemaRegistry"] == "true",
    }
    return values, flags


def drift(template_text: str | None = None, module_files: dict | None = None) -> list[str]:
    """Every difference between the expected least-privilege list and what SAM / Terraform grant."""
    template = iac.load_template(template_text)
    module = iac.load_module(module_files)
    problems = []
    for scenario, params in SCENARIOS.items():
        values, flags = placeholders(params, template)
        want = iac.expected_policies(values, flags)
        sam = iac.sam_policies(template, params, ACCOUNT, REGION)
        tf = iac.tf_policies(module, tf_variables(params), ACCOUNT, REGION)
        problems += iac.diff(f"{scenario} SAM", sam, want)
        problems += iac.diff(f"{scenario} Terraform", tf, want)
    return problems


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="testtesttest",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
        SAM_CLI_TELEMETRY="0",
        BC_SKIP_MAPPING="TRUE",
    )
    env.pop("AWS_PROFILE", None)
    return subprocess.run(cmd, cwd=kw.pop("cwd", ROOT), env=env, capture_output=True, text=True, timeout=600, **kw)


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise AssertionError(f"{name} is not installed next to {sys.executable}; run `make test-deploy`")
    return str(path)


class LeastPrivilege(unittest.TestCase):
    def test_sam_and_terraform_grant_exactly_the_list(self):
        problems = drift()
        self.assertEqual(problems, [], "\n".join(problems))

    def test_every_listed_statement_is_exercised(self):
        # Each conditional statement must be present in one scenario and absent in another, or the scenarios
        # would not test its condition.
        template = iac.load_template()
        spec = json.loads(iac.LEAST_PRIVILEGE.read_text())
        seen = {}
        for params in SCENARIOS.values():
            _, flags = placeholders(params, template)
            for flag, on in flags.items():
                seen.setdefault(flag, set()).add(on)
        for role, statements in spec["roles"].items():
            for st in statements:
                if "when" in st:
                    self.assertEqual(seen[st["when"]], {True, False}, f"{role}.{st['sid']} when {st['when']}")
                if st["resources"] == ["*"]:
                    self.assertTrue(st.get("wildcard_reason"), f"{role}.{st['sid']}: '*' needs a reason")

    def test_drift_check_rejects_broken_copies(self):
        tf_files = {p.name: p.read_text() for p in sorted(iac.MODULE.glob("*.tf"))}
        template = iac.TEMPLATE.read_text()
        broken_tf = [
            # an extra action
            ("iam.tf", '"dynamodb:DeleteItem"]', '"dynamodb:DeleteItem", "dynamodb:Scan"]'),
            # a resource widened to the whole bucket
            ("iam.tf", 'resources = ["${local.bucket_arn}/${var.dead_letter_prefix}/*"]',
             'resources = ["${local.bucket_arn}/*"]'),
            # the kafka-cluster group permission granted with SCRAM too
            ("iam.tf", 'for_each = local.is_msk_iam ? [1] : []\n    content {\n      sid       = "KafkaGroup"',
             'for_each = local.is_msk ? [1] : []\n    content {\n      sid       = "KafkaGroup"'),
            # a wrong derivation of the topic ARN
            ("main.tf", 'kafka_topic_arn    = "${local.kafka_arn_prefix}:topic/',
             'kafka_topic_arn    = "${local.kafka_arn_prefix}:topic/*/'),
            # the Glue table ARN widened to every table of the database
            ("main.tf", 'glue_table_arn     = "${local.glue_arn_prefix}:table/${var.glue_database_name}/${var.glue_table_name}"',
             'glue_table_arn     = "${local.glue_arn_prefix}:table/${var.glue_database_name}/*"'),
            # the catalog sync granted without a Glue database
            ("iam.tf", 'for_each = local.has_glue ? [1] : []', 'for_each = [1]'),
            # a Glue action too many
            ("iam.tf", '"glue:UpdateTable",', '"glue:UpdateTable",\n        "glue:DeleteTable",'),
            # many tables: every lock item instead of the tables' own
            ("iam.tf", 'values   = local.topic_tables', 'values   = ["${var.table_name_prefix}*"]'),
            # many tables: every topic of the prefix instead of the listed ones
            ("iam.tf", ':topic/${local.kafka_cluster_path}/${var.topic_prefix}${n}"]',
             ':topic/${local.kafka_cluster_path}/${var.topic_prefix}*"]'),
            # many tables: a table's merge-on-read _rt table missing from the writer's catalog sync
            ("iam.tf", '\n        [for t in local.topic_tables : "${local.glue_arn_prefix}:table/${var.glue_database_name}/${t}_rt"],', ''),
            # many tables: every schema file of the table prefix instead of the tables'
            ("iam.tf", 'replace(local.schema_object_arn, "$table", t)', 'replace(local.schema_object_arn, "$table", "*")'),
            # many tables: the coordinator still invoked although it does not exist
            ("iam.tf", 'for_each = local.is_single ? [1] : []\n    content {\n      sid       = "InvokeCoordinator"',
             'for_each = [1]\n    content {\n      sid       = "InvokeCoordinator"'),
        ]
        for file, old, new in broken_tf:
            self.assertIn(old, tf_files[file])
            files = dict(tf_files, **{file: tf_files[file].replace(old, new, 1)})
            self.assertNotEqual(drift(module_files=files), [], f"Terraform drift not caught: {new}")
        broken_sam = [
            ("Action: [dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:DeleteItem]\n"
             "                  Resource: !GetAtt LockTable.Arn\n                - !Ref AWS::NoValue\n"
             "              - !If\n                - IsSingle\n                - Sid: InvokeCoordinator",
             "Action: [dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:DeleteItem, dynamodb:Query]\n"
             "                  Resource: !GetAtt LockTable.Arn\n                - !Ref AWS::NoValue\n"
             "              - !If\n                - IsSingle\n                - Sid: InvokeCoordinator"),
            # many tables: every lock item instead of the table's own
            ('dynamodb:LeadingKeys: [!Sub "${TableNamePrefix}${Name}"]', 'dynamodb:LeadingKeys: [!Sub "${TableNamePrefix}*"]'),
            # many tables: every topic of the prefix instead of the listed ones
            ("- ${Prefix}:topic/${NameUuid}/${TopicPrefix}${Name}", "- ${Prefix}:topic/${NameUuid}/${TopicPrefix}*"),
            # many tables: every schema file instead of the tables'
            ("arn:${AWS::Partition}:s3:::${Before}${TableNamePrefix}${Name}${After}", "arn:${AWS::Partition}:s3:::${Before}*${After}"),
            # many tables: a table's merge-on-read _rt table missing from the writer's catalog sync
            ("\n                    - !Sub arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}:table/${GlueDatabaseName}/${TableNamePrefix}${Name}_rt", ""),
            # many tables: the coordinator still invoked although it does not exist, and uploads aborted by a
            # single-table writer
            ("- IsSingle\n                - Sid: InvokeCoordinator", "- IsMsk\n                - Sid: InvokeCoordinator"),
            ("- IsRouted\n                - Sid: TableUploads", "- IsMsk\n                - Sid: TableUploads"),
            ("                  Resource: !Ref KafkaSecretArn", '                  Resource: "*"'),
            # the merge-on-read _rt table missing, and the _ro table widened to every table of the database
            ("\n                    - !Sub arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}:table/${GlueDatabaseName}/${GlueTableName}_rt", ""),
            ("table/${GlueDatabaseName}/${GlueTableName}_ro", "table/${GlueDatabaseName}/*"),
            # the catalog sync granted without a Glue database
            ("<name>_ro and <name>_rt.\n              - !If\n                - HasGlue\n                - Sid: CatalogSync",
             "<name>_ro and <name>_rt.\n              - !If\n                - IsMsk\n                - Sid: CatalogSync"),
            ("- Prefix: !Select [0, !Split [\":cluster/\", !Ref MskClusterArn]]\n"
             "                        NameUuid: !Select [1, !Split [\":cluster/\", !Ref MskClusterArn]]\n"
             "                  - !Ref AWS::NoValue\n                - !If\n                  - IsSingle\n"
             "                  - Sid: KafkaGroup",
             "- Prefix: !Select [0, !Split [\":cluster/\", !Ref MskClusterArn]]\n"
             "                        NameUuid: !Select [0, !Split [\":cluster/\", !Ref MskClusterArn]]\n"
             "                  - !Ref AWS::NoValue\n                - !If\n                  - IsSingle\n"
             "                  - Sid: KafkaGroup"),
        ]
        for old, new in broken_sam:
            self.assertEqual(template.count(old), 1, old)
            self.assertNotEqual(drift(template_text=template.replace(old, new)), [], f"SAM drift not caught: {new}")


class Parity(unittest.TestCase):
    def setUp(self):
        self.template = iac.load_template()
        self.module = iac.load_module()
        self.variables = iac.blocks(self.module, "variable")

    def test_every_parameter_has_a_variable_with_the_same_default(self):
        expected = {PARAMETER_RENAMES.get(p, snake(p)) for p in self.template["Parameters"]}
        self.assertEqual(set(self.variables) - TF_ONLY_VARIABLES, expected)
        ev = iac.TfEvaluator(self.module, {"writer_zip": "w.zip", "coordinator_zip": "c.zip",
                                           "consumer_group_id": "g", "table_properties_uri": "s3://b/k"},
                                ACCOUNT, REGION)
        for param, spec in self.template["Parameters"].items():
            var = PARAMETER_RENAMES.get(param, snake(param))
            if param.startswith("SelfManagedSubnet"):
                continue
            if "Default" not in spec:
                self.assertNotIn("default", self.variables[var], var)
                continue
            default = ev.vars[var]
            if spec["Type"] == "CommaDelimitedList":
                default = ",".join(default)  # the list the parameter's text stands for
            self.assertEqual(str(default), str(spec["Default"]), f"default of {param} / {var}")

    def test_every_variable_has_a_description_and_inputs_a_validation(self):
        for name, spec in self.variables.items():
            self.assertTrue(iac.unquote(spec.get("description", "")).strip(), f"{name}: no description")
            if name != "tags":
                self.assertTrue(spec.get("validation"), f"{name}: no validation block")

    def test_outputs_match(self):
        self.assertEqual(set(self.template["Outputs"]), set(OUTPUTS))
        tf_outputs = iac.blocks(self.module, "output")
        self.assertEqual(set(tf_outputs), set(OUTPUTS.values()) | TF_ONLY_OUTPUTS)
        for name, spec in tf_outputs.items():
            self.assertTrue(iac.unquote(spec.get("description", "")).strip(), f"output {name}: no description")

    def outputs_agree(self, params):
        """SAM's outputs that exist for `params` equal Terraform's; Terraform's others are null."""
        sam = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
        tf = iac.TfEvaluator(self.module, tf_variables(params), ACCOUNT, REGION)
        outputs = iac.blocks(self.module, "output")
        for sam_name, tf_name in OUTPUTS.items():
            output = self.template["Outputs"][sam_name]
            if sam_name in ("EventSourceMappingId", "WriterRoleArn", "CoordinatorRoleArn"):
                continue  # generated by AWS
            if "Condition" in output and not sam.condition(output["Condition"]):
                if sam_name not in ("GlueDatabaseName", "GlueTableName", "AlarmTopicArn"):  # empty in Terraform
                    self.assertIsNone(tf.value(outputs[tf_name]["value"]), sam_name)
                continue
            self.assertEqual(sam.eval(output["Value"]), tf.value(outputs[tf_name]["value"]), sam_name)
        return sam, tf, outputs

    def test_outputs_and_deployment_properties_agree_with_many_tables(self):
        params = SCENARIOS["msk-iam-topics-glue"]
        sam, tf, outputs = self.outputs_agree(params)
        lines = tf.value(outputs["deployment_properties"]["value"]).splitlines()
        props = dict(line.split("=", 1) for line in lines if line.strip())
        self.assertTrue(all(line.strip() for line in lines), lines)
        self.assertEqual(props["hoodie.base.path"], "s3://shop-sink-111122223333-eu-west-1/tables/$table")
        self.assertEqual(props["hudi.sink.dead.letter.path"], "s3://shop-sink-111122223333-eu-west-1/dead-letters/$table")
        self.assertEqual(props["hoodie.write.lock.dynamodb.table"], "shop-sink-lock")
        # The route as a .properties file writes it (backslashes doubled), which routing.md documents.
        self.assertEqual(props["hudi.sink.route.topics.topic.regex"], "pg\\\\.public\\\\.(.+)")
        self.assertEqual(props["hudi.sink.route.topics.table"], "shop_$1")
        self.assertEqual(sam.eval(self.template["Outputs"]["RouteProperties"]["Value"]),
                         "hudi.sink.route.topics.topic.regex=pg\\\\.public\\\\.(.+)\nhudi.sink.route.topics.table=shop_$1")
        # A routed configuration refuses the coordinator function and a single table's name.
        self.assertNotIn("hudi.sink.coordinator.function", props)
        self.assertNotIn("hoodie.datasource.hive_sync.table", props)
        self.assertEqual(props["hoodie.datasource.hive_sync.database"], "lake")
        sources = "".join(p.read_text() for p in (ROOT / "crates" / "hudi-sink" / "src").rglob("*.rs"))
        for key in props:
            if not key.startswith("hudi.sink.route."):
                self.assertIn(f'"{key}"', sources, f"{key} is not a configuration key of crates/hudi-sink")
        self.assertIn('"hudi.sink.route."', sources)

    def test_outputs_and_deployment_properties_agree(self):
        params = SCENARIOS["msk-scram-existing-bucket-everything"]
        sam, tf, outputs = self.outputs_agree(params)
        props = dict(
            line.split("=", 1)
            for line in tf.value(outputs["deployment_properties"]["value"]).splitlines()
            if line.strip()
        )
        self.assertEqual(props["hoodie.base.path"], sam.eval(self.template["Outputs"]["BasePath"]["Value"]))
        self.assertEqual(props["hoodie.write.lock.dynamodb.table"], "orders-lock")
        self.assertEqual(props["hudi.sink.coordinator.function"], "orders-coordinator")
        self.assertEqual(props["hudi.sink.dead.letter.path"], "s3://lake.example/dlq/orders")
        # The catalog sync keys name the database and table the coordinator may write.
        self.assertEqual(props["hoodie.datasource.meta.sync.enable"], "true")
        self.assertEqual(props["hoodie.meta.sync.client.tool.class"], "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool")
        self.assertEqual(props["hoodie.datasource.hive_sync.database"], sam.eval(self.template["Outputs"]["GlueDatabaseName"]["Value"]))
        self.assertEqual(props["hoodie.datasource.hive_sync.table"], sam.eval(self.template["Outputs"]["GlueTableName"]["Value"]))
        self.assertEqual(self.template["Outputs"]["GlueDatabaseName"].get("Condition"), "HasGlue")
        self.assertEqual(self.template["Outputs"]["GlueTableName"].get("Condition"), "HasGlueSingle")
        # Without a Glue database: no sync key, and no blank line.
        plain = iac.TfEvaluator(self.module, tf_variables(SCENARIOS["msk-iam-new-bucket"]), ACCOUNT, REGION)
        plain_lines = plain.value(outputs["deployment_properties"]["value"]).splitlines()
        self.assertTrue(all(line.strip() for line in plain_lines), plain_lines)
        self.assertEqual([line.split("=", 1)[0] for line in plain_lines],
                         ["hoodie.base.path", "hoodie.write.lock.dynamodb.table", "hoodie.write.lock.dynamodb.region",
                          "hudi.sink.coordinator.function", "hudi.sink.dead.letter.path"])
        # Every key is one the library reads.
        sources = "".join(p.read_text() for p in (ROOT / "crates" / "hudi-sink" / "src").rglob("*.rs"))
        for key in props:
            self.assertIn(f'"{key}"', sources, f"{key} is not a configuration key of crates/hudi-sink")

    def test_glue_table_is_required_with_the_database(self):
        # SAM: the rule's assertions; Terraform: the coordinator's precondition. Both or neither.
        base = SCENARIOS["msk-iam-new-bucket"]
        rule = self.template["Rules"]["CatalogSyncGiven"]["Assertions"]
        for db, table, ok in (("", "", True), ("lake", "trips", True), ("lake", "", False), ("", "trips", False)):
            ev = iac.CfnEvaluator(self.template, dict(base, GlueDatabaseName=db, GlueTableName=table), ACCOUNT, REGION)
            self.assertEqual(all(ev.eval(a["Assert"]) for a in rule), ok, (db, table))
            tf = iac.TfEvaluator(self.module, dict(tf_variables(base), glue_database_name=db, glue_table_name=table),
                                 ACCOUNT, REGION)
            coordinator = iac.blocks(self.module, "resource")[("aws_lambda_function", "coordinator")]
            conditions = [tf.value(pre["condition"]) for lc in coordinator["lifecycle"] for pre in lc["precondition"]]
            self.assertEqual(conditions, [ok], (db, table))

    def test_one_topic_or_a_list_of_topics(self):
        # SAM: the rules' assertions; Terraform: the writer's preconditions (but the Kafka source's). A list of
        # topics is routed: it names no single table and has no coordinator, which it could not serve.
        routed = {k: v for k, v in SCENARIOS["msk-iam-topics-glue"].items() if k != "AlarmEmail"}
        single = SCENARIOS["msk-iam-new-bucket"]
        cases = [
            ("one topic", single, {}, True),
            ("a list of topics", routed, {}, True),
            ("both", routed, {"Topic": "trips"}, False),
            ("neither", single, {"Topic": ""}, False),
            ("a list without a table name prefix", routed, {"TableNamePrefix": ""}, False),
            ("a list with a single table's name", routed, {"HoodieTableName": "trips"}, False),
            ("a list with a single Glue table", routed, {"GlueTableName": "trips"}, False),
            ("one topic without its table's name", single, {"HoodieTableName": ""}, False),
            ("one topic with a table name prefix", single, {"TableNamePrefix": "shop_"}, False),
            ("one topic with a topic prefix", single, {"TopicPrefix": "pg.public."}, False),
        ]
        rules = [a for r in ("TopicsGiven", "CatalogSyncGiven") for a in self.template["Rules"][r]["Assertions"]]
        writer = iac.blocks(self.module, "resource")[("aws_lambda_function", "writer")]
        for case, base, change, ok in cases:
            params = {k: v for k, v in dict(base, **change).items() if v != "" or k in ("Topic", "Topics")}
            ev = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
            refused = [a["AssertDescription"] for a in rules if not ev.eval(a["Assert"])]
            self.assertEqual(not refused, ok, (case, refused))
            tf = iac.TfEvaluator(self.module, tf_variables(params), ACCOUNT, REGION)
            conditions = [tf.value(pre["condition"]) for lc in writer["lifecycle"] for pre in lc["precondition"]
                          if "kafka" not in iac.unquote(pre["error_message"])]
            self.assertEqual(all(conditions), ok, case)
        # Terraform also refuses a list whose schema file does not name the table ($table).
        for schema, ok in (("s3://config-bucket/schemas/$table.avsc", True), ("s3://config-bucket/shop.avsc", False)):
            tf = iac.TfEvaluator(self.module, tf_variables(dict(routed, SchemaUri=schema)), ACCOUNT, REGION)
            conditions = [tf.value(pre["condition"]) for lc in writer["lifecycle"] for pre in lc["precondition"]]
            self.assertEqual(all(conditions), ok, schema)

    def test_functions_packages_and_environment(self):
        res = self.template["Resources"]
        for fn, package in (("WriterFunction", "writer"), ("CoordinatorFunction", "coordinator")):
            binary = f"hudi-sink-{package}"
            cargo = (ROOT / "functions" / package / "Cargo.toml").read_text()
            self.assertIn(f'name = "{binary}"', cargo)
            self.assertEqual(res[fn]["Metadata"]["BuildMethod"], "rust-cargolambda")
            self.assertEqual(res[fn]["Metadata"]["BuildProperties"]["Binary"], binary)
            self.assertEqual(res[fn]["Properties"]["CodeUri"], f"functions/{package}")
            env = res[fn]["Properties"]["Environment"]["Variables"]
            self.assertEqual(env["HUDI_SINK_CONFIG"], {"Ref": "TablePropertiesUri"})
            main = (ROOT / "functions" / package / "src" / "main.rs").read_text()
            self.assertIn('"HUDI_SINK_CONFIG"', main)
            example = (iac.EXAMPLE / "main.tf").read_text()
            self.assertIn(f"target/lambda/{binary}/bootstrap.zip", example)
        globals_ = self.template["Globals"]["Function"]
        self.assertEqual(globals_["Runtime"], "provided.al2023")
        self.assertEqual(globals_["Architectures"], ["arm64"])
        self.assertLessEqual(self.template["Parameters"]["WriterTimeout"]["MaxValue"], 840)
        self.assertLessEqual(self.template["Parameters"]["BatchSize"]["MaxValue"], 10000)
        functions = {n: b for (t, n), b in iac.blocks(self.module, "resource").items() if t == "aws_lambda_function"}
        for name, body in functions.items():
            self.assertEqual(iac.unquote(body["runtime"]), "provided.al2023")
            self.assertEqual([iac.unquote(a) for a in body["architectures"]], ["arm64"])

    def test_coordinator_is_sized_for_the_table_services(self):
        # Clustering rewrites files of up to ~100 MiB in a scheduled run: the Lambda maximum timeout, and at
        # least one full vCPU (1769 MB), SAM and Terraform alike.
        params = self.template["Parameters"]
        self.assertEqual(params["CoordinatorTimeout"]["Default"], 900)
        self.assertEqual(params["CoordinatorTimeout"]["MaxValue"], 900)
        self.assertGreaterEqual(params["CoordinatorMemorySize"]["Default"], 1769)
        fn = self.template["Resources"]["CoordinatorFunction"]["Properties"]
        self.assertEqual(fn["Timeout"], {"Ref": "CoordinatorTimeout"})
        self.assertEqual(fn["MemorySize"], {"Ref": "CoordinatorMemorySize"})
        ev = iac.TfEvaluator(self.module, tf_variables(SCENARIOS["msk-iam-new-bucket"]), ACCOUNT, REGION)
        coordinator = iac.blocks(self.module, "resource")[("aws_lambda_function", "coordinator")]
        self.assertEqual(ev.value(coordinator["timeout"]), 900)
        self.assertGreaterEqual(ev.value(coordinator["memory_size"]), 1769)
        # The services' S3 work: read, write and delete objects under the table prefix (compaction uploads in
        # parts and aborts a failed upload), list only that prefix.
        listed = {st["sid"]: st for st in json.loads(iac.LEAST_PRIVILEGE.read_text())["roles"]["coordinator"]}
        self.assertEqual(
            listed["TableObjects"]["actions"],
            ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
        )
        self.assertEqual(listed["TableObjects"]["resources"], ["arn:{partition}:s3:::{bucket}/{table_prefix}/*"])
        self.assertEqual(listed["TableList"]["actions"], ["s3:ListBucket"])
        self.assertEqual(listed["TableList"]["condition"], {"StringLike": {"s3:prefix": ["{table_prefix}/*"]}})

    def test_lock_table_is_the_hudi_layout(self):
        t = self.template["Resources"]["LockTable"]["Properties"]
        self.assertEqual(t["KeySchema"], [{"AttributeName": "key", "KeyType": "HASH"}])
        self.assertEqual(t["AttributeDefinitions"], [{"AttributeName": "key", "AttributeType": "S"}])
        self.assertEqual(t["BillingMode"], "PAY_PER_REQUEST")
        self.assertTrue(t["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"])
        self.assertTrue(t["SSESpecification"]["SSEEnabled"])
        lock = iac.blocks(self.module, "resource")[("aws_dynamodb_table", "lock")]
        self.assertEqual(iac.unquote(lock["hash_key"]), "key")
        self.assertEqual(iac.unquote(lock["billing_mode"]), "PAY_PER_REQUEST")
        self.assertEqual([(iac.unquote(a["name"]), iac.unquote(a["type"])) for a in lock["attribute"]], [("key", "S")])

    def test_event_source_mappings(self):
        for params in SCENARIOS.values():
            ev = iac.CfnEvaluator(self.template, params, ACCOUNT, REGION)
            res = ev.t["Resources"]
            esms = [n for n, r in res.items() if r["Type"] == "AWS::Lambda::EventSourceMapping" and ev.resource_exists(n)]
            # One mapping per topic: the single topic with its group, or each listed topic with a group of its own.
            names = [n for n in params.get("Topics", "").split(",") if n]
            want = ([(params.get("TopicPrefix", "") + n, f"{params['ConsumerGroupId']}-{n}") for n in names]
                    or [(params["Topic"], params["ConsumerGroupId"])])
            got = []
            for esm in esms:
                props = ev.eval(res[esm]["Properties"])
                group = props.get("AmazonManagedKafkaEventSourceConfig") or props.get("SelfManagedKafkaEventSourceConfig")
                got.append((props["Topics"][0], group["ConsumerGroupId"]))
                self.assertEqual(len(props["Topics"]), 1)
                self.assertEqual(props["FunctionName"], f"{params.get('AppName', 'msk-hudi-sink')}-writer")
                self.check_mapping(params, props)
            self.assertEqual(sorted(got), sorted(want), params)
            # Terraform: the same topics and groups.
            tf = iac.TfEvaluator(self.module, tf_variables(params), ACCOUNT, REGION)
            tf_got = []
            for rname in ("writer", "topic"):
                body = iac.blocks(self.module, "resource")[("aws_lambda_event_source_mapping", rname)]
                if not tf.resource_exists("aws_lambda_event_source_mapping", rname):
                    continue
                for key in tf.instances(body):
                    tf.each = key
                    groups = [tf.value(b["content"][0]["consumer_group_id"]) for d in body["dynamic"]
                              for k, b in d.items()
                              if iac.unquote(k) in ("amazon_managed_kafka_event_source_config",
                                                    "self_managed_kafka_event_source_config")
                              and tf.value(b["for_each"])]
                    (topic,) = tf.value(body["topics"])
                    tf_got.append((topic, groups[0]))
                tf.each = None
            self.assertEqual(sorted(tf_got), sorted(want), params)
        for rname in ("writer", "topic"):
            esm = iac.blocks(self.module, "resource")[("aws_lambda_event_source_mapping", rname)]
            dynamic = {iac.unquote(k) for d in esm["dynamic"] for k in d}
            self.assertTrue({"amazon_managed_kafka_event_source_config", "self_managed_event_source",
                             "source_access_configuration", "provisioned_poller_config",
                             "destination_config"} <= dynamic)

    def check_mapping(self, params, props):
        """Source, access, pollers and destination of one mapping, as the parameters ask."""
        access = props.get("SourceAccessConfigurations", [])
        if params.get("MskClusterArn"):
            self.assertEqual(props["EventSourceArn"], params["MskClusterArn"])
            want = [{"Type": "SASL_SCRAM_512_AUTH", "URI": SECRET}] if params.get("KafkaSecretArn") else []
            self.assertEqual(access, want)
        else:
            self.assertEqual(props["SelfManagedEventSource"]["Endpoints"]["KafkaBootstrapServers"],
                             params["KafkaBootstrapServers"].split(","))
            types = sorted(a["Type"] for a in access)
            want = ([params.get("KafkaAuthType", "SASL_SCRAM_512_AUTH")] if params.get("KafkaSecretArn") else [])
            want += ["VPC_SUBNET"] * sum(1 for k in params if k.startswith("SelfManagedSubnet"))
            want += ["VPC_SECURITY_GROUP"] if params.get("SelfManagedSecurityGroupId") else []
            self.assertEqual(types, sorted(want))
        if params.get("MinimumPollers"):
            self.assertEqual(props["ProvisionedPollerConfig"],
                             {"MinimumPollers": params["MinimumPollers"], "MaximumPollers": params["MaximumPollers"]})
        else:
            self.assertNotIn("ProvisionedPollerConfig", props)
        if params.get("OnFailureDestinationArn"):
            self.assertEqual(props["DestinationConfig"], {"OnFailure": {"Destination": QUEUE}})
        else:
            self.assertNotIn("DestinationConfig", props)

# Alarm name suffix -> (namespace, metric, dimension, function or None, statistic). "EMF" stands for the namespace
# of crates/hudi-sink/src/metrics.rs, read from the source by iac.emf_metrics().
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


class ManyTablesIngest(unittest.TestCase):
    """The properties the many-tables stacks hand out, read by the library itself: `hudi-sink ingest` (the writer
    function's code path, with local paths for the bucket and a file lock for DynamoDB) sends every listed topic
    to its table."""

    def test_stack_properties_route_each_topic_to_its_table(self):
        binary = Path(os.environ.get("HUDI_SINK_BIN", ROOT / "target" / "debug" / "hudi-sink"))
        if not binary.exists():
            self.skipTest(f"no {binary} (cargo test --workspace --no-run builds it; or set HUDI_SINK_BIN)")
        params = SCENARIOS["self-managed-scram-topics"]
        tf = iac.TfEvaluator(iac.load_module(), tf_variables(params), ACCOUNT, REGION)
        deployment = tf.value(iac.blocks(iac.load_module(), "output")["deployment_properties"]["value"])
        bucket = f"s3://{params['AppName']}-{ACCOUNT}-{REGION}/"
        names = params["Topics"].split(",")
        with tempfile.TemporaryDirectory() as d:
            # The bucket becomes a directory; the DynamoDB lock lines give way to the local file lock.
            lines = [line.replace(bucket, d + "/") for line in deployment.splitlines()
                     if line.strip() and "dynamodb" not in line]
            config = Path(d) / "shop.properties"
            config.write_text("\n".join(lines + [
                f"hoodie.streamer.schemaprovider.source.schema.file={ROOT}/events/schema/trips.avsc",
                "hoodie.datasource.write.recordkey.field=uuid",
                "hoodie.datasource.write.partitionpath.field=city",
                "hoodie.datasource.write.precombine.field=ts",
                "hoodie.index.type=BUCKET",
                "hoodie.bucket.index.num.buckets=2",
            ]) + "\n")
            events = []
            for name in names:
                out = Path(d) / "events" / name
                r = run([str(binary), "generate", "--out", str(out), "--topic", params["TopicPrefix"] + name,
                         "--records", "40", "--partitions", "2", "--seed", "7"])
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                events.append(str(out))
            r = run([str(binary), "ingest", "--config", str(config), *events])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            props = dict(line.split("=", 1) for line in lines)
            for name in names:
                table = params["TableNamePrefix"] + name
                self.assertRegex(r.stdout, rf"table {table}: records in 40,")
                base = Path(props["hoodie.base.path"].replace("$table", table))
                self.assertTrue((base / ".hoodie" / "hoodie.properties").exists(), base)
            self.assertFalse(Path(props["hudi.sink.dead.letter.path"].replace("$table", "_unrouted")).exists())


class ManyTablesDocumentation(unittest.TestCase):
    """docs/deploy.md's many-tables example, as a user copies it, deploys three Debezium topics into three tables
    with the alarms its Alarms section lists, in SAM and Terraform alike."""

    TOPICS = ["pg.public.customers", "pg.public.orders", "pg.public.items"]
    TABLES = ["shop_customers", "shop_orders", "shop_items"]

    def section(self, title):
        deploy = (ROOT / "docs" / "deploy.md").read_text()
        self.assertIn(f"\n## {title}\n", deploy)
        return deploy.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]

    def test_sam_and_terraform_examples_deploy_the_three_tables(self):
        text = self.section("Many tables")
        sam = re.search(r"```sh\nsam build\nsam deploy (.*?)```", text, re.S).group(1)
        self.assertIn("CAPABILITY_AUTO_EXPAND", sam)
        overrides = sam.split("--parameter-overrides", 1)[1].replace("\\\n", " ").split()
        params = dict(o.strip("'").split("=", 1) for o in overrides)
        params["MskClusterArn"] = CLUSTER  # the example elides the cluster's uuid
        template = iac.load_template()
        ev = iac.CfnEvaluator(template, params, ACCOUNT, REGION)
        for rule in template["Rules"].values():
            for a in rule["Assertions"]:
                self.assertTrue(ev.eval(a["Assert"]), a["AssertDescription"])
        esms = [ev.eval(r["Properties"]) for n, r in ev.t["Resources"].items()
                if r["Type"] == "AWS::Lambda::EventSourceMapping" and ev.resource_exists(n)]
        self.assertEqual(sorted(e["Topics"][0] for e in esms), sorted(self.TOPICS))
        self.assertFalse(ev.resource_exists("CoordinatorFunction"))
        name = params["AppName"]
        alarms = iac.sam_alarms(template, params, ACCOUNT, REGION)
        want = {f"{name}-writer-{s}" for s in ("offset-lag", "errors", "throttles")}
        want |= {f"{name}-{t}-{s}" for t in self.TABLES for s in table_alarm_suffixes(glue=True)}
        self.assertEqual(set(alarms), want)
        alarms_text = self.section("Alarms")
        for alarm in sorted(want):
            self.assertIn(f"`{alarm}`", alarms_text)
        # Terraform: the module block of the same section.
        hcl = re.search(r"```hcl\n(module \"shop\" \{.*?\n\})\n```", text, re.S).group(1)
        (inputs,) = iac.hcl2.loads(hcl)["module"]  # {"\"shop\"" or "shop": inputs}
        variables = {k: iac.TfEvaluator({}, {}, ACCOUNT, REGION).value(v) for k, v in inputs[next(iter(inputs))].items()
                     if k != "source" and not k.startswith("__")}
        variables["msk_cluster_arn"] = CLUSTER
        module = iac.load_module()
        self.assertEqual(iac.tf_alarms(module, variables, ACCOUNT, REGION).keys(), alarms.keys())
        tf = iac.TfEvaluator(module, variables, ACCOUNT, REGION)
        body = iac.blocks(module, "resource")[("aws_lambda_event_source_mapping", "topic")]
        topics = []
        for key in tf.instances(body):
            tf.each = key
            topics += tf.value(body["topics"])
        self.assertEqual(sorted(topics), sorted(self.TOPICS))
        self.assertFalse(tf.resource_exists("aws_lambda_function", "coordinator"))

    def test_alarms_section_names_every_alarm_metric_threshold_and_subscription(self):
        text = self.section("Alarms")
        for suffix, (namespace, metric, _, _, statistic) in ALARMS.items():
            row = re.search(rf"^\| `<name>-{suffix}` \|.*$", text, re.M)
            self.assertTrue(row, suffix)
            self.assertIn(f"`{metric}` ({statistic})", row.group(0))
            self.assertIn(f"`{ALARM_PARAMETERS[suffix][0]}`", row.group(0))
        table_metrics = dict({"offset-lag": "OffsetLag"}, **{s: m for s, (m, _, _) in TABLE_ALARMS.items()})
        for suffix, metric in table_metrics.items():
            row = re.search(rf"^\| `<name>-<table>-{suffix}` \|.*$", text, re.M)
            self.assertTrue(row, suffix)
            self.assertIn(f"`{metric}`", row.group(0))
            if suffix in TABLE_ALARMS:
                self.assertIn(f"`{TABLE_ALARMS[suffix][1]}`", row.group(0))
        self.assertIn("aws sns subscribe", text)
        for param in ("AlarmEmail", "AlarmTopicArn"):
            self.assertIn(f"`{param}` / `{snake(param)}`", text)
        operations = (ROOT / "docs" / "operations.md").read_text()
        for suffix in table_metrics:
            self.assertIn(f"`<name>-<table>-{suffix}`", operations)
        params = self.section("Many tables")
        for param in ("Topics", "TopicPrefix", "TableNamePrefix"):
            self.assertIn(f"`{param}` / `{snake(param)}`", params)

class CoordinatorRequests(unittest.TestCase):
    def test_samples_match_the_protocol(self):
        protocol = (ROOT / "crates" / "hudi-sink" / "src" / "protocol.rs").read_text()
        enum = re.search(r"pub enum CoordinatorRequest \{(.*?)\n\}", protocol, re.S).group(1)
        variants = {snake(v) for v in re.findall(r"^    (\w+)\s*[({,]", enum, re.M)}
        self.assertEqual(variants, {"begin", "commit", "abort", "services", "join", "submit", "close"})
        fields = lambda name: set(re.findall(r"pub (\w+):", re.search(
            r"pub struct " + name + r" \{(.*?)\n\}", protocol, re.S).group(1)))
        commit_fields = set(re.findall(r"pub (\w+):", re.search(r"pub struct CommitRequest \{(.*?)\n\}", protocol, re.S).group(1)))
        commit_rs = (ROOT / "crates" / "hudi-sink" / "src" / "table" / "commit.rs").read_text()
        stat_body = re.search(r"pub struct WriteStat \{(.*?)\n\}", commit_rs, re.S).group(1)
        stat_fields = {re.sub(r"_(\w)", lambda m: m.group(1).upper(), f) for f in re.findall(r"pub (\w+):", stat_body)}
        samples = sorted((ROOT / "events").glob("coordinator-*.json"))
        self.assertEqual({p.stem.removeprefix("coordinator-") for p in samples}, variants)
        for path in samples:
            request = json.loads(path.read_text())
            op = path.stem.removeprefix("coordinator-")
            self.assertEqual(request["op"], op, path)
            if op == "commit":
                self.assertEqual(set(request) - {"op"}, commit_fields)
                for stat in request["write_stats"]:
                    self.assertLessEqual(set(stat), stat_fields - {"other"})
            elif op == "begin":
                self.assertEqual(set(request), {"op", "writer"})
            elif op == "abort":
                self.assertEqual(set(request), {"op", "instant"})
            elif op == "join":
                self.assertLessEqual(set(request) - {"op"}, fields("JoinRequest"))
                self.assertLessEqual({"writer", "member", "interval_ms"}, set(request))
            elif op == "submit":
                self.assertLessEqual(set(request) - {"op"}, fields("SubmitRequest"))
                self.assertEqual(set(request["contribution"]), fields("Contribution"))
            elif op == "close":
                self.assertEqual(set(request), {"op", "instant", "member"})
                self.assertRegex(request["instant"], r"^\d{17}$")
            else:
                self.assertEqual(set(request), {"op"})

    def test_schedule_sends_the_services_request(self):
        sample = json.loads((ROOT / "events" / "coordinator-services.json").read_text())
        template = iac.load_template()
        event = template["Resources"]["CoordinatorFunction"]["Properties"]["Events"]["TableServices"]
        self.assertEqual(event["Type"], "ScheduleV2")
        self.assertEqual(json.loads(event["Properties"]["Input"]), sample)
        module = iac.load_module()
        ev = iac.TfEvaluator(module, tf_variables(SCENARIOS["msk-iam-new-bucket"]), ACCOUNT, REGION)
        schedule = iac.blocks(module, "resource")[("aws_scheduler_schedule", "table_services")]
        self.assertEqual(json.loads(ev.value(schedule["target"][0]["input"])), sample)


class Tools(unittest.TestCase):
    def test_cfn_lint_passes_and_catches_a_broken_template(self):
        r = run([tool("cfn-lint"), "template.yaml"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with tempfile.TemporaryDirectory() as d:
            broken = Path(d) / "template.yaml"
            broken.write_text(iac.TEMPLATE.read_text().replace("BillingMode: PAY_PER_REQUEST", "BillingMode: ON_DEMAND"))
            r = run([tool("cfn-lint"), str(broken)])
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("E3030", r.stdout)

    def test_sam_validate_lint_passes(self):
        r = run([tool("sam"), "validate", "--lint", "-t", "template.yaml"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("is a valid SAM Template", r.stdout + r.stderr)

    def test_sam_translation_passes_cfn_lint(self):
        # cfn-lint on the SAM template does not run the transform; translate it (offline) and lint the result,
        # which also checks the ranges of the generated resources.
        script = r"""
import json, sys, yaml
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse
template = yaml_parse(open(sys.argv[1]).read())
for name, res in template["Resources"].items():
    if res["Type"] == "AWS::Serverless::Function":
        res["Properties"]["CodeUri"] = "s3://bucket/" + name + ".zip"
class Loader:
    def load(self):
        return {}
json.dump(transform(template, {}, Loader()), open(sys.argv[2], "w"), indent=1)
"""
        # The AWS::LanguageExtensions transform runs first (CloudFormation's, or `sam build`'s own): the loops
        # are expanded here for one topic and for a list, and SAM's transform gets the result.
        template = iac.load_template()
        for topics in ("", "customers,orders,order_items"):
            params = dict(SCENARIOS["msk-iam-topics-glue" if topics else "msk-iam-new-bucket"])
            expanded = iac.CfnEvaluator(template, params, ACCOUNT, REGION).t
            expanded["Transform"] = "AWS::Serverless-2016-10-31"
            expanded["Parameters"] = json.loads(json.dumps(expanded["Parameters"]))
            expanded["Parameters"]["Topics"]["Default"] = topics
            with tempfile.TemporaryDirectory() as d:
                source, out = Path(d) / "expanded.json", Path(d) / "translated.json"
                source.write_text(json.dumps(expanded))
                r = run([sys.executable, "-c", script, str(source), str(out)])
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                translated = json.loads(out.read_text())
                kinds = {res["Type"] for res in translated["Resources"].values()}
                self.assertIn("AWS::Scheduler::Schedule", kinds)
                self.assertNotIn("AWS::Serverless::Function", kinds)
                for name in ("WriterFunction", "CoordinatorFunction"):
                    self.assertEqual(translated["Resources"][name]["Properties"].get("ManagedPolicyArns"), None)
                esms = [n for n, res in translated["Resources"].items() if res["Type"] == "AWS::Lambda::EventSourceMapping"]
                # The two single-topic mappings and one per name (the empty list has one empty name), each under
                # its condition.
                self.assertEqual(len(esms), 2 + len(topics.split(",")), esms)
                r = run([tool("cfn-lint"), str(out)])
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def checkov(self, *args) -> dict:
        with tempfile.TemporaryDirectory() as d:
            r = run([tool("checkov"), *args, "--skip-download", "-o", "json",
                     "--output-file-path", d])
            files = list(Path(d).glob("*.json"))
            self.assertEqual(len(files), 1, r.stdout + r.stderr)
            report = json.loads(files[0].read_text())
        reports = report if isinstance(report, list) else [report]
        return reports

    def assert_checkov_clean(self, reports, min_resources):
        passed = 0
        for rep in reports:
            results = rep["results"]
            failed = [(c["check_id"], c["resource"]) for c in results["failed_checks"]]
            self.assertEqual(failed, [], f"checkov failed checks in {rep.get('check_type')}")
            for c in results["skipped_checks"]:
                comment = (c.get("check_result") or {}).get("suppress_comment", "")
                self.assertGreater(len(comment.strip()), 20, f"skip of {c['check_id']} on {c['resource']} lacks a reason")
            passed += len(results["passed_checks"])
        self.assertGreater(passed, min_resources)

    def test_checkov_template(self):
        self.assert_checkov_clean(self.checkov("-f", "template.yaml", "--framework", "cloudformation"), 20)

    def test_checkov_terraform(self):
        self.assert_checkov_clean(self.checkov("-d", "infra", "--framework", "terraform"), 40)

    def test_checkov_reports_a_failure_on_an_insecure_copy(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(iac.MODULE, Path(d) / "m")
            main = Path(d) / "m" / "main.tf"
            main.write_text(main.read_text().replace("point_in_time_recovery {\n    enabled = true", "point_in_time_recovery {\n    enabled = false"))
            reports = self.checkov("-d", str(Path(d) / "m"), "--framework", "terraform")
            failed = {c["check_id"] for rep in reports for c in rep["results"]["failed_checks"]}
            self.assertIn("CKV_AWS_28", failed)

    def test_terraform_fmt(self):
        terraform = shutil.which("terraform")
        if not terraform:
            self.skipTest("no terraform binary (not available from the package registries)")
        r = run([terraform, "fmt", "-check", "-recursive", "-diff", "infra"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
