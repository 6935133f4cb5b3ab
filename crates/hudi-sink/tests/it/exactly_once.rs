//! The exactly-once path end to end: Kafka batches (with redeliveries, overlaps, tombstones, offset gaps and
//! bad records) through `KafkaSink` + coordinator into a table, read back with hudi-rs and compared row for
//! row with a model that applies the documented merge rules independently of the library.

use std::collections::BTreeMap;
use std::sync::Arc;

use hudi_sink::bootstrap::build_sink;
use hudi_sink::sink::KafkaSink;
use hudi_sink::source::event::KafkaBatch;
use serde_json::Value;

use crate::common::python::read_rows;

pub use crate::model::{
    dead_letter_lines, esm_payload, local_props, stream, Model, Msg, Trip, CITIES, SCHEMA,
};

struct Setup {
    _dir: tempfile::TempDir,
    base: std::path::PathBuf,
    dead_letters: std::path::PathBuf,
    props: BTreeMap<String, String>,
}

fn setup() -> Setup {
    setup_typed(false)
}

/// A local table, merge-on-read when `mor`.
fn setup_typed(mor: bool) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("trips");
    let schema = dir.path().join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let dead_letters = dir.path().join("dead-letters");
    let mut props = local_props(&base, &schema, &dead_letters);
    if mor {
        props.insert("hoodie.table.type".into(), "MERGE_ON_READ".into());
        // Compact inline after two deltacommits per file group, so that the streams run through compactions.
        props.insert("hoodie.compact.inline.max.delta.commits".into(), "2".into());
    }
    Setup {
        _dir: dir,
        base,
        dead_letters,
        props,
    }
}

/// Processes one delivery of `msgs` and checks that its report balances.
pub async fn process(sink: &KafkaSink, msgs: &[Msg]) -> hudi_sink::sink::SinkReport {
    let batch = KafkaBatch::from_slice(&esm_payload(msgs)).expect("valid event");
    let report = sink.process(batch).await.expect("process");
    assert!(report.balanced(), "unbalanced report {report:?}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_with_redeliveries_overlaps_and_bad_records_is_exact() {
    redeliveries_overlaps_and_bad_records(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_stream_with_redeliveries_overlaps_and_bad_records_is_exact() {
    redeliveries_overlaps_and_bad_records(true).await;
}

async fn redeliveries_overlaps_and_bad_records(mor: bool) {
    let s = setup_typed(mor);
    let sink = build_sink(&s.props, "test-writer").await.expect("sink");
    let msgs = stream("trips", 3, 120, 40);
    let mut model = Model::default();
    // Batches per Kafka partition of 25 records; each delivered twice, and every third one re-delivered
    // overlapping the previous batch (as the ESM does after a failed invocation).
    let mut by_partition: BTreeMap<i32, Vec<Msg>> = BTreeMap::new();
    for m in &msgs {
        by_partition.entry(m.partition).or_default().push(m.clone());
    }
    let mut total_in = 0;
    let mut total_dead = 0;
    for round in 0..5 {
        let mut batch = Vec::new();
        for part in by_partition.values() {
            let start = (round * 25).min(part.len());
            let end = ((round + 1) * 25).min(part.len());
            let overlap_start = if round % 3 == 2 {
                start.saturating_sub(7)
            } else {
                start
            };
            batch.extend_from_slice(&part[overlap_start..end]);
        }
        for delivery in 0..2 {
            let report = process(&sink, &batch).await;
            total_in += report.records_in;
            total_dead += report.dead_lettered;
            if delivery == 1 {
                assert_eq!(
                    report.skipped, report.records_in,
                    "redelivery must skip everything: {report:?}"
                );
                assert_eq!(report.instant, None);
            }
            model.apply(&batch);
        }
        let read = read_rows(&s.base, "hudi", &["snapshot"]);
        model.assert_table(&read, &format!("after round {round}"));
    }
    assert!(total_in > 0);
    // Every dead-lettered record is in the output once per delivery that was not skipped.
    let letters = dead_letter_lines(&s.dead_letters);
    assert_eq!(
        letters.len() as u64,
        total_dead,
        "dead letters written vs counted"
    );
    assert!(total_dead > 0, "the stream has bad records");
    for l in &letters {
        assert!(l["reason"].as_str().is_some_and(|r| !r.is_empty()), "{l}");
        assert!(
            l["topic"].is_string() && l["partition"].is_i64() && l["offset"].is_i64(),
            "{l}"
        );
    }
    if mor {
        // Inline compactions ran between the deltacommits (`<c>.commit`, operation COMPACT) and the
        // snapshots above read through them.
        let compactions: Vec<Value> = std::fs::read_dir(s.base.join(".hoodie"))
            .expect("timeline")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "commit"))
            .map(|p| serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json"))
            .collect();
        assert!(!compactions.is_empty(), "no inline compaction ran");
        for c in &compactions {
            assert_eq!(c["operationType"], "COMPACT");
            assert_eq!(c["compacted"], true);
        }
    }
    // Checkpoint keys of the last commit, in all three formats.
    let timeline_dir = s.base.join(".hoodie");
    let mut commits: Vec<_> = std::fs::read_dir(&timeline_dir)
        .expect("timeline")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == if mor { "deltacommit" } else { "commit" })
        })
        .collect();
    commits.sort();
    let last: Value =
        serde_json::from_slice(&std::fs::read(commits.last().expect("a commit")).expect("read"))
            .expect("json");
    let extra = &last["extraMetadata"];
    let expected_next: BTreeMap<i32, i64> = model
        .next_offset
        .iter()
        .map(|((_, p), n)| (*p, *n))
        .collect();
    let ds = extra["deltastreamer.checkpoint.key"]
        .as_str()
        .expect("deltastreamer key");
    let expected_ds = format!(
        "trips,{}",
        expected_next
            .iter()
            .map(|(p, n)| format!("{p}:{n}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(ds, expected_ds);
    let kc = extra["kafka.commit.offsets"]
        .as_str()
        .expect("kafka connect key");
    assert_eq!(
        kc,
        expected_next
            .iter()
            .map(|(p, n)| format!("{p}={n}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let sink_cp: Value =
        serde_json::from_str(extra["hudi.sink.checkpoint"].as_str().expect("sink key"))
            .expect("json");
    for (p, n) in &expected_next {
        assert_eq!(sink_cp["trips"][p.to_string()].as_i64(), Some(*n));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_concurrent_writers_on_the_same_buckets_are_exact() {
    four_concurrent_writers(false).await;
}

/// On merge-on-read, writers of the same file groups append distinct log files: their commits commute.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_on_read_four_concurrent_writers_on_the_same_buckets_are_exact() {
    four_concurrent_writers(true).await;
}

async fn four_concurrent_writers(mor: bool) {
    let s = setup_typed(mor);
    // Create the table first so the writers do not race on creation.
    let first = build_sink(&s.props, "w0").await.expect("sink");
    drop(first);
    let msgs = stream("trips", 4, 60, 12);
    let mut sinks = Vec::new();
    for w in 0..4 {
        sinks.push(Arc::new(
            build_sink(&s.props, &format!("w{w}")).await.expect("sink"),
        ));
    }
    // Writer w owns Kafka partition w (as the ESM assigns partitions); keys of all partitions share buckets.
    let mut handles = Vec::new();
    for (w, sink) in sinks.iter().enumerate() {
        let sink = sink.clone();
        let mine: Vec<Msg> = msgs
            .iter()
            .filter(|m| m.partition == w as i32)
            .cloned()
            .collect();
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for chunk in mine.chunks(15) {
                let batch = KafkaBatch::from_slice(&esm_payload(chunk)).expect("event");
                let report = sink.process(batch).await.expect("process");
                assert!(report.balanced(), "{report:?}");
                conflicts += report.conflicts;
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for h in handles {
        conflicts += h.await.expect("join");
    }
    // The model: per-partition order is all that matters (keys are owned by one Kafka partition).
    let mut model = Model::default();
    for w in 0..4 {
        let mine: Vec<Msg> = msgs.iter().filter(|m| m.partition == w).cloned().collect();
        for chunk in mine.chunks(15) {
            model.apply(chunk);
        }
    }
    let read = read_rows(&s.base, "hudi", &["snapshot"]);
    model.assert_table(&read, "four writers");
    // No two completed instants share a time, and no pending instant or marker is left.
    let mut times = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(s.base.join(".hoodie")).expect("timeline") {
        let name = e.expect("entry").file_name().to_string_lossy().to_string();
        if let Some(t) = name
            .strip_suffix(".commit")
            .or_else(|| name.strip_suffix(".deltacommit"))
        {
            assert!(times.insert(t.to_string()), "duplicate instant {t}");
        }
    }
    eprintln!(
        "four writers: {} commits, {conflicts} conflicts retried",
        times.len()
    );
    if mor {
        // Inline compactions ran while other writers had deltacommits in flight.
        let compactions = std::fs::read_dir(s.base.join(".hoodie"))
            .expect("timeline")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".commit"))
            })
            .count();
        eprintln!("four writers: {compactions} compactions");
        assert!(compactions > 0, "no compaction ran");
    }
    let leftovers = crate::common::all_files(&s.base.join(".hoodie/.temp"));
    assert!(leftovers.is_empty(), "markers left: {leftovers:?}");
}

/// A transport that, on the first commit it forwards, first lets another writer commit a whole batch:
/// the interleaving that optimistic concurrency must catch.
#[derive(Debug)]
struct Interleave {
    inner: hudi_sink::transport::InProcessClient,
    other: tokio::sync::Mutex<Option<(Arc<KafkaSink>, Vec<Msg>)>>,
}

#[async_trait::async_trait]
impl hudi_sink::transport::CoordinatorClient for Interleave {
    async fn call(
        &self,
        request: hudi_sink::protocol::CoordinatorRequest,
    ) -> Result<hudi_sink::protocol::CoordinatorResponse, hudi_sink::write::WriteError> {
        if matches!(request, hudi_sink::protocol::CoordinatorRequest::Commit(_)) {
            if let Some((sink, msgs)) = self.other.lock().await.take() {
                process(&sink, &msgs).await;
            }
        }
        self.inner.call(request).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_racing_another_on_the_same_bucket_conflicts_and_is_retried() {
    use hudi_sink::clock::SystemClock;
    use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
    use hudi_sink::dead_letter::StorageDeadLetterSink;
    use hudi_sink::lock::memory::MemoryLock;
    use hudi_sink::lock::LeaseOptions;
    use hudi_sink::schema::avro::AvroSchema;
    use hudi_sink::sink::SinkConfig;
    use hudi_sink::storage::local::LocalStorage;
    use hudi_sink::transport::InProcessClient;
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;

    let s = setup();
    let storage: Arc<dyn hudi_sink::storage::Storage> = Arc::new(LocalStorage::new(&s.base));
    let clock = Arc::new(SystemClock);
    let lock = Arc::new(MemoryLock::new(
        "trips",
        LeaseOptions::hudi(std::time::Duration::from_secs(20)),
    ));
    let coordinator = Coordinator::new(
        storage.clone(),
        lock,
        clock.clone(),
        CoordinatorConfig::default(),
    );
    let config = WriteConfig::from_properties(s.props.clone()).expect("config");
    // The per-batch protocol: the interleaving is one of its commit requests.
    let mut props = s.props.clone();
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let schema = AvroSchema::parse(SCHEMA).expect("schema");
    let make_writer = || async {
        TableWriter::create_or_open(
            storage.clone(),
            clock.clone(),
            config.clone(),
            Some(schema.clone()),
        )
        .await
        .expect("writer")
    };
    let dead = || {
        Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
            &s.dead_letters,
        ))))
    };
    let sink_b = Arc::new(KafkaSink::new(
        make_writer().await,
        Arc::new(InProcessClient::new(coordinator.clone())),
        dead(),
        clock.clone(),
        sink_config.clone(),
        "b",
    ));
    // The same keys from two Kafka partitions: every bucket A touches, B touches first.
    let keys = [
        "trip-00001",
        "trip-00002",
        "trip-00003",
        "trip-00004",
        "trip-00005",
    ];
    let msgs = |partition: i32, ts: i64| -> Vec<Msg> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| Msg {
                topic: "trips".into(),
                partition,
                offset: i as i64,
                key: Some(k.to_string()),
                value: Some(
                    Trip {
                        uuid: k.to_string(),
                        ts,
                        rider: format!("rider-{partition}"),
                        fare: ts as f64,
                        city: CITIES[i % CITIES.len()].into(),
                        deleted: false,
                    }
                    .json(),
                ),
            })
            .collect()
    };
    let (batch_a, batch_b) = (msgs(0, 5), msgs(1, 7));
    let sink_a = KafkaSink::new(
        make_writer().await,
        Arc::new(Interleave {
            inner: InProcessClient::new(coordinator.clone()),
            other: tokio::sync::Mutex::new(Some((sink_b, batch_b.clone()))),
        }),
        dead(),
        clock.clone(),
        sink_config,
        "a",
    );
    let report = process(&sink_a, &batch_a).await;
    assert_eq!(
        report.conflicts, 1,
        "the racing commit must be detected: {report:?}"
    );
    assert_eq!(report.retries, 1);
    // B (ts 7) committed first; A's retry (ts 5) merges against B's rows and loses on every key.
    let mut model = Model::default();
    model.apply(&batch_b);
    model.apply(&batch_a);
    assert!(model.rows.values().all(|t| t.ts == 7));
    let read = read_rows(&s.base, "hudi", &["snapshot"]);
    model.assert_table(&read, "after conflict and retry");
    // A's aborted instant left nothing behind: every parquet file belongs to a completed commit.
    let completed: std::collections::BTreeSet<String> = std::fs::read_dir(s.base.join(".hoodie"))
        .expect("timeline")
        .filter_map(|e| {
            e.expect("entry")
                .file_name()
                .to_string_lossy()
                .strip_suffix(".commit")
                .map(String::from)
        })
        .collect();
    assert_eq!(completed.len(), 2);
    for f in crate::common::parquet_files(&s.base) {
        let name = f.file_name().expect("name").to_string_lossy().to_string();
        let instant = name
            .trim_end_matches(".parquet")
            .rsplit('_')
            .next()
            .expect("instant")
            .to_string();
        assert!(
            completed.contains(&instant),
            "file of an uncommitted instant left: {name}"
        );
    }
    let pending: Vec<_> = std::fs::read_dir(s.base.join(".hoodie"))
        .expect("timeline")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".inflight") || n.ends_with(".requested"))
        .filter(|n| !completed.contains(n.split('.').next().unwrap_or_default()))
        .collect();
    assert!(pending.is_empty(), "pending instants left: {pending:?}");
}

/// Merge-on-read: a compaction that lands while a deltacommit is in flight (the writer has appended logs to
/// the slices it compacts) makes that commit conflict; the retry appends to the new slices and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_a_compaction_under_a_write_in_flight_makes_it_retry_on_the_new_slices() {
    use hudi_sink::clock::SystemClock;
    use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
    use hudi_sink::dead_letter::StorageDeadLetterSink;
    use hudi_sink::lock::memory::MemoryLock;
    use hudi_sink::lock::LeaseOptions;
    use hudi_sink::schema::avro::AvroSchema;
    use hudi_sink::services::ServicesConfig;
    use hudi_sink::sink::SinkConfig;
    use hudi_sink::storage::local::LocalStorage;
    use hudi_sink::transport::InProcessClient;
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;

    let s = setup_typed(true);
    let storage: Arc<dyn hudi_sink::storage::Storage> = Arc::new(LocalStorage::new(&s.base));
    let clock = Arc::new(SystemClock);
    let lock = Arc::new(MemoryLock::new(
        "trips",
        LeaseOptions::hudi(std::time::Duration::from_secs(20)),
    ));
    let config = WriteConfig::from_properties(s.props.clone()).expect("config");
    let coordinator = Coordinator::new(
        storage.clone(),
        lock,
        clock.clone(),
        CoordinatorConfig {
            services: ServicesConfig::from_properties(&s.props, config.max_file_size)
                .expect("services"),
            ..CoordinatorConfig::default()
        },
    )
    .with_compaction(&config);
    // The per-batch protocol: the interleaving is one of its commit requests.
    let mut props = s.props.clone();
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let schema = AvroSchema::parse(SCHEMA).expect("schema");
    let make_writer = || async {
        TableWriter::create_or_open(
            storage.clone(),
            clock.clone(),
            config.clone(),
            Some(schema.clone()),
        )
        .await
        .expect("writer")
    };
    let dead = || {
        Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
            &s.dead_letters,
        ))))
    };
    let keys = ["trip-00001", "trip-00002", "trip-00003", "trip-00004"];
    let msgs = |partition: i32, first_offset: i64, ts: i64| -> Vec<Msg> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| Msg {
                topic: "trips".into(),
                partition,
                offset: first_offset + i as i64,
                key: Some(k.to_string()),
                value: Some(
                    Trip {
                        uuid: k.to_string(),
                        ts,
                        rider: format!("rider-{partition}-{ts}"),
                        fare: ts as f64,
                        city: CITIES[0].into(),
                        deleted: false,
                    }
                    .json(),
                ),
            })
            .collect()
    };
    let sink_b = Arc::new(KafkaSink::new(
        make_writer().await,
        Arc::new(InProcessClient::new(coordinator.clone())),
        dead(),
        clock.clone(),
        sink_config.clone(),
        "b",
    ));
    // B: base files, then one log per group.
    let (b1, b2, b3) = (msgs(1, 0, 1), msgs(1, 10, 2), msgs(1, 20, 3));
    process(&sink_b, &b1).await;
    process(&sink_b, &b2).await;
    // A appends to the same slices; before its commit, B's next deltacommit brings every group to two logs
    // and the inline compaction (max.delta.commits=2) rewrites them.
    let a = msgs(0, 0, 5);
    let sink_a = KafkaSink::new(
        make_writer().await,
        Arc::new(Interleave {
            inner: InProcessClient::new(coordinator.clone()),
            other: tokio::sync::Mutex::new(Some((sink_b, b3.clone()))),
        }),
        dead(),
        clock.clone(),
        sink_config,
        "a",
    );
    let report = process(&sink_a, &a).await;
    assert_eq!(
        report.conflicts, 1,
        "the compaction under A's write must be detected: {report:?}"
    );
    let names: Vec<String> = std::fs::read_dir(s.base.join(".hoodie"))
        .expect("timeline")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".commit")).count(),
        1,
        "one compaction: {names:?}"
    );
    let mut model = Model::default();
    for batch in [&b1, &b2, &b3, &a] {
        model.apply(batch);
    }
    assert!(model.rows.values().all(|t| t.ts == 5));
    let read = read_rows(&s.base, "hudi", &["snapshot"]);
    model.assert_table(&read, "after the compaction and A's retry");
}

mod faults;
