"""Spark 3.5 with Delta Lake's own reader (`delta-spark`, in the suite's one Spark session) reads the Delta log the
sink mirrors (`hudi.sink.delta.mirror=true`, docs/delta.md) row for row as Hudi's Spark reader and hudi-rs read the
same table.

Each table takes ten or more instants of generated upserts and deletes with cleaning and archival running inline:
Hive-style, URL-encoded (with null partitions) and non-partitioned copy-on-write tables, a clustered insert table,
a schema evolution, and a merge-on-read table whose Delta view is its read-optimized view. The Delta table's latest
version must equal Hudi Spark's snapshot (copy-on-write) or read-optimized read (merge-on-read), every column
included, and hudi-rs's; each Delta version whose Hudi instant the cleaner retains must equal Hudi's time travel
(`as.of.instant`) at that instant.

Last, the Delta view as the catalog sync registers it in Glue (`<table>_delta`, a native Delta table): a table copied
into moto's S3 and synced by `hudi-sink sync-catalog` into moto's Glue is read by Trino 476's Delta Lake connector
(test_trino.py's server, with a `delta_lake` catalog) row for row as delta-spark reads it.
"""

import base64
import json
import re

import pytest

from conftest import (DELTA_VERSION, NONPARTITIONED, READERS_PYTHON, ROOT, SMALL_RETENTION, TIMESTAMP, Table,
                      as_spark_shows, aws_env, diff, generate, hudi_rs_read, ingest, row_key, rows_of_arrow,
                      rows_of_spark, run, run_sink, spark_read, sync_catalog, table_config)

COW = "COPY_ON_WRITE"
MOR = "MERGE_ON_READ"

MIRROR = {"hudi.sink.delta.mirror": "true", **SMALL_RETENTION}
# `rider` is null in some records (`__HIVE_DEFAULT_PARTITION__`, a Delta null) and URL-encoded in the path.
URLENCODED = {"hoodie.datasource.write.partitionpath.field": "rider",
              "hoodie.datasource.write.partitionpath.urlencode": "true"}
# Append-only inserts that inline clustering rewrites every three commits.
INSERTS = {"hoodie.datasource.write.operation": "insert", "hoodie.clustering.inline.max.commits": "3",
           "hudi.sink.clustering.fan.out": "2", "hoodie.index.type": None, "hoodie.bucket.index.num.buckets": None}
INSERT_EVENTS = ("--update-ratio", 0, "--delete-ratio", 0, "--late-ratio", 0)
UPSERT_EVENTS = ("--update-ratio", 0.4, "--delete-ratio", 0.15)

LAYOUTS = {
    "cow_hive": (COW, {}),
    "cow_urlencoded_nulls": (COW, URLENCODED),
    "cow_nonpartitioned": (COW, NONPARTITIONED),
    "cow_insert_clustered": (COW, INSERTS),
    # An unpartitioned Delta table (the `yyyy/MM/dd` path is not a value of `ts`): Delta reads the stored `ts`.
    "cow_timestamp_keyed": (COW, TIMESTAMP),
    "mor_read_optimized": (MOR, {}),
}

pytestmark = pytest.mark.skipif(not DELTA_VERSION, reason="no delta-spark jar in the session's jars (jvm/pom.xml)")


def write_mirrored(tmp, table_type, props, *, records=480, per_file=40, seed=31, gen_args=UPSERT_EVENTS):
    """A table ingested one instant per file with the mirror on."""
    keys = None if props is INSERTS else 100
    files, model = generate(tmp, records=records, keys=keys, per_file=per_file, seed=seed,
                            gen_args=INSERT_EVENTS if props is INSERTS else gen_args)
    config = table_config(tmp, table_type=table_type, props={**MIRROR, **props})
    ingest(config, files)
    if table_type == MOR:
        # An inline compaction completes after its deltacommit's mirror step, so the Delta view lags by it
        # (docs/delta.md) until the next commit or the scheduled run, which mirrors before it cleans.
        run_sink("services", "--config", config)
    table = Table(tmp / "table", model, table_type)
    table.timestamp_keyed = props is TIMESTAMP
    return table


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def table(request, tmp_path_factory):
    table_type, props = LAYOUTS[request.param]
    return write_mirrored(tmp_path_factory.mktemp(request.param), table_type, props)


def delta_versions(table):
    """[(version, Hudi instant)] of the Delta log's commits, from each version's `commitInfo.hudiInstant`."""
    out = []
    for f in sorted((table.path / "_delta_log").glob("*.json")):
        if not f.stem.isdigit():
            continue
        infos = [json.loads(line)["commitInfo"] for line in f.read_text().splitlines()
                 if line.strip() and "commitInfo" in json.loads(line)]
        assert len(infos) == 1, f
        out.append((int(f.stem), infos[0]["hudiInstant"]))
    return out


def delta_read(spark, table, version=None):
    """Delta Lake's Spark reader on the table's path, at `version` (`versionAsOf`) or the latest."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(table.uri)


def hudi_view(spark, table, **options):
    """Hudi Spark's read the Delta view mirrors: snapshot (copy-on-write) or read-optimized (merge-on-read)."""
    if table.table_type == MOR:
        options["hoodie.datasource.query.type"] = "read_optimized"
    return spark_read(spark, table, **options)


def test_the_workload_runs_every_service(table):
    """The timeline holds what the other tests claim to cover: cleans, archival, and clustering or compaction;
    and the mirror has one version per data instant the active timeline holds, up to its latest."""
    actions = {a for _, a in table.timeline()}
    assert "clean" in actions, actions
    versions = delta_versions(table)
    assert len(table.data_instants()) < len(versions), "archival removed no instant"
    if table.path.parent.name.startswith("cow_insert"):
        assert "replacecommit" in actions, actions
    if table.table_type == MOR:
        assert "commit" in actions, actions
    active = table.data_instants()
    mirrored = [i for _, i in versions if i >= active[0]]
    assert mirrored == active, (mirrored, active)


def test_latest_version_equals_hudi_spark_and_hudi_rs(spark, table):
    delta = rows_of_spark(delta_read(spark, table), drop=())
    hudi = rows_of_spark(hudi_view(spark, table), drop=())
    assert delta, "the Delta table reads empty"
    # Hudi's Spark reader shows a timestamp key's partition path value (`yyyy/MM/dd`) for `ts`, Delta the value.
    assert not diff("delta-spark", as_spark_shows(table, delta), "hudi spark", hudi)
    mode = "read_optimized" if table.table_type == MOR else "snapshot"
    assert not diff("delta-spark", rows_of_spark(delta_read(spark, table)), "hudi-rs",
                    rows_of_arrow(hudi_rs_read(table, mode)))
    if table.timestamp_keyed:
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{table.uri}`").collect()[0]
        assert list(detail["partitionColumns"]) == [], detail
        files = delta_read(spark, table).inputFiles()
        assert files and all(re.search(r"/(ts=)?\d{4}/\d{2}/\d{2}/[^/]+\.parquet$", f) for f in files), files
    if table.path.parent.name.startswith("cow_urlencoded"):
        riders = {r["rider"] for r in delta}
        assert None in riders and len(riders) > 2, riders


def time_travel_failures(spark, table):
    """Each Delta version whose Hudi instant the cleaner retains against Hudi's time travel at that instant."""
    floor = table.earliest_retained() or ""
    versions = [(v, i) for v, i in delta_versions(table) if i >= floor]
    assert len(versions) >= 3, (versions, floor)
    failures = []
    for version, instant in versions:
        delta = as_spark_shows(table, rows_of_spark(delta_read(spark, table, version), drop=()))
        hudi = rows_of_spark(spark_read(spark, table, **{"as.of.instant": instant}), drop=())
        d = diff(f"delta-spark version {version}", delta, f"hudi spark as of {instant}", hudi)
        if d:
            failures.append(d)
    return failures


def test_time_travel_equals_hudi_as_of_each_retained_version(spark, table):
    if table.table_type == MOR:
        pytest.skip("Hudi's time travel reads a merge-on-read snapshot, the Delta view its read-optimized view")
    failures = time_travel_failures(spark, table)
    assert not failures, "\n".join(failures)


def with_tip(files, out):
    """Copies event files into `out` with a `tip` (a new nullable double) in every record's value."""
    out.mkdir()
    copies = []
    for f in files:
        event = json.loads(f.read_text())
        for records in event["records"].values():
            for record in records:
                if record.get("value") is None:
                    continue
                value = json.loads(base64.b64decode(record["value"]))
                value["tip"] = (value["ts"] % 1000) / 8.0
                record["value"] = base64.b64encode(json.dumps(value).encode()).decode()
        copy = out / f.name
        copy.write_text(json.dumps(event))
        copies.append(copy)
    return copies


def test_schema_evolution(spark, tmp_path):
    """A new nullable column halfway: the latest version reads it with its values as Hudi does, and every
    retained version reads as Hudi's time travel at its instant."""
    files, model = generate(tmp_path, records=480, keys=100, per_file=40, seed=37, gen_args=UPSERT_EVENTS)
    schema = json.loads((ROOT / "events" / "schema" / "trips.avsc").read_text())
    schema["fields"].insert(-1, {"name": "tip", "type": ["null", "double"], "default": None})
    evolved = tmp_path / "trips_tip.avsc"
    evolved.write_text(json.dumps(schema))
    half = len(files) // 2
    ingest(table_config(tmp_path, props=MIRROR), files[:half])
    ingest(table_config(tmp_path, props={**MIRROR, "hoodie.streamer.schemaprovider.source.schema.file": evolved}),
           with_tip(files[half:], tmp_path / "with_tip"))
    table = Table(tmp_path / "table", model, COW)
    assert "clean" in {a for _, a in table.timeline()}
    delta = rows_of_spark(delta_read(spark, table), drop=())
    assert any(r.get("tip") is not None for r in delta), "no tip values"
    assert not diff("delta-spark", delta, "hudi spark", rows_of_spark(hudi_view(spark, table), drop=()))
    failures = time_travel_failures(spark, table)
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def trino_delta(tmp_path_factory, moto_endpoint):
    """One Trino server with a `delta` catalog (the Delta Lake connector) on moto's Glue and S3."""
    from test_trino import Trino

    server = Trino(tmp_path_factory.mktemp("trino_delta"), moto_endpoint, {"delta": "delta_lake"})
    yield server
    server.stop()


def test_trino_reads_the_delta_view_registered_in_glue(spark, tmp_path_factory, moto_endpoint, trino_delta):
    """Glue holds `mirrored_delta` beside `mirrored` (the sync's Delta view: `spark.sql.sources.provider=delta`, the
    base path), and Trino's Delta Lake connector, which knows the table only from Glue, reads through it the rows
    delta-spark and Hudi's Spark reader read (twelve versions: a checkpoint written by the mirror included)."""
    from test_trino import trino_value

    table = write_mirrored(tmp_path_factory.mktemp("trino_mirrored"), COW, {})
    assert list((table.path / "_delta_log").glob("*.checkpoint.parquet")), "no checkpoint"
    env = aws_env(moto_endpoint)
    run(READERS_PYTHON, ROOT / "tests" / "python" / "s3_put_tree.py", moto_endpoint, table.path, "lake", "mirrored",
        env=env)
    sync_catalog(table, env, "delta_lake_db", "mirrored", base_path="s3://lake/mirrored")
    rows = sorted(([{k: trino_value(v) for k, v in r.items()}
                    for r in trino_delta.query('SELECT * FROM delta.delta_lake_db."mirrored_delta"')]), key=row_key)
    assert rows, "Trino read no rows"
    want = rows_of_spark(delta_read(spark, table), drop=())
    assert not diff("trino delta_lake", rows, "delta-spark", want)
    assert not diff("trino delta_lake", rows, "hudi spark", rows_of_spark(hudi_view(spark, table), drop=()))
