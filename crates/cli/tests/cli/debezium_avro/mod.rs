//! `hudi.sink.value.format=debezium` with registry-framed Avro values end to end: Postgres- and MySQL-style
//! change streams written by fastavro under Debezium's Avro Envelope schemas (and ExtractNewRecordState's flat
//! record), Confluent-framed, their schemas served by the stub registry. Snapshot reads, creates, updates,
//! deletes each followed by a tombstone, events re-sent after newer ones, a redelivered batch, an
//! incremental-snapshot read without an LSN, TOAST placeholders (Postgres), a second schema version with a
//! new nullable column (both versions in one batch), `before`/`after` unions in both branch orders, decimals beyond a double's
//! precision and Debezium's temporal ints and longs; into copy-on-write and merge-on-read tables, partitioned
//! and not, read back with hudi-rs and compared row for row with a model of the payloads' ordering rules.

mod registry;
mod schemas;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::common::*;
use crate::debezium_meta::{assert_meta_columns, city, extracted, Db, Lcg, Position};

use registry::{encode, StubRegistry};
use schemas::{envelope_schema, extracted_schema, namespace};

/// The registry ids of one connector's writer schemas.
const V1: i32 = 1;
const V2: i32 = 2;
const EXTRACTED: i32 = 3;

/// One Kafka record of the stream.
#[derive(Clone, Debug)]
struct Event {
    key: String,
    /// The writer schema id and the datum as fastavro takes it (None: a tombstone).
    value: Option<(i32, Value)>,
    /// What the event does to the model: the row the table holds after it (None: a delete), and its position.
    effect: Option<(Option<Map<String, Value>>, Position)>,
}

/// A decimal(·, 4)'s text from its unscaled value.
fn decimal_text(unscaled: i128) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let abs = unscaled.unsigned_abs();
    format!("{sign}{}.{:04}", abs / 10_000, abs % 10_000)
}

/// One change event's datum under writer schema `id`, and the row (meta columns included) it writes, as
/// hudi_read.py renders it (the decimal as its unscaled integer's text).
fn render(
    db: Db,
    id: i32,
    op: &str,
    image: &Map<String, Value>,
    pos: Position,
    ts: i64,
) -> (Value, Map<String, Value>) {
    let mut row = Map::new();
    let mut meta = |k: &str, v: Value| {
        row.insert(k.to_string(), v);
    };
    // The image as fastavro takes it: the decimal as text, `note` only in version 2.
    let mut datum_image = image.clone();
    if let Some(unscaled) = image.get("amount").and_then(Value::as_str) {
        let unscaled: i128 = unscaled.parse().expect("unscaled");
        datum_image.insert("amount".into(), decimal_text(unscaled).into());
    }
    if id != V2 {
        datum_image.remove("note");
    }
    let datum = if id == EXTRACTED {
        Value::Object(extracted(db, pos, op, ts, datum_image, &mut meta))
    } else {
        meta("_change_operation_type", op.into());
        meta("_upstream_event_processed_ts_ms", ts.into());
        let source = match (db, pos) {
            (Db::Postgres, Position::Lsn(lsn)) => {
                meta("db_shard_source_partition", "pg".into());
                meta("db_schema_source_partition", "public".into());
                meta("_event_origin_ts_ms", (ts - 7).into());
                let tx = lsn.map(|l| l / 10);
                meta("_event_tx_id", tx.into());
                meta("_event_lsn", lsn.into());
                meta("_event_xmin", Value::Null);
                json!({"version":"2.7.3.Final","connector":"postgresql","name":"pg","ts_ms":ts - 7,
                    "snapshot":if lsn.is_some() {"false"} else {"incremental"},"db":"shop",
                    "sequence":null,"ts_us":(ts - 7) * 1000,"ts_ns":null,"schema":"public",
                    "table":"customers","txId":tx,"lsn":lsn,"xmin":null})
            }
            (_, Position::Binlog(file, p)) => {
                meta("db_shard_source_partition", "mysql1".into());
                meta("_event_origin_ts_ms", (ts - 7).into());
                meta("_event_bin_file", format!("mysql-bin.{file:06}").into());
                meta("_event_pos", p.into());
                meta("_event_row", 0.into());
                meta("_event_seq", format!("{file:06}.{p}").into());
                json!({"version":"2.7.3.Final","connector":"mysql","name":"mysql1","ts_ms":ts - 7,
                    "snapshot":"false","db":"inventory","sequence":null,"ts_us":null,"ts_ns":null,
                    "table":"customers","server_id":223344,"gtid":null,
                    "file":format!("mysql-bin.{file:06}"),"pos":p,"row":0,"thread":7,"query":null})
            }
            _ => unreachable!("position of another connector"),
        };
        let (before, after) = match op {
            "d" => (Value::Object(datum_image), Value::Null),
            _ => (Value::Null, Value::Object(datum_image)),
        };
        let transaction = match pos {
            Position::Lsn(Some(lsn)) => {
                json!({"id":format!("{}:{lsn}", lsn / 10),"total_order":1,"data_collection_order":1})
            }
            _ => Value::Null,
        };
        json!({"before":before,"after":after,"source":source,"transaction":transaction,"op":op,
            "ts_ms":ts,"ts_us":ts * 1000,"ts_ns":null})
    };
    for (k, v) in image {
        row.insert(k.clone(), v.clone());
    }
    if id != V2 {
        row.insert("note".into(), Value::Null);
    }
    (datum, row)
}

/// The placeholder Debezium writes for an unchanged TOASTed value (Postgres, `REPLICA IDENTITY DEFAULT`).
const TOAST: &str = "__debezium_unavailable_value";

/// The change stream of `db` in Kafka order, with each event's effect on the model. Version 2 of the
/// Envelope appears from the middle on, mixed with version 1 and the extracted form. Postgres updates of a
/// named row often leave the TOASTed `name` out (the placeholder): the model keeps the value before it.
fn stream(db: Db, wide: bool) -> Vec<Event> {
    let mut rng = Lcg(match db {
        Db::Postgres => 17,
        Db::MySql => 23,
    });
    let mut live: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    let mut sent: Vec<Event> = Vec::new();
    let first_pos = if wide { 4 } else { 1_000 };
    let (mut lsn, mut file, mut pos) = (1_000i64, 9u32, first_pos);
    let mut ts = 1_718_000_000_000i64;
    for i in 0..140 {
        ts += 1000;
        lsn += 10 + rng.next(90) as i64;
        pos += 1 + rng.next(400) as i64;
        if pos > 9_000 {
            file += 1;
            pos = first_pos;
        }
        let p = match db {
            Db::Postgres => Position::Lsn(Some(lsn)),
            Db::MySql => Position::Binlog(file, pos),
        };
        if i % 11 == 10 {
            // Re-sent after newer events (a connector restart): an older upsert of a live key, ignored.
            let stale: Vec<&Event> = sent
                .iter()
                .filter(|e| {
                    e.value.is_some()
                        && matches!(&e.effect, Some((Some(_), _)))
                        && live.contains_key(&key_index(&e.key))
                })
                .collect();
            if let Some(e) = stale.get(rng.next(stale.len().max(1) as u64) as usize) {
                let again = (*e).clone();
                sent.push(again);
                continue;
            }
        }
        let id = match (i < 70, rng.next(4)) {
            (_, 0) => EXTRACTED,
            (false, 1 | 2) => V2,
            _ => V1,
        };
        let key = rng.next(20) as usize;
        let uuid = format!("c{key:03}");
        let op = match (live.contains_key(&key), rng.next(10)) {
            (false, _) if i < 20 => "r",
            (false, _) => "c",
            (true, 0..=6) => "u",
            (true, _) => "d",
        };
        let image: Map<String, Value> = match op {
            "d" => live.get(&key).cloned().unwrap_or_default(),
            _ => {
                let name = match rng.next(5) {
                    0 => Value::Null,
                    n => format!("name-{key}-{n}-{i}").into(),
                };
                // Beyond a double's 15–17 digits, and negative too.
                let unscaled: i128 = (i as i128 * 7_919 - 300_000) * 1_000_000_000_007;
                let note = match id {
                    V2 => format!("note-{i}").into(),
                    _ => Value::Null,
                };
                json!({"uuid":uuid,"city":city(key),"name":name,"amount":unscaled.to_string(),
                       "updated_at":ts * 1000,"born":7_000 + i as i64,"note":note})
                .as_object()
                .cloned()
                .unwrap_or_default()
            }
        };
        // An update leaving the TOASTed name out (Postgres): sent as the placeholder, stored as the name
        // before it.
        let stored_name = live
            .get(&key)
            .and_then(|r| r.get("name"))
            .filter(|n| n.is_string())
            .cloned();
        let mut sent_image = image.clone();
        let mut image = image;
        let toast = match stored_name {
            Some(name) if db == Db::Postgres && op == "u" && rng.next(3) == 0 => {
                sent_image.insert("name".into(), TOAST.into());
                image.insert("name".into(), name);
                true
            }
            _ => false,
        };
        let (datum, mut row) = render(db, id, op, &sent_image, p, ts);
        if toast {
            row.insert("name".into(), image["name"].clone());
        }
        if op == "d" {
            live.remove(&key);
            sent.push(Event {
                key: uuid.clone(),
                value: Some((id, datum)),
                effect: Some((None, p)),
            });
            sent.push(Event {
                key: uuid,
                value: None,
                effect: None,
            });
        } else {
            live.insert(key, image);
            sent.push(Event {
                key: uuid,
                value: Some((id, datum)),
                effect: Some((Some(row), p)),
            });
        }
    }
    if db == Db::Postgres {
        // Incremental-snapshot reads without an LSN: a key never seen (inserted), a live key (ignored).
        for key in [90usize, *live.keys().next().expect("a live key")] {
            ts += 1000;
            let image = json!({"uuid":format!("c{key:03}"),"city":city(key),"name":"incremental",
                "amount":"-1","updated_at":ts * 1000,"born":null,"note":null});
            let image = image.as_object().cloned().unwrap_or_default();
            let (datum, row) = render(db, V1, "r", &image, Position::Lsn(None), ts);
            sent.push(Event {
                key: format!("c{key:03}"),
                value: Some((V1, datum)),
                effect: Some((Some(row), Position::Lsn(None))),
            });
        }
    }
    if db == Db::MySql && wide {
        // Created at position 999 and updated at 1000 of one binlog file: newer as numbers, older as text.
        for (op, p, name) in [("c", 999, "at-999"), ("u", 1000, "at-1000")] {
            ts += 1000;
            let image = json!({"uuid":"c050","city":city(50),"name":name,"amount":"12345",
                "updated_at":ts * 1000,"born":1,"note":null});
            let image = image.as_object().cloned().unwrap_or_default();
            let (datum, row) = render(db, V1, op, &image, Position::Binlog(20, p), ts);
            sent.push(Event {
                key: "c050".into(),
                value: Some((V1, datum)),
                effect: Some((Some(row), Position::Binlog(20, p))),
            });
        }
    }
    // A truncate: a change event the sink does not apply (a dead letter of stage envelope).
    let truncate_source = match render(db, V1, "c", &Map::new(), first_position(db), ts).0 {
        Value::Object(mut o) => o.remove("source").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    sent.push(Event {
        key: "c999".into(),
        value: Some((
            V1,
            json!({"before":null,"after":null,"source":truncate_source,"transaction":null,"op":"t",
                "ts_ms":ts,"ts_us":null,"ts_ns":null}),
        )),
        effect: None,
    });
    sent
}

fn first_position(db: Db) -> Position {
    match db {
        Db::Postgres => Position::Lsn(Some(1)),
        Db::MySql => Position::Binlog(1, 4),
    }
}

fn key_index(uuid: &str) -> usize {
    uuid.trim_start_matches('c').parse().expect("key number")
}

/// The model: per key, the version the payload's rules keep (the larger position; the later event on a tie;
/// no LSN older than any).
fn model(events: &[Event]) -> BTreeMap<String, Map<String, Value>> {
    let mut state: BTreeMap<String, (Option<Map<String, Value>>, Position)> = BTreeMap::new();
    for e in events {
        let Some((row, pos)) = &e.effect else {
            continue;
        };
        if state.get(&e.key).is_none_or(|(_, current)| pos >= current) {
            state.insert(e.key.clone(), (row.clone(), *pos));
        }
    }
    state
        .into_iter()
        .filter_map(|(k, (row, _))| row.map(|r| (k, r)))
        .collect()
}

/// Writes ESM event files of `per_file` records each (offsets from 0), then `redeliver` again: a batch the
/// event source mapping delivers twice.
fn write_events(
    dir: &Path,
    events: &[Event],
    values: &[Option<String>],
    per_file: usize,
    redeliver: usize,
) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let b64 = base64::engine::general_purpose::STANDARD;
    let chunks: Vec<Value> = events
        .chunks(per_file)
        .enumerate()
        .map(|(n, chunk)| {
            let records: Vec<Value> = chunk
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let offset = n * per_file + i;
                    let mut r = json!({"topic":"cdc","partition":0,"offset":offset,
                        "timestamp":1_718_000_000_000i64 + offset as i64,"timestampType":"CREATE_TIME",
                        "key":b64.encode(e.key.as_bytes()),"headers":[]});
                    if let Some(v) = &values[offset] {
                        r["value"] = v.clone().into();
                    }
                    r
                })
                .collect();
            json!({"eventSource":"aws:kafka",
                "eventSourceArn":"arn:aws:kafka:eu-west-1:111122223333:cluster/cdc/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
                "records":{"cdc-0":records}})
        })
        .collect();
    for (n, chunk) in chunks.iter().enumerate() {
        std::fs::write(dir.join(format!("events-{n:03}.json")), chunk.to_string()).expect("write");
    }
    std::fs::write(
        dir.join(format!("events-{:03}.json", chunks.len())),
        chunks[redeliver].to_string(),
    )
    .expect("write the redelivered batch");
}

/// The keys and columns where `actual` differs from `expected`, for a readable failure.
fn differences(
    actual: &BTreeMap<String, Map<String, Value>>,
    expected: &BTreeMap<String, Map<String, Value>>,
) -> String {
    let mut out = Vec::new();
    for key in actual.keys().chain(expected.keys()) {
        match (actual.get(key), expected.get(key)) {
            (Some(a), Some(e)) if a != e => {
                for column in a.keys().chain(e.keys()) {
                    if a.get(column) != e.get(column) {
                        out.push(format!(
                            "{key}.{column}: read {:?}, model {:?}",
                            a.get(column),
                            e.get(column)
                        ));
                    }
                }
            }
            (Some(_), None) => out.push(format!("{key}: read, not in the model")),
            (None, Some(_)) => out.push(format!("{key}: in the model, not read")),
            _ => {}
        }
    }
    out.dedup();
    out.join("\n")
}

/// Every log file of `table`, decoded by fastavro (`log_read.py`): the Avro the sink writes must be readable
/// by an independent Avro implementation. Returns the number of data records.
fn log_records_read_by_fastavro(table: &Path) -> usize {
    let mut files = Vec::new();
    let mut pending = vec![table.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("table dir").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && name != ".hoodie" {
                pending.push(path);
            } else if name.starts_with('.') && name.contains(".log.") {
                files.push(path);
            }
        }
    }
    assert!(!files.is_empty(), "{}: log files", table.display());
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/log_read.py"))
        .args(&files)
        .output()
        .expect("run log_read.py");
    assert!(
        out.status.success(),
        "log_read.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoded: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    decoded["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|f| f["blocks"].as_array().cloned().unwrap_or_default())
        .map(|b| b["records"].as_array().map_or(0, Vec::len))
        .sum()
}

#[test]
fn registry_avro_debezium_streams_land_as_hoodiestreamer_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (db, table_type, partitioned) in [
        (Db::Postgres, "COPY_ON_WRITE", true),
        (Db::Postgres, "COPY_ON_WRITE", false),
        (Db::Postgres, "MERGE_ON_READ", true),
        (Db::Postgres, "MERGE_ON_READ", false),
        (Db::MySql, "COPY_ON_WRITE", true),
        (Db::MySql, "COPY_ON_WRITE", false),
        (Db::MySql, "MERGE_ON_READ", true),
        (Db::MySql, "MERGE_ON_READ", false),
    ] {
        let name = format!("{db:?}-{table_type}-{partitioned}");
        let registry = StubRegistry::start(&dir.path().join(format!("{name}-registry")));
        let schemas: BTreeMap<i32, Value> = [
            (V1, envelope_schema(db, V1)),
            (V2, envelope_schema(db, V2)),
            (EXTRACTED, extracted_schema(db)),
        ]
        .into_iter()
        .collect();
        for (id, schema) in &schemas {
            registry.put(*id, schema);
        }
        // The table starts from the subject's version 1; version 2 arrives with the values.
        let subject = format!("{}-value", namespace(db));
        registry.set_latest(&subject, V1);
        // Merge-on-read readers compare `_event_seq` as text: keep MySQL's positions at four digits there.
        let wide = db == Db::Postgres || table_type == "COPY_ON_WRITE";
        let events = stream(db, wide);
        let expected = model(&events);
        assert!(expected.len() > 8, "{name}: a model with rows");
        assert!(
            events
                .iter()
                .filter(|e| matches!(e.effect, Some((None, _))))
                .count()
                > 5,
            "{name}: deletes"
        );
        let placeholders = events
            .iter()
            .filter(|e| {
                e.value
                    .as_ref()
                    .is_some_and(|(_, v)| v.to_string().contains(TOAST))
            })
            .count();
        assert_eq!(placeholders > 5, db == Db::Postgres, "{name}: placeholders");
        let tombstones = events.iter().filter(|e| e.value.is_none()).count() as u64;
        let mut events = events;
        let mut values = encode(dir.path(), &schemas, &events);
        // Values no schema reads: an id the registry does not know (stage schema), a body cut short
        // (stage envelope).
        for raw in [
            &[0u8, 0, 0, 0, 99, 2, 0][..],
            &[0u8, 0, 0, 0, 1, 2, 2, 0x61][..],
        ] {
            events.push(Event {
                key: "c998".into(),
                value: None,
                effect: None,
            });
            values.push(Some(base64::engine::general_purpose::STANDARD.encode(raw)));
        }
        let event_dir = dir.path().join(format!("{name}-events"));
        write_events(&event_dir, &events, &values, 30, 2);
        let (connector, field) = match db {
            Db::Postgres => ("postgres", "_event_lsn"),
            Db::MySql => ("mysql", "_event_seq"),
        };
        let table = dir.path().join(&name);
        let url = format!(
            "hoodie.streamer.schemaprovider.registry.url=http://127.0.0.1:{}/subjects/{subject}/versions/latest",
            registry.port
        );
        let mut sets = vec![
            "hudi.sink.value.format=debezium".to_string(),
            format!("hudi.sink.debezium.connector={connector}"),
            "hudi.sink.debezium.replica.identity=full".to_string(),
            "hoodie.streamer.schemaprovider.source.schema.file=".to_string(),
            url,
            format!("hoodie.datasource.write.precombine.field={field}"),
        ];
        if partitioned {
            // Deletes carry whole rows (partitioned by `city`, keyed by `uuid`).
            sets.push("hudi.sink.debezium.replica.identity=full".into());
        } else {
            sets.push("hoodie.datasource.write.partitionpath.field=".into());
            sets.push(
                "hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator"
                    .into(),
            );
        }
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let out = ingest_one_instant_per_file(&table, &event_dir, table_type, &sets);
        // The truncate and the two values above; tombstones are neither letters nor deletes, each counted once; the
        // redelivered batch is recognised as committed.
        assert_eq!(number_after(&out, "dead-lettered "), 3, "{name}: {out}");
        assert_eq!(
            number_after(&out, "Debezium tombstones "),
            tombstones,
            "{name}: {out}"
        );
        assert_eq!(
            number_after(&out, "already committed "),
            30,
            "{name}: {out}"
        );
        assert_eq!(
            number_after(&out, "records in "),
            events.len() as u64 + 30,
            "{name}: {out}"
        );
        assert_eq!(
            dead_letter_stages(&table),
            ["envelope", "envelope", "schema"],
            "{name}"
        );
        let read = || read_table_with(&table, &["hoodie.read.file.group.reader.version=1"]);
        if table_type == "MERGE_ON_READ" {
            assert!(
                log_records_read_by_fastavro(&table) > 0,
                "{name}: log records"
            );
            // hudi-rs 0.5.0 merges a file slice into its base file's columns: `note`, added by log blocks
            // on a base file written before version 2, is read only once compacted. Everything else is
            // compared now, and the whole row after a compaction of every file group.
            let without_note = |rows: BTreeMap<String, Map<String, Value>>| {
                rows.into_iter()
                    .map(|(k, mut row)| {
                        row.remove("note");
                        (k, row)
                    })
                    .collect::<BTreeMap<_, _>>()
            };
            let (actual, model) = (without_note(read()), without_note(expected.clone()));
            assert!(
                actual == model,
                "{name} before compaction: {}",
                differences(&actual, &model)
            );
            let report = ok(&[
                "services",
                "--table",
                &table.display().to_string(),
                "--set",
                "hoodie.compact.inline.max.delta.commits=1",
                "--set",
                "hudi.sink.compaction.max.file.groups=1000",
            ]);
            // Nothing to compact when the last inline compaction left no log files behind.
            assert!(
                services_report(&report)["file_groups_compacted"].is_u64(),
                "{name}: {report}"
            );
        }
        let actual = read();
        assert!(
            actual == expected,
            "{name}: {}",
            differences(&actual, &expected)
        );
        assert_meta_columns(&table, connector, &name);
        let props = std::fs::read_to_string(table.join(".hoodie/hoodie.properties"))
            .expect("hoodie.properties");
        assert!(
            props.contains(&format!("hoodie.table.precombine.field={field}")),
            "{name}: {props}"
        );
        let partition_dirs = std::fs::read_dir(&table)
            .expect("table")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("city="))
            .count();
        assert_eq!(partition_dirs > 0, partitioned, "{name}: partition layout");
    }
}
