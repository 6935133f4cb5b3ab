"""A key deleted and re-created on a merge-on-read table with `DefaultHoodieRecordPayload` (ordering field `ts`):
what Spark 3.5 with Hudi 0.15.0 reads, pinned row for row, with hudi-rs, the sink's compaction and Hudi's Java
compaction compared with it (docs/semantics.md, "Merge-on-read tables"; docs/compatibility.md, limit 6).

Each case is one small table written from hand-made event files, one instant per file: the key's first version
V1 (`ts` 100), a delete (a Kafka tombstone, or a `_hoodie_is_deleted = true` row with `ts` 150), then the key
re-created (V3) with a `ts` below, equal to, between or above them. The layouts (`CASES`) place V1 in the file
group's base file or in a log, add a newer V2 (`ts` 300) in a log before the delete, put the delete and the
re-creation in one batch or in two instants, or compact between them. Before the first compaction the table is
copied: the sink compacts one copy, Java the other; each compaction must leave Spark's snapshot as it was and
write it into the base file (the read-optimized view), so both write the same rows. The same steps on a copy-on-write table give the
rows the sink's stated merge rule (docs/semantics.md, "Merge semantics") produces.
"""

import base64
import json
import pathlib
import shutil

import pytest

from conftest import Table, hudi_rs_read, ingest, rows_of_arrow, rows_of_spark, spark_read, table_config
from test_spark_services import JAVA_SETTINGS, SINK_SERVICES_OFF, call, procedure_options

KEY = "trip-k"
# In KEY's bucket (Java `List.hashCode` of the key, mod 4) and partition: the base file keeps a row when KEY's
# row is compacted away.
NEIGHBOUR = "trip-o"
CITY = "sf"
# Another partition: the filler's deltacommit leaves KEY's file group alone.
FILLER_CITY = "zz"
# Java plans a compaction of every file group with a log (its default waits for five deltacommits).
JAVA_OPTIONS = procedure_options({**JAVA_SETTINGS, "hoodie.compact.inline.max.delta.commits": "1"})

V1_TS = 100
DELETE_TS = 150
V2_TS = 300


class Events:
    """ESM payloads (`aws:kafka`) with offsets increasing across files, as one Kafka partition delivers them."""

    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.offset = 0
        self.files = 0

    def file(self, records):
        """One event file of `records`: (key, value dict or None for a tombstone)."""
        out = []
        for key, value in records:
            out.append({
                "topic": "trips", "partition": 0, "offset": self.offset,
                "timestamp": 1764412800000 + self.offset, "timestampType": "CREATE_TIME",
                "key": base64.b64encode(key.encode()).decode(),
                "value": None if value is None else base64.b64encode(json.dumps(value).encode()).decode(),
                "headers": [],
            })
            self.offset += 1
        self.files += 1
        path = self.directory / f"{self.files:03d}.json"
        path.write_text(json.dumps({
            "eventSource": "aws:kafka",
            "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/trips/3f1c2a9e-0000-0000-0000-000000000000-1",
            "bootstrapServers": "b-1.trips.kafka.eu-west-1.amazonaws.com:9098",
            "records": {"trips-0": out}}))
        return path


def row(key, ts, rider, city=CITY, deleted=None):
    value = {"uuid": key, "ts": ts, "rider": rider, "fare": float(ts), "city": city}
    if deleted is not None:
        value["_hoodie_is_deleted"] = deleted
    return value


def delete_records(kind):
    """KEY's delete: a Kafka tombstone, or a `_hoodie_is_deleted = true` row with ordering value DELETE_TS."""
    if kind == "tombstone":
        return [(KEY, None)]
    return [(KEY, row(KEY, DELETE_TS, "deleter", deleted=True))]


class Flow:
    """One small table written step by step, one instant per step. Compactions (merge-on-read) by `compactor`:
    `sink`, the sink's inline compaction (`hoodie.compact.inline.max.delta.commits=1`), run by the deltacommit of
    a filler row in another partition, so that it is the only change to KEY's file group; `java`, Spark's
    `run_compaction` (scheduleAndExecute)."""

    def __init__(self, spark, tmp: pathlib.Path, table_type="MERGE_ON_READ", compactor="sink", events=None):
        self.spark = spark
        self.tmp = tmp
        self.table_type = table_type
        self.compactor = compactor
        self.events = events or Events(tmp / "events")
        self.config = table_config(tmp, table_type=table_type, props=SINK_SERVICES_OFF)
        (tmp / "compacting").mkdir(exist_ok=True)
        self.compacting = table_config(tmp / "compacting", table_type=table_type, props={
            **SINK_SERVICES_OFF, "hoodie.base.path": tmp / "table",
            "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"})
        self.table = Table(tmp / "table", [], table_type)
        # Instant time -> the step that wrote it.
        self.labels = {}
        self.fillers = 0

    def fork(self, tmp: pathlib.Path, compactor: str):
        """A copy of the table (and of the event offsets) at `tmp`, compacted by `compactor` from now on."""
        tmp.mkdir()
        shutil.copytree(self.table.path, tmp / "table")
        events = Events(tmp / "events")
        events.offset, events.files = self.events.offset, self.events.files
        other = Flow(self.spark, tmp, self.table_type, compactor, events)
        other.labels = dict(self.labels)
        other.fillers = self.fillers
        return other

    def _new_instants(self, before):
        return [(t, a) for t, a in self.table.timeline() if (t, a) not in before]

    def write(self, label, records):
        """One ingest of `records` as one instant, labelled `label` in the rows' commit times."""
        before = set(self.table.timeline()) if self.table.path.exists() else set()
        ingest(self.config, [self.events.file(records)])
        new = self._new_instants(before)
        action = "deltacommit" if self.table_type == "MERGE_ON_READ" else "commit"
        assert [a for _, a in new] == [action], new
        self.labels[new[0][0]] = label

    def compact(self):
        """A compaction of every file group with logs, by `compactor`."""
        before = set(self.table.timeline())
        if self.compactor == "sink":
            self.fillers += 1
            filler = f"filler-{self.fillers}"
            ingest(self.compacting, [self.events.file([(filler, row(filler, 1, "filler", city=FILLER_CITY))])])
        else:
            call(self.spark, "run_compaction", self.table.uri, op="scheduleAndExecute", options=JAVA_OPTIONS)
        new = self._new_instants(before)
        assert len([t for t, a in new if a == "commit"]) == 1, f"{self.compactor} compaction: {new}"

    def labelled(self, rows):
        """KEY's rows, with the commit time as the label of the step that wrote it."""
        out = []
        for r in rows:
            if r["uuid"] == KEY:
                out.append({**r, "_hoodie_commit_time": self.labels.get(r["_hoodie_commit_time"],
                                                                        r["_hoodie_commit_time"])})
        return out

    def spark_rows(self, **options):
        return self.labelled(rows_of_spark(spark_read(self.spark, self.table, **options)))

    def read_optimized(self):
        """What the latest base files hold: after a compaction, the rows it wrote."""
        return self.spark_rows(**{"hoodie.datasource.query.type": "read_optimized"})

    def hudi_rs_rows(self):
        return self.labelled(rows_of_arrow(hudi_rs_read(self.table, "snapshot")))


def write_case(flow, kind, layout, recreate_ts, compacted=None):
    """Writes the case's steps; `compacted(flow)` runs at the layout's compaction point and returns the flow to
    go on with."""
    neighbour = [(NEIGHBOUR, row(NEIGHBOUR, V1_TS, "neighbour"))]
    v1 = [(KEY, row(KEY, V1_TS, "v1"))]
    recreate = [(KEY, row(KEY, recreate_ts, "v3"))]
    if layout == "v1_in_log":
        flow.write("i0", neighbour)
        flow.write("i1", v1)
    else:
        flow.write("i1", v1 + neighbour)
    if layout in ("v2_in_log", "v2_one_batch"):
        flow.write("i1b", [(KEY, row(KEY, V2_TS, "v2"))])
    if layout in ("one_batch", "v2_one_batch"):
        flow.write("i2", delete_records(kind) + recreate)
        return flow
    flow.write("i2", delete_records(kind))
    if layout == "compaction_between" and compacted is not None:
        flow = compacted(flow)
    flow.write("i3", recreate)
    return flow


def version(name, ts, label, deleted=None):
    """KEY's full row as a version `name` with `ts` written by step `label`."""
    return {"_hoodie_commit_time": label, "_hoodie_record_key": KEY, "_hoodie_partition_path": f"city={CITY}",
            "uuid": KEY, "ts": ts, "rider": name, "fare": float(ts), "city": CITY, "_hoodie_is_deleted": deleted}


V1 = version("v1", V1_TS, "i1")
V2 = version("v2", V2_TS, "i1b")


def v3(ts, label="i3"):
    return version("v3", ts, label)


# (delete kind, layout, re-created ts) -> (Spark's merge-on-read snapshot, the copy-on-write table) for KEY.
# Layouts: `two_instants` V1 in the base file, the delete and V3 in two later deltacommits (logs of the same
# slice); `one_batch` the delete and V3 in one batch; `compaction_between` a compaction after the delete;
# `v1_in_log` V1 in a log (the base file holds only the neighbour); `v2_in_log` V1 in the base file, V2 (ts 300)
# in a log before the delete; `v2_one_batch` the same V1 and V2, then the delete and V3 in one batch (the
# batch's log holds a delete block ahead of its data block, so V2 is deleted as in `v2_in_log`).
CASES = {
    ("tombstone", "two_instants", 50): ([V1], [v3(50)]),
    ("tombstone", "two_instants", 100): ([v3(100)], [v3(100)]),
    ("tombstone", "two_instants", 120): ([v3(120)], [v3(120)]),
    ("tombstone", "two_instants", 200): ([v3(200)], [v3(200)]),
    ("tombstone", "one_batch", 50): ([V1], [v3(50, "i2")]),
    ("tombstone", "one_batch", 200): ([v3(200, "i2")], [v3(200, "i2")]),
    ("tombstone", "compaction_between", 50): ([v3(50)], [v3(50)]),
    ("tombstone", "compaction_between", 200): ([v3(200)], [v3(200)]),
    ("tombstone", "v1_in_log", 50): ([v3(50)], [v3(50)]),
    ("tombstone", "v2_in_log", 50): ([V1], [v3(50)]),
    ("tombstone", "v2_in_log", 120): ([v3(120)], [v3(120)]),
    ("tombstone", "v2_one_batch", 50): ([V1], [v3(50, "i2")]),
    ("tombstone", "v2_one_batch", 100): ([v3(100, "i2")], [v3(100, "i2")]),
    ("tombstone", "v2_one_batch", 200): ([v3(200, "i2")], [v3(200, "i2")]),
    ("tombstone", "v2_one_batch", 400): ([v3(400, "i2")], [v3(400, "i2")]),
    ("is_deleted", "two_instants", 50): ([], [v3(50)]),
    ("is_deleted", "two_instants", 120): ([], [v3(120)]),
    ("is_deleted", "two_instants", 200): ([v3(200)], [v3(200)]),
    ("is_deleted", "one_batch", 120): ([], []),
    ("is_deleted", "one_batch", 200): ([v3(200, "i2")], [v3(200, "i2")]),
    ("is_deleted", "compaction_between", 50): ([v3(50)], [v3(50)]),
    ("is_deleted", "v1_in_log", 50): ([], [v3(50)]),
    ("is_deleted", "v1_in_log", 200): ([v3(200)], [v3(200)]),
    ("is_deleted", "v2_in_log", 200): ([V2], [V2]),
}


@pytest.mark.parametrize("kind,layout,recreate_ts", list(CASES), ids=["-".join(map(str, c)) for c in CASES])
def test_recreate_after_delete(spark, tmp_path, kind, layout, recreate_ts):
    want_mor, want_cow = CASES[(kind, layout, recreate_ts)]
    cow = write_case(Flow(spark, tmp_path / "cow", "COPY_ON_WRITE"), kind, layout, recreate_ts)
    assert cow.spark_rows() == want_cow, "copy-on-write"

    forks = {}

    def fork(flow):
        """Forks the table for the Java compactor, then runs the compaction on both copies."""
        forks["java"] = flow.fork(tmp_path / "java", "java")
        for f in (flow, forks["java"]):
            assert f.spark_rows() == [], "the key after its delete"
            f.compact()
            assert f.spark_rows() == [], f"{f.compactor}'s compaction between the delete and the re-creation"
            assert f.read_optimized() == [], f"the base file {f.compactor}'s compaction wrote"
        return flow

    (tmp_path / "mor").mkdir()
    sink = write_case(Flow(spark, tmp_path / "mor", "MERGE_ON_READ", "sink"), kind, layout, recreate_ts,
                      compacted=fork)
    if layout == "compaction_between":
        java = forks["java"]
        java.write("i3", [(KEY, row(KEY, recreate_ts, "v3"))])
    else:
        java = sink.fork(tmp_path / "java", "java")
    got = sink.spark_rows()
    assert got == want_mor, "Spark's merge-on-read snapshot"
    assert java.spark_rows() == got
    assert sink.hudi_rs_rows() == got, "hudi-rs"
    for flow in (sink, java):
        flow.compact()
        assert flow.spark_rows() == got, f"Spark's snapshot after {flow.compactor}'s compaction"
        assert flow.read_optimized() == got, f"the base file {flow.compactor}'s compaction wrote"
        assert flow.hudi_rs_rows() == got, f"hudi-rs after {flow.compactor}'s compaction"
