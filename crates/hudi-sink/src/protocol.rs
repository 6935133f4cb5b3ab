//! The writer ↔ coordinator protocol: JSON messages, the same in-process and over Lambda `Invoke`.
//!
//! ```text
//! writer                                   coordinator (holds the table lock for each call)
//!   ── Begin{writer} ───────────────────▶  roll back expired failed writes; new instant t;
//!                                          <t>.commit.requested, <t>.inflight, heartbeat
//!   ◀── Begun{instant, base, checkpoint}
//!   (write markers and base files, heartbeat <t>)
//!   ── Commit{instant, base, stats, offsets} ▶ refuse if t was rolled back; Conflict if a commit after
//!                                          `base` touched the same file group / bucket; AlreadyCommitted if
//!                                          the checkpoint covers any offset; verify files; <t>.commit
//!   ◀── Committed | Conflict | AlreadyCommitted | RolledBack
//!   ── Abort{instant} ─────────────────▶  roll back t now (after a conflict), so nothing of it survives
//! ```
//!
//! Conflict and already-committed are answers, not errors: the writer retries on them. Transport and
//! storage failures are errors; every request is safe to repeat (a repeated commit of a completed instant
//! with the same stats answers `Committed`).

use serde::{Deserialize, Serialize};

use crate::table::commit::{Checkpoint, WriteStat};

/// One request to the coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CoordinatorRequest {
    /// Start an instant.
    Begin {
        /// Who asks (Lambda request id or host), for logs and the heartbeat.
        writer: String,
    },
    /// Complete an instant.
    Commit(CommitRequest),
    /// Roll back an instant this writer gives up.
    Abort {
        /// The instant to roll back.
        instant: String,
    },
    /// Run table services now (roll back expired failed writes, clean, archive, cluster).
    Services,
    /// Join the open window of the commit interval (or open one): `commit/window`.
    Join(JoinRequest),
    /// Record a member's contribution to its window, and close the window if it is the last one.
    Submit(SubmitRequest),
    /// Has the window committed this member's contribution? Closes the window when it is due.
    Close {
        /// The window's instant.
        instant: String,
        /// The member asking.
        member: String,
    },
}

/// A writer joining the window of the current commit interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinRequest {
    /// Who asks (Lambda request id or host), for logs.
    pub writer: String,
    /// The member's name in the window, unique per attempt (a file-name-safe string).
    pub member: String,
    /// `hudi.sink.commit.interval.ms` of the writer: the length of a new window.
    pub interval_ms: u64,
    /// The open window the writer saw in its listing of `.hoodie/`, if any: joined without another listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// The offsets the writer's batch consumes: a batch the checkpoint already covers (a redelivery) is
    /// answered `AlreadyCommitted` instead of opening a window for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offsets: Vec<TopicOffsets>,
    /// More records wait behind this batch (a backfill, a full event-source batch): when the current slot
    /// has its write instant already, the coordinator opens a window for it at once instead of answering
    /// `Waiting` for the next slot. The interval bounds how often small batches commit, not how fast a
    /// backlog is read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backlog: bool,
}

/// What one member wrote in a window: everything its part of the commit needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    /// The member's name in the window.
    pub member: String,
    /// Hudi operation type name (`UPSERT`, `INSERT`, `DELETE`).
    pub operation: String,
    /// One stat per written file.
    pub write_stats: Vec<WriteStat>,
    /// Avro schema of the data (`extraMetadata.schema`).
    pub schema: String,
    /// Offsets consumed, per topic (empty for a member that withdrew).
    pub offsets: Vec<TopicOffsets>,
}

/// A member's contribution, for its window's instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// The window's instant.
    pub instant: String,
    /// The window's end (from `Joined`): when to ask again while other members are still writing.
    pub end_ms: i64,
    /// When members that have not submitted are excluded (the window end plus twice the lease's margin,
    /// from `Joined`); 0: the coordinator's heartbeat tolerance after the end.
    #[serde(default)]
    pub exclude_ms: i64,
    /// The writer's commit interval: the window closes early (every member submitted) only after its join
    /// grace. 0 (older writers): no grace.
    #[serde(default)]
    pub interval_ms: u64,
    /// The window was opened for a backlog (from `Joined`): no join grace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backlog: bool,
    /// What the member wrote.
    pub contribution: Contribution,
}

/// Kafka offsets consumed by an instant for one topic-partition: `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRange {
    /// Partition.
    pub partition: i32,
    /// First offset written by the instant.
    pub first: i64,
    /// Last offset written by the instant (the checkpoint becomes `last + 1`).
    pub last: i64,
}

/// Offsets per topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicOffsets {
    /// Topic name.
    pub topic: String,
    /// Ranges, one per partition.
    pub ranges: Vec<OffsetRange>,
}

/// What a writer asks to commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitRequest {
    /// The instant from `Begin`.
    pub instant: String,
    /// The last completed instant when the writer began (its view of the table).
    pub base_instant: Option<String>,
    /// The writes pending below the base when the writer began (from `Begun`): not in its view, so checked
    /// once completed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// Hudi operation type name (`UPSERT`, `INSERT`, `DELETE`).
    pub operation: String,
    /// One stat per written file.
    pub write_stats: Vec<WriteStat>,
    /// Avro schema of the data (`extraMetadata.schema`).
    pub schema: String,
    /// Offsets consumed, per topic.
    pub offsets: Vec<TopicOffsets>,
    /// The newest heartbeat of the instant the writer knows was stored (its content, epoch ms). The stored
    /// one can only be newer, so when this one is within the tolerance the coordinator need not read it
    /// back; when it is not, the coordinator reads. Absent from older writers (always read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_ms: Option<i64>,
}

/// The coordinator's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CoordinatorResponse {
    /// An instant was started.
    Begun {
        /// The new instant.
        instant: String,
        /// The latest completed instant.
        base_instant: Option<String>,
        /// The writes pending below the base: another engine's may still complete, and the commit is checked
        /// against it then (`commit/conflict.rs`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending: Vec<String>,
        /// The current checkpoint as `hudi.sink.checkpoint` JSON (`{}` when none).
        checkpoint: String,
        /// The content of the heartbeat written with the instant (epoch ms).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        heartbeat_ms: Option<i64>,
    },
    /// The instant is complete and durable.
    Committed {
        /// The committed instant.
        instant: String,
    },
    /// A commit completed after `base_instant` touched the same file group or bucket: retry with a fresh
    /// instant.
    Conflict {
        /// What collided.
        reason: String,
    },
    /// The checkpoint already covers some offsets of the request: re-filter and retry.
    AlreadyCommitted {
        /// The current checkpoint (`hudi.sink.checkpoint` JSON).
        checkpoint: String,
    },
    /// The instant was rolled back (its heartbeat expired): nothing of it may be committed.
    RolledBack {
        /// The instant.
        instant: String,
    },
    /// `Abort` or `Services` finished.
    Done,
    /// The writer is a member of the window `instant`: it writes its files named with it until `lease_ms`.
    Joined {
        /// The window's instant.
        instant: String,
        /// The window's base: the latest completed instant when it opened (conflicts are checked after it).
        base_instant: Option<String>,
        /// The checkpoint when the window opened (`hudi.sink.checkpoint` JSON); the close checks it again.
        checkpoint: String,
        /// Epoch ms after which the window takes no new member and closes once every member submitted.
        end_ms: i64,
        /// Epoch ms until which the member may upload; after it the close may exclude it.
        lease_ms: i64,
        /// The window was opened for a backlog: it closes as soon as every member submitted (no join grace).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        backlog: bool,
    },
    /// The window committed, with this member's contribution.
    WindowCommitted {
        /// The window's instant.
        instant: String,
        /// How many contributions the commit took.
        contributions: u32,
        /// How many members it left out.
        excluded: u32,
    },
    /// The window is not closed yet: ask again (`Close`) at `until_ms`.
    Waiting {
        /// The window's instant.
        instant: String,
        /// Epoch ms of the next useful question.
        until_ms: i64,
    },
    /// The window committed without this member's contribution: its offsets were committed by another
    /// member (`checkpoint` covers them: re-filter), or it conflicted with another contribution or commit
    /// (retry in a later window). Its files are deleted.
    Excluded {
        /// The window's instant.
        instant: String,
        /// Why.
        reason: String,
        /// The checkpoint after the window (`hudi.sink.checkpoint` JSON).
        checkpoint: String,
    },
}

/// Whether `checkpoint` already covers an offset of `offsets` (a range starting below the next offset to
/// read). Offsets may have gaps, so this compares range starts, never record counts.
pub fn checkpoint_covers(checkpoint: &Checkpoint, offsets: &[TopicOffsets]) -> bool {
    offsets.iter().any(|t| {
        t.ranges.iter().any(|r| {
            checkpoint
                .get(&t.topic, r.partition)
                .is_some_and(|next| r.first < next)
        })
    })
}
