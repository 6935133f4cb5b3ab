//! `hudi.sink.value.format=debezium` end to end with the row schema from a schema file: a Postgres-style and a
//! MySQL-style change stream (snapshot reads, creates, updates, deletes with their tombstones, events re-sent
//! out of order after newer ones, an incremental-snapshot read without an LSN, TOAST placeholders (Postgres),
//! events in the Connect-schema form and flattened by ExtractNewRecordState, bad events), ingested in two runs:
//! the second with a new schema file version adding a column (the source table's `ALTER TABLE … ADD COLUMN`)
//! and a redelivered event file of the first. Into copy-on-write and merge-on-read tables, partitioned and not,
//! read back with hudi-rs and compared row for row with a model of the payloads' ordering rules.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::common::*;
use crate::debezium_meta::{assert_meta_columns, city, extracted, Db, Lcg, Position};

/// One Kafka record of the stream.
#[derive(Clone, Debug)]
struct Event {
    key: String,
    /// The value (None: a tombstone).
    value: Option<Value>,
    /// What the event does to the model: the row the table holds after it (None: a delete), and its position.
    effect: Option<(Option<Map<String, Value>>, Position)>,
}

/// The value of one change event in one of the three forms, and the row (meta columns included) it writes.
fn render(
    db: Db,
    form: u64,
    op: &str,
    image: &Map<String, Value>,
    pos: Position,
    ts: i64,
) -> (Value, Map<String, Value>) {
    let mut row = Map::new();
    let mut meta = |k: &str, v: Value| {
        row.insert(k.to_string(), v);
    };
    let value = if form == 2 {
        // ExtractNewRecordState, delete.tombstone.handling.mode=rewrite-with-tombstone, add.fields listed.
        Value::Object(extracted(db, pos, op, ts, image.clone(), &mut meta))
    } else {
        meta("_change_operation_type", op.into());
        meta("_upstream_event_processed_ts_ms", ts.into());
        let (source, name) = match (db, pos) {
            (Db::Postgres, Position::Lsn(lsn)) => {
                meta("db_shard_source_partition", "pg".into());
                meta("db_schema_source_partition", "public".into());
                meta("_event_origin_ts_ms", (ts - 7).into());
                let tx = lsn.map(|l| l / 10);
                meta("_event_tx_id", tx.into());
                meta("_event_lsn", lsn.into());
                meta("_event_xmin", Value::Null);
                let mut source = json!({"version":"2.7.3.Final","connector":"postgresql","name":"pg",
                    "ts_ms":ts - 7,"snapshot":"false","db":"shop","schema":"public","table":"customers",
                    "xmin":null});
                if let Some(lsn) = lsn {
                    source["txId"] = tx.into();
                    source["lsn"] = lsn.into();
                } else {
                    source["snapshot"] = "incremental".into();
                }
                (source, "pg.public.customers")
            }
            (_, Position::Binlog(file, p)) => {
                meta("db_shard_source_partition", "mysql1".into());
                meta("_event_origin_ts_ms", (ts - 7).into());
                meta("_event_bin_file", format!("mysql-bin.{file:06}").into());
                meta("_event_pos", p.into());
                meta("_event_row", 0.into());
                meta("_event_seq", format!("{file:06}.{p}").into());
                let source = json!({"version":"2.7.3.Final","connector":"mysql","name":"mysql1",
                    "ts_ms":ts - 7,"snapshot":"false","db":"inventory","table":"customers",
                    "server_id":223344,"gtid":null,"file":format!("mysql-bin.{file:06}"),"pos":p,
                    "row":0,"thread":7,"query":null});
                (source, "mysql1.inventory.customers")
            }
            _ => unreachable!("position of another connector"),
        };
        let (before, after) = match op {
            "d" => (Value::Object(image.clone()), Value::Null),
            _ => (Value::Null, Value::Object(image.clone())),
        };
        let envelope = json!({"before":before,"after":after,"source":source,"transaction":null,
            "op":op,"ts_ms":ts,"ts_us":ts * 1000});
        if form == 1 {
            json!({"schema":{"type":"struct","name":format!("{name}.Envelope"),"optional":false,
                   "fields":[{"field":"op","type":"string","optional":false}]},"payload":envelope})
        } else {
            envelope
        }
    };
    for (k, v) in image {
        row.insert(k.clone(), v.clone());
    }
    (value, row)
}

/// The placeholder Debezium writes for an unchanged TOASTed value (Postgres, `REPLICA IDENTITY DEFAULT`).
const TOAST: &str = "__debezium_unavailable_value";

/// The loop step from which the source table has the column `note` (the second schema file version).
const NOTE_FROM: usize = 90;

/// A change stream: events in Kafka order, the index of the first event written under the second schema
/// file version, and how many TOAST placeholders were sent.
struct Stream {
    events: Vec<Event>,
    second: usize,
    placeholders: usize,
}

/// The change stream of `db`: events in Kafka order, with their effect on the model. `wide`: binlog positions
/// cross digit boundaries (`"000010.999"` < `"000010.1000"` only as numbers); otherwise they keep four digits,
/// where the text and the numeric order of `_event_seq` agree. Postgres updates of a named row often leave the
/// TOASTed `name` out (the placeholder): the model keeps the value before it.
fn stream(db: Db, wide: bool) -> Stream {
    let mut rng = Lcg(match db {
        Db::Postgres => 7,
        Db::MySql => 11,
    });
    let mut live: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    let mut sent: Vec<Event> = Vec::new();
    let first_pos = if wide { 4 } else { 1_000 };
    let (mut lsn, mut file, mut pos) = (1_000i64, 9u32, first_pos);
    let mut ts = 1_718_000_000_000i64;
    let (mut second, mut placeholders) = (0, 0);
    for i in 0..160 {
        if i == NOTE_FROM {
            second = sent.len();
        }
        ts += 1000;
        let position = |lsn: i64, file: u32, pos: i64| match db {
            Db::Postgres => Position::Lsn(Some(lsn)),
            Db::MySql => Position::Binlog(file, pos),
        };
        // Positions grow, the binlog position across a digit boundary and into the next file.
        lsn += 10 + rng.next(90) as i64;
        pos += 1 + rng.next(400) as i64;
        if pos > 9_000 {
            file += 1;
            pos = first_pos;
        }
        let form = rng.next(3);
        if i % 9 == 8 && !sent.is_empty() {
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
                let again = Event {
                    effect: e.effect.as_ref().map(|(row, p)| (row.clone(), *p)),
                    ..(*e).clone()
                };
                sent.push(again);
                continue;
            }
        }
        let key = rng.next(24) as usize;
        let uuid = format!("c{key:03}");
        let exists = live.contains_key(&key);
        let op = match (exists, rng.next(10)) {
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
                let mut image = json!({"uuid":uuid,"city":city(key),"name":name,
                       "amount":(i as i64) * 3 - 100,"updated_at":ts * 1000});
                if i >= NOTE_FROM {
                    image["note"] = format!("note-{i}").into();
                }
                image.as_object().cloned().unwrap_or_default()
            }
        };
        let p = position(lsn, file, pos);
        // An update leaving the TOASTed name out: sent as the placeholder, stored as the name before it.
        let stored_name = live
            .get(&key)
            .and_then(|r| r.get("name"))
            .filter(|n| n.is_string());
        let toast = db == Db::Postgres && op == "u" && stored_name.is_some() && rng.next(3) == 0;
        let mut sent_image = image.clone();
        let mut image = image;
        if let (true, Some(name)) = (toast, stored_name) {
            sent_image.insert("name".into(), TOAST.into());
            image.insert("name".into(), name.clone());
            placeholders += 1;
        }
        let (value, mut row) = render(db, form, op, &sent_image, p, ts);
        if toast {
            row.insert("name".into(), image["name"].clone());
        }
        if op == "d" {
            live.remove(&key);
            sent.push(Event {
                key: uuid.clone(),
                value: Some(value),
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
                value: Some(value),
                effect: Some((Some(row), p)),
            });
        }
    }
    if db == Db::Postgres {
        // Incremental-snapshot reads without an LSN: one of a key never seen (inserted), one of a live key
        // (older than every event with an LSN: ignored).
        for key in [90usize, *live.keys().next().expect("a live key")] {
            ts += 1000;
            let image = json!({"uuid":format!("c{key:03}"),"city":city(key),"name":"incremental",
                               "amount":1,"updated_at":ts * 1000});
            let image = image.as_object().cloned().unwrap_or_default();
            let (value, row) = render(db, 0, "r", &image, Position::Lsn(None), ts);
            sent.push(Event {
                key: format!("c{key:03}"),
                value: Some(value),
                effect: Some((Some(row), Position::Lsn(None))),
            });
        }
    }
    if db == Db::MySql && wide {
        // A key created at position 999 and updated at 1000 of the same binlog file: the update is newer
        // as numbers, older as text.
        for (op, p, name) in [("c", 999, "at-999"), ("u", 1000, "at-1000")] {
            ts += 1000;
            let image = json!({"uuid":"c050","city":city(50),"name":name,"amount":2,"updated_at":ts * 1000});
            let image = image.as_object().cloned().unwrap_or_default();
            let (value, row) = render(db, 0, op, &image, Position::Binlog(20, p), ts);
            sent.push(Event {
                key: "c050".into(),
                value: Some(value),
                effect: Some((Some(row), Position::Binlog(20, p))),
            });
        }
    }
    // Bad events: a truncate, and JSON that is no change event.
    let truncate = match db {
        Db::Postgres => {
            json!({"before":null,"after":null,"source":{"name":"pg","lsn":1},"op":"t","ts_ms":ts})
        }
        Db::MySql => {
            json!({"before":null,"after":null,"source":{"name":"mysql1","file":"mysql-bin.000001","pos":1},"op":"t","ts_ms":ts})
        }
    };
    for value in [truncate, json!({"uuid":"c999","city":"oslo"})] {
        sent.push(Event {
            key: "c999".into(),
            value: Some(value),
            effect: None,
        });
    }
    Stream {
        events: sent,
        second,
        placeholders,
    }
}

fn key_index(uuid: &str) -> usize {
    uuid.trim_start_matches('c').parse().expect("key number")
}

/// The model: per key, the version the payload's rules keep (Postgres: the larger LSN, the incoming one on a
/// tie, no LSN older than any; MySQL: the larger binlog file and position). `batches` are the event indices
/// of each instant; MySQL keeps the stored version on a tie across instants (no test event ties).
fn model(events: &[Event]) -> BTreeMap<String, Map<String, Value>> {
    let mut state: BTreeMap<String, (Option<Map<String, Value>>, Position)> = BTreeMap::new();
    for e in events {
        let Some((row, pos)) = &e.effect else {
            continue;
        };
        let wins = match state.get(&e.key) {
            None => true,
            Some((_, current)) => pos >= current,
        };
        if wins {
            state.insert(e.key.clone(), (row.clone(), *pos));
        }
    }
    // Rows written before the column `note` existed read it as null.
    state
        .into_iter()
        .filter_map(|(k, (row, _))| {
            row.map(|mut r| {
                r.entry("note").or_insert(Value::Null);
                (k, r)
            })
        })
        .collect()
}

/// Writes `events` as ESM event files of `per_file` records each, offsets counting from `first_offset`.
fn write_events(dir: &Path, events: &[Event], per_file: usize, first_offset: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let b64 = base64::engine::general_purpose::STANDARD;
    for (n, chunk) in events.chunks(per_file).enumerate() {
        let records: Vec<Value> = chunk
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let offset = first_offset + n * per_file + i;
                let mut r = json!({"topic":"cdc","partition":0,"offset":offset,
                    "timestamp":1_718_000_000_000i64 + offset as i64,"timestampType":"CREATE_TIME",
                    "key":b64.encode(e.key.as_bytes()),"headers":[]});
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

/// The schema file's `Value` record; version 2 adds the nullable `note`.
fn schema_file(version: u8) -> String {
    let note = if version == 2 {
        r#",{"name":"note","type":["null","string"],"default":null}"#
    } else {
        ""
    };
    format!(
        r#"{{"type":"record","name":"Value","namespace":"pg.public.customers","fields":[
            {{"name":"uuid","type":"string"}},{{"name":"city","type":"string"}},
            {{"name":"name","type":["null","string"],"default":null}},
            {{"name":"amount","type":["null","long"],"default":null}},
            {{"name":"updated_at","type":["null","long"],"default":null}}{note}]}}"#
    )
}

#[test]
fn debezium_streams_land_as_hoodiestreamer_rows_with_the_payloads_ordering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schemas: Vec<std::path::PathBuf> = [1u8, 2]
        .iter()
        .map(|v| {
            let path = dir.path().join(format!("customers-v{v}.avsc"));
            std::fs::write(&path, schema_file(*v)).expect("schema");
            path
        })
        .collect();
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
        // Merge-on-read readers (hudi-rs; Spark's log scanner for delete records) compare `_event_seq` as
        // text: the MySQL merge-on-read stream keeps its positions at four digits (docs/cdc.md).
        let wide = db == Db::Postgres || table_type == "COPY_ON_WRITE";
        let Stream {
            events,
            second,
            placeholders,
        } = stream(db, wide);
        let expected = model(&events);
        assert!(expected.len() > 8, "{name}: a model with rows");
        let deletes = events
            .iter()
            .filter(|e| matches!(e.effect, Some((None, _))))
            .count();
        assert!(deletes > 5, "{name}: deletes in the stream");
        assert_eq!(placeholders > 5, db == Db::Postgres, "{name}: placeholders");
        // Two runs: the events up to the column `note` under schema version 1, then the rest under version 2,
        // with the first run's second event file delivered again in front of them.
        let per_file = 40;
        let first_dir = dir.path().join(format!("{name}-events-1"));
        let second_dir = dir.path().join(format!("{name}-events-2"));
        write_events(&first_dir, &events[..second], per_file, 0);
        write_events(&second_dir, &events[second..], per_file, second);
        let redelivered = events[per_file..second].len().min(per_file) as u64;
        std::fs::copy(
            first_dir.join("events-001.json"),
            second_dir.join("events-000-redelivered.json"),
        )
        .expect("redelivered file");
        let (connector, field, payload) = match db {
            Db::Postgres => (
                "postgres",
                "_event_lsn",
                "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload",
            ),
            Db::MySql => (
                "mysql",
                "_event_seq",
                "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload",
            ),
        };
        let table = dir.path().join(&name);
        let sets = |schema: &Path| {
            let mut sets = vec![
                "hudi.sink.value.format=debezium".to_string(),
                format!("hudi.sink.debezium.connector={connector}"),
                format!(
                    "hoodie.streamer.schemaprovider.source.schema.file={}",
                    schema.display()
                ),
                format!("hoodie.datasource.write.precombine.field={field}"),
                // Deletes carry whole rows (partitioned by `city`, keyed by `uuid`).
                "hudi.sink.debezium.replica.identity=full".to_string(),
            ];
            if !partitioned {
                sets.push("hoodie.datasource.write.partitionpath.field=".into());
                sets.push(
                    "hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator"
                        .into(),
                );
            }
            sets
        };
        let ingest = |schema: &Path, events: &Path| {
            let sets = sets(schema);
            let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
            ingest_one_instant_per_file(&table, events, table_type, &sets)
        };
        let out = ingest(&schemas[0], &first_dir);
        assert_eq!(number_after(&out, "dead-lettered "), 0, "{name}: {out}");
        let out = ingest(&schemas[1], &second_dir);
        // The truncate and the plain JSON object; tombstones are neither letters nor deletes; the
        // redelivered file is recognised as committed.
        assert_eq!(number_after(&out, "dead-lettered "), 2, "{name}: {out}");
        assert_eq!(
            number_after(&out, "already committed "),
            redelivered,
            "{name}: {out}"
        );
        // hudi-rs has no Debezium payload: its first file group reader merges base and log files by
        // the ordering field and applies delete records by their ordering value.
        let read = || read_table_with(&table, &["hoodie.read.file.group.reader.version=1"]);
        if table_type == "MERGE_ON_READ" {
            // hudi-rs 0.5.0 reads a file slice in its base file's columns: `note`, added in log blocks on a
            // base file written before it, shows only once compacted. Everything else is compared now, and
            // the whole row after a compaction of every file group.
            let without_note = |rows: &BTreeMap<String, Map<String, Value>>| {
                rows.iter()
                    .map(|(k, row)| {
                        let mut row = row.clone();
                        row.remove("note");
                        (k.clone(), row)
                    })
                    .collect::<BTreeMap<_, _>>()
            };
            assert_eq!(
                without_note(&read()),
                without_note(&expected),
                "{name}: before compaction"
            );
            ok(&[
                "services",
                "--table",
                &table.display().to_string(),
                "--set",
                "hoodie.compact.inline.max.delta.commits=1",
                "--set",
                "hudi.sink.compaction.max.file.groups=1000",
            ]);
        }
        assert_eq!(read(), expected, "{name}");
        assert_meta_columns(&table, connector, &name);
        let props = std::fs::read_to_string(table.join(".hoodie/hoodie.properties"))
            .expect("hoodie.properties");
        assert!(
            props.contains(&format!("hoodie.compaction.payload.class={payload}"))
                && props.contains(&format!("hoodie.table.precombine.field={field}")),
            "{name}: {props}"
        );
        let letters = dead_letter_stages(&table);
        assert_eq!(letters, ["envelope", "envelope"], "{name}");
        let partition_dirs = std::fs::read_dir(&table)
            .expect("table")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("city="))
            .count();
        assert_eq!(partition_dirs > 0, partitioned, "{name}: partition layout");
    }
}
