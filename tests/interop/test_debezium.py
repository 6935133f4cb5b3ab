"""Spark (Hudi 0.15.0) reads a Debezium change stream (PostgreSQL, MySQL) the sink wrote as HoodieStreamer's
Debezium sources would: the snapshot, merged by Spark with the table's payload (`PostgresDebeziumAvroPayload`,
`MySqlDebeziumAvroPayload`), equals the stream's model (the event with the highest LSN, or binlog position, per
key; a delete removes the key), on copy-on-write and on merge-on-read with compactions running. The stream has
creates, updates, deletes with their tombstones, a key's events replayed from an older one on after newer ones
and single old events re-sent out of order (lower positions, which the payload ignores, also right before an
update that leaves a TOASTed column out), updates that move a row to another partition (`city`: the
before image names the one it leaves), and Postgres updates that leave a TOASTed column out (the placeholder,
which never replaces the stored value). MySQL positions keep four digits: merge-on-read readers compare
`_event_seq` as text (docs/cdc.md). The same streams also arrive as registry-framed Avro (the AvroConverter's
Envelope, written by fastavro, its schema served by a stub Confluent registry), with a decimal column beyond a
double's precision.
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
TOAST = "__debezium_unavailable_value"


def stream(connector, seed=5, events=240, keys=40):
    """Kafka records [(key, value or None)] and the model {uuid: row with the columns Spark shows}."""
    rng = random.Random(seed)
    live, model, sent, lsn = {}, {}, [], 1000
    for i in range(events):
        lsn += rng.randint(10, 35)  # four digits throughout: 1,010 to at most 9,400
        key = f"c-{rng.randrange(keys):03d}"
        city = live[key]["city"] if key in live else CITIES[int(key[2:]) % 3]
        if key in live and rng.random() < 0.25:
            # The row moves to another partition: its before image names the partition it leaves.
            city = rng.choice([c for c in CITIES if c != city])
        image = {"uuid": key, "city": city, "name": f"n{i}", "amount": i}
        if key in live and rng.random() < 0.2:
            op, before, after = "d", live.pop(key), None
            model.pop(key, None)
        else:
            # Updates carry the whole before row (REPLICA IDENTITY FULL; MySQL's binlog_row_image=FULL).
            op, before, after = ("u" if key in live else "c"), live.get(key), image
            if connector == "postgres" and op == "u" and rng.random() < 0.3:
                # An unchanged TOASTed `name`: the placeholder never replaces the stored value.
                after = {**image, "name": TOAST}
                image = {**image, "name": live[key]["name"]}
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
        if after is not None and after["name"] == TOAST and rng.random() < 0.5:
            # An old event of the key re-sent alone just before an update that leaves `name` out: the name
            # it takes is the latest one by position, not the re-sent one.
            old = [v for k, v in sent if k == key and v is not None and v["op"] != "d" and v["after"]["city"] == city]
            if len(old) > 1:
                sent.append((key, old[0]))
        sent.append((key, envelope))
        if op == "d":
            sent.append((key, None))  # the tombstone that follows a delete
        else:
            model[key] = {**image, "_change_operation_type": op, ORDERING[connector]: position}
        # Now and then a live key's events again from an older one on, in order, after newer ones (Debezium
        # replays from its last committed offset after a restart): their lower LSNs lose.
        if i > 20 and rng.random() < 0.1:
            start = rng.randrange(len(sent) - 5)
            old_key = sent[start][0]
            if old_key in live:
                sent.extend([(k, v) for k, v in sent[start:] if k == old_key])
        # Now and then one old event of a live key alone, out of order (a producer re-sending it), of the
        # partition the key is in (docs/cdc.md: a re-sent row of a partition the key left stays there): its
        # lower position loses.
        if i > 20 and rng.random() < 0.15:
            old_key, old = sent[rng.randrange(len(sent) - 3)]
            if (old_key in live and old is not None and old["op"] != "d"
                    and old["after"]["city"] == live[old_key]["city"]):
                sent.append((old_key, old))
    return sent, model


def resent_before_placeholders(records, per_file=25):
    """Postgres updates that leave `name` out and follow, in their file (one batch), a re-sent event of their
    key that is older than the key's latest version before them."""
    count, latest = 0, {}  # latest: each key's highest position so far
    for n in range(0, len(records), per_file):
        resent = set()
        for key, value in records[n:n + per_file]:
            if value is None:
                continue
            lsn = value["source"].get("lsn") or 0
            if lsn < latest.get(key, 0):
                resent.add(key)
                continue
            if key in resent and (value["after"] or {}).get("name") == TOAST:
                count += 1
            resent.discard(key)
            latest[key] = lsn
    return count


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
    assert sum(1 for _, v in records if v and v["op"] == "u" and v["before"]["city"] != v["after"]["city"]) > 10, \
        "rows moved to another partition"
    if connector == "postgres":
        assert sum(1 for _, v in records if v and (v["after"] or {}).get("name") == TOAST) > 10, "placeholders"
        assert resent_before_placeholders(records) >= 3, "placeholders after a re-sent old event in their batch"
    schema = tmp_path / "customers.avsc"
    schema.write_text(json.dumps(SCHEMA))
    config = table_config(tmp_path, table_type=table_type, props={
        "hudi.sink.value.format": "debezium",
        "hudi.sink.debezium.connector": connector,
        "hudi.sink.debezium.replica.identity": "full",  # deletes carry whole rows; partitioned by city
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


def connect_field(field, type_, optional, **extra):
    return {"field": field, "type": type_, "optional": optional, **extra}


def connect_schema(connector, phone):
    """The envelope's Connect schema as the JsonConverter writes it (`schemas.enable=true`); `phone` is the
    column the source table gains mid-stream."""
    prefix = "pg.public.customers" if connector == "postgres" else "mysql1.inventory.customers"
    row = [connect_field("uuid", "string", False), connect_field("city", "string", False),
           connect_field("name", "string", True), connect_field("amount", "int64", True),
           connect_field("price", "bytes", True, name="org.apache.kafka.connect.data.Decimal", version=1,
                         parameters={"scale": "2", "connect.decimal.precision": "12"}),
           connect_field("updated_at", "int64", True, name="io.debezium.time.MicroTimestamp", version=1),
           connect_field("born", "int32", True, name="io.debezium.time.Date", version=1),
           connect_field("ratio", "struct", True, name="io.debezium.data.VariableScaleDecimal", version=1,
                         fields=[connect_field("scale", "int32", False), connect_field("value", "bytes", False)])]
    if phone:
        row.append(connect_field("phone", "string", True))
    if connector == "postgres":
        source = [connect_field(n, t, o) for n, t, o in [
            ("version", "string", False), ("connector", "string", False), ("name", "string", False),
            ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
            ("schema", "string", False), ("table", "string", False), ("txId", "int64", True),
            ("lsn", "int64", True), ("xmin", "int64", True)]]
    else:
        source = [connect_field(n, t, o) for n, t, o in [
            ("version", "string", False), ("connector", "string", False), ("name", "string", False),
            ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
            ("table", "string", True), ("server_id", "int64", False), ("gtid", "string", True),
            ("file", "string", False), ("pos", "int64", False), ("row", "int32", False),
            ("thread", "int64", True), ("query", "string", True)]]
    image = lambda f: {"field": f, "type": "struct", "optional": True, "name": f"{prefix}.Value", "fields": row}
    return {"type": "struct", "optional": False, "name": f"{prefix}.Envelope", "version": 2, "fields": [
        image("before"), image("after"),
        {"field": "source", "type": "struct", "optional": False, "fields": source},
        connect_field("op", "string", False), connect_field("ts_ms", "int64", True)]}


def connect_decimal(unscaled):
    """Base64 of the big-endian two's complement of `unscaled`, the JsonConverter's decimal encoding."""
    size = (unscaled.bit_length() + 8) // 8
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def connect_stream(connector, seed=9):
    """The stream of `stream` with the Connect schema on every value, decimal, MicroTimestamp and Date columns,
    and a column added halfway; the model with the columns as Spark shows them."""
    import decimal

    records, stored = stream(connector, seed=seed)
    rng = random.Random(seed)
    extra, out, model = {}, [], {}
    for n, (key, value) in enumerate(records):
        if value is None:
            out.append((key, None))
            continue
        phone = n >= len(records) // 2
        for image in ("before", "after"):
            row = value[image]
            if row is None:
                continue
            if id(row) not in extra:
                unscaled = rng.randrange(-10**11, 10**11)
                # (`updated_at` tells an after image's values apart from a before image's in the model below.)
                extra[id(row)] = {"price": unscaled, "ratio": (rng.randrange(0, 6), rng.randrange(-10**20, 10**20)),
                                  "updated_at": 1_718_000_000_000_000 + n * 1001 + (image == "before"),
                                  "born": rng.randrange(-3000, 20000), "phone": f"+351-{n}" if phone else None}
        def image_of(row, phone=phone):
            if row is None:
                return None
            e = extra[id(row)]
            full = {**row, "price": connect_decimal(e["price"]), "updated_at": e["updated_at"], "born": e["born"],
                    "ratio": {"scale": e["ratio"][0], "value": connect_decimal(e["ratio"][1])}}
            if phone:
                full["phone"] = e["phone"]
            return full
        payload = {**value, "before": image_of(value["before"]), "after": image_of(value["after"])}
        out.append((key, {"schema": connect_schema(connector, phone), "payload": payload}))
    # The model: replay with the payload's order (positions only grow in `stream`, re-sent events are older).
    best = {}
    for key, value in out:
        if value is None:
            continue
        p = value["payload"]
        position = p["source"]["lsn"] if connector == "postgres" else p["source"]["pos"]
        if key in best and best[key][0] > position:
            continue
        if p["op"] == "d":
            best[key] = (position, None)
            continue
        after = p["after"]
        e = extra[next(i for i in extra if extra[i]["updated_at"] == after["updated_at"])]
        row = {k: after[k] for k in ("uuid", "city", "name", "amount", "updated_at", "born")}
        row["price"] = ("dec", str(decimal.Decimal(e["price"]).scaleb(-2)))
        ratio = e["ratio"][1]
        row["ratio"] = {"scale": e["ratio"][0],
                        "value": ("bin", ratio.to_bytes((ratio.bit_length() + 8) // 8, "big", signed=True).hex())}
        row["phone"] = after.get("phone")
        row["_change_operation_type"] = p["op"]
        row[ORDERING[connector]] = position if connector == "postgres" else f"000007.{position}"
        best[key] = (position, row)
    # A TOAST placeholder keeps the stored name: the stream's own model has it.
    model = {k: {**r, "name": stored[k]["name"]} for k, (_, r) in best.items() if r is not None}
    return out, model


@pytest.mark.parametrize("connector,table_type", [
    ("postgres", "COPY_ON_WRITE"), ("postgres", "MERGE_ON_READ"), ("mysql", "MERGE_ON_READ")])
def test_spark_reads_a_table_made_from_connect_schemas_with_a_new_column_and_decimals(
        spark, tmp_path, connector, table_type):
    records, model = connect_stream(connector)
    assert sum(1 for _, v in records if v is None) > 10, "deletes with tombstones in the stream"
    assert any(r["phone"] for r in model.values()) and any(r["phone"] is None for r in model.values())
    config = table_config(tmp_path, table_type=table_type, props={
        "hudi.sink.value.format": "debezium",
        "hudi.sink.debezium.connector": connector,
        "hudi.sink.debezium.replica.identity": "full",
        # No schema file: the table is created from the first value's Connect schema.
        "hoodie.streamer.schemaprovider.source.schema.file": None,
        "hoodie.datasource.write.precombine.field": ORDERING[connector],
        "hoodie.compact.inline.max.delta.commits": "3",
    })
    ingest(config, write_events(tmp_path / "events", records))
    table = tmp_path / "table"
    columns = ["uuid", "city", "name", "amount", "price", "updated_at", "born", "ratio", "phone",
               "_change_operation_type", ORDERING[connector]]
    df = spark_read(spark, type("T", (), {"uri": str(table)})())
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert (fields["price"], fields["updated_at"], fields["born"], fields["ratio"], fields["phone"]) == (
        "decimal(12,2)", "bigint", "int", "struct<scale:int,value:binary>", "string")
    got = rows_of_spark(df.select(*columns), drop=())
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
        "hudi.sink.debezium.replica.identity": "full",
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
