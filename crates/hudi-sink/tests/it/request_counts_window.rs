//! Requests per batch under the interval commit: three warm writers on one table, each its own Kafka
//! partition and partition path, share one window. Every S3 request (through a logging store per writer,
//! the coordinator's requests on its behalf included) and every DynamoDB request of its lock (an SDK
//! interceptor on moto) lands in one ordered log per writer, so that the requests made while that writer's
//! coordinator held the lock are the ones between its acquiring `PutItem` and its releasing `DeleteItem`.
//! Counts only: no timing is asserted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use bytes::Bytes;
use hudi_sink::clock::SystemClock;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::dynamodb::TABLE_KEY;
use hudi_sink::lock::{create_lock_table_if_missing, DynamoDbLock, DynamoDbLockConfig};
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::sink::{KafkaSink, SinkConfig, SinkReport};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::memory::MemoryStorage;
use hudi_sink::storage::{ObjectMeta, PutOutcome, Storage, StorageResult};
use hudi_sink::transport::{CoordinatorClient, InProcessClient};
use hudi_sink::write::WriteConfig;
use hudi_sink::write::{TableWriter, WriteError};

use crate::common::moto;
use crate::model::{esm_payload, local_props, Msg, Trip, SCHEMA};

/// One writer's requests, in order: `s3 <op> <path>` or `ddb <operation>`.
type Log = Arc<Mutex<Vec<String>>>;

/// Appends every DynamoDB request (each attempt) of one lock client to its writer's log.
#[derive(Debug, Clone)]
struct DynamoDbLog(Log);

impl Intercept for DynamoDbLog {
    fn name(&self) -> &'static str {
        "DynamoDbLog"
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
        if let Ok(mut log) = self.0.lock() {
            log.push(format!("ddb {target}"));
        }
        Ok(())
    }
}

/// A writer's view of the shared store, appending every request to its log.
#[derive(Debug)]
struct Logged {
    inner: Arc<dyn Storage>,
    log: Log,
}

impl Logged {
    fn note(&self, op: &str, path: &str) {
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("s3 {op} {path}"));
        }
    }
}

#[async_trait]
impl Storage for Logged {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }
    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.note("get", path);
        self.inner.get(path).await
    }
    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        self.note("get_range", path);
        self.inner.get_range(path, range).await
    }
    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.note("head", path);
        self.inner.head(path).await
    }
    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.note("put", path);
        self.inner.put(path, data).await
    }
    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.note("put_if_absent", path);
        self.inner.put_if_absent(path, data).await
    }
    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.note("list", prefix);
        self.inner.list(prefix).await
    }
    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.note("delete", path);
        self.inner.delete(path).await
    }
    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        self.note("delete_many", paths.first().map_or("", String::as_str));
        self.inner.delete_many(paths).await
    }
}

/// Holds every `submit` until all the window's writers have joined, so that the three share one window
/// whatever the scheduling.
#[derive(Debug)]
struct AllJoinFirst {
    inner: InProcessClient,
    /// Joins answered so far, over all writers.
    joined: Arc<tokio::sync::watch::Sender<u32>>,
    /// The count this writer's last join made.
    mine: std::sync::atomic::AtomicU32,
    writers: u32,
}

#[async_trait]
impl CoordinatorClient for AllJoinFirst {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        if matches!(request, CoordinatorRequest::Submit(_)) {
            let mine = self.mine.load(std::sync::atomic::Ordering::SeqCst);
            // The round's last join brings the count to the next multiple of the writers.
            let target = mine.div_ceil(self.writers) * self.writers;
            let mut rx = self.joined.subscribe();
            rx.wait_for(|n| *n >= target)
                .await
                .map_err(|e| WriteError::Config {
                    reason: e.to_string(),
                })?;
        }
        let answer = self.inner.call(request).await?;
        if matches!(answer, CoordinatorResponse::Joined { .. }) {
            let mut now = 0;
            self.joined.send_modify(|n| {
                *n += 1;
                now = *n;
            });
            self.mine.store(now, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(answer)
    }
}

fn trip_batch(partition: i32, city: &str, first_offset: i64) -> KafkaBatch {
    let msgs: Vec<Msg> = (0..5)
        .map(|i| {
            let uuid = format!("{city}-{i}");
            Msg {
                topic: "trips".into(),
                partition,
                offset: first_offset + i,
                key: Some(uuid.clone()),
                value: Some(
                    Trip {
                        uuid,
                        ts: first_offset + i,
                        rider: format!("rider-{i}"),
                        fare: 1.0,
                        city: city.into(),
                        deleted: false,
                    }
                    .json(),
                ),
            }
        })
        .collect();
    KafkaBatch::from_slice(&esm_payload(&msgs)).expect("event")
}

/// Whether a logged request is one of the batch's data files or markers (not counted).
fn is_data_or_marker(line: &str) -> bool {
    let path = line.splitn(3, ' ').nth(2).unwrap_or_default();
    path.starts_with(".hoodie/.temp/")
        || (!path.starts_with(".hoodie/") && (path.ends_with(".parquet") || path.contains(".log.")))
}

/// The requests between the lock's acquisition and its release, per lock session in `log`.
fn under_lock(log: &[String]) -> Vec<Vec<String>> {
    let mut sessions = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in log {
        match line.as_str() {
            "ddb PutItem" => current = Some(Vec::new()),
            "ddb DeleteItem" => sessions.extend(current.take()),
            other => {
                if let Some(c) = current.as_mut() {
                    c.push(other.to_string());
                }
            }
        }
    }
    sessions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_member_makes_six_requests_and_the_commit_holds_the_lock_for_four() {
    const WRITERS: u32 = 3;
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("trips.avsc");
    std::fs::write(&schema_file, SCHEMA).expect("schema");
    let mut props: BTreeMap<String, String> = local_props(
        &dir.path().join("trips"),
        &schema_file,
        &dir.path().join("dead"),
    );
    // Long enough a window that the three writers share it; heartbeats do not fire within it.
    props.insert("hudi.sink.commit.interval.ms".into(), "1500".into());
    let shared: Arc<dyn Storage> = Arc::new(MemoryStorage::new("memory://trips"));
    let clock = Arc::new(SystemClock);
    let sdk = moto::sdk_config().await;
    let lock_props: BTreeMap<String, String> = [
        (TABLE_KEY.to_string(), moto::unique_name("window-locks")),
        ("hoodie.table.name".to_string(), "trips".to_string()),
    ]
    .into_iter()
    .collect();
    let lock_config = DynamoDbLockConfig::from_props(&lock_props).expect("lock config");
    create_lock_table_if_missing(&aws_sdk_dynamodb::Client::new(&sdk), &lock_config)
        .await
        .expect("lock table");
    let config = WriteConfig::from_properties(props.clone()).expect("config");
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let joined = Arc::new(tokio::sync::watch::channel(0u32).0);
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let storage: Arc<dyn Storage> = Arc::new(Logged {
            inner: shared.clone(),
            log: log.clone(),
        });
        let ddb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .interceptor(DynamoDbLog(log.clone()))
                .build(),
        );
        let lock = Arc::new(DynamoDbLock::new(ddb, lock_config.clone()).expect("lock"));
        let coordinator = Coordinator::new(
            storage.clone(),
            lock,
            clock.clone(),
            CoordinatorConfig::default(),
        );
        let writer = TableWriter::create_or_open(
            storage,
            clock.clone(),
            config.clone(),
            Some(AvroSchema::parse(SCHEMA).expect("schema")),
        )
        .await
        .expect("writer");
        let sink = Arc::new(KafkaSink::new(
            writer,
            Arc::new(AllJoinFirst {
                inner: InProcessClient::new(coordinator),
                joined: joined.clone(),
                mine: std::sync::atomic::AtomicU32::new(0),
                writers: WRITERS,
            }),
            Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
                "memory://dead",
            )))),
            clock.clone(),
            sink_config.clone(),
            format!("writer-{w}"),
        ));
        writers.push((sink, log));
    }
    let cities = ["sf", "nyc", "chennai"];
    // Two windows to warm the writers up (their file-system views, the table's partitions and groups), then
    // the window measured.
    let mut measured: Vec<(SinkReport, Vec<String>)> = Vec::new();
    // Which writer closed the window before the measured one: its file-system view reads that commit in the
    // measured batch (a window's cost, not a member's).
    let mut previous_closer = None;
    for round in 0..3i64 {
        let mut tasks = Vec::new();
        for (w, (sink, log)) in writers.iter().enumerate() {
            let sink = sink.clone();
            let log = log.clone();
            let batch = trip_batch(w as i32, cities[w], round * 5);
            tasks.push(tokio::spawn(async move {
                let before = log.lock().expect("log").len();
                let report = sink.process(batch).await.expect("process");
                let lines = log.lock().expect("log")[before..].to_vec();
                (report, lines)
            }));
            if w == 0 {
                // The others' batches come once the first writer's window is open (the common case: a
                // batch arrives while its table's window is open, and its listing shows it).
                let mut rx = joined.subscribe();
                let target = round as u32 * WRITERS + 1;
                rx.wait_for(|n| *n >= target).await.expect("first join");
            }
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.expect("join"));
        }
        let instants: std::collections::BTreeSet<_> =
            results.iter().map(|(r, _)| r.instant.clone()).collect();
        assert_eq!(instants.len(), 1, "one instant per window: {results:?}");
        assert!(results
            .iter()
            .all(|(r, _)| r.contributions_per_instant == Some(WRITERS)));
        if round < 2 {
            previous_closer = results.iter().position(|(_, lines)| {
                lines
                    .iter()
                    .any(|l| l.starts_with("s3 put_if_absent .hoodie/") && l.ends_with(".commit"))
            });
        }
        measured = results;
    }
    // Per writer: its requests besides data files and markers, and its lock sessions by what they did.
    let mut members = Vec::new();
    let mut commit_session = None;
    for (w, (report, lines)) in measured.iter().enumerate() {
        let window_commit = format!(
            "s3 get .hoodie/{}.commit",
            report.instant.as_deref().unwrap_or_default()
        );
        let counted: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("s3 ") && !is_data_or_marker(l))
            // The previous window's commit, read by the view of the writer that closed it.
            .filter(|l| {
                previous_closer != Some(w)
                    || !(l.starts_with("s3 get .hoodie/") && l.ends_with(".commit"))
                    || **l == window_commit
            })
            .collect();
        let sessions = under_lock(lines);
        let commits = sessions.iter().find(|s| {
            s.iter()
                .any(|l| l.starts_with("s3 put_if_absent") && l.ends_with(".commit"))
        });
        let opens = sessions
            .iter()
            .any(|s| s.iter().any(|l| l.ends_with(".commit.requested")));
        eprintln!(
            "{:?} (opened: {opens}, closed: {}): {} requests besides data files and markers: {counted:#?}",
            report.instant,
            commits.is_some(),
            counted.len(),
        );
        if let Some(c) = commits {
            commit_session = Some(c.clone());
        } else if !opens {
            let looks = counted.iter().filter(|l| ***l == window_commit).count();
            members.push((counted.len() - looks, looks));
        }
    }
    // With three writers, one opened the window and one closed it (maybe the same one): the others only
    // joined, wrote, submitted and waited. Five requests, plus one read of the commit per look: the first look
    // comes one write's time (at least 250 ms) after the submit, and finds the commit when the close took no
    // longer than that; a slower close (a loaded machine) costs one more look per doubling.
    assert!(!members.is_empty(), "{measured:#?}");
    for (fixed, looks) in &members {
        assert_eq!(
            *fixed, 5,
            "a member's requests besides its looks ({measured:#?})"
        );
        assert!(
            (1..=2).contains(looks),
            "a member looked {looks} times for the commit ({measured:#?})"
        );
    }
    let held = commit_session.expect("a closer");
    eprintln!("the window's commit, under the lock: {held:?}");
    assert!(
        held.len() <= 4,
        "the commit holds the lock for at most four requests: {held:?}"
    );
}
