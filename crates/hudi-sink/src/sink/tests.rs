//! The deadline: which step is refused when, on a manual clock, with a scripted coordinator in front of
//! a real in-process one (memory storage and lock).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::{KafkaSink, ProcessOptions, SinkConfig};
use crate::clock::ManualClock;
use crate::commit::{Coordinator, CoordinatorConfig};
use crate::dead_letter::StorageDeadLetterSink;
use crate::lock::{LeaseOptions, MemoryLock};
use crate::protocol::{CoordinatorRequest, CoordinatorResponse};
use crate::schema::avro::AvroSchema;
use crate::source::event::KafkaBatch;
use crate::storage::memory::MemoryStorage;
use crate::table::timeline::Timeline;
use crate::transport::CoordinatorClient;
use crate::transport::InProcessClient;
use crate::write::WriteConfig;
use crate::write::{TableWriter, WriteError};

const NOW: i64 = 1_764_412_800_000;
const SCHEMA: &str = r#"{"type":"record","name":"r","fields":[
    {"name":"id","type":"string"},{"name":"ts","type":"long"}]}"#;

/// Passes requests to a real coordinator, after moving the clock on `Begin` (a slow write) and, if
/// asked, answering the first commit with a conflict or as already committed (with that checkpoint).
#[derive(Debug)]
struct Scripted {
    inner: InProcessClient,
    clock: Arc<ManualClock>,
    advance_on_begin_ms: i64,
    conflict_first_commit: bool,
    already_committed_first_commit: Option<String>,
    seen: Mutex<Vec<&'static str>>,
}

#[async_trait]
impl CoordinatorClient for Scripted {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let op = match &request {
            CoordinatorRequest::Begin { .. } => "begin",
            CoordinatorRequest::Commit(_) => "commit",
            CoordinatorRequest::Abort { .. } => "abort",
            CoordinatorRequest::Services => "services",
            CoordinatorRequest::Join(_) => "join",
            CoordinatorRequest::Submit(_) => "submit",
            CoordinatorRequest::Close { .. } => "close",
        };
        let first_commit = {
            let mut seen = self.seen.lock().map_err(|e| WriteError::Config {
                reason: e.to_string(),
            })?;
            seen.push(op);
            op == "commit" && seen.iter().filter(|o| **o == "commit").count() == 1
        };
        if first_commit && self.conflict_first_commit {
            return Ok(CoordinatorResponse::Conflict {
                reason: "scripted".into(),
            });
        }
        if let Some(checkpoint) = self
            .already_committed_first_commit
            .clone()
            .filter(|_| first_commit)
        {
            return Ok(CoordinatorResponse::AlreadyCommitted { checkpoint });
        }
        let answer = self.inner.call(request).await;
        if op == "begin" {
            self.clock.advance(self.advance_on_begin_ms);
        }
        answer
    }
}

struct Setup {
    sink: KafkaSink,
    storage: Arc<MemoryStorage>,
    client: Arc<Scripted>,
}

async fn setup(advance_on_begin_ms: i64, conflict_first_commit: bool, backoff_ms: u64) -> Setup {
    setup_with(advance_on_begin_ms, conflict_first_commit, None, backoff_ms).await
}

async fn setup_with(
    advance_on_begin_ms: i64,
    conflict_first_commit: bool,
    already_committed_first_commit: Option<String>,
    backoff_ms: u64,
) -> Setup {
    let clock = Arc::new(ManualClock::new(NOW));
    let storage = Arc::new(MemoryStorage::new("mem://deadline/t"));
    let config = WriteConfig::from_properties_text(
        "hoodie.table.name=t\nhoodie.base.path=mem://deadline/t\n\
         hoodie.datasource.write.recordkey.field=id\n\
         hoodie.datasource.write.precombine.field=ts\n\
         hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=2\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let schema = AvroSchema::parse(SCHEMA).unwrap_or_else(|e| panic!("{e}"));
    let writer = TableWriter::create_or_open(storage.clone(), clock.clone(), config, Some(schema))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let coordinator = Coordinator::new(
        storage.clone(),
        Arc::new(MemoryLock::new("t", LeaseOptions::default())),
        clock.clone(),
        CoordinatorConfig::default(),
    );
    let client = Arc::new(Scripted {
        inner: InProcessClient::new(coordinator),
        clock: clock.clone(),
        advance_on_begin_ms,
        conflict_first_commit,
        already_committed_first_commit,
        seen: Mutex::new(Vec::new()),
    });
    let config = SinkConfig {
        deadline_reserve: Duration::from_secs(10),
        retry_backoff: Duration::from_millis(backoff_ms),
        // These tests script the per-batch protocol (begin, commit).
        commit_interval: Duration::ZERO,
        ..SinkConfig::default()
    };
    let dead_letters = Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
        "mem://deadline/dl",
    ))));
    let sink = KafkaSink::new(writer, client.clone(), dead_letters, clock, config, "w");
    Setup {
        sink,
        storage,
        client,
    }
}

fn batch() -> KafkaBatch {
    let event = serde_json::json!({
        "eventSource": "SelfManagedKafka",
        "bootstrapServers": "k:9092",
        "records": {"t-0": [
            {"topic": "t", "partition": 0, "offset": 7, "timestamp": NOW - 4_000,
             "timestampType": "CREATE_TIME", "key": null, "headers": [],
             "value": "eyJpZCI6ImEiLCJ0cyI6MX0="},
            {"topic": "t", "partition": 0, "offset": 8, "timestamp": NOW - 2_500,
             "timestampType": "CREATE_TIME", "key": null, "headers": [],
             "value": "eyJpZCI6ImIiLCJ0cyI6Mn0="}
        ]}
    });
    KafkaBatch::from_value(event).unwrap_or_else(|e| panic!("{e}"))
}

async fn completed(storage: &Arc<MemoryStorage>) -> usize {
    Timeline::load(storage.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .completed_commits()
        .len()
}

fn seen(client: &Scripted) -> Vec<&'static str> {
    client.seen.lock().map(|s| s.clone()).unwrap_or_default()
}

fn until(ms_from_now: i64) -> ProcessOptions {
    ProcessOptions {
        deadline_ms: Some(NOW + ms_from_now),
        ..ProcessOptions::default()
    }
}

#[tokio::test]
async fn with_time_enough_the_batch_commits_and_reports_its_lag() {
    let s = setup(1_000, false, 1).await;
    let report = s.sink.process_with(batch(), until(60_000)).await;
    let report = report.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.instant.is_some() && report.balanced(), "{report:?}");
    assert_eq!(report.counts.inserted, 2);
    // Oldest record 4 s before NOW, batch finished 1 s after NOW (the clock moved on Begin).
    assert_eq!(report.max_lag_ms, Some(5_000));
    assert_eq!(seen(&s.client), ["begin", "commit"]);
    assert_eq!(completed(&s.storage).await, 1);
    // Without a deadline nothing is checked: a write of 30 s (under the heartbeat tolerance) commits.
    let s = setup(30_000, false, 1).await;
    let report = s
        .sink
        .process(batch())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.instant.is_some());
}

#[tokio::test]
async fn no_begin_inside_the_reserve() {
    let s = setup(0, false, 1).await;
    let err = s.sink.process_with(batch(), until(9_999)).await;
    match err {
        Err(WriteError::Deadline {
            step: "begin",
            remaining_ms: 9_999,
            needed_ms: 10_000,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(seen(&s.client).is_empty());
    assert_eq!(completed(&s.storage).await, 0);
    // A deadline already passed is refused the same way.
    let err = s.sink.process_with(batch(), until(-5)).await;
    assert!(
        matches!(err, Err(WriteError::Deadline { step: "begin", .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn no_commit_when_the_write_ate_the_time() {
    // The write takes 55 s of a 60 s budget: 5 s left is inside the 10 s reserve.
    let s = setup(55_000, false, 1).await;
    let err = s.sink.process_with(batch(), until(60_000)).await;
    match &err {
        Err(
            e @ WriteError::Deadline {
                step: "commit",
                remaining_ms: 5_000,
                needed_ms: 10_000,
            },
        ) => {
            let text = e.to_string();
            assert!(
                text.contains("not starting the commit") && text.contains("redelivered"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(seen(&s.client), ["begin"]);
    assert_eq!(completed(&s.storage).await, 0);
}

#[tokio::test]
async fn no_retry_that_cannot_finish() {
    // The first commit conflicts 3 s into a 15 s budget: the retry would need its backoff (at least
    // half of 2 x 4 s) + the last attempt's duration + the 10 s reserve, more than the 12 s left.
    let s = setup(3_000, true, 4_000).await;
    let err = s.sink.process_with(batch(), until(15_000)).await;
    assert!(
        matches!(err, Err(WriteError::Deadline { step: "retry", .. })),
        "{err:?}"
    );
    assert_eq!(seen(&s.client), ["begin", "commit", "abort"]);
    assert_eq!(completed(&s.storage).await, 0);
    // With time enough the same conflict is retried and committed.
    let s = setup(3_000, true, 1).await;
    let report = s.sink.process_with(batch(), until(600_000)).await;
    let report = report.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((report.conflicts, report.retries), (1, 1));
    // The retry wrote the batch as prepared for the first attempt.
    assert_eq!(s.sink.preparations(), 1);
    assert_eq!(
        seen(&s.client),
        ["begin", "commit", "abort", "begin", "commit"]
    );
    assert_eq!(completed(&s.storage).await, 1);
}

#[tokio::test]
async fn offsets_committed_meanwhile_are_dropped_and_the_rest_prepared_again() {
    // The first commit is answered `already_committed` with a checkpoint past offset 7: the retry drops
    // that record and writes offset 8 alone, from a preparation of the records left.
    let mut checkpoint = crate::table::commit::Checkpoint::new();
    checkpoint.set("t", 0, 8);
    let s = setup_with(0, false, Some(checkpoint.to_sink_json()), 1).await;
    let report = s.sink.process(batch()).await;
    let report = report.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        seen(&s.client),
        ["begin", "commit", "abort", "begin", "commit"]
    );
    assert_eq!((report.skipped, report.counts.inserted), (1, 1));
    assert!(report.balanced(), "{report:?}");
    assert_eq!((report.conflicts, report.retries), (0, 1));
    assert_eq!(s.sink.preparations(), 2);
    assert_eq!(completed(&s.storage).await, 1);
}

#[tokio::test]
async fn fields_the_table_lacks_are_counted_as_ignored() {
    use base64::Engine as _;
    let value = |json: &str| base64::engine::general_purpose::STANDARD.encode(json);
    let event = serde_json::json!({
        "eventSource": "SelfManagedKafka",
        "bootstrapServers": "k:9092",
        "records": {"t-0": [
            {"topic": "t", "partition": 0, "offset": 1, "timestamp": NOW, "key": null, "headers": [],
             "value": value(r#"{"id":"a","ts":1,"color":"red","size":{"w":[1,2]}}"#)},
            {"topic": "t", "partition": 0, "offset": 2, "timestamp": NOW, "key": null, "headers": [],
             "value": value(r#"{"id":"b","ts":2}"#)},
            // Refused (no id): its unknown member is not counted, the record is a dead letter.
            {"topic": "t", "partition": 0, "offset": 3, "timestamp": NOW, "key": null, "headers": [],
             "value": value(r#"{"ts":3,"color":"blue"}"#)},
            {"topic": "t", "partition": 0, "offset": 4, "timestamp": NOW, "key": null, "headers": [],
             "value": value(r#"{"color":"green","id":"c","ts":4}"#)}
        ]}
    });
    let batch = KafkaBatch::from_value(event).unwrap_or_else(|e| panic!("{e}"));
    let s = setup(0, false, 1).await;
    let report = s
        .sink
        .process(batch)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.balanced(), "{report:?}");
    assert_eq!(
        (
            report.counts.inserted,
            report.dead_lettered,
            report.ignored_fields
        ),
        (3, 1, 3),
        "{report:?}"
    );
    let metrics = crate::metrics::metric_values(&report);
    assert!(
        metrics.contains(&("IgnoredFields", "Count", 3)),
        "{metrics:?}"
    );
}

/// A batch of three parts, one payload each, over two Kafka partitions: an update of `a` in the second part,
/// a row whose key is empty (a dead letter) in the second, a tombstone of `b` in the third.
fn parts() -> Vec<KafkaBatch> {
    use base64::Engine as _;
    let value = |json: &str| base64::engine::general_purpose::STANDARD.encode(json);
    let record = |partition: i32, offset: i64, key: Option<&str>, json: Option<&str>| {
        serde_json::json!({"topic": "t", "partition": partition, "offset": offset, "timestamp": NOW - offset,
            "key": key.map(&value), "headers": [], "value": json.map(value)})
    };
    let payload = |records: serde_json::Value| {
        KafkaBatch::from_value(serde_json::json!({
            "eventSource": "SelfManagedKafka", "bootstrapServers": "k:9092", "records": records}))
        .unwrap_or_else(|e| panic!("{e}"))
    };
    vec![
        payload(serde_json::json!({
            "t-0": [record(0, 10, None, Some(r#"{"id":"a","ts":1}"#)),
                    record(0, 11, None, Some(r#"{"id":"b","ts":2}"#))],
            "t-1": [record(1, 40, None, Some(r#"{"id":"c","ts":3}"#))]})),
        payload(serde_json::json!({
            "t-0": [record(0, 12, None, Some(r#"{"id":"","ts":4}"#)),
                    record(0, 13, None, Some(r#"{"id":"a","ts":5}"#))]})),
        payload(serde_json::json!({
            "t-1": [record(1, 41, Some("b"), None),
                    record(1, 42, None, Some(r#"{"id":"d","ts":6}"#))]})),
    ]
}

/// `(id, ts)` of every row of the table's base files, sorted.
async fn table_rows(storage: &Arc<MemoryStorage>) -> Vec<(String, i64)> {
    use crate::storage::Storage;
    use arrow_array::cast::AsArray;
    let mut rows = Vec::new();
    for object in storage.list("").await.unwrap_or_else(|e| panic!("{e}")) {
        if !object.path.ends_with(".parquet") {
            continue;
        }
        let data = storage
            .get(&object.path)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, batches) =
            crate::base_file::reader::read_base_file(data).unwrap_or_else(|e| panic!("{e}"));
        for b in batches {
            let id = b
                .column_by_name("id")
                .unwrap_or_else(|| panic!("id"))
                .as_string::<i32>()
                .clone();
            let ts = b
                .column_by_name("ts")
                .unwrap_or_else(|| panic!("ts"))
                .as_primitive::<arrow_array::types::Int64Type>()
                .clone();
            for row in 0..b.num_rows() {
                rows.push((id.value(row).to_string(), ts.value(row)));
            }
        }
    }
    rows.sort();
    rows
}

#[tokio::test]
async fn a_batch_read_in_parts_writes_what_the_batch_writes() {
    let whole = {
        let mut whole = parts().remove(0);
        for p in parts().into_iter().skip(1) {
            whole.records.extend(p.records);
        }
        whole
    };
    let one = setup(0, false, 1).await;
    let one_report = one
        .sink
        .process(whole)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let split = setup(0, false, 1).await;
    let split_report = split
        .sink
        .process_parts(&parts(), ProcessOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let expected: Vec<(String, i64)> = vec![("a".into(), 5), ("c".into(), 3), ("d".into(), 6)];
    assert_eq!(table_rows(&one.storage).await, expected);
    assert_eq!(table_rows(&split.storage).await, expected);
    assert_eq!(
        (
            split_report.records_in,
            split_report.counts,
            split_report.dead_lettered,
            split_report.max_lag_ms
        ),
        (
            one_report.records_in,
            one_report.counts,
            one_report.dead_lettered,
            one_report.max_lag_ms
        )
    );
    assert_eq!(
        (split_report.records_in, split_report.dead_lettered),
        (7, 1)
    );
    assert!(split_report.balanced(), "{split_report:?}");
    // Both commits hold the same checkpoint: the last offset of each partition, over the parts.
    let checkpoint = |s: &Setup| {
        let storage = s.storage.clone();
        async move {
            let timeline = Timeline::load(storage.as_ref())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            timeline
                .latest_checkpoint(storage.as_ref())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .map(|(_, c)| c)
        }
    };
    let cp = checkpoint(&split)
        .await
        .unwrap_or_else(|| panic!("no checkpoint"));
    assert_eq!((cp.get("t", 0), cp.get("t", 1)), (Some(14), Some(43)));
    assert_eq!(checkpoint(&one).await, Some(cp));
}

#[tokio::test]
async fn the_dead_letter_of_a_later_part_keeps_its_value() {
    let dl = Arc::new(MemoryStorage::new("mem://deadline/dl"));
    let mut s = setup(0, false, 1).await;
    s.sink.dead_letters = Arc::new(StorageDeadLetterSink::new(dl.clone()));
    s.sink
        .process_parts(&parts(), ProcessOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    use crate::storage::Storage;
    let mut lines = Vec::new();
    for object in dl.list("").await.unwrap_or_else(|e| panic!("{e}")) {
        let data = dl.get(&object.path).await.unwrap_or_else(|e| panic!("{e}"));
        lines.extend(String::from_utf8_lossy(&data).lines().map(String::from));
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    let letter: serde_json::Value =
        serde_json::from_str(&lines[0]).unwrap_or_else(|e| panic!("{e}"));
    use base64::Engine as _;
    let value = base64::engine::general_purpose::STANDARD.encode(r#"{"id":"","ts":4}"#);
    assert_eq!(
        (&letter["offset"], &letter["value_b64"], &letter["stage"]),
        (
            &serde_json::json!(12),
            &serde_json::json!(value),
            &serde_json::json!("key")
        ),
        "{letter}"
    );
}

#[tokio::test]
async fn a_moved_checkpoint_filters_every_part() {
    // The first commit is refused: the checkpoint covers offsets 10–12 of partition 0 (parts 0 and 1) and 40
    // of partition 1. The batch is prepared again from the parts without them.
    let mut checkpoint = crate::table::commit::Checkpoint::new();
    checkpoint.set("t", 0, 13);
    checkpoint.set("t", 1, 41);
    let s = setup_with(0, false, Some(checkpoint.to_sink_json()), 1).await;
    let report = s
        .sink
        .process_parts(&parts(), ProcessOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (report.records_in, report.skipped, report.dead_lettered),
        (7, 4, 0)
    );
    assert!(report.balanced(), "{report:?}");
    assert_eq!(s.sink.preparations(), 2);
    assert_eq!(
        table_rows(&s.storage).await,
        vec![("a".to_string(), 5), ("d".to_string(), 6)]
    );
}
