//! Tests of the clean service on in-memory tables whose commits are written by hand (the planning and the
//! instants; tests/it exercises it on tables the writer made, read back with hudi-rs).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::clock::{Clock, SystemClock};
use crate::lock::{LeaseOptions, Lock, MemoryLock};
use crate::services::config::ServicesConfig;
use crate::storage::memory::MemoryStorage;
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};

fn t(n: u32) -> InstantTime {
    InstantTime::parse(&format!("202401010000{n:05}")).expect("t")
}

fn file(partition: &str, id: &str, n: u32) -> String {
    format!("{partition}/{id}_0-0-0_{}.parquet", t(n))
}

/// Writes commit `n` that writes a new slice of each of `groups` (partition, file id, previous instant).
async fn commit(storage: &MemoryStorage, n: u32, groups: &[(&str, &str, Option<u32>)]) {
    let mut meta = CommitMetadata::new(OperationType::Upsert);
    for (p, id, prev) in groups {
        let path = file(p, id, n);
        storage
            .put(&path, Bytes::from_static(b"data"))
            .await
            .expect("put");
        let mut stat = WriteStat::new(id, p, &path);
        if let Some(prev) = prev {
            stat.prev_commit = t(*prev).to_string();
        }
        stat.file_size_in_bytes = 4;
        meta.add_write_stat(stat);
    }
    meta.set_schema("{}");
    storage
        .put(
            &format!(".hoodie/{}.commit", t(n)),
            Bytes::from(meta.to_json_pretty().expect("json")),
        )
        .await
        .expect("put");
}

struct Fixture {
    storage: Arc<MemoryStorage>,
    lock: MemoryLock,
    clock: Arc<dyn Clock>,
    config: ServicesConfig,
    cache: CommitCache,
    memo: CleanMemo,
}

impl Fixture {
    fn new(config: ServicesConfig) -> Self {
        Self {
            storage: Arc::new(MemoryStorage::new("mem://table")),
            lock: MemoryLock::new("t", LeaseOptions::default()),
            clock: Arc::new(SystemClock),
            config,
            cache: CommitCache::new(),
            memo: CleanMemo::default(),
        }
    }

    async fn clean(&self) -> CleanOutcome {
        let guard = self
            .lock
            .acquire(Duration::from_secs(1))
            .await
            .expect("lock");
        let ctx = ServiceContext {
            storage: self.storage.as_ref(),
            guard: &guard,
            clock: self.clock.as_ref(),
            config: &self.config,
        };
        let timeline = Timeline::load(self.storage.as_ref())
            .await
            .expect("timeline");
        let outcome = run(&ctx, &timeline, &self.cache, &self.memo)
            .await
            .expect("clean");
        guard.release().await.expect("release");
        outcome
    }

    async fn exists(&self, path: &str) -> bool {
        self.storage.head(path).await.expect("head").is_some()
    }
}

fn retaining(commits: u32) -> ServicesConfig {
    ServicesConfig {
        commits_retained: commits,
        ..ServicesConfig::default()
    }
}

#[tokio::test]
async fn keep_latest_commits_deletes_only_slices_no_retained_query_reads() {
    let f = Fixture::new(retaining(2));
    commit(&f.storage, 1, &[("p", "a", None), ("p", "b", None)]).await;
    for n in 2..=6 {
        commit(&f.storage, n, &[("p", "a", Some(n - 1))]).await;
    }
    let outcome = f.clean().await;
    // ECR = commit 5: keep a@6 (latest), a@5 (≥ ECR), a@4 (newest before), b@1 (latest of b).
    assert_eq!(outcome.files_deleted, 3);
    for n in 1..=3 {
        assert!(!f.exists(&file("p", "a", n)).await, "a@{n}");
    }
    for n in 4..=6 {
        assert!(f.exists(&file("p", "a", n)).await, "a@{n}");
    }
    assert!(f.exists(&file("p", "b", 1)).await);
    let time = outcome.instant.expect("instant");
    let requested = f
        .storage
        .get(&clean_file(&time, State::Requested))
        .await
        .expect("requested");
    let inflight = f
        .storage
        .get(&clean_file(&time, State::Inflight))
        .await
        .expect("inflight");
    assert_eq!(requested, inflight, "Spark writes the plan twice");
    let plan = CleanerPlan::from_avro_bytes(&requested, "mem://table").expect("plan");
    assert_eq!(plan.version, 2);
    assert_eq!(plan.policy, "KEEP_LATEST_COMMITS");
    assert_eq!(
        plan.earliest_instant_to_retain.as_ref().map(|i| (
            i.timestamp.as_str(),
            i.action.as_str(),
            i.state.as_str()
        )),
        Some((t(5).as_str(), "commit", "COMPLETED"))
    );
    let planned: Vec<&str> = plan.file_paths_to_be_deleted_per_partition["p"]
        .iter()
        .map(|f| f.file_path.as_str())
        .collect();
    assert_eq!(
        planned,
        (1..=3)
            .map(|n| format!("mem://table/{}", file("p", "a", n)))
            .collect::<Vec<_>>()
    );
    let done = CleanMetadata::from_avro_bytes(
        &f.storage
            .get(&clean_file(&time, State::Completed))
            .await
            .expect("clean"),
    )
    .expect("metadata");
    assert_eq!(done.total_files_deleted, 3);
    assert_eq!(done.earliest_commit_to_retain, t(5).as_str());
    assert_eq!(
        done.partition_metadata["p"].success_delete_files,
        (1..=3)
            .map(|n| format!("a_0-0-0_{}.parquet", t(n)))
            .collect::<Vec<_>>()
    );

    // The next commit moves the ECR by one: the next clean deletes exactly a@4.
    commit(&f.storage, 7, &[("p", "a", Some(6))]).await;
    let outcome = f.clean().await;
    assert_eq!(outcome.files_deleted, 1);
    assert!(!f.exists(&file("p", "a", 4)).await);
    assert!(f.exists(&file("p", "a", 5)).await);
}

#[tokio::test]
async fn files_of_pending_and_retired_instants_are_never_cleaned() {
    let f = Fixture::new(retaining(1));
    commit(&f.storage, 1, &[("p", "a", None)]).await;
    commit(&f.storage, 2, &[("p", "a", Some(1))]).await;
    commit(&f.storage, 4, &[("p", "a", Some(2))]).await;
    commit(&f.storage, 5, &[("p", "a", Some(4))]).await;
    // A rolled-back instant's late file and a pending instant's file, both in group a.
    f.storage
        .put(
            &format!("{}{}", crate::table::timeline::RETIRED_DIR, t(3)),
            Bytes::new(),
        )
        .await
        .expect("retire");
    f.storage
        .put(&file("p", "a", 3), Bytes::from_static(b"zombie"))
        .await
        .expect("put");
    f.storage
        .put(&format!(".hoodie/{}.inflight", t(6)), Bytes::new())
        .await
        .expect("pending");
    f.storage
        .put(&file("p", "a", 6), Bytes::from_static(b"pending"))
        .await
        .expect("put");
    f.clean().await;
    assert!(f.exists(&file("p", "a", 3)).await, "retired instant's file");
    assert!(f.exists(&file("p", "a", 6)).await, "pending instant's file");
    assert!(f.exists(&file("p", "a", 5)).await, "latest");
    assert!(f.exists(&file("p", "a", 4)).await, "newest before the ECR");
    assert!(!f.exists(&file("p", "a", 1)).await);
}

/// A plan that deletes `a@1`, made when commit `last` was the latest.
fn plan_deleting_a1(last: u32) -> CleanerPlan {
    CleanerPlan {
        earliest_instant_to_retain: None,
        last_completed_commit_timestamp: t(last).to_string(),
        policy: "KEEP_LATEST_COMMITS".into(),
        version: 2,
        file_paths_to_be_deleted_per_partition: [(
            "p".to_string(),
            vec![CleanFileInfo {
                file_path: format!("mem://table/{}", file("p", "a", 1)),
                is_bootstrap_base_file: false,
            }],
        )]
        .into(),
        partitions_to_be_deleted: Vec::new(),
        extra_metadata: Default::default(),
    }
}

#[tokio::test]
async fn a_pending_clean_is_finished_from_its_plan() {
    let f = Fixture::new(retaining(1));
    commit(&f.storage, 1, &[("p", "a", None)]).await;
    commit(&f.storage, 2, &[("p", "a", Some(1))]).await;
    let plan = plan_deleting_a1(2);
    // Crashed after writing the requested file only.
    f.storage
        .put(
            &clean_file(&t(3), State::Requested),
            Bytes::from(plan.to_avro_bytes().expect("plan")),
        )
        .await
        .expect("put");
    let outcome = f.clean().await;
    assert_eq!(outcome.resumed, 1);
    assert!(!f.exists(&file("p", "a", 1)).await);
    assert!(f.exists(&clean_file(&t(3), State::Inflight)).await);
    assert!(f.exists(&clean_file(&t(3), State::Completed)).await);
    // An empty pending clean (another engine's crash) is removed, as Spark does.
    f.storage
        .put(&clean_file(&t(9), State::Requested), Bytes::new())
        .await
        .expect("put");
    f.clean().await;
    assert!(!f.exists(&clean_file(&t(9), State::Requested)).await);
}

#[tokio::test]
async fn a_warm_coordinator_cleans_again_after_its_plan_failed_to_be_written() {
    let f = Fixture::new(retaining(1));
    commit(&f.storage, 1, &[("p", "a", None)]).await;
    commit(&f.storage, 2, &[("p", "a", Some(1))]).await;
    // The first clean records its cursor; the next commit gives the next one work.
    f.clean().await;
    commit(&f.storage, 3, &[("p", "a", Some(2))]).await;
    let faulty = crate::storage::FaultyStorage::new(f.storage.clone()).with_rule(
        crate::storage::faulty::FaultRule::fail(crate::storage::faulty::Operation::PutIfAbsent)
            .path_suffix(".clean.requested"),
    );
    let guard = f.lock.acquire(Duration::from_secs(1)).await.expect("lock");
    let ctx = ServiceContext {
        storage: &faulty,
        guard: &guard,
        clock: f.clock.as_ref(),
        config: &f.config,
    };
    let timeline = Timeline::load(&faulty).await.expect("timeline");
    assert!(run(&ctx, &timeline, &f.cache, &f.memo).await.is_err());
    guard.release().await.expect("release");
    assert!(f.exists(&file("p", "a", 1)).await);
    // Same memo: the failed clean is planned again, not taken for done. ECR = 3: a@2 is the newest slice
    // before it, a@1 goes.
    let outcome = f.clean().await;
    assert_eq!(outcome.files_deleted, 1, "{outcome:?}");
    assert!(!f.exists(&file("p", "a", 1)).await);
    assert!(f.exists(&file("p", "a", 2)).await);
}

#[tokio::test]
async fn a_failed_read_of_a_pending_clean_is_an_error_not_a_missing_plan() {
    let f = Fixture::new(retaining(1));
    commit(&f.storage, 1, &[("p", "a", None)]).await;
    commit(&f.storage, 2, &[("p", "a", Some(1))]).await;
    commit(&f.storage, 3, &[("p", "a", Some(2))]).await;
    // A clean that crashed after writing its plan twice.
    let plan = plan_deleting_a1(3);
    let body = Bytes::from(plan.to_avro_bytes().expect("plan"));
    for state in [State::Requested, State::Inflight] {
        f.storage
            .put(&clean_file(&t(4), state), body.clone())
            .await
            .expect("put");
    }
    // Both reads of the plan fail (a throttled store): the pending clean must stay.
    let faulty = crate::storage::FaultyStorage::new(f.storage.clone()).with_rule(
        crate::storage::faulty::FaultRule::fail(crate::storage::faulty::Operation::Get)
            .path_prefix(format!(".hoodie/{}.clean.", t(4)))
            .times(2),
    );
    let guard = f.lock.acquire(Duration::from_secs(1)).await.expect("lock");
    let ctx = ServiceContext {
        storage: &faulty,
        guard: &guard,
        clock: f.clock.as_ref(),
        config: &f.config,
    };
    let timeline = Timeline::load(&faulty).await.expect("timeline");
    assert!(finish_pending(&ctx, &timeline).await.is_err());
    guard.release().await.expect("release");
    for state in [State::Requested, State::Inflight] {
        assert!(f.exists(&clean_file(&t(4), state)).await, "{state:?}");
    }
    // Readable again: the next run finishes it from its plan.
    let outcome = f.clean().await;
    assert_eq!(outcome.resumed, 1, "{outcome:?}");
    assert!(!f.exists(&file("p", "a", 1)).await);
    assert!(f.exists(&clean_file(&t(4), State::Completed)).await);
}

#[tokio::test]
async fn an_insert_only_table_is_cleaned_without_listing_it_again() {
    let f = Fixture::new(retaining(2));
    for n in 1..=6 {
        commit(&f.storage, n, &[("p", &format!("g{n}"), None)]).await;
    }
    // The first clean scans everything (no earlier clean bounds the work) and records its cursor.
    let first = f.clean().await;
    assert_eq!(first.files_deleted, 0);
    assert!(
        first.instant.is_some(),
        "the first clean records where it got to"
    );
    commit(&f.storage, 7, &[("p", "g7", None)]).await;
    // A stray slice no commit superseded is not looked for: only superseding commits lead to listings.
    let second = f.clean().await;
    assert_eq!(second, CleanOutcome::default());
}

#[test]
fn plan_paths_map_back_into_the_table() {
    let storage = MemoryStorage::new("s3://bucket/warehouse/trips");
    assert_eq!(
        relative_path(&storage, "s3a://bucket/warehouse/trips/p/f.parquet").as_deref(),
        Some("p/f.parquet")
    );
    assert_eq!(
        relative_path(&storage, &full_path(&storage, "a/b.parquet")).as_deref(),
        Some("a/b.parquet")
    );
    for outside in [
        "s3://bucket/warehouse/trips2/p/f.parquet",
        "s3://other/warehouse/trips/p/f.parquet",
        "s3://bucket/warehouse/trips/../x",
        "s3://bucket/warehouse/trips/",
    ] {
        assert_eq!(relative_path(&storage, outside), None, "{outside}");
    }
    let local = MemoryStorage::new("/tmp/t");
    assert_eq!(
        relative_path(&local, "file:/tmp/t/p/f.parquet").as_deref(),
        Some("p/f.parquet")
    );
}

/// Merge-on-read: the log file `version` of slice (`id`, base `base`) in partition `partition`.
fn log(partition: &str, id: &str, base: u32, version: u32) -> String {
    format!("{partition}/.{id}_{}.log.{version}_0-0-0", t(base))
}

/// Writes deltacommit `n`: a new base file per `bases` entry, one new log per `logs` entry (partition, file
/// id, slice base, version), each named by a stat.
async fn deltacommit(
    storage: &MemoryStorage,
    n: u32,
    bases: &[(&str, &str)],
    logs: &[(&str, &str, u32, u32)],
) {
    let mut meta = CommitMetadata::new(OperationType::Upsert);
    for (p, id) in bases {
        let path = file(p, id, n);
        storage
            .put(&path, Bytes::from_static(b"base"))
            .await
            .expect("put");
        let mut stat = WriteStat::new(id, p, &path);
        stat.file_size_in_bytes = 4;
        meta.add_write_stat(stat);
    }
    for (p, id, base, version) in logs {
        let path = log(p, id, *base, *version);
        storage
            .put(&path, Bytes::from_static(b"log"))
            .await
            .expect("put");
        let mut stat = WriteStat::new(id, p, &path);
        stat.prev_commit = t(*base).to_string();
        stat.file_size_in_bytes = 3;
        meta.add_write_stat(stat);
    }
    meta.set_schema("{}");
    storage
        .put(
            &format!(".hoodie/{}.deltacommit", t(n)),
            Bytes::from(meta.to_json_pretty().expect("json")),
        )
        .await
        .expect("put");
}

/// A merge-on-read table: group a has slices 1 (base + logs 1, 2 and a failed write's log 3), 4 (a
/// compaction commit; one log) and 6 (a compaction commit; one log at 7); group b one slice at 1 with a log.
async fn mor_table(f: &Fixture) {
    deltacommit(&f.storage, 1, &[("p", "a"), ("p", "b")], &[]).await;
    deltacommit(&f.storage, 2, &[], &[("p", "a", 1, 1), ("p", "b", 1, 1)]).await;
    deltacommit(&f.storage, 3, &[], &[("p", "a", 1, 2)]).await;
    // A failed (rolled-back) write's log in slice a@1: no stat names it; it goes with its slice.
    f.storage
        .put(&log("p", "a", 1, 3), Bytes::from_static(b"failed"))
        .await
        .expect("put");
    commit(&f.storage, 4, &[("p", "a", Some(1))]).await;
    deltacommit(&f.storage, 5, &[], &[("p", "a", 4, 1)]).await;
    commit(&f.storage, 6, &[("p", "a", Some(4))]).await;
    deltacommit(&f.storage, 7, &[], &[("p", "a", 6, 1)]).await;
}

#[tokio::test]
async fn a_merge_on_read_slice_is_cleaned_with_all_its_log_files() {
    // ECR = 6 (two retained of the 7 commits and deltacommits): a@1 is older than a@4, the newest slice
    // before the ECR, so it goes with its three logs; a@4, a@6 and b@1 stay with theirs.
    let f = Fixture::new(retaining(2));
    mor_table(&f).await;
    let outcome = f.clean().await;
    let doomed = vec![
        file("p", "a", 1),
        log("p", "a", 1, 1),
        log("p", "a", 1, 2),
        log("p", "a", 1, 3),
    ];
    assert_eq!(outcome.files_deleted, doomed.len() as u64);
    for path in &doomed {
        assert!(!f.exists(path).await, "{path} deleted");
    }
    for path in [
        file("p", "a", 4),
        log("p", "a", 4, 1),
        file("p", "a", 6),
        log("p", "a", 6, 1),
        file("p", "b", 1),
        log("p", "b", 1, 1),
    ] {
        assert!(f.exists(&path).await, "{path} kept");
    }
    let time = outcome.instant.expect("instant");
    let plan = CleanerPlan::from_avro_bytes(
        &f.storage
            .get(&clean_file(&time, State::Requested))
            .await
            .expect("plan"),
        "mem://table",
    )
    .expect("plan");
    assert_eq!(
        plan.earliest_instant_to_retain
            .map(|i| (i.timestamp, i.action)),
        Some((t(6).to_string(), "commit".to_string()))
    );
    let planned: Vec<String> = plan.file_paths_to_be_deleted_per_partition["p"]
        .iter()
        .map(|f| f.file_path.clone())
        .collect();
    let full: Vec<String> = doomed.iter().map(|p| format!("mem://table/{p}")).collect();
    assert_eq!(
        planned, full,
        "base file first, then the logs in reader order"
    );
    let done = CleanMetadata::from_avro_bytes(
        &f.storage
            .get(&clean_file(&time, State::Completed))
            .await
            .expect("clean"),
    )
    .expect("metadata");
    let names: Vec<String> = doomed
        .iter()
        .map(|p| p.rsplit('/').next().expect("name").to_string())
        .collect();
    assert_eq!(done.partition_metadata["p"].success_delete_files, names);
    assert_eq!(done.total_files_deleted, 4);

    // One more deltacommit moves the ECR to 7: a@4 goes with its log, a@6 is the newest before the ECR.
    deltacommit(&f.storage, 8, &[], &[("p", "a", 6, 2)]).await;
    let outcome = f.clean().await;
    assert_eq!(outcome.files_deleted, 2);
    assert!(!f.exists(&file("p", "a", 4)).await);
    assert!(!f.exists(&log("p", "a", 4, 1)).await);
    assert!(f.exists(&file("p", "a", 6)).await);
    assert!(f.exists(&log("p", "a", 6, 1)).await);
}

#[tokio::test]
async fn the_partition_metadata_and_uncommitted_slices_are_never_log_slices() {
    let f = Fixture::new(retaining(1));
    mor_table(&f).await;
    f.storage
        .put("p/.hoodie_partition_metadata", Bytes::from_static(b"#"))
        .await
        .expect("put");
    // Logs of a slice whose base instant is not committed: appended to a compaction that is still pending
    // (9), and a log-only slice of a time no commit has (10, after every completed one).
    f.storage
        .put(
            &format!(".hoodie/{}.compaction.requested", t(9)),
            Bytes::from(super::pending_compaction::tests::plan_bytes(&[(
                "p",
                "a",
                &t(6),
            )])),
        )
        .await
        .expect("plan");
    for path in [log("p", "a", 9, 1), log("p", "c", 10, 1)] {
        f.storage
            .put(&path, Bytes::from_static(b"uncommitted"))
            .await
            .expect("put");
    }
    f.clean().await;
    // ECR = 7 (the compaction pending at 9 is newer): a@1 and a@4 go; a@6 is the latest committed slice
    // (and the one the compaction reads).
    assert!(!f.exists(&file("p", "a", 1)).await);
    assert!(!f.exists(&file("p", "a", 4)).await);
    assert!(!f.exists(&log("p", "a", 4, 1)).await);
    for path in [
        file("p", "a", 6),
        log("p", "a", 6, 1),
        log("p", "a", 9, 1),
        log("p", "c", 10, 1),
        "p/.hoodie_partition_metadata".to_string(),
    ] {
        assert!(f.exists(&path).await, "{path} kept");
    }
}

#[tokio::test]
async fn an_unreadable_pending_compaction_plan_stops_the_clean() {
    let f = Fixture::new(retaining(1));
    mor_table(&f).await;
    f.storage
        .put(
            &format!(".hoodie/{}.compaction.requested", t(9)),
            Bytes::new(),
        )
        .await
        .expect("plan");
    let outcome = f.clean().await;
    assert_eq!(outcome, CleanOutcome::default());
    assert!(f.exists(&file("p", "a", 1)).await);
    assert!(f.exists(&log("p", "a", 1, 1)).await);
    // Once the plan is readable the clean goes ahead.
    f.storage
        .put(
            &format!(".hoodie/{}.compaction.requested", t(9)),
            Bytes::from(super::pending_compaction::tests::plan_bytes(&[(
                "p",
                "a",
                &t(6),
            )])),
        )
        .await
        .expect("plan");
    assert_eq!(f.clean().await.files_deleted, 6);
}
