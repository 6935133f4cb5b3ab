//! Clustering of an insert table read back by hudi-rs (the Python `hudi` 0.5.0 package): the same rows
//! before and after, time travel and incremental queries unchanged, fewer live files; the plan read by
//! fastavro; and a crash at every storage call of a run (and of a rollback) leaves a table that reads as
//! before and that the next run finishes cleanly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::ManualClock;
use hudi_sink::lock::memory::MemoryLock;
use hudi_sink::lock::{LeaseOptions, Lock};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::cluster::{self, rollback_expired};
use hudi_sink::services::{ServiceContext, ServicesConfig};
use hudi_sink::storage::faulty::{FaultAction, FaultRule, FaultyStorage};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::file_name::BaseFileName;
use hudi_sink::table::instant::{Action, State};
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use hudi_sink::write::TableWriter;
use hudi_sink::write::WriteConfig;
use serde_json::Value;

use crate::common::crash::{copy_dir, crash_after};
use crate::common::python::{hudi_read_json, python, read_rows};
use crate::common::rows::{keyed, rust_rows, Rows};
use crate::model::{CITIES, SCHEMA};

const START: i64 = 1_767_225_600_000; // 2026-01-01
const TOLERANCE: Duration = Duration::from_secs(60);
const LOCK_WAIT: Duration = Duration::from_secs(5);

fn write_config(base: &Path) -> WriteConfig {
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.database.name", "default"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.operation", "insert"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), base.display().to_string())])
    .collect();
    WriteConfig::from_properties(props).expect("config")
}

async fn open_writer(
    storage: Arc<dyn Storage>,
    clock: Arc<ManualClock>,
    base: &Path,
) -> TableWriter {
    TableWriter::create_or_open(
        storage,
        clock,
        write_config(base),
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("open table")
}

/// Trips `ids` over every city; some riders and fares null, the delete flag null or false.
fn trips(writer: &TableWriter, ids: std::ops::Range<u32>) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            ids.clone().map(|i| format!("trip-{i:05}")),
        )),
        Arc::new(Int64Array::from_iter_values(
            ids.clone().map(|i| 1_000 + i64::from(i)),
        )),
        Arc::new(StringArray::from_iter(
            ids.clone()
                .map(|i| (i % 5 != 0).then(|| format!("rider-{}", i % 13))),
        )),
        Arc::new(Float64Array::from_iter(
            ids.clone()
                .map(|i| (i % 9 != 0).then_some(f64::from(i) * 1.25)),
        )),
        Arc::new(StringArray::from_iter_values(
            ids.clone().map(|i| CITIES[i as usize % CITIES.len()]),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.map(|i| (i % 2 == 0).then_some(false)),
        )),
    ];
    RecordBatch::try_new(writer.schema().data.clone(), columns).expect("batch")
}

/// A fresh insert table of `commits` small commits of `rows` trips each; returns the instants.
async fn build_table(
    base: &Path,
    clock: &Arc<ManualClock>,
    commits: u32,
    rows: u32,
) -> Vec<String> {
    let writer = open_writer(Arc::new(LocalStorage::new(base)), clock.clone(), base).await;
    let mut instants = Vec::new();
    for c in 0..commits {
        clock.advance(1_000);
        let result = writer
            .write(&[trips(&writer, c * rows..(c + 1) * rows)])
            .await
            .expect("insert");
        instants.push(result.instant.to_string());
    }
    instants
}

/// Live base files per partition, as hudi-rs lists them.
fn hudi_slices_per_partition(base: &Path) -> BTreeMap<String, usize> {
    let listed = hudi_read_json(base, "hudi", &["file_slices"]);
    let mut out = BTreeMap::new();
    for s in listed["file_slices"].as_array().expect("slices") {
        *out.entry(s["partition_path"].as_str().expect("partition").to_string())
            .or_insert(0) += 1;
    }
    out
}

/// The single record of an Avro container file, decoded by fastavro.
fn fastavro_record(path: &Path) -> Value {
    let code = "import sys, json, fastavro\n\
                recs = list(fastavro.reader(open(sys.argv[1], 'rb')))\n\
                assert len(recs) == 1, len(recs)\n\
                print(json.dumps(recs[0]))";
    let out = std::process::Command::new(python())
        .arg("-c")
        .arg(code)
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "fastavro: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

async fn run_clustering(
    storage: &dyn Storage,
    lock: &MemoryLock,
    clock: &ManualClock,
    writer: &TableWriter,
) -> Result<hudi_sink::services::ServiceReport, hudi_sink::write::WriteError> {
    cluster::run(
        storage,
        lock,
        LOCK_WAIT,
        clock,
        &every_small_file(),
        writer,
        TOLERANCE,
        None,
    )
    .await
}

/// Spark's plan, every small file (fan-out 1): these tables hold a dozen small files per partition.
fn every_small_file() -> ServicesConfig {
    ServicesConfig {
        clustering_fan_out: 1,
        ..ServicesConfig::default()
    }
}

fn memory_lock() -> MemoryLock {
    MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_secs(30)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clustered_insert_table_reads_back_row_exact_with_hudi_rs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("trips");
    let clock = Arc::new(ManualClock::new(START));
    let instants = build_table(&base, &clock, 12, 24).await;

    // Before: snapshot, time travel as of every instant, incremental between consecutive instants.
    let snapshot = keyed(
        read_rows(&base, "hudi", &["snapshot"]),
        true,
        "snapshot before",
    );
    assert_eq!(snapshot.len(), 12 * 24);
    let storage = LocalStorage::new(&base);
    assert_eq!(rust_rows(&storage, "before").await, snapshot);
    let as_of: Vec<Rows> = instants
        .iter()
        .map(|t| keyed(read_rows(&base, "hudi", &["as_of", t]), false, t))
        .collect();
    let step = |i: usize| {
        let start = if i == 0 {
            "00000000000000000"
        } else {
            instants[i - 1].as_str()
        };
        keyed(
            read_rows(&base, "hudi", &["incremental", start, &instants[i]]),
            false,
            &instants[i],
        )
    };
    let incremental: Vec<Rows> = (0..instants.len()).map(step).collect();
    let slices_before = hudi_slices_per_partition(&base);
    assert_eq!(slices_before.len(), CITIES.len());
    assert!(
        slices_before.values().all(|n| *n == 12),
        "{slices_before:?}"
    );

    let writer = open_writer(Arc::new(LocalStorage::new(&base)), clock.clone(), &base).await;
    clock.advance(1_000);
    let report = run_clustering(&storage, &memory_lock(), &clock, &writer)
        .await
        .expect("cluster");
    let t = report.cluster_instant.clone().expect("clustered");
    assert_eq!(report.file_groups_clustered, 48);

    // The plan, as fastavro reads it; the inflight is empty.
    let requested = fastavro_record(&base.join(format!(".hoodie/{t}.replacecommit.requested")));
    assert_eq!(requested["operationType"], "CLUSTER");
    assert_eq!(
        requested["extraMetadata"][cluster::WRITER_KEY],
        cluster::WRITER_NAME
    );
    let plan = &requested["clusteringPlan"];
    assert_eq!(plan["preserveHoodieMetadata"], true);
    assert_eq!(
        plan["strategy"]["strategyClassName"],
        cluster::EXECUTION_STRATEGY_CLASS
    );
    let groups = plan["inputGroups"].as_array().expect("groups");
    assert_eq!(groups.len(), CITIES.len());
    let mut planned_files = BTreeSet::new();
    for g in groups {
        assert_eq!(g["numOutputFileGroups"], 1);
        assert!(g["metrics"]["TOTAL_IO_MB"].is_number());
        for s in g["slices"].as_array().expect("slices") {
            let path = PathBuf::from(s["dataFilePath"].as_str().expect("path"));
            assert!(path.starts_with(&base) && path.is_file(), "{path:?}");
            planned_files.insert(path);
        }
    }
    assert_eq!(planned_files.len(), 48);
    let inflight = std::fs::metadata(base.join(format!(".hoodie/{t}.replacecommit.inflight")));
    assert_eq!(inflight.expect("inflight").len(), 0);
    let completed: Value = serde_json::from_slice(
        &std::fs::read(base.join(format!(".hoodie/{t}.replacecommit"))).expect("replacecommit"),
    )
    .expect("json");
    assert_eq!(completed["operationType"], "CLUSTER");

    // After: the same rows (all columns but the file name), now in one new file per partition.
    let after = read_rows(&base, "hudi", &["snapshot"]);
    for row in &after {
        let file = row["_hoodie_file_name"].as_str().expect("file name");
        assert!(file.ends_with(&format!("_{t}.parquet")), "{file}");
    }
    assert_eq!(keyed(after, true, "snapshot after"), snapshot);
    assert_eq!(rust_rows(&storage, "after").await, snapshot);
    assert_eq!(
        keyed(read_rows(&base, "hudi", &["as_of", &t]), true, "as of t"),
        snapshot
    );
    for (i, instant) in instants.iter().enumerate() {
        assert_eq!(
            keyed(
                read_rows(&base, "hudi", &["as_of", instant]),
                false,
                instant
            ),
            as_of[i],
            "time travel as of {instant}"
        );
        assert_eq!(step(i), incremental[i], "incremental up to {instant}");
    }
    let whole = keyed(
        read_rows(&base, "hudi", &["incremental", "00000000000000000", &t]),
        true,
        "incremental over everything",
    );
    assert_eq!(whole, snapshot);
    let last = instants.last().expect("instants");
    assert!(
        read_rows(&base, "hudi", &["incremental", last, &t]).is_empty(),
        "clustering adds no new records"
    );
    let slices_after = hudi_slices_per_partition(&base);
    assert_eq!(
        slices_after.keys().collect::<Vec<_>>(),
        slices_before.keys().collect::<Vec<_>>()
    );
    assert!(slices_after.values().all(|n| *n == 1), "{slices_after:?}");
    // Nothing else to do: one file per partition.
    let again = run_clustering(&storage, &memory_lock(), &clock, &writer)
        .await
        .expect("again");
    assert_eq!(again.cluster_instant, None);
}

/// Everything a finished table may hold: no pending instant, no base file of an uncommitted or retired
/// instant, markers and heartbeats only of completed instants (left for the coordinator's sweep), one live
/// file per partition, and the rows of before.
async fn assert_clean(storage: &dyn Storage, expected: &Rows, what: &str) {
    let timeline = Timeline::load(storage).await.expect("timeline");
    assert!(
        timeline.pending().is_empty(),
        "{what}: pending {:?}",
        timeline.pending()
    );
    for object in storage.list("").await.expect("list") {
        let path = object.path.as_str();
        let name = path.rsplit('/').next().unwrap_or(path);
        let instant = match path.strip_prefix(".hoodie/.temp/") {
            Some(rest) => rest.split('/').next(),
            None => path.strip_prefix(".hoodie/.heartbeat/"),
        };
        if let Some(t) = instant {
            let t = hudi_sink::table::instant::InstantTime::parse(t).expect("time");
            assert!(timeline.is_completed_commit(&t), "{what}: leftover {path}");
        }
        if !path.starts_with(".hoodie/") {
            if let Ok(b) = BaseFileName::parse(name) {
                assert!(
                    timeline.is_completed_commit(&b.instant_time),
                    "{what}: orphan file {path}"
                );
            }
        }
    }
    let slices = latest_file_slices(storage, &timeline, None)
        .await
        .expect("slices");
    assert_eq!(slices.len(), CITIES.len(), "{what}: live files {slices:?}");
    assert_eq!(&rust_rows(storage, what).await, expected, "{what}");
    let last = timeline.latest_completed().expect("latest");
    assert_eq!(last.action, Action::ReplaceCommit, "{what}");
    assert_eq!(last.state, State::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_storage_call_of_a_run_leaves_a_readable_table_the_next_run_finishes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = dir.path().join("pristine");
    let clock = Arc::new(ManualClock::new(START));
    build_table(&pristine, &clock, 6, 16).await;
    let before = rust_rows(&LocalStorage::new(&pristine), "pristine").await;
    let snapshot = keyed(
        read_rows(&pristine, "hudi", &["snapshot"]),
        true,
        "pristine",
    );
    assert_eq!(snapshot, before);

    let mut hudi_checks = 0;
    let mut n = 1u64;
    loop {
        let base = dir.path().join(format!("crash-{n}"));
        copy_dir(&pristine, &base);
        let inner: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
        let faulty = FaultyStorage::new(inner.clone());
        let writer = open_writer(inner.clone(), clock.clone(), &base).await;
        clock.advance(1_000);
        crash_after(&faulty, n);
        let what = format!("crash after call {n}");
        let outcome = run_clustering(&faulty, &memory_lock(), &clock, &writer).await;
        let finished = match &outcome {
            Ok(report) => {
                assert!(report.cluster_instant.is_some(), "{what}: {report:?}");
                true
            }
            Err(_) => false,
        };
        // Right after the failure: every reader sees the rows of before. hudi-rs reads a sample, and every
        // state where new files of the pending plan exist (the ones it must not see).
        assert_eq!(rust_rows(inner.as_ref(), &what).await, before, "{what}");
        let sample = n % 9 == 1 || finished;
        if sample || pending_files(inner.as_ref()).await > 0 {
            let read = keyed(read_rows(&base, "hudi", &["snapshot"]), true, &what);
            assert_eq!(read, snapshot, "{what}: hudi-rs");
            hudi_checks += 1;
        }
        // The next run, once the heartbeat expired, rolls back what is left and clusters.
        faulty.clear_rules();
        clock.advance(TOLERANCE.as_millis() as i64 + 1_000);
        let report = run_clustering(&faulty, &memory_lock(), &clock, &writer)
            .await
            .unwrap_or_else(|e| panic!("{what}: recovery run: {e}"));
        assert!(report.resumed <= 1, "{what}: {report:?}");
        assert_clean(inner.as_ref(), &before, &what).await;
        if sample {
            let read = keyed(read_rows(&base, "hudi", &["snapshot"]), true, &what);
            assert_eq!(read, snapshot, "{what}: hudi-rs after recovery");
        }
        std::fs::remove_dir_all(&base).expect("remove copy");
        if finished {
            break;
        }
        n += 1;
    }
    assert!(n > 20, "the run took only {n} storage calls");
    assert!(hudi_checks >= 8, "{hudi_checks} hudi-rs checks");
    eprintln!(
        "crashed after each of the {n} storage calls of a run ({hudi_checks} read by hudi-rs)"
    );
}

/// Base files of pending instants.
async fn pending_files(storage: &dyn Storage) -> usize {
    let timeline = Timeline::load(storage).await.expect("timeline");
    let pending: BTreeSet<String> = timeline
        .pending()
        .iter()
        .map(|i| i.time.to_string())
        .collect();
    storage
        .list("")
        .await
        .expect("list")
        .iter()
        .filter(|o| !o.path.starts_with(".hoodie/"))
        .filter_map(|o| BaseFileName::parse(o.path.rsplit('/').next().unwrap_or(&o.path)).ok())
        .filter(|b| pending.contains(b.instant_time.as_str()))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_storage_call_of_a_rollback_leaves_a_readable_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pending = dir.path().join("pending");
    let clock = Arc::new(ManualClock::new(START));
    build_table(&pending, &clock, 4, 16).await;
    let before = rust_rows(&LocalStorage::new(&pending), "pristine").await;
    // A run whose completion fails: the plan stays pending with every new file written.
    {
        let inner: Arc<dyn Storage> = Arc::new(LocalStorage::new(&pending));
        let faulty = FaultyStorage::new(inner.clone())
            .with_rule(FaultRule::any_operation(FaultAction::Fail).path_suffix(".replacecommit"));
        let writer = open_writer(inner, clock.clone(), &pending).await;
        clock.advance(1_000);
        assert!(run_clustering(&faulty, &memory_lock(), &clock, &writer)
            .await
            .is_err());
    }
    let timeline = Timeline::load(&LocalStorage::new(&pending))
        .await
        .expect("timeline");
    let t = timeline.pending()[0].time.clone();
    let new_files: Vec<PathBuf> = crate::common::parquet_files(&pending)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(&format!("_{t}.parquet")))
        .collect();
    assert_eq!(new_files.len(), CITIES.len());
    clock.advance(TOLERANCE.as_millis() as i64 + 1_000);

    let config = every_small_file();
    let mut m = 1u64;
    loop {
        let base = dir.path().join(format!("rollback-{m}"));
        copy_dir(&pending, &base);
        let inner: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
        let faulty = FaultyStorage::new(inner.clone());
        crash_after(&faulty, m);
        let lock = memory_lock();
        let guard = lock.acquire(LOCK_WAIT).await.expect("lock");
        let ctx = ServiceContext {
            storage: &faulty,
            guard: &guard,
            clock: clock.as_ref(),
            config: &config,
        };
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        let outcome = rollback_expired(&ctx, &timeline, TOLERANCE).await;
        guard.release().await.expect("release");
        let what = format!("rollback crash at call {m}");
        assert_eq!(rust_rows(inner.as_ref(), &what).await, before, "{what}");
        if m % 5 == 1 {
            let read = keyed(read_rows(&base, "hudi", &["snapshot"]), true, &what);
            assert_eq!(read, before, "{what}: hudi-rs");
        }
        // A later run finishes the rollback, whatever state the crash left, and clusters again.
        let writer = open_writer(inner.clone(), clock.clone(), &base).await;
        clock.advance(1_000);
        run_clustering(inner.as_ref(), &memory_lock(), &clock, &writer)
            .await
            .unwrap_or_else(|e| panic!("{what}: next run: {e}"));
        assert_clean(inner.as_ref(), &before, &what).await;
        let retired = inner
            .head(&format!("{}{t}", hudi_sink::table::timeline::RETIRED_DIR))
            .await
            .expect("head");
        assert!(retired.is_some(), "{what}: the rolled-back time is retired");
        std::fs::remove_dir_all(&base).expect("remove copy");
        if outcome.is_ok() {
            assert_eq!(outcome.ok(), Some(1));
            break;
        }
        m += 1;
    }
    assert!(m > 5, "the rollback took only {m} storage calls");
    eprintln!("crashed after each of the {m} storage calls of a rollback");
}
