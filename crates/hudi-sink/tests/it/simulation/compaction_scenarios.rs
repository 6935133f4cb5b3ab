//! Scripted scenario of a compaction that merges outside the table lock, checked with the simulation's
//! invariants and read back with hudi-rs.
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
//! (their blocks keep the instants of the deltacommits that wrote them).

use super::scenarios::trip_msgs;
use super::window_scenarios::{batch_of, HeldAt, Table};
use super::*;
use hudi_sink::base_file::writer::BaseFileOptions;
use hudi_sink::services::compact::{run, Runner};

/// `trip_msgs(partition, city)` as a later version of the same records: offsets from `first`, newer
/// ordering values and fares.
fn updates(partition: i32, city: &str, first: i64) -> Vec<Msg> {
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

/// See the module doc.
async fn windows_commit_while_a_compaction_merges() -> Result<(), Failure> {
    // A heartbeat tolerance far beyond the script's pauses: the paused compaction stays alive.
    let table = Table::with_props(true, &[("hudi.sink.heartbeat.tolerable.misses", "600")])?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let commits = |what: &'static str| move |e: WriteError| fail(what, e.to_string());
    let first = trip_msgs(0, "sf");
    let second = updates(0, "sf", 4);
    for (i, batch) in [&first, &second].into_iter().enumerate() {
        let w = table
            .sink(store.clone(), table.clocks[1].clone(), &format!("w{i}"))
            .await?;
        w.process(batch_of(batch)?)
            .await
            .map_err(commits("batches commit"))?;
    }
    // The compaction, paused before its first merged file.
    let held_merge = HeldAt::new(store.clone(), ".marker.MERGE", None);
    let compactor = {
        let held: Arc<dyn Storage> = held_merge.clone();
        let lock = table.lock_with(table.clocks[4].clone());
        let clock = table.clocks[4].clone();
        tokio::spawn(async move {
            let config = ServicesConfig {
                compact_max_delta_commits: 1,
                ..sim_services()
            };
            let runner = Runner {
                storage: held.as_ref(),
                lock: &lock,
                lock_wait: Duration::from_secs(120),
                clock: clock.as_ref(),
                config: &config,
                heartbeat_tolerance: Duration::from_millis(BEAT_MS * 600),
            };
            run(&runner, None, &BaseFileOptions::default()).await
        })
    };
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
    let report = compactor
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail("the compaction completes", e.to_string()))?
        .ok_or_else(|| fail("the compaction completes", "nothing compacted"))?;
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
    let model = table
        .check_model(&[&first, &second, &third, &fourth])
        .await?;
    // hudi-rs reads the same table (only without a mutation: the invariants above decide those runs).
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

pub(super) fn windows_commit_while_a_compaction_merges_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(windows_commit_while_a_compaction_merges())
}
