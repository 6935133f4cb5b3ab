//! The exactly-once path on the AWS backends a deployment uses: the table and the dead letters in S3 and the
//! DynamoDB lock (both served by moto on 127.0.0.1, through the real SDK clients), read back with hudi-rs.
//!
//! - a stream with redeliveries and rebalance overlaps written by two concurrent sinks, on a partitioned and a
//!   non-partitioned table;
//! - a coordinator process killed (SIGKILL) while it holds the DynamoDB lock in the middle of a commit: the
//!   next writer takes the lock over after the lease, rolls the dead instant back and the table stays exact.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use hudi_sink::bootstrap::build_sink;
use hudi_sink::lock::dynamodb::{ENDPOINT_URL_KEY, TABLE_KEY};
use hudi_sink::lock::{create_lock_table_if_missing, DynamoDbLockConfig, WAIT_TIME_MS_KEY};
use hudi_sink::sink::KafkaSink;
use hudi_sink::source::event::KafkaBatch;
use serde_json::Value;

use crate::common::moto;
use crate::common::python::read_rows;
use crate::exactly_once::process;
use crate::model::{esm_payload, local_props, non_partitioned, stream, Model, Msg, SCHEMA};

/// A table in a fresh moto bucket with its own DynamoDB lock table.
struct AwsTable {
    bucket: String,
    base: String,
    dead_prefix: String,
    lock_table: String,
    props: BTreeMap<String, String>,
}

async fn aws_table(partitioned: bool, lease_ms: u64) -> AwsTable {
    let endpoint = moto::moto().endpoint.clone();
    // The storage finds moto the way users point it at an emulator: through the environment.
    std::env::set_var("AWS_ENDPOINT_URL_S3", &endpoint);
    let bucket = moto::new_bucket("eo").await;
    moto::put_object(&bucket, "schemas/trips.avsc", SCHEMA.as_bytes()).await;
    let base = format!("s3://{bucket}/tables/trips");
    let dead_prefix = "dead-letters/trips".to_string();
    let mut props = local_props(
        Path::new(&base),
        Path::new(&format!("s3://{bucket}/schemas/trips.avsc")),
        Path::new(&format!("s3://{bucket}/{dead_prefix}")),
    );
    if !partitioned {
        non_partitioned(&mut props);
    }
    let lock_table = moto::unique_name("hudi-locks");
    props.insert(TABLE_KEY.into(), lock_table.clone());
    props.insert(ENDPOINT_URL_KEY.into(), endpoint);
    props.insert(WAIT_TIME_MS_KEY.into(), lease_ms.to_string());
    props.insert("hudi.sink.heartbeat.interval.ms".into(), "200".into());
    props.insert("hudi.sink.heartbeat.tolerable.misses".into(), "2".into());
    // Windows of one second: with a 400 ms heartbeat tolerance a member's lease is the window's end plus one
    // interval, room for a write on moto.
    props.insert("hudi.sink.commit.interval.ms".into(), "1000".into());
    let lock_config = DynamoDbLockConfig::from_props(&props).expect("lock config");
    let ddb = aws_sdk_dynamodb::Client::new(&moto::sdk_config().await);
    assert!(create_lock_table_if_missing(&ddb, &lock_config)
        .await
        .expect("create lock table"));
    AwsTable {
        bucket,
        base,
        dead_prefix,
        lock_table,
        props,
    }
}

async fn dead_letters(t: &AwsTable) -> Vec<Value> {
    let mut out = Vec::new();
    for key in moto::object_sizes(&t.bucket, &t.dead_prefix).await.keys() {
        let body = moto::object_bytes(&t.bucket, key).await;
        for line in String::from_utf8_lossy(&body).lines() {
            if !line.trim().is_empty() {
                out.push(serde_json::from_str(line).expect("dead letter JSON line"));
            }
        }
    }
    out
}

async fn lock_item(t: &AwsTable) -> Option<std::collections::HashMap<String, AttributeValue>> {
    aws_sdk_dynamodb::Client::new(&moto::sdk_config().await)
        .get_item()
        .table_name(&t.lock_table)
        .key("key", AttributeValue::S("trips".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("get lock item")
        .item()
        .cloned()
}

/// Timeline file names of the table (relative to `.hoodie/`, top level only).
async fn timeline(t: &AwsTable) -> Vec<String> {
    let prefix = "tables/trips/.hoodie/";
    moto::object_sizes(&t.bucket, prefix)
        .await
        .keys()
        .filter_map(|k| k.strip_prefix(prefix))
        .filter(|k| !k.contains('/'))
        .map(str::to_string)
        .collect()
}

/// No pending instant, no marker, and no base file of an instant that did not complete.
async fn assert_no_leftovers(t: &AwsTable, what: &str) {
    let names = timeline(t).await;
    let completed: BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".commit"))
        .collect();
    for n in &names {
        if n.ends_with(".inflight") || n.ends_with(".requested") {
            let instant = n.split('.').next().unwrap_or_default();
            assert!(
                completed.contains(instant),
                "{what}: pending instant left: {n}"
            );
        }
    }
    for key in moto::object_sizes(&t.bucket, "tables/trips/").await.keys() {
        if let Some(file) = key.strip_suffix(".parquet") {
            let instant = file.rsplit('_').next().unwrap_or_default();
            assert!(
                completed.contains(instant),
                "{what}: file of a failed instant left: {key}"
            );
        }
    }
    let markers = moto::object_sizes(&t.bucket, "tables/trips/.hoodie/.temp/").await;
    assert!(markers.is_empty(), "{what}: markers left: {markers:?}");
}

/// The `extraMetadata` of the latest completed commit.
async fn last_checkpoint(t: &AwsTable) -> Value {
    let last = timeline(t)
        .await
        .into_iter()
        .filter(|n| n.ends_with(".commit"))
        .max()
        .expect("a commit");
    let body = moto::object_bytes(&t.bucket, &format!("tables/trips/.hoodie/{last}")).await;
    let commit: Value = serde_json::from_slice(&body).expect("commit JSON");
    commit["extraMetadata"].clone()
}

fn checkpoint_string(model: &Model) -> String {
    let parts: Vec<String> = model
        .next_offset
        .iter()
        .map(|((_, p), n)| format!("{p}:{n}"))
        .collect();
    format!("trips,{}", parts.join(","))
}

async fn stream_with_two_writers(partitioned: bool) {
    let what = if partitioned {
        "partitioned"
    } else {
        "non-partitioned"
    };
    let t = aws_table(partitioned, 10_000).await;
    let msgs = stream("trips", 4, 60, 16);
    let mut by_partition: BTreeMap<i32, Vec<Msg>> = BTreeMap::new();
    for m in &msgs {
        by_partition.entry(m.partition).or_default().push(m.clone());
    }
    // Create the table before the writers start, so they do not race on creation.
    drop(build_sink(&t.props, "init").await.expect("sink"));
    let sinks = [
        Arc::new(build_sink(&t.props, "w0").await.expect("sink")),
        Arc::new(build_sink(&t.props, "w1").await.expect("sink")),
    ];
    let mut model = Model::default();
    let mut dead_counted = 0;
    for round in 0..4usize {
        // Writer 0 owns Kafka partitions 0 and 1, writer 1 owns 2 and 3; batches of 15 per partition, the
        // third round re-delivering the tail of the second (as after a failed invocation).
        let batch_of = |parts: &[i32]| -> Vec<Msg> {
            let mut out = Vec::new();
            for p in parts {
                let all = &by_partition[p];
                let start = if round == 2 {
                    15 * round - 5
                } else {
                    15 * round
                };
                out.extend_from_slice(
                    &all[start.min(all.len())..(15 * (round + 1)).min(all.len())],
                );
            }
            out
        };
        let b0 = batch_of(&[0, 1]);
        let b1 = batch_of(&[2, 3]);
        // In odd rounds a rebalance hands writer 0's batch to writer 1 as well, at the same time.
        let mut jobs = vec![(0usize, b0.clone()), (1usize, b1.clone())];
        if round % 2 == 1 {
            jobs.push((1, b0.clone()));
        }
        let mut handles = Vec::new();
        for (w, batch) in jobs {
            let sink = sinks[w].clone();
            handles.push(tokio::spawn(async move { process(&sink, &batch).await }));
        }
        for h in handles {
            dead_counted += h.await.expect("join").dead_lettered;
        }
        // Every batch delivered once more after it committed: all of it is skipped.
        for (w, batch) in [(0usize, &b0), (1usize, &b1)] {
            let again = process(&sinks[w], batch).await;
            assert_eq!(again.skipped, again.records_in, "{what}: {again:?}");
            assert_eq!(again.instant, None);
        }
        model.apply(&b0);
        model.apply(&b1);
        let read = read_rows(&t.base, "hudi", &["snapshot"]);
        model.assert_table(&read, &format!("{what}, after round {round}"));
        if !partitioned {
            assert!(
                read.iter()
                    .all(|r| r["_hoodie_partition_path"].as_str() == Some("")),
                "{what}: rows outside the table root"
            );
        }
    }
    let letters = dead_letters(&t).await;
    assert!(dead_counted > 0, "the stream has bad records");
    // Two writers given the same batch at once both store its letters before one of them commits (letters
    // are written before the commit, so none can be lost): the store may hold a record more than once, and
    // readers deduplicate on (topic, partition, offset, stage). After deduplication the letters are exactly
    // the stream's bad records, each counted once.
    let unique: BTreeSet<(String, i64, i64, String)> = letters
        .iter()
        .map(|l| {
            (
                l["topic"].as_str().unwrap_or_default().to_string(),
                l["partition"].as_i64().unwrap_or(-1),
                l["offset"].as_i64().unwrap_or(-1),
                l["stage"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        unique.len() as u64,
        dead_counted,
        "{what}: distinct dead letters written vs counted"
    );
    let expected: BTreeSet<(String, i64, i64)> = model
        .dead
        .iter()
        .map(|(t, p, o)| (t.clone(), i64::from(*p), *o))
        .collect();
    let got: BTreeSet<(String, i64, i64)> = unique
        .iter()
        .map(|(t, p, o, _)| (t.clone(), *p, *o))
        .collect();
    assert_eq!(got, expected, "{what}: dead-lettered records");
    for l in &letters {
        assert!(l["reason"].as_str().is_some_and(|r| !r.is_empty()), "{l}");
    }
    let extra = last_checkpoint(&t).await;
    assert_eq!(
        extra["deltastreamer.checkpoint.key"].as_str(),
        Some(checkpoint_string(&model).as_str()),
        "{what}"
    );
    assert_no_leftovers(&t, what).await;
    let mut times = BTreeSet::new();
    for n in timeline(&t).await {
        if let Some(instant) = n.strip_suffix(".commit") {
            assert!(
                times.insert(instant.to_string()),
                "duplicate instant {instant}"
            );
        }
    }
    // Nobody holds the lock once the writers are idle.
    let item = lock_item(&t).await;
    assert!(
        item.is_none()
            || item
                .as_ref()
                .and_then(|i| i.get("isReleased"))
                .is_some_and(|v| matches!(v, AttributeValue::Bool(true))),
        "{what}: lock still held: {item:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stream_on_s3_with_the_dynamodb_lock_is_exact_partitioned() {
    stream_with_two_writers(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stream_on_s3_with_the_dynamodb_lock_is_exact_non_partitioned() {
    stream_with_two_writers(false).await;
}

const CHILD_PROPS: &str = "HUDI_SINK_TEST_DYING_PROPS";
const CHILD_BATCH: &str = "HUDI_SINK_TEST_DYING_BATCH";

/// Not a test on its own: the process that `a_coordinator_killed_while_holding_the_dynamodb_lock_…` starts and
/// kills. It writes a batch whose commit file write never returns, says so on stdout, and waits to be killed —
/// holding the DynamoDB lock, with its heartbeat still renewing it, as a coordinator in the middle of a commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of a_coordinator_killed_while_holding_the_dynamodb_lock_is_taken_over_and_rolled_back"]
async fn dying_coordinator_child() {
    use hudi_sink::bootstrap::{build_lock, load_schema};
    use hudi_sink::clock::SystemClock;
    use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
    use hudi_sink::dead_letter::StorageDeadLetterSink;
    use hudi_sink::sink::SinkConfig;
    use hudi_sink::storage::faulty::{FaultRule, Operation};
    use hudi_sink::storage::{open_storage, FaultyStorage};
    use hudi_sink::transport::InProcessClient;
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;

    let (Ok(props_json), Ok(batch_file)) = (std::env::var(CHILD_PROPS), std::env::var(CHILD_BATCH))
    else {
        panic!("run only by its parent test");
    };
    let props: BTreeMap<String, String> = serde_json::from_str(&props_json).expect("props");
    let write = WriteConfig::from_properties(props.clone()).expect("config");
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let inner = open_storage(&write.base_path).await.expect("storage");
    let faulty = Arc::new(FaultyStorage::new(inner));
    faulty.add_rule(
        FaultRule::delay(Operation::PutIfAbsent, Duration::from_secs(3600)).path_suffix(".commit"),
    );
    let storage: Arc<dyn hudi_sink::storage::Storage> = faulty.clone();
    let clock = Arc::new(SystemClock);
    let lock = build_lock(&props, storage.clone(), &write.table_name)
        .await
        .expect("lock");
    let coordinator = Coordinator::new(
        storage.clone(),
        lock,
        clock.clone(),
        CoordinatorConfig {
            lock_wait: Duration::from_secs(30),
            heartbeat_tolerance: sink_config.heartbeat_tolerance(),
            ..CoordinatorConfig::default()
        },
    );
    let schema = load_schema(&write).await.expect("schema");
    let writer = TableWriter::create_or_open(storage.clone(), clock.clone(), write, schema)
        .await
        .expect("writer");
    let dead = open_storage(
        sink_config
            .dead_letter_path
            .as_deref()
            .expect("dead letter path"),
    )
    .await
    .expect("dead letter storage");
    let sink = KafkaSink::new(
        writer,
        Arc::new(InProcessClient::new(coordinator)),
        Arc::new(StorageDeadLetterSink::new(dead)),
        clock,
        sink_config,
        "doomed",
    );
    let batch = KafkaBatch::from_slice(&std::fs::read(batch_file).expect("batch")).expect("event");
    let work = tokio::spawn(async move { sink.process(batch).await });
    loop {
        let stalled = faulty
            .call_paths()
            .into_iter()
            .find(|(op, path)| *op == Operation::PutIfAbsent && path.ends_with(".commit"));
        if let Some((_, path)) = stalled {
            println!("HOLDING {path}");
            std::io::stdout().flush().expect("flush");
            break;
        }
        if work.is_finished() {
            panic!("the doomed write ended before its commit: {:?}", work.await);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = work.await;
    panic!("the commit file write was meant to hang until this process is killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_killed_while_holding_the_dynamodb_lock_is_taken_over_and_rolled_back() {
    let lease_ms = 2_000;
    let t = aws_table(true, lease_ms).await;
    let msgs = stream("trips", 2, 90, 20);
    let batches: Vec<Vec<Msg>> = msgs.chunks(60).map(|c| c.to_vec()).collect();
    let sink = build_sink(&t.props, "survivor").await.expect("sink");
    let mut model = Model::default();
    process(&sink, &batches[0]).await;
    model.apply(&batches[0]);

    // The doomed coordinator: same table, same lock, batch 1, stalls inside its commit.
    let dir = tempfile::tempdir().expect("tempdir");
    let batch_file = dir.path().join("batch1.json");
    std::fs::write(&batch_file, esm_payload(&batches[1])).expect("batch file");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "exactly_once_aws::dying_coordinator_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_PROPS, serde_json::to_string(&t.props).expect("props"))
        .env(CHILD_BATCH, &batch_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the doomed coordinator");
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().expect("stdout");
    let mut child = KillOnDrop(child);
    let holding = tokio::task::spawn_blocking(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("child stdout");
            // libtest may print its "test … ..." prefix on the same line.
            if let Some(at) = line.find("HOLDING ") {
                return Some(line[at + "HOLDING ".len()..].trim().to_string());
            }
        }
        None
    })
    .await
    .expect("join")
    .expect("the child reached its commit while holding the lock");
    let dead_instant = holding
        .rsplit('/')
        .next()
        .and_then(|f| f.strip_suffix(".commit"))
        .expect("commit file name")
        .to_string();
    let item = lock_item(&t).await.expect("the child holds the lock");
    let owner = match item.get("ownerName") {
        Some(AttributeValue::S(s)) => s.clone(),
        other => panic!("ownerName: {other:?}"),
    };
    // The coordinator dies: no release, no more heartbeats, no clean-up.
    child.0.kill().expect("SIGKILL");
    child.0.wait().expect("reap");
    let names = timeline(&t).await;
    assert!(
        names.contains(&format!("{dead_instant}.inflight")),
        "the dead instant is inflight: {names:?}"
    );
    assert!(!names.contains(&format!("{dead_instant}.commit")));
    assert_eq!(
        lock_item(&t)
            .await
            .and_then(|i| i.get("ownerName").cloned()),
        Some(AttributeValue::S(owner.clone())),
        "a killed holder leaves its lock item behind"
    );

    // The ESM redelivers batch 1 to another writer: it takes the lock over after the lease, rolls the
    // dead instant back and commits.
    let redelivered = process(&sink, &batches[1]).await;
    assert!(redelivered.instant.is_some(), "{redelivered:?}");
    assert_ne!(redelivered.instant.as_deref(), Some(dead_instant.as_str()));
    model.apply(&batches[1]);
    process(&sink, &batches[2]).await;
    model.apply(&batches[2]);

    let read = read_rows(&t.base, "hudi", &["snapshot"]);
    model.assert_table(&read, "after the coordinator died");
    let names = timeline(&t).await;
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with(&dead_instant) || n.contains("rollback")),
        "nothing of the dead instant {dead_instant} is left in the timeline: {names:?}"
    );
    assert_no_leftovers(&t, "after the coordinator died").await;
    let extra = last_checkpoint(&t).await;
    assert_eq!(
        extra["deltastreamer.checkpoint.key"].as_str(),
        Some(checkpoint_string(&model).as_str())
    );
    let after = lock_item(&t).await;
    assert!(
        after.as_ref().and_then(|i| i.get("ownerName")) != Some(&AttributeValue::S(owner)),
        "the dead owner no longer holds the lock: {after:?}"
    );
}
