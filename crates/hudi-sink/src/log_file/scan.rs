//! The log-record scanner: folds a file slice's log files into one version per record key, as a
//! snapshot reader sees them (groundwork for compaction; [`super::merge`] merges the result into the base).
//!
//! ```text
//!  log files of the slice, in reader order (base instant, version, token)
//!      │ every block, in file order
//!      ▼
//!  rollback blocks ──► set of rolled-back instants (a rollback removes its target's blocks in every file)
//!      │
//!      ▼  data / delete blocks whose instant is committed and not rolled back
//!  fold per record key:  version₁ ⊕ version₂ ⊕ …   (⊕ = the table's merge rule, later operand = later block)
//!      │
//!      ▼
//!  LogRecords { key → winning upsert (batch, row) | delete }   memory: the log records only
//! ```
//!
//! Visibility (`docs/architecture.md`, "Reading merge-on-read file slices"): a block counts when its
//! INSTANT_TIME is a completed instant of the commit timeline, or older than the first instant of the active
//! timeline (archived, hence committed). Blocks of a failed, not rolled-back write are skipped.
//!
//! Merge rules ([`MergeMode`]):
//! * event time (`DefaultHoodieRecordPayload`, `EventTimeAvroPayload`, or an ordering field and nothing
//!   else configured): the larger ordering value wins, ties go to the later version. A delete whose
//!   ordering value is `IntWrapper(0)` (what Spark SQL's DELETE writes) or null has no ordering value: it
//!   wins over everything before it (commit-time delete), and whatever comes after it wins over it. A delete
//!   with a real ordering value, and a `_hoodie_is_deleted = true` row, compete by ordering value like an
//!   upsert. This is the rule of hudi-rs 0.5.0's default reader and of Hudi 1.x, chosen over Spark 0.14's
//!   (where every delete wins) because the readers this project checks against implement it.
//! * commit time (`OverwriteWithLatestAvroPayload`, or no ordering field): the later version always wins.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use thiserror::Error;

use super::delete_block::OrderingValue;
use super::error::LogFileError;
use super::reader::{read_log_file, LogBlock};
use crate::base_file::BaseFileError;
use crate::schema::meta::{IS_DELETED_COL, RECORD_KEY_COL};
use crate::storage::{Storage, StorageError};
use crate::table::instant::InstantTime;

/// Why a file slice could not be read.
#[derive(Debug, Error)]
pub enum MergeError {
    /// A log file does not decode.
    #[error(transparent)]
    Log(#[from] LogFileError),
    /// The base file does not decode.
    #[error(transparent)]
    Base(#[from] BaseFileError),
    /// A file could not be read from storage.
    #[error("reading {path}: {source}")]
    Storage {
        path: String,
        #[source]
        source: StorageError,
    },
    /// The table's merge configuration is not one this reader implements.
    #[error("merge configuration: {reason}")]
    Config { reason: String },
    /// Records that cannot be merged (missing key or ordering column, incompatible types).
    #[error("{reason}")]
    Records { reason: String },
}

fn records_error(reason: impl Into<String>) -> MergeError {
    MergeError::Records {
        reason: reason.into(),
    }
}

/// Which instants' blocks are visible: the completed commit-timeline instants, and everything older than
/// the first instant of the active timeline.
#[derive(Debug, Clone, Default)]
pub struct CommittedInstants {
    completed: BTreeSet<InstantTime>,
    first_active: Option<InstantTime>,
}

impl CommittedInstants {
    /// `completed`: completed commit, deltacommit, replacecommit (and compaction commit) instants;
    /// `first_active`: the earliest instant on the active timeline in any state.
    pub fn new(
        completed: impl IntoIterator<Item = InstantTime>,
        first_active: Option<InstantTime>,
    ) -> Self {
        Self {
            completed: completed.into_iter().collect(),
            first_active,
        }
    }

    /// Whether a block written by `instant` is visible.
    pub fn is_committed(&self, instant: &InstantTime) -> bool {
        self.completed.contains(instant)
            || self
                .first_active
                .as_ref()
                .is_some_and(|first| instant < first)
    }
}

/// How two versions of a record are merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeMode {
    /// The larger value of `ordering_field` wins; ties go to the later version.
    EventTime { ordering_field: String },
    /// The later version wins.
    CommitTime,
}

const PAYLOAD_KEYS: [&str; 3] = [
    "hoodie.compaction.payload.class",
    "hoodie.datasource.write.payload.class",
    "hoodie.table.legacy.payload.class",
];
const STRATEGY_KEY: &str = "hoodie.compaction.record.merger.strategy";
const EVENT_TIME_STRATEGY: &str = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5";
const COMMIT_TIME_STRATEGY: &str = "ce9acb64-bde0-424c-9b91-f6ebba25356d";

impl MergeMode {
    /// The merge mode of a table version 6 table, from `hoodie.properties`: the payload class decides,
    /// then the merger strategy, else event time exactly when an ordering (precombine) field is set.
    pub fn from_table_properties(props: &BTreeMap<String, String>) -> Result<Self, MergeError> {
        let ordering = props
            .get("hoodie.table.precombine.field")
            .or_else(|| props.get("hoodie.table.ordering.fields"))
            .filter(|f| !f.trim().is_empty());
        let event_time = || match ordering {
            Some(field) if field.contains(',') => Err(MergeError::Config {
                reason: format!("several ordering fields ({field}); only one is supported"),
            }),
            Some(field) => Ok(MergeMode::EventTime {
                ordering_field: field.trim().to_string(),
            }),
            None => Err(MergeError::Config {
                reason: "event-time merging without an ordering field".into(),
            }),
        };
        if let Some(payload) = PAYLOAD_KEYS.iter().find_map(|k| props.get(*k)) {
            let short = payload.rsplit('.').next().unwrap_or(payload);
            return match short {
                // The Debezium payloads order by their ordering field too (the MySQL one compares its
                // `_event_seq` text here, where Hudi splits it into binlog file and position).
                "DefaultHoodieRecordPayload"
                | "EventTimeAvroPayload"
                | "PostgresDebeziumAvroPayload"
                | "MySqlDebeziumAvroPayload" => event_time(),
                "OverwriteWithLatestAvroPayload" => Ok(MergeMode::CommitTime),
                _ => Err(MergeError::Config {
                    reason: format!("payload class {payload} is not supported"),
                }),
            };
        }
        match props.get(STRATEGY_KEY).map(String::as_str) {
            Some(EVENT_TIME_STRATEGY) => event_time(),
            Some(COMMIT_TIME_STRATEGY) => Ok(MergeMode::CommitTime),
            Some(other) => Err(MergeError::Config {
                reason: format!("record merger strategy {other} is not supported"),
            }),
            None if ordering.is_some() => event_time(),
            None => Ok(MergeMode::CommitTime),
        }
    }

    fn ordering_field(&self) -> Option<&str> {
        match self {
            MergeMode::EventTime { ordering_field } => Some(ordering_field),
            MergeMode::CommitTime => None,
        }
    }
}

/// An owned ordering value, comparable across the Arrow types of base files and log blocks and the
/// wrappers of delete blocks. Integers (also dates, times, timestamps and unscaled decimals) compare as
/// integers, floats as Java's `Double.compare`, integers against floats as doubles, strings as Java does;
/// null is smaller than everything.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderingKey {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl OrderingKey {
    /// The value of `array[row]`.
    pub fn of_row(array: &ArrayRef, row: usize) -> Result<Self, MergeError> {
        if array.is_null(row) {
            return Ok(OrderingKey::Null);
        }
        Ok(match array.data_type() {
            DataType::Int32 => {
                OrderingKey::Int(array.as_primitive::<Int32Type>().value(row).into())
            }
            DataType::Int64 => {
                OrderingKey::Int(array.as_primitive::<Int64Type>().value(row).into())
            }
            DataType::Date32 => {
                OrderingKey::Int(array.as_primitive::<Date32Type>().value(row).into())
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => OrderingKey::Int(
                array
                    .as_primitive::<TimestampMillisecondType>()
                    .value(row)
                    .into(),
            ),
            DataType::Timestamp(TimeUnit::Microsecond, _) => OrderingKey::Int(
                array
                    .as_primitive::<TimestampMicrosecondType>()
                    .value(row)
                    .into(),
            ),
            DataType::Decimal128(_, _) => {
                OrderingKey::Int(array.as_primitive::<Decimal128Type>().value(row))
            }
            DataType::Float32 => {
                OrderingKey::Float(array.as_primitive::<Float32Type>().value(row).into())
            }
            DataType::Float64 => OrderingKey::Float(array.as_primitive::<Float64Type>().value(row)),
            DataType::Utf8 => OrderingKey::Text(array.as_string::<i32>().value(row).to_string()),
            DataType::Boolean => OrderingKey::Bool(array.as_boolean().value(row)),
            DataType::Binary => OrderingKey::Bytes(array.as_binary::<i32>().value(row).to_vec()),
            other => {
                return Err(records_error(format!(
                    "an ordering column of type {other} cannot order records"
                )))
            }
        })
    }

    /// The value of a delete record's wrapper.
    pub fn of_delete(value: &OrderingValue) -> Self {
        match value {
            OrderingValue::Boolean(b) => OrderingKey::Bool(*b),
            OrderingValue::Int(v) | OrderingValue::Date(v) => OrderingKey::Int((*v).into()),
            OrderingValue::Long(v)
            | OrderingValue::TimeMicros(v)
            | OrderingValue::TimestampMicros(v) => OrderingKey::Int((*v).into()),
            OrderingValue::Float(v) => OrderingKey::Float((*v).into()),
            OrderingValue::Double(v) => OrderingKey::Float(*v),
            OrderingValue::String(s) => OrderingKey::Text(s.clone()),
            OrderingValue::Bytes(b) => OrderingKey::Bytes(b.clone()),
            OrderingValue::Decimal(b) => OrderingKey::Int(unscaled(b)),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            OrderingKey::Null => 0,
            OrderingKey::Bool(_) => 1,
            OrderingKey::Int(_) | OrderingKey::Float(_) => 2,
            OrderingKey::Text(_) => 3,
            OrderingKey::Bytes(_) => 4,
        }
    }

    /// Total order; values of unrelated kinds (which one table never mixes) order by kind.
    pub fn compare(&self, other: &Self) -> Ordering {
        use OrderingKey::*;
        match (self, other) {
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Int(a), Float(b)) => (*a as f64).total_cmp(b),
            (Float(a), Int(b)) => a.total_cmp(&(*b as f64)),
            (Text(a), Text(b)) => crate::base_file::writer::java_string_cmp(a, b),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// A two's-complement big-endian integer of at most 16 bytes (longer values saturate).
fn unscaled(bytes: &[u8]) -> i128 {
    if bytes.len() > 16 {
        return if bytes[0] & 0x80 != 0 {
            i128::MIN
        } else {
            i128::MAX
        };
    }
    let fill = if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        0xff
    } else {
        0
    };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    i128::from_be_bytes(buf)
}

/// The surviving log version of one record key.
#[derive(Debug, Clone, PartialEq)]
pub enum LogVersion {
    /// Row `row` of data batch `batch` ([`LogRecords::batches`]).
    Upsert {
        batch: usize,
        row: usize,
        ordering: OrderingKey,
    },
    /// A delete; `ordering` is `None` for a commit-time delete (ordering value `IntWrapper(0)` or null).
    Delete { ordering: Option<OrderingKey> },
}

impl LogVersion {
    /// The ordering value, `None` for a commit-time delete.
    fn ordering(&self) -> Option<&OrderingKey> {
        match self {
            LogVersion::Upsert { ordering, .. } => Some(ordering),
            LogVersion::Delete { ordering } => ordering.as_ref(),
        }
    }

    /// Whether this version deletes the record.
    pub fn is_delete(&self) -> bool {
        matches!(self, LogVersion::Delete { .. })
    }
}

/// Whether `newer` replaces `existing` (`None` = a commit-time delete) under `mode`.
pub(crate) fn newer_wins(
    mode: &MergeMode,
    existing: Option<&OrderingKey>,
    newer: &LogVersion,
) -> bool {
    match mode {
        MergeMode::CommitTime => true,
        MergeMode::EventTime { .. } => match (existing, newer.ordering()) {
            (_, None) | (None, Some(_)) => true,
            (Some(old), Some(new)) => new.compare(old) != Ordering::Less,
        },
    }
}

/// What was skipped and kept while scanning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Data and delete blocks folded.
    pub blocks_merged: u64,
    /// Data and delete blocks of instants that are not committed.
    pub blocks_uncommitted: u64,
    /// Data and delete blocks removed by a rollback block.
    pub blocks_rolled_back: u64,
    /// Rollback command blocks.
    pub rollback_blocks: u64,
    /// Records and deleted keys folded.
    pub records: u64,
}

/// The log records of one file slice, folded by key.
#[derive(Debug, Clone)]
pub struct LogRecords {
    mode: MergeMode,
    /// The rows of the visible data blocks, in log order.
    batches: Vec<RecordBatch>,
    /// Key → index into `versions`.
    index: HashMap<String, usize>,
    /// `(key, version)` in order of each key's first appearance in the log.
    versions: Vec<(String, LogVersion)>,
    stats: ScanStats,
}

impl LogRecords {
    /// An empty fold (a slice without log files).
    pub fn empty(mode: MergeMode) -> Self {
        Self {
            mode,
            batches: Vec::new(),
            index: HashMap::new(),
            versions: Vec::new(),
            stats: ScanStats::default(),
        }
    }

    /// The merge mode the records were folded with.
    pub fn mode(&self) -> &MergeMode {
        &self.mode
    }

    /// The data batches that [`LogVersion::Upsert`] points into.
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// The surviving version of `key`, with its position in [`Self::versions`].
    pub fn get(&self, key: &str) -> Option<(usize, &LogVersion)> {
        self.index.get(key).map(|&i| (i, &self.versions[i].1))
    }

    /// Every key's surviving version, in order of the key's first appearance.
    pub fn versions(&self) -> &[(String, LogVersion)] {
        &self.versions
    }

    /// What the scan kept and skipped.
    pub fn stats(&self) -> ScanStats {
        self.stats
    }

    /// Folds one version of `key` into the map.
    fn offer(&mut self, key: &str, candidate: LogVersion) {
        self.stats.records += 1;
        match self.index.get(key) {
            None => {
                self.index.insert(key.to_string(), self.versions.len());
                self.versions.push((key.to_string(), candidate));
            }
            Some(&slot) => {
                let current = &self.versions[slot].1;
                if newer_wins(&self.mode, current.ordering(), &candidate) {
                    self.versions[slot].1 = candidate;
                }
            }
        }
    }

    fn fold_data(&mut self, batch: RecordBatch) -> Result<(), MergeError> {
        let keys = batch
            .column_by_name(RECORD_KEY_COL)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| {
                records_error(format!(
                    "a data block without a {RECORD_KEY_COL} string column"
                ))
            })?
            .clone();
        let ordering = match self.mode.ordering_field() {
            Some(field) => Some(batch.column_by_name(field).cloned().ok_or_else(|| {
                records_error(format!("a data block without the ordering column {field}"))
            })?),
            None => None,
        };
        let deleted = batch
            .column_by_name(IS_DELETED_COL)
            .and_then(|c| c.as_boolean_opt().cloned());
        let slot = self.batches.len();
        for row in 0..batch.num_rows() {
            if keys.is_null(row) {
                return Err(records_error(format!(
                    "a log record without {RECORD_KEY_COL}"
                )));
            }
            let ordering = match &ordering {
                Some(col) => OrderingKey::of_row(col, row)?,
                None => OrderingKey::Null,
            };
            let is_deleted = deleted
                .as_ref()
                .is_some_and(|d| d.is_valid(row) && d.value(row));
            let version = if is_deleted {
                LogVersion::Delete {
                    ordering: self.mode.ordering_field().map(|_| ordering),
                }
            } else {
                LogVersion::Upsert {
                    batch: slot,
                    row,
                    ordering,
                }
            };
            self.offer(keys.value(row), version);
        }
        self.batches.push(batch);
        Ok(())
    }

    fn fold_deletes(&mut self, records: &[super::DeleteRecord]) -> Result<(), MergeError> {
        for record in records {
            let key = record
                .record_key
                .as_deref()
                .ok_or_else(|| records_error("a delete record without a record key"))?;
            let ordering = match &record.ordering_value {
                None | Some(OrderingValue::Int(0)) => None,
                Some(_) if self.mode == MergeMode::CommitTime => None,
                Some(value) => Some(OrderingKey::of_delete(value)),
            };
            self.offer(key, LogVersion::Delete { ordering });
        }
        Ok(())
    }
}

/// Scans the log files of one file slice, given in reader order (the order of [`super::LogFileName`]) as
/// `(name, bytes)`.
pub fn scan_log_files<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> Result<LogRecords, MergeError> {
    let mut blocks = Vec::new();
    for (name, bytes) in files {
        blocks.extend(read_log_file(name, bytes)?);
    }
    fold_blocks(blocks, committed, mode)
}

/// One stored log file, whole.
async fn read_stored(storage: &dyn Storage, path: &str) -> Result<bytes::Bytes, MergeError> {
    storage
        .get(path)
        .await
        .map_err(|source| MergeError::Storage {
            path: path.to_string(),
            source,
        })
}

/// Log files of one slice read at once by [`scan_stored_log_files`].
const LOG_READS_IN_FLIGHT: usize = 8;

/// [`scan_log_files`] over stored files (`paths` in reader order; each log file is read whole).
pub async fn scan_stored_log_files(
    storage: &dyn Storage,
    paths: &[String],
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> Result<LogRecords, MergeError> {
    use futures_util::stream::{StreamExt, TryStreamExt};
    // The files are read LOG_READS_IN_FLIGHT at a time (a slice written by many members of interval
    // windows has many small logs), and decoded in order. The reads are collected first: a stream over a
    // mapping closure would make the caller's future not `Send` for every lifetime (a rustc limitation).
    let reads: Vec<_> = paths
        .iter()
        .map(|path| read_stored(storage, path))
        .collect();
    let files: Vec<bytes::Bytes> = futures_util::stream::iter(reads)
        .buffered(LOG_READS_IN_FLIGHT)
        .try_collect()
        .await?;
    let mut blocks = Vec::new();
    for (path, bytes) in paths.iter().zip(files) {
        blocks.extend(read_log_file(path, &bytes)?);
    }
    fold_blocks(blocks, committed, mode)
}

/// Applies rollbacks and visibility, then folds the remaining blocks in order.
fn fold_blocks(
    blocks: Vec<LogBlock>,
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> Result<LogRecords, MergeError> {
    let mut out = LogRecords::empty(mode.clone());
    // A rollback block removes its target's blocks wherever they are, and is itself never gated by
    // visibility (it is written by the rollback, whose instant need not be on the commit timeline).
    let rolled_back: BTreeSet<InstantTime> = blocks
        .iter()
        .filter_map(|b| match b {
            LogBlock::Rollback {
                target_instant_time,
                ..
            } => Some(target_instant_time.clone()),
            _ => None,
        })
        .collect();
    for block in blocks {
        if let LogBlock::Rollback { .. } = block {
            out.stats.rollback_blocks += 1;
            continue;
        }
        let instant = block.instant_time();
        if rolled_back.contains(instant) {
            out.stats.blocks_rolled_back += 1;
            continue;
        }
        if !committed.is_committed(instant) {
            out.stats.blocks_uncommitted += 1;
            continue;
        }
        out.stats.blocks_merged += 1;
        match block {
            LogBlock::Data { records, .. } => out.fold_data(records)?,
            LogBlock::Delete { records, .. } => out.fold_deletes(&records)?,
            LogBlock::Rollback { .. } => {}
        }
    }
    Ok(out)
}
