//! The Delta Lake mirror step (`hudi.sink.delta.mirror`) under a crash at every one of its storage calls.
//!
//! An upsert bucket table gets ten commits through `KafkaSink`, the first nine mirrored (Delta versions 0 to
//! 8) and the tenth not, as when a mirror step failed after the Hudi commit. Then, on a copy of that table for
//! every call number `n` of a fault-free step, a step crashes right before or right after call `n`. Whatever it
//! left, the mirror is never ahead of Hudi: its latest version mirrors the ninth or the tenth instant and holds
//! exactly the base files Hudi's file-system view has at that instant. The next step (no fault) brings it to
//! the tenth, with one version per instant: nothing committed twice. The step crosses version 9, so the crash
//! lands in the checkpoint's writes too.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hudi_sink::clock::ManualClock;
use hudi_sink::commit::CommitMirror;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::delta::{DeltaConfig, DeltaMirror};
use hudi_sink::lock::{LeaseOptions, MemoryLock};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::ServicesConfig;
use hudi_sink::sink::{KafkaSink, SinkConfig};
use hudi_sink::storage::faulty::FaultyStorage;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::fs_view::latest_file_slices;
use hudi_sink::table::instant::InstantTime;
use hudi_sink::table::timeline::Timeline;
use hudi_sink::transport::InProcessClient;
use hudi_sink::write::{TableWriter, WriteConfig};

use crate::common::crash::{copy_dir, crash_after, crash_before, link_dir};
use crate::exactly_once::process;
use crate::model::{local_props, stream, Msg, SCHEMA};

const START: i64 = 1_767_225_600_000; // 2026-01-01
const ROUNDS: usize = 10;
const PER_ROUND: usize = 8;

/// A sink over `storage` whose coordinator mirrors every commit when `mirror` is set, and runs no services.
async fn sink(
    storage: Arc<dyn Storage>,
    base: &Path,
    dir: &Path,
    clock: Arc<ManualClock>,
    mirror: bool,
) -> KafkaSink {
    let schema = dir.join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let mut props = local_props(base, &schema, &dir.join("dead-letters"));
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let writer = TableWriter::create_or_open(
        storage.clone(),
        clock.clone(),
        WriteConfig::from_properties(props).expect("write config"),
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("open table");
    let lock = MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_secs(30)));
    let mut coordinator = Coordinator::new(
        storage,
        Arc::new(lock),
        clock.clone(),
        CoordinatorConfig {
            lock_wait: Duration::from_secs(5),
            heartbeat_tolerance: sink_config.heartbeat_tolerance(),
            services: ServicesConfig {
                clean_automatic: false,
                archive_automatic: false,
                ..ServicesConfig::default()
            },
        },
    );
    if mirror {
        coordinator = coordinator.with_mirror(Arc::new(mirror_of(base)));
    }
    KafkaSink::new(
        writer,
        Arc::new(InProcessClient::new(coordinator)),
        Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
            dir.join("dead-letters"),
        )))),
        clock,
        sink_config,
        "writer",
    )
}

fn mirror_of(base: &Path) -> DeltaMirror {
    DeltaMirror::new(DeltaConfig::with_defaults(&base.display().to_string()))
}

/// The mirror's latest instant and files, checked against Hudi's view at that instant; returns the instant.
async fn check_matches_hudi(base: &Path, case: &str) -> (InstantTime, u64) {
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(base));
    let status = hudi_sink::delta::status(storage.clone(), &base.display().to_string())
        .await
        .unwrap_or_else(|e| panic!("{case}: reading the Delta log: {e}"))
        .unwrap_or_else(|| panic!("{case}: no Delta log"));
    let instant = status
        .instant
        .clone()
        .unwrap_or_else(|| panic!("{case}: no mirrored instant"));
    let timeline = Timeline::load(storage.as_ref()).await.expect("timeline");
    let view: BTreeSet<String> = latest_file_slices(storage.as_ref(), &timeline, Some(&instant))
        .await
        .expect("file slices")
        .into_iter()
        .map(|s| s.path())
        .collect();
    assert_eq!(
        status.files, view,
        "{case}: Delta version {} differs from Hudi's view at {instant}",
        status.version
    );
    (instant, status.version)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_every_call_of_the_mirror_step_leaves_delta_behind_or_equal_never_ahead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("trips");
    let stash = dir.path().join("stash");
    let clock = Arc::new(ManualClock::new(START));
    let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
    let msgs = stream("trips", 1, (ROUNDS * PER_ROUND) as i64, 12);
    let round = |r: usize| -> Vec<Msg> {
        msgs.iter()
            .skip(r * PER_ROUND)
            .take(PER_ROUND)
            .cloned()
            .collect()
    };
    let mirrored = sink(local.clone(), &base, dir.path(), clock.clone(), true).await;
    for r in 0..ROUNDS - 1 {
        clock.advance(1_000);
        process(&mirrored, &round(r)).await;
    }
    clock.advance(1_000);
    let unmirrored = sink(local.clone(), &base, dir.path(), clock.clone(), false).await;
    process(&unmirrored, &round(ROUNDS - 1)).await;
    let timeline = Timeline::load(local.as_ref()).await.expect("timeline");
    let completed: Vec<InstantTime> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.clone())
        .collect();
    assert_eq!(completed.len(), ROUNDS);
    let (behind, version) = check_matches_hudi(&base, "as built").await;
    assert_eq!(
        (&behind, version),
        (&completed[ROUNDS - 2], ROUNDS as u64 - 2)
    );
    let latest = completed[ROUNDS - 1].clone();
    copy_dir(&base, &stash);

    // A fault-free step: how many storage calls it makes, and where it ends.
    let faulty = Arc::new(FaultyStorage::new(local.clone()));
    let shared: Arc<dyn Storage> = faulty.clone();
    assert!(mirror_of(&base).mirror(&shared, &timeline).await);
    let calls = faulty.calls().len() as u64;
    assert!(calls > 5, "{calls} calls");
    assert_eq!(
        check_matches_hudi(&base, "fault-free").await,
        (latest.clone(), ROUNDS as u64 - 1)
    );
    assert!(
        base.join("_delta_log/00000000000000000009.checkpoint.parquet")
            .exists(),
        "the step checkpointed version 9"
    );

    // A crash right after call `n` for every `n`, and one before the first call: every state a crash can
    // leave (a crash before call `n` leaves the state of a crash after call `n - 1`).
    let crashes = std::iter::once((1, false)).chain((1..=calls).map(|n| (n, true)));
    for (n, after) in crashes {
        {
            let case = format!("crash {} call {n}", if after { "after" } else { "before" });
            std::fs::remove_dir_all(&base).expect("reset");
            link_dir(&stash, &base);
            let faulty = Arc::new(FaultyStorage::new(local.clone()));
            if after {
                crash_after(&faulty, n);
            } else {
                crash_before(&faulty, n);
            }
            let shared: Arc<dyn Storage> = faulty.clone();
            mirror_of(&base).mirror(&shared, &timeline).await;
            let (instant, version) = check_matches_hudi(&base, &case).await;
            assert!(
                (instant == behind && version == ROUNDS as u64 - 2)
                    || (instant == latest && version == ROUNDS as u64 - 1),
                "{case}: the mirror is at version {version}, instant {instant}"
            );
            // The next step catches up, committing nothing twice.
            assert!(
                mirror_of(&base).mirror(&local, &timeline).await,
                "{case}: recovery"
            );
            assert_eq!(
                check_matches_hudi(&base, &case).await,
                (latest.clone(), ROUNDS as u64 - 1),
                "{case}: after recovery"
            );
        }
    }
}
