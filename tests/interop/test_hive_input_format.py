"""Hive's input formats (hudi-hadoop-mr, in Hudi 0.15.0's Spark bundle) read the sink's tables, row for row.

Hive, Athena's Hive-table path and Presto/Trino's older Hudi path read Hudi through `HoodieParquetInputFormat`
(copy-on-write, and merge-on-read read-optimized) and `HoodieParquetRealtimeInputFormat` (merge-on-read snapshot:
base files merged with their logs). Each table is registered by the sink's own catalog sync (`hudi-sink
sync-catalog` into a moto Glue), and read as Hive's `HiveInputFormat` reads a registered table, in the Spark
session's JVM: a `JobConf` with the table's columns, types and partition columns, the projection Hive sets for
`SELECT *`, the partitions' locations as input paths, the registered input format's `getSplits` and
`getRecordReader`; each row goes through the registered SerDe (`ParquetHiveSerDe`, Hive 2.3.9 from pyspark's jars)
as Hive's operators read it, and gets its partition's values appended. Read-optimized rows must equal Spark's
read-optimized query, realtime rows Spark's snapshot and the generator's model, incremental rows Spark's
incremental query; the limits found are pinned (docs/compatibility.md, limits 12 and 13).
"""

import datetime
import decimal
import json

import pytest

from conftest import (COW, MOR, READERS_PYTHON, ROOT, TABLES, aws_env, canon, data_only, diff, hoodie_properties,
                      model_rows, read_optimized, row_key, rows_of_spark, run, spark_incremental, spark_rows,
                      sync_catalog, write_catalog_tables)
from test_carried_logs import compaction_carried_logs, export

READ_OPTIMIZED = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
REALTIME = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_catalog_tables(tmp_path_factory)


class Catalog:
    """The Glue Data Catalog (moto) into which `hudi-sink sync-catalog` registers each table as Athena and Hive read
    it: columns and types, partition keys, partitions and their locations, input format and SerDe (`<name>` for a
    copy-on-write table, `<name>_ro` and `<name>_rt` for a merge-on-read one)."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.env = aws_env(endpoint, "GLUE")
        self.synced = set()
        self.dumps = {}

    def hive(self, table, name, suffix="", timestamps=False):
        """The registered table `name + suffix`, synced with `support_timestamp` = `timestamps`."""
        database = "lake_timestamps" if timestamps else "lake"
        if (database, name) not in self.synced:
            sync_catalog(table, self.env, database, name, timestamps=timestamps)
            self.synced.add((database, name))
        if (database, name + suffix) not in self.dumps:
            self.dumps[database, name + suffix] = json.loads(run(
                READERS_PYTHON, ROOT / "tests" / "python" / "glue_dump.py", self.endpoint, database, name + suffix,
                env=self.env))
        dump = self.dumps[database, name + suffix]
        assert dump["table"], f"{database}.{name}{suffix} is not in the catalog"
        return HiveTable(table, dump)


@pytest.fixture(scope="module")
def catalog(moto_endpoint):
    """The Glue catalog of moto on 127.0.0.1 (conftest's `moto_endpoint`)."""
    yield Catalog(moto_endpoint)


class HiveTable:
    """A table as the catalog registers it, read as Hive reads it: a `JobConf` with the table's properties, the
    partitions' locations as input paths, the registered input format and SerDe; Hive appends each partition's
    values to the rows of its location."""

    def __init__(self, table, dump):
        props = dict(line.split("=", 1) for line in (table.path / ".hoodie" / "hoodie.properties").read_text()
                     .splitlines() if "=" in line and not line.startswith("#"))
        registered = dump["table"]
        storage = registered["StorageDescriptor"]
        self.table = table
        self.name = props["hoodie.table.name"]  # the name Hive's incremental mode keys its properties by
        self.ordering = props.get("hoodie.table.precombine.field")
        self.input_format = storage["InputFormat"]
        self.serde = storage["SerdeInfo"]["SerializationLibrary"]
        self.columns = [c["Name"] for c in storage["Columns"]]
        self.types = [c["Type"] for c in storage["Columns"]]
        self.partition_keys = [(c["Name"], c["Type"]) for c in registered["PartitionKeys"]]
        if self.partition_keys:
            self.locations = {local(p["Location"]): p["Values"] for p in dump["partitions"]}
        else:
            self.locations = {local(storage["Location"]): []}
        # Avro field types (from the table's schema), to read Hive's values back into `conftest.canon`'s form.
        schema = json.loads(props["hoodie.table.create.schema"].replace("\\:", ":"))
        self.fields = {f["name"]: f["type"] for f in schema["fields"]}

    def job_conf(self, jvm, hadoop_conf, extra=None):
        props = {
            "columns": ",".join(self.columns),
            "columns.types": ":".join(self.types),
            "serialization.lib": self.serde,
            # Hive's projection for `SELECT *`: every column, by position.
            "hive.io.file.readcolumn.names": ",".join(self.columns),
            "hive.io.file.readcolumn.ids": ",".join(str(i) for i in range(len(self.columns))),
            "hive.io.file.read.all.columns": "false",
            "mapreduce.input.fileinputformat.inputdir": ",".join(sorted(self.locations)),
            **(extra or {}),
        }
        if self.partition_keys:
            props["partition_columns"] = "/".join(n for n, _ in self.partition_keys)
            props["partition_columns.types"] = ":".join(t for _, t in self.partition_keys)
        conf = jvm.org.apache.hadoop.mapred.JobConf(hadoop_conf)
        table_props = jvm.java.util.Properties()
        for k, v in props.items():
            conf.set(k, v)
            table_props.setProperty(k, v)
        return conf, table_props

    def read(self, spark, input_format=None, extra=None):
        """Every row the input format (by default the registered one) returns, through the SerDe, as canonical
        dicts sorted like Spark's."""
        jvm = spark._jvm
        conf, table_props = self.job_conf(jvm, spark._jsc.hadoopConfiguration(), extra)
        fmt = getattr(jvm, input_format or self.input_format)()
        fmt.setConf(conf)
        serde = getattr(jvm, self.serde)()
        serde.initialize(conf, table_props)
        inspector = serde.getObjectInspector()
        to_json = jvm.org.apache.hadoop.hive.serde2.SerDeUtils.getJSONString
        rows = []
        for split in fmt.getSplits(conf, 1):
            values = self.locations[split.getPath().getParent().toString()]
            reader = fmt.getRecordReader(split, conf, jvm.org.apache.hadoop.mapred.Reporter.NULL)
            key, value = reader.createKey(), reader.createValue()
            while reader.next(key, value):
                row = self.row(json.loads(to_json(serde.deserialize(value), inspector), parse_float=decimal.Decimal))
                row.update({n: v for (n, _), v in zip(self.partition_keys, values)})
                rows.append(row)
            reader.close()
        return sorted(rows, key=row_key)

    def row(self, values):
        """A row in `conftest.canon`'s form: Hive's JSON of a row holds a date as text and a decimal as a number
        without trailing zeros; a `bigint` holding a `timestamp-micros` is that timestamp."""
        return {c: hive_value(values[c], self.fields.get(c, "string")) for c in self.columns}


def local(location):
    """A local location as Hadoop qualifies it (`file:/…`): Hudi's incremental listing matches partition paths
    against the table's base path by equality."""
    return location if ":" in location.split("/", 1)[0] else f"file:{location}"


def hive_value(value, schema):
    if value is None:
        return None
    if isinstance(schema, list):
        (schema,) = [s for s in schema if s != "null"]
    if isinstance(schema, dict):
        logical = schema.get("logicalType")
        if logical == "decimal":
            return ("dec", str(decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-schema["scale"]))))
        if logical == "date":
            return canon(datetime.date.fromisoformat(value))
        if logical == "timestamp-micros":
            if isinstance(value, str):  # a `timestamp` column: text in the JVM's time zone, UTC here
                return canon(datetime.datetime.fromisoformat(value))
            assert isinstance(value, int), value
            return ("ts_us", value)
        if schema["type"] == "record":
            return {f["name"]: hive_value(value[f["name"]], f["type"]) for f in schema["fields"]}
        return hive_value(value, schema["type"])
    if schema == "double":
        return float(value)
    assert isinstance(value, {"string": str, "long": int, "int": int, "boolean": bool}[schema]), (value, schema)
    return value


def recreated_below_a_delete(table):
    """Keys whose events hold a delete (a tombstone or a `_hoodie_is_deleted` row) followed by a record of the key
    with a smaller ordering value than an earlier one: where a merge-on-read slice keeps the key deleted or brings
    back its base version (docs/compatibility.md, limit 6) and the generator's model, which follows copy-on-write,
    re-creates it."""
    import base64

    ordering = hoodie_properties(table)["hoodie.table.precombine.field"]
    history = {}
    for f in sorted((table.path.parent / "events").glob("*.json")):
        for records in json.loads(f.read_text())["records"].values():
            for record in records:
                value = json.loads(base64.b64decode(record["value"])) if record.get("value") else None
                key = value["event_id"] if value else base64.b64decode(record["key"]).decode()
                deleted = value is None or bool(value.get("_hoodie_is_deleted"))
                history.setdefault(key, []).append((deleted, value[ordering] if value else None))
    keys = set()
    for key, events in history.items():
        for i, (deleted, _) in enumerate(events):
            before = [o for _, o in events[:i + 1] if o is not None]
            if deleted and any(o is not None and before and o < max(before) for _, o in events[i + 1:]):
                keys.add(key)
    return keys


def registered(catalog, tables, name, view, timestamps=False):
    """The catalog's table of `name`: `view` "ro" is the copy-on-write table or the merge-on-read `_ro` table,
    "rt" the `_rt` table."""
    table = tables[name]
    suffix = "" if table.table_type == COW else f"_{view}"
    hive = catalog.hive(table, name, suffix, timestamps)
    assert hive.input_format == (REALTIME if view == "rt" else READ_OPTIMIZED), hive.input_format
    return table, hive


@pytest.mark.parametrize("name", sorted(TABLES))
def test_read_optimized_equals_spark(spark, catalog, tables, name):
    """`HoodieParquetInputFormat` returns the latest base files' rows: Spark's read-optimized rows, file names and
    sequence numbers included; on copy-on-write tables, the model."""
    table, hive = registered(catalog, tables, name, "ro")
    rows = hive.read(spark)
    assert rows, name
    assert not diff("hive read-optimized", rows, "spark read-optimized", read_optimized(spark, table))
    if table.table_type == COW:
        assert not diff("hive", data_only(rows), "model", model_rows(table))


@pytest.mark.parametrize("name", sorted(n for n, (t, _) in TABLES.items() if t == MOR))
def test_realtime_equals_spark_snapshot_and_the_model(spark, catalog, tables, name):
    """`HoodieParquetRealtimeInputFormat` merges each slice's logs into its base file as Spark's snapshot does, late
    events, `_hoodie_is_deleted` rows and tombstones included. The model differs from both only in keys of limit 6
    (a merge-on-read slice keeps a key deleted below a delete's ordering value)."""
    table, hive = registered(catalog, tables, name, "rt")
    assert any(table.path.rglob(".*.log.*")), "no logs to merge"
    assert ("commit" in {a for _, a in table.timeline()}) == (name == "mor_nonpartitioned"), table.timeline()
    rows = hive.read(spark)
    assert not diff("hive realtime", rows, "spark snapshot", spark_rows(spark, table))
    got, want = data_only(rows), model_rows(table)
    as_text = lambda rs: {json.dumps(r, sort_keys=True, default=str): r["event_id"] for r in rs}
    got_text, want_text = as_text(got), as_text(want)
    differing = {got_text[t] for t in got_text.keys() - want_text.keys()}
    differing |= {want_text[t] for t in want_text.keys() - got_text.keys()}
    assert differing <= recreated_below_a_delete(table), diff("hive realtime", got, "model", want)


def to_milliseconds(rows, column):
    """Rows with a timestamp column cut to whole milliseconds, toward zero, as Hudi's Hive 2 shim does."""
    return [{**r, column: (r[column][0], int(r[column][1] / 1000) * 1000)} for r in rows]


def test_timestamp_columns_of_a_nonpartitioned_table(spark, catalog, tables):
    """With `hoodie.datasource.hive_sync.support_timestamp=true` the timestamp column is a Hive `timestamp`, and
    Hudi reads base files through Avro (`HoodieTimestampAwareParquetInputFormat`). Limit 12: on Hive 2
    (`Hive2Shim.getTimestampWriteable`: `new Timestamp(micros / 1000)`) the values keep whole milliseconds;
    otherwise the copy-on-write rows equal Spark's."""
    table, hive = registered(catalog, tables, "cow_nonpartitioned", "ro", timestamps=True)
    column = "event_ts"
    assert hive.types[hive.columns.index(column)] == "timestamp", hive.types
    want = read_optimized(spark, table)
    assert any(r[column][1] % 1000 for r in want), "no timestamp has microseconds: the test shows nothing"
    assert not diff("hive", hive.read(spark), "spark, whole milliseconds", to_milliseconds(want, column))


def test_timestamp_ordering_field_in_the_realtime_merge(spark, catalog, tables):
    """Limit 12 too: with the ordering field a `timestamp`, the realtime read lets a log record replace its base
    row even when the record is late (an ordering value below the base row's): a late update or a late
    `_hoodie_is_deleted` row, which Spark (and the same table read with the default `bigint`) ignores. Every
    other row equals Spark's, in whole milliseconds."""
    table, hive = registered(catalog, tables, "mor_nonpartitioned", "rt", timestamps=True)
    want = {r["_hoodie_record_key"]: r for r in to_milliseconds(spark_rows(spark, table), "event_ts")}
    got = {r["_hoodie_record_key"]: r for r in hive.read(spark)}
    differing = {k for k in got.keys() | want.keys() if got.get(k) != want.get(k)}
    late = late_keys(table)
    assert differing, "Hive's rows equal Spark's: limit 12's merge no longer holds"
    assert differing <= late, [diff("hive", [got[k]] if k in got else [], "spark", [want[k]] if k in want else [])
                               for k in sorted(differing - late)]


def late_keys(table):
    """Keys with an event (a record or a `_hoodie_is_deleted` row) ordered below an earlier record of the key."""
    import base64

    ordering = hoodie_properties(table)["hoodie.table.precombine.field"]
    keys, highest = set(), {}
    for f in sorted((table.path.parent / "events").glob("*.json")):
        for records in json.loads(f.read_text())["records"].values():
            for record in records:
                if not record.get("value"):
                    continue
                value = json.loads(base64.b64decode(record["value"]))
                key, order = value["event_id"], value[ordering]
                if order < highest.get(key, order):
                    keys.add(key)
                highest[key] = max(highest.get(key, order), order)
    return keys


@pytest.mark.parametrize("name", ["cow_hive", "mor_hive_logs"])
def test_timestamp_columns_of_a_partitioned_table_fail(spark, catalog, tables, name):
    """Limit 12 too: Hudi's Avro path returns a row in the data file's column order, the partition column's slot
    left empty, while Hive's SerDe reads it in the table's order, which has no partition column: every column
    after the partition column is shifted by one, and the SerDe fails on the first type that no longer fits. The
    same tables with the default `bigint` read (test_read_optimized_equals_spark)."""
    _, hive = registered(catalog, tables, name, "ro", timestamps=True)
    with pytest.raises(Exception, match="Cannot inspect org.apache.hadoop.io.LongWritable"):
        hive.read(spark)


def incremental_props(hive, begin, commits):
    return {f"hoodie.{hive.name}.consume.mode": "INCREMENTAL",
            f"hoodie.{hive.name}.consume.start.timestamp": begin,
            f"hoodie.{hive.name}.consume.max.commits": str(commits)}


def incremental_failures(spark, table, hive, ranges):
    """Hive's incremental rows of each (start, number of commits), with the filter on `_hoodie_commit_time` that
    Hudi asks Hive queries to add, against Spark's incremental query over the same range."""
    instants = table.retained_instants()
    failures, compared = [], 0
    for begin, commits in ranges:
        later = [t for t in instants if t > begin]
        end = later[-1] if commits == -1 else later[commits - 1]
        rows = [r for r in hive.read(spark, extra=incremental_props(hive, begin, commits))
                if r["_hoodie_commit_time"] > begin]
        want = rows_of_spark(spark_incremental(spark, table, begin, end), drop=())
        compared += len(want)
        failures.append(diff(f"hive incremental ({begin}, {commits} commits: {end}]", rows, "spark", want, limit=3))
    assert compared, ranges
    return [f for f in failures if f]


@pytest.mark.parametrize("name", sorted(n for n, (t, _) in TABLES.items() if t == COW))
def test_incremental_copy_on_write_equals_spark(spark, catalog, tables, name):
    """Hive's incremental mode (`hoodie.<table>.consume.mode=INCREMENTAL`, a start instant, a number of commits)
    reads the base files that the commits after the start wrote."""
    table, hive = registered(catalog, tables, name, "ro")
    instants = table.retained_instants()
    ranges = sorted({(instants[0], 1), (instants[-2], 1), (instants[0], -1)})
    failures = incremental_failures(spark, table, hive, ranges)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", sorted(n for n, (t, _) in TABLES.items() if t == MOR))
def test_incremental_merge_on_read_of_one_commit_equals_spark(spark, catalog, tables, name):
    """The realtime table's incremental mode over one commit: the file slices the commit wrote, each with the one
    log file the commit added (or the compaction's base file)."""
    table, hive = registered(catalog, tables, name, "rt")
    ranges = [(begin, 1) for begin in table.retained_instants()[-3:-1]]
    failures = incremental_failures(spark, table, hive, ranges)
    assert not failures, "\n".join(failures)


def test_incremental_merge_on_read_over_several_commits_merges_logs_newest_first(spark, catalog, tables):
    """Limit 13: over several commits, Hudi 0.15's realtime incremental split lists a slice's log files newest
    first (`HoodieMergeOnReadTableInputFormat.collectAllIncrementalFiles` passes `FileSlice.getLogFiles()` unsorted;
    its snapshot splits sort them oldest first), so an older log's record replaces a newer one and deleted keys
    come back. Spark's incremental query returns the newest rows."""
    table, hive = registered(catalog, tables, "mor_hive_logs", "rt")
    instants = table.retained_instants()
    jvm = spark._jvm
    conf, _ = hive.job_conf(jvm, spark._jsc.hadoopConfiguration(), incremental_props(hive, instants[0], -1))
    fmt = getattr(jvm, REALTIME)()
    fmt.setConf(conf)
    versions = [[log.getLogVersion() for log in split.getDeltaLogFiles()] for split in fmt.getSplits(conf, 1)]
    several = [v for v in versions if len(v) > 1]
    assert several and all(v == sorted(v, reverse=True) for v in several), versions
    assert incremental_failures(spark, table, hive, [(instants[0], -1)]), \
        "Hive's incremental rows over several commits equal Spark's: limit 13 no longer holds"


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    return export(tmp_path_factory.mktemp("carried") / "table")


def test_realtime_of_a_compaction_that_carried_logs_equals_spark(spark, catalog, carried):
    """The simulation's table whose compaction carried logs written while it merged (test_carried_logs.py): the
    realtime table reads the carried logs on top of the compaction's base files, as Spark does."""
    assert compaction_carried_logs(carried), carried.timeline()
    want = spark_rows(spark, carried)
    assert want
    rt = catalog.hive(carried, "carried", "_rt")
    assert not diff("hive realtime", rt.read(spark), "spark snapshot", want)
    ro = catalog.hive(carried, "carried", "_ro")
    assert not diff("hive read-optimized", ro.read(spark), "spark read-optimized", read_optimized(spark, carried))
