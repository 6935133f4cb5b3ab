//! Mutation switches: each one turns off a single safety mechanism of the exactly-once path, so that the
//! deterministic simulation (`tests/it/simulation.rs`) can show that it would notice the loss.
//!
//! The switches exist only with the `mutations` cargo feature, which is off by default and never enabled by
//! the Lambda functions or the CLI. Without it [`is_disabled`] is a constant `false`, so production code
//! carries no switch at all. With it, the switch is per thread: the simulation runs each seed on a
//! single-threaded runtime, so a mutation set for one seed cannot leak into tests on other threads.

/// A safety mechanism that a mutation run turns off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutation {
    /// Records below the table's checkpoint are dropped by the writer, and the coordinator refuses a commit
    /// whose offsets the checkpoint already covers.
    CheckpointFilter,
    /// The coordinator refuses a commit whose file groups or buckets changed after the writer's base instant,
    /// or that is older than a completed commit.
    OccCheck,
    /// Expired pending instants are rolled back before an instant begins or commits.
    RollbackBeforeCommit,
    /// `<t>.commit` is created with create-if-absent, never overwritten.
    AtomicCommitCreate,
    /// The lock lease is proven (renewed conditionally) right before the timeline changes.
    LockFencing,
    /// Clean keeps, per file group, the newest slice older than the earliest commit to retain (a query as of
    /// that commit reads it).
    CleanKeepsNewestBeforeEcr,
    /// Archival never removes instants at or after the oldest pending instant.
    ArchiveStopsAtPending,
    /// Archival never removes a replacecommit whose replaced file groups are not cleaned yet.
    ArchiveStopsAtUncleanedReplace,
    /// The catalog sync moves the watermark (`last_commit_time_sync`) only after the partitions it covers are
    /// registered.
    CatalogWatermarkLast,
    /// Compaction merges only log blocks of completed deltacommits into the new base file.
    CompactionCommittedLogsOnly,
    /// The rollback of a failed deltacommit deletes the log files it appended.
    RollbackDeletesLogFiles,
    /// A window closes only when every member has submitted, or has been excluded once its lease is over.
    WindowMembership,
    /// A window member checks its lease before every upload, so that an excluded straggler stops.
    StragglerFencing,
    /// A window commits at most one contribution per offset: a redelivered batch whose earlier attempt's
    /// contribution is in the same window is left out.
    ContributionDedupe,
    /// A write that rewrites stored file groups first catches up with the latest committed schema, and
    /// refuses a stored file with a column its schema lacks, so that no stored column is dropped.
    StoredColumnsKept,
    /// A commit carries the widest of the table's latest schema and its contributions' schemas, never a
    /// narrower one than the table's.
    CommitSchemaWidest,
    /// A `.compaction.inflight` without its plan whose time is retired (a rollback removed the plan while
    /// its holder was paused) is this sink's and is rolled back again, not left as another engine's.
    CompactionOrphanRolledBack,
    /// A pending compaction holds every writer's base below it, so that appends to the slices it replaces are
    /// checked against it when it completes after them.
    PendingCompactionHoldsBase,
    /// A compaction carries the logs that deltacommits appended to its slices while it merged into the new
    /// slices, so that they are not superseded by its base files.
    CompactionCarriesLateLogs,
    /// Under the interval commit a window opens only in a slot without a write instant, unless its opener has
    /// a backlog.
    SlotRule,
    /// A write to a file group that another engine's pending compaction plans appends to that compaction's
    /// slice, and the coordinator refuses an append below it (Hudi's executors carry nothing).
    ForeignCompactionSlice,
    /// A routed batch is acknowledged only when every table it touches has committed its part.
    RouterAwaitsEveryTable,
    /// A Postgres TOAST placeholder takes the value of the version it supersedes (in the batch, the stored
    /// row, or the merged file slice), never replacing a stored value.
    ToastBackfill,
    /// A commit is checked also against the writes that were pending below its base when it began and
    /// completed since (another engine's writer completes out of instant order).
    PendingBelowBaseChecked,
    /// A merge-on-read batch that deletes a key (tombstone) and then re-creates it writes the delete in a
    /// delete block ahead of the re-created record, so that the key's earlier log versions are removed.
    RecreateWritesDelete,
    /// A compaction leaves out a file group whose late logs would change a snapshot once carried (a key the
    /// planned logs deleted written again, or re-created after a delete), so that its old slice stays.
    CompactionKeepsSnapshot,
    /// A heartbeat or marker of an instant that is not on the timeline and not retired (another engine's
    /// writer starting: Hudi's writers write the heartbeat first) is left alone until its heartbeat expires.
    StartingWriteLeftAlone,
    /// The inline clean and archival (and the scheduled run's) wait while the Delta mirror is behind, so that
    /// the cleaner never deletes a file the latest Delta version still lists.
    DeltaCleanWaitsForMirror,
    /// A Delta mirror step removes the files its Hudi instant no longer sees (a rewritten or replaced file
    /// group's old base file), not only adds the new ones.
    DeltaMirrorRemoves,
    /// A Delta version records the commit-like instants pending below its instant, so that one completing
    /// after it (a compaction or clustering planned before later commits) is mirrored by the next step.
    DeltaMirrorLateInstants,
    /// The Delta log's expiry keeps the version of every instant on Hudi's active timeline, whatever the
    /// retention, so that Delta time travel reaches what Hudi's does.
    DeltaLogKeepsActive,
    /// Clustering plans only file groups that no pending clustering plan holds, so that no file group is
    /// rewritten by two clusterings (each would replace it with its own copy of the rows).
    ClusteringSkipsPlannedGroups,
    /// The rollback of a clustering retires its time before it deletes the plan's new files, so that a
    /// paused executor's later uploads are known as a rolled-back instant's and swept.
    ClusteringRollbackRetiresFirst,
    /// A Debezium update whose before image names another partition deletes the key's version there, so
    /// that a row moved to another partition is stored once.
    PartitionMove,
    /// A TOAST placeholder takes the value of the latest earlier version by ordering value, in the batch or
    /// stored, not of the version that arrived before it.
    ToastOrdering,
    /// A service whose write failed lets the writes already started complete or abort their uploads before
    /// it returns (`services::in_flight::finish_in_order`), instead of dropping them half-way.
    FinishInOrder,
    /// The records of a batch read in parts (`sink/parts.rs`) keep their batch positions: a part's first
    /// record follows the previous part's last, so the fold orders versions across parts by arrival.
    PartPositions,
    /// A clustering executor refreshes its heartbeat while it rewrites (at most a quarter of the tolerance
    /// apart), so that no other process takes a live clustering for dead and rolls it back.
    ClusteringHeartbeatRefreshed,
}

impl Mutation {
    /// Every mutation, in report order.
    pub const ALL: [Mutation; 38] = [
        Mutation::CheckpointFilter,
        Mutation::OccCheck,
        Mutation::RollbackBeforeCommit,
        Mutation::AtomicCommitCreate,
        Mutation::LockFencing,
        Mutation::CleanKeepsNewestBeforeEcr,
        Mutation::ArchiveStopsAtPending,
        Mutation::ArchiveStopsAtUncleanedReplace,
        Mutation::CatalogWatermarkLast,
        Mutation::CompactionCommittedLogsOnly,
        Mutation::RollbackDeletesLogFiles,
        Mutation::WindowMembership,
        Mutation::StragglerFencing,
        Mutation::ContributionDedupe,
        Mutation::StoredColumnsKept,
        Mutation::CommitSchemaWidest,
        Mutation::CompactionOrphanRolledBack,
        Mutation::PendingCompactionHoldsBase,
        Mutation::CompactionCarriesLateLogs,
        Mutation::SlotRule,
        Mutation::ForeignCompactionSlice,
        Mutation::RouterAwaitsEveryTable,
        Mutation::ToastBackfill,
        Mutation::PendingBelowBaseChecked,
        Mutation::RecreateWritesDelete,
        Mutation::CompactionKeepsSnapshot,
        Mutation::StartingWriteLeftAlone,
        Mutation::DeltaCleanWaitsForMirror,
        Mutation::DeltaMirrorRemoves,
        Mutation::DeltaMirrorLateInstants,
        Mutation::DeltaLogKeepsActive,
        Mutation::ClusteringSkipsPlannedGroups,
        Mutation::ClusteringRollbackRetiresFirst,
        Mutation::PartitionMove,
        Mutation::ToastOrdering,
        Mutation::FinishInOrder,
        Mutation::PartPositions,
        Mutation::ClusteringHeartbeatRefreshed,
    ];

    /// A short name for reports and the `SIM_MUTATION` variable.
    pub fn name(self) -> &'static str {
        match self {
            Mutation::CheckpointFilter => "checkpoint-filter",
            Mutation::OccCheck => "occ-check",
            Mutation::RollbackBeforeCommit => "rollback-before-commit",
            Mutation::AtomicCommitCreate => "atomic-commit-create",
            Mutation::LockFencing => "lock-fencing",
            Mutation::CleanKeepsNewestBeforeEcr => "clean-keeps-newest-before-ecr",
            Mutation::ArchiveStopsAtPending => "archive-stops-at-pending",
            Mutation::ArchiveStopsAtUncleanedReplace => "archive-stops-at-uncleaned-replace",
            Mutation::CatalogWatermarkLast => "catalog-watermark-last",
            Mutation::CompactionCommittedLogsOnly => "compaction-committed-logs-only",
            Mutation::RollbackDeletesLogFiles => "rollback-deletes-log-files",
            Mutation::WindowMembership => "window-membership",
            Mutation::StragglerFencing => "straggler-fencing",
            Mutation::ContributionDedupe => "contribution-dedupe",
            Mutation::StoredColumnsKept => "stored-columns-kept",
            Mutation::CommitSchemaWidest => "commit-schema-widest",
            Mutation::CompactionOrphanRolledBack => "compaction-orphan-rolled-back",
            Mutation::PendingCompactionHoldsBase => "pending-compaction-holds-base",
            Mutation::CompactionCarriesLateLogs => "compaction-carries-late-logs",
            Mutation::SlotRule => "slot-rule",
            Mutation::ForeignCompactionSlice => "foreign-compaction-slice",
            Mutation::RouterAwaitsEveryTable => "router-awaits-every-table",
            Mutation::ToastBackfill => "toast-backfill",
            Mutation::PendingBelowBaseChecked => "pending-below-base-checked",
            Mutation::RecreateWritesDelete => "recreate-drops-delete",
            Mutation::CompactionKeepsSnapshot => "compaction-keeps-snapshot",
            Mutation::StartingWriteLeftAlone => "starting-write-left-alone",
            Mutation::DeltaCleanWaitsForMirror => "delta-clean-waits-for-mirror",
            Mutation::DeltaMirrorRemoves => "delta-mirror-removes",
            Mutation::DeltaMirrorLateInstants => "delta-mirror-late-instants",
            Mutation::DeltaLogKeepsActive => "delta-log-keeps-active",
            Mutation::ClusteringSkipsPlannedGroups => "clustering-skips-planned-groups",
            Mutation::ClusteringRollbackRetiresFirst => "clustering-rollback-retires-first",
            Mutation::PartitionMove => "partition-move",
            Mutation::ToastOrdering => "toast-ordering",
            Mutation::FinishInOrder => "finish-in-order",
            Mutation::PartPositions => "part-positions",
            Mutation::ClusteringHeartbeatRefreshed => "clustering-heartbeat-refreshed",
        }
    }

    /// The mutation named `name` (see [`Mutation::name`]).
    pub fn from_name(name: &str) -> Option<Mutation> {
        Mutation::ALL.into_iter().find(|m| m.name() == name.trim())
    }
}

#[cfg(feature = "mutations")]
thread_local! {
    static ACTIVE: std::cell::Cell<Option<Mutation>> = const { std::cell::Cell::new(None) };
}

/// Turns `mutation` on for the current thread (`None`: every mechanism on again).
#[cfg(feature = "mutations")]
pub fn set_active(mutation: Option<Mutation>) {
    ACTIVE.with(|a| a.set(mutation));
}

/// The mutation active on the current thread.
#[cfg(feature = "mutations")]
pub fn active() -> Option<Mutation> {
    ACTIVE.with(|a| a.get())
}

/// Whether `mechanism` is switched off on this thread; always `false` without the `mutations` feature.
#[inline]
pub fn is_disabled(mechanism: Mutation) -> bool {
    #[cfg(feature = "mutations")]
    {
        active() == Some(mechanism)
    }
    #[cfg(not(feature = "mutations"))]
    {
        let _ = mechanism;
        false
    }
}
