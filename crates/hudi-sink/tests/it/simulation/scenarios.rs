//! Scripted scenarios: interleavings that the random seeds cannot reach without also opening the one window
//! no mechanism closes (a commit file's creation delayed in flight past the lease after the lease was proven,
//! for an instant that is then given up; see docs/limits.md). Each runs on its own paused runtime and is
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
pub(super) struct GatedCommit {
    pub(super) inner: InProcessClient,
    pub(super) at_commit: Arc<Notify>,
    pub(super) go: Arc<Notify>,
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

pub(super) fn trip_msgs(partition: i32, city: &str) -> Vec<Msg> {
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

/// The table properties of a scenario (its paths are never touched: the table lives in memory).
pub(super) fn scenario_props() -> BTreeMap<String, String> {
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
    props
}

/// See the module doc.
async fn duplicated_commit_with_a_held_create() -> Result<(), Failure> {
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let recorder = Arc::new(Recorder::new(Arc::new(MemoryStorage::new(
        "memory://scenario",
    ))));
    let store: Arc<dyn Storage> = recorder.clone();
    let mut props = scenario_props();
    // The per-batch protocol: the interleaving is one of its commit requests.
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
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
    let committed = committed_batches(&recorder, &all, &delivered).await?;
    let mut model = Model::default();
    for b in &committed {
        model.apply(b);
    }
    let acked_next: BTreeMap<(String, i32), i64> =
        [((TOPIC.to_string(), 0), 4), ((TOPIC.to_string(), 1), 4)]
            .into_iter()
            .collect();
    check_invariants(&recorder, &model, &acked_next, &sim_services(), false).await?;
    Ok(())
}

/// **A replacecommit archived before its replaced group is cleaned.** Another engine replaces a file group
/// (an insert_overwrite: `<t>.replacecommit` naming the group in `partitionToReplaceFileIds`, its rows in a
/// new group); this table is not cleaned (`hoodie.clean.automatic=false`), so the replaced group's files stay.
/// More batches commit, and archival runs. Were the replacecommit archived, readers would no longer know the
/// group was replaced, and its rows would come back next to their copies.
async fn uncleaned_replacecommit_stays_on_the_timeline() -> Result<(), Failure> {
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let recorder = Arc::new(Recorder::new(Arc::new(MemoryStorage::new(
        "memory://replace-scenario",
    ))));
    let store: Arc<dyn Storage> = recorder.clone();
    let props = scenario_props();
    let config = WriteConfig::from_properties(props.clone()).map_err(|e| setup(&e))?;
    let sink_config = SinkConfig::from_properties(&props).map_err(|e| setup(&e))?;
    let schema = AvroSchema::parse(SCHEMA).map_err(|e| setup(&e))?;
    let clock = Arc::new(SimClock::new(0));
    let options = LeaseOptions::hudi(Duration::from_millis(LEASE_MS))
        .with_refresh_period(Duration::from_millis(250));
    let services = ServicesConfig {
        clean_automatic: false,
        ..sim_services()
    };
    let coordinator = Coordinator::new(
        store.clone(),
        Arc::new(MemoryLock::new("trips", options).with_clock(clock.clone())),
        clock.clone(),
        CoordinatorConfig {
            services: services.clone(),
            ..sim_coordinator_config(&sink_config, &services)
        },
    );
    let writer = TableWriter::create_or_open(store.clone(), clock.clone(), config, Some(schema))
        .await
        .map_err(|e| setup(&e))?;
    let sink = KafkaSink::new(
        writer,
        Arc::new(InProcessClient::new(coordinator.clone())),
        Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
            "memory://dead-letters",
        )))),
        clock.clone(),
        sink_config,
        "w",
    );
    let mut all = Vec::new();
    let mut delivered = BTreeSet::new();
    for round in 0..8i64 {
        let msgs: Vec<Msg> = trip_msgs(0, "sf")
            .into_iter()
            .map(|mut m| {
                m.offset += 3 * round;
                m
            })
            .collect();
        delivered.insert((0, 1 + 3 * round, 3 + 3 * round));
        let batch = KafkaBatch::from_slice(&esm_payload(&msgs)).map_err(|e| setup(&e))?;
        sink.process(batch)
            .await
            .map_err(|e| fail("batches commit", e.to_string()))?;
        all.extend(msgs);
        tokio::time::sleep(Duration::from_millis(10)).await;
        if round == 0 {
            // The other engine's insert_overwrite of the first group: same rows, new group.
            let timeline = Timeline::load(store.as_ref())
                .await
                .map_err(|e| setup(&e))?;
            let slices = latest_file_slices(store.as_ref(), &timeline, None)
                .await
                .map_err(|e| setup(&e))?;
            let old = slices.first().ok_or_else(|| setup(&"no file group"))?;
            let bucket = hudi_sink::index::bucket::bucket_id_from_file_id(&old.file_id)
                .ok_or_else(|| setup(&"not a bucket file"))?;
            let new_id = hudi_sink::index::bucket::new_bucket_file_id(bucket);
            let time = hudi_sink::table::instant::InstantTime::next_after(
                clock.as_ref(),
                timeline.last_used_time(),
            );
            let name = format!("{new_id}_0-0-0_{time}.parquet");
            let path = hudi_sink::storage::join_path(&[&old.partition_path, &name]);
            let data = store.get(&old.path()).await.map_err(|e| setup(&e))?;
            let size = data.len() as i64;
            store.put(&path, data).await.map_err(|e| setup(&e))?;
            let mut meta = ReplaceCommitMetadata::default();
            meta.commit.operation_type = "INSERT_OVERWRITE".parse().map_err(|e| setup(&e))?;
            let mut stat =
                hudi_sink::table::commit::WriteStat::new(&new_id, &old.partition_path, &path);
            stat.file_size_in_bytes = size;
            meta.commit.add_write_stat(stat);
            meta.partition_to_replace_file_ids
                .insert(old.partition_path.clone(), vec![old.file_id.clone()]);
            for suffix in ["replacecommit.requested", "replacecommit.inflight"] {
                store
                    .put(&format!(".hoodie/{time}.{suffix}"), Bytes::new())
                    .await
                    .map_err(|e| setup(&e))?;
            }
            store
                .put(
                    &format!(".hoodie/{time}.replacecommit"),
                    Bytes::from(meta.to_json_pretty().map_err(|e| setup(&e))?),
                )
                .await
                .map_err(|e| setup(&e))?;
        }
    }
    coordinator
        .run_services()
        .await
        .map_err(|e| fail("table services", e.to_string()))?;
    let committed = committed_batches(&recorder, &all, &delivered).await?;
    let mut model = Model::default();
    for b in &committed {
        model.apply(b);
    }
    let acked_next: BTreeMap<(String, i32), i64> =
        [((TOPIC.to_string(), 0), 25)].into_iter().collect();
    check_invariants(&recorder, &model, &acked_next, &services, false).await?;
    Ok(())
}

/// The scripted scenarios, by name.
pub(super) const SCENARIOS: &[(&str, Scenario)] = &[
    (
        "duplicated-commit-with-a-held-create",
        duplicated_commit_with_a_held_create_boxed,
    ),
    (
        "uncleaned-replacecommit-stays-on-the-timeline",
        uncleaned_replacecommit_stays_on_the_timeline_boxed,
    ),
    (
        "a-straggler-wakes-after-its-window-closed",
        super::window_scenarios::straggler_wakes_after_its_window_closed_boxed,
    ),
    (
        "a-batch-delivered-twice-into-one-window",
        super::window_scenarios::batch_delivered_twice_into_one_window_boxed,
    ),
    (
        "a-warm-writer-rewrites-files-of-an-evolved-schema",
        super::evolution_scenarios::warm_writer_rewrites_files_of_an_evolved_schema_boxed,
    ),
    (
        "a-narrower-writer-commits-after-an-evolution",
        super::evolution_scenarios::narrower_writer_commits_after_an_evolution_boxed,
    ),
    (
        "windows-commit-while-a-compaction-merges",
        super::compaction_scenarios::windows_commit_while_a_compaction_merges_boxed,
    ),
    (
        "a-compaction-paused-between-its-plan-files-is-rolled-back-twice",
        super::compaction_scenarios::a_compaction_paused_between_its_plan_files_is_rolled_back_twice_boxed,
    ),
    (
        "another-engines-compaction-is-pending-while-windows-commit",
        super::compaction_scenarios::another_engines_compaction_is_pending_while_windows_commit_boxed,
    ),
    (
        "a-foreign-write-completes-below-a-writers-base",
        super::foreign_writer_scenarios::a_foreign_write_completes_below_a_writers_base_boxed,
    ),
    (
        "toast-placeholders-keep-stored-values",
        super::toast_scenarios::toast_placeholders_keep_stored_values_boxed,
    ),
    (
        "toast-placeholders-follow-the-ordering-field",
        super::toast_scenarios::placeholders_follow_the_ordering_field_boxed,
    ),
    (
        "a-failed-compaction-lets-its-uploads-finish",
        super::upload_scenarios::a_failed_compaction_lets_its_uploads_finish_boxed,
    ),
    (
        "rows-moved-to-another-partition-are-stored-once",
        super::partition_move_scenarios::rows_moved_to_another_partition_are_stored_once_boxed,
    ),
    (
        "keys-recreated-in-their-tombstones-batch",
        super::recreate_scenarios::keys_recreated_in_their_tombstones_batch_boxed,
    ),
    (
        "a-foreign-writer-beats-before-its-instant",
        super::foreign_writer_scenarios::a_foreign_writer_beats_before_its_instant_boxed,
    ),
    (
        "a-compaction-leaves-out-a-group-whose-late-log-recreates-a-key",
        super::compaction_scenarios::recreated_across_the_carry_boxed,
    ),
    (
        "a-failed-delta-mirror-holds-the-cleaner",
        super::delta_scenarios::a_failed_mirror_holds_the_cleaner_boxed,
    ),
    (
        "a-slow-clustering-stays-alive",
        super::clustering_scenarios::a_slow_clustering_stays_alive_boxed,
    ),
];

fn uncleaned_replacecommit_stays_on_the_timeline_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(uncleaned_replacecommit_stays_on_the_timeline())
}

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
