//! The Delta Lake mirror (`hudi.sink.delta.mirror`, docs/delta.md) inside the simulation.
//!
//! **Runtime.** deltalake-core runs its log replay on blocking threads (`spawn_blocking`), whose storage calls
//! its engine sends to a runtime of its own; under the simulation's paused clock that work could neither
//! sleep (time does not advance while a blocking task runs) nor be dropped by a crash. So a mirror step runs
//! whole on a real-time runtime ([`on_mirror_runtime`]) while the simulation's thread waits: nothing else of
//! the run moves meanwhile, and the step takes no virtual time. Its storage stays the run's own: the shared
//! fault-injecting store (its rules and call counts), seen through [`MirrorStorage`], which counts the step's
//! calls among the invocation's and crashes the invocation at the planned call (the step's calls fail from
//! there on, then the process stops where the step returns). The delays and a freeze planned at one of the
//! step's calls are spent on the paused clock once the step returns ([`SimMirror`]).
//!
//! **Invariants.** Checked by the recorder as each Delta version is created ([`DeltaLedger`]): **the Delta
//! log never runs ahead of Hudi** — the instant a version mirrors completed before it, versions follow the
//! completed instants in timeline order (an instant pending below a version's instant comes right after, as a
//! late version), each once, with no completed instant left out. Checked by [`SimMirror`] before and after
//! every step: **every file the latest Delta version lists exists** (the cleaner waits for the mirror), and
//! after a step that caught up, the latest version's files are the base files of Hudi's file-system view as
//! of its instant. After each run, when the services run has settled the table: **the mirror has caught
//! up** ([`check_caught_up`]). Checked by the recorder as each log file is deleted: **the Delta log keeps the
//! version of every instant on Hudi's active timeline** (its expiry deletes only versions of archived
//! instants). The run's mirror has no time-based retention ([`delta_config`]): the simulation's clock is not
//! the wall clock the log's timestamps use, and with none Hudi's timeline alone decides what expires.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hudi_sink::commit::{CommitMirror, MirrorReport};
use hudi_sink::delta::{DeltaConfig, DeltaMirror};
use hudi_sink::storage::faulty::Undelayed;

use super::*;

/// The Delta log directory under the table.
pub(super) const DELTA_LOG: &str = "_delta_log/";

/// Whether `path` is one of the Delta log's files (not a Hudi data file, though checkpoints are parquet).
pub(super) fn is_delta_log(path: &str) -> bool {
    path.starts_with(DELTA_LOG)
}

/// The runtime mirror steps run on: multi-threaded, as deltalake-core's engine wants, and apart from the
/// runtime of moto's S3 calls ([`real_time`]), which a step's storage calls may block on.
fn mirror_runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("mirror runtime")
    })
}

/// Runs `f` to completion on the mirror runtime while this thread waits, with this thread's mutation
/// switched off wherever `f` is polled (the switch is per thread).
pub(super) fn on_mirror_runtime<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let f = WithMutation {
        mutation: current_mutation(),
        inner: Box::pin(f),
    };
    mirror_runtime().spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().expect("the mirror runtime dropped a step")
}

fn current_mutation() -> Option<Mutation> {
    #[cfg(feature = "mutations")]
    {
        hudi_sink::mutation::active()
    }
    #[cfg(not(feature = "mutations"))]
    {
        None
    }
}

/// A future polled with `mutation` switched off on the polling thread.
struct WithMutation<T> {
    mutation: Option<Mutation>,
    inner: Pin<Box<dyn Future<Output = T> + Send>>,
}

impl<T> Future for WithMutation<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let before = current_mutation();
        set_mutation(self.mutation);
        let r = self.inner.as_mut().poll(cx);
        set_mutation(before);
        r
    }
}

/// The storage of one mirror step: the run's fault-injecting store with its delays owed, the step's calls
/// counted among its invocation's, and the invocation's crash at its planned call.
#[derive(Debug)]
struct MirrorStorage {
    inner: Arc<Undelayed>,
    plan: Option<Arc<Plan>>,
    world: Arc<World>,
    /// A freeze planned at one of the step's calls, spent once the step returns.
    freeze_owed: AtomicBool,
}

impl MirrorStorage {
    fn crashed(&self, path: &str) -> hudi_sink::storage::StorageError {
        hudi_sink::storage::StorageError::Remote {
            operation: "crashed",
            path: path.to_string(),
            message: "the process crashed during the Delta mirror step".into(),
            retryable: false,
        }
    }

    fn crash(&self, plan: &Plan, kind: &'static str) {
        self.world.count(kind);
        self.world.count("crash during a Delta mirror step");
        plan.crashed.store(true, Ordering::SeqCst);
        plan.crash.notify_one();
    }

    fn before(&self, path: &str) -> StorageResult<u64> {
        let Some(plan) = &self.plan else {
            return Ok(0);
        };
        if plan.crashed.load(Ordering::SeqCst) {
            return Err(self.crashed(path));
        }
        let n = plan.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if plan.freeze_at == Some(n) && self.world.faults_on.load(Ordering::SeqCst) {
            self.freeze_owed.store(true, Ordering::SeqCst);
        }
        if plan.crash_at == Some(n) && !plan.crash_after_effect {
            self.crash(plan, "crash before a storage call");
            return Err(self.crashed(path));
        }
        Ok(n)
    }

    fn after<T>(&self, n: u64, path: &str, r: StorageResult<T>) -> StorageResult<T> {
        match &self.plan {
            Some(plan) if plan.crash_at == Some(n) && plan.crash_after_effect && n > 0 => {
                self.crash(plan, "crash after a storage call took effect");
                Err(self.crashed(path))
            }
            _ => r,
        }
    }
}

#[async_trait]
impl Storage for MirrorStorage {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        let n = self.before(path)?;
        let r = self.inner.get(path).await;
        self.after(n, path, r)
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        let n = self.before(path)?;
        let r = self.inner.get_range(path, range).await;
        self.after(n, path, r)
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        let n = self.before(path)?;
        let r = self.inner.head(path).await;
        self.after(n, path, r)
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        let n = self.before(path)?;
        let r = self.inner.put(path, data).await;
        self.after(n, path, r)
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let n = self.before(path)?;
        let r = self.inner.put_if_absent(path, data).await;
        self.after(n, path, r)
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let n = self.before(prefix)?;
        let r = self.inner.list(prefix).await;
        self.after(n, prefix, r)
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        let n = self.before(path)?;
        let r = self.inner.delete(path).await;
        self.after(n, path, r)
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let first = paths.first().cloned().unwrap_or_default();
        let n = self.before(&first)?;
        let r = self.inner.delete_many(paths).await;
        self.after(n, &first, r)
    }
}

/// A coordinator's Delta mirror in the simulation: the real [`DeltaMirror`], each step run on the mirror
/// runtime over [`MirrorStorage`] and checked before and after against the true store.
#[derive(Debug)]
pub(super) struct SimMirror {
    inner: Arc<DeltaMirror>,
    config: DeltaConfig,
    faulty: Arc<FaultyStorage>,
    truth: Arc<Recorder>,
    /// The invocation whose coordinator this is (`None`: the scheduled run, which never crashes).
    plan: Option<Arc<Plan>>,
    world: Arc<World>,
    /// The first invariant a step broke.
    failure: Arc<Mutex<Option<Failure>>>,
}

impl SimMirror {
    pub(super) fn new(
        config: &DeltaConfig,
        faulty: Arc<FaultyStorage>,
        truth: Arc<Recorder>,
        plan: Option<Arc<Plan>>,
        world: Arc<World>,
        failure: Arc<Mutex<Option<Failure>>>,
    ) -> Self {
        Self {
            inner: Arc::new(DeltaMirror::new(config.clone())),
            config: config.clone(),
            faulty,
            truth,
            plan,
            world,
            failure,
        }
    }

    fn note(&self, r: Result<(), Failure>) {
        if let Err(f) = r {
            lock(&self.failure).get_or_insert(f);
        }
    }
}

#[async_trait]
impl CommitMirror for SimMirror {
    async fn mirror(&self, _storage: &Arc<dyn Storage>, timeline: &Timeline) -> bool {
        let truth = self.truth.clone();
        let base = self.config.base_path.clone();
        self.note(on_mirror_runtime(check_listed_files_exist(
            truth.clone(),
            base.clone(),
        )));
        let undelayed = Arc::new(Undelayed::new(self.faulty.clone()));
        let storage = Arc::new(MirrorStorage {
            inner: undelayed.clone(),
            plan: self.plan.clone(),
            world: self.world.clone(),
            freeze_owed: AtomicBool::new(false),
        });
        let step = {
            let mirror = self.inner.clone();
            let storage: Arc<dyn Storage> = storage.clone();
            let timeline = timeline.clone();
            on_mirror_runtime(async move { mirror.mirror(&storage, &timeline).await })
        };
        let caught_up = step;
        self.world.count(if caught_up {
            "Delta mirror step"
        } else {
            "Delta mirror step failed"
        });
        self.note(on_mirror_runtime(check_listed_files_exist(
            truth.clone(),
            base.clone(),
        )));
        if caught_up {
            self.note(on_mirror_runtime(check_matches_view(truth, base)));
        }
        if let Some(plan) = &self.plan {
            if plan.crashed.load(Ordering::SeqCst) {
                // The process stopped at the planned call: nothing after it runs.
                std::future::pending::<()>().await;
            }
            if storage.freeze_owed.load(Ordering::SeqCst) {
                self.world.count("process frozen past the lease");
                plan.frozen.store(true, Ordering::SeqCst);
                plan.clock.freeze();
                tokio::time::sleep(Duration::from_millis(plan.freeze_ms)).await;
                plan.clock.thaw();
                plan.frozen.store(false, Ordering::SeqCst);
            }
        }
        let owed = undelayed.take_owed();
        if !owed.is_zero() {
            tokio::time::sleep(owed).await;
        }
        caught_up
    }

    fn take_report(&self) -> Option<MirrorReport> {
        self.inner.take_report()
    }
}

fn violated(invariant: &'static str, detail: impl Into<String>) -> Result<(), Failure> {
    Err(fail(invariant, detail))
}

/// The latest Delta version of the table in `truth`, if there is a Delta log.
async fn status(
    truth: Arc<Recorder>,
    base: &str,
) -> Result<Option<hudi_sink::delta::MirrorStatus>, Failure> {
    hudi_sink::delta::status(truth, base)
        .await
        .map_err(|e| fail("readable Delta log", e.to_string()))
}

/// Every file the latest Delta version lists exists.
async fn check_listed_files_exist(truth: Arc<Recorder>, base: String) -> Result<(), Failure> {
    let Some(status) = status(truth.clone(), &base).await? else {
        return Ok(());
    };
    for path in &status.files {
        let found = truth
            .head(path)
            .await
            .map_err(|e| fail("readable table", e.to_string()))?;
        if found.is_none() {
            return violated(
                "every file the latest Delta version lists exists",
                format!(
                    "Delta version {} (Hudi {:?}) lists {path}, which is gone",
                    status.version, status.instant
                ),
            );
        }
    }
    Ok(())
}

/// The latest Delta version's files are the base files of Hudi's view as of its instant.
async fn check_matches_view(truth: Arc<Recorder>, base: String) -> Result<(), Failure> {
    let Some(status) = status(truth.clone(), &base).await? else {
        return Ok(());
    };
    let Some(instant) = &status.instant else {
        return violated(
            "the Delta log never runs ahead of Hudi",
            format!("Delta version {} mirrors no Hudi instant", status.version),
        );
    };
    let timeline = Timeline::load(truth.as_ref())
        .await
        .map_err(|e| fail("readable table", e.to_string()))?;
    let view: BTreeSet<String> = latest_file_slices(truth.as_ref(), &timeline, Some(instant))
        .await
        .map_err(|e| fail("readable table", e.to_string()))?
        .into_iter()
        .map(|s| s.path())
        .collect();
    if status.files != view {
        let extra: Vec<_> = status.files.difference(&view).collect();
        let missing: Vec<_> = view.difference(&status.files).collect();
        return violated(
            "the Delta log never runs ahead of Hudi",
            format!(
                "Delta version {} differs from Hudi's view as of {instant}: lists {extra:?} beyond it, \
                 lacks {missing:?}",
                status.version
            ),
        );
    }
    Ok(())
}

/// After the run settled (the services run, faults off): the latest Delta version mirrors the latest
/// completed instant, with its view's files, each of which exists.
pub(super) async fn check_caught_up(
    truth: Arc<Recorder>,
    config: &DeltaConfig,
    report: Option<MirrorReport>,
) -> Result<(), Failure> {
    const CAUGHT_UP: &str = "the mirror has caught up once the run settles";
    if let Some(e) = report.and_then(|r| r.error) {
        return violated(
            CAUGHT_UP,
            format!("the services run's mirror step failed: {e}"),
        );
    }
    let base = config.base_path.clone();
    on_mirror_runtime(async move {
        let timeline = Timeline::load(truth.as_ref())
            .await
            .map_err(|e| fail("readable table", e.to_string()))?;
        let latest = timeline.completed_commits().last().map(|i| i.time.clone());
        let Some(status) = status(truth.clone(), &base).await? else {
            return violated(CAUGHT_UP, "no Delta log");
        };
        if status.instant != latest {
            return violated(
                CAUGHT_UP,
                format!(
                    "Delta version {} mirrors {:?}, the latest completed instant is {latest:?}",
                    status.version, status.instant
                ),
            );
        }
        check_matches_view(truth.clone(), base.clone()).await?;
        check_listed_files_exist(truth, base).await
    })
}

/// The version of a Delta commit file (`_delta_log/<version>.json`); `None` for any other path.
fn commit_version(path: &str) -> Option<u64> {
    path.strip_prefix(DELTA_LOG)?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// What the recorder knows of the Delta log: every version created, with the Hudi instants it mirrors.
#[derive(Debug, Default)]
pub(super) struct DeltaLedger {
    versions: BTreeMap<u64, MirroredVersion>,
}

/// A Delta version's `commitInfo`: the Hudi instant of its view, the instant that completed, and the
/// commit-like instants pending below the former.
#[derive(Debug, Clone)]
struct MirroredVersion {
    instant: String,
    completed: String,
    pending: BTreeSet<String>,
}

impl DeltaLedger {
    /// A Delta log file is deleted at `path`: for a commit (`<version>.json`) that mirrors an instant still on
    /// Hudi's active timeline (`active`: the completed commit-like times there now), the violation.
    pub(super) fn on_delete(
        &self,
        path: &str,
        active: &BTreeSet<&str>,
    ) -> Option<(&'static str, String)> {
        let version = commit_version(path)?;
        let mirrored = self.versions.get(&version)?;
        [&mirrored.instant, &mirrored.completed]
            .into_iter()
            .find(|t| active.contains(t.as_str()))
            .map(|t| {
                (
                    "the Delta log keeps the version of every instant on Hudi's active timeline",
                    format!("Delta version {version}, of {t}, expired while {t} is on the active timeline"),
                )
            })
    }

    /// A Delta log file was created at `path`: for a commit (`<version>.json`), the violation it makes, if any.
    /// `completed` holds the completed commit-like instants ever created, by time.
    pub(super) fn on_put(
        &mut self,
        path: &str,
        body: &Bytes,
        completed: &BTreeSet<String>,
    ) -> Option<(&'static str, String)> {
        const AHEAD: &str = "the Delta log never runs ahead of Hudi";
        let version = commit_version(path)?;
        let info = std::str::from_utf8(body)
            .ok()?
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find_map(|v| v.get("commitInfo").cloned());
        let Some(info) = info else {
            return Some((AHEAD, format!("Delta version {version} has no commitInfo")));
        };
        let text = |key: &str| info.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(instant), Some(done)) = (text("hudiInstant"), text("hudiCompleted")) else {
            return Some((
                AHEAD,
                format!("Delta version {version} names no Hudi instant"),
            ));
        };
        let pending: BTreeSet<String> = info
            .get("hudiPending")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let this = MirroredVersion {
            instant: instant.clone(),
            completed: done.clone(),
            pending,
        };
        let previous = self
            .versions
            .range(..version)
            .next_back()
            .map(|(_, v)| v.clone());
        let first = self.versions.values().next().cloned();
        self.versions.insert(version, this.clone());
        for t in [&instant, &done] {
            if !completed.contains(t) {
                return Some((
                    AHEAD,
                    format!("Delta version {version} mirrors {t}, which has not completed"),
                ));
            }
        }
        let (Some(previous), Some(first)) = (previous, first) else {
            return None;
        };
        let mirrored: BTreeSet<&String> = self
            .versions
            .range(..version)
            .map(|(_, v)| &v.completed)
            .collect();
        if mirrored.contains(&done) {
            return Some((
                AHEAD,
                format!("Delta version {version} mirrors {done} again"),
            ));
        }
        if instant != done {
            // An instant that was pending below the watermark when a version of the watermark was made, seen
            // as of the watermark.
            let was_pending = self
                .versions
                .range(..version)
                .any(|(_, v)| v.instant == instant && v.pending.contains(&done));
            if instant != previous.instant || !was_pending {
                return Some((
                    AHEAD,
                    format!(
                        "Delta version {version} mirrors {done} as of {instant}, which is not the instant \
                         of the version before ({}) or {done} was not pending below it",
                        previous.instant
                    ),
                ));
            }
            return None;
        }
        if instant <= previous.instant {
            return Some((
                AHEAD,
                format!(
                    "Delta version {version} mirrors {instant}, not after {} of the version before",
                    previous.instant
                ),
            ));
        }
        // A prefix: every instant completed below this one was mirrored before it, except those still pending
        // below it (and those below the first version's full snapshot, which holds them).
        let left_out = completed.iter().find(|t| {
            **t < instant
                && !this.pending.contains(*t)
                && (**t > first.instant || first.pending.contains(*t))
                && !mirrored.contains(t)
        });
        left_out.map(|t| {
            (
                AHEAD,
                format!(
                    "Delta version {version} mirrors {instant}, but {t}, completed below it, was never mirrored"
                ),
            )
        })
    }
}

/// The mirror settings of a run's table, from its properties, with no time-based log retention (the log's
/// timestamps are wall-clock times, not the simulation's). The table lives in memory, so its Delta URL is
/// `memory://sim/trips/` (a local path that does not exist would be refused by the Delta engine).
pub(super) fn delta_config(
    props: &BTreeMap<String, String>,
) -> Result<Option<DeltaConfig>, Failure> {
    let config = DeltaConfig::from_properties(props, "memory://sim/trips")
        .map_err(|e| fail("setup", e.to_string()))?;
    Ok(config.map(|c| DeltaConfig {
        retention: Duration::ZERO,
        ..c
    }))
}
