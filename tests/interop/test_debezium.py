"""Spark (Hudi 0.15.0) reads a Debezium change stream (PostgreSQL, MySQL) the sink wrote as HoodieStreamer's
Debezium sources would: the snapshot, merged by Spark with the table's payload (`PostgresDebeziumAvroPayload`,
`MySqlDebeziumAvroPayload`), equals the stream's model (the event with the highest LSN, or binlog position, per
key; a delete removes the key), on copy-on-write and on merge-on-read with compactions running. The stream has
creates, updates, deletes with their tombstones, and stale events re-sent after newer ones (lower positions,
which the payload ignores). MySQL positions keep four digits: merge-on-read readers compare `_event_seq` as text
(docs/cdc.md). The same streams also arrive as registry-framed Avro (the AvroConverter's Envelope, written by
fastavro, its schema served by a stub Confluent registry), with a decimal column beyond a double's precision.
"""

import base64
import decimal
import io
import json
import pathlib
import random
import struct
import subprocess
import sys

import pytest

from conftest import data_only, diff, ingest, rows_of_spark, spark_read, table_config

SCHEMA = {"type": "record", "name": "Value", "namespace": "pg.public.customers", "fields": [
    {"name": "uuid", "type": "string"}, {"name": "city", "type": "string"},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "amount", "type": ["null", "long"], "default": None}]}
PAYLOADS = {"postgres": "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload",
            "mysql": "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload"}
ORDERING = {"postgres": "_event_lsn", "mysql": "_event_seq"}
CITIES = ["lisbon", "oslo", "quito"]


def stream(connector, seed=5, events=240, keys=40):
    """Kafka records [(key, value or None)] and the model {uuid: row with the columns Spark shows}."""
    rng = random.Random(seed)
    live, model, sent, lsn = {}, {}, [], 1000
    for i in range(events):
        lsn += rng.randint(10, 35)  # four digits throughout: 1,010 to at most 9,400
        key = f"c-{rng.randrange(keys):03d}"
        image = {"uuid": key, "city": CITIES[int(key[2:]) % 3], "name": f"n{i}", "amount": i}
        if key in live and rng.random() < 0.2:
            op, before, after = "d", live.pop(key), None
            model.pop(key, None)
        else:
            op, before, after = ("u" if key in live else "c"), None, image
            live[key] = image
        if connector == "postgres":
            source = {"version": "2.7.3.Final", "connector": "postgresql", "name": "pg",
                      "ts_ms": 1_718_000_000_000 + i, "snapshot": "false", "db": "shop", "schema": "public",
                      "table": "customers", "txId": lsn // 10, "lsn": lsn, "xmin": None}
            position = lsn
        else:
            # Binlog positions 1000..9999 in file 7: text and numeric order of `_event_seq` agree.
            source = {"version": "2.7.3.Final", "connector": "mysql", "name": "mysql1",
                      "ts_ms": 1_718_000_000_000 + i, "snapshot": "false", "db": "inventory", "table": "customers",
                      "server_id": 223344, "gtid": None, "file": "mysql-bin.000007", "pos": lsn, "row": 0,
                      "thread": 7, "query": None}
            position = f"000007.{lsn}"
        envelope = {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1_718_000_000_100 + i}
        sent.append((key, envelope))
        if op == "d":
            sent.append((key, None))  # the tombstone that follows a delete
        else:
            model[key] = {**after, "_change_operation_type": op, ORDERING[connector]: position}
        # Now and then an older event of a live key again, after newer ones: its lower LSN loses.
        if i > 20 and rng.random() < 0.1:
            old_key, old = rng.choice(sent[:-5])
            if old is not None and old_key in live and old["op"] != "d":
                sent.append((old_key, old))
    return sent, model


def write_events(directory, records, per_file=25):
    directory.mkdir(parents=True)
    files = []
    for n in range(0, len(records), per_file):
        out = []
        for i, (key, value) in enumerate(records[n:n + per_file]):
            r = {"topic": "cdc", "partition": 0, "offset": n + i, "timestamp": 1_718_000_000_000 + n + i,
                 "timestampType": "CREATE_TIME", "key": base64.b64encode(key.encode()).decode(), "headers": []}
            if value is not None:
                raw = value if isinstance(value, bytes) else json.dumps(value).encode()
                r["value"] = base64.b64encode(raw).decode()
            out.append(r)
        path = directory / f"events-{n // per_file:03d}.json"
        path.write_text(json.dumps({
            "eventSource": "aws:kafka",
            "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/cdc/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
            "records": {"cdc-0": out}}))
        files.append(path)
    return files


@pytest.mark.parametrize("connector", ["postgres", "mysql"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_merges_a_debezium_table_with_its_payload_as_the_model_says(spark, tmp_path, table_type, connector):
    records, model = stream(connector)
    assert max(len(str(r[ORDERING[connector]])) for r in model.values()) == min(
        len(str(r[ORDERING[connector]])) for r in model.values())
    assert sum(1 for _, v in records if v is None) > 10, "deletes with tombstones in the stream"
    schema = tmp_path / "customers.avsc"
    schema.write_text(json.dumps(SCHEMA))
    config = table_config(tmp_path, table_type=table_type, props={
        "hudi.sink.value.format": "debezium",
        "hudi.sink.debezium.connector": connector,
        "hoodie.streamer.schemaprovider.source.schema.file": schema,
        "hoodie.datasource.write.precombine.field": ORDERING[connector],
        "hoodie.compact.inline.max.delta.commits": "3",
    })
    ingest(config, write_events(tmp_path / "events", records))
    table = tmp_path / "table"
    props = (table / ".hoodie" / "hoodie.properties").read_text()
    assert f"hoodie.compaction.payload.class={PAYLOADS[connector]}" in props
    if table_type == "MERGE_ON_READ":
        assert any(f.name.endswith(".commit") for f in (table / ".hoodie").iterdir()), "a compaction ran"
    columns = ["uuid", "city", "name", "amount", "_change_operation_type", ORDERING[connector]]
    df = spark_read(spark, type("T", (), {"uri": str(table)})()).select(*columns)
    got = rows_of_spark(df, drop=())
    assert not diff("spark", data_only(got), "model", data_only(list(model.values())))


SOURCE_FIELDS = {
    "postgres": [("version", "string"), ("connector", "string"), ("name", "string"), ("ts_ms", "long"),
                 ("snapshot", "string"), ("db", "string"), ("schema", "string"), ("table", "string"),
                 ("txId", ["null", "long"]), ("lsn", ["null", "long"]), ("xmin", ["null", "long"])],
    "mysql": [("version", "string"), ("connector", "string"), ("name", "string"), ("ts_ms", "long"),
              ("snapshot", "string"), ("db", "string"), ("table", "string"), ("server_id", "long"),
              ("gtid", ["null", "string"]), ("file", "string"), ("pos", "long"), ("row", "int"),
              ("thread", ["null", "long"]), ("query", ["null", "string"])],
}
SOURCE_NAMESPACE = {"postgres": "io.debezium.connector.postgresql", "mysql": "io.debezium.connector.mysql"}


def envelope_schema(connector, value_first):
    """Debezium's Envelope as the AvroConverter registers it; `value_first`: `[Value, "null"]` unions."""
    value = {"type": "record", "name": "Value", "fields": [
        *SCHEMA["fields"],
        {"name": "price", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 2,
                                            "connect.name": "org.apache.kafka.connect.data.Decimal"}],
         "default": None}]}
    source = {"type": "record", "name": "Source", "namespace": SOURCE_NAMESPACE[connector],
              "fields": [{"name": n, "type": t} for n, t in SOURCE_FIELDS[connector]]}
    before = [value, "null"] if value_first else ["null", value]
    after = ["Value", "null"] if value_first else ["null", "Value"]
    return {"type": "record", "name": "Envelope", "namespace": "db.inventory.customers",
            "connect.name": "db.inventory.customers.Envelope",
            "fields": [{"name": "before", "type": before}, {"name": "after", "type": after},
                       {"name": "source", "type": source}, {"name": "op", "type": "string"},
                       {"name": "ts_ms", "type": ["null", "long"], "default": None}]}


def price_of(amount):
    """A decimal(20, 2) beyond a double's 15-17 digits."""
    return decimal.Decimal(amount * 1_000_000_000_007 + 5).scaleb(-2)


def confluent_framed(schema, records, schema_id=1):
    """The stream's envelopes as Confluent-framed Avro under `schema` (tombstones stay None), each row image
    with its `price`."""
    import fastavro

    parsed = fastavro.parse_schema(json.loads(json.dumps(schema)))
    out = []
    for key, value in records:
        if value is None:
            out.append((key, None))
            continue
        datum = dict(value)
        for image in ("before", "after"):
            if datum[image] is not None:
                datum[image] = {**datum[image], "price": price_of(datum[image]["amount"])}
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        out.append((key, b"\x00" + struct.pack(">i", schema_id) + buf.getvalue()))
    return out


class StubRegistry:
    """tests/python/avro_registry.py serving `schemas` by id, the subject's latest version being id 1."""

    def __init__(self, directory, subject, schemas):
        (directory / "subjects").mkdir(parents=True)
        for sid, schema in schemas.items():
            (directory / f"{sid}.avsc").write_text(json.dumps(schema))
        (directory / "subjects" / subject).write_text("1")
        script = pathlib.Path(__file__).resolve().parents[1] / "python" / "avro_registry.py"
        self.process = subprocess.Popen([sys.executable, script, "serve", directory],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.mark.parametrize("connector,table_type", [("postgres", "COPY_ON_WRITE"), ("mysql", "MERGE_ON_READ")])
def test_spark_merges_a_registry_avro_debezium_table_as_the_model_says(spark, tmp_path, connector, table_type):
    records, model = stream(connector, seed=9)
    schema = envelope_schema(connector, value_first=table_type == "MERGE_ON_READ")
    subject = "db.inventory.customers-value"
    registry = StubRegistry(tmp_path / "registry", subject, {1: schema})
    try:
        config = table_config(tmp_path, table_type=table_type, props={
            "hudi.sink.value.format": "debezium",
            "hudi.sink.debezium.connector": connector,
            "hoodie.streamer.schemaprovider.source.schema.file": None,
            "hoodie.streamer.schemaprovider.registry.url":
                f"http://127.0.0.1:{registry.port}/subjects/{subject}/versions/latest",
            "hoodie.datasource.write.precombine.field": ORDERING[connector],
            "hoodie.compact.inline.max.delta.commits": "3",
        })
        ingest(config, write_events(tmp_path / "events", confluent_framed(schema, records)))
    finally:
        registry.close()
    table = tmp_path / "table"
    props = (table / ".hoodie" / "hoodie.properties").read_text()
    assert f"hoodie.compaction.payload.class={PAYLOADS[connector]}" in props
    if table_type == "MERGE_ON_READ":
        assert any(f.name.endswith(".commit") for f in (table / ".hoodie").iterdir()), "a compaction ran"
    columns = ["uuid", "city", "name", "amount", "price", "_change_operation_type", ORDERING[connector]]
    df = spark_read(spark, type("T", (), {"uri": str(table)})()).select(*columns)
    got = rows_of_spark(df, drop=())
    expected = [{**row, "price": ("dec", str(price_of(row["amount"])))} for row in model.values()]
    assert not diff("spark", data_only(got), "model", data_only(expected))
