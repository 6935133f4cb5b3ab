//! Requests per begin + commit (issue 6): S3 requests are counted with the `FaultyStorage` call log around an
//! in-process coordinator, lock sessions with a counting wrapper. At small batch sizes these requests, not
//! compute, dominate the bill, so the common case (a warm writer, one more batch on a table that has commits)
//! is pinned here as a count. Counts only: no timing is asserted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hudi_sink::clock::SystemClock;
use hudi_sink::config::write_config::WriteConfig;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::{LeaseOptions, Lock, LockError, LockGuard, LockRecord, MemoryLock};
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::sink::{KafkaSink, SinkConfig};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultyStorage, Operation};
use hudi_sink::storage::memory::MemoryStorage;
use hudi_sink::storage::Storage;
use hudi_sink::transport::{CoordinatorClient, InProcessClient};
use hudi_sink::write::{TableWriter, WriteError};

use crate::model::{esm_payload, local_props, stream, SCHEMA};

/// Counts lock sessions (acquisitions) of the coordinator.
#[derive(Debug)]
struct CountingLock {
    inner: MemoryLock,
    acquired: Mutex<u64>,
}

#[async_trait]
impl Lock for CountingLock {
    async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError> {
        *self.acquired.lock().expect("counter") += 1;
        self.inner.acquire(wait).await
    }
    async fn current(&self) -> Result<Option<LockRecord>, LockError> {
        self.inner.current().await
    }
    fn owner(&self) -> &str {
        self.inner.owner()
    }
    fn describe(&self) -> &str {
        self.inner.describe()
    }
}

/// One coordinator request: its kind, the storage calls it made and the lock sessions it opened.
type RequestLog = (&'static str, Vec<(Operation, String)>, u64);

/// Storage calls and lock sessions of each coordinator request, in order.
#[derive(Debug)]
struct Counting {
    inner: InProcessClient,
    storage: Arc<FaultyStorage>,
    lock: Arc<CountingLock>,
    log: Mutex<Vec<RequestLog>>,
}

#[async_trait]
impl CoordinatorClient for Counting {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let op = match &request {
            CoordinatorRequest::Begin { .. } => "begin",
            CoordinatorRequest::Commit(_) => "commit",
            CoordinatorRequest::Abort { .. } => "abort",
            CoordinatorRequest::Services => "services",
        };
        let calls_before = self.storage.calls().len();
        let locks_before = *self.lock.acquired.lock().expect("counter");
        let answer = self.inner.call(request).await;
        let calls = self.storage.call_paths()[calls_before..].to_vec();
        let locks = *self.lock.acquired.lock().expect("counter") - locks_before;
        self.log.lock().expect("log").push((op, calls, locks));
        answer
    }
}

/// DynamoDB requests of one coordinator lock session in the common case (the lock item is free): acquire
/// = read + conditional create, release = conditional delete; a commit also proves its lease once (fencing,
/// a conditional update) before it writes `<t>.commit`.
const DYNAMODB_PER_SESSION: u64 = 2 + 1;
const DYNAMODB_FENCES_PER_COMMIT: u64 = 1;

#[tokio::test(flavor = "current_thread")]
async fn begin_and_commit_of_a_warm_writer_take_a_known_number_of_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("trips.avsc");
    std::fs::write(&schema_file, SCHEMA).expect("schema");
    let props: BTreeMap<String, String> = local_props(
        &dir.path().join("trips"),
        &schema_file,
        &dir.path().join("dead"),
    );
    let storage = Arc::new(FaultyStorage::new(Arc::new(MemoryStorage::new(
        "memory://trips",
    ))));
    let dyn_storage: Arc<dyn Storage> = storage.clone();
    let clock = Arc::new(SystemClock);
    let lock = Arc::new(CountingLock {
        inner: MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_secs(20))),
        acquired: Mutex::new(0),
    });
    let coordinator = Coordinator::new(
        dyn_storage.clone(),
        lock.clone(),
        clock.clone(),
        CoordinatorConfig::default(),
    );
    let config = WriteConfig::from_properties(props.clone()).expect("config");
    let writer = TableWriter::create_or_open(
        dyn_storage.clone(),
        clock.clone(),
        config,
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("writer");
    let client = Arc::new(Counting {
        inner: InProcessClient::new(coordinator),
        storage: storage.clone(),
        lock: lock.clone(),
        log: Mutex::new(Vec::new()),
    });
    let sink = KafkaSink::new(
        writer,
        client.clone(),
        Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
            "memory://dead",
        )))),
        clock,
        SinkConfig::from_properties(&props).expect("sink config"),
        "counting-writer",
    );
    // Insert-only batches with one key each per Kafka partition (one partition path: one base file), so that the
    // commit carries one file as a small batch of a warm writer does.
    let msgs = stream("trips", 1, 40, 1_000);
    for chunk in msgs.chunks(20) {
        let batch = KafkaBatch::from_slice(&esm_payload(chunk)).expect("event");
        let report = sink.process(batch).await.expect("process");
        assert!(report.instant.is_some(), "{report:?}");
    }
    let log = client.log.lock().expect("log").clone();
    let ops: Vec<&str> = log.iter().map(|(op, _, _)| *op).collect();
    assert_eq!(ops, ["begin", "commit", "begin", "commit"], "{log:#?}");
    // The second batch is the common case: the table has a commit, nothing is pending or left over.
    let (_, begin, begin_locks) = &log[2];
    let (_, commit, commit_locks) = &log[3];
    let files = commit
        .iter()
        .filter(|(op, p)| *op == Operation::Head && p.ends_with(".parquet"))
        .count() as u64;
    let s3 = (begin.len() + commit.len()) as u64;
    let dynamodb = (begin_locks + commit_locks) * DYNAMODB_PER_SESSION + DYNAMODB_FENCES_PER_COMMIT;
    eprintln!(
        "begin: {} S3 {begin:?}\ncommit ({files} files): {} S3 {commit:?}\nS3 {s3} + DynamoDB {dynamodb}",
        begin.len(),
        commit.len()
    );
    assert_eq!((*begin_locks, *commit_locks), (1, 1));
    assert_eq!(
        begin.len(),
        EXPECTED_BEGIN_S3,
        "S3 requests of a begin: {begin:#?}"
    );
    assert_eq!(
        commit.len() as u64,
        EXPECTED_COMMIT_S3_FIXED + EXPECTED_COMMIT_S3_PER_FILE * files,
        "S3 requests of a commit of {files} files: {commit:#?}"
    );
}

/// A begin today: `hoodie.properties`, the `.hoodie/` listing, the `.temp/` and `.heartbeat/` listings (leftovers
/// of completed instants), `.commit.requested`, `.inflight`, the first heartbeat, the checkpoint (latest commit).
/// A version that served all from one listing and cached properties and checkpoint (4) broke simulation
/// invariants ("no file of a failed instant left") and was withdrawn; see README "Performance".
const EXPECTED_BEGIN_S3: usize = 8;
/// A commit: `hoodie.properties`, two `.hoodie/` listings (before and after rolling back expired writes), the
/// committing instant's heartbeat, the checkpoint, `<t>.commit`, the marker listing, the heartbeat delete …
const EXPECTED_COMMIT_S3_FIXED: u64 = 8;
/// … and per base file: its size check (HEAD) and its marker's delete.
const EXPECTED_COMMIT_S3_PER_FILE: u64 = 2;
