"""Spark (Hudi 0.15.0, and again Hudi 1.0.2 in a second run) reads every layout the sink writes, row for row, with
every query type.

Each table takes 20 instants of generated upserts, `_hoodie_is_deleted` deletes, Kafka tombstones and late
events, with cleaning, archival and (copy-on-write) clustering or (merge-on-read) compaction running inline.
Spark's snapshot must equal the generator's model and hudi-rs's snapshot; read-optimized, time travel as of
every retained instant and incremental queries must equal hudi-rs and an oracle built from Spark's own time
travel (the rows as of the end whose commit time is after the start).
"""

import json

import pytest

from conftest import (HUDI_VERSION, NONPARTITIONED, SMALL_RETENTION, TIMESTAMP, as_spark_shows, data_only, diff,
                      hudi_rs_read, incremental_oracle, rows_of_arrow, rows_of_spark, spark_incremental, spark_read,
                      write_table)

COW = "COPY_ON_WRITE"
MOR = "MERGE_ON_READ"

# Small retention so that every table is cleaned and archived during its 20 instants.
SERVICES = SMALL_RETENTION
URLENCODED = {
    "hoodie.datasource.write.hive_style_partitioning": "false",
    "hoodie.datasource.write.partitionpath.urlencode": "true",
}
COMPLEX = {
    "hoodie.datasource.write.recordkey.field": "uuid,city",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
}
# HoodieStreamer's Kafka metadata columns (offset, partition, timestamp, key) on every row.
KAFKA_COLUMNS = {"hoodie.streamer.source.kafka.append.offsets": "true"}

# Append-only inserts: small files that inline clustering rewrites (fan-out 2: a few commits' files suffice),
# their row groups copied as encoded (no minimum: the test's files are small).
INSERTS = {"hoodie.datasource.write.operation": "insert", "hoodie.clustering.inline.max.commits": "3",
           "hudi.sink.clustering.fan.out": "2", "hudi.sink.clustering.copy.min.row.group.bytes": "0",
           "hoodie.index.type": None, "hoodie.bucket.index.num.buckets": None}
INSERT_EVENTS = ("--update-ratio", 0, "--delete-ratio", 0, "--late-ratio", 0)

LAYOUTS = {
    "cow_hive": (COW, "trips", {}),
    "cow_insert_clustered": (COW, "trips", INSERTS),
    "cow_urlencoded": (COW, "trips", URLENCODED),
    "cow_nonpartitioned": (COW, "trips", NONPARTITIONED),
    "cow_complex_key": (COW, "trips", COMPLEX),
    "cow_timestamp_key": (COW, "trips", TIMESTAMP),
    "cow_every_type": (COW, "bench", {}),
    "mor_hive": (MOR, "trips", {}),
    "mor_nonpartitioned": (MOR, "trips", NONPARTITIONED),
    "mor_complex_key": (MOR, "trips", COMPLEX),
    "mor_every_type": (MOR, "bench", {}),
    "mor_kafka_columns": (MOR, "trips", KAFKA_COLUMNS),
}


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def table(request, tmp_path_factory):
    table_type, schema, props = LAYOUTS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    inserts = props is INSERTS
    gen_args = INSERT_EVENTS if inserts else ()
    if props is COMPLEX:
        # A tombstone's Kafka key is the record key; a complex key needs `field:value,...` keys, which the
        # generator does not write.
        gen_args = ("--tombstone-ratio", 0)
    table = write_table(tmp, table_type=table_type, schema=schema, props={**SERVICES, **props},
                        keys=None if inserts else 150, gen_args=gen_args)
    table.timestamp_keyed = props is TIMESTAMP
    return table


def spark_rows_of(table, df):
    """Spark's rows as `as_spark_shows` puts them: Hudi 1.x returns a timestamp key's stored value where Hudi
    0.15 returns its partition path value (docs/compatibility.md, limit 10), so both are compared in the
    latter form."""
    return as_spark_shows(table, rows_of_spark(df))


def test_the_workload_runs_every_service(table):
    """The table's timeline holds what the other tests claim to cover: cleans, archival, and clustering
    (copy-on-write) or compaction (merge-on-read)."""
    actions = {a for _, a in table.timeline()}
    assert "clean" in actions, actions
    # 20 ingest instants were made; archival keeps at most `hoodie.keep.max.commits` of them. Not in the wide
    # merge-on-read table: its 16 buckets x regions leave file groups whose first log is still uncompacted,
    # and archival never passes a deltacommit whose logs no compaction has merged (Hudi's rule).
    if table.path.parent.name.rstrip("0123456789") != "mor_every_type":
        assert len(table.data_instants()) < 20, "archival removed no instant"
    if "insert" in table.path.parent.name:
        assert "replacecommit" in actions, actions
        # Clustering copied row groups as encoded: some base file holds more than one (an ingest's file has one).
        import pyarrow.parquet as pq

        groups = [pq.ParquetFile(f).metadata.num_row_groups for f in table.path.rglob("*.parquet")]
        assert max(groups) > 1, groups
    elif table.table_type == MOR:
        assert "commit" in actions, actions


def test_snapshot_equals_the_model_and_hudi_rs(spark, table):
    spark_rows = spark_rows_of(table, spark_read(spark, table))
    rs_rows = as_spark_shows(table, rows_of_arrow(hudi_rs_read(table, "snapshot")))
    assert not diff("spark", spark_rows, "hudi-rs", rs_rows)
    if table.model and "uuid" in table.model[0]:
        # The model has no Kafka columns; the command's tests check their values against the events.
        values = [{k: v for k, v in r.items() if not k.startswith("_hoodie_kafka_source_")} for r in spark_rows]
        assert not diff("spark", data_only(values), "model", data_only(as_spark_shows(table, table.model)))
    if table.path.parent.name.startswith("mor_kafka_columns"):
        assert spark_rows and all(isinstance(r["_hoodie_kafka_source_offset"], int) for r in spark_rows)


def test_read_optimized_equals_hudi_rs(spark, table):
    spark_rows = spark_rows_of(table, spark_read(spark, table, **{"hoodie.datasource.query.type": "read_optimized"}))
    rs_rows = as_spark_shows(table, rows_of_arrow(hudi_rs_read(table, "read_optimized")))
    assert not diff("spark", spark_rows, "hudi-rs", rs_rows)
    if table.table_type == COW:
        assert spark_rows == spark_rows_of(table, spark_read(spark, table))


def test_time_travel_as_of_every_retained_instant(spark, table):
    failures = []
    instants = table.retained_instants()
    assert len(instants) >= 3, table.timeline()
    for instant in instants:
        spark_rows = spark_rows_of(table, spark_read(spark, table, **{"as.of.instant": instant}))
        rs_rows = as_spark_shows(table, rows_of_arrow(hudi_rs_read(table, "as_of", instant)))
        d = diff(f"spark as of {instant}", spark_rows, "hudi-rs", rs_rows)
        if d:
            failures.append(d)
    assert not failures, "\n".join(failures)


def incremental_failures(label, got, want, table, begin, end):
    """Copy-on-write: exactly the oracle. Merge-on-read: every oracle row, plus possibly records written in
    the range that lost to an older row (Hudi's merge-on-read incremental query merges only the log blocks
    of the range, so a late update that the snapshot ignores is still a change of the range)."""
    if table.table_type == COW:
        return diff(label, got, "oracle", want)
    as_text = lambda rows: {json.dumps(r, sort_keys=True, default=str) for r in rows}
    missing = sorted(as_text(want) - as_text(got))
    outside = [r for r in got if not begin < r["_hoodie_commit_time"] <= end]
    if missing or outside:
        return f"{label}: missing {len(missing)} oracle rows {missing[:5]}; rows outside the range {outside[:5]}"
    return ""


def test_incremental_between_retained_instants(spark, table):
    instants = table.retained_instants()
    pairs = [(instants[i], instants[i + 1]) for i in range(len(instants) - 1)]
    pairs.append((instants[0], instants[-1]))
    failures = []
    for begin, end in pairs:
        # Spark's incremental query, unlike its snapshot, returns a timestamp key's stored value.
        spark_rows = spark_rows_of(table, spark_incremental(spark, table, begin, end))
        want = as_spark_shows(table, incremental_oracle(spark, table, begin, end))
        failures.append(incremental_failures(f"spark incremental ({begin}, {end}]", spark_rows, want, table,
                                             begin, end))
        rs_rows = as_spark_shows(table, rows_of_arrow(hudi_rs_read(table, "incremental", begin, end)))
        failures.append(diff(f"hudi-rs incremental ({begin}, {end}]", rs_rows, "spark", spark_rows))
    failures = [f for f in failures if f]
    assert not failures, "\n".join(failures)


def test_a_compaction_changes_no_snapshot(spark, table):
    """Merge-on-read: Spark's snapshot as of each compaction equals the one as of the instant before it."""
    if table.table_type != MOR:
        pytest.skip("copy-on-write tables have no compaction")
    timeline = table.timeline()
    retained = set(table.retained_instants())
    data = [(t, a) for t, a in timeline if t in retained]
    compactions = [i for i, (_, a) in enumerate(data) if a == "commit" and i > 0]
    assert compactions, timeline
    failures = []
    for i in compactions:
        before, at = data[i - 1][0], data[i][0]
        a = data_only(spark_rows_of(table, spark_read(spark, table, **{"as.of.instant": before})))
        b = data_only(spark_rows_of(table, spark_read(spark, table, **{"as.of.instant": at})))
        d = diff(f"as of {before}", a, f"as of compaction {at}", b)
        if d:
            failures.append(d)
    assert not failures, "\n".join(failures)


def test_java_parses_every_timeline_file(spark, table):
    """Hudi's Java timeline code (what `hudi-cli` and every table service call) parses each file of the active
    timeline the sink wrote: commit and replace metadata, clean plans (requested and inflight) and clean
    metadata, compaction and clustering plans, rollback metadata."""
    if not HUDI_VERSION.startswith("0."):
        pytest.skip(f"Hudi {HUDI_VERSION} reads here; the timeline API this test calls is Hudi 0.x's (run with 0.15.0)")
    jvm = spark._jvm
    hudi = jvm.org.apache.hudi
    conf = hudi.storage.hadoop.HadoopStorageConfiguration(spark._jsc.hadoopConfiguration())
    meta = hudi.common.table.HoodieTableMetaClient.builder().setConf(conf).setBasePath(table.uri).build()
    timeline = meta.getActiveTimeline()
    commit_class = hudi.common.model.HoodieCommitMetadata().getClass()
    replace_class = hudi.common.model.HoodieReplaceCommitMetadata().getClass()
    parsed = {}
    times = hudi.common.table.timeline.HoodieTimeline
    compactions = {f.name.split(".")[0] for f in (table.path / ".hoodie").glob("*.compaction.requested")}

    def count(key):
        parsed[key] = parsed.get(key, 0) + 1

    for instant in timeline.getInstants():
        action, state, ts = instant.getAction(), instant.getState().name(), instant.getTimestamp()
        if state != "COMPLETED":
            continue
        details = timeline.getInstantDetails(instant).get()
        if action in ("commit", "deltacommit"):
            hudi.common.model.HoodieCommitMetadata.fromBytes(details, commit_class).getWriteStats()
            count((action, "metadata"))
            if ts in compactions:
                plan = hudi.common.util.CompactionUtils.getCompactionPlan(meta, ts)
                assert plan.getOperations().size() > 0, ts
                count(("compaction", "plan"))
        elif action == "replacecommit":
            hudi.common.model.HoodieReplaceCommitMetadata.fromBytes(details, replace_class)
            plan = hudi.common.util.ClusteringUtils.getClusteringPlan(meta, times.getReplaceCommitRequestedInstant(ts))
            assert plan.isPresent(), f"no clustering plan in {ts}"
            count(("replacecommit", "plan"))
        elif action == "clean":
            clean = hudi.common.util.CleanerUtils.getCleanerMetadata(meta, instant)
            assert clean.getEarliestCommitToRetain() is not None, ts
            count(("clean", "metadata"))
            # Java's archiver parses the plan in both the requested and the inflight file.
            for pending in (times.getCleanRequestedInstant(ts), times.getCleanInflightInstant(ts)):
                hudi.common.util.CleanerUtils.getCleanerPlan(meta, pending)
                count(("clean", "plan"))
        elif action == "rollback":
            hudi.common.table.timeline.TimelineMetadataUtils.deserializeHoodieRollbackMetadata(details)
            count(("rollback", "metadata"))
    assert ("clean", "metadata") in parsed and ("clean", "plan") in parsed, parsed
    if table.table_type == MOR:
        assert ("compaction", "plan") in parsed, parsed
    if "insert" in table.path.parent.name:
        assert ("replacecommit", "plan") in parsed, parsed


def test_a_decoded_clustering_output_without_unprofitable_dictionaries(spark, tmp_path):
    """Clustering decodes inputs of small row groups and writes the columns whose dictionary did not pay in them
    (unique timestamps, amounts) without one: Spark reads the clustered table as hudi-rs does, every row."""
    import pyarrow.parquet as pq

    # Three one-file instants of 2,400 inserts (about 400 rows per partition file, enough to be judged), then
    # inline clustering of each partition's three files, decoded (the default minimum row group for copying).
    props = {**INSERTS, "hudi.sink.clustering.copy.min.row.group.bytes": None}
    table = write_table(tmp_path, schema="bench", records=7200, keys=None, per_file=2400, props=props,
                        gen_args=INSERT_EVENTS)
    clusterings = {t for t, a in table.timeline() if a == "replacecommit"}
    assert clusterings, table.timeline()
    # The ingest's files have a dictionary for event_ts, the clustered ones (named by a replacecommit) none.
    dictionary = {}
    for f in table.path.rglob("*.parquet"):
        rg = pq.ParquetFile(f).metadata.row_group(0)
        event_ts = next(rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == "event_ts")
        clustered = f.stem.rsplit("_", 1)[-1] in clusterings
        dictionary.setdefault((clustered, event_ts.has_dictionary_page), []).append(f.name)
    assert set(dictionary) == {(False, True), (True, False)}, dictionary
    spark_rows = spark_rows_of(table, spark_read(spark, table))
    rs_rows = as_spark_shows(table, rows_of_arrow(hudi_rs_read(table, "snapshot")))
    assert sorted(r["event_id"] for r in spark_rows) == sorted(r["event_id"] for r in table.model)
    assert not diff("spark", spark_rows, "hudi-rs", rs_rows)
