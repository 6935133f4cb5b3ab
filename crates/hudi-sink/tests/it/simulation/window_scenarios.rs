//! Scripted scenarios of the interval commit, checked with the simulation's invariants.
//!
//! **A straggler wakes after its window closed.** Writers A and B join one window. B pauses right before its
//! first marker (its process freezes: clock, heartbeat and calls stop) until A's invocation has returned. A
//! submits, waits for B until B can be excluded, and the close commits A alone. When B wakes, its lease is
//! over: its next upload must refuse (fencing), or a file named with the completed instant would appear that
//! the commit does not list. Were the close not to wait for B (membership), A would return at once and B
//! would upload inside its lease, after the commit: the same file. B then writes its batch again in a later
//! window (or, if its invocation failed, the batch is redelivered), and the table holds it exactly once.
//!
//! **A batch delivered twice into one window.** A rebalance hands the same batch to two invocations at once;
//! on a merge-on-read table their appends do not conflict, so only the window's one-contribution-per-offset
//! rule keeps the batch from being committed twice.

use super::scenarios::{scenario_props, trip_msgs};
use super::*;
use tokio::sync::Notify;

/// A writer's view of the store whose first upload of a path containing `needle` waits until the script lets
/// go, with the writer's clock stopped meanwhile when `clock` is given (its process freezes).
#[derive(Debug)]
pub(super) struct HeldAt {
    inner: Arc<dyn Storage>,
    needle: &'static str,
    clock: Option<Arc<SimClock>>,
    armed: AtomicBool,
    pub(super) held: Notify,
    pub(super) release: Notify,
}

impl HeldAt {
    pub(super) fn new(
        inner: Arc<dyn Storage>,
        needle: &'static str,
        clock: Option<Arc<SimClock>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            inner,
            needle,
            clock,
            armed: AtomicBool::new(true),
            held: Notify::new(),
            release: Notify::new(),
        })
    }

    async fn hold(&self, path: &str) {
        if path.contains(self.needle) && self.armed.swap(false, Ordering::SeqCst) {
            if let Some(clock) = &self.clock {
                clock.freeze();
            }
            self.held.notify_one();
            self.release.notified().await;
            if let Some(clock) = &self.clock {
                clock.thaw();
            }
        }
    }
}

#[async_trait]
impl Storage for HeldAt {
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

/// What a window scenario builds: the recorded store, the settings and a sink factory.
pub(super) struct Table {
    pub(super) recorder: Arc<Recorder>,
    config: WriteConfig,
    sink_config: SinkConfig,
    pub(super) schema: AvroSchema,
    lock: MemoryLock,
    dead: Arc<dyn Storage>,
    /// One clock per process, all started with the scenario (a clock counts from its creation).
    pub(super) clocks: Vec<Arc<SimClock>>,
    /// The Delta mirror's settings, when the properties turn it on: every sink's coordinator mirrors.
    delta: Option<hudi_sink::delta::DeltaConfig>,
    /// The first invariant a Delta mirror step broke.
    pub(super) mirror_failure: Arc<Mutex<Option<Failure>>>,
}

impl Table {
    pub(super) fn new(mor: bool) -> Result<Self, Failure> {
        Self::with_props(mor, &[])
    }

    /// As [`Table::new`], with `extra` properties on top of the scenario's (an empty value removes the key).
    pub(super) fn with_props(mor: bool, extra: &[(&str, &str)]) -> Result<Self, Failure> {
        let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
        let mut props = scenario_props();
        props.insert("hudi.sink.commit.interval.ms".into(), "1000".into());
        props.insert(
            "hudi.sink.heartbeat.interval.ms".into(),
            BEAT_MS.to_string(),
        );
        props.insert(
            "hudi.sink.heartbeat.tolerable.misses".into(),
            BEAT_MISSES.to_string(),
        );
        if mor {
            props.insert("hoodie.table.type".into(), "MERGE_ON_READ".into());
        }
        for (k, v) in extra {
            if v.is_empty() {
                props.remove(*k);
            } else {
                props.insert(k.to_string(), v.to_string());
            }
        }
        let options = LeaseOptions::hudi(Duration::from_millis(LEASE_MS))
            .with_refresh_period(Duration::from_millis(250));
        let delta = super::delta::delta_config(&props)?;
        Ok(Self {
            delta,
            mirror_failure: Arc::new(Mutex::new(None)),
            recorder: Arc::new(Recorder::new(Arc::new(MemoryStorage::new(
                "memory://window-scenario",
            )))),
            config: WriteConfig::from_properties(props.clone()).map_err(|e| setup(&e))?,
            sink_config: SinkConfig::from_properties(&props).map_err(|e| setup(&e))?,
            schema: AvroSchema::parse(SCHEMA).map_err(|e| setup(&e))?,
            lock: MemoryLock::new("trips", options),
            dead: Arc::new(MemoryStorage::new("memory://dead-letters")),
            clocks: (0..6).map(|_| Arc::new(SimClock::new(0))).collect(),
        })
    }

    /// The table's write settings.
    pub(super) fn write_config(&self) -> WriteConfig {
        self.config.clone()
    }

    /// A writer invocation on `storage` (its view of the table) with its own clock.
    pub(super) async fn sink(
        &self,
        storage: Arc<dyn Storage>,
        clock: Arc<SimClock>,
        name: &str,
    ) -> Result<KafkaSink, Failure> {
        self.sink_with(storage, clock, name, &self.schema).await
    }

    /// As [`Table::sink`], its coordinator calls going through `transport` (given the in-process client).
    pub(super) async fn sink_via(
        &self,
        storage: Arc<dyn Storage>,
        clock: Arc<SimClock>,
        name: &str,
        transport: impl FnOnce(InProcessClient) -> Arc<dyn CoordinatorClient>,
    ) -> Result<KafkaSink, Failure> {
        let coordinator = Coordinator::new(
            storage.clone(),
            Arc::new(self.lock.contender().with_clock(clock.clone())),
            clock.clone(),
            sim_coordinator_config(&self.sink_config, &sim_services()),
        );
        let coordinator = self.with_mirror(coordinator);
        let writer = TableWriter::create_or_open(
            storage,
            clock.clone(),
            self.config.clone(),
            Some(self.schema.clone()),
        )
        .await
        .map_err(|e| fail("setup", e.to_string()))?;
        Ok(KafkaSink::new(
            writer,
            transport(InProcessClient::new(coordinator)),
            Arc::new(StorageDeadLetterSink::new(self.dead.clone())),
            clock,
            self.sink_config.clone(),
            name,
        ))
    }

    /// As [`Table::sink`], deployed with the schema file `schema`.
    pub(super) async fn sink_with(
        &self,
        storage: Arc<dyn Storage>,
        clock: Arc<SimClock>,
        name: &str,
        schema: &AvroSchema,
    ) -> Result<KafkaSink, Failure> {
        let coordinator = Coordinator::new(
            storage.clone(),
            Arc::new(self.lock.contender().with_clock(clock.clone())),
            clock.clone(),
            sim_coordinator_config(&self.sink_config, &sim_services()),
        );
        let coordinator = self.with_mirror(coordinator);
        let writer = TableWriter::create_or_open(
            storage,
            clock.clone(),
            self.config.clone(),
            Some(schema.clone()),
        )
        .await
        .map_err(|e| fail("setup", e.to_string()))?;
        Ok(KafkaSink::new(
            writer,
            Arc::new(InProcessClient::new(coordinator)),
            Arc::new(StorageDeadLetterSink::new(self.dead.clone())),
            clock,
            self.sink_config.clone(),
            name,
        ))
    }

    /// `coordinator`, mirroring into Delta when the table's properties say so (over the recorded store, with
    /// no fault).
    fn with_mirror(&self, coordinator: Coordinator) -> Coordinator {
        let Some(config) = &self.delta else {
            return coordinator;
        };
        let world = Arc::new(World {
            rng: Mutex::new(Rng(1)),
            faults_on: AtomicBool::new(false),
            counts: Mutex::new(BTreeMap::new()),
            trace: Mutex::new(Vec::new()),
            delivered: Mutex::new(BTreeSet::new()),
        });
        coordinator.with_mirror(Arc::new(super::delta::SimMirror::new(
            config,
            Arc::new(FaultyStorage::new(self.recorder.clone())),
            self.recorder.clone(),
            None,
            world,
            self.mirror_failure.clone(),
        )))
    }

    /// The invariants after `batches` were acknowledged, once the scheduled services ran past the retired
    /// grace (they delete a straggler's markers).
    pub(super) async fn check(&self, batches: &[&[Msg]]) -> Result<(), Failure> {
        self.check_model(batches).await.map(|_| ())
    }

    /// As [`Table::check`], returning the model the table was checked against.
    pub(super) async fn check_model(&self, batches: &[&[Msg]]) -> Result<Model, Failure> {
        tokio::time::sleep(Duration::from_millis(RETIRED_GRACE_MS + 1_000)).await;
        let clock = self.clocks[0].clone();
        Coordinator::new(
            self.recorder.clone(),
            Arc::new(self.lock.contender().with_clock(clock.clone())),
            clock,
            sim_coordinator_config(&self.sink_config, &sim_services()),
        )
        .handle(CoordinatorRequest::Services)
        .await
        .map_err(|e| fail("table services", e.to_string()))?;
        let mut delivered = BTreeSet::new();
        let mut acked_next: BTreeMap<(String, i32), i64> = BTreeMap::new();
        for b in batches {
            let (first, last) = (b[0].offset, b[b.len() - 1].offset);
            delivered.insert((b[0].partition, first, last));
            acked_next.insert((TOPIC.to_string(), b[0].partition), last + 1);
        }
        let all: Vec<Msg> = batches.iter().flat_map(|b| b.iter().cloned()).collect();
        let committed = committed_batches(&self.recorder, &all, &delivered).await?;
        let mut model = Model::default();
        for b in &committed {
            model.apply(b);
        }
        check_invariants(&self.recorder, &model, &acked_next, &sim_services(), false).await?;
        Ok(model)
    }

    /// A coordinator's lock client on this table, with `clock`.
    pub(super) fn lock_with(&self, clock: Arc<SimClock>) -> MemoryLock {
        self.lock.contender().with_clock(clock)
    }
}

pub(super) fn batch_of(msgs: &[Msg]) -> Result<KafkaBatch, Failure> {
    KafkaBatch::from_slice(&esm_payload(msgs)).map_err(|e| fail("setup", e.to_string()))
}

/// See the module doc.
async fn straggler_wakes_after_its_window_closed() -> Result<(), Failure> {
    let table = Table::new(false)?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let (a_msgs, b_msgs) = (trip_msgs(0, "sf"), trip_msgs(1, "nyc"));
    // B joins first (it opens the window), then freezes before its first marker.
    let b_clock = table.clocks[1].clone();
    let held = HeldAt::new(store.clone(), ".hoodie/.temp/", Some(b_clock.clone()));
    let b = table.sink(held.clone(), b_clock, "b").await?;
    let b_batch = batch_of(&b_msgs)?;
    let b_task = tokio::spawn(async move { b.process(b_batch).await });
    held.held.notified().await;
    let a = table
        .sink(store.clone(), table.clocks[2].clone(), "a")
        .await?;
    let report = a
        .process(batch_of(&a_msgs)?)
        .await
        .map_err(|e| fail("writer a commits", e.to_string()))?;
    if report.instant.is_none() {
        return Err(fail("writer a commits", format!("{report:?}")));
    }
    held.release.notify_one();
    // B wakes with its lease over: the invocation fails (or, past the close, starts over in a new window).
    let b_outcome = b_task.await.map_err(|e| fail("no panic", e.to_string()))?;
    // No sweep has run since: whatever B uploaded after waking would be on storage now.
    if let Some((invariant, detail)) = table.recorder.violations().into_iter().next() {
        return Err(fail(invariant, detail));
    }
    match b_outcome {
        // B's lease check stopped its upload, and B wrote its batch again in a later window: the table must
        // then hold it exactly once (checked below), and no file of its first window is visible (above).
        Ok(report) if report.instant.is_some() => {}
        Ok(report) => {
            return Err(fail(
                "the straggler's batch is committed or fails",
                format!("{report:?}"),
            ))
        }
        // The ESM redelivers B's batch.
        Err(_) => {
            let b = table
                .sink(store.clone(), table.clocks[3].clone(), "b2")
                .await?;
            b.process(batch_of(&b_msgs)?)
                .await
                .map_err(|e| fail("the redelivered batch commits", e.to_string()))?;
        }
    }
    table.check(&[&a_msgs, &b_msgs]).await
}

/// See the module doc.
async fn batch_delivered_twice_into_one_window() -> Result<(), Failure> {
    let table = Table::new(true)?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    // A first batch gives every bucket its base file, so that the duplicates append logs.
    let first = trip_msgs(0, "sf");
    let s = table
        .sink(store.clone(), table.clocks[1].clone(), "w0")
        .await?;
    s.process(batch_of(&first)?)
        .await
        .map_err(|e| fail("batches commit", e.to_string()))?;
    let second: Vec<Msg> = first
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.offset += 3;
            m
        })
        .collect();
    // x joins and pauses before its first upload until y has joined the same window.
    let held = HeldAt::new(
        store.clone(),
        ".hoodie/.temp/",
        Some(table.clocks[2].clone()),
    );
    let x = table
        .sink(held.clone(), table.clocks[2].clone(), "x")
        .await?;
    let y = table
        .sink(store.clone(), table.clocks[3].clone(), "y")
        .await?;
    let (bx, by) = (batch_of(&second)?, batch_of(&second)?);
    let x_task = tokio::spawn(async move { x.process(bx).await });
    held.held.notified().await;
    let y_task = tokio::spawn(async move { y.process(by).await });
    loop {
        let members = store
            .list(hudi_sink::commit::window::WINDOW_DIR)
            .await
            .map_err(|e| fail("setup", e.to_string()))?
            .iter()
            .filter(|o| o.path.contains("/member."))
            .count();
        if members >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    held.release.notify_one();
    for task in [x_task, y_task] {
        task.await
            .map_err(|e| fail("no panic", e.to_string()))?
            .map_err(|e| fail("batches commit", e.to_string()))?;
    }
    table.check(&[&first, &second]).await
}

pub(super) fn straggler_wakes_after_its_window_closed_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(straggler_wakes_after_its_window_closed())
}

pub(super) fn batch_delivered_twice_into_one_window_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(batch_delivered_twice_into_one_window())
}
