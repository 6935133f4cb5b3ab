//! HoodieLogFormat v1: the log files of MERGE_ON_READ file slices (table version 6).
//!
//! A log file `.<fileId>_<baseInstant>.log.<version>_<writeToken>` ([`name`]) is a sequence of blocks, each
//! framed the same way (all integers big-endian; [`block`]):
//!
//! ```text
//! +--------+-----------+---------+------+--------+------------+---------+--------+---------+
//! | #HUDI# | blockSize | version | type | header | contentLen | content | footer | trailer |
//! | 6 B    | int64     | int32=1 | int32| map    | int64      | C bytes | map    | int64   |
//! +--------+-----------+---------+------+--------+------------+---------+--------+---------+
//!           blockSize = bytes after itself up to and including the trailer
//!           trailer   = bytes from the magic through the footer = blockSize + 6
//!           map       = int32 n, then n x (int32 key ordinal, int32 length, UTF-8 value)
//! ```
//!
//! The content depends on the block type:
//! * AVRO_DATA (3, [`avro_block`]): int32 block version 3, int32 record count, then per record an int32
//!   length and the raw Avro binary datum of the header's SCHEMA (the table schema with the five meta fields).
//! * DELETE (1, [`delete_block`]): int32 version 3, int32 length, the Avro datum of a `HoodieDeleteRecordList`.
//! * COMMAND (0, [`command_block`]): no content; the header says which instant is rolled back.
//! * PARQUET_DATA (5, [`parquet_block`]): a whole Parquet file; read only (Spark's default is Avro, and it is
//!   the only data block every engine reads).
//!
//! Reading a file slice as a snapshot reader does: [`scan`] folds the slice's log files into one version
//! per key (committed instants only, rollbacks applied), [`merge`] streams the base file and merges them in.
//!
//! Invariants:
//! * What the writer produces is what Spark-Hudi 0.14 writes: header keys INSTANT_TIME and SCHEMA on data and
//!   delete blocks, INSTANT_TIME, TARGET_INSTANT_TIME and COMMAND_BLOCK_TYPE on command blocks (a 0.14 reader
//!   throws on header ordinals it does not know), empty footers.
//! * The reader never panics on damaged bytes: every size is checked against what remains, and a failure is
//!   a [`LogFileError`] naming the file and the byte offset of the block.

pub mod avro_block;
pub mod block;
pub mod command_block;
mod datum;
pub mod delete_block;
mod error;
pub mod merge;
#[cfg(test)]
pub(crate) mod merge_tests;
pub use crate::table::log_file_name as name;
pub mod parquet_block;
pub mod reader;
pub mod scan;
pub mod writer;

pub use block::{BlockType, HeaderKey};
pub use delete_block::{DeleteRecord, OrderingValue};
pub use error::{ContentError, LogFileError};
pub use merge::{merge_file_slice, BaseRowMerger, MergeCounts, SliceMerger};
pub use name::{LogFileName, LogFileNameError};
pub use reader::{read_log_file, DataBlockFormat, LogBlock};
pub use scan::{
    scan_log_files, scan_stored_log_files, CommittedInstants, LogRecords, LogVersion, MergeError,
    MergeMode, OrderingKey,
};
pub use writer::{rollback_log_file, LogFileWriter};
