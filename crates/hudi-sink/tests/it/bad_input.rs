//! The bad-input corpus of `tests/bad-input/` and the fuzz corpora of `fuzz/corpus/`, each input with its
//! outcome asserted.
//!
//! - Envelopes (`cases.json` → `envelopes`): each payload must fail `KafkaBatch::from_slice` (what the writer
//!   Lambda runs first) with an error containing every listed fragment; nothing of it is written.
//! - Records (`cases.json` → `batches`): every record of every batch goes through `KafkaSink::process` into a
//!   local table. Per batch the report's accounting must equal the sum of the cases' expectations and balance;
//!   at the end the table read by hudi-rs must equal the expected rows exactly (every data column, every row),
//!   and the dead-letter output must hold exactly one letter per dead-letter case, with its stage, reason,
//!   coordinates, raw key, raw value and headers as delivered. Nothing else may be in either.
//! - Fuzz corpora: every committed corpus and regression input is replayed through the fuzz targets' own
//!   oracles (`fuzz/src/lib.rs`, included below), so a fixed crash stays fixed on the stable toolchain.
//!
//! Large inputs (100,000 nesting levels, a 4.5 MB record, a 100,000-character key) are generated from a short
//! description in the manifest rather than committed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hudi_sink::bootstrap::build_sink;
use hudi_sink::sink::SinkReport;
use hudi_sink::source::event::KafkaBatch;
use serde_json::{json, Map, Value};

use crate::common::python::read_rows;
use crate::common::workspace_root;

/// Every JSON line of every dead-letter object under `dir`.
fn dead_letter_lines(dir: &std::path::Path) -> Vec<Value> {
    let mut out = Vec::new();
    for f in crate::common::all_files(dir) {
        let text = std::fs::read_to_string(&f).expect("dead letter object");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            out.push(serde_json::from_str(line).expect("dead letter JSON line"));
        }
    }
    out
}

#[allow(dead_code)]
#[path = "../../../../fuzz/src/lib.rs"]
mod fuzz_checks;

fn corpus_dir() -> PathBuf {
    workspace_root().join("tests/bad-input")
}

fn manifest() -> Value {
    let path = corpus_dir().join("cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Expands the manifest's placeholders: `{"$repeat": s, "$len": n}` is `s` repeated and cut to `n` bytes
/// (ASCII `s` only).
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.contains_key("$repeat") => {
            let unit = m["$repeat"].as_str().expect("$repeat is a string");
            let len = m["$len"].as_u64().expect("$len is a number") as usize;
            assert!(unit.is_ascii() && !unit.is_empty());
            Value::String(unit.repeat(len / unit.len() + 1)[..len].to_string())
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn hex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd hex {text:?}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digits"))
        .collect()
}

/// A key or value of the manifest as the ESM delivers it: its base64 text, or `None` (null).
fn delivered(spec: &Value) -> Option<String> {
    let bytes = match spec {
        Value::Null => return None,
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(m) => {
            if let Some(b64) = m.get("b64") {
                // Delivered as written, valid base64 or not.
                return Some(b64.as_str().expect("b64 is a string").to_string());
            } else if let Some(h) = m.get("hex") {
                hex(h.as_str().expect("hex is a string"))
            } else if let Some(t) = m.get("text") {
                t.as_str().expect("text is a string").as_bytes().to_vec()
            } else if let Some(j) = m.get("json") {
                serde_json::to_vec(&expand(j)).expect("json")
            } else if let Some(n) = m.get("nested") {
                let s = |k: &str| n[k].as_str().unwrap_or_else(|| panic!("nested.{k}"));
                let depth = n["depth"].as_u64().expect("nested.depth") as usize;
                let mut out = String::new();
                out.push_str(s("prefix"));
                out.push_str(&s("open").repeat(depth));
                out.push_str(s("inner"));
                out.push_str(&s("close").repeat(depth));
                out.push_str(s("suffix"));
                out.into_bytes()
            } else {
                panic!("unknown key/value form {spec}")
            }
        }
        other => panic!("unknown key/value form {other}"),
    };
    Some(STANDARD.encode(bytes))
}

/// One record of a batch: the manifest case, its offset and what was delivered.
struct Delivered<'a> {
    case: &'a Value,
    offset: i64,
    key_b64: Option<String>,
    value_b64: Option<String>,
}

fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap_or("?")
}

/// The ESM payload of one batch (one topic-partition, offsets in order).
fn payload(topic: &str, records: &[Delivered<'_>]) -> Vec<u8> {
    let list: Vec<Value> = records
        .iter()
        .map(|d| {
            json!({
                "topic": topic,
                "partition": 0,
                "offset": d.offset,
                "timestamp": 1_764_412_800_000i64 + d.offset,
                "timestampType": "CREATE_TIME",
                "key": d.key_b64,
                "value": d.value_b64,
                "headers": d.case.get("headers").cloned().unwrap_or_else(|| json!([])),
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/bad-input/00000000-0000-0000-0000-000000000000-1",
        "bootstrapServers": "b-1.bad-input:9098",
        "records": { format!("{topic}-0"): list },
    }))
    .expect("payload")
}

/// The headers of a case as a dead letter carries them: name and base64 of the unsigned bytes.
fn letter_headers(case: &Value) -> Value {
    let mut out = Vec::new();
    for object in case
        .get("headers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (name, bytes) in object.as_object().expect("header object") {
            let bytes: Vec<u8> = bytes
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|b| b.as_i64().expect("signed byte") as i8 as u8)
                        .collect()
                })
                .unwrap_or_default();
            out.push(json!({"name": name, "value_b64": STANDARD.encode(bytes)}));
        }
    }
    Value::Array(out)
}

fn data_columns() -> Vec<String> {
    let text = std::fs::read_to_string(corpus_dir().join("schema.avsc")).expect("schema.avsc");
    let schema: Value = serde_json::from_str(&text).expect("schema JSON");
    schema["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| f["name"].as_str().expect("field name").to_string())
        .collect()
}

/// An expected row with every data column (absent ones are null), placeholders expanded.
fn full_row(expected: &Value, columns: &[String]) -> Map<String, Value> {
    let given = expand(expected);
    let given = given.as_object().expect("row is an object");
    for k in given.keys() {
        assert!(columns.contains(k), "expected row names unknown column {k}");
    }
    columns
        .iter()
        .map(|c| (c.clone(), given.get(c).cloned().unwrap_or(Value::Null)))
        .collect()
}

#[derive(Default, Debug, PartialEq, Eq)]
struct Expected {
    inserted: u64,
    updated: u64,
    deleted: u64,
    deduped: u64,
    ignored_older: u64,
    delete_misses: u64,
    dead_lettered: u64,
}

fn actual(report: &SinkReport) -> Expected {
    Expected {
        inserted: report.counts.inserted,
        updated: report.counts.updated,
        deleted: report.counts.deleted,
        deduped: report.counts.deduped,
        ignored_older: report.counts.ignored_older,
        delete_misses: report.counts.delete_misses,
        dead_lettered: report.dead_lettered,
    }
}

#[test]
fn every_bad_envelope_fails_with_a_clear_error() {
    let manifest = manifest();
    let envelopes = manifest["envelopes"].as_array().expect("envelopes");
    assert!(envelopes.len() >= 20, "the corpus lost envelope cases");
    let mut mismatches = Vec::new();
    for case in envelopes {
        let bytes = if let Some(file) = case.get("file").and_then(Value::as_str) {
            std::fs::read(corpus_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
        } else if let Some(levels) = case["generate"]
            .get("deep_envelope")
            .and_then(Value::as_u64)
        {
            // Nesting inside a record field, where serde's recursion limit must stop it (no stack overflow).
            let levels = levels as usize;
            format!(
                r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn","records":{{"orders-0":[{{"topic":"orders","partition":0,"offset":1,"timestamp":1,"x":{}{}}}]}}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
            .into_bytes()
        } else {
            panic!("{}: no file and no generator", name(case))
        };
        let fragments = |key: &str| -> Vec<&str> {
            case.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|f| f.as_str().expect("fragment"))
                .collect()
        };
        // The byte entry point (`KafkaBatch::from_slice`, the CLI and the `Deserialize` impl).
        let parsed = KafkaBatch::from_slice(&bytes);
        match (&parsed, case.get("accepted").and_then(Value::as_u64)) {
            (Ok(batch), Some(n)) => assert_eq!(batch.len() as u64, n, "{}", name(case)),
            (Ok(batch), None) => panic!("{}: accepted ({} records)", name(case), batch.len()),
            (Err(e), Some(_)) => panic!("{}: refused: {e}", name(case)),
            (Err(e), None) => {
                let text = e.to_string();
                let want = fragments("error");
                assert!(!want.is_empty(), "{}: no error fragments", name(case));
                if let Some(missing) = want.iter().find(|f| !text.contains(**f)) {
                    mismatches.push(format!("{}: error {text:?} lacks {missing:?}", name(case)));
                }
            }
        }
        // The Lambda path: the runtime hands the writer the payload as raw JSON text
        // (`LambdaEvent<Box<RawValue>>`), which it parses with the byte entry point. It must agree with the
        // byte entry point on every case, except where the case names the Lambda path's own error.
        let via_lambda = serde_json::from_slice::<Box<serde_json::value::RawValue>>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|raw| KafkaBatch::from_json_str(raw.get()).map_err(|e| e.to_string()));
        let lambda_error = fragments("lambda_error");
        match (&via_lambda, &parsed) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{}: Lambda path parsed differently", name(case));
                assert!(
                    lambda_error.is_empty(),
                    "{}: Lambda path accepted",
                    name(case)
                );
            }
            // Text that is not JSON at all is refused by the runtime before the handler, with serde's
            // message (the byte entry point adds its own prefix).
            (Err(text), Err(e)) => assert!(
                e.to_string().ends_with(text.as_str()),
                "{}: Lambda path error {text:?} differs from {e}",
                name(case)
            ),
            (Err(text), Ok(_)) => {
                assert!(!lambda_error.is_empty(), "{}: {text}", name(case));
                if let Some(missing) = lambda_error.iter().find(|f| !text.contains(**f)) {
                    mismatches.push(format!(
                        "{}: Lambda path error {text:?} lacks {missing:?}",
                        name(case)
                    ));
                }
            }
            (Ok(batch), Err(e)) => panic!(
                "{}: Lambda path accepted {} records the byte entry point refuses: {e}",
                name(case),
                batch.len()
            ),
        }
    }
    // All at once, so that a changed message shows every case it affects.
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_record_has_its_expected_outcome_and_nothing_is_lost() {
    let manifest = manifest();
    let topic = manifest["topic"].as_str().expect("topic");
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("table");
    let dead_letters = dir.path().join("dead-letters");
    let mut props: BTreeMap<String, String> = manifest["table"]
        .as_object()
        .expect("table")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("property value").to_string()))
        .collect();
    for (k, v) in [
        ("hoodie.base.path", base.display().to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            corpus_dir().join("schema.avsc").display().to_string(),
        ),
        (
            "hudi.sink.dead.letter.path",
            dead_letters.display().to_string(),
        ),
        ("hoodie.write.lock.wait_time_ms", "20000".to_string()),
        ("hudi.sink.retry.backoff.ms", "5".to_string()),
    ] {
        props.insert(k.to_string(), v);
    }
    let sink = build_sink(&props, "bad-input").await.expect("sink");
    let columns = data_columns();

    // The model: expected rows by record key, and every dead letter by offset.
    let mut rows: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut letters: BTreeMap<i64, Value> = BTreeMap::new();
    let mut offset = 100i64;
    let mut cases = 0;
    for batch in manifest["batches"].as_array().expect("batches") {
        let batch_name = batch["name"].as_str().unwrap_or("?");
        let records: Vec<Delivered<'_>> = batch["records"]
            .as_array()
            .expect("records")
            .iter()
            .map(|case| {
                // Gaps between offsets, as compaction leaves them.
                offset += 2;
                Delivered {
                    case,
                    offset,
                    key_b64: delivered(&case["key"]),
                    value_b64: delivered(&case["value"]),
                }
            })
            .collect();
        cases += records.len();
        let bytes = payload(topic, &records);
        assert!(
            bytes.len() <= 6 * 1024 * 1024,
            "{batch_name}: {} bytes is over the ESM's 6 MB payload limit",
            bytes.len()
        );
        let kafka = KafkaBatch::from_slice(&bytes).unwrap_or_else(|e| panic!("{batch_name}: {e}"));
        assert_eq!(kafka.len(), records.len());

        let mut expected = Expected::default();
        let before: BTreeSet<String> = rows.keys().cloned().collect();
        for d in &records {
            let expect = d.case["expect"].as_object().expect("expect");
            assert_eq!(expect.len(), 1, "{}: one expectation", name(d.case));
            let (kind, what) = expect.iter().next().expect("one entry");
            match kind.as_str() {
                "row" => {
                    let row = full_row(what, &columns);
                    let id = row["id"].as_str().expect("row id").to_string();
                    if before.contains(&id) {
                        expected.updated += 1;
                    } else if !rows.contains_key(&id) {
                        expected.inserted += 1;
                    }
                    rows.insert(id, row);
                }
                "dead_letter" => {
                    expected.dead_lettered += 1;
                    letters.insert(
                        d.offset,
                        json!({
                            "topic": topic,
                            "partition": 0,
                            "offset": d.offset,
                            "timestamp_ms": 1_764_412_800_000i64 + d.offset,
                            "key_b64": d.key_b64,
                            "stage": what["stage"],
                            "reason": what["reason"],
                            "value_b64": d.value_b64,
                            "headers": letter_headers(d.case),
                        }),
                    );
                }
                "deleted" => {
                    expected.deleted += 1;
                    let id = what.as_str().expect("deleted id");
                    assert!(
                        rows.remove(id).is_some(),
                        "{}: {id} is not stored",
                        name(d.case)
                    );
                }
                "delete_miss" => expected.delete_misses += 1,
                "deduped" => expected.deduped += 1,
                "ignored_older" => expected.ignored_older += 1,
                other => panic!("{}: unknown expectation {other}", name(d.case)),
            }
        }

        let report = sink.process(kafka).await.expect("process");
        assert!(report.balanced(), "{batch_name}: unbalanced {report:?}");
        assert_eq!(report.records_in, records.len() as u64, "{batch_name}");
        assert_eq!(report.skipped, 0, "{batch_name}");
        assert!(report.instant.is_some(), "{batch_name}: nothing committed");
        assert_eq!(actual(&report), expected, "{batch_name}: {report:?}");
    }
    assert!(cases >= 50, "the corpus lost record cases");

    // The table, row for row and column for column, as an independent reader sees it.
    let read = read_rows(&base, "hudi", &["snapshot"]);
    let mut got: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for r in &read {
        let id = r["id"].as_str().expect("id").to_string();
        assert_eq!(r["_hoodie_record_key"].as_str(), Some(id.as_str()));
        let region = r["region"].as_str().expect("region");
        let partition = if region.is_empty() {
            "region=__HIVE_DEFAULT_PARTITION__".to_string()
        } else {
            format!("region={region}")
        };
        assert_eq!(
            r["_hoodie_partition_path"].as_str(),
            Some(partition.as_str()),
            "{id}"
        );
        let data: Map<String, Value> = columns
            .iter()
            .map(|c| (c.clone(), r.get(c).cloned().unwrap_or(Value::Null)))
            .collect();
        assert!(got.insert(id.clone(), data).is_none(), "duplicate key {id}");
    }
    let want_keys: Vec<&String> = rows.keys().collect();
    let got_keys: Vec<&String> = got.keys().collect();
    assert_eq!(got_keys, want_keys, "record keys in the table");
    for (id, want) in &rows {
        let have = &got[id];
        for c in &columns {
            assert_eq!(
                have.get(c),
                want.get(c),
                "row {:?}, column {c}",
                id.chars().take(40).collect::<String>()
            );
        }
    }

    // The dead-letter output: exactly the expected letters, once each.
    let mut written: BTreeMap<i64, Value> = BTreeMap::new();
    for mut line in dead_letter_lines(&dead_letters) {
        let offset = line["offset"].as_i64().expect("offset");
        if let Some(obj) = line.as_object_mut() {
            obj.entry("headers").or_insert_with(|| json!([]));
        }
        assert!(
            written.insert(offset, line).is_none(),
            "offset {offset} dead-lettered twice"
        );
    }
    let want: Vec<i64> = letters.keys().copied().collect();
    let have: Vec<i64> = written.keys().copied().collect();
    assert_eq!(have, want, "dead-lettered offsets");
    let mismatches: Vec<String> = letters
        .iter()
        .filter(|(offset, want)| written.get(offset) != Some(want))
        .map(|(offset, want)| {
            format!(
                "offset {offset}:\n  want {want}\n  have {}",
                written[offset]
            )
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "dead letters differ:\n{}",
        mismatches.join("\n")
    );
}

/// Every committed fuzz input (seed corpus and crash regressions) through its target's oracle.
#[test]
fn fuzz_corpora_replay_cleanly() {
    let root = workspace_root().join("fuzz/corpus");
    type Oracle = fn(&[u8]);
    let targets: [(&str, Oracle); 5] = [
        ("event_decode", fuzz_checks::check_event),
        ("json_to_arrow", fuzz_checks::check_json_to_arrow),
        ("avro_to_arrow", fuzz_checks::check_avro_to_arrow),
        ("java_properties", fuzz_checks::check_java_properties),
        ("commit_metadata", fuzz_checks::check_commit_metadata),
    ];
    for (target, check) in targets {
        let dir = root.join(target);
        let files = crate::common::all_files(&dir);
        assert!(
            !files.is_empty(),
            "no corpus for {target} in {}",
            dir.display()
        );
        for file in files {
            let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(
                outcome.is_ok(),
                "{target}: {} fails its oracle",
                file.display()
            );
        }
    }
}

/// The Avro seeds were written by fastavro with the fuzz schema: the decoder must accept every one of them, bare
/// and (after unframing) Confluent- or Glue-framed, so that the fuzzer starts from valid datums.
#[test]
fn fastavro_seeds_of_the_fuzz_schema_are_accepted() {
    let avro =
        hudi_sink::schema::avro::AvroSchema::parse(fuzz_checks::FUZZ_SCHEMA).expect("schema");
    let arrow = std::sync::Arc::new(hudi_sink::schema::arrow::avro_to_arrow(&avro).expect("arrow"));
    let mut d = hudi_sink::record::decode::RecordDecoder::try_new(arrow, &avro).expect("decoder");
    let plan = d.compile_avro(&avro).expect("plan");
    let files = crate::common::all_files(&workspace_root().join("fuzz/corpus/avro_to_arrow"));
    assert_eq!(files.len(), 6, "{files:?}");
    for file in &files {
        let data = std::fs::read(file).expect("seed");
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let body = if name.starts_with("datum-") {
            data
        } else {
            hudi_sink::registry::unframe(&data)
                .expect("framed")
                .body
                .into_owned()
        };
        d.append_avro(&plan, &body)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(d.finish().expect("batch").num_rows(), 6);
}
