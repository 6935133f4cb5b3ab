//! Postgres specifics of `hudi.sink.value.format=debezium`: TOAST placeholders never replace a stored value
//! (within a batch, against a copy-on-write base file, and against a merge-on-read slice with compactions
//! running), read back with hudi-rs row for row against a model; and a table partitioned outside the record
//! key starts only with `REPLICA IDENTITY FULL` declared.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::common::*;

const PLACEHOLDER: &str = "__debezium_unavailable_value";

const SCHEMA: &str = r#"{"type":"record","name":"Value","namespace":"pg.public.documents","fields":[
    {"name":"uuid","type":"string"},{"name":"city","type":"string"},
    {"name":"doc","type":["null","string"],"default":null},
    {"name":"amount","type":["null","long"],"default":null}]}"#;

/// The compared columns of a row.
const COLUMNS: [&str; 6] = [
    "uuid",
    "city",
    "doc",
    "amount",
    "_event_lsn",
    "_change_operation_type",
];

/// A small deterministic generator.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A change stream whose updates often leave the TOASTed `doc` out (the placeholder): files of
/// `per_file` Kafka records (`None` = tombstone), the model, and how many placeholders were sent.
struct Stream {
    files: Vec<Vec<(String, Option<Value>)>>,
    model: BTreeMap<String, Map<String, Value>>,
    placeholders: usize,
}

fn stream(files: usize, per_file: usize) -> Stream {
    let mut rng = Lcg(11);
    let mut live: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut model: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut placeholders = 0;
    let mut lsn = 5_000i64;
    let mut i = 0i64;
    for f in 0..files {
        let mut file = Vec::new();
        while file.len() < per_file {
            lsn += 1 + rng.next(40) as i64;
            i += 1;
            let k = rng.next(12) as usize;
            let key = format!("d-{k:02}");
            let city = ["lisbon", "oslo", "quito"][k % 3];
            let source = json!({"version":"2.7.3.Final","connector":"postgresql","name":"pg",
                "ts_ms":1_718_000_000_000i64 + i,"snapshot":if f == 0 {"true"} else {"false"},
                "db":"shop","schema":"public","table":"documents","txId":lsn / 10,"lsn":lsn,"xmin":null});
            let stored = live.get(&key).cloned();
            let (op, before, after) = match &stored {
                Some(row) if rng.next(8) == 0 => ("d", Value::Object(row.clone()), Value::Null),
                Some(row) => {
                    let doc = if rng.next(3) != 0 {
                        placeholders += 1;
                        PLACEHOLDER.to_string()
                    } else {
                        format!("doc {key} v{i} {}", "x".repeat(40))
                    };
                    let mut image = row.clone();
                    image.insert("doc".into(), doc.into());
                    image.insert("amount".into(), i.into());
                    ("u", Value::Null, Value::Object(image))
                }
                None => {
                    let image = json!({"uuid":key,"city":city,
                        "doc":format!("doc {key} v{i} {}", "x".repeat(40)),"amount":i});
                    (if f == 0 { "r" } else { "c" }, Value::Null, image)
                }
            };
            let envelope = json!({"before":before,"after":after,"source":source,"op":op,
                "ts_ms":1_718_000_000_100i64 + i,"transaction":null});
            file.push((key.clone(), Some(envelope)));
            if op == "d" {
                live.remove(&key);
                model.remove(&key);
                file.push((key.clone(), None));
                continue;
            }
            let Value::Object(mut image) = after else {
                unreachable!("an upsert has an after image")
            };
            // The model: a placeholder keeps the stored value.
            if image["doc"] == PLACEHOLDER {
                let doc = stored.as_ref().map_or(Value::Null, |s| s["doc"].clone());
                image.insert("doc".into(), doc);
            }
            let mut row = image.clone();
            row.insert("_event_lsn".into(), lsn.into());
            row.insert("_change_operation_type".into(), op.into());
            live.insert(key.clone(), image);
            model.insert(key, row);
        }
        out.push(file);
    }
    Stream {
        files: out,
        model,
        placeholders,
    }
}

/// Writes each file of Kafka records as one ESM event file, offsets counting on across files.
fn write_events(dir: &Path, files: &[Vec<(String, Option<Value>)>]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut offset = 0i64;
    for (n, file) in files.iter().enumerate() {
        let records: Vec<Value> = file
            .iter()
            .map(|(key, value)| {
                let mut r = json!({"topic":"pg.public.documents","partition":0,"offset":offset,
                    "timestamp":1_718_000_000_000i64 + offset,"timestampType":"CREATE_TIME",
                    "key":b64.encode(key.as_bytes()),"headers":[]});
                if let Some(v) = value {
                    r["value"] = b64.encode(v.to_string()).into();
                }
                offset += 1;
                r
            })
            .collect();
        let event = json!({"eventSource":"aws:kafka",
            "eventSourceArn":"arn:aws:kafka:eu-west-1:111122223333:cluster/cdc/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
            "records":{"pg.public.documents-0":records}});
        std::fs::write(dir.join(format!("events-{n:03}.json")), event.to_string()).expect("write");
    }
}

fn project(rows: &BTreeMap<String, Map<String, Value>>) -> BTreeMap<String, Map<String, Value>> {
    rows.iter()
        .map(|(k, row)| {
            let kept = COLUMNS
                .iter()
                .map(|c| (c.to_string(), row.get(*c).cloned().unwrap_or(Value::Null)))
                .collect();
            (k.clone(), kept)
        })
        .collect()
}

fn debezium_sets<'a>(schema: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut sets = vec![
        "hudi.sink.value.format=debezium",
        "hudi.sink.debezium.connector=postgres",
        "hoodie.datasource.write.precombine.field=_event_lsn",
        schema,
    ];
    sets.extend(extra);
    sets
}

#[test]
fn toast_placeholders_never_replace_a_stored_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_path = dir.path().join("documents.avsc");
    std::fs::write(&schema_path, SCHEMA).expect("schema");
    let schema = format!(
        "hoodie.streamer.schemaprovider.source.schema.file={}",
        schema_path.display()
    );
    let s = stream(12, 10);
    assert!(s.placeholders > 20, "placeholders sent: {}", s.placeholders);
    assert!(s.model.len() > 5, "a model with rows");
    let events = dir.path().join("events");
    write_events(&events, &s.files);
    for table_type in ["COPY_ON_WRITE", "MERGE_ON_READ"] {
        let table = dir.path().join(table_type);
        ingest_one_instant_per_file(
            &table,
            &events,
            table_type,
            &debezium_sets(
                &schema,
                &[
                    "hudi.sink.debezium.replica.identity=full",
                    "hoodie.compact.inline.max.delta.commits=4",
                ],
            ),
        );
        if table_type == "MERGE_ON_READ" {
            assert!(!completed_commits(&table).is_empty(), "a compaction ran");
        }
        let actual = read_table_with(&table, &["hoodie.read.file.group.reader.version=1"]);
        assert!(
            actual.values().all(|r| r["doc"] != PLACEHOLDER),
            "{table_type}: a placeholder reached the table"
        );
        assert_eq!(project(&actual), project(&s.model), "{table_type}");
    }
}

#[test]
fn a_postgres_table_partitioned_outside_the_key_needs_replica_identity_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_path = dir.path().join("documents.avsc");
    std::fs::write(&schema_path, SCHEMA).expect("schema");
    let schema = format!(
        "hoodie.streamer.schemaprovider.source.schema.file={}",
        schema_path.display()
    );
    let events = dir.path().join("events");
    write_events(&events, &stream(1, 5).files);
    let run = |name: &str, extra: &[&str]| {
        let base = format!("hoodie.base.path={}", dir.path().join(name).display());
        let mut args = vec![
            "ingest",
            "--config",
            "examples/local.properties",
            "--set",
            &base,
        ];
        for set in debezium_sets(&schema, extra) {
            args.extend(["--set", set]);
        }
        let events = events.display().to_string();
        args.push(&events);
        let out = hudi_sink(&args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // examples/local.properties partitions by `city`, keyed by `uuid`.
    for (name, extra) in [
        ("unset", vec![]),
        (
            "default",
            vec!["hudi.sink.debezium.replica.identity=default"],
        ),
    ] {
        let (ok, stderr) = run(name, &extra);
        assert!(!ok, "{name}: started");
        assert!(
            stderr.contains("REPLICA IDENTITY FULL")
                && stderr.contains("hudi.sink.debezium.replica.identity=full")
                && stderr.contains("city"),
            "{name}: {stderr}"
        );
        assert!(
            !dir.path().join(name).join(".hoodie").exists(),
            "{name}: no table"
        );
    }
    let (ok, stderr) = run("full", &["hudi.sink.debezium.replica.identity=full"]);
    assert!(ok, "full: {stderr}");
    // Partitioned by the key itself, or not at all: a key-only `before` places the delete.
    for (name, partition) in [("by-key", "uuid"), ("none", "")] {
        let set = format!("hoodie.datasource.write.partitionpath.field={partition}");
        let (ok, stderr) = run(name, &[&set]);
        assert!(ok, "{name}: {stderr}");
    }
    let (ok, stderr) = run("typo", &["hudi.sink.debezium.replica.identity=fool"]);
    assert!(
        !ok && stderr.contains("expected full or default"),
        "typo: {stderr}"
    );
}
