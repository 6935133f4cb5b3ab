//! Failed writes and what they leave behind (docs/architecture.md, "Failures, rollback and retired
//! instants").
//!
//! ```text
//! expired heartbeat ─ fence ─ <t>.commit absent? ─ retire t ─ delete base files of t ─ markers
//!   ─ <t>.inflight, <t>.commit.requested ─ heartbeat
//! ```
//!
//! A pending commit whose heartbeat expired is rolled back before every begin and commit and in every
//! services run; `abort` rolls one back at once. The time is retired before anything is deleted, so a
//! rollback that stops half-way can never let the instant complete. Markers and heartbeats of completed
//! instants are deleted as leftovers; those of instants no longer on the timeline reveal a zombie writer and
//! trigger another rollback; the scheduled run sweeps base files of retired times that have nothing left to
//! be found by.

use crate::lock::LockGuard;
use crate::protocol::CoordinatorResponse;
use crate::storage::ObjectMeta;
use crate::table::file_name::heartbeat_path;
use crate::table::instant::{Instant, InstantTime, State};
use crate::table::timeline::Timeline;
use crate::write::{rollback_failed, WriteError};

use super::Coordinator;
use crate::mutation::{is_disabled, Mutation};
use crate::write::heartbeat::read_heartbeat;

impl Coordinator {
    /// Rolls back `instant` unless it completed meanwhile: `timeline` may be stale if this coordinator was
    /// paused, and the rollback of a completed instant would delete committed data.
    pub(super) async fn rollback_fenced(
        &self,
        guard: &LockGuard,
        instant: &InstantTime,
    ) -> Result<bool, WriteError> {
        self.fence(guard).await?;
        let action = self.write_action().await?;
        let commit_file = format!(
            ".hoodie/{}",
            Instant::new(instant.clone(), action, State::Completed).file_name()
        );
        if self.storage.head(&commit_file).await?.is_some() {
            return Ok(false);
        }
        rollback_failed(self.storage.as_ref(), instant).await?;
        Ok(true)
    }

    /// Rolls back every pending commit whose heartbeat is older than the tolerance. Pending instants of
    /// other actions (another engine's clean or clustering) are left alone. `reported` is the committing
    /// instant with the newest heartbeat its writer knows was stored: the stored one can only be newer, so
    /// when the reported one is within the tolerance the instant is alive without reading it back (a read
    /// saved per commit), and the decision is the one the read would give.
    pub(super) async fn rollback_expired(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
        reported: Option<(&InstantTime, i64)>,
    ) -> Result<Vec<InstantTime>, WriteError> {
        let storage = self.storage.as_ref();
        let now = self.clock.now_millis();
        let tolerance = self.config.heartbeat_tolerance.as_millis() as i64;
        let mut rolled_back = Vec::new();
        for pending in timeline.pending() {
            if !pending.action.is_write() {
                continue;
            }
            // A reported heartbeat that is fresh settles it: the stored one is at least as new. A stale
            // one does not (the writer kept beating while its request waited, e.g. for the lock): read.
            if reported.is_some_and(|(instant, ms)| {
                *instant == pending.time && now.saturating_sub(ms) <= tolerance
            }) {
                continue;
            }
            let last_beat = read_heartbeat(storage, &pending.time).await?;
            // Without a readable heartbeat, the instant's own time is its last sign of life.
            let last = match last_beat {
                Some(ms) => ms,
                None => pending.time.to_millis().unwrap_or(0),
            };
            if now - last > tolerance {
                tracing::info!(instant = %pending.time, last_heartbeat_ms = last, "rolling back failed write");
                if self.rollback_fenced(guard, &pending.time).await? {
                    rolled_back.push(pending.time.clone());
                }
            }
        }
        Ok(rolled_back)
    }

    pub(super) async fn abort_locked(
        &self,
        guard: &LockGuard,
        instant: &InstantTime,
    ) -> Result<CoordinatorResponse, WriteError> {
        self.rollback_fenced(guard, instant).await?;
        Ok(CoordinatorResponse::Done)
    }
    /// Deletes markers and heartbeats left by completed instants (a coordinator that failed right after
    /// creating `<t>.commit` never got to its clean-up) and by instants that were rolled back.
    pub(super) async fn clean_completed_leftovers(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
    ) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let mut listed = storage.list(".hoodie/.temp/").await?;
        listed.extend(storage.list(".hoodie/.heartbeat/").await?);
        listed.extend(storage.list(super::window::WINDOW_DIR).await?);
        self.clean_leftovers_listed(guard, timeline, &listed).await
    }

    /// [`Coordinator::clean_completed_leftovers`] over objects already listed (with the timeline, in the same
    /// listing or after it).
    pub(super) async fn clean_leftovers_listed(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
        listed: &[ObjectMeta],
    ) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let window_dir = super::window::WINDOW_DIR;
        let mut zombies = std::collections::BTreeSet::new();
        let mut absent = std::collections::BTreeSet::new();
        let mut done = Vec::new();
        let mut completed_markers: std::collections::BTreeMap<InstantTime, Vec<ObjectMeta>> =
            std::collections::BTreeMap::new();
        for prefix in [".hoodie/.temp/", ".hoodie/.heartbeat/", window_dir] {
            for obj in listed.iter().filter(|o| o.path.starts_with(prefix)) {
                let rest = &obj.path[prefix.len()..];
                let instant = rest.split('/').next().unwrap_or_default();
                let Ok(instant) = InstantTime::parse(instant) else {
                    continue;
                };
                let archived = !timeline.is_retired(&instant)
                    && timeline
                        .instants()
                        .first()
                        .is_some_and(|first| instant < first.time);
                if timeline.is_completed_commit(&instant) && prefix == ".hoodie/.temp/" {
                    completed_markers
                        .entry(instant)
                        .or_default()
                        .push(obj.clone());
                } else if timeline.is_completed_commit(&instant) || archived {
                    // Completed, or archived (older than the active timeline and not rolled back).
                    done.push(obj.path.clone());
                } else if !timeline.contains(&instant) {
                    if prefix == window_dir {
                        // A member that joined a window being rolled back: it wrote nothing.
                        done.push(obj.path.clone());
                    } else if timeline.is_retired(&instant)
                        || is_disabled(Mutation::StartingWriteLeftAlone)
                    {
                        // Rolled back, yet written to since: a zombie writer (paused past its heartbeat,
                        // then resumed) kept writing. This sink's instants are created under the lock before
                        // their heartbeat and markers, so its live writes are never absent from the timeline.
                        zombies.insert(instant);
                    } else {
                        // Hudi's Java writers write their heartbeat before their instant, without the lock:
                        // a writer starting, unless its heartbeat expired (it died before its instant).
                        absent.insert(instant);
                    }
                }
            }
        }
        let now = self.clock.now_millis();
        let tolerance = self.config.heartbeat_tolerance.as_millis() as i64;
        for instant in absent {
            let last = read_heartbeat(storage, &instant)
                .await?
                .or_else(|| instant.to_millis())
                .unwrap_or(0);
            if now.saturating_sub(last) > tolerance {
                zombies.insert(instant);
            }
        }
        for (instant, markers) in completed_markers {
            done.extend(self.sweep_unlisted(timeline, &instant, &markers).await?);
        }
        if !done.is_empty() {
            storage.delete_many(&done).await?;
        }
        for instant in zombies {
            self.rollback_fenced(guard, &instant).await?;
        }
        Ok(())
    }

    /// Markers left by the completed instant `instant`: by a coordinator that stopped before its clean-up,
    /// or by a straggler of a window (a member excluded from the commit whose upload landed after it). Every
    /// file they name that the commit does not list is deleted now (readers would take it for the instant's);
    /// the markers themselves are returned for deletion only once the instant is older than the retired
    /// grace, when no straggler can upload the file a marker names any more.
    async fn sweep_unlisted(
        &self,
        timeline: &Timeline,
        instant: &InstantTime,
        markers: &[ObjectMeta],
    ) -> Result<Vec<String>, WriteError> {
        let storage = self.storage.as_ref();
        let Some(done) = timeline
            .instants()
            .iter()
            .find(|i| i.time == *instant && i.state == State::Completed)
        else {
            return Ok(Vec::new());
        };
        let listed: std::collections::BTreeSet<String> = timeline
            .commit_metadata(storage, done)
            .await?
            .write_stats()
            .map(|s| s.path.clone())
            .collect();
        let unlisted =
            crate::write::files_named_by_markers(storage, instant, markers, &listed).await?;
        if !unlisted.is_empty() {
            tracing::warn!(%instant, files = ?unlisted, "deleting files a completed instant does not list");
            storage.delete_many(&unlisted).await?;
        }
        let age = instant
            .to_millis()
            .map_or(i64::MAX, |ms| self.clock.now_millis().saturating_sub(ms));
        let expired = age > self.config.services.retired_grace.as_millis() as i64;
        // A marker of a listed file has done its work; one of an unlisted file stays while its writer could
        // still upload it.
        Ok(markers
            .iter()
            .filter(|m| {
                expired
                    || crate::table::file_name::Marker::parse(&m.path)
                        .map_or(true, |marker| listed.contains(&marker.data_file_path()))
            })
            .map(|m| m.path.clone())
            .collect())
    }

    /// Table service: deletes base files of rolled-back instants that a zombie writer (paused past its
    /// heartbeat, then resumed) wrote after the rollback, when no marker or heartbeat is left to find them by.
    /// Readers already ignore such files (their instant is not on the timeline); this keeps them from piling up
    /// and from being taken for archived commits later. Once a retired time is older than the grace
    /// (`hudi.sink.services.retired.grace.ms`), no zombie of it can upload any more: after this sweep its
    /// record goes, and archival may pass it. One listing of the whole table, so it runs with the scheduled
    /// services (and only while some time is retired), never with every commit.
    pub(super) async fn sweep_retired(&self, guard: &LockGuard) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let retired: std::collections::BTreeSet<InstantTime> = storage
            .list(crate::table::timeline::RETIRED_DIR)
            .await?
            .iter()
            .filter_map(|o| {
                o.path
                    .strip_prefix(crate::table::timeline::RETIRED_DIR)
                    .and_then(|t| InstantTime::parse(t).ok())
            })
            .collect();
        if retired.is_empty() {
            return Ok(());
        }
        self.fence(guard).await?;
        crate::write::delete_data_files(storage, |t| retired.contains(t)).await?;
        let now = self.clock.now_millis();
        let grace = self.config.services.retired_grace.as_millis() as i64;
        let mut done = Vec::new();
        for time in &retired {
            let expired = time
                .to_millis()
                .is_some_and(|ms| now.saturating_sub(ms) > grace);
            if expired {
                for marker in storage
                    .list(&format!("{}/", crate::table::file_name::marker_dir(time)))
                    .await?
                {
                    done.push(marker.path);
                }
                done.push(heartbeat_path(time));
                done.push(format!("{}{time}", crate::table::timeline::RETIRED_DIR));
            }
        }
        if !done.is_empty() {
            self.fence(guard).await?;
            storage.delete_many(&done).await?;
        }
        Ok(())
    }
}
