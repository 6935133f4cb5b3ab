//! `FileLock` on a temporary directory (`LocalStorage`): the same behaviours as the DynamoDB lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hudi_sink::clock::ManualClock;
use hudi_sink::lock::{FileLock, LeaseOptions, Lock, LockError, LockRecord};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;

/// A table directory and a storage on it.
fn storage() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()));
    (dir, storage)
}

fn lock(storage: &Arc<dyn Storage>, lease_ms: u64, refresh_ms: u64) -> FileLock {
    let options = LeaseOptions::hudi(Duration::from_millis(lease_ms))
        .with_refresh_period(Duration::from_millis(refresh_ms));
    FileLock::new(storage.clone(), "trips", options).expect("lock")
}

/// The current record's JSON, read from disk.
fn record_on_disk(dir: &tempfile::TempDir) -> Option<(String, serde_json::Value)> {
    let lock_dir = dir.path().join(".hoodie/.lock/trips");
    let mut names: Vec<String> = std::fs::read_dir(&lock_dir)
        .ok()?
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let name = names.pop()?;
    let data = std::fs::read(lock_dir.join(&name)).expect("read record");
    Some((name, serde_json::from_slice(&data).expect("json")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contenders_hold_the_lock_one_at_a_time() {
    let (_dir, storage) = storage();
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let (contenders, rounds) = (4, 10);
    let mut tasks = Vec::new();
    for _ in 0..contenders {
        let lock = lock(&storage, 3_000, 5);
        let (counter, inside) = (counter.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = lock
                    .acquire(Duration::from_secs(60))
                    .await
                    .expect("acquire");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                let v = counter.load(Ordering::SeqCst);
                let current = lock.current().await.expect("read").expect("record");
                assert_eq!(current.owner, lock.owner());
                tokio::time::sleep(Duration::from_millis(2)).await;
                counter.store(v + 1, Ordering::SeqCst);
                guard.ensure_held().await.expect("fenced");
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.expect("contender");
    }
    assert_eq!(counter.load(Ordering::SeqCst), contenders * rounds);
    let listed = storage.list(".hoodie/.lock/").await.expect("list");
    assert_eq!(listed.len(), 1, "old records are collected: {listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_holder_is_taken_over_after_one_lease_and_fenced() {
    let lease = Duration::from_millis(1_000);
    let refresh = Duration::from_millis(20);
    let (dir, storage) = storage();
    let old = lock(&storage, 1_000, 20).with_clock(Arc::new(ManualClock::new(0)));
    let new = lock(&storage, 1_000, 20);

    let held = old.acquire(Duration::ZERO).await.expect("old acquires");
    held.stop_heartbeat();
    let renew_start = Instant::now();
    held.ensure_held().await.expect("last renewal");
    let renew_end = Instant::now();
    let last_version = held.record_version();

    let waiter = tokio::spawn(async move {
        let g = new.acquire(Duration::from_secs(10)).await;
        (g, Instant::now())
    });
    while renew_start.elapsed() < lease - Duration::from_millis(100) {
        let (_, json) = record_on_disk(&dir).expect("record");
        assert_eq!(
            json["recordVersionNumber"],
            last_version.as_str(),
            "stolen early"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (stolen, got_at) = waiter.await.expect("join");
    let stolen = stolen.expect("new acquires");
    let after_start = got_at - renew_start;
    let after_end = got_at - renew_end;
    eprintln!(
        "file steal: lease {lease:?}, refresh {refresh:?}; taken over {after_start:?} after the last renewal \
         started, {after_end:?} after it returned"
    );
    assert!(
        after_start >= lease,
        "taken over after {after_start:?} < lease {lease:?}"
    );
    assert!(
        after_end <= lease + refresh + Duration::from_millis(1_000),
        "late: {after_end:?}"
    );

    assert!(held.is_held(), "the frozen holder does not know yet");
    let err = held
        .ensure_held()
        .await
        .expect_err("old lease must be refused");
    assert!(
        matches!(err, LockError::Lost { .. })
            && err.holder().map(|h| h.owner.as_str()) == Some(stolen.owner()),
        "{err}"
    );
    let err = held
        .release()
        .await
        .expect_err("old release must be refused");
    assert!(matches!(err, LockError::Lost { .. }), "{err}");
    let (_, json) = record_on_disk(&dir).expect("new owner's record survives");
    assert_eq!(json["ownerName"], stolen.owner());
    assert_eq!(
        json["recordVersionNumber"],
        stolen.record_version().as_str()
    );
    assert!(json.get("isReleased").is_none());
    stolen.ensure_held().await.expect("new owner holds it");
    stolen.release().await.expect("release");
}

/// Dropping a guard stops its heartbeat (best effort, no release): the lock frees up after one lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_guard_is_taken_over_after_its_lease() {
    let (_dir, storage) = storage();
    let a = lock(&storage, 600, 20);
    let b = lock(&storage, 600, 20);
    let guard = a.acquire(Duration::ZERO).await.expect("acquire");
    drop(guard);
    let started = Instant::now();
    let got = b
        .acquire(Duration::from_secs(10))
        .await
        .expect("taken over");
    let took = started.elapsed();
    eprintln!("file drop: lease 600 ms; taken over after {took:?}");
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(took < Duration::from_millis(2_600), "{took:?}");
    got.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_has_the_lock_client_attribute_names() {
    let (dir, storage) = storage();
    let l = lock(&storage, 1_500, 20);
    let held = l.acquire(Duration::ZERO).await.expect("acquire");
    held.stop_heartbeat();
    let (name, json) = record_on_disk(&dir).expect("record");
    assert_eq!(name, "00000000000000000001.json");
    let obj = json.as_object().expect("object");
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["key", "ownerName", "leaseDuration", "recordVersionNumber"]
    );
    assert!(obj.values().all(serde_json::Value::is_string), "{json}");
    assert_eq!(obj["key"], "trips");
    assert_eq!(obj["ownerName"], l.owner());
    assert_eq!(obj["leaseDuration"], "1500");
    let first = held.record_version();
    assert_eq!(obj["recordVersionNumber"], first.as_str());
    uuid::Uuid::parse_str(&first).expect("UUID");

    held.ensure_held().await.expect("renew");
    let (name, json) = record_on_disk(&dir).expect("record");
    assert_eq!(name, "00000000000000000002.json");
    assert_ne!(json["recordVersionNumber"], first.as_str());
    assert_eq!(json["recordVersionNumber"], held.record_version().as_str());
    held.release().await.expect("release");
    let (_, json) = record_on_disk(&dir).expect("released record stays");
    assert_eq!(json["isReleased"], "1");
    // A released record is free at once for anyone.
    let other = lock(&storage, 1_500, 20);
    let started = Instant::now();
    let g = other.acquire(Duration::ZERO).await.expect("free");
    assert!(started.elapsed() < Duration::from_millis(500));
    g.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_a_non_owner_is_refused() {
    let (dir, storage) = storage();
    let a = lock(&storage, 5_000, 20);
    let b = lock(&storage, 5_000, 20);
    let held = a.acquire(Duration::ZERO).await.expect("acquire");
    held.stop_heartbeat();
    let record = held.record();
    let err = b.release_record(&record).await.expect_err("not b's");
    assert!(matches!(err, LockError::NotOwner { .. }), "{err}");
    // Right version and sequence, wrong owner: the storage condition refuses it.
    let forged = LockRecord {
        owner: b.owner().to_string(),
        ..record.clone()
    };
    let err = b.release_record(&forged).await.expect_err("condition");
    assert!(
        matches!(err, LockError::Lost { .. })
            && err.holder().map(|h| h.owner.as_str()) == Some(a.owner()),
        "{err}"
    );
    let (_, json) = record_on_disk(&dir).expect("record");
    assert_eq!(json["ownerName"], a.owner());
    assert_eq!(json["recordVersionNumber"], record.record_version.as_str());
    assert!(json.get("isReleased").is_none());
    held.release().await.expect("the owner may");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_times_out_naming_the_holder() {
    let (_dir, storage) = storage();
    let a = lock(&storage, 900, 20);
    let b = lock(&storage, 900, 20);
    let held = a.acquire(Duration::ZERO).await.expect("acquire");
    let started = Instant::now();
    let err = b
        .acquire(Duration::from_millis(300))
        .await
        .expect_err("held");
    let waited = started.elapsed();
    eprintln!("file timeout: wait 300 ms + holder lease 900 ms -> gave up after {waited:?}: {err}");
    assert!(waited >= Duration::from_millis(1_200), "{waited:?}");
    match &err {
        LockError::Timeout { .. } => {
            assert_eq!(err.holder().map(|h| h.owner.as_str()), Some(a.owner()))
        }
        other => panic!("expected Timeout, got {other}"),
    }
    assert!(
        err.to_string().contains(a.owner()) && err.to_string().contains(".hoodie/.lock/trips"),
        "{err}"
    );
    assert!(held.is_held());
    held.release().await.expect("release");
}
