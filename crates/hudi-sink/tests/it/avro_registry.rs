//! Avro values from schema registries, end to end: payloads written by `fastavro` (never by this project's
//! encoder) in Confluent framing against a stub Confluent registry served on 127.0.0.1, and in Glue framing
//! (plain and zlib) against moto's Glue Schema Registry. Every Avro type the table schema supports, a writer
//! schema that differs from the table's (fields reordered, one removed, one added with a default, an int
//! widened to long) read into a pinned table schema (`hudi.sink.schema.evolution=pinned`), bad framings and
//! unknown ids: the table read back by hudi-rs 0.5.0 equals, row for row,
//! what fastavro's own resolving reader gives for each datum with the table schema as reader schema; every
//! bad value is a dead letter with its stage; a registry that answers 500 fails the invocation and writes
//! nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use hudi_sink::bootstrap::build_sink;
use hudi_sink::source::event::KafkaBatch;
use serde_json::{json, Map, Value};

use crate::common::python::{python, read_rows};
use crate::common::{all_files, workspace_root};

/// The table schema: every type the sink maps, nested and nullable ones included.
fn table_schema() -> Value {
    json!({
        "type": "record", "name": "trips_record", "namespace": "hoodie.trips",
        "fields": [
            {"name": "uuid", "type": "string"},
            {"name": "ts", "type": "long"},
            {"name": "rider", "type": ["null", "string"], "default": null},
            {"name": "fare", "type": "double"},
            {"name": "passengers", "type": "long"},
            {"name": "rating", "type": ["null", "float"], "default": null},
            {"name": "paid", "type": "boolean"},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "DONE"]}},
            {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 4}},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "big", "type": {"type": "fixed", "name": "Dec16", "size": 16, "logicalType": "decimal",
                                     "precision": 38, "scale": 4}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
            {"name": "stops", "type": {"type": "array", "items": {"type": "record", "name": "Stop", "fields": [
                {"name": "name", "type": "string"},
                {"name": "lat", "type": "double"},
                // Inline, not a reference to `Status`: hudi-rs 0.5.0 reads no named references.
                {"name": "kind", "type": ["null", {"type": "enum", "name": "Kind", "symbols": ["WALK", "DONE"]}],
                 "default": null}
            ]}}},
            {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
            {"name": "raw", "type": ["null", "bytes"], "default": null},
            // A plain string: hudi-rs 0.5.0 reads `uuid` strings as 16-byte fixed values and refuses the file.
            {"name": "id2", "type": "string"},
            {"name": "city", "type": "string"},
            {"name": "note", "type": ["null", "string"], "default": null},
            {"name": "level", "type": "int", "default": 3}
        ]
    })
}

/// A producer's older schema: city first, `passengers` an int, no `note` or `level`, and an `extra` field
/// the table does not have (nested, so that skipping it walks a record, an array and a union).
fn writer_schema() -> Value {
    let mut table = table_schema();
    let fields = table["fields"].as_array_mut().expect("fields");
    fields.retain(|f| f["name"] != "note" && f["name"] != "level");
    for f in fields.iter_mut() {
        if f["name"] == "passengers" {
            f["type"] = json!("int");
        }
    }
    let city = fields
        .iter()
        .position(|f| f["name"] == "city")
        .expect("city");
    let city = fields.remove(city);
    fields.insert(0, city);
    fields.insert(
        3,
        json!({"name": "extra", "type": {"type": "record", "name": "Extra", "fields": [
            {"name": "xs", "type": {"type": "array", "items": ["null", "long", "string"]}},
            {"name": "m", "type": {"type": "map", "values": "double"}}
        ]}}),
    );
    table
}

/// A datum of [`writer_schema`] (or of the table schema with `passengers` as given), as fastavro takes it.
fn datum(n: i64, city: &str) -> Value {
    let status = ["NEW", "PAID", "DONE"][(n % 3) as usize];
    json!({
        "uuid": format!("trip-{n}"), "ts": 1000 + n, "rider": if n % 2 == 0 { json!(format!("rider-{n}")) } else { Value::Null },
        "fare": 10.25 * n as f64, "passengers": n, "rating": if n % 3 == 0 { Value::Null } else { json!(4.5) },
        "paid": n % 2 == 1, "status": status,
        "tag": format!("t{:03}", n), "amount": format!("{}.{:02}", n * 7, n % 100),
        "big": format!("-{}1234567890123456789012345678.{:04}", n, n),
        "day": 19_000 + n, "at_ms": 1_700_000_000_000i64 + n, "at_us": 1_700_000_000_000_000i64 + n,
        "tod": 3_600_000 + n,
        "stops": (0..n % 3).map(|i| json!({"name": format!("s{i}"), "lat": 1.5 * i as f64,
                                           "kind": if i == 0 { Value::Null } else { json!("DONE") }})).collect::<Vec<_>>(),
        "attrs": {"a": n, "b": null},
        "raw": if n % 2 == 0 { json!("\u{0}\u{1}\u{ff}") } else { Value::Null },
        "id2": format!("00000000-0000-4000-8000-{:012}", n),
        "city": city,
        "extra": {"xs": [null, n, "x"], "m": {"k": 0.5}},
        "note": "a note", "level": 9
    })
}

/// A stub Confluent registry (`avro_registry.py serve`), stopped when dropped.
pub(crate) struct StubRegistry {
    child: Child,
    pub(crate) port: u16,
    dir: PathBuf,
}

impl StubRegistry {
    pub(crate) fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("registry dir");
        let mut child = Command::new(python())
            .arg(workspace_root().join("tests/python/avro_registry.py"))
            .arg("serve")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the stub registry");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("stub registry: {line:?}"));
        StubRegistry {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    pub(crate) fn put(&self, id: i32, schema: &Value) {
        std::fs::write(self.dir.join(format!("{id}.avsc")), schema.to_string()).expect("schema");
    }

    /// Makes `id` the latest version of `subject`.
    pub(crate) fn set_latest(&self, subject: &str, id: i32) {
        std::fs::create_dir_all(self.dir.join("subjects")).expect("subjects dir");
        std::fs::write(self.dir.join("subjects").join(subject), id.to_string()).expect("latest");
    }

    /// Answers `subject` with HTTP `status` (`None`: as its latest version says).
    pub(crate) fn set_subject_status(&self, subject: &str, status: Option<u16>) {
        std::fs::create_dir_all(self.dir.join("subjects")).expect("subjects dir");
        let path = self.dir.join("subjects").join(format!("{subject}.status"));
        match status {
            Some(status) => std::fs::write(path, status.to_string()).expect("status"),
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// The paths asked so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("requests.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for StubRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Record keys with their base64 values and `valueSchemaMetadata`.
pub(crate) type Values = Vec<(String, String, Option<Value>)>;
/// fastavro's resolved row per value (`None`: a value that must be refused).
pub(crate) type Rows = Vec<Option<Map<String, Value>>>;

/// Runs `avro_registry.py encode` on `spec`: the values and fastavro's resolved rows.
pub(crate) fn encode(dir: &Path, spec: &Value) -> (Values, Rows) {
    let spec_path = dir.join("spec.json");
    let out_path = dir.join("encoded.json");
    std::fs::write(&spec_path, spec.to_string()).expect("spec");
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/avro_registry.py"))
        .arg("encode")
        .arg(&spec_path)
        .arg(&out_path)
        .output()
        .expect("run encode");
    assert!(
        out.status.success(),
        "encode: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&out_path).expect("out")).expect("json");
    let values = v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| {
            (
                x["key"].as_str().expect("key").to_string(),
                x["value_b64"].as_str().expect("b64").to_string(),
                x.get("metadata").cloned(),
            )
        })
        .collect();
    let rows = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_object().cloned())
        .collect();
    (values, rows)
}

/// An ESM event of `values` on `trips-0`, at offsets from 0.
fn batch(values: &[(String, String, Option<Value>)]) -> KafkaBatch {
    batch_at(values, 0)
}

/// As [`batch`], at offsets from `first_offset` (a stream delivered batch by batch).
pub(crate) fn batch_at(
    values: &[(String, String, Option<Value>)],
    first_offset: i64,
) -> KafkaBatch {
    let records: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, (key, b64, metadata))| {
            let mut r = json!({"topic": "trips", "partition": 0, "offset": first_offset + i as i64,
                   "timestamp": 1_764_412_800_000i64 + i as i64,
                   "timestampType": "CREATE_TIME", "key": base64_of(key), "value": b64, "headers": []});
            if let Some(m) = metadata {
                r["valueSchemaMetadata"] = m.clone();
            }
            r
        })
        .collect();
    KafkaBatch::from_value(json!({
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/trips/00000000-0000-0000-0000-000000000000-1",
        "bootstrapServers": "b-1.trips.kafka.example:9092",
        "records": { "trips-0": records },
    }))
    .expect("valid event")
}

pub(crate) fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn props(dir: &Path, extra: &[(&str, String)]) -> BTreeMap<String, String> {
    let schema = dir.join("trips.avsc");
    std::fs::write(&schema, table_schema().to_string()).expect("table schema");
    let mut p: BTreeMap<String, String> = [
        ("hoodie.base.path", dir.join("trips").display().to_string()),
        ("hoodie.table.name", "trips".to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            schema.display().to_string(),
        ),
        (
            "hoodie.datasource.write.recordkey.field",
            "uuid".to_string(),
        ),
        (
            "hoodie.datasource.write.partitionpath.field",
            "city".to_string(),
        ),
        ("hoodie.datasource.write.precombine.field", "ts".to_string()),
        ("hoodie.index.type", "BUCKET".to_string()),
        ("hoodie.bucket.index.num.buckets", "2".to_string()),
        ("hudi.sink.value.format", "avro".to_string()),
        // These tests read every value into the schema file's table schema, as Hudi's
        // KafkaAvroSchemaDeserializer does: the writer schema's extra field is not stored
        // (`schema_evolution.rs` tests the default, evolving mode).
        ("hudi.sink.schema.evolution", "pinned".to_string()),
        ("hudi.sink.commit.interval.ms", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in extra {
        p.insert(k.to_string(), v.clone());
    }
    p
}

/// The table's rows by record key, data columns only.
pub(crate) fn table_rows(table: &Path) -> BTreeMap<String, Map<String, Value>> {
    let mut rows = BTreeMap::new();
    for mut row in read_rows(table, "hudi", &["snapshot"]) {
        row.retain(|k, _| !k.starts_with("_hoodie_"));
        let key = row["uuid"].as_str().expect("uuid").to_string();
        assert!(rows.insert(key.clone(), row).is_none(), "key {key} twice");
    }
    rows
}

/// Dead letters under `dir` as (offset, stage, reason).
fn letters(dir: &Path) -> Vec<(i64, String, String)> {
    let mut out = Vec::new();
    for f in all_files(dir) {
        for line in std::fs::read_to_string(&f).expect("letters").lines() {
            let v: Value = serde_json::from_str(line).expect("letter");
            out.push((
                v["offset"].as_i64().expect("offset"),
                v["stage"].as_str().expect("stage").to_string(),
                v["reason"].as_str().expect("reason").to_string(),
            ));
        }
    }
    out.sort();
    out
}

/// What fastavro says each good record reads as, by key.
fn expected(
    values: &[(String, String, Option<Value>)],
    rows: &[Option<Map<String, Value>>],
) -> BTreeMap<String, Map<String, Value>> {
    values
        .iter()
        .zip(rows)
        .filter_map(|((key, _, _), row)| row.clone().map(|r| (key.clone(), r)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_avro_of_every_type_reads_back_as_fastavro_resolves_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = StubRegistry::start(&dir.path().join("registry"));
    registry.put(7, &writer_schema());
    registry.put(8, &table_schema());
    registry.put(
        9,
        &json!({"type": "record", "name": "other", "fields": [{"name": "x", "type": "int"}]}),
    );
    let mut records = Vec::new();
    for n in 1..=6 {
        let city = if n % 2 == 0 { "sf" } else { "nyc" };
        records.push(json!({"key": format!("trip-{n}"), "schema": "w", "framing": "confluent:7", "datum": datum(n, city)}));
    }
    // The table schema itself as the writer schema, through a second id.
    records.push(
        json!({"key": "trip-7", "schema": "t", "framing": "confluent:8", "datum": datum(7, "sf")}),
    );
    // Bad values: unknown id, an id whose schema lacks required table fields, truncated body, not framed,
    // and an int out of range of the writer's... (a body cut short).
    records.push(json!({"key": "bad-unknown", "schema": "t", "framing": "confluent:404", "datum": datum(8, "sf"), "expect": false}));
    records.push(json!({"key": "bad-other", "schema": "o", "framing": "confluent:9", "datum": {"x": 1}, "expect": false}));
    records.push(json!({"key": "bad-magic", "hex": "7b7d", "expect": false}));
    records.push(json!({"key": "bad-short", "hex": "000000000702", "expect": false}));
    // The ESM's schema-registry SOURCE mode: the framing removed, the id in valueSchemaMetadata.
    records.push(
        json!({"key": "trip-9", "schema": "w", "framing": "bare", "datum": datum(9, "nyc"),
                        "metadata": {"dataFormat": "AVRO", "schemaId": "7"}}),
    );
    records.push(
        json!({"key": "bad-proto", "schema": "w", "framing": "bare", "datum": datum(10, "nyc"),
                        "metadata": {"dataFormat": "PROTOBUF", "schemaId": "7"}, "expect": false}),
    );
    let spec = json!({"table": table_schema(), "schemas": {"w": writer_schema(), "t": table_schema(),
                       "o": {"type": "record", "name": "other", "fields": [{"name": "x", "type": "int"}]}},
                      "records": records});
    let (values, rows) = encode(dir.path(), &spec);
    let url = format!(
        "http://127.0.0.1:{}/subjects/trips-value/versions/latest",
        registry.port
    );
    let props = props(
        dir.path(),
        &[
            ("hoodie.streamer.schemaprovider.registry.url", url),
            (
                "hudi.sink.dead.letter.path",
                dir.path().join("dead").display().to_string(),
            ),
        ],
    );
    let sink = build_sink(&props, "avro-test").await.expect("sink");
    let report = sink.process(batch(&values)).await.expect("process");
    assert!(report.balanced(), "{report:?}");
    assert_eq!(
        (report.records_in, report.dead_lettered),
        (13, 5),
        "{report:?}"
    );
    // The seven values of writer schema 7 carry `extra`, which the pinned table lacks: dropped and counted.
    assert_eq!(report.ignored_fields, 7, "{report:?}");

    let want = expected(&values, &rows);
    assert_eq!(want.len(), 8);
    // fastavro filled `note` and `level` from the table schema's defaults and widened `passengers`.
    assert_eq!(want["trip-1"]["level"], json!(3));
    assert_eq!(want["trip-1"]["note"], Value::Null);
    assert_eq!(table_rows(&dir.path().join("trips")), want);

    let got = letters(&dir.path().join("dead"));
    let stages: Vec<(i64, &str)> = got.iter().map(|(o, s, _)| (*o, s.as_str())).collect();
    assert_eq!(
        stages,
        [
            (7, "schema"),
            (8, "schema"),
            (9, "schema"),
            (10, "not_avro"),
            (12, "schema")
        ],
        "{got:?}"
    );
    assert!(
        got[0]
            .2
            .contains("Confluent schema id 404 is not in the registry"),
        "{got:?}"
    );
    assert!(
        got[1].2.contains("field `uuid`") && got[1].2.contains("no default"),
        "{got:?}"
    );
    assert!(got[4].2.contains("\"PROTOBUF\""), "{got:?}");
    assert!(got[2].2.contains("unknown framing byte 0x7b"), "{got:?}");
    // Each id was asked once; the second batch asks nothing.
    let asked = registry.requests();
    assert_eq!(asked.len(), 4, "{asked:?}");
    let again = sink
        .process(batch(&values[..2]))
        .await
        .expect("second batch");
    assert_eq!(again.skipped, 2, "{again:?}");
    assert_eq!(registry.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_fails_fails_the_invocation_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = StubRegistry::start(&dir.path().join("registry"));
    std::fs::write(registry.dir.join("8.status"), "500").expect("status");
    let spec = json!({"table": table_schema(), "schemas": {"t": table_schema()},
                      "records": [{"key": "trip-1", "schema": "t", "framing": "confluent:8", "datum": datum(1, "sf")}]});
    let (values, _) = encode(dir.path(), &spec);
    let url = format!("http://user:p%40ss@127.0.0.1:{}", registry.port);
    let props = props(
        dir.path(),
        &[("hoodie.streamer.schemaprovider.registry.url", url)],
    );
    let sink = build_sink(&props, "avro-test").await.expect("sink");
    let err = sink
        .process(batch(&values))
        .await
        .expect_err("registry 500");
    let text = err.to_string();
    assert!(
        text.contains("schema registry unavailable") && text.contains("HTTP 500"),
        "{text}"
    );
    // Basic auth from the URL's user info, percent-decoded.
    let asked = registry.requests();
    assert!(
        asked
            .iter()
            .all(|l| l == "/schemas/ids/8 Basic dXNlcjpwQHNz"),
        "{asked:?}"
    );
    // Nothing but the table's creation: no instant, no data file.
    let table = dir.path().join("trips");
    let data: Vec<_> = all_files(&table)
        .into_iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == ".hoodie"))
        .collect();
    assert!(data.is_empty(), "{data:?}");
    // Once the registry answers, the redelivered batch is written.
    std::fs::remove_file(registry.dir.join("8.status")).expect("status");
    registry.put(8, &table_schema());
    let report = sink.process(batch(&values)).await.expect("redelivery");
    assert_eq!(report.counts.inserted, 1, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glue_framed_avro_plain_and_zlib_reads_back_through_moto() {
    let moto = crate::common::moto::moto();
    std::env::set_var("AWS_ENDPOINT_URL_GLUE", &moto.endpoint);
    let glue = aws_sdk_glue::Client::new(&crate::common::moto::sdk_config().await);
    let registry_name = crate::common::moto::unique_name("reg");
    glue.create_registry()
        .registry_name(&registry_name)
        .send()
        .await
        .expect("create registry");
    let created = glue
        .create_schema()
        .registry_id(
            aws_sdk_glue::types::RegistryId::builder()
                .registry_name(&registry_name)
                .build(),
        )
        .schema_name("trips-value")
        .data_format(aws_sdk_glue::types::DataFormat::Avro)
        .compatibility(aws_sdk_glue::types::Compatibility::None)
        .schema_definition(writer_schema().to_string())
        .send()
        .await
        .expect("create schema");
    let version = created.schema_version_id().expect("version id").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut records = Vec::new();
    for n in 1..=4 {
        let framing = if n % 2 == 0 {
            format!("glue-zlib:{version}")
        } else {
            format!("glue:{version}")
        };
        records.push(json!({"key": format!("trip-{n}"), "schema": "w", "framing": framing, "datum": datum(n, "sf")}));
    }
    records.push(json!({"key": "bad-version", "schema": "w", "framing": "glue:00000000-0000-4000-8000-000000000001",
                        "datum": datum(5, "sf"), "expect": false}));
    records.push(
        json!({"key": "bad-bomb", "framing": format!("glue-bomb:{version}"), "expect": false}),
    );
    let spec =
        json!({"table": table_schema(), "schemas": {"w": writer_schema()}, "records": records});
    let (values, rows) = encode(dir.path(), &spec);
    let props = props(
        dir.path(),
        &[(
            "hudi.sink.dead.letter.path",
            dir.path().join("dead").display().to_string(),
        )],
    );
    let sink = build_sink(&props, "avro-glue-test").await.expect("sink");
    let report = sink.process(batch(&values)).await.expect("process");
    assert_eq!(
        (report.records_in, report.dead_lettered),
        (6, 2),
        "{report:?}"
    );
    assert_eq!(
        table_rows(&dir.path().join("trips")),
        expected(&values, &rows)
    );
    let got = letters(&dir.path().join("dead"));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0, got[0].1.as_str()), (4, "schema"), "{got:?}");
    assert!(got[0].2.contains("is not in the registry"), "{got:?}");
    // A zlib bomb stops at the payload limit.
    assert_eq!((got[1].0, got[1].1.as_str()), (5, "schema"), "{got:?}");
    assert!(got[1].2.contains("inflates past 6291456 bytes"), "{got:?}");
}
