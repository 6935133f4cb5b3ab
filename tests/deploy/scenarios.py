"""The deployment shapes the packaging checks run (SAM parameters, their Terraform variables, the outputs both
hand out) and the helpers the test files of tests/deploy share."""

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
