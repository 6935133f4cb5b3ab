//! The write path: one Hudi instant from Arrow record batches.
//!
//! ```text
//!  batches ──keys, partitions──▶ fold by (partition, key) ──route──▶ file groups
//!     begin: roll back failed instants, <t>.commit.requested, <t>.inflight
//!     per file group: marker, merge with the latest committed slice, base file
//!     commit: <t>.commit (atomic create-if-absent), then markers deleted
//! ```
//!
//! [`TableWriter`] is the in-process single writer. The exactly-once path (coordinator, lock, Kafka
//! checkpoints) reuses its stages: [`TableWriter::begin`], [`TableWriter::write_files`],
//! [`TableWriter::commit`].

pub mod config;
pub mod heartbeat;
pub mod lease;
pub mod merge;
pub mod ordering;
mod table_writer;
pub mod toast;
pub mod verify;

use thiserror::Error;

pub use config::{IndexConfig, WriteConfig, WriteOperation};
pub(crate) use table_writer::{
    create_pending_instant, delete_data_files, files_named_by_markers, rollback_failed,
};
pub use table_writer::{
    PreparedWrite, TableSchema, TableWriter, WriteCounts, WriteResult, IS_DELETED_FIELD,
};

use crate::base_file::BaseFileError;
use crate::config::ConfigError;
use crate::record::keygen::{KeyError, KeyGenError};
use crate::schema::SchemaError;
use crate::storage::StorageError;
use crate::table::{
    CommitError, FileNameError, InstantError, PartitionMetadataError, PropertiesError, TableError,
    TimelineError,
};

/// Failures of the write path, by stage, with the table and instant involved where known.
#[derive(Debug, Error)]
pub enum WriteError {
    /// The configuration does not fit the table or the data.
    #[error("write configuration: {reason}")]
    Config { reason: String },
    /// A record could not be keyed or placed (the row index is in the incoming batches).
    #[error("record {row}: {source}")]
    Record {
        row: usize,
        #[source]
        source: KeyError,
    },
    /// The incoming batches do not match the table schema.
    #[error("incoming data does not match the table schema: {reason}")]
    Data { reason: String },
    /// The table on storage is not one this writer can write safely.
    #[error("table at {base_path}: {reason}")]
    Table { base_path: String, reason: String },
    /// Another writer created the same instant file first.
    #[error("instant {instant} already exists on the timeline ({file})")]
    InstantExists { instant: String, file: String },
    /// Table metadata (properties, timeline, commit) failed.
    #[error(transparent)]
    Metadata(#[from] TableError),
    /// Invalid key generator configuration.
    #[error(transparent)]
    KeyGen(#[from] KeyGenError),
    /// Invalid configuration.
    #[error(transparent)]
    ConfigKey(#[from] ConfigError),
    /// Schema problem.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Writing or reading a base file failed.
    #[error(transparent)]
    BaseFile(#[from] BaseFileError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Dead letters could not be stored (the invocation fails so that nothing is lost).
    #[error("dead letters: {0}")]
    DeadLetter(String),
    /// The coordinator could not be reached or answered nonsense.
    #[error("coordinator {function}: {message}")]
    Transport { function: String, message: String },
    /// Too little time was left before the invocation deadline to start `step`; nothing was committed and
    /// the redelivered batch starts over.
    #[error(
        "not starting the {step}: {remaining_ms} ms left before the invocation deadline, {needed_ms} ms needed \
         (hudi.sink.deadline.reserve.ms included); nothing was committed, the batch will be redelivered"
    )]
    Deadline {
        step: &'static str,
        remaining_ms: i64,
        needed_ms: u64,
    },
    /// A table service could not do its work (a timeline file it needs is malformed, a plan names a file
    /// outside the table).
    #[error("table service {service}: {reason}")]
    Service {
        service: &'static str,
        reason: String,
    },
    /// The table lock failed.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// A writer schema Hudi would refuse for this table (nothing was written with it).
    #[error(transparent)]
    Evolution(#[from] crate::schema::evolution::EvolutionError),
    /// A schema registry could not be used (retryable: nothing was written).
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    /// The coordinator answered something the writer did not ask for.
    #[error("unexpected coordinator answer to {request}: {answer}")]
    Protocol {
        request: &'static str,
        answer: String,
    },
    /// Writing or reading a log file (merge-on-read) failed (boxed: the error is large and rare).
    #[error(transparent)]
    LogFile(Box<crate::log_file::LogFileError>),
    /// A log file name could not be made (a file id or version out of range).
    #[error(transparent)]
    LogFileName(Box<crate::log_file::LogFileNameError>),
    /// A window member's lease ran out before an upload: the window may close without it, so it stops
    /// writing (docs/architecture.md, "Interval commit"). The batch is redelivered.
    #[error(
        "window {instant}: the member's lease ended at {lease_ms} (epoch ms), before this upload; it stops so \
         that no file of it lands in a window that may have closed without it, and the batch is redelivered"
    )]
    LeaseExpired { instant: String, lease_ms: i64 },
    /// Arrow kernels failed.
    #[error("arrow {context}: {source}")]
    Arrow {
        context: &'static str,
        #[source]
        source: arrow_schema::ArrowError,
    },
}

macro_rules! via_table_error {
    ($($t:ty),*) => {
        $(impl From<$t> for WriteError {
            fn from(e: $t) -> Self {
                WriteError::Metadata(TableError::from(e))
            }
        })*
    };
}

via_table_error!(
    PropertiesError,
    InstantError,
    CommitError,
    FileNameError,
    PartitionMetadataError,
    TimelineError
);

impl From<crate::log_file::LogFileError> for WriteError {
    fn from(e: crate::log_file::LogFileError) -> Self {
        WriteError::LogFile(Box::new(e))
    }
}

impl From<crate::log_file::LogFileNameError> for WriteError {
    fn from(e: crate::log_file::LogFileNameError) -> Self {
        WriteError::LogFileName(Box::new(e))
    }
}

impl From<crate::record::decode::DecodeError> for WriteError {
    fn from(e: crate::record::decode::DecodeError) -> Self {
        WriteError::Data {
            reason: e.to_string(),
        }
    }
}

impl From<crate::dead_letter::DeadLetterError> for WriteError {
    fn from(e: crate::dead_letter::DeadLetterError) -> Self {
        WriteError::DeadLetter(e.to_string())
    }
}

impl From<crate::index::bucket::BucketIndexError> for WriteError {
    fn from(e: crate::index::bucket::BucketIndexError) -> Self {
        WriteError::Config {
            reason: e.to_string(),
        }
    }
}
