//! `DynamoDbLock` against moto's DynamoDB on 127.0.0.1: mutual exclusion, lease takeover timing, fencing,
//! refusal of foreign releases, the exact item the Java lock client writes, and timeouts naming the holder.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, KeyType, ScalarAttributeType};
use aws_sdk_dynamodb::Client;
use hudi_sink::clock::ManualClock;
use hudi_sink::lock::dynamodb::{ENDPOINT_URL_KEY, PARTITION_KEY_KEY, TABLE_KEY, TABLE_NAME_KEY};
use hudi_sink::lock::{
    create_lock_table_if_missing, DynamoDbLock, DynamoDbLockConfig, LeaseOptions, Lock, LockError,
    LockRecord, WAIT_TIME_MS_KEY,
};

use crate::common::moto;

/// A fresh lock table in moto and a config for one lock key in it.
async fn setup(lease_ms: u64) -> (Client, DynamoDbLockConfig) {
    let client = Client::new(&moto::sdk_config().await);
    let table = moto::unique_name("locks");
    let props: BTreeMap<String, String> = [
        (TABLE_KEY, table.as_str()),
        (TABLE_NAME_KEY, "trips"),
        (WAIT_TIME_MS_KEY, &lease_ms.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = DynamoDbLockConfig::from_props(&props).expect("config");
    assert!(create_lock_table_if_missing(&client, &config)
        .await
        .expect("create table"));
    (client, config)
}

/// Another client (own owner name) of the lock, polling every `refresh`.
fn client_of(client: &Client, config: &DynamoDbLockConfig, refresh: Duration) -> DynamoDbLock {
    let config = config
        .clone()
        .with_owner_name(hudi_sink::lock::default_owner_name())
        .with_lease(config.lease.with_refresh_period(refresh));
    DynamoDbLock::new(client.clone(), config).expect("lock")
}

async fn raw_item(
    client: &Client,
    config: &DynamoDbLockConfig,
) -> Option<HashMap<String, AttributeValue>> {
    client
        .get_item()
        .table_name(&config.table)
        .key("key", AttributeValue::S(config.partition_key.clone()))
        .consistent_read(true)
        .send()
        .await
        .expect("get item")
        .item()
        .cloned()
        .filter(|i| !i.is_empty())
}

fn s<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> &'a str {
    match item.get(name) {
        Some(AttributeValue::S(v)) => v,
        other => panic!("{name}: expected S, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contenders_hold_the_lock_one_at_a_time() {
    let (client, config) = setup(3_000).await;
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let (contenders, rounds) = (3, 8);
    let mut tasks = Vec::new();
    for _ in 0..contenders {
        let lock = client_of(&client, &config, Duration::from_millis(20));
        let (client, config) = (client.clone(), config.clone());
        let (counter, inside) = (counter.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = lock
                    .acquire(Duration::from_secs(60))
                    .await
                    .expect("acquire");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                // Non-atomic read-modify-write across an await: overlapping holders lose updates.
                let v = counter.load(Ordering::SeqCst);
                let item = raw_item(&client, &config).await.expect("item while held");
                assert_eq!(s(&item, "ownerName"), lock.owner());
                tokio::time::sleep(Duration::from_millis(5)).await;
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
    assert!(
        raw_item(&client, &config).await.is_none(),
        "released locks are deleted"
    );
}

/// A holder that stops heartbeating is taken over after one lease on the contender's clock, never earlier;
/// afterwards the old guard can neither prove its lease nor delete the new owner's item.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_holder_is_taken_over_after_one_lease_and_fenced() {
    let lease = Duration::from_millis(1_500);
    let refresh = Duration::from_millis(50);
    let (client, config) = setup(1_500).await;
    // The old holder's clock stands still: like a frozen Lambda it believes its lease is fresh.
    let frozen = Arc::new(ManualClock::new(0));
    let old = client_of(&client, &config, refresh).with_clock(frozen);
    let new = client_of(&client, &config, refresh);

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
    // Until one lease after the last renewal the item must stay the old holder's.
    while renew_start.elapsed() < lease - Duration::from_millis(100) {
        let item = raw_item(&client, &config).await.expect("item");
        assert_eq!(
            s(&item, "recordVersionNumber"),
            last_version,
            "stolen early at {:?}",
            renew_start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (stolen, got_at) = waiter.await.expect("join");
    let stolen = stolen.expect("new acquires");
    let after_start = got_at - renew_start;
    let after_end = got_at - renew_end;
    eprintln!(
        "dynamodb steal: lease {lease:?}, refresh {refresh:?}; taken over {after_start:?} after the last renewal \
         started, {after_end:?} after it returned"
    );
    assert!(
        after_start >= lease,
        "taken over after {after_start:?} < lease {lease:?}"
    );
    assert!(
        after_end <= lease + refresh + Duration::from_millis(1_000),
        "taken over late: {after_end:?}"
    );

    let item = raw_item(&client, &config).await.expect("item");
    assert_eq!(s(&item, "ownerName"), stolen.owner());
    assert_eq!(s(&item, "recordVersionNumber"), stolen.record_version());

    // Fencing: the old guard still believes (its clock is frozen), but the conditional write says no.
    assert!(held.is_held());
    let err = held
        .ensure_held()
        .await
        .expect_err("old lease must be refused");
    match &err {
        LockError::Lost {
            holder, version, ..
        } => {
            let holder = holder.as_deref().expect("holder");
            assert_eq!(holder.owner, stolen.owner());
            assert_eq!(holder.record_version, stolen.record_version());
            assert_eq!(version, &last_version);
        }
        other => panic!("expected Lost, got {other}"),
    }
    let err = held
        .release()
        .await
        .expect_err("old release must be refused");
    assert!(matches!(err, LockError::Lost { .. }), "{err}");
    let item = raw_item(&client, &config)
        .await
        .expect("new owner's item survives");
    assert_eq!(s(&item, "ownerName"), stolen.owner());
    assert_eq!(s(&item, "recordVersionNumber"), stolen.record_version());
    stolen.ensure_held().await.expect("new owner holds it");
    stolen.release().await.expect("release");
    assert!(raw_item(&client, &config).await.is_none());
}

/// The heartbeat keeps a slow holder's lock for many leases: nobody steals a live lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn heartbeating_holder_keeps_the_lock_for_many_leases() {
    let (client, config) = setup(900).await;
    let a = client_of(&client, &config, Duration::from_millis(30));
    let b = client_of(&client, &config, Duration::from_millis(30));
    let held = a.acquire(Duration::ZERO).await.expect("acquire");
    let first = held.record_version();
    let started = Instant::now();
    let err = b
        .acquire(Duration::from_millis(2_000))
        .await
        .expect_err("live lock");
    assert!(matches!(err, LockError::Timeout { .. }), "{err}");
    assert!(
        started.elapsed() >= Duration::from_millis(2_900),
        "{:?}",
        started.elapsed()
    );
    assert!(held.is_held());
    assert_ne!(
        held.record_version(),
        first,
        "heartbeat rotates recordVersionNumber"
    );
    held.ensure_held().await.expect("still held");
    held.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_has_exactly_the_lock_client_attributes() {
    let (client, config) = setup(1_500).await;
    let lock = client_of(&client, &config, Duration::from_millis(50));
    let held = lock.acquire(Duration::ZERO).await.expect("acquire");
    held.stop_heartbeat();

    let check = |item: &HashMap<String, AttributeValue>, version: &str| {
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["key", "leaseDuration", "ownerName", "recordVersionNumber"]
        );
        for (name, value) in item {
            assert!(
                matches!(value, AttributeValue::S(_)),
                "{name} is not a String: {value:?}"
            );
        }
        assert_eq!(s(item, "key"), "trips");
        assert_eq!(s(item, "ownerName"), lock.owner());
        assert_eq!(s(item, "leaseDuration"), "1500");
        assert_eq!(s(item, "recordVersionNumber"), version);
        let parsed = uuid::Uuid::parse_str(version).expect("recordVersionNumber is a UUID");
        assert_eq!(
            parsed.hyphenated().to_string(),
            version,
            "lower-case hyphenated like Java's UUID"
        );
    };
    let first = held.record_version();
    check(&raw_item(&client, &config).await.expect("item"), &first);
    held.ensure_held().await.expect("renew");
    let second = held.record_version();
    assert_ne!(first, second, "renewal rotates recordVersionNumber");
    check(&raw_item(&client, &config).await.expect("item"), &second);
    assert!(
        lock.owner().len() > 36,
        "hostname followed by a UUID: {}",
        lock.owner()
    );
    held.release().await.expect("release");
    assert!(
        raw_item(&client, &config).await.is_none(),
        "release deletes the item, as Hudi does"
    );
}

/// Items written by another lock client (Hudi's Java writers) are understood: a released one is taken at once
/// and replaced whole; a dead one with `data` is stolen after its own lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_of_other_lock_clients_are_honoured() {
    let (client, config) = setup(30_000).await;
    let lock = client_of(&client, &config, Duration::from_millis(50));
    let put = |extra: Vec<(&'static str, AttributeValue)>, lease: &'static str| {
        let mut req = client
            .put_item()
            .table_name(&config.table)
            .item("key", AttributeValue::S(config.partition_key.clone()))
            .item("ownerName", AttributeValue::S("spark-driver-1f0e".into()))
            .item("leaseDuration", AttributeValue::S(lease.into()))
            .item(
                "recordVersionNumber",
                AttributeValue::S(uuid::Uuid::new_v4().to_string()),
            );
        for (k, v) in extra {
            req = req.item(k, v);
        }
        req.send()
    };

    put(vec![("isReleased", AttributeValue::S("1".into()))], "60000")
        .await
        .expect("put");
    let started = Instant::now();
    let held = lock
        .acquire(Duration::ZERO)
        .await
        .expect("released lock is free");
    assert!(started.elapsed() < Duration::from_secs(1));
    let item = raw_item(&client, &config).await.expect("item");
    assert!(
        !item.contains_key("isReleased"),
        "the put replaces the whole item"
    );
    assert_eq!(s(&item, "ownerName"), lock.owner());
    held.release().await.expect("release");

    put(
        vec![(
            "data",
            AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(b"x".to_vec())),
        )],
        "800",
    )
    .await
    .expect("put");
    let started = Instant::now();
    let held = lock
        .acquire(Duration::from_secs(5))
        .await
        .expect("dead lock is stolen");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800),
        "stolen after {took:?}, before the item's own 800 ms lease"
    );
    let item = raw_item(&client, &config).await.expect("item");
    assert!(!item.contains_key("data"), "Hudi sends no data");
    assert_eq!(s(&item, "leaseDuration"), "30000");
    held.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_a_non_owner_is_refused() {
    let (client, config) = setup(5_000).await;
    let a = client_of(&client, &config, Duration::from_millis(50));
    let b = client_of(&client, &config, Duration::from_millis(50));
    let held = a.acquire(Duration::ZERO).await.expect("acquire");
    held.stop_heartbeat();
    let record = held.record();

    let err = b.release_record(&record).await.expect_err("not b's record");
    assert!(matches!(err, LockError::NotOwner { .. }), "{err}");
    assert!(err.to_string().contains(a.owner()), "{err}");
    // Right version, wrong owner: DynamoDB's condition (#on = :on) refuses the delete.
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
    // Right owner, wrong version: refused too.
    let stale = LockRecord {
        record_version: uuid::Uuid::new_v4().to_string(),
        ..record.clone()
    };
    assert!(a.release_record(&stale).await.is_err());

    let item = raw_item(&client, &config).await.expect("item intact");
    assert_eq!(s(&item, "ownerName"), a.owner());
    assert_eq!(s(&item, "recordVersionNumber"), record.record_version);
    held.release().await.expect("the owner may");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_times_out_naming_the_holder() {
    let (client, config) = setup(1_500).await;
    let a = client_of(&client, &config, Duration::from_millis(50));
    let b = client_of(&client, &config, Duration::from_millis(50));
    let held = a.acquire(Duration::ZERO).await.expect("acquire");
    let started = Instant::now();
    let err = b
        .acquire(Duration::from_millis(500))
        .await
        .expect_err("held");
    let waited = started.elapsed();
    eprintln!(
        "dynamodb timeout: wait 500 ms + holder lease 1500 ms -> gave up after {waited:?}: {err}"
    );
    // The lock client waits `wait` plus the holder's lease once.
    assert!(waited >= Duration::from_millis(2_000), "{waited:?}");
    match &err {
        LockError::Timeout { holder, owner, .. } => {
            let holder = holder.as_deref().expect("holder");
            assert_eq!(holder.owner, a.owner());
            assert_eq!(holder.lease_duration, Duration::from_millis(1_500));
            assert_eq!(owner, b.owner());
        }
        other => panic!("expected Timeout, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(a.owner()) && msg.contains(&config.table) && msg.contains("trips"),
        "{msg}"
    );
    held.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_table_and_lock_from_hudi_properties() {
    let client = Client::new(&moto::sdk_config().await);
    let table = moto::unique_name("hudi-locks");
    let props: BTreeMap<String, String> = [
        (TABLE_KEY, table.as_str()),
        (PARTITION_KEY_KEY, "explicit-key"),
        (TABLE_NAME_KEY, "ignored"),
        (ENDPOINT_URL_KEY, moto::moto().endpoint.as_str()),
        (WAIT_TIME_MS_KEY, "2000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let lock = DynamoDbLock::from_props(&props).await.expect("lock");
    assert_eq!(
        lock.config().lease,
        LeaseOptions::hudi(Duration::from_millis(2_000))
    );
    assert!(lock.create_table_if_missing().await.expect("create"));
    assert!(!lock.create_table_if_missing().await.expect("exists"));
    let desc = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .expect("describe");
    let t = desc.table().expect("table");
    let keys: Vec<_> = t
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_string(), k.key_type().clone()))
        .collect();
    assert_eq!(keys, [("key".to_string(), KeyType::Hash)]);
    let attrs: Vec<_> = t
        .attribute_definitions()
        .iter()
        .map(|a| (a.attribute_name().to_string(), a.attribute_type().clone()))
        .collect();
    assert_eq!(attrs, [("key".to_string(), ScalarAttributeType::S)]);

    let held = lock.acquire(lock.config().wait).await.expect("acquire");
    let item = client
        .get_item()
        .table_name(&table)
        .key("key", AttributeValue::S("explicit-key".into()))
        .send()
        .await
        .expect("get")
        .item()
        .cloned()
        .expect("item");
    assert_eq!(s(&item, "leaseDuration"), "2000");
    assert_eq!(
        lock.current().await.expect("current").map(|r| r.owner),
        Some(lock.owner().to_string())
    );
    held.release().await.expect("release");
    assert_eq!(lock.current().await.expect("current"), None);
}
