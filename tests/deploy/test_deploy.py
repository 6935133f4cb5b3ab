"""Deployment packaging checks: template.yaml and infra/ are valid for the tools AWS users run (cfn-lint, sam
validate --lint, checkov) and grant exactly the least-privilege list of tests/deploy/least_privilege.json, SAM and
Terraform alike, for every supported deployment shape (tests/deploy/scenarios.py).

Run with `make test-deploy` (creates .venv-deploy). No AWS account or network is used.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iac  # noqa: E402
from scenarios import (  # noqa: E402
    ACCOUNT,
    OUTPUTS,
    PARAMETER_RENAMES,
    QUEUE,
    REGION,
    ROOT,
    SCENARIOS,
    SECRET,
    TF_ONLY_OUTPUTS,
    TF_ONLY_VARIABLES,
    drift,
    placeholders,
    run,
    snake,
    tf_variables,
    tool,
)

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
