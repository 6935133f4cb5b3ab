//! Schema evolution end to end, under Hudi's schema-on-write rules: one Kafka stream whose producer moves
//! from writer schema v1 to v2 (a nullable `note` added, `passengers` widened from int to long), v1 and v2
//! values mixed in one batch, and a v1 producer still writing after the change. Values are Avro written by
//! `fastavro` in Confluent framing against a stub registry on 127.0.0.1. On copy-on-write (stored v1 files
//! merged into v2 files) and merge-on-read (v2 log blocks on v1 base files, then an inline compaction), the
//! table read back by hudi-rs 0.5.0 equals, row for row, what fastavro's resolving reader gives for each
//! surviving datum with v2 as the reader schema: `note` null for v1 rows, `passengers` widened. Each commit
//! carries the schema in force; a change Hudi refuses (a new non-nullable field) fails the invocation
//! naming the field and both schemas, and writes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use hudi_sink::bootstrap::build_sink;
use serde_json::{json, Map, Value};

use crate::avro_registry::{base64_of, batch_at, encode, table_rows, StubRegistry};
use crate::common::all_files;

fn v1() -> Value {
    json!({
        "type": "record", "name": "trips_record", "namespace": "hoodie.trips",
        "fields": [
            {"name": "uuid", "type": "string"},
            {"name": "ts", "type": "long"},
            {"name": "city", "type": "string"},
            {"name": "passengers", "type": "int"},
            {"name": "rider", "type": ["null", "string"], "default": null}
        ]
    })
}

/// v1 with `passengers` a long and a nullable `note` at the end.
fn v2() -> Value {
    let mut s = v1();
    let fields = s["fields"].as_array_mut().expect("fields");
    fields[3]["type"] = json!("long");
    fields.push(json!({"name": "note", "type": ["null", "string"], "default": null}));
    s
}

/// v2 with a new field that is not nullable: Hudi refuses it.
fn refused() -> Value {
    let mut s = v2();
    s["fields"]
        .as_array_mut()
        .expect("fields")
        .push(json!({"name": "level", "type": "int"}));
    s
}

/// One record of the stream: its key, writer schema (`v1`/`v2`) and datum.
fn trip(n: i64, ts: i64, schema: &str, passengers: i64, note: Option<&str>) -> Value {
    let city = if n % 2 == 0 { "sf" } else { "nyc" };
    let mut datum = json!({"uuid": format!("trip-{n}"), "ts": ts, "city": city, "passengers": passengers,
                           "rider": format!("rider-{n}")});
    if schema == "v2" {
        datum["note"] = note.map_or(Value::Null, |s| json!(s));
    }
    let id = if schema == "v1" { 1 } else { 2 };
    json!({"key": format!("trip-{n}"), "schema": schema, "framing": format!("confluent:{id}"), "datum": datum})
}

/// A copy-on-write table at `dir/trips` keyed by `uuid`, partitioned by `city`, bucketed, with `schema` as
/// its schema file.
fn table_props(dir: &Path, schema: &Value) -> BTreeMap<String, String> {
    let schema_path = dir.join("trips.avsc");
    std::fs::write(&schema_path, schema.to_string()).expect("table schema");
    [
        ("hoodie.base.path", dir.join("trips").display().to_string()),
        ("hoodie.table.name", "trips".to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            schema_path.display().to_string(),
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
        ("hudi.sink.commit.interval.ms", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// [`table_props`] with v1, of `table_type`, reading registry-framed Avro (inline compaction on
/// merge-on-read).
fn props(dir: &Path, registry_port: u16, table_type: &str) -> BTreeMap<String, String> {
    let mut props = table_props(dir, &v1());
    for (k, v) in [
        ("hoodie.table.type", table_type.to_string()),
        (
            "hoodie.streamer.schemaprovider.registry.url",
            format!("http://127.0.0.1:{registry_port}"),
        ),
        ("hoodie.compact.inline", "true".to_string()),
        ("hoodie.compact.inline.max.delta.commits", "2".to_string()),
        ("hudi.sink.value.format", "avro".to_string()),
    ] {
        props.insert(k.to_string(), v);
    }
    props
}

/// The completed commit-like instants' metadata, oldest first, as (file name, metadata).
fn commits(table: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(table.join(".hoodie"))
        .expect("timeline")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().to_string();
            (name.ends_with(".commit") || name.ends_with(".deltacommit")).then_some(name)
        })
        .map(|name| {
            let text = std::fs::read(table.join(".hoodie").join(&name)).expect("commit");
            (name, serde_json::from_slice(&text).expect("commit json"))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The field names and `passengers` type of a commit's schema.
fn schema_of(commit: &Value) -> (Vec<String>, Value) {
    let text = commit["extraMetadata"]["schema"].as_str().expect("schema");
    let schema: Value = serde_json::from_str(text).expect("schema json");
    let fields = schema["fields"].as_array().expect("fields");
    let names = fields
        .iter()
        .map(|f| f["name"].as_str().expect("name").to_string())
        .collect();
    let passengers = fields
        .iter()
        .find(|f| f["name"] == "passengers")
        .expect("passengers")["type"]
        .clone();
    (names, passengers)
}

async fn evolves(table_type: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = StubRegistry::start(&dir.path().join("registry"));
    registry.put(1, &v1());
    registry.put(2, &v2());
    registry.put(3, &refused());
    // The stream, batch by batch. The larger `ts` of a key wins.
    let batches: Vec<Vec<Value>> = vec![
        // v1 only: the table is created with v1.
        (1..=4).map(|n| trip(n, 100 + n, "v1", n, None)).collect(),
        // v1 and v2 mixed: v2 evolves the table; trip-1 and trip-2 are updated (one each way), trip-6 is new
        // with a passenger count past i32.
        vec![
            trip(5, 105, "v1", 5, None),
            trip(6, 106, "v2", 5_000_000_000, Some("six")),
            trip(1, 201, "v2", 3_000_000_000, Some("updated")),
            trip(2, 202, "v1", 22, None),
        ],
        // A v1 producer after the change, and a v2 update with a null note.
        vec![trip(7, 107, "v1", 7, None), trip(3, 203, "v2", 33, None)],
    ];
    let flat: Vec<Value> = batches.iter().flatten().cloned().collect();
    // fastavro resolves every datum with v2 as the reader schema: what the table must hold.
    let spec = json!({"table": v2(), "schemas": {"v1": v1(), "v2": v2()}, "records": flat});
    let (values, rows) = encode(dir.path(), &spec);
    let mut want: BTreeMap<String, (i64, Map<String, Value>)> = BTreeMap::new();
    for ((key, _, _), row) in values.iter().zip(&rows) {
        let row = row.clone().expect("every record is good");
        let ts = row["ts"].as_i64().expect("ts");
        if want.get(key).is_none_or(|(t, _)| *t < ts) {
            want.insert(key.clone(), (ts, row));
        }
    }
    let want: BTreeMap<String, Map<String, Value>> =
        want.into_iter().map(|(k, (_, r))| (k, r)).collect();
    assert_eq!(want["trip-4"]["note"], Value::Null);
    assert_eq!(want["trip-1"]["passengers"], json!(3_000_000_000i64));

    let props = props(dir.path(), registry.port, table_type);
    let sink = build_sink(&props, "evolution-test").await.expect("sink");
    let table = dir.path().join("trips");
    let mut offset = 0i64;
    for b in &batches {
        let slice = &values[offset as usize..offset as usize + b.len()];
        let report = sink
            .process(batch_at(slice, offset))
            .await
            .unwrap_or_else(|e| panic!("{table_type} batch at {offset}: {e}"));
        assert_eq!(report.dead_lettered, 0, "{report:?}");
        offset += b.len() as i64;
    }
    assert_eq!(table_rows(&table), want, "{table_type}: hudi-rs read");

    // Each commit carries the schema in force: v1 first, v2 from the batch that evolved it on.
    let done = commits(&table);
    let v1_fields = ["uuid", "ts", "city", "passengers", "rider"];
    let v2_fields = ["uuid", "ts", "city", "passengers", "rider", "note"];
    assert_eq!(
        schema_of(&done[0].1),
        (v1_fields.map(String::from).to_vec(), json!("int"))
    );
    for (name, meta) in &done[1..] {
        assert_eq!(
            schema_of(meta),
            (v2_fields.map(String::from).to_vec(), json!("long")),
            "{name}"
        );
    }
    if table_type == "MERGE_ON_READ" {
        // The inline compaction merged v1 base files with v2 log blocks into v2 base files.
        assert!(
            done.iter().any(|(name, _)| name.ends_with(".commit")),
            "a compaction ran: {done:?}"
        );
    }

    // A change Hudi refuses fails the invocation, names the field and both schemas, writes nothing.
    let before = all_files(&table);
    let spec = json!({"table": v2(), "schemas": {"r": refused()}, "records": [
        {"key": "trip-9", "schema": "r", "framing": "confluent:3",
         "datum": {"uuid": "trip-9", "ts": 300, "city": "sf", "passengers": 1, "rider": null, "note": null, "level": 1}}
    ]});
    let (bad, _) = encode(dir.path(), &spec);
    let err = sink
        .process(batch_at(&bad, offset))
        .await
        .expect_err("a refused change");
    let text = err.to_string();
    assert!(
        text.contains("field `level`")
            && text.contains("non-nullable")
            && text.contains("table schema:")
            && text.contains("writer schema:")
            && text.contains("\"note\""),
        "{text}"
    );
    assert_eq!(all_files(&table), before, "nothing written");
    assert_eq!(table_rows(&table), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_on_write_evolves_from_v1_to_v2_and_reads_back_row_exact() {
    evolves("COPY_ON_WRITE").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_evolves_and_compacts_v1_bases_with_v2_logs() {
    evolves("MERGE_ON_READ").await;
}

/// The schema file changes between deployments (a nullable field added): the table evolves at open, and a
/// change Hudi refuses stops the sink before it writes anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_schema_file_evolves_the_json_path_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let props = |schema: &Value| table_props(dir.path(), schema);
    let json_batch = |rows: &[Value], first: i64| {
        let values: Vec<(String, String, Option<Value>)> = rows
            .iter()
            .map(|r| {
                (
                    r["uuid"].as_str().expect("uuid").to_string(),
                    base64_of(&r.to_string()),
                    None,
                )
            })
            .collect();
        batch_at(&values, first)
    };
    let first = [
        json!({"uuid": "a", "ts": 1, "city": "sf", "passengers": 1, "rider": "r"}),
        json!({"uuid": "b", "ts": 2, "city": "nyc", "passengers": 2, "rider": null}),
    ];
    let sink = build_sink(&props(&v1()), "json-evolution")
        .await
        .expect("sink v1");
    sink.process(json_batch(&first, 0)).await.expect("v1 batch");
    drop(sink);
    let second = [
        json!({"uuid": "a", "ts": 3, "city": "sf", "passengers": 4_000_000_000i64, "rider": "r", "note": "n"}),
        json!({"uuid": "c", "ts": 4, "city": "nyc", "passengers": 3, "rider": "q"}),
    ];
    let sink = build_sink(&props(&v2()), "json-evolution")
        .await
        .expect("sink v2");
    sink.process(json_batch(&second, 2))
        .await
        .expect("v2 batch");
    let row = |uuid: &str, ts: i64, city: &str, passengers: i64, rider: Value, note: Value| {
        let v = json!({"uuid": uuid, "ts": ts, "city": city, "passengers": passengers, "rider": rider,
                       "note": note});
        (uuid.to_string(), v.as_object().expect("row").clone())
    };
    let want: BTreeMap<String, Map<String, Value>> = [
        row("a", 3, "sf", 4_000_000_000, json!("r"), json!("n")),
        row("b", 2, "nyc", 2, Value::Null, Value::Null),
        row("c", 4, "nyc", 3, json!("q"), Value::Null),
    ]
    .into_iter()
    .collect();
    assert_eq!(table_rows(&table), want);
    drop(sink);
    // An older schema file after the change leaves the table at v2 (its commits keep v2).
    let sink = build_sink(&props(&v1()), "json-evolution")
        .await
        .expect("sink v1 again");
    sink.process(json_batch(
        &[json!({"uuid": "d", "ts": 5, "city": "sf", "passengers": 5, "rider": null})],
        4,
    ))
    .await
    .expect("v1 batch after v2");
    let latest = commits(&table).pop().expect("a commit");
    assert_eq!(schema_of(&latest.1).1, json!("long"));
    drop(sink);
    // A refused change: the sink does not start.
    let Err(err) = build_sink(&props(&refused()), "json-evolution").await else {
        panic!("a refused schema file must stop the sink at open");
    };
    assert!(err.to_string().contains("field `level`"), "{err}");
}

/// JSON values whose schema is a registry subject's latest version (HoodieStreamer's
/// `SchemaRegistryProvider`): the table is created with v1 from the registry (no schema file), a new latest
/// version v2 evolves it before the next batch is decoded, the registry is asked at most once per refresh
/// interval, and a refused latest version or an unavailable registry fails the invocation with nothing
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_path_follows_the_registry_subjects_latest_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let registry = StubRegistry::start(&dir.path().join("registry"));
    registry.put(1, &v1());
    registry.put(2, &v2());
    registry.put(3, &refused());
    registry.set_latest("trips-value", 1);
    let props = |refresh_ms: u64| {
        let mut p = table_props(dir.path(), &v1());
        p.remove("hoodie.streamer.schemaprovider.source.schema.file");
        p.insert(
            "hoodie.streamer.schemaprovider.registry.url".into(),
            format!(
                "http://127.0.0.1:{}/subjects/trips-value/versions/latest",
                registry.port
            ),
        );
        p.insert(
            "hudi.sink.schema.registry.refresh.ms".into(),
            refresh_ms.to_string(),
        );
        p
    };
    let latest_asks = || {
        registry
            .requests()
            .iter()
            .filter(|r| r.starts_with("/subjects/trips-value/versions/latest"))
            .count()
    };
    let json_batch = |rows: &[Value], first: i64| {
        let values: Vec<(String, String, Option<Value>)> = rows
            .iter()
            .map(|r| {
                let key = r["uuid"].as_str().expect("uuid").to_string();
                (key, base64_of(&r.to_string()), None)
            })
            .collect();
        batch_at(&values, first)
    };
    // A long refresh interval: the subject is asked once, when the table is created with v1.
    let sink = build_sink(&props(3_600_000), "json-latest")
        .await
        .expect("sink");
    sink.process(json_batch(
        &[json!({"uuid": "a", "ts": 1, "city": "sf", "passengers": 1, "rider": "r"})],
        0,
    ))
    .await
    .expect("v1 batch");
    // A second writer that asks every batch (refresh 0), opened while v1 is still the latest.
    let every_batch = build_sink(&props(0), "json-latest-2").await.expect("sink");
    // Each asked once, when it opened the table.
    assert_eq!(latest_asks(), 2);
    registry.set_latest("trips-value", 2);
    // v2 is not seen within the interval: its `note` is dropped and counted, and the table stays v1.
    let report = sink
        .process(json_batch(
            &[json!({"uuid": "b", "ts": 2, "city": "nyc", "passengers": 2, "rider": null, "note": "early"})],
            1,
        ))
        .await
        .expect("batch within the interval");
    assert_eq!(report.ignored_fields, 1, "{report:?}");
    assert_eq!(latest_asks(), 2);
    assert_eq!(
        schema_of(&commits(&table).pop().expect("commit").1).1,
        json!("int")
    );
    drop(sink);

    // The writer that asks every batch sees v2, which evolves the table before the batch is decoded.
    let sink = every_batch;
    let asks = latest_asks();
    let report = sink
        .process(json_batch(
            &[
                json!({"uuid": "a", "ts": 3, "city": "sf", "passengers": 4_000_000_000i64, "rider": "r",
                       "note": "n"}),
                json!({"uuid": "c", "ts": 4, "city": "nyc", "passengers": 3, "rider": "q"}),
            ],
            2,
        ))
        .await
        .expect("v2 batch");
    assert_eq!(report.ignored_fields, 0, "{report:?}");
    assert_eq!(latest_asks(), asks + 1);
    let (names, passengers) = schema_of(&commits(&table).pop().expect("commit").1);
    assert_eq!(
        (names.last().map(String::as_str), passengers),
        (Some("note"), json!("long"))
    );
    let row = |uuid: &str, ts: i64, city: &str, passengers: i64, rider: Value, note: Value| {
        let v = json!({"uuid": uuid, "ts": ts, "city": city, "passengers": passengers, "rider": rider,
                       "note": note});
        (uuid.to_string(), v.as_object().expect("row").clone())
    };
    let want: BTreeMap<String, Map<String, Value>> = [
        row("a", 3, "sf", 4_000_000_000, json!("r"), json!("n")),
        row("b", 2, "nyc", 2, Value::Null, Value::Null),
        row("c", 4, "nyc", 3, json!("q"), Value::Null),
    ]
    .into_iter()
    .collect();
    assert_eq!(table_rows(&table), want);

    // A refused latest version, then an unavailable registry: the invocation fails, nothing is written.
    let before = all_files(&table);
    let next = || {
        json_batch(
            &[
                json!({"uuid": "d", "ts": 5, "city": "sf", "passengers": 5, "rider": null, "note": "x"}),
            ],
            4,
        )
    };
    registry.set_latest("trips-value", 3);
    let err = sink.process(next()).await.expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("field `level`"), "{text}");
    registry.set_subject_status("trips-value", Some(500));
    let err = sink.process(next()).await.expect_err("unavailable");
    assert!(
        err.to_string().contains("schema registry unavailable")
            && err.to_string().contains("retryable"),
        "{err}"
    );
    assert_eq!(all_files(&table), before, "nothing was written");
    // Fixed (latest back at v2): the batch goes through.
    registry.set_subject_status("trips-value", None);
    registry.set_latest("trips-value", 2);
    sink.process(next()).await.expect("after the fix");
    assert_eq!(table_rows(&table)["d"]["note"], json!("x"));
}

/// Two writers of one table: one evolves it to v2 while the other, warm, still decodes v1. The second's
/// next rewrite of a file group the first wrote under v2 keeps the v2 column (it catches up with the
/// committed schema before merging), and its commit carries v2, never v1 again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_writer_catches_up_with_another_writers_evolution() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = StubRegistry::start(&dir.path().join("registry"));
    registry.put(1, &v1());
    registry.put(2, &v2());
    let records = vec![
        trip(1, 101, "v1", 1, None),
        trip(3, 103, "v1", 3, None),
        // Writer A: v2, into the file group of trip-1 and trip-3 (one bucket per partition).
        trip(1, 201, "v2", 3_000_000_000, Some("from A")),
        // Writer B, still at v1: trip-3 again, the same file group.
        trip(3, 203, "v1", 33, None),
    ];
    let spec = json!({"table": v2(), "schemas": {"v1": v1(), "v2": v2()}, "records": records});
    let (values, rows) = encode(dir.path(), &spec);
    let mut props = props(dir.path(), registry.port, "COPY_ON_WRITE");
    props.insert("hoodie.bucket.index.num.buckets".into(), "1".into());
    let b = build_sink(&props, "writer-b").await.expect("sink b");
    b.process(batch_at(&values[0..2], 0)).await.expect("b, v1");
    let a = build_sink(&props, "writer-a").await.expect("sink a");
    a.process(batch_at(&values[2..3], 2)).await.expect("a, v2");
    b.process(batch_at(&values[3..4], 3))
        .await
        .expect("b, v1 after a's evolution");
    let table = dir.path().join("trips");
    let want: BTreeMap<String, Map<String, Value>> = [
        ("trip-1".to_string(), rows[2].clone().expect("row")),
        ("trip-3".to_string(), rows[3].clone().expect("row")),
    ]
    .into_iter()
    .collect();
    assert_eq!(want["trip-1"]["note"], json!("from A"));
    assert_eq!(table_rows(&table), want);
    let latest = commits(&table).pop().expect("a commit");
    assert_eq!(
        schema_of(&latest.1),
        (
            ["uuid", "ts", "city", "passengers", "rider", "note"]
                .map(String::from)
                .to_vec(),
            json!("long")
        )
    );
}
