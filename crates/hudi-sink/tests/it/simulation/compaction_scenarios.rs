//! Scripted scenarios of a compaction that merges outside the table lock, checked with the simulation's
//! invariants (the first also read back with hudi-rs).
//!
//! **Windows commit while a compaction merges.** Two batches give the `sf` file groups a base file and a
//! log. A compaction is planned and its merge pauses before its first file. Meanwhile writer A commits a
//! third batch (a window of its own): its logs land in the slices being compacted, after the plan. Writer B
//! then joins a fourth window and pauses before submitting, its logs written to the same old slices. The
//! merge resumes and the compaction completes: it must carry A's logs into its new slices (or A's rows would
//! vanish behind the new base files: mutation `compaction-carries-late-logs`), and B, based below the pending
//! compaction, must find its appends refused when it submits (or its rows would land in a superseded slice:
//! mutation `pending-compaction-holds-base`); B writes its batch again on the new slices. The table then
//! holds all four batches, for the library's reader and for hudi-rs, which also reads the carried copies
//! (their blocks keep the instants of the deltacommits that wrote them). The table is mirrored into Delta:
//! A's step mirrors A's instant with the compaction pending below it, and B's step must mirror the compaction
//! once it completed (mutation `delta-mirror-late-instants`: it is never mirrored, and Delta readers keep the
//! superseded base files).
//!
//! **A compaction paused between its plan files is rolled back twice.** The compactor's process freezes, with
//! the lock, between `<c>.compaction.requested` and `<c>.compaction.inflight`. A writer takes the lock over
//! once its lease ended and rolls the compaction back (time retired, plan removed). The compactor wakes and
//! writes `.inflight` for a plan that is gone, then finds its time retired and gives up. That orphan must be
//! taken for this sink's (its time is retired) and rolled back again once its heartbeat is old, or it would
//! pass for another engine's pending compaction and block compaction and archival for good (mutation
//! `compaction-orphan-rolled-back`: the final timeline keeps a pending instant).
//!
//! **Another engine's compaction is pending while windows commit.** Hudi's Java compaction plans the `sf`
//! groups (a plan without this sink's mark) and its executor, which carries nothing, merges later. Writer B
//! wrote its logs to the old slices before the plan and submits after it: its appends are refused
//! (`PlannedByCompaction`) and it writes again, to the compaction's slice. Writer A, which saw the plan,
//! appends to that slice at once. While the compaction is pending the library's reader merges those logs
//! after the old slice (Spark's merged file slice); once the executor completes, they follow the new base
//! files, and nothing is lost (mutation `foreign-compaction-slice`: both writers append to the old slices and
//! the executor's base files supersede them).
//!
//! **A compaction leaves out a group whose late log re-creates a key.** `trip-k` (`sf`) has V1 (`ts` 100) in
//! its base file and a tombstone in a log; `trip-m` (`la`) an update. A compaction plans both groups and
//! pauses; a batch re-creates `trip-k` with `ts` 50 (below V1) and updates `trip-m`, into the old slices.
//! Readers merge `trip-k`'s slice as base V1, tombstone, V3: V1 shows. Carried behind the new base file
//! (which lacks the deleted key), V3 would show instead. Invariant: **a compaction keeps the snapshot**, read
//! just before it completes and just after. The compaction must leave the `sf` group out (its old slice
//! stays) and compact `la` with its late log carried; the next compaction plans `trip-k`'s logs together and
//! still shows V1 (mutation `compaction-keeps-snapshot`: the group is compacted and V3 shows).

use super::scenarios::trip_msgs;
use super::window_scenarios::{batch_of, HeldAt, Table};
use super::*;
use hudi_sink::base_file::writer::BaseFileOptions;
use hudi_sink::services::compact::{run, CompactionReport, Runner};

/// `trip_msgs(partition, city)` as a later version of the same records: offsets from `first`, newer
/// ordering values and fares.
pub(super) fn updates(partition: i32, city: &str, first: i64) -> Vec<Msg> {
    trip_msgs(partition, city)
        .into_iter()
        .enumerate()
        .map(|(i, mut m)| {
            let i = i as i64;
            m.offset = first + i;
            let uuid = m.key.clone().unwrap_or_default();
            m.value = Some(
                Trip {
                    uuid,
                    ts: 100 * first + i,
                    rider: format!("rider-{first}-{i}"),
                    fare: (first * 10 + i) as f64,
                    city: city.into(),
                    deleted: false,
                }
                .json(),
            );
            m
        })
        .collect()
}

/// Writes every object of `store` under `dir` (the table as files, for hudi-rs).
async fn export(store: &dyn Storage, dir: &std::path::Path) -> Result<(), Failure> {
    let io = |e: &dyn std::fmt::Display| fail("export", e.to_string());
    for object in store.list("").await.map_err(|e| io(&e))? {
        let data = store.get(&object.path).await.map_err(|e| io(&e))?;
        let path = dir.join(&object.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(&e))?;
        }
        std::fs::write(&path, &data).map_err(|e| io(&e))?;
    }
    Ok(())
}

/// Commits `batches` one after the other (the first gives the `sf` groups their base files, the next append
/// logs), each by its own writer invocation.
pub(super) async fn base_and_log(table: &Table, batches: &[&[Msg]]) -> Result<(), Failure> {
    let store: Arc<dyn Storage> = table.recorder.clone();
    for (i, batch) in batches.iter().enumerate() {
        let w = table
            .sink(store.clone(), table.clocks[1].clone(), &format!("w{i}"))
            .await?;
        w.process(batch_of(batch)?)
            .await
            .map_err(|e| fail("batches commit", e.to_string()))?;
    }
    Ok(())
}

/// A compaction of every slice with a log (`run`, as the coordinator's inline and scheduled runs call it) on
/// `store` with the table's fifth clock, rolling back compactions whose heartbeat is `tolerance_ms` old.
pub(super) fn spawn_compaction(
    table: &Table,
    store: Arc<dyn Storage>,
    tolerance_ms: u64,
) -> tokio::task::JoinHandle<Result<Option<CompactionReport>, WriteError>> {
    let lock = table.lock_with(table.clocks[4].clone());
    let clock = table.clocks[4].clone();
    tokio::spawn(async move {
        let config = ServicesConfig {
            compact_max_delta_commits: 1,
            ..sim_services()
        };
        let runner = Runner {
            storage: store.as_ref(),
            lock: &lock,
            lock_wait: Duration::from_secs(120),
            clock: clock.as_ref(),
            config: &config,
            heartbeat_tolerance: Duration::from_millis(tolerance_ms),
        };
        run(&runner, None, &BaseFileOptions::default()).await
    })
}

/// The report of the compaction `task` ran, which must have completed one (`what` names it in failures).
async fn completed(
    task: tokio::task::JoinHandle<Result<Option<CompactionReport>, WriteError>>,
    what: &'static str,
) -> Result<CompactionReport, Failure> {
    task.await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail(what, e.to_string()))?
        .ok_or_else(|| fail(what, "nothing compacted"))
}

/// Where [`export_for_interop`] asks the scenario to write its table.
const INTEROP_OUT: &str = "HUDI_SINK_INTEROP_OUT";

/// Writes the table of "windows commit while a compaction merges" to `$HUDI_SINK_INTEROP_OUT` for the JVM
/// interop suite, with the mutation named by `$HUDI_SINK_INTEROP_MUTATION` switched off if set (the suite
/// shows that Spark sees what that mutation breaks). Does nothing without the variable.
#[test]
fn export_for_interop() {
    if std::env::var_os(INTEROP_OUT).is_none() {
        return;
    }
    let mutation = std::env::var("HUDI_SINK_INTEROP_MUTATION")
        .ok()
        .map(|name| {
            *Mutation::ALL
                .iter()
                .find(|m| m.name() == name)
                .unwrap_or_else(|| panic!("no mutation named {name}"))
        });
    let outcome =
        super::scenarios::run_scenario(windows_commit_while_a_compaction_merges_boxed, mutation);
    // A mutated run fails its own checks after the export; the suite judges the table.
    if mutation.is_none() {
        outcome.unwrap_or_else(|f| panic!("scenario failed: {f:?}"));
    }
}

/// Where [`export_recreated_across_the_carry`] writes its table, before and after the compaction completes.
const RECREATE_OUT: &str = "HUDI_SINK_INTEROP_RECREATE_OUT";

/// Writes the table of "a compaction leaves out a group whose late log re-creates a key" to
/// `$HUDI_SINK_INTEROP_RECREATE_OUT/{before,after,again}` (just before its compaction completes, just after,
/// and after the next compaction), for the JVM interop suite (`tests/interop/test_carried_logs.py`), with
/// the mutation named by `$HUDI_SINK_INTEROP_MUTATION` switched off if set. Does nothing without the variable.
#[test]
fn export_recreated_across_the_carry() {
    if std::env::var_os(RECREATE_OUT).is_none() {
        return;
    }
    let mutation = std::env::var("HUDI_SINK_INTEROP_MUTATION")
        .ok()
        .map(|name| {
            *Mutation::ALL
                .iter()
                .find(|m| m.name() == name)
                .unwrap_or_else(|| panic!("no mutation named {name}"))
        });
    let outcome = super::scenarios::run_scenario(recreated_across_the_carry_boxed, mutation);
    // A mutated run fails its own check after the export; the suite judges the table.
    if mutation.is_none() {
        outcome.unwrap_or_else(|f| panic!("export failed: {f:?}"));
    }
}

pub(super) fn recreated_across_the_carry_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(recreated_across_the_carry())
}

/// The snapshot of `table` as key → (ts, rider), read through the library.
async fn snapshot(table: &Table) -> Result<BTreeMap<String, (i64, String)>, Failure> {
    let store = table.recorder.as_ref();
    let timeline = Timeline::load(store)
        .await
        .map_err(|e| fail("readable table", e.to_string()))?;
    Ok(super::invariants::table_rows(store, &timeline)
        .await?
        .into_iter()
        .map(|t| (t.uuid, (t.ts, t.rider)))
        .collect())
}

/// See the module doc.
async fn recreated_across_the_carry() -> Result<(), Failure> {
    use super::recreate_scenarios::{tombstone, trip_in};
    let out = std::env::var_os(RECREATE_OUT).map(std::path::PathBuf::from);
    let table = Table::with_props(
        true,
        &[
            ("hudi.sink.heartbeat.tolerable.misses", "600"),
            ("hoodie.bucket.index.num.buckets", "1"),
        ],
    )?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let first = [
        trip_in("sf", 0, "trip-k", 100, "v1"),
        trip_in("la", 1, "trip-m", 100, "v1"),
    ];
    let second = [
        tombstone(2, "trip-k"),
        trip_in("la", 3, "trip-m", 200, "v2"),
    ];
    base_and_log(&table, &[&first, &second]).await?;
    let held_merge = HeldAt::new(store.clone(), ".marker.MERGE", None);
    let compactor = spawn_compaction(&table, held_merge.clone(), BEAT_MS * 600);
    held_merge.held.notified().await;
    let a = table
        .sink(store.clone(), table.clocks[2].clone(), "a")
        .await?;
    a.process(batch_of(&[
        trip_in("sf", 4, "trip-k", 50, "v3"),
        trip_in("la", 5, "trip-m", 300, "v3"),
    ])?)
    .await
    .map_err(|e| fail("the late batch commits during the merge", e.to_string()))?;
    let before = snapshot(&table).await?;
    if let Some(out) = &out {
        export(table.recorder.as_ref(), &out.join("before")).await?;
    }
    held_merge.release.notify_one();
    let report = completed(compactor, "the compaction completes").await?;
    if let Some(out) = &out {
        export(table.recorder.as_ref(), &out.join("after")).await?;
    }
    let after = snapshot(&table).await?;
    if after != before {
        return Err(fail(
            "a compaction keeps the snapshot",
            format!("{before:?} before it completes, {after:?} after ({report:?})"),
        ));
    }
    // The `la` group (upserts only) is compacted with its late log carried; the `sf` group is left out.
    if (report.file_groups, report.left_out, report.carried) != (1, 1, 1) {
        return Err(fail(
            "scenario: one group compacted with its late log, one left out",
            format!("{report:?}"),
        ));
    }
    // The next compaction plans the `sf` group's logs together and writes the version the snapshot shows.
    let next = spawn_compaction(
        &table,
        HeldAt::new(store.clone(), "never held", None),
        BEAT_MS * 600,
    );
    let again = completed(next, "the next compaction completes").await?;
    if let Some(out) = &out {
        export(table.recorder.as_ref(), &out.join("again")).await?;
    }
    let later = snapshot(&table).await?;
    if later != before || again.left_out != 0 {
        return Err(fail(
            "a compaction keeps the snapshot",
            format!("{before:?} before, {later:?} after the next compaction ({again:?})"),
        ));
    }
    let want: BTreeMap<String, (i64, String)> = [("trip-k", 100, "v1"), ("trip-m", 300, "v3")]
        .into_iter()
        .map(|(k, ts, r)| (k.to_string(), (ts, r.to_string())))
        .collect();
    if later != want {
        return Err(fail(
            "a tombstone's key re-created below its base version shows the base version",
            format!("{later:?}, want {want:?}"),
        ));
    }
    Ok(())
}

/// See the module doc.
async fn windows_commit_while_a_compaction_merges() -> Result<(), Failure> {
    // A heartbeat tolerance far beyond the script's pauses: the paused compaction stays alive.
    // The table is mirrored into Delta: the compaction completes below the instant A's step mirrored.
    let table = Table::with_props(
        true,
        &[
            ("hudi.sink.heartbeat.tolerable.misses", "600"),
            (hudi_sink::delta::config::MIRROR_KEY, "true"),
        ],
    )?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let commits = |what: &'static str| move |e: WriteError| fail(what, e.to_string());
    let first = trip_msgs(0, "sf");
    let second = updates(0, "sf", 4);
    base_and_log(&table, &[&first, &second]).await?;
    // The compaction, paused before its first merged file.
    let held_merge = HeldAt::new(store.clone(), ".marker.MERGE", None);
    let compactor = spawn_compaction(&table, held_merge.clone(), BEAT_MS * 600);
    held_merge.held.notified().await;
    // A's window commits during the merge: its logs are late for the compaction.
    let third = updates(0, "sf", 7);
    let a = table
        .sink(store.clone(), table.clocks[2].clone(), "a")
        .await?;
    a.process(batch_of(&third)?)
        .await
        .map_err(commits("a commits during the merge"))?;
    // B writes its logs to the old slices and pauses before submitting.
    let fourth = updates(1, "sf", 1);
    let held_submit = HeldAt::new(store.clone(), "/contribution.", None);
    let b = table
        .sink(held_submit.clone(), table.clocks[3].clone(), "b")
        .await?;
    let b_batch = batch_of(&fourth)?;
    let b_task = tokio::spawn(async move { b.process(b_batch).await });
    held_submit.held.notified().await;
    held_merge.release.notify_one();
    let report = completed(compactor, "the compaction completes").await?;
    let carrying = !hudi_sink::mutation::is_disabled(Mutation::CompactionCarriesLateLogs);
    if carrying && report.carried == 0 {
        return Err(fail(
            "scenario: a log landed during the merge",
            format!("{report:?}"),
        ));
    }
    held_submit.release.notify_one();
    let b_report = b_task
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(commits("b commits after the compaction"))?;
    if b_report.instant.is_none() {
        return Err(fail(
            "b commits after the compaction",
            format!("{b_report:?}"),
        ));
    }
    // The JVM interop suite reads this table with Spark (tests/interop/test_carried_logs.py).
    if let Some(dir) = std::env::var_os(INTEROP_OUT) {
        export(table.recorder.as_ref(), std::path::Path::new(&dir)).await?;
    }
    if let Some(f) = lock(&table.mirror_failure).clone() {
        return Err(f);
    }
    let model = table
        .check_model(&[&first, &second, &third, &fourth])
        .await?;
    hudi_rs_reads(&table, &model).await
}

/// hudi-rs reads `table` as `model` (only without a mutation: the invariants decide those runs).
async fn hudi_rs_reads(table: &Table, model: &Model) -> Result<(), Failure> {
    let unmutated = Mutation::ALL
        .iter()
        .all(|m| !hudi_sink::mutation::is_disabled(*m));
    if unmutated {
        let dir = tempfile::tempdir().map_err(|e| fail("setup", e.to_string()))?;
        export(table.recorder.as_ref(), dir.path()).await?;
        let rows = hudi_rs_trips(&dir.path().display().to_string());
        model
            .check_rows(rows)
            .map_err(|e| fail("hudi-rs reads the model", e))?;
    }
    Ok(())
}

/// See the module doc.
async fn a_compaction_paused_between_its_plan_files_is_rolled_back_twice() -> Result<(), Failure> {
    let table = Table::new(true)?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let commits = |what: &'static str| move |e: WriteError| fail(what, e.to_string());
    let batches = [
        trip_msgs(0, "sf"),
        updates(0, "sf", 4),
        updates(0, "sf", 7),
        updates(0, "sf", 10),
    ];
    base_and_log(&table, &[&batches[0], &batches[1]]).await?;
    // The compactor's process freezes between its plan and its `.inflight`, holding the lock.
    let held = HeldAt::new(
        store.clone(),
        ".compaction.inflight",
        Some(table.clocks[4].clone()),
    );
    let compactor = spawn_compaction(&table, held.clone(), BEAT_MS * BEAT_MISSES as u64);
    held.held.notified().await;
    // Past the lock's lease and the compaction's heartbeat tolerance, a writer's join takes the lock over and
    // rolls the compaction back (no heartbeat yet: its instant's time is its last sign of life).
    tokio::time::sleep(Duration::from_millis(
        LEASE_MS * 2 + BEAT_MS * BEAT_MISSES as u64 * 2,
    ))
    .await;
    let w = table
        .sink(store.clone(), table.clocks[2].clone(), "w2")
        .await?;
    w.process(batch_of(&batches[2])?)
        .await
        .map_err(commits("a batch commits past the frozen compactor"))?;
    // The compactor wakes: it writes `.inflight` for a plan that is gone, and finds its time retired.
    held.release.notify_one();
    let outcome = compactor
        .await
        .map_err(|e| fail("no panic", e.to_string()))?;
    if let Ok(Some(report)) = outcome {
        return Err(fail(
            "a rolled-back compaction never completes",
            format!("{report:?}"),
        ));
    }
    // Once its heartbeat is old, the next write rolls the orphan `.inflight` back as this sink's.
    tokio::time::sleep(Duration::from_millis(BEAT_MS * BEAT_MISSES as u64 * 2)).await;
    let w = table
        .sink(store.clone(), table.clocks[3].clone(), "w3")
        .await?;
    w.process(batch_of(&batches[3])?)
        .await
        .map_err(commits("a batch commits after the compactor woke"))?;
    let all: Vec<&[Msg]> = batches.iter().map(|b| b.as_slice()).collect();
    table.check(&all).await
}

/// See the module doc.
async fn another_engines_compaction_is_pending_while_windows_commit() -> Result<(), Failure> {
    // The table is mirrored into Delta: the compaction completes below the instant A's step mirrored.
    let table = Table::with_props(
        true,
        &[
            ("hudi.sink.heartbeat.tolerable.misses", "600"),
            (hudi_sink::delta::config::MIRROR_KEY, "true"),
        ],
    )?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let commits = |what: &'static str| move |e: WriteError| fail(what, e.to_string());
    let first = trip_msgs(0, "sf");
    let second = updates(0, "sf", 4);
    base_and_log(&table, &[&first, &second]).await?;
    // B writes its logs to the old slices and pauses before submitting (its clock stands still: it is not
    // late, only behind): its view predates the plan.
    let b_batch = updates(1, "sf", 1);
    let held_submit = HeldAt::new(store.clone(), "/contribution.", None);
    let b = table
        .sink(held_submit.clone(), table.clocks[3].clone(), "b")
        .await?;
    let b_kafka = batch_of(&b_batch)?;
    let b_task = tokio::spawn(async move { b.process(b_kafka).await });
    held_submit.held.notified().await;
    // The other engine plans the groups: this sink's planner, paused before the merge, with the plan then
    // stored again without the sink's mark, as Hudi's Java planner writes it.
    let held_merge = HeldAt::new(store.clone(), ".marker.MERGE", None);
    let compactor = spawn_compaction(&table, held_merge.clone(), BEAT_MS * 600);
    held_merge.held.notified().await;
    let timeline = Timeline::load(store.as_ref())
        .await
        .map_err(|e| fail("timeline", e.to_string()))?;
    let planned = timeline
        .pending()
        .into_iter()
        .find(|i| i.action == Action::Compaction)
        .map(|i| i.time.clone())
        .ok_or_else(|| fail("a compaction is planned", format!("{timeline:?}")))?;
    let requested = format!(".hoodie/{planned}.compaction.requested");
    let mut plan = store
        .get(&requested)
        .await
        .map_err(|e| fail("the plan", e.to_string()))
        .and_then(|bytes| {
            hudi_sink::table::records::CompactionPlan::from_avro_bytes(&bytes)
                .map_err(|e| fail("the plan", e.to_string()))
        })?;
    plan.extra_metadata.clear();
    let foreign = plan
        .to_avro_bytes()
        .map_err(|e| fail("the plan", e.to_string()))?;
    store
        .put(&requested, bytes::Bytes::from(foreign))
        .await
        .map_err(|e| fail("the plan", e.to_string()))?;
    // B submits after the plan: refused, it writes its batch again to the compaction's slice.
    held_submit.release.notify_one();
    b_task
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(commits("b commits while the compaction is pending"))?;
    // A saw the plan: it appends to the compaction's slice at once.
    let a_batch = updates(0, "sf", 7);
    let a = table
        .sink(store.clone(), table.clocks[2].clone(), "a")
        .await?;
    a.process(batch_of(&a_batch)?)
        .await
        .map_err(commits("a commits while the compaction is pending"))?;
    let in_slice = store
        .list("")
        .await
        .map_err(|e| fail("listing", e.to_string()))?
        .into_iter()
        .filter(|o| o.path.contains(&format!("_{planned}.log.")))
        .count();
    let appending = !hudi_sink::mutation::is_disabled(Mutation::ForeignCompactionSlice);
    if appending && in_slice < 2 {
        return Err(fail(
            "writers append to the pending compaction's slice",
            format!("{in_slice} logs of slice {planned}"),
        ));
    }
    // The library's reader merges them after the old slices while the compaction is pending (Spark's merged
    // file slice): every committed batch is there.
    let mut pending_model = Model::default();
    for batch in [&first, &second, &b_batch, &a_batch] {
        pending_model.apply(batch);
    }
    let timeline = Timeline::load(store.as_ref())
        .await
        .map_err(|e| fail("timeline", e.to_string()))?;
    let rows = super::invariants::table_rows(store.as_ref(), &timeline).await?;
    pending_model
        .check_rows(rows)
        .map_err(|e| fail("readers see every commit while a compaction is pending", e))?;
    // Hudi's executor completes the plan, carrying nothing (the switch stands for it during its run only: no
    // other task runs meanwhile).
    let under_test = hudi_sink::mutation::active();
    hudi_sink::mutation::set_active(Some(Mutation::CompactionCarriesLateLogs));
    held_merge.release.notify_one();
    let done = completed(compactor, "the other engine's compaction completes").await;
    hudi_sink::mutation::set_active(under_test);
    done?;
    // The sink writes again, on the new slices.
    let c_batch = updates(0, "sf", 10);
    let c = table
        .sink(store.clone(), table.clocks[1].clone(), "c")
        .await?;
    c.process(batch_of(&c_batch)?)
        .await
        .map_err(commits("c commits after the compaction"))?;
    let model = table
        .check_model(&[&first, &second, &b_batch, &a_batch, &c_batch])
        .await?;
    hudi_rs_reads(&table, &model).await
}

pub(super) fn another_engines_compaction_is_pending_while_windows_commit_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(another_engines_compaction_is_pending_while_windows_commit())
}

pub(super) fn a_compaction_paused_between_its_plan_files_is_rolled_back_twice_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_compaction_paused_between_its_plan_files_is_rolled_back_twice())
}

pub(super) fn windows_commit_while_a_compaction_merges_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(windows_commit_while_a_compaction_merges())
}
