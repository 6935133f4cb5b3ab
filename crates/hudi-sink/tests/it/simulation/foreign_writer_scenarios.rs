//! A scripted scenario of another engine's writer (Spark) on the sink's table, checked with the simulation's
//! invariants.
//!
//! **Another engine's write completes below a writer's base.** The foreign writer requests its instant and
//! writes the first file groups of the `la` buckets, then waits. Writer B commits `nyc`: a newer instant
//! completes while the foreign one is pending. Writer C begins (its base is B's commit, the foreign instant
//! pending below it) and writes `la` too: the foreign groups are not committed, so C creates its own in the
//! same buckets, and waits at its commit. The foreign writer then completes its instant under the lock, as
//! Hudi's writers do, out of instant order. C's commit must be refused (the foreign instant was not in its
//! view, although it is older than its base) and C writes `la` again, into the foreign groups: one file group
//! per bucket (mutation `pending-below-base-checked`: C's commit is checked only against commits newer than
//! its base, and each `la` bucket ends with two file groups).
//!
//! **Another engine's writer beats before its instant.** Hudi's writers write their heartbeat, then their
//! requested instant, without the table lock. Between the two, writer B begins, and its coordinator sweeps
//! leftovers: a heartbeat of an instant that is not on the timeline. Invariant: **a writer starting is left
//! alone**: its time is not retired and its heartbeat stays, until the heartbeat expires (mutation
//! `starting-write-left-alone`: the sweep takes it for a zombie of a rolled-back write, retires the time and
//! deletes the heartbeat, and Hudi's writer then fails, or completes a retired time whose files the sink
//! deletes).

use super::scenarios::{trip_msgs, GatedCommit};
use super::window_scenarios::{batch_of, Table};
use super::*;
use hudi_sink::table::commit::OperationType;
use hudi_sink::table::file_name::{heartbeat_path, marker_dir};
use hudi_sink::table::instant::InstantTime;
use tokio::sync::Notify;

/// The foreign writer's transport: `begin` as the sink's writers (the instant's requested and inflight files,
/// under the lock), but the commit is its own: once the script lets go, it writes `<t>.commit` under the
/// table lock with its write stats and schema and no checkpoint, without the sink's checks.
#[derive(Debug)]
struct ForeignCommit {
    inner: InProcessClient,
    store: Arc<dyn Storage>,
    lock: MemoryLock,
    at_commit: Arc<Notify>,
    go: Arc<Notify>,
}

#[async_trait]
impl CoordinatorClient for ForeignCommit {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let CoordinatorRequest::Commit(request) = request else {
            return self.inner.call(request).await;
        };
        self.at_commit.notify_one();
        self.go.notified().await;
        let guard = self.lock.acquire(Duration::from_secs(60)).await?;
        let time = InstantTime::parse(&request.instant)?;
        let mut meta = CommitMetadata::new(request.operation.parse::<OperationType>()?);
        for stat in request.write_stats {
            meta.add_write_stat(stat);
        }
        meta.extra_metadata
            .insert("schema".into(), request.schema.clone());
        let body = Bytes::from(meta.to_json_pretty()?);
        self.store
            .put_if_absent(&format!(".hoodie/{time}.commit"), body)
            .await?;
        let markers = marker_dir(&time);
        let mut done: Vec<String> = self
            .store
            .list(&markers)
            .await?
            .into_iter()
            .map(|o| o.path)
            .collect();
        done.push(heartbeat_path(&time));
        self.store.delete_many(&done).await?;
        guard.release().await?;
        Ok(CoordinatorResponse::Committed {
            instant: request.instant,
        })
    }
}

/// See the module doc.
async fn a_foreign_write_completes_below_a_writers_base() -> Result<(), Failure> {
    let table = Table::with_props(false, &[("hudi.sink.commit.interval.ms", "0")])?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let (sf, nyc, la) = (trip_msgs(0, "sf"), trip_msgs(1, "nyc"), trip_msgs(2, "la"));
    let a = table
        .sink(store.clone(), table.clocks[1].clone(), "a")
        .await?;
    a.process(batch_of(&sf)?)
        .await
        .map_err(|e| fail("writer a commits", e.to_string()))?;
    let (f_at, f_go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let f_clock = table.clocks[2].clone();
    let foreign = table
        .sink_via(store.clone(), f_clock.clone(), "spark", |inner| {
            Arc::new(ForeignCommit {
                inner,
                store: store.clone(),
                lock: table.lock_with(f_clock.clone()),
                at_commit: f_at.clone(),
                go: f_go.clone(),
            })
        })
        .await?;
    let f_batch = batch_of(&la)?;
    let f_task = tokio::spawn(async move { foreign.process(f_batch).await });
    f_at.notified().await;
    let b = table
        .sink(store.clone(), table.clocks[3].clone(), "b")
        .await?;
    b.process(batch_of(&nyc)?)
        .await
        .map_err(|e| fail("writer b commits", e.to_string()))?;
    let (c_at, c_go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let c = table
        .sink_via(store.clone(), table.clocks[4].clone(), "c", |inner| {
            Arc::new(GatedCommit {
                inner,
                at_commit: c_at.clone(),
                go: c_go.clone(),
            })
        })
        .await?;
    let c_batch = batch_of(&la)?;
    let mut c_task = tokio::spawn(async move { c.process(c_batch).await });
    c_at.notified().await;
    // The foreign instant completes, older than C's base.
    f_go.notify_one();
    f_task
        .await
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail("the foreign writer commits", e.to_string()))?;
    // C commits (again after a refusal).
    let report = loop {
        c_go.notify_one();
        tokio::select! {
            done = &mut c_task => break done,
            _ = c_at.notified() => continue,
        }
    };
    report
        .map_err(|e| fail("no panic", e.to_string()))?
        .map_err(|e| fail("writer c commits", e.to_string()))?;
    table.check(&[&sf, &nyc, &la]).await
}

/// See the module doc.
async fn a_foreign_writer_beats_before_its_instant() -> Result<(), Failure> {
    let table = Table::with_props(false, &[("hudi.sink.commit.interval.ms", "0")])?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let (sf, nyc) = (trip_msgs(0, "sf"), trip_msgs(1, "nyc"));
    let a = table
        .sink(store.clone(), table.clocks[1].clone(), "a")
        .await?;
    a.process(batch_of(&sf)?)
        .await
        .map_err(|e| fail("writer a commits", e.to_string()))?;
    // The foreign writer picks its time and writes its (empty) heartbeat; its requested file is still to come.
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let latest = Timeline::load(store.as_ref())
        .await
        .map_err(|e| setup(&e))?
        .instants()
        .last()
        .map(|i| i.time.clone());
    // Half a second ahead of the sink's next instant, so that the two times differ.
    let next = InstantTime::next_after(table.clocks[2].as_ref(), latest.as_ref());
    let t = next
        .to_millis()
        .map(|ms| InstantTime::from_millis(ms + 500))
        .ok_or_else(|| fail("setup", format!("instant {next}")))?
        .map_err(|e| setup(&e))?;
    let beat = heartbeat_path(&t);
    store
        .put(&beat, Bytes::new())
        .await
        .map_err(|e| setup(&e))?;
    // Writer B begins (its coordinator sweeps leftovers) and commits meanwhile.
    let b = table
        .sink(store.clone(), table.clocks[3].clone(), "b")
        .await?;
    b.process(batch_of(&nyc)?)
        .await
        .map_err(|e| fail("writer b commits", e.to_string()))?;
    let timeline = Timeline::load(store.as_ref())
        .await
        .map_err(|e| fail("readable table", e.to_string()))?;
    let beating = store
        .head(&beat)
        .await
        .map_err(|e| fail("readable table", e.to_string()))?
        .is_some();
    if timeline.is_retired(&t) || !beating {
        return Err(fail(
            "a writer starting is left alone",
            format!(
                "instant {t} retired: {}, heartbeat kept: {beating}",
                timeline.is_retired(&t)
            ),
        ));
    }
    // Its requested file lands; it stays pending for the sink.
    let requested = hudi_sink::table::instant::Instant::new(
        t.clone(),
        hudi_sink::table::instant::Action::Commit,
        hudi_sink::table::instant::State::Requested,
    );
    store
        .put(&requested.path(), Bytes::new())
        .await
        .map_err(|e| setup(&e))?;
    store
        .delete_many(&[beat, requested.path()])
        .await
        .map_err(|e| setup(&e))?;
    table.check(&[&sf, &nyc]).await
}

pub(super) fn a_foreign_writer_beats_before_its_instant_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_foreign_writer_beats_before_its_instant())
}

pub(super) fn a_foreign_write_completes_below_a_writers_base_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_foreign_write_completes_below_a_writers_base())
}
