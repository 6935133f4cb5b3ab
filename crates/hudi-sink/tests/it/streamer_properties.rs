//! A HoodieStreamer properties file (`tests/streamer/kafka-source.properties`: Kafka source keys, the schema
//! provider's file, record key, partition path, precombine field and bucket index, no `hudi.sink.*` key) runs
//! through `build_sink` with only what HoodieStreamer takes on its command line added (base path and table
//! name). One batch with good and bad records: the table read by hudi-rs holds exactly the good rows, and the
//! dead letters land exactly once each at the default place inside the table, or at
//! `hoodie.errortable.base.path` when that is set. Then every deleting path of the coordinator (rollback of an
//! expired write, the sweep of retired instants, leftovers, and whatever `run_services` runs) leaves the
//! default place untouched, decoys named like data files of the rolled-back instant included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hudi_sink::bootstrap::{build_coordinator, build_sink, load_properties};
use hudi_sink::clock::SystemClock;
use hudi_sink::dead_letter::default_dead_letter_uri;
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::LocalStorage;
use hudi_sink::table::file_name::BaseFileName;
use hudi_sink::table::instant::State;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use serde_json::{json, Map, Value};

use crate::common::python::read_rows;
use crate::common::{all_files, workspace_root};

/// The fixture with HoodieStreamer's command-line settings (`--target-base-path`, `--target-table`) and
/// `extra`. The fixture's relative paths are relative to the repository root (where the CLI test runs it);
/// this test's working directory is the crate, so the one relative path it holds is resolved there.
async fn streamer_props(table: &Path, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let file = workspace_root().join("tests/streamer/kafka-source.properties");
    let mut props = load_properties(&file.display().to_string())
        .await
        .expect("fixture parses");
    assert!(
        !props.keys().any(|k| k.starts_with("hudi.sink.")),
        "the fixture must stay HoodieStreamer's: {props:?}"
    );
    let schema_key = "hoodie.streamer.schemaprovider.source.schema.file";
    let schema = workspace_root().join(&props[schema_key]);
    props.insert(schema_key.into(), schema.display().to_string());
    props.insert("hoodie.base.path".into(), table.display().to_string());
    props.insert("hoodie.table.name".into(), "trips".into());
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    props
}

/// What the batch delivers: offset, key, value (text, base64-encoded on delivery).
const RECORDS: &[(i64, &str, &str)] = &[
    (
        0,
        "trip-1",
        r#"{"uuid":"trip-1","ts":1000,"rider":"rider-A","fare":10.5,"city":"sf"}"#,
    ),
    (1, "trip-2", r#"{"uuid":"trip-2","ts":1001,"city":"nyc"}"#),
    (2, "trip-3", "this is not JSON"),
    (3, "trip-4", r#"{"uuid":"trip-4","ts":"late","city":"sf"}"#),
];

/// Offsets and stages of the bad records of [`RECORDS`].
const BAD: &[(i64, &str)] = &[(2, "not_json"), (3, "decode")];

fn batch(offset_base: i64) -> KafkaBatch {
    let records: Vec<Value> = RECORDS
        .iter()
        .map(|(offset, key, value)| {
            json!({
                "topic": "trips",
                "partition": 0,
                "offset": offset_base + offset,
                "timestamp": 1_764_412_800_000i64 + offset,
                "timestampType": "CREATE_TIME",
                "key": STANDARD.encode(key),
                "value": STANDARD.encode(value),
                "headers": [],
            })
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

/// The good rows of [`RECORDS`], every data column.
fn expected_rows() -> BTreeMap<String, Map<String, Value>> {
    let row = |v: Value| v.as_object().expect("object").clone();
    BTreeMap::from([
        (
            "trip-1".to_string(),
            row(
                json!({"uuid": "trip-1", "ts": 1000, "rider": "rider-A", "fare": 10.5, "city": "sf",
                       "_hoodie_is_deleted": null}),
            ),
        ),
        (
            "trip-2".to_string(),
            row(
                json!({"uuid": "trip-2", "ts": 1001, "rider": null, "fare": null, "city": "nyc",
                       "_hoodie_is_deleted": null}),
            ),
        ),
    ])
}

/// The table's snapshot read by hudi-rs, keyed by `uuid`, without the five meta columns.
fn table_rows(table: &Path) -> BTreeMap<String, Map<String, Value>> {
    let mut rows = BTreeMap::new();
    for mut row in read_rows(table, "hudi", &["snapshot"]) {
        row.retain(|k, _| !k.starts_with("_hoodie_") || k == "_hoodie_is_deleted");
        let key = row["uuid"].as_str().expect("uuid").to_string();
        assert!(rows.insert(key.clone(), row).is_none(), "key {key} twice");
    }
    rows
}

/// Every letter under `dir` as (offset, stage, topic, partition, timestamp, key, value), and the objects.
fn letters(dir: &Path) -> (Vec<(i64, String, Value)>, Vec<PathBuf>) {
    let files = all_files(dir);
    let mut out = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("letter object");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).expect("letter line");
            let offset = v["offset"].as_i64().expect("offset");
            let stage = v["stage"].as_str().expect("stage").to_string();
            out.push((offset, stage, v));
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    (out, files)
}

/// Asserts that `dir` holds exactly one letter per bad record of a batch at `offset_base`, as delivered.
fn assert_letters(dir: &Path, offset_base: i64) {
    let (found, files) = letters(dir);
    let got: Vec<(i64, &str)> = found.iter().map(|(o, s, _)| (*o, s.as_str())).collect();
    let want: Vec<(i64, &str)> = BAD.iter().map(|(o, s)| (offset_base + o, *s)).collect();
    assert_eq!(got, want, "letters under {}", dir.display());
    for (offset, _, v) in &found {
        let (_, key, value) = RECORDS
            .iter()
            .find(|(o, _, _)| offset_base + o == *offset)
            .expect("a delivered offset");
        assert_eq!(v["topic"], "trips");
        assert_eq!(v["partition"], 0);
        assert_eq!(
            v["timestamp_ms"],
            1_764_412_800_000i64 + offset - offset_base
        );
        assert_eq!(v["key_b64"], STANDARD.encode(key));
        assert_eq!(v["value_b64"], STANDARD.encode(value));
    }
    // One object for the one topic-partition, named <topic>/<partition>/<first>-<last>-<uuid>.jsonl.
    assert_eq!(files.len(), 1, "{files:?}");
    let rel = files[0].strip_prefix(dir).expect("under dir");
    let prefix = format!("trips/0/{}-{}-", offset_base + 2, offset_base + 3);
    assert!(
        rel.to_string_lossy().starts_with(&prefix) && rel.to_string_lossy().ends_with(".jsonl"),
        "{}",
        rel.display()
    );
}

/// The entries directly under `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamer_properties_file_runs_unchanged_with_dead_letters_in_the_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let props = streamer_props(&table, &[]).await;
    let sink = build_sink(&props, "streamer-test").await.expect("sink");
    let report = sink.process(batch(0)).await.expect("process");
    assert!(report.balanced(), "{report:?}");
    assert_eq!(
        (
            report.records_in,
            report.dead_lettered,
            report.counts.inserted
        ),
        (4, 2, 2),
        "{report:?}"
    );
    assert!(report.instant.is_some());

    assert_eq!(table_rows(&table), expected_rows());
    assert_letters(&default_dead_dir(&table), 0);
    // Nothing was written but the table and its dead letters beside it.
    assert_eq!(entries(dir.path()), ["trips", "trips_dead_letters"]);
}

/// Where dead letters go by default for the table at `table`.
fn default_dead_dir(table: &std::path::Path) -> std::path::PathBuf {
    std::path::PathBuf::from(default_dead_letter_uri(&table.display().to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_go_to_the_error_table_path_when_it_is_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let errors = dir.path().join("errors");
    let errors_uri = errors.display().to_string();
    let props = streamer_props(
        &table,
        &[
            ("hoodie.errortable.base.path", errors_uri.as_str()),
            ("hoodie.errortable.enable", "true"),
            ("hoodie.errortable.target.table.name", "trips_errors"),
        ],
    )
    .await;
    let sink = build_sink(&props, "streamer-test").await.expect("sink");
    let report = sink.process(batch(0)).await.expect("process");
    assert_eq!((report.dead_lettered, report.counts.inserted), (2, 2));
    assert_letters(&errors, 0);
    assert!(all_files(&default_dead_dir(&table)).is_empty());
    assert_eq!(table_rows(&table), expected_rows());
}

/// Every file under `dir` (relative path) with its content.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    all_files(dir)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("read");
            let rel = f.strip_prefix(dir).expect("under dir");
            (rel.display().to_string(), text)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_at_the_default_place_survive_every_service() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let props = streamer_props(
        &table,
        &[
            // Services as eager as the keys allow, so that clean and archival have work once they run.
            ("hoodie.cleaner.commits.retained", "1"),
            ("hoodie.cleaner.fileversions.retained", "1"),
            ("hoodie.keep.min.commits", "2"),
            ("hoodie.keep.max.commits", "3"),
            ("hoodie.clustering.inline.max.commits", "1"),
            // A configured place inside the table's metadata directory, which no service may touch either.
            (
                "hudi.sink.dead.letter.path",
                &table
                    .join(".hoodie/.aux/dead-letters")
                    .display()
                    .to_string(),
            ),
        ],
    )
    .await;
    let sink = build_sink(&props, "streamer-test").await.expect("sink");
    // Five batches of the same keys: every commit replaces the slices of the one before.
    for round in 0..5 {
        let report = sink.process(batch(round * 10)).await.expect("process");
        assert_eq!(report.dead_lettered, 2, "{report:?}");
    }
    let dead_dir = table.join(".hoodie/.aux/dead-letters");
    assert_eq!(letters(&dead_dir).0.len(), 10);

    // A write that fails: begun, one data file written, never committed.
    let mut services_props = props.clone();
    services_props.insert("hudi.sink.heartbeat.interval.ms".into(), "1".into());
    services_props.insert("hudi.sink.heartbeat.tolerable.misses".into(), "1".into());
    let coordinator = build_coordinator(&services_props, Arc::new(SystemClock))
        .await
        .expect("coordinator");
    let instant = match coordinator
        .handle(CoordinatorRequest::Begin {
            writer: "zombie".into(),
        })
        .await
        .expect("begin")
    {
        CoordinatorResponse::Begun { instant, .. } => instant,
        other => panic!("{other:?}"),
    };
    let file_name = format!("00000000-0000-0000-0000-000000000007-0_0-0-0_{instant}.parquet");
    assert!(BaseFileName::parse(&file_name).is_ok(), "{file_name}");
    let orphan = table.join("city=sf").join(&file_name);
    std::fs::write(&orphan, b"orphan").expect("orphan");
    // Decoys inside the dead-letter place named like data files of that instant (a deletion that did not
    // skip `.hoodie/` would take them with the orphan) and of the latest commit (a listing of file slices
    // that did not skip `.hoodie/` would show it, and a clean could then delete it).
    let latest = Timeline::load(&LocalStorage::new(&table))
        .await
        .expect("timeline")
        .latest_completed()
        .expect("a commit")
        .time
        .to_string();
    for decoy in [
        dead_dir.join(&file_name),
        dead_dir.join("city=sf").join(&file_name),
        dead_dir.join("city=nyc").join(format!(
            "00000000-0000-0000-0000-000000000008-0_0-0-0_{latest}.parquet"
        )),
    ] {
        std::fs::create_dir_all(decoy.parent().expect("parent")).expect("mkdir");
        std::fs::write(&decoy, b"decoy").expect("decoy");
    }
    let before = snapshot(&dead_dir);
    assert_eq!(before.len(), 8, "{:?}", before.keys());

    std::thread::sleep(std::time::Duration::from_millis(20));
    let report = coordinator.run_services().await.expect("services");
    assert!(!orphan.exists(), "the expired write was rolled back");
    // Once more: the sweep of retired instants and any service that is now due.
    coordinator.run_services().await.expect("services again");
    let after = snapshot(&dead_dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "services deleted or added dead-letter objects ({report:?})"
    );
    assert!(after == before, "services changed dead-letter objects");

    // The timeline ignores them, and so does the file-slice listing.
    let storage = LocalStorage::new(&table);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    assert!(
        timeline
            .instants()
            .iter()
            .all(|i| i.state == State::Completed),
        "{:?}",
        timeline.instants()
    );
    let slices = latest_file_slices(&storage, &timeline, None)
        .await
        .expect("slices");
    assert!(slices.iter().all(|s| !s.path().starts_with(".hoodie/")));
    assert_eq!(table_rows(&table), expected_rows());
}
