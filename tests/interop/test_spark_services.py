"""Hudi's Java table services and Spark writers on the sink's tables (docs/compatibility.md, "Hudi's Java table
services on the sink's tables").

The sink writes with its own services off; Hudi's Java compaction, clustering, cleaner and archival run
through Spark SQL procedures (the same executors as `HoodieCompactor`, `HoodieClusteringJob` and
`HoodieCleaner`), the sink writes again, also while a Java compaction is pending, and Spark and hudi-rs must
both read the generator's model row for row, or, where keys are deleted and re-created below their stored
versions, the merge-on-read model of `table_model.py`.
"""

import json
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import (READERS_PYTHON, ROOT, SINK, Table, data_only, diff, generate, hudi_rs_read, ingest,
                      row_key, rows_of_arrow, rows_of_spark, spark_incremental, spark_read, table_config)
from table_model import TableModel

# The sink's own table services off, as the operations guide says for tables that Spark maintains.
SINK_SERVICES_OFF = {
    "hoodie.compact.inline": "false",
    "hoodie.clustering.inline": "false",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}

# What every Java client needs on the sink's tables: no metadata table (the sink keeps none, and a Java writer
# would create one that never sees the sink's files), table version 6 kept, failed writes rolled back only once
# their heartbeat expired, and the table's key and ordering fields.
JAVA_BASE = {
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.enable": "false",
    "hoodie.write.auto.upgrade": "false",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
}
# ... plus, on the bucket-indexed (upsert) tables, the bucket index, and a short retention.
JAVA_SETTINGS = {
    **JAVA_BASE,
    "hoodie.index.type": "BUCKET",
    "hoodie.index.bucket.engine": "SIMPLE",
    "hoodie.bucket.index.num.buckets": "4",
    "hoodie.bucket.index.hash.field": "uuid",
    "hoodie.cleaner.commits.retained": "2",
    "hoodie.keep.min.commits": "3",
    "hoodie.keep.max.commits": "4",
}


def procedure_options(settings):
    """Settings as a procedure's `options` argument (`k=v,k=v`)."""
    return ",".join(f"{k}={v}" for k, v in settings.items())


JAVA_OPTIONS = procedure_options(JAVA_SETTINGS)


def sql_arg(name, value):
    if isinstance(value, bool):
        return f"{name} => {str(value).lower()}"
    if isinstance(value, int):
        return f"{name} => {value}"
    return f"{name} => '{value}'"


def call(spark, procedure, path, **args):
    params = ", ".join([f"path => '{path}'"] + [sql_arg(k, v)
                                               for k, v in args.items()])
    return spark.sql(f"call {procedure}({params})").collect()


def java_write_client(spark, table, settings=None):
    """Hudi's Java write client on the table (what `HoodieCleaner` and the Spark writers run) with
    JAVA_SETTINGS and `settings`."""
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for key, value in {**JAVA_SETTINGS, **(settings or {})}.items():
        props.setProperty(key, value)
    config = jvm.org.apache.hudi.config.HoodieWriteConfig.newBuilder().withPath(table.uri).withProps(props).build()
    context = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(spark._jsc)
    return jvm.org.apache.hudi.client.SparkRDDWriteClient(context, config)


def check(spark, table, model):
    got = rows_of_spark(spark_read(spark, table))
    assert not diff("spark", data_only(got), "model", data_only(model))
    assert not diff("spark", got, "hudi-rs", rows_of_arrow(hudi_rs_read(table, "snapshot")))


def test_java_compaction_while_the_sink_writes(spark, tmp_path):
    """Java plans a compaction, the sink writes while it is pending (to the compaction's slice, as Hudi's
    writers do), Java executes it (carrying nothing), the sink writes again. No late events: a key re-created
    below its stored version reads by the merge-on-read model (the test after the next)."""
    files, model = generate(tmp_path, records=600, keys=120, per_file=30, gen_args=("--late-ratio", 0))
    config = table_config(tmp_path, table_type="MERGE_ON_READ", props=SINK_SERVICES_OFF)
    table = Table(tmp_path / "table", model, "MERGE_ON_READ")
    ingest(config, files[:8])
    call(spark, "run_compaction", table.uri, op="schedule", options=JAVA_OPTIONS)
    hoodie = table.path / ".hoodie"
    planned = sorted(f.name.split(".")[0] for f in hoodie.glob("*.compaction.requested"))
    assert len(planned) == 1, planned
    ingest(config, files[8:12])
    # The sink's logs went to the compaction's slice, and Spark shows them while the compaction is pending:
    # its snapshot just before the compaction completes equals the one just after.
    assert list(table.path.glob(f"city=*/.*_{planned[0]}.log.*")), "no log in the pending compaction's slice"
    before = data_only(rows_of_spark(spark_read(spark, table)))
    call(spark, "run_compaction", table.uri, op="run", timestamp=int(planned[0]), options=JAVA_OPTIONS)
    assert (hoodie / f"{planned[0]}.commit").exists(), sorted(f.name for f in hoodie.iterdir())
    after = data_only(rows_of_spark(spark_read(spark, table)))
    assert not diff("spark before the compaction", before, "spark after it", after)
    ingest(config, files[12:])
    check(spark, table, model)


def test_java_services_between_the_sinks_writes(spark, tmp_path):
    """Java compacts, cleans and archives between the sink's writes (no late events: see the next test)."""
    files, model = generate(tmp_path, records=600, keys=120, per_file=30, seed=11, gen_args=("--late-ratio", 0))
    config = table_config(tmp_path, table_type="MERGE_ON_READ", props=SINK_SERVICES_OFF)
    table = Table(tmp_path / "table", model, "MERGE_ON_READ")
    ingest(config, files[:10])
    call(spark, "run_compaction", table.uri, op="scheduleAndExecute", options=JAVA_OPTIONS)
    assert [t for t, a in table.timeline() if a == "commit"], table.timeline()
    ingest(config, files[10:15])
    call(spark, "run_compaction", table.uri, op="scheduleAndExecute", options=JAVA_OPTIONS)
    client = java_write_client(spark, table)
    try:
        client.clean()
        assert [t for t, a in table.timeline() if a == "clean"], table.timeline()
        before = len(table.timeline())
        client.archive()
        assert len(table.timeline()) < before, "Java archived nothing"
    finally:
        client.close()
    ingest(config, files[15:])
    check(spark, table, model)


# Java plans a compaction of every file group with a log (its default waits for five deltacommits).
COMPACT_EVERY_GROUP = procedure_options({**JAVA_SETTINGS, "hoodie.compact.inline.max.delta.commits": "1"})

# A workload whose keys are deleted (tombstones and `_hoodie_is_deleted` rows) and re-created by late events, with
# smaller ordering values than their stored versions, and the order the sink receives its files in: files already
# committed are delivered again (the sink skips them by offset). A Java compaction of every file group runs
# between two steps.
RECREATE_WORKLOAD = {"records": 720, "keys": 120, "per_file": 30, "seed": 8,
                     "gen_args": ("--late-ratio", 0.4, "--delete-ratio", 0.25, "--tombstone-ratio", 0.6)}


def recreate_steps(files):
    return [files[:6], [files[2], files[4], *files[6:10], files[3], files[7]],
            [files[8], *files[10:16], files[12], files[16]], files[17:]]


def compaction_groups(table, instant):
    """The (partition path, bucket) file groups the compaction `instant` planned (its Avro
    `HoodieCompactionPlan`)."""
    import fastavro

    with open(table.path / ".hoodie" / f"{instant}.compaction.requested", "rb") as f:
        plan = next(iter(fastavro.reader(f)))
    return {(op["partitionPath"], int(op["fileId"][:8])) for op in plan["operations"]}


def ingest_modelled(config, table, model, files, history=None):
    """Ingests `files` (one instant per file) and applies them to `model`, each batch with the commit time of its
    deltacommit, and each compaction the sink ran inline to the groups it planned, in timeline order. With
    `history`, the model's snapshot after each instant, by instant."""
    before = set(table.timeline()) if table.path.exists() else set()
    ingest(config, files)
    new = sorted((t, a) for t, a in table.timeline() if (t, a) not in before and a in ("deltacommit", "commit"))
    pending = list(new)

    def completed(instant):
        if history is not None:
            history[instant] = model.snapshot()

    def compactions():
        while pending and pending[0][1] == "commit":
            instant = pending.pop(0)[0]
            model.compact(compaction_groups(table, instant))
            completed(instant)

    for f in files:
        taken = []

        def instant():
            compactions()
            assert pending, f"the sink committed {new} for {len(files)} files, fewer batches than the model"
            taken.append(pending.pop(0)[0])
            return taken[-1]

        if model.ingest(f, instant):
            completed(taken[-1])
    compactions()
    assert not pending, f"the sink committed {new}, more than the model: {pending}"


def check_model(spark, table, model, hudi_rs=True):
    """Spark's snapshot equals the model's and (with `hudi_rs`) hudi-rs's, full rows (commit times included);
    returns it."""
    got = rows_of_spark(spark_read(spark, table))
    assert not diff("spark", got, "model", sorted(model.snapshot(), key=row_key))
    if hudi_rs:
        assert not diff("spark", got, "hudi-rs", rows_of_arrow(hudi_rs_read(table, "snapshot")))
    return got


def compact_with_java(spark, table, model, label, config=None, while_pending=()):
    """A Java compaction of every file group with logs, and the model's. Spark's snapshot just before it
    completes equals the model's, and so does the one just after.

    Without `while_pending`, nothing is written between the plan and the execution, and the two snapshots are
    the same. With `while_pending`, the sink ingests those files in between (into the slices the compaction will
    make): Spark merges each planned slice with those logs as one slice until the compaction completes, and with
    its merged base file after, so a key deleted on one side of the plan and re-created below its base version
    on the other shows differently before and after (docs/compatibility.md, limit 6); hudi-rs shows those logs
    only after (limit 5)."""
    commits = {t for t, a in table.timeline() if a == "commit"}
    if while_pending:
        call(spark, "run_compaction", table.uri, op="schedule", options=COMPACT_EVERY_GROUP)
        planned = sorted(f.name.split(".")[0] for f in (table.path / ".hoodie").glob("*.compaction.requested"))
        planned = [t for t in planned if t not in commits]
        assert len(planned) == 1, f"compaction {label}: {table.timeline()}"
        model.plan_compaction()
        ingest_modelled(config, table, model, while_pending)
        check_model(spark, table, model, hudi_rs=False)
        call(spark, "run_compaction", table.uri, op="run", timestamp=int(planned[0]), options=COMPACT_EVERY_GROUP)
    else:
        before = check_model(spark, table, model)
        call(spark, "run_compaction", table.uri, op="scheduleAndExecute", options=COMPACT_EVERY_GROUP)
    model.compact()
    new = [t for t, a in table.timeline() if a == "commit" and t not in commits]
    assert len(new) == 1, f"compaction {label}: {table.timeline()}"
    after = check_model(spark, table, model)
    if not while_pending:
        assert not diff(f"spark before compaction {label}", before, "spark after it", after)


def test_a_key_recreated_below_its_base_version_after_a_tombstone(spark, tmp_path):
    """Keys deleted and re-created below their stored versions, files delivered again, and Java compactions
    between the sink's writes (one of them pending while the sink writes, two in a row) on a merge-on-read
    table: Spark's snapshot equals hudi-rs's and the merge-on-read model (`table_model.py`, the rule of
    docs/semantics.md, "Merge-on-read tables"), full rows, before and after each compaction; a compaction with
    nothing written while it is pending leaves Spark's snapshot as it was; Spark's incremental query over the
    compactions returns every record written in its range."""
    files, generator_model = generate(tmp_path, **RECREATE_WORKLOAD)
    config = table_config(tmp_path, table_type="MERGE_ON_READ", props=SINK_SERVICES_OFF)
    table = Table(tmp_path / "table", generator_model, "MERGE_ON_READ")
    model = TableModel("MERGE_ON_READ", num_buckets=4)
    steps = recreate_steps(files)
    # Keys whose base version came back, counted before each compaction and at the end.
    resurrected = []
    ingest_modelled(config, table, model, steps[0])
    begin = table.data_instants()[-1]
    resurrected += model.resurrected()
    compact_with_java(spark, table, model, "1")
    ingest_modelled(config, table, model, steps[1])
    resurrected += model.resurrected()
    compact_with_java(spark, table, model, "2", config=config, while_pending=steps[2])
    resurrected += model.resurrected()
    compact_with_java(spark, table, model, "3")
    ingest_modelled(config, table, model, steps[3])
    resurrected += model.resurrected()
    got = check_model(spark, table, model)
    # The workload exercises the rule: base versions came back, and the table differs from copy-on-write's.
    live = {r["uuid"]: r for r in data_only(got)}
    cow = {r["uuid"]: r for r in data_only(generator_model)}
    differing = sorted(k for k in live.keys() | cow.keys() if live.get(k) != cow.get(k))
    assert len(resurrected) >= 3 and len(differing) >= 3, (resurrected, differing)
    # Every record written after `begin` that the snapshot shows comes back from the incremental query over the
    # three compactions.
    end = table.data_instants()[-1]
    returned = {(r["_hoodie_record_key"], r["_hoodie_commit_time"])
                for r in rows_of_spark(spark_incremental(spark, table, begin, end))}
    written = [r for r in got if r["_hoodie_commit_time"] > begin]
    missing = [r for r in written if (r["_hoodie_record_key"], r["_hoodie_commit_time"]) not in returned]
    assert written and not missing, (
        f"{len(missing)} of {len(written)} records in ({begin}, {end}] missing: {missing[:4]}")


def test_the_sinks_compaction_of_keys_recreated_below_their_base_versions(spark, tmp_path):
    """The same workload with the sink's inline compaction (of a file group once four deltacommits appended to
    it) instead of Java's: Spark's snapshot equals hudi-rs's and the model's, which compacts the file groups each
    compaction planned, after every step; Spark's time travel just before each compaction and at it equal the
    model's snapshot then; Spark's incremental query over the compactions returns every record written in its
    range."""
    files, generator_model = generate(tmp_path, **RECREATE_WORKLOAD)
    props = {**SINK_SERVICES_OFF, "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "4"}
    config = table_config(tmp_path, table_type="MERGE_ON_READ", props=props)
    table = Table(tmp_path / "table", generator_model, "MERGE_ON_READ")
    model = TableModel("MERGE_ON_READ", num_buckets=4)
    history = {}
    for step in recreate_steps(files):
        ingest_modelled(config, table, model, step, history)
        got = check_model(spark, table, model)
    live = {r["uuid"]: r for r in data_only(got)}
    cow = {r["uuid"]: r for r in data_only(generator_model)}
    differing = sorted(k for k in live.keys() | cow.keys() if live.get(k) != cow.get(k))
    assert len(differing) >= 3, differing
    instants = table.data_instants()
    compactions = [t for t, a in table.timeline() if a == "commit"]
    assert len(compactions) >= 3, table.timeline()
    for instant in compactions:
        previous = instants[instants.index(instant) - 1]
        before = rows_of_spark(spark_read(spark, table, **{"as.of.instant": previous}))
        assert not diff(f"spark as of {previous}", before, "model", sorted(history[previous], key=row_key))
        after = rows_of_spark(spark_read(spark, table, **{"as.of.instant": instant}))
        assert not diff(f"spark before compaction {instant}", before, "spark after it", after)
    begin, end = instants[0], instants[-1]
    returned = {(r["_hoodie_record_key"], r["_hoodie_commit_time"])
                for r in rows_of_spark(spark_incremental(spark, table, begin, end))}
    written = [r for r in got if r["_hoodie_commit_time"] > begin]
    missing = [r for r in written if (r["_hoodie_record_key"], r["_hoodie_commit_time"]) not in returned]
    assert written and not missing, (
        f"{len(missing)} of {len(written)} records in ({begin}, {end}] missing: {missing[:4]}")


def test_the_table_model_on_copy_on_write_equals_the_generators_model(tmp_path):
    """The model of `table_model.py` on copy-on-write, replaying the same deliveries, holds the generator's rows:
    the parts it shares with merge-on-read (redeliveries, folding a batch) cannot drift from them unseen."""
    for seed in (RECREATE_WORKLOAD["seed"], 3, 11):
        tmp = tmp_path / f"seed-{seed}"
        files, generator_model = generate(tmp, **{**RECREATE_WORKLOAD, "seed": seed})
        model = TableModel("COPY_ON_WRITE", num_buckets=4)
        instants = iter(range(1, len(files) * 2))
        for step in recreate_steps(files):
            for f in step:
                model.ingest(f, lambda: f"{next(instants):017d}")
        assert not diff("model", data_only(model.snapshot()), "generator", data_only(generator_model)), seed


def spark_rows_for(spark, start, count, ts, cities, deleted=False):
    """`count` trips keyed `spark-<n>` from `start`, in the sink's `trips` schema."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

    schema = StructType([
        StructField("uuid", StringType(), False),
        StructField("ts", LongType(), False),
        StructField("rider", StringType(), True),
        StructField("fare", DoubleType(), True),
        StructField("city", StringType(), False),
        StructField("_hoodie_is_deleted", BooleanType(), True),
    ])
    rows = [(f"spark-{n:05d}", ts + n, f"spark-rider-{n}", float(n), cities[n % len(cities)], deleted)
            for n in range(start, start + count)]
    return spark.createDataFrame(rows, schema)


def spark_upsert(df, table, table_type, extra=None):
    """A Spark datasource upsert with the settings docs/compatibility.md lists for sharing a sink table."""
    options = dict(JAVA_SETTINGS)
    options.update({
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        **(extra or {}),
    })
    df.write.format("hudi").options(**options).mode("append").save(table.uri)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_writer_alternates_with_the_sink(spark, tmp_path, table_type):
    """A Spark upsert (bucket index, the same key generator and payload) into a table the sink created,
    alternating with the sink's ingests; Spark's keys share the sink's buckets and file groups."""
    # No late events: a key re-created below its base version reads by the merge-on-read model (tested above).
    files, model = generate(tmp_path, records=600, keys=120, per_file=30, seed=13, gen_args=("--late-ratio", 0))
    config = table_config(tmp_path, table_type=table_type, props=SINK_SERVICES_OFF)
    table = Table(tmp_path / "table", model, table_type)
    cities = sorted({r["city"] for r in model})
    ingest(config, files[:7])
    spark_upsert(spark_rows_for(spark, 0, 40, 2_000_000_000_000, cities), table, table_type)
    ingest(config, files[7:14])
    # Spark updates half of its keys and deletes a quarter of them.
    spark_upsert(spark_rows_for(spark, 0, 20, 3_000_000_000_000, cities), table, table_type)
    spark_upsert(spark_rows_for(spark, 30, 10, 4_000_000_000_000, cities, deleted=True), table, table_type)
    ingest(config, files[14:])
    spark_model = [r.asDict() for r in spark_rows_for(spark, 0, 20, 3_000_000_000_000, cities).collect()]
    spark_model += [r.asDict() for r in spark_rows_for(spark, 20, 10, 2_000_000_000_000, cities).collect()]
    check(spark, table, model + spark_model)
    # One file group per (partition, bucket): Spark hashed its keys to the sink's buckets and appended to (or
    # rewrote) the sink's file groups instead of creating others.
    groups = {}
    for f in table.path.glob("city=*/*"):
        if f.name.startswith(".hoodie_partition_metadata") or not f.is_file():
            continue
        file_id = f.name.lstrip(".").split("_")[0]
        groups.setdefault((f.parent.name, file_id[:8]), set()).add(file_id)
    doubled = {k: v for k, v in groups.items() if len(v) > 1}
    assert not doubled, f"buckets with more than one file group: {doubled}"


LOCK_TABLE = "hudi-locks"

# Spark's attempts beat every second; Hudi 0.15 takes one whose heartbeat file is older than interval x misses for
# failed (`HoodieHeartbeatClient`). That expiry is several of the sink's heartbeat intervals, so that Spark never
# takes a sink write that still beats for failed.
SPARK_HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "1000", "hoodie.client.heartbeat.tolerable.misses": "5"}
SPARK_EXPIRY_S = 5
# The sink reads Spark's (empty) heartbeat files by their modification time: its tolerance exceeds Spark's expiry
# with room to spare, so that Spark rolls back its refused attempts itself, before the sink would.
SINK_HEARTBEAT = {"hudi.sink.heartbeat.interval.ms": "1000", "hudi.sink.heartbeat.tolerable.misses": "30"}


def instant_time_taken(causes):
    """Whether a Spark write failed at its start because its instant time was taken: Hudi 0.15 picks the time
    from its clock without the lock, and the sink had created `<t>.<action>.requested` in the same millisecond
    (docs/compatibility.md, limit 9)."""
    return "FileAlreadyExistsException" in causes and re.search(r"/\.hoodie/\d{17}\.\w+\.requested", causes)


def spark_upsert_retrying(spark, df, table, table_type, options, attempts=20):
    """A Spark upsert retried as docs/compatibility.md (limit 9) prescribes: after a refusal for a conflict, wait
    past Spark's heartbeat expiry, roll back the failed writes (the refused attempt; Hudi's LAZY policy does it
    only in a clean), then write again; after a start refused for a taken instant time (nothing written), write
    again at once. Returns the number of refusals for a conflict."""
    refusals = 0
    for _ in range(attempts):
        try:
            spark_upsert(df, table, table_type, options)
            return refusals
        except Exception as e:
            causes = java_causes(e)
            if instant_time_taken(causes):
                continue
            if "HoodieWriteConflictException" not in causes:
                raise RuntimeError(causes) from e
        refusals += 1
        # The refused attempt's heartbeat stopped with its write client; once it expired, the attempt is a
        # failed write that `rollbackFailedWrites` takes (and no write that still beats is).
        time.sleep(SPARK_EXPIRY_S + 1)
        client = java_write_client(spark, table, options)
        try:
            client.rollbackFailedWrites()
        finally:
            client.close()
    raise RuntimeError(f"refused {attempts} times")


def spark_rollbacks(table):
    """The instants Hudi's completed rollbacks (Avro `HoodieRollbackMetadata`) name."""
    import fastavro

    named = set()
    for f in (table.path / ".hoodie").glob("*.rollback"):
        with open(f, "rb") as fh:
            named.update(next(iter(fastavro.reader(fh)))["commitsRollback"])
    return named


def java_causes(error):
    """A Py4J error as its Java exception's cause chain (one line each)."""
    cause = getattr(error, "java_exception", None)
    lines = []
    while cause is not None and len(lines) < 8:
        lines.append(cause.toString())
        cause = cause.getCause()
    return "\n".join(lines) or repr(error)


def create_lock_table(endpoint):
    """The lock table as Hudi's provider creates it (hash key `key`, a string), through boto3 in the readers'
    venv; nothing when it exists."""
    code = f"""
import boto3
db = boto3.client("dynamodb", endpoint_url="{endpoint}", region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="testtesttest")
if "{LOCK_TABLE}" not in db.list_tables()["TableNames"]:
    db.create_table(TableName="{LOCK_TABLE}", BillingMode="PAY_PER_REQUEST",
                    KeySchema=[{{"AttributeName": "key", "KeyType": "HASH"}}],
                    AttributeDefinitions=[{{"AttributeName": "key", "AttributeType": "S"}}])
"""
    subprocess.run([READERS_PYTHON, "-c", code], check=True)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_writer_at_the_same_time_as_the_sink(spark, tmp_path, table_type, moto_endpoint, monkeypatch):
    """Spark upserts (optimistic concurrency, Hudi's DynamoDBBasedLockProvider) while the sink ingests under
    the same DynamoDB lock item, retrying a refused write as limit 9 prescribes: no row lost or doubled, every
    instant the sink committed stays, Spark rolls back exactly its refused attempts and the sink none of
    Spark's."""
    jvm = spark._jvm
    for key, value in (("aws.accessKeyId", "test"), ("aws.secretAccessKey", "testtesttest"),
                       ("aws.region", "us-east-1")):
        jvm.java.lang.System.setProperty(key, value)
    lock = {
        "hoodie.write.lock.provider": "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider",
        "hoodie.write.lock.dynamodb.table": LOCK_TABLE,
        "hoodie.write.lock.dynamodb.partition_key": f"trips-{table_type}",
        "hoodie.write.lock.dynamodb.region": "us-east-1",
        "hoodie.write.lock.dynamodb.endpoint_url": moto_endpoint,
    }
    files, model = generate(tmp_path, records=600, keys=120, per_file=30, seed=17, gen_args=("--late-ratio", 0))
    config = table_config(tmp_path, table_type=table_type, props={**SINK_SERVICES_OFF, **lock, **SINK_HEARTBEAT})
    table = Table(tmp_path / "table", model, table_type)
    cities = sorted({r["city"] for r in model})
    for key, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "testtesttest"),
                       ("AWS_REGION", "us-east-1"), ("AWS_EC2_METADATA_DISABLED", "true")):
        monkeypatch.setenv(key, value)
    env = dict(os.environ)
    create_lock_table(moto_endpoint)
    # The table exists before the two writers race.
    ingest(config, files[:2])
    spark_options = {**lock, "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
                     # Conflicts by bucket, not by file id: two writers that create a file group for the same
                     # new bucket conflict.
                     "hoodie.write.lock.conflict.resolution.strategy":
                         "org.apache.hudi.client.transaction.BucketIndexConcurrentFileWritesConflictResolutionStrategy",
                     "hoodie.write.lock.dynamodb.billing_mode": "PAY_PER_REQUEST", **SPARK_HEARTBEAT}
    first = spark_rows_for(spark, 0, 10, 2_000_000_000_000, cities)
    rounds = [spark_rows_for(spark, 10 * (n + 1), 10, 2_000_000_000_000 + n, cities) for n in range(4)]
    spark_upsert(first, table, table_type, spark_options)
    sink = subprocess.Popen([SINK, "ingest", "--json", "--config", str(config), "--commit-interval-ms", "0",
                             *map(str, files[2:])], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors = []
    refusals = []

    def spark_writes():
        # A Spark job retries a write that optimistic concurrency refused (a sink commit took the same file
        # group first), as HoodieStreamer and a Structured Streaming query do.
        for df in rounds:
            try:
                refusals.append(spark_upsert_retrying(spark, df, table, table_type, spark_options))
            except Exception as e:  # reported below with the sink's outcome
                errors.append(str(e))
                return

    writer = threading.Thread(target=spark_writes)
    writer.start()
    out, err = sink.communicate(timeout=600)
    writer.join(timeout=600)
    assert sink.returncode == 0, f"the sink failed:\n{out}\n{err}"
    assert not errors, f"Spark failed: {errors}"
    # Every instant the sink committed is still completed (nobody rolled one back), and the rows say the same
    # of Spark's: every write of both sides is there once.
    completed = {t for t, a in table.timeline() if a in ("commit", "deltacommit")}
    reports = [json.loads(line).get("report") or {} for line in out.splitlines() if line.startswith("{")]
    committed = [r["instant"] for r in reports if r.get("instant")]
    assert len(committed) >= len(files[2:]) // 2, f"the sink committed only {committed}"
    assert set(committed) <= completed, f"sink instants gone: {set(committed) - completed}"
    # Spark rolled back its refused attempts, each once and nothing else; the sink rolled back none of Spark's
    # attempts (its retired times, `.hoodie/.aux/hudi-sink/rolled-back/`, are its own).
    rolled_back = spark_rollbacks(table)
    assert len(rolled_back) == sum(refusals), f"Spark rolled back {sorted(rolled_back)} after {refusals} refusals"
    assert not rolled_back & completed, f"Spark rolled back completed instants {sorted(rolled_back & completed)}"
    spark_commits = {t for t in completed if "hudi.sink.checkpoint" not in json.loads(
        next((table.path / ".hoodie").glob(f"{t}.*commit")).read_text()).get("extraMetadata", {})}
    retired = {f.name for f in (table.path / ".hoodie" / ".aux" / "hudi-sink" / "rolled-back").glob("*")}
    assert not retired & (spark_commits | rolled_back), (
        f"the sink rolled back Spark's attempts {sorted(retired & (spark_commits | rolled_back))}")
    spark_model = [r.asDict() for df in [first, *rounds] for r in df.collect()]
    check(spark, table, model + spark_model)


def test_java_clustering_of_a_sink_insert_table(spark, tmp_path):
    """Hudi's Java clustering (`run_clustering`, the executor `HoodieClusteringJob` runs) rewrites the small
    files of an insert table the sink writes; the sink then appends again and every row is read once."""
    files, model = generate(tmp_path, records=600, keys=None, per_file=30, seed=19,
                            gen_args=("--update-ratio", 0, "--delete-ratio", 0, "--late-ratio", 0))
    props = {**SINK_SERVICES_OFF, "hoodie.datasource.write.operation": "insert", "hoodie.index.type": None,
             "hoodie.bucket.index.num.buckets": None}
    config = table_config(tmp_path, props=props)
    table = Table(tmp_path / "table", model, "COPY_ON_WRITE")
    ingest(config, files[:12])
    # No bucket index on an insert table.
    options = procedure_options({**JAVA_BASE, "hoodie.clustering.plan.strategy.small.file.limit": "104857600"})
    call(spark, "run_clustering", table.uri, op="scheduleAndExecute", options=options)
    assert [t for t, a in table.timeline() if a == "replacecommit"], table.timeline()
    ingest(config, files[12:])
    check(spark, table, model)
