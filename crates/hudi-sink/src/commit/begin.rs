//! `begin`: a new instant, under the lock (docs/architecture.md, "The writer-coordinator protocol").
//!
//! ```text
//! list .hoodie/ ─ roll back expired writes ─ delete leftovers (and roll back zombies)
//!   ─ t > every time ever used ─ <t>.commit.requested, <t>.inflight ─ heartbeat ─ Begun{t, base, checkpoint}
//! ```
//!
//! The base instant in the answer is the latest completed instant (lowered below a pending write that may still
//! complete after a newer compaction: [`super::conflict::writer_base`]): the writer's view of the table, against
//! which the commit's conflicts are checked ([`super::conflict`]).

use crate::lock::LockGuard;
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::CoordinatorResponse;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::Coordinator;
use crate::write::heartbeat::write_heartbeat;

impl Coordinator {
    /// Serves `begin` under the lock.
    pub(super) async fn begin(&self, writer: &str) -> Result<CoordinatorResponse, WriteError> {
        let guard = self.lock().await?;
        let result = self.begin_locked(&guard, writer).await;
        self.unlock(guard, result).await
    }

    async fn begin_locked(
        &self,
        guard: &LockGuard,
        writer: &str,
    ) -> Result<CoordinatorResponse, WriteError> {
        let storage = self.storage.as_ref();
        // One listing of `.hoodie/` serves the timeline and the leftovers. The table properties are not
        // read here: the writer checked them when it opened the table, and the commit checks them again.
        let listed = storage.list(crate::table::timeline::META_DIR).await?;
        let timeline = Timeline::from_listing(&listed)?;
        if !is_disabled(Mutation::RollbackBeforeCommit) {
            self.rollback_expired(guard, &timeline, None).await?;
        }
        // A compaction whose heartbeat expired crashed: rolled back before a write begins (a live one merges
        // while writers append to the slices it replaces, and carries their logs into its own).
        if timeline
            .pending()
            .iter()
            .any(|i| i.action == crate::table::instant::Action::Compaction)
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
        let instant = InstantTime::next_after(self.clock.as_ref(), timeline.last_used_time());
        let action = self.write_action().await?;
        crate::write::create_pending_instant(storage, &instant, action).await?;
        let heartbeat_ms = write_heartbeat(storage, self.clock.as_ref(), &instant).await?;
        let checkpoint = self.latest_checkpoint(&timeline).await?;
        let base = super::conflict::writer_base(
            &timeline,
            action == crate::table::instant::Action::DeltaCommit,
        );
        let pending = super::conflict::pending_below(&timeline, base)
            .iter()
            .map(ToString::to_string)
            .collect();
        let base = base.map(|i| i.time.to_string());
        tracing::info!(%instant, writer, ?base, "instant begun");
        Ok(CoordinatorResponse::Begun {
            instant: instant.to_string(),
            base_instant: base,
            pending,
            checkpoint: checkpoint.to_sink_json(),
            heartbeat_ms: Some(heartbeat_ms),
        })
    }
}
