//! Debezium JSON values with their Connect schema (the JsonConverter's `schemas.enable=true`) and no schema file:
//! the table is created from the first event's Connect schema and evolves when a column appears mid-stream;
//! Connect decimals (base64 of the unscaled value, or `decimal.format=NUMERIC` numbers), `MicroTimestamp`,
//! `Timestamp` and `Date` columns land as HoodieStreamer keeps them. Postgres and MySQL streams (snapshot reads,
//! creates, updates, deletes each followed by a tombstone, events re-sent after newer ones, a read without an
//! LSN, TOAST placeholders, a malformed decimal) go into copy-on-write and merge-on-read tables, partitioned
//! and not, and are read back with hudi-rs row for row against a model of the latest version per key. The events follow the shapes
//! of Debezium 2.7's documented events, built here field by field.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::common::*;
use crate::debezium_meta::{committed_fields, meta_columns};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Db {
    Postgres,
    MySql,
}

/// How decimals are written: base64 of the unscaled value (the JsonConverter's default) or JSON numbers
/// (`decimal.format=NUMERIC`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Decimals {
    Base64,
    Numeric,
}

/// What an event does to the model: the row after it (None: a delete) and its position (LSN, or binlog
/// file and position).
pub(super) type Effect = (Option<Map<String, Value>>, (i64, i64));

/// A record: key, value (None: a tombstone), and what it does to the model (row after it, or None for a
/// delete; its position: LSN, or binlog file and position).
pub(super) struct Event {
    pub(super) key: i64,
    pub(super) value: Option<Value>,
    pub(super) effect: Option<Effect>,
}

fn connect_field(name: &str, ty: &str, optional: bool) -> Value {
    json!({"field": name, "type": ty, "optional": optional})
}

/// The row's Connect fields; `phone` is the column added mid-stream.
fn row_fields(db: Db, phone: bool) -> Vec<Value> {
    let mut fields = vec![
        connect_field("id", "int32", false),
        connect_field("region", "string", false),
        connect_field("first_name", "string", true),
        connect_field("email", "string", true),
        json!({"field":"price","type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",
               "version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"}}),
        match db {
            Db::Postgres => json!({"field":"updated_at","type":"int64","optional":true,
                                   "name":"io.debezium.time.MicroTimestamp","version":1}),
            Db::MySql => json!({"field":"updated_at","type":"int64","optional":true,
                                "name":"io.debezium.time.Timestamp","version":1}),
        },
        json!({"field":"born","type":"int32","optional":true,"name":"io.debezium.time.Date","version":1}),
    ];
    if db == Db::Postgres {
        // A NUMERIC without scale, and a TIMESTAMPTZ.
        fields.push(json!({"field":"ratio","type":"struct","optional":true,
            "name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal",
            "fields":[{"field":"scale","type":"int32","optional":false},
                      {"field":"value","type":"bytes","optional":false}]}));
        fields.push(json!({"field":"seen_at","type":"string","optional":true,
            "name":"io.debezium.time.ZonedTimestamp","version":1}));
    }
    if phone {
        fields.push(connect_field("phone", "string", true));
    }
    fields
}

/// The envelope's Connect schema, as the JsonConverter writes it for the connector.
fn envelope_schema(db: Db, phone: bool) -> Value {
    let (prefix, source) = match db {
        Db::Postgres => (
            "pg.public.customers",
            json!({"type":"struct","optional":false,"name":"io.debezium.connector.postgresql.Source","fields":[
                connect_field("version","string",false), connect_field("connector","string",false),
                connect_field("name","string",false), connect_field("ts_ms","int64",false),
                {"field":"snapshot","type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,
                 "parameters":{"allowed":"true,last,false,incremental"},"default":"false"},
                connect_field("db","string",false), connect_field("sequence","string",true),
                connect_field("ts_us","int64",true), connect_field("ts_ns","int64",true),
                connect_field("schema","string",false), connect_field("table","string",false),
                connect_field("txId","int64",true), connect_field("lsn","int64",true),
                connect_field("xmin","int64",true)]}),
        ),
        Db::MySql => (
            "mysql1.inventory.customers",
            json!({"type":"struct","optional":false,"name":"io.debezium.connector.mysql.Source","fields":[
                connect_field("version","string",false), connect_field("connector","string",false),
                connect_field("name","string",false), connect_field("ts_ms","int64",false),
                {"field":"snapshot","type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,
                 "parameters":{"allowed":"true,last,false,incremental"},"default":"false"},
                connect_field("db","string",false), connect_field("sequence","string",true),
                connect_field("ts_us","int64",true), connect_field("ts_ns","int64",true),
                connect_field("table","string",true), connect_field("server_id","int64",false),
                connect_field("gtid","string",true), connect_field("file","string",false),
                connect_field("pos","int64",false), connect_field("row","int32",false),
                connect_field("thread","int64",true), connect_field("query","string",true)]}),
        ),
    };
    let image = |field: &str| {
        json!({"field":field,"type":"struct","optional":true,"name":format!("{prefix}.Value"),
               "fields":row_fields(db, phone)})
    };
    json!({"type":"struct","optional":false,"name":format!("{prefix}.Envelope"),"version":2,"fields":[
        image("before"), image("after"), {"field":"source", "type":"struct", "optional":false,
        "name":source["name"], "fields":source["fields"]},
        {"field":"transaction","type":"struct","optional":true,"name":"event.block","version":1,"fields":[
            connect_field("id","string",false), connect_field("total_order","int64",false),
            connect_field("data_collection_order","int64",false)]},
        connect_field("op","string",false), connect_field("ts_ms","int64",true),
        connect_field("ts_us","int64",true), connect_field("ts_ns","int64",true)]})
}

/// Base64 of the shortest big-endian two's complement bytes of `unscaled` (Connect's decimal encoding).
pub(super) fn base64_decimal(unscaled: i64) -> String {
    let bytes = unscaled.to_be_bytes();
    let mut start = 0;
    while start < 7 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    base64::engine::general_purpose::STANDARD.encode(&bytes[start..])
}

/// The lower-case hex of a base64 string's bytes (how hudi_read.py prints binary).
fn hex_of_base64(encoded: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.as_str().expect("base64 text"))
        .expect("base64");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `unscaled` / 100 as JSON number text (`decimal.format=NUMERIC`).
fn numeric_decimal(unscaled: i64) -> Value {
    let text = format!(
        "{}{}.{:02}",
        if unscaled < 0 { "-" } else { "" },
        unscaled.unsigned_abs() / 100,
        unscaled.unsigned_abs() % 100
    );
    serde_json::from_str(&text).expect("number")
}

/// The change stream: `(events, model rows by key)`.
fn stream(db: Db, decimals: Decimals) -> Vec<Event> {
    let mut seed: u64 = if db == Db::Postgres { 3 } else { 5 };
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut live: BTreeMap<i64, Map<String, Value>> = BTreeMap::new();
    let mut events: Vec<Event> = Vec::new();
    let (mut lsn, mut pos) = (24_023_100i64, 1_000i64);
    let mut ts = 1_718_000_000_000i64;
    for i in 0..90i64 {
        ts += 1000;
        lsn += 8 + next(50) as i64;
        pos += 1 + next(60) as i64;
        let phone = i >= 45;
        if i % 13 == 12 && events.len() > 6 {
            // A redelivery after newer events: re-send an earlier upsert, older than what the table holds.
            if let Some(e) = events
                .iter()
                .rev()
                .skip(5)
                .find(|e| matches!(e.effect, Some((Some(_), _))))
            {
                let again = Event {
                    key: e.key,
                    value: e.value.clone(),
                    effect: e.effect.clone(),
                };
                events.push(again);
                continue;
            }
        }
        let key = 1000 + next(16) as i64;
        let exists = live.contains_key(&key);
        let op = match (exists, next(10)) {
            (false, _) if i < 12 => "r",
            (false, _) => "c",
            (true, 0..=6) => "u",
            (true, _) => "d",
        };
        // The reference's own decimals first: 1.56 is "AJw=", 19.99 is "B88=".
        let unscaled: i64 = match i {
            0 => 156,
            1 => 1999,
            _ => (next(2_000_000_000) as i64 - 1_000_000_000) * if i % 3 == 0 { 9 } else { 1 },
        };
        let mut image = match op {
            "d" => live.get(&key).cloned().unwrap_or_default(),
            _ => {
                let updated = match db {
                    Db::Postgres => ts * 1000 + i,
                    Db::MySql => ts,
                };
                let region = ["eu", "us", "ap"][(key % 3) as usize];
                let mut row = json!({"id": key, "region": region,
                    "first_name": format!("name-{key}-{i}"),
                    "email": if next(4) == 0 { Value::Null } else { format!("c{key}@example.org").into() },
                    "price": match decimals {
                        Decimals::Base64 => base64_decimal(unscaled).into(),
                        Decimals::Numeric => numeric_decimal(unscaled),
                    },
                    "updated_at": updated, "born": 7000 + (key % 400)});
                if db == Db::Postgres {
                    row["ratio"] =
                        json!({"scale": 3 + key % 3, "value": base64_decimal(unscaled / 7)});
                    row["seen_at"] = format!("2024-06-10T06:13:{:02}.{i:06}Z", key % 60).into();
                }
                if phone {
                    row["phone"] = format!("+351-{i}").into();
                }
                row.as_object().cloned().unwrap_or_default()
            }
        };
        if op == "d" && phone && !image.contains_key("phone") {
            image.insert("phone".into(), Value::Null);
        }
        // An update leaving the TOASTed `first_name` out (Postgres): sent as the placeholder, stored as the
        // value before it.
        let mut sent = image.clone();
        let stored = live.get(&key).and_then(|r| r.get("first_name")).cloned();
        if let Some(stored) = stored.filter(|_| db == Db::Postgres && op == "u" && next(3) == 0) {
            sent.insert("first_name".into(), "__debezium_unavailable_value".into());
            image.insert("first_name".into(), stored);
        }
        let (value, mut row) = envelope(db, op, &sent, Some(lsn), pos, ts, phone);
        row.insert("first_name".into(), image["first_name"].clone());
        // The model reads decimals as hudi_read.py prints them: the unscaled value as text.
        if op != "d" {
            row.insert("price".into(), unscaled.to_string().into());
            if let Some(ratio) = row.get_mut("ratio") {
                ratio["value"] = hex_of_base64(&ratio["value"]).into();
            }
        }
        let position = match db {
            Db::Postgres => (lsn, 0),
            Db::MySql => (3, pos),
        };
        if op == "d" {
            live.remove(&key);
            events.push(Event {
                key,
                value: Some(value),
                effect: Some((None, position)),
            });
            events.push(Event {
                key,
                value: None,
                effect: None,
            });
        } else {
            live.insert(key, image);
            events.push(Event {
                key,
                value: Some(value),
                effect: Some((Some(row), position)),
            });
        }
    }
    if db == Db::Postgres {
        // An incremental-snapshot read without an LSN of a key never seen: inserted.
        ts += 1000;
        let image = json!({"id": 2000, "region": "eu", "first_name": "incremental", "email": null,
            "price": base64_decimal(-5), "updated_at": ts * 1000, "born": -3,
            "ratio": {"scale": 0, "value": base64_decimal(-129)}, "seen_at": null, "phone": null});
        let image = image.as_object().cloned().unwrap_or_default();
        let (value, mut row) = envelope(db, "r", &image, None, pos, ts, true);
        row.insert("price".into(), "-5".into());
        row.insert("ratio".into(), json!({"scale": 0, "value": "ff7f"}));
        events.push(Event {
            key: 2000,
            value: Some(value),
            effect: Some((Some(row), (-1, 0))),
        });
    }
    // A malformed decimal: a dead letter of stage decode, nothing else.
    let mut bad = json!({"id": 3000, "region": "eu", "first_name": "bad", "email": null,
        "price": "not base64!", "updated_at": ts, "born": 1, "phone": null});
    if decimals == Decimals::Numeric {
        bad["price"] = "12.5x".into();
    }
    let bad = bad.as_object().cloned().unwrap_or_default();
    let (value, _) = envelope(db, "c", &bad, Some(lsn + 1), pos + 1, ts + 1, true);
    events.push(Event {
        key: 3000,
        value: Some(value),
        effect: None,
    });
    events
}

/// One change event with its Connect schema, and the table row it writes (meta columns first).
fn envelope(
    db: Db,
    op: &str,
    image: &Map<String, Value>,
    lsn: Option<i64>,
    pos: i64,
    ts: i64,
    phone: bool,
) -> (Value, Map<String, Value>) {
    let mut row = Map::new();
    let mut meta = |k: &str, v: Value| {
        row.insert(k.to_string(), v);
    };
    meta("_change_operation_type", op.into());
    meta("_upstream_event_processed_ts_ms", (ts + 123).into());
    let source = match db {
        Db::Postgres => {
            let tx = lsn.map(|l| l / 1000);
            meta("db_shard_source_partition", "pg".into());
            meta("db_schema_source_partition", "public".into());
            meta("_event_origin_ts_ms", ts.into());
            meta("_event_tx_id", tx.into());
            meta("_event_lsn", lsn.into());
            meta("_event_xmin", Value::Null);
            json!({"version":"2.7.3.Final","connector":"postgresql","name":"pg","ts_ms":ts,
                "ts_us":ts * 1000,"ts_ns":ts * 1_000_000,
                "snapshot": if lsn.is_none() { "incremental" } else if op == "r" { "true" } else { "false" },
                "db":"shop","sequence":format!("[\"{}\",\"{}\"]", lsn.unwrap_or(0) - 9, lsn.unwrap_or(0)),
                "schema":"public","table":"customers","txId":tx,"lsn":lsn,"xmin":null})
        }
        Db::MySql => {
            meta("db_shard_source_partition", "mysql1".into());
            meta("_event_origin_ts_ms", ts.into());
            meta("_event_bin_file", "mysql-bin.000003".into());
            meta("_event_pos", pos.into());
            meta("_event_row", 0.into());
            meta("_event_seq", format!("000003.{pos}").into());
            json!({"version":"2.7.3.Final","connector":"mysql","name":"mysql1","ts_ms":ts,
                "ts_us":ts * 1000,"ts_ns":ts * 1_000_000,"snapshot": if op == "r" { "true" } else { "false" },
                "db":"inventory","sequence":null,"table":"customers","server_id":223344,"gtid":null,
                "file":"mysql-bin.000003","pos":pos,"row":0,"thread":7,"query":null})
        }
    };
    let (before, after) = match op {
        "d" => (Value::Object(image.clone()), Value::Null),
        _ => (Value::Null, Value::Object(image.clone())),
    };
    let payload = json!({"before":before,"after":after,"source":source,"transaction":null,"op":op,
        "ts_ms":ts + 123,"ts_us":(ts + 123) * 1000,"ts_ns":(ts + 123) * 1_000_000});
    for (k, v) in image {
        row.insert(k.clone(), v.clone());
    }
    (
        json!({"schema": envelope_schema(db, phone), "payload": payload}),
        row,
    )
}

/// The latest version per key by the payloads' order (a larger position wins, a tie the later event), every
/// column filled (rows written before `phone` existed read it as null).
pub(super) fn model(events: &[Event]) -> BTreeMap<String, Map<String, Value>> {
    let mut state: BTreeMap<i64, Effect> = BTreeMap::new();
    for e in events {
        let Some((row, pos)) = &e.effect else {
            continue;
        };
        if state.get(&e.key).is_none_or(|(_, current)| pos >= current) {
            state.insert(e.key, (row.clone(), *pos));
        }
    }
    state
        .into_iter()
        .filter_map(|(k, (row, _))| {
            row.map(|mut r| {
                r.entry("phone").or_insert(Value::Null);
                (k.to_string(), r)
            })
        })
        .collect()
}

/// Writes `events` as ESM event files of `per_file` records each.
pub(super) fn write_events(dir: &Path, events: &[Event], per_file: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let b64 = base64::engine::general_purpose::STANDARD;
    for (n, chunk) in events.chunks(per_file).enumerate() {
        let records: Vec<Value> = chunk
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let offset = n * per_file + i;
                let mut r = json!({"topic":"cdc","partition":0,"offset":offset,
                    "timestamp":1_718_000_000_000i64 + offset as i64,"timestampType":"CREATE_TIME",
                    "key":b64.encode(json!({"id": e.key}).to_string()),"headers":[]});
                if let Some(v) = &e.value {
                    r["value"] = b64.encode(v.to_string()).into();
                }
                r
            })
            .collect();
        let event = json!({"eventSource":"aws:kafka",
            "eventSourceArn":"arn:aws:kafka:eu-west-1:111122223333:cluster/cdc/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
            "records":{"cdc-0":records}});
        std::fs::write(dir.join(format!("events-{n:03}.json")), event.to_string()).expect("write");
    }
}

/// The table's rows read by hudi-rs (first file group reader: it merges by the ordering field), by `id`,
/// without Hudi's meta columns.
pub(super) fn read_rows(table: &Path) -> BTreeMap<String, Map<String, Value>> {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--option", "hoodie.read.file.group.reader.version=1"])
        .arg(table)
        .arg("snapshot")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("reader prints JSON");
    let mut rows = BTreeMap::new();
    for row in json["rows"].as_array().expect("rows") {
        let mut row = row.as_object().expect("row").clone();
        row.retain(|k, _| !k.starts_with("_hoodie_"));
        let key = row["id"].to_string();
        assert!(rows.insert(key.clone(), row).is_none(), "key {key} twice");
    }
    rows
}

/// The table's columns as HoodieStreamer's Debezium source would have them: its meta columns (each
/// `["null", T]`), then the row's columns mapped from the Connect schema.
fn expected_fields(db: Db) -> Vec<(String, String)> {
    let meta = meta_columns(match db {
        Db::Postgres => "postgres",
        Db::MySql => "mysql",
    });
    let mut fields: Vec<(String, String)> = meta
        .iter()
        .map(|(n, t)| (n.to_string(), format!(r#"["null","{t}"]"#)))
        .collect();
    let namespace = match db {
        Db::Postgres => "pg.public.customers.Value",
        Db::MySql => "mysql1.inventory.customers.Value",
    };
    for (n, t) in [
        ("id", r#""int""#),
        ("region", r#""string""#),
        ("first_name", r#"["null","string"]"#),
        ("email", r#"["null","string"]"#),
        (
            "price",
            // Spark's form of a decimal(10,2), as Spark's Hudi writer stores it.
            r#"["null",{"type":"fixed","name":"fixed","namespace":"NS.price","size":5,"logicalType":"decimal","precision":10,"scale":2}]"#,
        ),
        ("updated_at", r#"["null","long"]"#),
        ("born", r#"["null","int"]"#),
    ] {
        fields.push((n.to_string(), t.replace("NS", namespace)));
    }
    if db == Db::Postgres {
        fields.push((
            "ratio".into(),
            r#"["null",{"type":"record","name":"ratio","fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}]}]"#.into(),
        ));
        fields.push(("seen_at".into(), r#"["null","string"]"#.into()));
    }
    fields.push(("phone".into(), r#"["null","string"]"#.into()));
    fields
}

#[test]
fn connect_schema_values_create_and_evolve_the_table_with_exact_decimals() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (db, decimals, table_type, partition) in [
        (Db::Postgres, Decimals::Base64, "COPY_ON_WRITE", "region"),
        (Db::Postgres, Decimals::Base64, "COPY_ON_WRITE", ""),
        (Db::Postgres, Decimals::Numeric, "MERGE_ON_READ", "region"),
        (Db::Postgres, Decimals::Base64, "MERGE_ON_READ", ""),
        (Db::MySql, Decimals::Base64, "COPY_ON_WRITE", "region"),
        (Db::MySql, Decimals::Numeric, "COPY_ON_WRITE", ""),
        (Db::MySql, Decimals::Base64, "MERGE_ON_READ", "region"),
        (Db::MySql, Decimals::Numeric, "MERGE_ON_READ", ""),
    ] {
        let case = format!("{db:?} {decimals:?} {table_type} partition={partition:?}");
        let mut events = stream(db, decimals);
        // A Connect schema without an Avro form (a map with integer keys): its value is a dead letter of stage
        // schema, and the table keeps its columns.
        let mut odd = events[0].value.clone().expect("a value");
        for image in ["before", "after"] {
            if let Some(fields) = odd["schema"]["fields"]
                .as_array_mut()
                .and_then(|f| f.iter_mut().find(|f| f["field"] == image))
                .and_then(|f| f["fields"].as_array_mut())
            {
                fields.push(json!({"field":"scores","type":"map","optional":true,
                    "keys":{"type":"int32","optional":false},"values":{"type":"string","optional":true}}));
            }
        }
        odd["payload"]["after"]["id"] = 3001.into();
        events.push(Event {
            key: 3001,
            value: Some(odd),
            effect: None,
        });
        let expected = model(&events);
        assert!(expected.len() > 8, "{case}: a model with rows");
        assert!(
            events
                .iter()
                .filter(|e| matches!(e.effect, Some((None, _))))
                .count()
                > 3,
            "{case}: deletes in the stream"
        );
        let event_dir = dir
            .path()
            .join(format!("{db:?}-{table_type}-{partition}-events"));
        write_events(&event_dir, &events, 20);
        let table = dir.path().join(format!("{db:?}-{table_type}-{partition}"));
        let connector = match db {
            Db::Postgres => "postgres",
            Db::MySql => "mysql",
        };
        let partition = format!("hoodie.datasource.write.partitionpath.field={partition}");
        let sets = [
            "hudi.sink.value.format=debezium",
            &format!("hudi.sink.debezium.connector={connector}"),
            "hudi.sink.debezium.replica.identity=full",
            "hoodie.streamer.schemaprovider.source.schema.file=",
            "hoodie.datasource.write.recordkey.field=id",
            &partition,
            "hoodie.datasource.write.precombine.field=",
            // The deletes carry whole rows (partitioned by `region`, keyed by `id`).
            "hudi.sink.debezium.replica.identity=full",
        ];
        let out = ingest_one_instant_per_file(&table, &event_dir, table_type, &sets);
        assert_eq!(number_after(&out, "dead-lettered "), 2, "{case}: {out}");
        assert_eq!(dead_letter_stages(&table), ["decode", "schema"], "{case}");
        if table_type == "MERGE_ON_READ" {
            // hudi-rs merges a log written after the new column into a base file written before it in the
            // base file's columns (the new column reads null): compact every slice first, so that it reads
            // what the sink's compaction merged. Spark reads the uncompacted table in
            // tests/interop/test_debezium.py.
            let table_arg = table.display().to_string();
            ok(&[
                "services",
                "--table",
                &table_arg,
                "--set",
                "hoodie.compact.inline.max.delta.commits=1",
                "--set",
                "hudi.sink.compaction.max.file.groups=100",
            ]);
        }
        assert_rows(&read_rows(&table), &expected, &case);
        let committed: Vec<(String, String)> = committed_fields(&table)
            .into_iter()
            .map(|(n, t)| (n, t.to_string()))
            .collect();
        assert_eq!(committed, expected_fields(db), "{case}");
        // The whole stream again (a redelivery after the commits): the checkpoint skips it all.
        let again = ingest_one_instant_per_file(&table, &event_dir, table_type, &sets);
        assert_eq!(number_after(&again, "dead-lettered "), 0, "{case}: {again}");
        assert_rows(
            &read_rows(&table),
            &expected,
            &format!("{case}: after the redelivery"),
        );
    }
}

#[test]
fn a_schema_file_decimal_column_reads_connect_decimals_without_their_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = dir.path().join("customers.avsc");
    std::fs::write(
        &schema,
        r#"{"type":"record","name":"Value","namespace":"pg.public.customers","fields":[
            {"name":"id","type":"int"},{"name":"region","type":"string"},
            {"name":"first_name","type":["null","string"],"default":null},
            {"name":"email","type":["null","string"],"default":null},
            {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
            {"name":"updated_at","type":["null","long"],"default":null},
            {"name":"born","type":["null","int"],"default":null},
            {"name":"ratio","type":["null",{"type":"record","name":"ratio","fields":[
                {"name":"scale","type":"int"},{"name":"value","type":"bytes"}]}],"default":null},
            {"name":"seen_at","type":["null","string"],"default":null},
            {"name":"phone","type":["null","string"],"default":null}]}"#,
    )
    .expect("schema");
    // The same stream with schemas.enable=false: the payloads alone.
    let mut events = stream(Db::Postgres, Decimals::Base64);
    for e in &mut events {
        if let Some(v) = &mut e.value {
            *v = v["payload"].clone();
        }
    }
    let expected = model(&events);
    let event_dir = dir.path().join("events");
    write_events(&event_dir, &events, 25);
    let table = dir.path().join("table");
    let out = ingest_one_instant_per_file(
        &table,
        &event_dir,
        "COPY_ON_WRITE",
        &[
            "hudi.sink.value.format=debezium",
            "hudi.sink.debezium.connector=postgres",
            "hudi.sink.debezium.replica.identity=full",
            &format!(
                "hoodie.streamer.schemaprovider.source.schema.file={}",
                schema.display()
            ),
            "hoodie.datasource.write.recordkey.field=id",
            "hoodie.datasource.write.partitionpath.field=region",
            "hoodie.datasource.write.precombine.field=",
            // The deletes carry whole rows (partitioned by `region`, keyed by `id`).
            "hudi.sink.debezium.replica.identity=full",
        ],
    );
    assert_eq!(number_after(&out, "dead-lettered "), 1, "{out}");
    assert_eq!(dead_letter_stages(&table), ["decode"]);
    assert_rows(&read_rows(&table), &expected, "schema file");
}

/// Row-exact comparison, naming the keys that differ.
pub(super) fn assert_rows(
    actual: &BTreeMap<String, Map<String, Value>>,
    expected: &BTreeMap<String, Map<String, Value>>,
    case: &str,
) {
    let differ: Vec<String> = actual
        .keys()
        .chain(expected.keys())
        .filter(|k| actual.get(*k) != expected.get(*k))
        .map(|k| format!("{k}: read {:?}, model {:?}", actual.get(k), expected.get(k)))
        .collect();
    assert!(differ.is_empty(), "{case}:\n{}", differ.join("\n"));
}

#[test]
fn a_connect_schema_change_hudi_refuses_fails_the_invocation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut events: Vec<Event> = stream(Db::Postgres, Decimals::Base64)
        .into_iter()
        .take(10)
        .collect();
    // The column's scale changes (numeric(10,2) → numeric(10,3)): Hudi refuses a decimal of another scale.
    let mut changed = events[0].value.clone().expect("a value");
    for image in ["before", "after"] {
        let fields = changed["schema"]["fields"]
            .as_array_mut()
            .and_then(|f| f.iter_mut().find(|f| f["field"] == image))
            .and_then(|f| f["fields"].as_array_mut())
            .expect("row fields");
        for f in fields.iter_mut().filter(|f| f["field"] == "price") {
            f["parameters"]["scale"] = "3".into();
        }
    }
    changed["payload"]["source"]["lsn"] = 99_999_999.into();
    events.push(Event {
        key: events[0].key,
        value: Some(changed),
        effect: None,
    });
    let event_dir = dir.path().join("events");
    write_events(&event_dir, &events, 10);
    let table = dir.path().join("table");
    let base = format!("hoodie.base.path={}", table.display());
    let events_arg = event_dir.display().to_string();
    let out = hudi_sink(&[
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &base,
        "--set",
        "hudi.sink.value.format=debezium",
        "--set",
        "hudi.sink.debezium.connector=postgres",
        "--set",
        "hudi.sink.debezium.replica.identity=full",
        "--set",
        "hoodie.streamer.schemaprovider.source.schema.file=",
        "--set",
        "hoodie.datasource.write.recordkey.field=id",
        "--set",
        "hoodie.datasource.write.partitionpath.field=region",
        "--set",
        "hoodie.datasource.write.precombine.field=",
        // The deletes carry whole rows (partitioned by `region`, keyed by `id`).
        "--set",
        "hudi.sink.debezium.replica.identity=full",
        "--commit-interval-ms",
        "0",
        &events_arg,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the second batch must fail: {stderr}"
    );
    assert!(
        stderr.contains("schema change refused at field `price`"),
        "{stderr}"
    );
    // The first batch was committed; the refused one wrote nothing.
    assert_eq!(completed_commits(&table).len(), 1, "{stderr}");
}
