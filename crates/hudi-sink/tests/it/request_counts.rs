//! Requests per begin + commit (issue 6): S3 requests are counted with the `FaultyStorage` call log around an
//! in-process coordinator, DynamoDB requests by an interceptor on the SDK client of the real DynamoDB lock
//! (on moto). At small batch sizes these requests, not
//! compute, dominate the bill, so the common case (a warm writer, one more batch on a table that has commits)
//! is pinned here as a count, and so is a batch whose commit cleans (and archives) inline on an aged table, which
//! must cost the same on a table three times older. Counts only: no timing is asserted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use hudi_sink::clock::SystemClock;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::dynamodb::TABLE_KEY;
use hudi_sink::lock::{create_lock_table_if_missing, DynamoDbLock, DynamoDbLockConfig};
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::sink::{KafkaSink, SinkConfig};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultyStorage, Operation};
use hudi_sink::storage::memory::MemoryStorage;
use hudi_sink::storage::Storage;
use hudi_sink::transport::{CoordinatorClient, InProcessClient};
use hudi_sink::write::WriteConfig;
use hudi_sink::write::{TableWriter, WriteError};

use crate::common::moto;
use crate::model::{esm_payload, local_props, stream, Msg, Trip, SCHEMA};

/// Every DynamoDB request the lock's SDK client sends (each attempt), by operation (`X-Amz-Target`).
#[derive(Debug, Default, Clone)]
struct DynamoDbRequests(Arc<Mutex<Vec<String>>>);

impl Intercept for DynamoDbRequests {
    fn name(&self) -> &'static str {
        "DynamoDbRequests"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("?")
            .rsplit('.')
            .next()
            .unwrap_or("?")
            .to_string();
        self.0.lock().expect("requests").push(target);
        Ok(())
    }
}

/// One coordinator request: its kind, the storage calls it made and the DynamoDB requests of its lock.
type RequestLog = (&'static str, Vec<(Operation, String)>, Vec<String>);

/// Storage calls and lock requests of each coordinator request, in order.
#[derive(Debug)]
struct Counting {
    inner: InProcessClient,
    storage: Arc<FaultyStorage>,
    dynamodb: DynamoDbRequests,
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
            CoordinatorRequest::Join(_) => "join",
            CoordinatorRequest::Submit(_) => "submit",
            CoordinatorRequest::Close { .. } => "close",
        };
        let calls_before = self.storage.calls().len();
        let dynamodb_before = self.dynamodb.0.lock().expect("requests").len();
        let answer = self.inner.call(request).await;
        let calls = self.storage.call_paths()[calls_before..].to_vec();
        let dynamodb = self.dynamodb.0.lock().expect("requests")[dynamodb_before..].to_vec();
        self.log.lock().expect("log").push((op, calls, dynamodb));
        answer
    }
}

/// A sink on memory storage whose coordinator (with the default services: clean and archive inline) uses the
/// real DynamoDB lock on moto, every request counted.
struct Counted {
    sink: KafkaSink,
    client: Arc<Counting>,
    storage: Arc<FaultyStorage>,
    _dir: tempfile::TempDir,
}

async fn counted_sink() -> Counted {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("trips.avsc");
    std::fs::write(&schema_file, SCHEMA).expect("schema");
    let mut props: BTreeMap<String, String> = local_props(
        &dir.path().join("trips"),
        &schema_file,
        &dir.path().join("dead"),
    );
    // The per-batch protocol (begin, commit); the interval commit's requests are counted below.
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    let storage = Arc::new(FaultyStorage::new(Arc::new(MemoryStorage::new(
        "memory://trips",
    ))));
    let dyn_storage: Arc<dyn Storage> = storage.clone();
    let clock = Arc::new(SystemClock);
    // The DynamoDB lock on moto, its SDK client counting every request it sends.
    let dynamodb = DynamoDbRequests::default();
    let sdk = moto::sdk_config().await;
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(dynamodb.clone())
            .build(),
    );
    let lock_props: BTreeMap<String, String> = [
        (TABLE_KEY.to_string(), moto::unique_name("counted-locks")),
        ("hoodie.table.name".to_string(), "trips".to_string()),
    ]
    .into_iter()
    .collect();
    let lock_config = DynamoDbLockConfig::from_props(&lock_props).expect("lock config");
    create_lock_table_if_missing(&ddb, &lock_config)
        .await
        .expect("lock table");
    let lock = Arc::new(DynamoDbLock::new(ddb, lock_config).expect("lock"));
    let coordinator = Coordinator::new(
        dyn_storage.clone(),
        lock,
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
        dynamodb: dynamodb.clone(),
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
    Counted {
        sink,
        client,
        storage,
        _dir: dir,
    }
}

/// The writer's own requests in a batch (everything that is not the coordinator's), metadata only:
/// listings, and reads of `.hoodie/` files other than markers. They do not depend on the data; the data
/// files' requests do.
fn writer_metadata(
    batch: &[(Operation, String)],
    coordinator: &[&(Operation, String)],
) -> Vec<(Operation, String)> {
    let mut rest = batch.to_vec();
    for call in coordinator {
        if let Some(i) = rest.iter().position(|c| c == *call) {
            rest.remove(i);
        }
    }
    rest.into_iter()
        .filter(|(op, p)| {
            *op == Operation::List
                || (p.starts_with(".hoodie/") && !p.starts_with(".hoodie/.temp/"))
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn begin_and_commit_of_a_warm_writer_take_a_known_number_of_requests() {
    let Counted {
        sink,
        client,
        storage,
        _dir,
    } = counted_sink().await;
    // Insert-only batches with one key each per Kafka partition (one partition path: one base file), so that the
    // commit carries one file as a small batch of a warm writer does.
    let msgs = stream("trips", 1, 40, 1_000);
    let mut batch_calls = Vec::new();
    for chunk in msgs.chunks(20) {
        let batch = KafkaBatch::from_slice(&esm_payload(chunk)).expect("event");
        let before = storage.call_paths().len();
        let report = sink.process(batch).await.expect("process");
        assert!(report.instant.is_some(), "{report:?}");
        batch_calls.push(storage.call_paths()[before..].to_vec());
    }
    let log = client.log.lock().expect("log").clone();
    let ops: Vec<&str> = log.iter().map(|(op, _, _)| *op).collect();
    assert_eq!(ops, ["begin", "commit", "begin", "commit"], "{log:#?}");
    // The second batch is the common case: the table has a commit, nothing is pending or left over.
    let (_, begin, begin_dynamodb) = &log[2];
    let (_, commit, commit_dynamodb) = &log[3];
    let files = commit
        .iter()
        .filter(|(op, p)| *op == Operation::Head && p.ends_with(".parquet"))
        .count() as u64;
    let s3 = (begin.len() + commit.len()) as u64;
    let dynamodb_total = (begin_dynamodb.len() + commit_dynamodb.len()) as u64;
    eprintln!(
        "begin: {} S3 {begin:?}, DynamoDB {begin_dynamodb:?}\ncommit ({files} files): {} S3 {commit:?}, DynamoDB {commit_dynamodb:?}\nS3 {s3} + DynamoDB {dynamodb_total} = {}",
        begin.len(),
        commit.len(),
        s3 + dynamodb_total
    );
    eprintln!(
        "one-file batch: S3 {} + DynamoDB {dynamodb_total} = {}; per extra file: S3 {EXPECTED_COMMIT_S3_PER_FILE}",
        begin.len() as u64 + EXPECTED_COMMIT_S3_FIXED + EXPECTED_COMMIT_S3_PER_FILE,
        begin.len() as u64
            + EXPECTED_COMMIT_S3_FIXED
            + EXPECTED_COMMIT_S3_PER_FILE
            + dynamodb_total
    );
    assert_eq!(
        (
            begin_dynamodb
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            commit_dynamodb
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        ),
        (
            EXPECTED_BEGIN_DYNAMODB.to_vec(),
            EXPECTED_COMMIT_DYNAMODB.to_vec()
        ),
        "DynamoDB requests"
    );
    // The writer's own requests in the batch: everything that is not the coordinator's.
    let coordinator: Vec<_> = begin.iter().chain(commit.iter()).collect();
    let writer_metadata = writer_metadata(&batch_calls[1], &coordinator);
    eprintln!(
        "writer: {} S3, of which metadata {writer_metadata:?}",
        batch_calls[1].len() - coordinator.len()
    );
    assert_eq!(
        writer_metadata.len(),
        EXPECTED_WRITER_METADATA_S3,
        "metadata requests of the writer: {:#?}",
        batch_calls[1]
    );
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

/// A begin's lock session when the lock is free: the conditional create (no read first: a released lock has
/// no item) and the conditional delete that releases it.
const EXPECTED_BEGIN_DYNAMODB: &[&str] = &["PutItem", "DeleteItem"];
/// A commit's: the same, plus the lease proof (a conditional update) right before `<t>.commit` is created.
const EXPECTED_COMMIT_DYNAMODB: &[&str] = &["PutItem", "UpdateItem", "DeleteItem"];
/// A begin: one `.hoodie/` listing (the timeline, with the markers and heartbeats of leftovers),
/// `.commit.requested`, `.inflight` and the first heartbeat. No `hoodie.properties` (the writer checked it when it
/// opened the table and the commit checks it again) and no checkpoint read: the coordinator remembers the
/// checkpoint of the commit it wrote last, and commit files never change.
const EXPECTED_BEGIN_S3: usize = 4;
/// A commit: `hoodie.properties`, the `.hoodie/` listing (the timeline and this instant's markers; listed again
/// only if an expired write was rolled back), `<t>.commit`, and one `DeleteObjects` for the markers and the
/// heartbeat. The committing instant's heartbeat is not read: the request carries the newest one its writer
/// stored …
const EXPECTED_COMMIT_S3_FIXED: u64 = 4;
/// … and per base file its size check (HEAD).
const EXPECTED_COMMIT_S3_PER_FILE: u64 = 1;
/// The writer's side of a warm batch, metadata only: one `.hoodie/` listing (the timeline, for the checkpoint and,
/// when the begin's base is still its latest commit, for the write), the checkpoint's commit file, and the commit
/// completed since the last batch, which the file system view applies instead of listing the table.
const EXPECTED_WRITER_METADATA_S3: usize = 3;

/// The requests of one batch on an aged table, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BatchCounts {
    /// S3 requests of the begin and the commit (with its inline services), by operation.
    s3: BTreeMap<String, usize>,
    /// DynamoDB requests of the begin and the commit, by operation.
    dynamodb: BTreeMap<String, usize>,
    /// The writer's metadata requests.
    writer_metadata: usize,
}

/// What the commit of a batch ran inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inline {
    Nothing,
    Clean,
    CleanAndArchive,
}

fn by_operation<'a>(items: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for item in items {
        *out.entry(item.to_string()).or_insert(0) += 1;
    }
    out
}

/// Writes `batches` one-row upserts of one key (one file group, rewritten by every commit, so that every clean
/// past the retention deletes a superseded slice) and returns, for the last batch whose commit cleaned only and
/// the last whose commit also archived, its counts.
async fn aged_table(batches: i64) -> BTreeMap<&'static str, BatchCounts> {
    let Counted {
        sink,
        client,
        storage,
        _dir,
    } = counted_sink().await;
    let mut out = BTreeMap::new();
    for i in 0..batches {
        let msg = Msg {
            topic: "trips".to_string(),
            partition: 0,
            offset: i,
            key: Some("trip-00001".to_string()),
            value: Some(
                Trip {
                    uuid: "trip-00001".to_string(),
                    ts: i,
                    rider: format!("rider-{i}"),
                    fare: 1.0,
                    city: "sf".to_string(),
                    deleted: false,
                }
                .json(),
            ),
        };
        let batch = KafkaBatch::from_slice(&esm_payload(&[msg])).expect("event");
        let before = storage.calls().len();
        let logged = client.log.lock().expect("log").len();
        let report = sink.process(batch).await.expect("process");
        assert!(report.instant.is_some(), "{report:?}");
        let calls = storage.call_paths()[before..].to_vec();
        let log = client.log.lock().expect("log")[logged..].to_vec();
        let ops: Vec<&str> = log.iter().map(|(op, _, _)| *op).collect();
        assert_eq!(ops, ["begin", "commit"], "{log:#?}");
        let (_, begin, begin_dynamodb) = &log[0];
        let (_, commit, commit_dynamodb) = &log[1];
        let cleaned = commit
            .iter()
            .any(|(op, p)| *op == Operation::PutIfAbsent && p.ends_with(".clean.requested"));
        let archived = commit
            .iter()
            .any(|(op, p)| *op == Operation::Delete && p.ends_with(".commit"));
        let inline = match (cleaned, archived) {
            (_, true) => Inline::CleanAndArchive,
            (true, false) => Inline::Clean,
            (false, false) => Inline::Nothing,
        };
        if i > 0 && inline == Inline::Nothing {
            // With 10 commits retained, every commit from the 12th on leaves a slice no query needs.
            assert!(i <= 10, "batch {i} did not clean: {commit:#?}");
        }
        let coordinator: Vec<_> = begin.iter().chain(commit.iter()).collect();
        let counts = BatchCounts {
            s3: by_operation(coordinator.iter().map(|(op, _)| op.as_str())),
            dynamodb: by_operation(
                begin_dynamodb
                    .iter()
                    .chain(commit_dynamodb.iter())
                    .map(String::as_str),
            ),
            writer_metadata: writer_metadata(&calls, &coordinator).len(),
        };
        if inline != Inline::Nothing && i + 12 >= batches {
            eprintln!(
                "batches {batches}, batch {i}, {inline:?}: begin {begin:?} {begin_dynamodb:?}\ncommit {commit:?} {commit_dynamodb:?}"
            );
        }
        match inline {
            Inline::Clean => {
                out.insert("clean", counts);
            }
            Inline::CleanAndArchive => {
                out.insert("clean+archive", counts);
            }
            Inline::Nothing => {}
        }
    }
    out
}

#[tokio::test(flavor = "current_thread")]
async fn inline_services_of_a_warm_batch_take_as_many_requests_on_a_table_three_times_older() {
    // 45 batches: archival (past 30 completed commits) ran twice, cleans delete slices from the 12th commit.
    let young = aged_table(45).await;
    let old = aged_table(135).await;
    for (kind, counts) in young.iter().chain(old.iter()) {
        eprintln!("{kind}: {counts:?}");
    }
    assert_eq!(
        young.keys().copied().collect::<Vec<_>>(),
        ["clean", "clean+archive"],
        "{young:#?}"
    );
    // The scale property: one more batch costs the same on a table three times older.
    assert_eq!(young, old, "requests of a batch grew with the table's age");
    let pinned = |s3: &[(&str, usize)], dynamodb: &[(&str, usize)]| BatchCounts {
        s3: s3.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        dynamodb: dynamodb.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        writer_metadata: EXPECTED_WRITER_METADATA_S3,
    };
    assert_eq!(
        old["clean"],
        pinned(EXPECTED_CLEAN_BATCH_S3, EXPECTED_CLEAN_BATCH_DYNAMODB),
        "a batch whose commit cleans"
    );
    assert_eq!(
        old["clean+archive"],
        pinned(EXPECTED_ARCHIVE_BATCH_S3, EXPECTED_ARCHIVE_BATCH_DYNAMODB),
        "a batch whose commit cleans and archives"
    );
}

/// A one-file batch (begin + commit) whose commit cleans one superseded slice inline, S3 by operation: the
/// begin's 4 and the commit's 4 + 1, then the clean: the last clean's metadata (its cursor) and the new
/// commit's (the partitions written since), one listing of each such partition, `.clean.requested`,
/// `.clean.inflight`, one `DeleteObjects` for the slices, `.clean`, and the timeline listed again for archival.
/// Nothing here depends on the number of commits the table has had.
const EXPECTED_CLEAN_BATCH_S3: &[(&str, usize)] = &[
    ("delete_many", 2),
    ("get", 3),
    ("head", 1),
    ("list", 4),
    ("put", 2),
    ("put_if_absent", 5),
];
/// Its DynamoDB requests: the begin's and commit's lock sessions, and a lease proof before each of the
/// clean's three writes (`.clean.requested`, the deletes, `.clean`).
const EXPECTED_CLEAN_BATCH_DYNAMODB: &[(&str, usize)] =
    &[("DeleteItem", 2), ("PutItem", 2), ("UpdateItem", 4)];
/// The same batch when its commit also archives (every 11 commits once past `hoodie.keep.max.commits` = 30,
/// down to `keep.min.commits` = 20): the last clean's metadata again (the archival bound), one
/// `DeleteObjects` for the requested and inflight files of the 11 archived commits and 11 cleans, one DELETE
/// per completed file (in ascending time, so that a crash never leaves a hole); the commit cache follows the
/// archival without listing the timeline again. Bounded by `keep.max - keep.min`, not by the table's age.
const EXPECTED_ARCHIVE_BATCH_S3: &[(&str, usize)] = &[
    ("delete", 22),
    ("delete_many", 3),
    ("get", 4),
    ("head", 1),
    ("list", 4),
    ("put", 2),
    ("put_if_absent", 5),
];
/// Its DynamoDB requests: a lease proof before the `DeleteObjects` and before each completed file's DELETE.
const EXPECTED_ARCHIVE_BATCH_DYNAMODB: &[(&str, usize)] =
    &[("DeleteItem", 2), ("PutItem", 2), ("UpdateItem", 27)];
