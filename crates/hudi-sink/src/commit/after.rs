//! After a commit: the work that follows a durable `<t>.commit`, in one place.
//!
//! ```text
//! … create <t>.commit ─ clean up ─ after_commit (under the lock) ─ unlock ─ after_release ─ Committed
//! ```
//!
//! Everything here is best effort. The commit is durable and its answer is `committed` whatever happens
//! here: a failure is logged and left to the next commit or the scheduled run, never reported to the
//! writer (which would otherwise retry a batch that is already in the table). Work that needs the table
//! lock goes into [`Coordinator::after_commit`]; work that does not, and would only lengthen every writer's
//! wait for the lock, into [`Coordinator::after_release`].

use crate::lock::LockGuard;
use crate::storage::ObjectMeta;
use crate::table::timeline::Timeline;

use super::Coordinator;

impl Coordinator {
    /// Under the commit's lock, once `<t>.commit` exists and the instant's markers and heartbeat are
    /// deleted: the inline clean and archival, when due. `committed` is the timeline with the new commit,
    /// `listed` the `.hoodie/` listing it was read from.
    pub(super) async fn after_commit(
        &self,
        guard: &LockGuard,
        committed: &Timeline,
        listed: &[ObjectMeta],
    ) {
        self.inline_services(guard, committed, listed).await;
    }

    /// After the commit's lock is released, for a request answered `committed` (a retried commit whose
    /// answer was lost included): inline clustering, which takes the lock itself for planning and completion.
    pub(super) async fn after_release(&self) {
        self.inline_clustering().await;
    }
}
