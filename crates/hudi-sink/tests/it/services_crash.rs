//! The scheduled table-services run (`Coordinator::run_services`: rollback of a failed write, leftovers,
//! sweep of retired times, clean, archive) under a fault at every one of its storage calls.
//!
//! An upsert bucket table is built once through `KafkaSink` with work for every step: a failed write whose
//! heartbeat expired, the leftover markers of a completed commit, slices older than the clean's earliest
//! commit to retain (ECR) and more completed commits than `hoodie.keep.max.commits`. Then, for every call
//! number `n` of a fault-free run and four faults at call `n` (a crash before or after its effect, one
//! failed call before or after its effect), the table as built runs the services; then again with batch
//! deletes key by key, for a crash between two keys or one key failing (a sample of the keys). Whatever
//! the fault left, this crate and hudi-rs read the rows of before; every query as of a commit at or after
//! the ECR of the newest clean (pending or completed: a pending clean may have deleted its files already)
//! finds the slices it found before; and only files a clean on the timeline planned, or files of the
//! failed write, are gone. The next run (a fresh coordinator after a crash, the same warm one after a
//! failed call) finishes the interrupted work: no pending instant, the clean's files deleted, the active
//! timeline within `keep.max`, and the data files of a fault-free run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hudi_sink::clock::{Clock, ManualClock};
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::{LeaseOptions, MemoryLock};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::{ServiceReport, ServicesConfig};
use hudi_sink::sink::{KafkaSink, SinkConfig};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultRule, FaultyStorage, Operation, RuleId};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::instant::{InstantTime, State};
use hudi_sink::table::timeline::{Timeline, META_DIR, RETIRED_DIR};
use hudi_sink::transport::InProcessClient;
use hudi_sink::write::WriteConfig;
use hudi_sink::write::{TableWriter, WriteError};

use crate::common::crash::{copy_dir, crash_after, crash_before, fail_once, link_dir, KeyByKey};
use crate::common::python::HudiReader;
use crate::common::rows::{keyed, library_rows, Rows};
use crate::common::table::{aux_files, clean_plans, data_files, instant_of, slices_as_of, Slice};
use crate::exactly_once::process;
use crate::model::{esm_payload, local_props, stream, Model, Msg, SCHEMA};

const START: i64 = 1_767_225_600_000; // 2026-01-01
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// Stream rounds, one commit each.
const ROUNDS: usize = 10;
/// Records per Kafka partition and round.
const PER_ROUND: usize = 20;

/// Tight retention, so that ten commits give both services work; clean and archive off while building.
fn services(on: bool) -> ServicesConfig {
    ServicesConfig {
        clean_automatic: on,
        archive_automatic: on,
        commits_retained: 2,
        keep_min_commits: 3,
        keep_max_commits: 5,
        ..ServicesConfig::default()
    }
}

fn coordinator(
    storage: Arc<dyn Storage>,
    clock: Arc<ManualClock>,
    tolerance: Duration,
    services: ServicesConfig,
) -> Coordinator {
    let lock = MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_secs(30)));
    Coordinator::new(
        storage,
        Arc::new(lock),
        clock,
        CoordinatorConfig {
            lock_wait: LOCK_WAIT,
            heartbeat_tolerance: tolerance,
            services,
        },
    )
}

/// The table as built, and what every reader read from it.
struct Prepared {
    /// Where the table lives: every run finds it at this path (clean plans name full paths).
    base: PathBuf,
    /// A copy of the table as built, restored at `base` (hard-linked) before every run.
    stash: PathBuf,
    /// The clock of the services runs: two hours after the build.
    end_ms: i64,
    tolerance: Duration,
    /// The failed write (pending, heartbeat expired, with data files).
    failed: InstantTime,
    /// Data files (relative paths).
    files: BTreeSet<String>,
    /// The latest rows, with file names.
    rows: Rows,
    /// The rows as of every commit at or after the ECR of the build's clean.
    as_of: BTreeMap<InstantTime, Rows>,
    /// The slices those rows come from.
    slices_as_of: BTreeMap<InstantTime, Vec<Slice>>,
}

struct Builder {
    props: BTreeMap<String, String>,
    sink_config: SinkConfig,
    dead_letters: PathBuf,
    clock: Arc<ManualClock>,
}

impl Builder {
    /// A sink over `storage` whose coordinator runs no clean or archive.
    async fn sink(&self, storage: Arc<dyn Storage>) -> KafkaSink {
        let writer = TableWriter::create_or_open(
            storage.clone(),
            self.clock.clone(),
            WriteConfig::from_properties(self.props.clone()).expect("write config"),
            Some(AvroSchema::parse(SCHEMA).expect("schema")),
        )
        .await
        .expect("open table");
        let coordinator = coordinator(
            storage,
            self.clock.clone(),
            self.sink_config.heartbeat_tolerance(),
            services(false),
        );
        KafkaSink::new(
            writer,
            Arc::new(InProcessClient::new(coordinator)),
            Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
                &self.dead_letters,
            )))),
            self.clock.clone(),
            self.sink_config.clone(),
            "writer",
        )
    }

    /// Delivers `msgs` through a sink over `storage` with `rule`, expecting the invocation to fail.
    async fn failing(&self, storage: &Arc<dyn Storage>, rule: FaultRule, msgs: &[Msg]) {
        let faulty: Arc<dyn Storage> =
            Arc::new(FaultyStorage::new(storage.clone()).with_rule(rule));
        let batch = KafkaBatch::from_slice(&esm_payload(msgs)).expect("event");
        let outcome = self.sink(faulty).await.process(batch).await;
        assert!(outcome.is_err(), "{outcome:?}");
    }
}

/// Builds the table: 4 commits, a clean, 3 commits, a failed write, 3 commits (the last one leaves its
/// markers and heartbeat behind), then two hours pass.
async fn build(dir: &Path, reader: &mut HudiReader) -> Prepared {
    let base = dir.join("trips");
    let schema = dir.join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let dead_letters = dir.join("dead-letters");
    let mut props = local_props(&base, &schema, &dead_letters);
    // The table's shape (a failed commit left pending, a commit whose clean-up failed) is the per-batch
    // protocol's.
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    let sink_config = SinkConfig::from_properties(&props).expect("sink config");
    let tolerance = sink_config.heartbeat_tolerance();
    let b = Builder {
        props,
        sink_config,
        dead_letters,
        clock: Arc::new(ManualClock::new(START)),
    };
    let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
    let msgs = stream("trips", 2, (ROUNDS * PER_ROUND) as i64, 40);
    let round = |r: usize| -> Vec<Msg> {
        [0, 1]
            .iter()
            .flat_map(|p| {
                msgs.iter()
                    .filter(move |m| m.partition == *p)
                    .skip(r * PER_ROUND)
                    .take(PER_ROUND)
                    .cloned()
            })
            .collect()
    };
    let mut model = Model::default();
    let sink = b.sink(local.clone()).await;
    for r in 0..ROUNDS {
        b.clock.advance(1_000);
        if r == 4 {
            let report = coordinator(local.clone(), b.clock.clone(), tolerance, services(true))
                .run_services()
                .await
                .expect("services while building");
            assert!(report.files_cleaned > 0, "{report:?}");
            assert_eq!(report.instants_archived, 0, "{report:?}");
            b.clock.advance(1_000);
        }
        if r == 7 {
            // A write whose commit fails: the instant stays pending with its files.
            let rule = FaultRule::fail(Operation::PutIfAbsent).path_suffix(".commit");
            b.failing(&local, rule, &round(r)).await;
            b.clock.advance(1_000);
        }
        if r == ROUNDS - 1 {
            // Committed, but the clean-up of its markers and heartbeat fails; the redelivery skips it all.
            let rule = FaultRule::fail(Operation::DeleteMany).path_prefix(".hoodie/.temp/");
            b.failing(&local, rule, &round(r)).await;
            model.apply(&round(r));
            assert_eq!(process(&sink, &round(r)).await.instant, None);
            continue;
        }
        process(&sink, &round(r)).await;
        model.apply(&round(r));
    }
    b.clock.advance(2 * 3_600_000);

    let timeline = Timeline::load(local.as_ref()).await.expect("timeline");
    let commits: Vec<InstantTime> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.clone())
        .collect();
    assert_eq!(commits.len(), ROUNDS);
    let pending = timeline.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let failed = pending[0].time.clone();
    let cleans = clean_plans(local.as_ref(), &timeline).await;
    assert_eq!(cleans.len(), 1);
    let ecr = cleans[0].ecr.clone().expect("ecr");
    let files = data_files(local.as_ref()).await;
    assert!(files.iter().any(|f| instant_of(f) == failed));
    let last = commits.last().expect("commits");
    assert!(local
        .head(&hudi_sink::table::file_name::heartbeat_path(last))
        .await
        .expect("head")
        .is_some());

    let rows = library_rows(local.as_ref(), None, false, "prepared").await;
    model.assert_table(&rows.values().cloned().collect::<Vec<_>>(), "prepared");
    let read = keyed(reader.rows(&base, &["snapshot"]), false, "prepared");
    assert_eq!(read, rows, "prepared: hudi-rs");
    let mut as_of = BTreeMap::new();
    let mut slices = BTreeMap::new();
    for t in commits.iter().filter(|t| **t >= ecr) {
        let what = format!("prepared as of {t}");
        let mine = library_rows(local.as_ref(), Some(t), false, &what).await;
        let theirs = keyed(reader.rows(&base, &["as_of", t.as_str()]), false, &what);
        assert_eq!(theirs, mine, "{what}: hudi-rs");
        as_of.insert(t.clone(), mine);
        slices.insert(t.clone(), slices_as_of(local.as_ref(), t, &what).await);
    }
    let stash = dir.join("built");
    copy_dir(&base, &stash);
    Prepared {
        base,
        stash,
        end_ms: b.clock.now_millis(),
        tolerance,
        failed,
        files,
        rows,
        as_of,
        slices_as_of: slices,
    }
}

/// Every file under `dir` with its content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    crate::common::all_files(dir)
        .into_iter()
        .map(|f| {
            let content = std::fs::read(&f).expect("read");
            (f, content)
        })
        .collect()
}

impl Prepared {
    /// The table as built, at its path.
    fn restore(&self) -> Arc<dyn Storage> {
        if self.base.exists() {
            std::fs::remove_dir_all(&self.base).expect("remove");
        }
        link_dir(&self.stash, &self.base);
        Arc::new(LocalStorage::new(&self.base))
    }
}

/// What any fault may leave: (a) the latest rows of before; (c) only files some clean on the timeline
/// planned (or the failed write's) gone, no new data file, and as of every commit at or after the newest
/// clean's ECR the slices of before, all present (their files are never rewritten, so these are the rows of
/// before; with `rows_as_of`, the rows are read and compared too). Returns the commits checked.
async fn check_readable(
    storage: &dyn Storage,
    p: &Prepared,
    rows_as_of: bool,
    what: &str,
) -> Vec<InstantTime> {
    assert_eq!(
        library_rows(storage, None, false, what).await,
        p.rows,
        "{what}: latest rows"
    );
    let timeline = Timeline::load(storage).await.expect("timeline");
    let cleans = clean_plans(storage, &timeline).await;
    let planned: BTreeSet<&String> = cleans.iter().flat_map(|c| &c.files).collect();
    let now = data_files(storage).await;
    let new: Vec<&String> = now.difference(&p.files).collect();
    assert!(new.is_empty(), "{what}: new data files {new:?}");
    for f in p.files.difference(&now) {
        assert!(
            planned.contains(f) || instant_of(f) == p.failed,
            "{what}: {f} is gone, yet no clean on the timeline planned it"
        );
    }
    let bound = cleans.iter().filter_map(|c| c.ecr.clone()).max();
    let retained: Vec<InstantTime> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.clone())
        .filter(|t| bound.as_ref().is_none_or(|b| t >= b))
        .collect();
    assert!(
        retained.len() >= services(true).commits_retained as usize,
        "{what}: retained {retained:?}"
    );
    for t in &retained {
        let expected = p
            .slices_as_of
            .get(t)
            .unwrap_or_else(|| panic!("{what}: commit {t} is retained, but was not before"));
        let found = slices_as_of(storage, t, what).await;
        assert_eq!(&found, expected, "{what}: slices as of {t}");
        if rows_as_of {
            let found = library_rows(storage, Some(t), false, &format!("{what}, as of {t}")).await;
            assert_eq!(found, p.as_of[t], "{what}: rows as of {t}");
        }
    }
    retained
}

/// What a fault-free run leaves.
struct Reference {
    calls: Vec<(Operation, String)>,
    report: ServiceReport,
    files: BTreeSet<String>,
    commits: Vec<InstantTime>,
    /// Files under `.hoodie/` that are not timeline files.
    aux: BTreeSet<String>,
    ecr: InstantTime,
    cleaned: BTreeSet<String>,
}

/// (d): no pending or retired instant, no leftover, the newest clean completed with the reference's plan
/// and its files gone, the active timeline within `keep.max` (and archived no further than the reference),
/// and the reference's data files.
async fn check_finished(storage: &dyn Storage, r: &Reference, what: &str) {
    let timeline = Timeline::load(storage).await.expect("timeline");
    assert!(
        timeline.pending().is_empty(),
        "{what}: pending {:?}",
        timeline.pending()
    );
    assert_eq!(timeline.retired_times().count(), 0, "{what}: retired");
    let commits: Vec<InstantTime> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.clone())
        .collect();
    let keep_max = services(true).keep_max_commits as usize;
    assert!(commits.len() <= keep_max, "{what}: {commits:?}");
    assert!(
        commits.ends_with(&r.commits),
        "{what}: {commits:?} lacks {:?}",
        r.commits
    );
    let cleans = clean_plans(storage, &timeline).await;
    let newest = cleans.last().expect("a clean");
    assert_eq!(newest.state, State::Completed, "{what}");
    assert_eq!(newest.ecr.as_ref(), Some(&r.ecr), "{what}: ECR");
    assert_eq!(newest.files, r.cleaned, "{what}: planned files");
    for f in cleans.iter().flat_map(|c| &c.files) {
        assert!(
            storage.head(f).await.expect("head").is_none(),
            "{what}: {f} survived its clean"
        );
    }
    assert_eq!(data_files(storage).await, r.files, "{what}: data files");
    assert_eq!(
        aux_files(storage).await,
        r.aux,
        "{what}: files under .hoodie/"
    );
}

/// The storage a run sees: `faulty`, or batch deletes key by key over it.
fn stack(
    faulty: &Arc<FaultyStorage>,
    key_by_key: bool,
) -> (Arc<dyn Storage>, Option<Arc<KeyByKey>>) {
    if key_by_key {
        let split = Arc::new(KeyByKey::new(faulty.clone()));
        (split.clone(), Some(split))
    } else {
        (faulty.clone(), None)
    }
}

/// The fault-free run.
async fn reference(p: &Prepared) -> Reference {
    let inner = p.restore();
    let faulty = Arc::new(FaultyStorage::new(inner.clone()));
    let clock = Arc::new(ManualClock::new(p.end_ms));
    let report = coordinator(faulty.clone(), clock, p.tolerance, services(true))
        .run_services()
        .await
        .expect("fault-free run");
    assert!(report.clean_instant.is_some(), "{report:?}");
    assert!(report.files_cleaned > 0, "{report:?}");
    assert!(report.instants_archived > 0, "{report:?}");
    assert_eq!(report.resumed, 0, "{report:?}");
    check_readable(inner.as_ref(), p, true, "fault-free run").await;
    let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
    let cleans = clean_plans(inner.as_ref(), &timeline).await;
    assert_eq!(cleans.len(), 1, "the build's clean is archived");
    let aux = aux_files(inner.as_ref()).await;
    for path in &aux {
        assert!(
            !path.starts_with(".hoodie/.temp/")
                && !path.starts_with(".hoodie/.heartbeat/")
                && !path.starts_with(RETIRED_DIR),
            "fault-free run left {path}"
        );
    }
    let r = Reference {
        calls: faulty.call_paths(),
        report,
        files: data_files(inner.as_ref()).await,
        commits: timeline
            .completed_commits()
            .iter()
            .map(|i| i.time.clone())
            .collect(),
        aux,
        ecr: cleans[0].ecr.clone().expect("ecr"),
        cleaned: cleans[0].files.clone(),
    };
    check_finished(inner.as_ref(), &r, "fault-free run").await;
    r
}

/// The calls of a fault-free run whose batch deletes go key by key, and where the keys are among them.
async fn reference_key_by_key(
    p: &Prepared,
    r: &Reference,
) -> (Vec<(Operation, String)>, Vec<Vec<usize>>) {
    let inner = p.restore();
    let faulty = Arc::new(FaultyStorage::new(inner.clone()));
    let (storage, split) = stack(&faulty, true);
    let clock = Arc::new(ManualClock::new(p.end_ms));
    coordinator(storage, clock, p.tolerance, services(true))
        .run_services()
        .await
        .expect("fault-free run, key by key");
    check_finished(inner.as_ref(), r, "fault-free run, key by key").await;
    (faulty.call_paths(), split.expect("split").batches())
}

/// The step of the run each call of the fault-free run belongs to, told by the listing that starts it.
fn steps(calls: &[(Operation, String)]) -> Vec<&'static str> {
    let mut step = "rollback";
    let mut loads = 0;
    calls
        .iter()
        .map(|(op, path)| {
            if *op == Operation::List {
                match path.as_str() {
                    META_DIR => {
                        loads += 1;
                        // The run lists `.hoodie/` to start, before its clean, and again for archival once
                        // the clean wrote an instant.
                        step = match loads {
                            1 => "rollback",
                            2 => "clean",
                            _ => "archive",
                        };
                    }
                    ".hoodie/.temp/" => step = "leftovers",
                    RETIRED_DIR => step = "sweep",
                    _ => {}
                }
            }
            step
        })
        .collect()
}

const STEPS: [&str; 5] = ["rollback", "leftovers", "sweep", "clean", "archive"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    CrashBefore,
    CrashAfter,
    FailBefore,
    FailAfter,
}

impl Fault {
    const ALL: [Fault; 4] = [
        Fault::CrashBefore,
        Fault::CrashAfter,
        Fault::FailBefore,
        Fault::FailAfter,
    ];

    fn add(self, storage: &FaultyStorage, n: u64) -> RuleId {
        match self {
            Fault::CrashBefore => crash_before(storage, n),
            Fault::CrashAfter => crash_after(storage, n),
            Fault::FailBefore => fail_once(storage, n, false),
            Fault::FailAfter => fail_once(storage, n, true),
        }
    }

    /// A crash ends the process: the next run is a fresh coordinator. After a failed call the warm one
    /// (its clean memo and commit cache) runs again.
    fn is_crash(self) -> bool {
        matches!(self, Fault::CrashBefore | Fault::CrashAfter)
    }
}

/// The calls of one kind of run: whole batch deletes, or key by key.
struct Mode<'a> {
    key_by_key: bool,
    calls: &'a [(Operation, String)],
}

/// What the cases add up to.
#[derive(Default)]
struct Tally {
    cases: u64,
    hudi_reads: u64,
    /// Faults the run reported no error for.
    absorbed: Vec<String>,
}

/// One fault at call `n`, its checks and the next run's; `false` when the run never reached call `n`.
async fn crash_case(
    p: &Prepared,
    r: &Reference,
    mode: &Mode<'_>,
    fault: Fault,
    n: u64,
    reader: &mut HudiReader,
    tally: &mut Tally,
) -> bool {
    let base = &p.base;
    let inner = p.restore();
    let faulty = Arc::new(FaultyStorage::new(inner.clone()));
    let rule = fault.add(&faulty, n);
    let (storage, _) = stack(&faulty, mode.key_by_key);
    let clock = Arc::new(ManualClock::new(p.end_ms));
    let warm = coordinator(storage, clock.clone(), p.tolerance, services(true));
    let outcome: Result<ServiceReport, WriteError> = warm.run_services().await;
    if faulty.fired(rule) == 0 {
        assert!(outcome.is_ok(), "{fault:?} {n}: {outcome:?}");
        check_finished(inner.as_ref(), r, &format!("{fault:?} never reached")).await;
        return false;
    }
    tally.cases += 1;
    let idx = (n - 1) as usize;
    let calls = faulty.call_paths();
    assert_eq!(
        calls[..=idx],
        mode.calls[..=idx],
        "{fault:?} {n}: same calls"
    );
    let (op, path) = &mode.calls[idx];
    let what = format!(
        "{fault:?} at call {n}{} ({} {path}, {})",
        if mode.key_by_key {
            " (batch deletes key by key)"
        } else {
            ""
        },
        op.as_str(),
        steps(mode.calls)[idx]
    );
    if outcome.is_ok() {
        tally.absorbed.push(what.clone());
    }
    // Rows as of every retained commit (this crate and hudi-rs) where a crash followed a change of the
    // table; the latest rows after every fault.
    let changed = fault == Fault::CrashAfter && op.is_write();
    let retained = check_readable(inner.as_ref(), p, changed, &what).await;
    let read = keyed(reader.rows(base, &["snapshot"]), false, &what);
    assert_eq!(read, p.rows, "{what}: hudi-rs");
    tally.hudi_reads += 1;
    if changed {
        for t in &retained {
            let read = keyed(reader.rows(base, &["as_of", t.as_str()]), false, &what);
            assert_eq!(&read, &p.as_of[t], "{what}: hudi-rs as of {t}");
            tally.hudi_reads += 1;
        }
    }

    faulty.clear_rules();
    clock.advance(1_000);
    let next = if fault.is_crash() {
        coordinator(inner.clone(), clock.clone(), p.tolerance, services(true))
    } else {
        warm
    };
    let report = next
        .run_services()
        .await
        .unwrap_or_else(|e| panic!("{what}: next run: {e}"));
    assert!(report.resumed <= 1, "{what}: {report:?}");
    let what = format!("{what}, then a fault-free run");
    check_readable(inner.as_ref(), p, changed, &what).await;
    check_finished(inner.as_ref(), r, &what).await;
    let read = keyed(reader.rows(base, &["snapshot"]), false, &what);
    assert_eq!(read, p.rows, "{what}: hudi-rs");
    tally.hudi_reads += 1;
    true
}

/// The keys of batch deletes to fault: every key of a batch of up to six, else the first two, the middle
/// one and the last three (1-based call numbers).
fn sample_keys(batches: &[Vec<usize>]) -> Vec<u64> {
    let mut out = BTreeSet::new();
    for b in batches {
        if b.len() <= 6 {
            out.extend(b.iter().copied());
        } else {
            let l = b.len();
            out.extend([b[0], b[1], b[l / 2], b[l - 3], b[l - 2], b[l - 1]]);
        }
    }
    out.into_iter().map(|i| i as u64 + 1).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_at_any_storage_call_of_the_services_leaves_a_readable_table_the_next_run_finishes()
{
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut reader = HudiReader::start();
    let p = build(dir.path(), &mut reader).await;
    let built = snapshot(&p.stash);
    let r = reference(&p).await;
    let steps = steps(&r.calls);
    let mut order: Vec<&str> = steps.clone();
    order.dedup();
    assert_eq!(order, STEPS, "the run's steps, in order");
    for (what, op) in [
        ("rollback", Operation::DeleteMany),
        ("leftovers", Operation::DeleteMany),
        ("sweep", Operation::DeleteMany),
        ("clean", Operation::PutIfAbsent),
        ("clean", Operation::DeleteMany),
        ("archive", Operation::Delete),
    ] {
        assert!(
            r.calls
                .iter()
                .zip(&steps)
                .any(|((o, _), s)| *o == op && *s == what),
            "{what} has no {op:?} call"
        );
    }

    // Every call, every fault.
    let mut tally = Tally::default();
    let whole = Mode {
        key_by_key: false,
        calls: &r.calls,
    };
    for fault in Fault::ALL {
        let mut n = 1;
        while crash_case(&p, &r, &whole, fault, n, &mut reader, &mut tally).await {
            n += 1;
        }
        assert_eq!(n - 1, r.calls.len() as u64, "{fault:?}: every call faulted");
    }
    let whole_cases = tally.cases;
    // Inside batch deletes: a crash after a key, or one key failing while the others go.
    let (split_calls, batches) = reference_key_by_key(&p, &r).await;
    let keys = sample_keys(&batches);
    let split = Mode {
        key_by_key: true,
        calls: &split_calls,
    };
    for fault in [Fault::CrashAfter, Fault::FailBefore] {
        for &n in &keys {
            assert!(crash_case(&p, &r, &split, fault, n, &mut reader, &mut tally).await);
        }
    }
    assert!(
        snapshot(&p.stash) == built,
        "the runs changed the table as built"
    );
    assert!(
        tally.absorbed.is_empty(),
        "faults the run reported no error for: {:#?}",
        tally.absorbed
    );

    let mut summary = String::new();
    for step in STEPS {
        let calls: Vec<&(Operation, String)> = r
            .calls
            .iter()
            .zip(&steps)
            .filter(|(_, s)| **s == step)
            .map(|(c, _)| c)
            .collect();
        let writes = calls.iter().filter(|(o, _)| o.is_write()).count();
        summary.push_str(&format!("{step} {} ({writes} writes), ", calls.len()));
    }
    let split_steps = self::steps(&split_calls);
    let mut keys_per_step = BTreeMap::new();
    for &n in &keys {
        *keys_per_step
            .entry(split_steps[n as usize - 1])
            .or_insert(0) += 1;
    }
    eprintln!(
        "services crash points: {summary}{} calls in all, each faulted 4 ways ({whole_cases} cases); \
         {} keys in {} batch deletes, {} of them ({keys_per_step:?}) faulted 2 ways; {} cases, {} hudi-rs \
         reads, {:.1} s; fault-free run: {:?}",
        r.calls.len(),
        batches.iter().map(Vec::len).sum::<usize>(),
        batches.len(),
        keys.len(),
        tally.cases,
        tally.hudi_reads,
        started.elapsed().as_secs_f64(),
        r.report,
    );
}
