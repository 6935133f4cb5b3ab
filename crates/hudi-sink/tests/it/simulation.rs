//! Deterministic simulation of the exactly-once path under faults: many seeded runs of several writer
//! invocations (`KafkaSink::process`) and their coordinators racing over one table, with the ESM's behaviour
//! modelled, each run checked against the model and the on-storage invariants afterwards.
//!
//! **Determinism.** Each seed runs on its own tokio `current_thread` runtime with paused time: one thread
//! polls every task in FIFO order, and time only moves when every task waits, jumping to the next timer.
//! Every clock the library sees ([`SimClock`]) is derived from that virtual time, every random choice
//! (faults, scheduling noise, batch boundaries, which invocation goes where, the sink's backoff jitter)
//! comes from one SplitMix64 generator seeded by the seed, and the in-memory backends have no hidden
//! concurrency. So the same seed replays the same run (`same_seed_same_run` checks it). Random file ids
//! (UUIDs) only change names, never the order of events. Interleavings come from seeded yields and
//! sleeps before each storage call, and from the faults below.
//!
//! **Faults** (counted by kind in the summary): storage calls failing before their effect or after it
//! (answer lost), slow calls, scheduling noise that reorders tasks, coordinator requests or answers lost,
//! lock acquisition failing, a crash of the invocation at any storage call (before or after its effect:
//! the whole future is dropped, heartbeats stop, the lock stays held until its lease runs out), a freeze of
//! the invocation's process longer than the lock lease and the heartbeat tolerance (its clock stops, all its
//! calls wait; others steal the lock and roll back its instant) at a random call or right after the
//! coordinator checked the last file of a commit (before its lease proof), and one machine whose clock is
//! skewed. [`scenarios`] adds scripted interleavings that random seeds must leave out.
//!
//! **ESM.** Each Kafka partition has one poller delivering its batches in order; a failed invocation is
//! redelivered (sometimes with a larger batch) until one succeeds; a rebalance sometimes delivers the same
//! batch to a second invocation at once, or late.
//!
//! **Invariants** after each run (see [`check_invariants`]): the table read through the library equals the
//! model (the stream applied batch by batch as the commits' checkpoints cut it, each cut checked against a
//! delivered batch) row for row with no duplicate key; the checkpoint never moves backwards in timeline order
//! and ends at the acknowledged offsets; every file of a completed commit exists with its recorded size; nothing of a failed
//! instant is left after the final commit; the timeline is valid; on a bucket-indexed table each bucket has
//! one live file group. Every coordinator also syncs a Glue
//! catalog ([`catalog`]) whose calls fail or lose their answers at random: no watermark it is given may cover
//! a partition it lacks, and after the run it equals the table. A sample of seeds also runs on the local
//! file system and is read back with hudi-rs.
//!
//! **Delta mirror.** A third of the seeds turn the Delta Lake mirror on (`hudi.sink.delta.mirror`): every
//! coordinator mirrors its commits into `_delta_log/` under the same faults and crashes; see [`delta`] for
//! how its engine runs and the invariants it keeps.
//!
//! **Clustering.** A sixth of the seeds write an insert table (no index; every record a new key) that clusters
//! inline after every commit, so that clustering plans, rewrites and completes under the same faults, crashes
//! and zombies, half of them copying row groups as encoded and half decoding them; the model then holds every
//! record once, and each replacecommit must replace file groups that were written and not replaced before.
//!
//! Environment: `SIM_SEEDS=n` (default 500), `SIM_SEED=s` (one seed), `SIM_MUTATION=<name>` (one mutation),
//! `SIM_DELTA=0` (no seed mirrors into Delta).
//! A failing seed prints the command that replays it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use async_trait::async_trait;
use bytes::Bytes;
use hudi_sink::clock::Clock;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::{LeaseOptions, Lock, LockError, LockGuard, LockRecord, MemoryLock};
use hudi_sink::mutation::Mutation;
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::clean::last_completed_clean;
use hudi_sink::services::ServicesConfig;
use hudi_sink::sink::{KafkaSink, ProcessOptions, SinkConfig};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultAction, FaultRule, Operation, PathFilter};
use hudi_sink::storage::{
    BufferedUpload, FaultyStorage, LocalStorage, MemoryStorage, MultipartUpload, ObjectMeta,
    PutOutcome, Storage, StorageResult,
};
use hudi_sink::table::commit::{Checkpoint, CommitMetadata, ReplaceCommitMetadata};
use hudi_sink::table::instant::Action;
use hudi_sink::table::timeline::RETIRED_DIR;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use hudi_sink::transport::{CoordinatorClient, InProcessClient};
use hudi_sink::write::WriteConfig;
use hudi_sink::write::{TableWriter, WriteError};

use crate::model::{esm_payload, local_props, stream_with_seed, Model, Msg, Trip, SCHEMA};

mod catalog;
mod clustered;
mod clustering_scenarios;
mod compaction_scenarios;
mod delta;
mod delta_scenarios;
mod evolution_scenarios;
mod fakes;
mod foreign_writer_scenarios;
mod invariants;
mod invocation;
mod partition_move_scenarios;
mod recreate_scenarios;
use invocation::{invoke, poller, Outcome};
mod routing;
mod runs;
mod scenarios;
mod toast_scenarios;
mod upload_scenarios;
mod window_invariant;
mod window_scenarios;

use fakes::*;
use runs::*;

use catalog::{check_catalog, sim_catalog_config, SimCatalog};
use clustered::{clustered_services, insert_only, insert_table, is_clustered};
use invariants::{check_invariants, committed_batches, Recorder};

const TOPIC: &str = "trips";
/// Lock lease (virtual time).
const LEASE_MS: u64 = 6_000;
/// Heartbeat interval of pending instants, and how many may be missed.
const BEAT_MS: u64 = 1_000;
const BEAT_MISSES: u32 = 3;

/// Rolled-back times are kept from archival this long (virtual time): longer than any freeze, so a zombie
/// can no longer upload when the sweep forgets the time.
const RETIRED_GRACE_MS: u64 = 8 * LEASE_MS;

/// The table services of every coordinator of a run: tight retention, so that cleans and archivals happen
/// within a run's few dozen commits, concurrently with writers, zombies and faults.
fn sim_services() -> ServicesConfig {
    ServicesConfig {
        commits_retained: 2,
        keep_min_commits: 3,
        keep_max_commits: 5,
        retired_grace: Duration::from_millis(RETIRED_GRACE_MS),
        ..ServicesConfig::default()
    }
}

/// A run's services: one run in three keeps file versions instead of commits (that policy has no earliest
/// commit to retain, so only the pending-instant guard keeps archival off a running write).
fn sim_services_for(rng: &mut Rng) -> ServicesConfig {
    if rng.chance(33) {
        ServicesConfig {
            cleaner_policy: hudi_sink::services::CleanerPolicy::KeepLatestFileVersions,
            file_versions_retained: 2,
            ..sim_services()
        }
    } else {
        sim_services()
    }
}

/// The coordinator settings of a run.
fn sim_coordinator_config(sink: &SinkConfig, services: &ServicesConfig) -> CoordinatorConfig {
    CoordinatorConfig {
        lock_wait: Duration::from_secs(120),
        heartbeat_tolerance: sink.heartbeat_tolerance(),
        services: services.clone(),
    }
}

/// SplitMix64: small, seedable, and the same everywhere.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A machine's clock: the runtime's virtual time, plus a skew, and stopped while the machine is frozen.
#[derive(Debug)]
struct SimClock {
    epoch_ms: i64,
    start: tokio::time::Instant,
    skew_ms: i64,
    frozen_at: Mutex<Option<i64>>,
}

impl SimClock {
    fn new(skew_ms: i64) -> Self {
        Self {
            epoch_ms: 1_700_000_000_000,
            start: tokio::time::Instant::now(),
            skew_ms,
            frozen_at: Mutex::new(None),
        }
    }

    fn raw(&self) -> i64 {
        self.epoch_ms + self.start.elapsed().as_millis() as i64
    }

    fn freeze(&self) {
        *lock(&self.frozen_at) = Some(self.raw());
    }

    fn thaw(&self) {
        *lock(&self.frozen_at) = None;
    }
}

impl Clock for SimClock {
    fn now_millis(&self) -> i64 {
        lock(&self.frozen_at).unwrap_or_else(|| self.raw()) + self.skew_ms
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one run shares: the generator, the fault switch, counters and the event trace.
#[derive(Debug)]
struct World {
    rng: Mutex<Rng>,
    faults_on: AtomicBool,
    counts: Mutex<BTreeMap<&'static str, u64>>,
    trace: Mutex<Vec<String>>,
    /// Every batch handed to an invocation, per Kafka partition: (partition, first offset, last offset).
    delivered: Mutex<BTreeSet<(i32, i64, i64)>>,
}

impl World {
    fn roll(&self, n: u64) -> u64 {
        lock(&self.rng).below(n)
    }

    fn chance(&self, percent: u64) -> bool {
        self.faults_on.load(Ordering::SeqCst) && lock(&self.rng).chance(percent)
    }

    fn count(&self, kind: &'static str) {
        *lock(&self.counts).entry(kind).or_default() += 1;
    }

    fn trace(&self, line: String) {
        if std::env::var_os("SIM_TRACE").is_some() {
            eprintln!("sim: {line}");
        }
        lock(&self.trace).push(line);
    }
}

/// Faults planned for one invocation (one Lambda process running one batch).
#[derive(Debug)]
struct Plan {
    calls: AtomicU64,
    crash_at: Option<u64>,
    crash_after_effect: bool,
    freeze_at: Option<u64>,
    freeze_ms: u64,
    /// Freeze the process once its coordinator has checked the last file of a commit, before it proves its
    /// lease: the window that only lease fencing closes.
    pause_before_fence: bool,
    /// Base-file checks of the commit in progress left before that freeze (0: none armed).
    checks_until_pause: AtomicU64,
    crashed: AtomicBool,
    crash: tokio::sync::Notify,
    frozen: AtomicBool,
    clock: Arc<SimClock>,
    /// Multipart uploads started and neither completed nor aborted: S3 keeps the parts of one dropped
    /// half-way (billed, never an object), and a local upload's blocking task finishes after its caller.
    open_uploads: AtomicU64,
}

impl Plan {
    async fn crash_now(&self) {
        self.crashed.store(true, Ordering::SeqCst);
        self.crash.notify_one();
        std::future::pending::<()>().await;
    }
}

/// One run's fixed parts.
struct Ctx {
    world: Arc<World>,
    faulty: Arc<FaultyStorage>,
    dead_letters: Arc<dyn Storage>,
    lock: MemoryLock,
    clocks: Vec<Arc<SimClock>>,
    config: WriteConfig,
    sink_config: SinkConfig,
    services: ServicesConfig,
    schema: AvroSchema,
    invocations: AtomicU64,
    late: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The Glue catalog every coordinator of the run syncs.
    catalog: Arc<SimCatalog>,
    /// The Delta mirror's settings, when the table's properties turn it on.
    delta: Option<hudi_sink::delta::DeltaConfig>,
    /// The true store behind the faults (the mirror's checks read it).
    truth: Arc<Recorder>,
    /// The first invariant a Delta mirror step broke.
    mirror_failure: Arc<Mutex<Option<Failure>>>,
}

/// A coordinator's Delta mirror when the table has one; `plan` is its invocation's (`None`: the scheduled run).
fn sim_mirror(
    ctx: &Ctx,
    plan: Option<Arc<Plan>>,
) -> Option<Arc<dyn hudi_sink::commit::CommitMirror>> {
    let config = ctx.delta.as_ref()?;
    Some(Arc::new(delta::SimMirror::new(
        config,
        ctx.faulty.clone(),
        ctx.truth.clone(),
        plan,
        ctx.world.clone(),
        ctx.mirror_failure.clone(),
    )))
}

/// A coordinator's catalog sync, as the coordinator Lambda builds it.
fn sim_catalog_sync(ctx: &Ctx) -> Arc<hudi_sink::catalog::CatalogSync> {
    Arc::new(hudi_sink::catalog::CatalogSync::new(
        ctx.catalog.clone(),
        sim_catalog_config(),
        "memory://sim",
    ))
}

/// What a run did.
#[derive(Debug, Default, Clone)]
struct RunStats {
    invocations: u64,
    commits: u64,
    faults: BTreeMap<&'static str, u64>,
    /// What the table services did (data files deleted include rollbacks'), by kind.
    services: BTreeMap<&'static str, u64>,
    trace: Vec<String>,
    snapshot: Vec<(String, u64)>,
}

/// A failed seed: which invariant and why.
#[derive(Debug, Clone)]
struct Failure {
    invariant: &'static str,
    detail: String,
}

fn fail(invariant: &'static str, detail: impl Into<String>) -> Failure {
    Failure {
        invariant,
        detail: detail.into(),
    }
}

/// Runs one seed on a fresh single-threaded runtime with paused time.
fn run_seed(seed: u64, backend: &Backend, mutation: Option<Mutation>) -> Result<RunStats, Failure> {
    on_paused_runtime(mutation, simulate(seed, backend))
}

/// Runs `work` on a fresh single-threaded runtime with paused time and `mutation` switched off; a panic
/// becomes a failure of the "no panic" invariant. `SIM_TRACE=1` prints the library's logs on stderr.
fn on_paused_runtime<T>(
    mutation: Option<Mutation>,
    work: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    set_mutation(mutation);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| fail("setup", e.to_string()))?;
    let _logs = std::env::var_os("SIM_TRACE").map(|_| {
        tracing::subscriber::set_default(
            tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_max_level(tracing::Level::INFO)
                .finish(),
        )
    });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(work)));
    drop(rt);
    set_mutation(None);
    result.unwrap_or_else(|p| {
        Err(fail(
            "no panic",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ))
    })
}

fn set_mutation(mutation: Option<Mutation>) {
    #[cfg(feature = "mutations")]
    hudi_sink::mutation::set_active(mutation);
    #[cfg(not(feature = "mutations"))]
    assert!(mutation.is_none(), "mutations need the `mutations` feature");
}

/// A random fault; on a merge-on-read table (`mor`) some aim at deltacommits, log files and compactions.
fn fault_rule(rng: &mut Rng, mor: bool) -> FaultRule {
    let op = Operation::ALL[rng.below(Operation::ALL.len() as u64) as usize];
    let action = match rng.below(3) {
        0 if op.is_write() => FaultAction::EffectThenFail,
        1 => FaultAction::Delay(Duration::from_millis(1 + rng.below(3_000))),
        _ => FaultAction::Fail,
    };
    let path = match rng.below(8) {
        0 => PathFilter::Prefix(".hoodie/".into()),
        1 => PathFilter::Suffix(".parquet".into()),
        2 if mor => PathFilter::Suffix(".deltacommit".into()),
        2 => PathFilter::Suffix(".commit".into()),
        3 => PathFilter::Suffix(".inflight".into()),
        4 => PathFilter::Prefix(".hoodie/.temp/".into()),
        5 => PathFilter::Prefix(".hoodie/.heartbeat/".into()),
        6 if mor => PathFilter::Contains(".log.".into()),
        7 if mor => PathFilter::Contains(".compaction".into()),
        _ => PathFilter::Any,
    };
    let rule = match action {
        FaultAction::Fail => FaultRule::fail(op),
        FaultAction::EffectThenFail => FaultRule::effect_then_fail(op),
        FaultAction::Delay(d) => FaultRule::delay(op, d),
    };
    rule.with_path(path)
        .on_call(1 + rng.below(150))
        .times(1 + rng.below(3))
}

async fn simulate(seed: u64, backend: &Backend) -> Result<RunStats, Failure> {
    let mut rng = Rng(seed ^ 0x5151_5151);
    let world = Arc::new(World {
        rng: Mutex::new(Rng(rng.next())),
        faults_on: AtomicBool::new(false),
        counts: Mutex::new(BTreeMap::new()),
        trace: Mutex::new(Vec::new()),
        delivered: Mutex::new(BTreeSet::new()),
    });
    let real: Arc<dyn Storage> = match backend {
        Backend::Memory => Arc::new(MemoryStorage::new(format!("memory://sim-{seed}"))),
        Backend::Local(dir) => Arc::new(LocalStorage::new(dir)),
        Backend::Moto(bucket) => Arc::new(BlockingS3::new(bucket, &format!("sim-{seed}"))),
    };
    let inner = Arc::new(Recorder::new(real));
    let faulty = Arc::new(FaultyStorage::new(inner.clone()));
    let dead_letters: Arc<dyn Storage> = Arc::new(MemoryStorage::new("memory://dead-letters"));
    let dir = std::path::Path::new("/nonexistent-sim");
    let mut props = local_props(
        &dir.join("trips"),
        &dir.join("trips.avsc"),
        &dir.join("dead"),
    );
    // Odd seeds write merge-on-read (decided without drawing from the run's generator, so that the even
    // seeds run as they always have), compacting after two deltacommits per file group so that compactions
    // race the writers.
    let mor = seed % 2 == 1;
    if mor {
        props.insert("hoodie.table.type".into(), "MERGE_ON_READ".into());
    }
    // Clustered seeds write an insert table, clustered inline (`clustered.rs`).
    let clustered = is_clustered(seed);
    if clustered {
        insert_table(&mut props);
    }
    // A third of the seeds mirror the table into a Delta log (decided without drawing from the run's
    // generator), copy-on-write and merge-on-read alike; `SIM_DELTA=0` turns it off for every seed.
    if seed % 3 == 0 && std::env::var("SIM_DELTA").map_or(true, |v| v != "0") {
        props.insert(hudi_sink::delta::config::MIRROR_KEY.into(), "true".into());
    }
    let delta = delta::delta_config(&props)?;
    for (k, v) in [
        ("hoodie.parquet.compression.codec", "uncompressed"),
        ("hoodie.index.bloom.num_entries", "64"),
        ("hoodie.bloom.index.filter.dynamic.max.entries", "256"),
        ("hudi.sink.heartbeat.interval.ms", &BEAT_MS.to_string()),
        (
            "hudi.sink.heartbeat.tolerable.misses",
            &BEAT_MISSES.to_string(),
        ),
        ("hudi.sink.retry.backoff.ms", "50"),
        ("hudi.sink.commit.max.attempts", "8"),
        // Every invocation joins the window of its interval: several partitions' batches share an instant.
        ("hudi.sink.commit.interval.ms", "1000"),
    ] {
        props.insert(k.to_string(), v.to_string());
    }
    let config = WriteConfig::from_properties(props.clone())
        .map_err(|e| fail("setup", format!("config: {e}")))?;
    let sink_config =
        SinkConfig::from_properties(&props).map_err(|e| fail("setup", format!("{e}")))?;
    let schema = AvroSchema::parse(SCHEMA).map_err(|e| fail("setup", format!("{e}")))?;
    // Three machines; one of them, in some runs, with a clock that is off by up to two seconds.
    let skew = if rng.chance(50) {
        rng.below(4_000) as i64 - 2_000
    } else {
        0
    };
    let clocks = vec![
        Arc::new(SimClock::new(0)),
        Arc::new(SimClock::new(0)),
        Arc::new(SimClock::new(skew)),
    ];
    if skew != 0 {
        world.count("machine with a skewed clock");
    }
    let options = LeaseOptions::hudi(Duration::from_millis(LEASE_MS))
        .with_refresh_period(Duration::from_millis(250));
    let base_lock = MemoryLock::new("trips", options).with_clock(clocks[0].clone());
    TableWriter::create_or_open(
        faulty.clone(),
        clocks[0].clone(),
        config.clone(),
        Some(schema.clone()),
    )
    .await
    .map_err(|e| fail("setup", format!("create table: {e}")))?;
    for _ in 0..(1 + rng.below(4)) {
        faulty.add_rule(fault_rule(&mut rng, mor));
    }
    let partitions = 2 + rng.below(2) as i32;
    let per_partition = 12 + rng.below(20) as i64;
    let keys = 3 + rng.below(5);
    let mut msgs = stream_with_seed(TOPIC, partitions, per_partition, keys, rng.next());
    if clustered {
        insert_only(&mut msgs);
    }
    if mor {
        // Hudi's merge-on-read readers merge a record that follows a tombstone by ordering value against the
        // version in the base file (docs/semantics.md, "Merge-on-read tables"), where copy-on-write re-creates the key:
        // the same stream gives the two table types different tables. Ordering values that never decrease
        // per key make the two rules agree, so that one model checks both.
        monotonic_ordering(&mut msgs);
    }
    let ctx = Arc::new(Ctx {
        world: world.clone(),
        faulty: faulty.clone(),
        dead_letters,
        lock: base_lock,
        clocks,
        config,
        sink_config,
        services: ServicesConfig {
            compact_max_delta_commits: 2,
            // Half of the merge-on-read seeds merge under the lock (`hudi.sink.compaction.merge.locked`),
            // decided without drawing from the run's generator.
            compaction_merge_locked: seed % 4 == 3,
            ..clustered_services(seed, sim_services_for(&mut rng))
        },
        schema,
        invocations: AtomicU64::new(0),
        late: Mutex::new(Vec::new()),
        catalog: Arc::new(SimCatalog::new(world.clone(), inner.clone())),
        delta,
        truth: inner.clone(),
        mirror_failure: Arc::new(Mutex::new(None)),
    });
    world.faults_on.store(true, Ordering::SeqCst);
    let mut pollers = Vec::new();
    for p in 0..partitions {
        let mine: Vec<Msg> = msgs.iter().filter(|m| m.partition == p).cloned().collect();
        let mut cuts = vec![0];
        while *cuts.last().unwrap_or(&0) < mine.len() {
            let next = cuts.last().unwrap_or(&0) + 3 + rng.below(8) as usize;
            cuts.push(next.min(mine.len()));
        }
        pollers.push(tokio::spawn(poller(ctx.clone(), mine, cuts)));
    }
    let mut acked: Vec<Vec<Msg>> = Vec::new();
    for p in pollers {
        let batches = p
            .await
            .map_err(|e| fail("no panic", e.to_string()))?
            .map_err(|e| fail("liveness", e))?;
        acked.extend(batches);
    }
    loop {
        let late: Vec<_> = std::mem::take(&mut *lock(&ctx.late));
        if late.is_empty() {
            break;
        }
        for h in late {
            h.await.map_err(|e| fail("no panic", e.to_string()))?;
        }
    }
    // Quiet period: faults off, every heartbeat of a failed write expires, then one clean batch per
    // partition commits (and rolls back whatever failed before it).
    world.faults_on.store(false, Ordering::SeqCst);
    faulty.clear_rules();
    tokio::time::sleep(Duration::from_millis(
        LEASE_MS * 2 + BEAT_MS * BEAT_MISSES as u64 * 2 + 3_000,
    ))
    .await;
    let mut last = Vec::new();
    for p in 0..partitions {
        let offset = msgs
            .iter()
            .filter(|m| m.partition == p)
            .map(|m| m.offset)
            .max()
            .unwrap_or(0)
            + 1;
        let uuid = format!("final-{p}");
        last.push(Msg {
            topic: TOPIC.into(),
            partition: p,
            offset,
            key: Some(uuid.clone()),
            value: Some(
                Trip {
                    uuid,
                    ts: 1_000,
                    rider: "last".into(),
                    fare: 1.0,
                    city: "sf".into(),
                    deleted: false,
                }
                .json(),
            ),
        });
    }
    match invoke(&ctx, &last, true).await {
        Outcome::Ok(r) if r.instant.is_some() => {}
        Outcome::Ok(r) => return Err(fail("final commit", format!("nothing committed: {r:?}"))),
        Outcome::Failed(e) => return Err(fail("final commit", e)),
        Outcome::Crashed => return Err(fail("final commit", "crashed")),
    }
    // By now every write that failed has an expired heartbeat, and the final batch's begin and commit ran
    // under the lock after that: they must have rolled every one back. (The services below would, too, but a
    // failed write left pending until a scheduled run blocks Hudi's cleaner and archiver, which stop at the
    // oldest pending instant, and keeps its files on storage.)
    let pending: Vec<String> = Timeline::load(inner.as_ref())
        .await
        .map_err(|e| fail("read", e.to_string()))?
        .pending()
        .iter()
        .map(|i| i.time.to_string())
        .collect();
    if !pending.is_empty() {
        return Err(fail(
            "failed writes rolled back",
            format!("still pending after the final batch: {pending:?}"),
        ));
    }
    let mut all = msgs.clone();
    all.extend(last.iter().cloned());
    acked.push(last);
    // The scheduled table services run (as the coordinator function's schedule does): they sweep files
    // that zombie writers left after their instant was rolled back.
    // It runs once every rolled-back time is past its grace, so that archival is free to cut the timeline.
    tokio::time::sleep(Duration::from_millis(RETIRED_GRACE_MS + 1_000)).await;
    let services = Coordinator::new(
        ctx.faulty.clone(),
        Arc::new(ctx.lock.contender().with_clock(ctx.clocks[0].clone())),
        ctx.clocks[0].clone(),
        sim_coordinator_config(&ctx.sink_config, &ctx.services),
    )
    .with_catalog(sim_catalog_sync(&ctx))
    .with_compaction(&ctx.config)
    .with_clustering(ctx.config.clone());
    let services = match sim_mirror(&ctx, None) {
        Some(mirror) => services.with_mirror(mirror),
        None => services,
    };
    if let Err(e) = services.handle(CoordinatorRequest::Services).await {
        return Err(fail("table services", e.to_string()));
    }
    if let Some(f) = lock(&ctx.mirror_failure).clone() {
        return Err(f);
    }
    if let Some(config) = &ctx.delta {
        delta::check_caught_up(ctx.truth.clone(), config, services.take_mirror_report()).await?;
    }
    // The model applies each committed batch once, in commit order. Batch boundaries matter (a record after a
    // `_hoodie_is_deleted` row in the same batch loses to it, in a later batch it recreates the key), and the
    // batch that commits may be a rebalance duplicate of a smaller delivery than the one acknowledged, so
    // the boundaries come from the commits' checkpoints, each checked against a delivered batch; the
    // contents come from the stream.
    let delivered = lock(&world.delivered).clone();
    let committed = committed_batches(inner.as_ref(), &all, &delivered).await?;
    let mut model = Model::default();
    for b in &committed {
        model.apply(b);
    }
    // Every acknowledged record is covered by the final checkpoint, and nothing beyond.
    let mut acked_next: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for m in acked.iter().flatten() {
        let e = acked_next
            .entry((m.topic.clone(), m.partition))
            .or_insert(0);
        *e = (*e).max(m.offset + 1);
    }
    let commits =
        check_invariants(inner.as_ref(), &model, &acked_next, &ctx.services, true).await?;
    // The services run ended with a catalog sync, faults off: the catalog must now equal the table.
    if let Some(report) = services.take_catalog_report() {
        if let Some(e) = report.error {
            return Err(fail(
                "catalog equals the table",
                format!("final sync failed: {e}"),
            ));
        }
    }
    check_catalog(&ctx.catalog, inner.as_ref()).await?;
    world.trace(format!("catalog updates: {}", ctx.catalog.updates()));
    let mut faults = lock(&world.counts).clone();
    let injected: u64 = faulty
        .calls()
        .iter()
        .filter(|c| c.failure.is_some())
        .count() as u64;
    let delayed: u64 = faulty
        .calls()
        .iter()
        .filter(|c| !c.delayed.is_zero())
        .count() as u64;
    *faults.entry("storage call failed (injected)").or_default() += injected;
    *faults.entry("storage call slowed").or_default() += delayed;
    let snapshot = inner
        .list("")
        .await
        .map_err(|e| fail("read", e.to_string()))?
        .into_iter()
        .filter(|o| o.path.starts_with(".hoodie/") && !o.path.contains("/."))
        .map(|o| (o.path, o.size))
        .collect();
    let trace = lock(&world.trace).clone();
    Ok(RunStats {
        invocations: ctx.invocations.load(Ordering::SeqCst),
        commits,
        faults,
        services: inner.services(),
        trace,
        snapshot,
    })
}

/// The invariants of a finished run, read from the true store behind the faults. Returns the commit count.
fn trips_of(b: &RecordBatch) -> Result<Vec<Trip>, String> {
    let col = |name: &str| {
        b.column_by_name(name)
            .cloned()
            .ok_or_else(|| format!("no column {name}"))
    };
    let (key, uuid, ts, rider, fare, city, del) = (
        col("_hoodie_record_key")?,
        col("uuid")?,
        col("ts")?,
        col("rider")?,
        col("fare")?,
        col("city")?,
        col("_hoodie_is_deleted")?,
    );
    let (key, uuid, rider, city) = (
        key.as_string::<i32>(),
        uuid.as_string::<i32>(),
        rider.as_string::<i32>(),
        city.as_string::<i32>(),
    );
    let (ts, fare, del) = (
        ts.as_primitive::<Int64Type>(),
        fare.as_primitive::<Float64Type>(),
        del.as_boolean(),
    );
    let mut out = Vec::new();
    for i in 0..b.num_rows() {
        if key.value(i) != uuid.value(i) {
            return Err(format!(
                "record key {} for uuid {}",
                key.value(i),
                uuid.value(i)
            ));
        }
        out.push(Trip {
            uuid: uuid.value(i).to_string(),
            ts: ts.value(i),
            rider: rider.value(i).to_string(),
            fare: fare.value(i),
            city: city.value(i).to_string(),
            deleted: !del.is_null(i) && del.value(i),
        });
    }
    Ok(out)
}
