//! Scripted scenarios: interleavings that the random seeds cannot reach without also opening the one window
//! no mechanism closes (a commit file's creation delayed in flight past the lease after the lease was proven,
//! for an instant that is then given up; see the README's limits). Each runs on its own paused runtime and is
//! checked with the simulation's invariants.
//!
//! **Duplicated commit, first copy held in flight.** The writer's call to the coordinator function times out
//! and the SDK sends the same commit request again (Lambda `Invoke` retries), while the first coordinator is
//! still running: it has proven its lease and sent the create of `<t1>.commit`, and that request stalls (the
//! coordinator's process pauses; its lock heartbeat stops). Meanwhile another writer's older instant `t0`
//! commits, and the duplicate request commits `t1` with a checkpoint that includes `t0`'s offsets. When the
//! first create finally lands, only create-if-absent keeps it from replacing the commit with its stale
//! checkpoint, which would move the table's checkpoint backwards and have `t0`'s records ingested again.

use super::*;
use tokio::sync::Notify;

/// A coordinator's view of the store whose commit-file creation is held in flight: the process pauses (its
/// clock stops, so its lock heartbeat does too) until the script releases it.
#[derive(Debug)]
struct HeldCommitCreate {
    inner: Arc<dyn Storage>,
    clock: Arc<SimClock>,
    held: Notify,
    release: Notify,
}

impl HeldCommitCreate {
    async fn hold(&self, path: &str) {
        if path.ends_with(".commit") {
            self.clock.freeze();
            self.held.notify_one();
            self.release.notified().await;
            self.clock.thaw();
        }
    }
}

#[async_trait]
impl Storage for HeldCommitCreate {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.inner.get(path).await
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        self.inner.get_range(path, range).await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.inner.head(path).await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.hold(path).await;
        self.inner.put(path, data).await
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.hold(path).await;
        self.inner.put_if_absent(path, data).await
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix).await
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path).await
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        self.inner.delete_many(paths).await
    }
}

/// Writer 0's transport: its commit waits until the script lets it go.
#[derive(Debug)]
struct GatedCommit {
    inner: InProcessClient,
    at_commit: Arc<Notify>,
    go: Arc<Notify>,
}

#[async_trait]
impl CoordinatorClient for GatedCommit {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        if matches!(request, CoordinatorRequest::Commit(_)) {
            self.at_commit.notify_one();
            self.go.notified().await;
        }
        self.inner.call(request).await
    }
}

/// Writer 1's transport: a commit goes to a first coordinator whose commit-file creation stalls, then (as
/// the SDK retries after a timeout) to a second one, once writer 0 has committed.
struct DuplicatedCommit {
    begin: InProcessClient,
    first: Arc<Coordinator>,
    held: Arc<HeldCommitCreate>,
    duplicate: InProcessClient,
    go_w0: Arc<Notify>,
    w0_done: Arc<Notify>,
    first_call: Mutex<Option<tokio::task::JoinHandle<Result<CoordinatorResponse, WriteError>>>>,
}

impl std::fmt::Debug for DuplicatedCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DuplicatedCommit")
    }
}

#[async_trait]
impl CoordinatorClient for DuplicatedCommit {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        if !matches!(request, CoordinatorRequest::Commit(_)) {
            return self.begin.call(request).await;
        }
        let first = self.first.clone();
        let copy = request.clone();
        let mut handle = tokio::spawn(async move { first.handle(copy).await });
        tokio::select! {
            _ = self.held.held.notified() => {}
            // The first coordinator answered without reaching the commit file: nothing to duplicate.
            answer = &mut handle => {
                self.go_w0.notify_one();
                return answer.map_err(|e| WriteError::Transport {
                    function: "scenario".into(),
                    message: e.to_string(),
                })?;
            }
        }
        *lock(&self.first_call) = Some(handle);
        self.go_w0.notify_one();
        self.w0_done.notified().await;
        self.duplicate.call(request).await
    }
}

fn trip_msgs(partition: i32, city: &str) -> Vec<Msg> {
    (1..=3)
        .map(|offset| {
            let uuid = format!("{city}-{offset}");
            Msg {
                topic: TOPIC.into(),
                partition,
                offset,
                key: Some(uuid.clone()),
                value: Some(
                    Trip {
                        uuid,
                        ts: 10 + offset,
                        rider: format!("rider-{offset}"),
                        fare: offset as f64,
                        city: city.into(),
                        deleted: false,
                    }
                    .json(),
                ),
            }
        })
        .collect()
}

/// See the module doc.
async fn duplicated_commit_with_a_held_create() -> Result<(), Failure> {
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let store: Arc<dyn Storage> = Arc::new(MemoryStorage::new("memory://scenario"));
    let dir = std::path::Path::new("/nonexistent-scenario");
    let mut props = local_props(
        &dir.join("trips"),
        &dir.join("trips.avsc"),
        &dir.join("dead"),
    );
    props.insert(
        "hoodie.parquet.compression.codec".into(),
        "uncompressed".into(),
    );
    props.insert(
        "hudi.sink.heartbeat.interval.ms".into(),
        BEAT_MS.to_string(),
    );
    props.insert(
        "hudi.sink.heartbeat.tolerable.misses".into(),
        BEAT_MISSES.to_string(),
    );
    let config = WriteConfig::from_properties(props.clone()).map_err(|e| setup(&e))?;
    let sink_config = SinkConfig::from_properties(&props).map_err(|e| setup(&e))?;
    let schema = AvroSchema::parse(SCHEMA).map_err(|e| setup(&e))?;
    // Every process has its own clock, so that pausing the first coordinator stops nobody else.
    let clock = || Arc::new(SimClock::new(0));
    let options = LeaseOptions::hudi(Duration::from_millis(LEASE_MS))
        .with_refresh_period(Duration::from_millis(250));
    let base_lock = MemoryLock::new("trips", options);
    let coordinator = |storage: Arc<dyn Storage>, clock: Arc<SimClock>| {
        Coordinator::new(
            storage,
            Arc::new(base_lock.contender().with_clock(clock.clone())),
            clock,
            CoordinatorConfig {
                lock_wait: Duration::from_secs(120),
                heartbeat_tolerance: sink_config.heartbeat_tolerance(),
                ..CoordinatorConfig::default()
            },
        )
    };
    let writer = |clock: Arc<SimClock>| {
        TableWriter::create_or_open(store.clone(), clock, config.clone(), Some(schema.clone()))
    };
    let dead: Arc<dyn Storage> = Arc::new(MemoryStorage::new("memory://dead-letters"));
    let b0 = trip_msgs(0, "sf");
    let b1 = trip_msgs(1, "nyc");

    let (at_commit, go_w0, w0_done) = (
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
    );
    let w0_clock = clock();
    let w0 = KafkaSink::new(
        writer(w0_clock.clone()).await.map_err(|e| setup(&e))?,
        Arc::new(GatedCommit {
            inner: InProcessClient::new(coordinator(store.clone(), clock())),
            at_commit: at_commit.clone(),
            go: go_w0.clone(),
        }),
        Arc::new(StorageDeadLetterSink::new(dead.clone())),
        w0_clock,
        sink_config.clone(),
        "w0",
    );
    let held_clock = clock();
    let held = Arc::new(HeldCommitCreate {
        inner: store.clone(),
        clock: held_clock.clone(),
        held: Notify::new(),
        release: Notify::new(),
    });
    let transport = Arc::new(DuplicatedCommit {
        begin: InProcessClient::new(coordinator(store.clone(), clock())),
        first: Arc::new(coordinator(held.clone(), held_clock)),
        held: held.clone(),
        duplicate: InProcessClient::new(coordinator(store.clone(), clock())),
        go_w0: go_w0.clone(),
        w0_done: w0_done.clone(),
        first_call: Mutex::new(None),
    });
    let w1_clock = clock();
    let w1 = KafkaSink::new(
        writer(w1_clock.clone()).await.map_err(|e| setup(&e))?,
        transport.clone(),
        Arc::new(StorageDeadLetterSink::new(dead)),
        w1_clock,
        sink_config.clone(),
        "w1",
    );
    let batch = |msgs: &[Msg]| {
        KafkaBatch::from_slice(&esm_payload(msgs)).map_err(|e| fail("setup", e.to_string()))
    };
    let (batch0, batch1) = (batch(&b0)?, batch(&b1)?);

    // Writer 0 begins t0 and writes its files; then writer 1 begins t1 > t0 and asks for its commit.
    let w0_task = tokio::spawn(async move { w0.process(batch0).await });
    at_commit.notified().await;
    let w1_task = tokio::spawn(async move { w1.process(batch1).await });
    // Once the first copy of t1's commit is held, t0 commits (after taking the stalled lock over).
    let r0 = w0_task
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail("writer 0 commits", e.to_string()))?;
    if r0.instant.is_none() {
        return Err(fail("writer 0 commits", format!("{r0:?}")));
    }
    w0_done.notify_one();
    let r1 = w1_task
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail("writer 1 commits", e.to_string()))?;
    if r1.instant.is_none() {
        return Err(fail("writer 1 commits", format!("{r1:?}")));
    }
    // The stalled create lands at last; its answer goes nowhere (the SDK gave up on it).
    held.release.notify_one();
    let first_call = lock(&transport.first_call).take();
    if let Some(h) = first_call {
        let late = h.await.map_err(|e| fail("no panic", e.to_string()))?;
        if let Ok(CoordinatorResponse::Committed { .. }) = late {
            // Only possible when the late create replaced the commit.
            eprintln!("scenario: the late create of the first coordinator replaced the commit");
        }
    }

    let delivered: BTreeSet<(i32, i64, i64)> = [(0, 1, 3), (1, 1, 3)].into_iter().collect();
    let all: Vec<Msg> = b0.iter().chain(&b1).cloned().collect();
    let committed = committed_batches(store.as_ref(), &all, &delivered).await?;
    let mut model = Model::default();
    for b in &committed {
        model.apply(b);
    }
    let acked_next: BTreeMap<(String, i32), i64> =
        [((TOPIC.to_string(), 0), 4), ((TOPIC.to_string(), 1), 4)]
            .into_iter()
            .collect();
    check_invariants(store.as_ref(), &model, &acked_next).await?;
    Ok(())
}

/// The scripted scenarios, by name.
pub(super) const SCENARIOS: &[(&str, Scenario)] = &[(
    "duplicated-commit-with-a-held-create",
    duplicated_commit_with_a_held_create_boxed,
)];

/// A scenario's entry point.
pub(super) type Scenario =
    fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>>;

fn duplicated_commit_with_a_held_create_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(duplicated_commit_with_a_held_create())
}

/// Runs one scenario on a fresh runtime with paused time, `mutation` switched off. Under virtual time, a
/// scenario stuck on a signal that never comes fails here instead of hanging.
pub(super) fn run_scenario(scenario: Scenario, mutation: Option<Mutation>) -> Result<(), Failure> {
    on_paused_runtime(mutation, async {
        tokio::time::timeout(Duration::from_secs(3_600), scenario())
            .await
            .unwrap_or_else(|_| Err(fail("liveness", "the scenario did not finish")))
    })
}
