//! The table's metadata on storage: `hoodie.properties`, instants and the timeline, commit metadata, file names.
//!
//! Each file has its own error enum naming what failed (key, value, instant, path); [`TableError`] gathers them
//! for callers that only need "the table layer failed". Nothing here writes data files: this layer reads and
//! writes the metadata that makes data files visible, following hudi-format.md for table version 6.

pub mod carried;
pub mod commit;
pub mod file_name;
pub mod fs_view;
pub mod instant;
pub mod log_file_name;
pub mod partition_metadata;
pub mod planned_groups;
pub mod properties;
pub mod records;
pub mod timeline;

use thiserror::Error;

pub use commit::{
    Checkpoint, CommitError, CommitMetadata, OperationType, ReplaceCommitMetadata, RuntimeStats,
    WriteStat,
};
pub use file_name::{BaseFileName, FileNameError, Marker, MarkerType, WriteToken};
pub use fs_view::{
    latest_file_slices, FileSlice, FileSystemView, ListReason, LogVisibility, Refresh,
    ReplacedGroups, SliceLogFile, SliceVisibility,
};
pub use instant::{Action, Instant, InstantError, InstantTime, State};
pub use partition_metadata::{PartitionMetadata, PartitionMetadataError};
pub use properties::{PropertiesError, TableConfigKey, TableProperties};
pub use timeline::{Timeline, TimelineError};

/// Any failure of the table metadata layer.
#[derive(Debug, Error)]
pub enum TableError {
    /// `hoodie.properties`.
    #[error(transparent)]
    Properties(#[from] PropertiesError),
    /// Instant times and timeline file names.
    #[error(transparent)]
    Instant(#[from] InstantError),
    /// Commit metadata and checkpoints.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// Base file, marker and heartbeat names.
    #[error(transparent)]
    FileName(#[from] FileNameError),
    /// `.hoodie_partition_metadata`.
    #[error(transparent)]
    PartitionMetadata(#[from] PartitionMetadataError),
    /// The timeline and file slices.
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    /// Storage.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
}
