//! `join`: a writer becomes a member of the open window, or opens the next one under the lock
//! (docs/architecture.md, "Interval commit").
//!
//! ```text
//! seen window (or one in a fresh listing)? ─ member.<m> ─ window.json: open, before its end? ─ Joined (no lock)
//! lock taken? look for an opened window after 100, 200, 400 ms ─ found: member.<m> ─ window.json ─ Joined
//! else lock ─ list .hoodie/ ─ a window opened meanwhile? join it ─ roll back expired writes, leftovers
//!   ─ the checkpoint covers the batch (a redelivery)? AlreadyCommitted
//!   ─ this slot has a write instant already, and the writer has no backlog? Waiting{next slot}
//!   ─ t; <t> requested, inflight; heartbeat; window.json; member.<m> ─ Joined
//! ```

use bytes::Bytes;

use crate::lock::LockGuard;
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{checkpoint_covers, Contribution, CoordinatorResponse, JoinRequest};
use crate::table::instant::{Action, InstantTime};
use crate::table::timeline::Timeline;
use crate::write::heartbeat::write_heartbeat;
use crate::write::WriteError;

use super::super::Coordinator;
use super::{
    contribution_path, is_valid_member, member_path, open_window, slot_of, window_object_path,
    WindowObject,
};

/// When a writer that found the lock taken looks for a window opened meanwhile (ms after the previous look).
const OPEN_LOOKS_MS: [u64; 3] = [100, 200, 400];

/// A request naming something the protocol refuses (a bad member name, an unparsable instant).
pub(super) fn bad_request(reason: String) -> WriteError {
    WriteError::Protocol {
        request: "window",
        answer: reason,
    }
}

impl Coordinator {
    /// Serves `join`.
    pub(crate) async fn join(&self, req: JoinRequest) -> Result<CoordinatorResponse, WriteError> {
        if !is_valid_member(&req.member) {
            return Err(bad_request(format!(
                "member name {:?}: letters, digits, '-', '_' and '.' only",
                req.member
            )));
        }
        let seen = match req.seen.as_deref() {
            Some(seen) => Some(InstantTime::parse(seen)?),
            // A writer that saw no window (it waited for this slot, or its listing came first) looks again
            // before taking the lock: at a slot's start many writers arrive at once, and all but the first
            // find the window it opened.
            None => self.listed_open_window().await?,
        };
        if let Some(seen) = seen {
            if let Some(joined) = self.try_join(&seen, &req.member).await? {
                return Ok(joined);
            }
        }
        let guard = match self.try_lock().await? {
            Some(guard) => guard,
            None => {
                // Another writer holds the lock, most often the first of this slot opening its window: its
                // window is looked for a few times before this writer queues for the lock, so that the
                // writers of a slot join side by side instead of one lock holder after another.
                if let Some(joined) = self.join_when_opened(&req.member).await? {
                    return Ok(joined);
                }
                self.lock().await?
            }
        };
        let result = self.open_locked(&guard, &req).await;
        self.unlock(guard, result).await
    }

    /// Joins the window another writer is opening, looking for it after 100, 200 and 400 ms (about what an
    /// open takes under the lock); `None` when none opened meanwhile.
    async fn join_when_opened(
        &self,
        member: &str,
    ) -> Result<Option<CoordinatorResponse>, WriteError> {
        for delay_ms in OPEN_LOOKS_MS {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            if let Some(open) = self.listed_open_window().await? {
                if let Some(joined) = self.try_join(&open, member).await? {
                    return Ok(Some(joined));
                }
            }
        }
        Ok(None)
    }

    /// The open window a fresh listing of `.hoodie/` shows, if any.
    async fn listed_open_window(&self) -> Result<Option<InstantTime>, WriteError> {
        let listed = self.storage.list(crate::table::timeline::META_DIR).await?;
        Ok(open_window(&listed, &Timeline::from_listing(&listed)?))
    }

    /// The window object of `instant`, `None` once the window is gone (committed and cleaned up, or rolled
    /// back).
    pub(super) async fn window_object(
        &self,
        instant: &InstantTime,
    ) -> Result<Option<WindowObject>, WriteError> {
        match self.storage.get(&window_object_path(instant)).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| WriteError::Table {
                    base_path: self.storage.base_uri().to_string(),
                    reason: format!("unreadable window object of {instant}: {e}"),
                }),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Joins window `instant` without the lock: the member object first, then the window object. A closer
    /// marks the window closing before it lists the members, so either it sees this member (and waits for
    /// it) or this read sees the mark (and the member leaves with an empty contribution).
    async fn try_join(
        &self,
        instant: &InstantTime,
        member: &str,
    ) -> Result<Option<CoordinatorResponse>, WriteError> {
        self.storage
            .put(&member_path(instant, member), Bytes::new())
            .await?;
        let Some(window) = self.window_object(instant).await? else {
            return Ok(None);
        };
        if window.closing || self.clock.now_millis() >= window.end_ms {
            self.withdraw(instant, member).await?;
            return Ok(None);
        }
        Ok(Some(self.joined(instant, &window)))
    }

    /// Leaves window `instant` with an empty contribution, so that no closer waits for this member.
    pub(super) async fn withdraw(
        &self,
        instant: &InstantTime,
        member: &str,
    ) -> Result<(), WriteError> {
        let empty = Contribution {
            member: member.to_string(),
            operation: "UPSERT".into(),
            write_stats: Vec::new(),
            schema: String::new(),
            offsets: Vec::new(),
        };
        let body = serde_json::to_vec(&empty).map_err(|e| bad_request(e.to_string()))?;
        self.storage
            .put(&contribution_path(instant, member), Bytes::from(body))
            .await?;
        Ok(())
    }

    fn joined(&self, instant: &InstantTime, window: &WindowObject) -> CoordinatorResponse {
        CoordinatorResponse::Joined {
            instant: instant.to_string(),
            base_instant: window.base_instant.clone(),
            checkpoint: window.checkpoint.clone(),
            end_ms: window.end_ms,
            lease_ms: window.end_ms + self.grace_of(window) / 2,
            backlog: window.backlog,
        }
    }

    /// How long after a window's end its missing members are waited for: the heartbeat tolerance, and at least
    /// two intervals (a member that joined just before the end writes about as long as the others). A member
    /// may upload until half of it has passed; the other half covers a skew between the machines' clocks.
    pub(super) fn grace_of(&self, window: &WindowObject) -> i64 {
        if window.grace_ms > 0 {
            return window.grace_ms;
        }
        self.grace(window.interval_ms)
    }

    pub(super) fn grace(&self, interval_ms: u64) -> i64 {
        let tolerance = self.config.heartbeat_tolerance.as_millis() as i64;
        tolerance.max(2 * i64::try_from(interval_ms).unwrap_or(i64::MAX / 4))
    }

    /// Under the lock: joins a window another writer opened meanwhile, or opens the window of the current
    /// slot when it has no write instant yet.
    async fn open_locked(
        &self,
        guard: &LockGuard,
        req: &JoinRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        let storage = self.storage.as_ref();
        let mut listed = storage.list(crate::table::timeline::META_DIR).await?;
        let mut timeline = Timeline::from_listing(&listed)?;
        // A window another writer opened while this one waited for the lock: joined at once, so that the
        // writers of one slot pass the lock quickly (the roll-backs and clean-up below wait for the next open).
        if let Some(open) = open_window(&listed, &timeline) {
            if let Some(joined) = self.try_join(&open, &req.member).await? {
                return Ok(joined);
            }
        }
        if !is_disabled(Mutation::RollbackBeforeCommit)
            && !self
                .rollback_expired(guard, &timeline, None)
                .await?
                .is_empty()
        {
            listed = storage.list(crate::table::timeline::META_DIR).await?;
            timeline = Timeline::from_listing(&listed)?;
        }
        if timeline
            .pending()
            .iter()
            .any(|i| i.action == Action::Compaction)
        {
            crate::services::compact::roll_back_expired_compactions(
                &self.service_context(guard),
                &timeline,
                self.config.heartbeat_tolerance,
            )
            .await?;
        }
        self.clean_leftovers_listed(guard, &timeline, &listed)
            .await?;
        let checkpoint = self.latest_checkpoint(&timeline).await?;
        if checkpoint_covers(&checkpoint, &req.offsets) && !is_disabled(Mutation::CheckpointFilter)
        {
            return Ok(CoordinatorResponse::AlreadyCommitted {
                checkpoint: checkpoint.to_sink_json(),
            });
        }
        let interval = req.interval_ms.max(1);
        let instant = InstantTime::next_after(self.clock.as_ref(), timeline.last_used_time());
        let instant_ms = instant
            .to_millis()
            .unwrap_or_else(|| self.clock.now_millis());
        let slot = slot_of(instant_ms, interval);
        let action = self.write_action().await?;
        // One write instant per slot: the slot's window closed already (or is closing). Only the table's
        // write action counts (a merge-on-read compaction is a `commit`). A writer with a backlog does not wait:
        // its batch is not small, and waiting would only pace reading.
        let slot_rule = !req.backlog && !is_disabled(Mutation::SlotRule);
        if let Some(last) = timeline.instants().iter().rev().find(|i| {
            slot_rule
                && i.action == action
                && i.time
                    .to_millis()
                    .is_some_and(|ms| slot_of(ms, interval) >= slot)
        }) {
            return Ok(CoordinatorResponse::Waiting {
                instant: last.time.to_string(),
                until_ms: (slot + 1) * interval as i64,
            });
        }
        crate::write::create_pending_instant(storage, &instant, action).await?;
        write_heartbeat(storage, self.clock.as_ref(), &instant).await?;
        let base = crate::commit::conflict::writer_base(&timeline, action == Action::DeltaCommit);
        let pending = crate::commit::conflict::pending_below(&timeline, base)
            .iter()
            .map(ToString::to_string)
            .collect();
        let base = base.map(|i| i.time.to_string());
        let window = WindowObject {
            instant: instant.to_string(),
            end_ms: (slot + 1) * interval as i64,
            base_instant: base,
            pending,
            checkpoint: checkpoint.to_sink_json(),
            closing: false,
            closing_ms: 0,
            grace_ms: self.grace(interval),
            interval_ms: interval,
            backlog: req.backlog,
        };
        let body = serde_json::to_vec(&window).map_err(|e| bad_request(e.to_string()))?;
        storage
            .put(&window_object_path(&instant), Bytes::from(body))
            .await?;
        storage
            .put(&member_path(&instant, &req.member), Bytes::new())
            .await?;
        tracing::info!(%instant, writer = %req.writer, end_ms = window.end_ms, "window opened");
        Ok(self.joined(&instant, &window))
    }
}
