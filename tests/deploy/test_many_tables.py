"""Many tables from one deployment: the properties the Terraform module hands out route each listed topic into
its table (`hudi-sink ingest` on local paths), and docs/deploy.md's example stays in step. Run with
`make test-deploy`.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import iac  # noqa: E402
from test_alarms import ALARM_PARAMETERS, ALARMS, TABLE_ALARMS, table_alarm_suffixes  # noqa: E402
from scenarios import (  # noqa: E402
    ACCOUNT,
    CLUSTER,
    REGION,
    ROOT,
    SCENARIOS,
    run,
    snake,
    tf_variables,
)

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


if __name__ == "__main__":
    unittest.main()
