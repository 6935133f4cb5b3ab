//! The mirror step: which Hudi instants the Delta log lacks, and one Delta commit per instant.
//!
//! State lives in the Delta log only: the application transaction `txn(hudi-sink-mirror)` counts the mirror's
//! commits (the sequence number a retried step checks, and the conflict check against a second coordinator), and
//! each commit's `commitInfo` carries the Hudi instant it mirrors (`hudiInstant`, the watermark) and the
//! commit-like instants that were still pending below it (`hudiPending`): Hudi table services complete out of
//! instant order, and an instant pending at the watermark that completes later is mirrored then.
//!
//! Each step is a diff of states, not a replay of write stats: the base files visible as of the instant (the
//! sink's file-system view, which reads replacecommits and pending compactions as Hudi readers do) against the
//! files of the Delta snapshot. So a step redone after a crash, a clustering, a rollback and the first step on
//! an existing table (a full snapshot) all come out right, and merge-on-read tables get their read-optimized
//! view (base files only).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant as WallClock;

use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties, TableReference};
use deltalake_core::kernel::{Action, Add, MetadataExt as _, StructType, Transaction};
use deltalake_core::logstore::LogStoreRef;
use deltalake_core::operations::create::CreateBuilder;
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError, TableProperty};
use futures_util::StreamExt as _;
use serde_json::{json, Value};

use super::config::DeltaConfig;
use super::expiry::expire_logs;
use super::partition::partition_values;
use super::{schema, stats, store};
use crate::base_file::reader::read_metadata_from_storage;
use crate::commit::{CommitMirror, MirrorReport};
use crate::record::partition::PartitionPathOptions;
use crate::storage::Storage;
use crate::table::commit::OperationType;
use crate::table::fs_view::{latest_file_slices, FileSlice};
use crate::table::instant::{Instant, InstantTime};
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;

/// The application id of the mirror's `txn` action.
pub const APP_ID: &str = "hudi-sink-mirror";
/// `commitInfo` key: the Hudi instant a Delta version mirrors.
pub(super) const INSTANT_KEY: &str = "hudiInstant";
/// `commitInfo` key: commit-like instants pending below [`INSTANT_KEY`] when it was mirrored.
const PENDING_KEY: &str = "hudiPending";
/// `commitInfo` key: the Hudi action mirrored.
const ACTION_KEY: &str = "hudiAction";
/// `commitInfo` key: the Hudi instant that completed (differs from [`INSTANT_KEY`] for an instant that was
/// pending below the watermark).
const COMPLETED_KEY: &str = "hudiCompleted";
/// The table properties set from Hudi's cleaner settings ([`DeltaConfig::retention_interval`]).
const RETENTION_KEYS: [&str; 2] = [
    "delta.logRetentionDuration",
    "delta.deletedFileRetentionDuration",
];
/// `delta.checkpointInterval`: delta-rs writes a checkpoint after every tenth version (9, 19, ...).
const CHECKPOINT_INTERVAL: u64 = 10;

/// Why a mirror step failed (it is retried by the next commit).
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// Reading the Hudi table failed.
    #[error("reading the Hudi table: {0}")]
    Hudi(String),
    /// The Delta log could not be read or written.
    #[error("Delta log: {0}")]
    Delta(#[from] DeltaTableError),
    /// A Delta action could not be built.
    #[error("Delta action: {0}")]
    Kernel(#[from] deltalake_core::kernel::Error),
    /// The table's object store could not be opened.
    #[error("opening the Delta log store: {0}")]
    Store(String),
    /// The table schema has no Delta form.
    #[error("table schema: {0}")]
    Schema(String),
    /// The table has a layout the mirror does not handle.
    #[error("not mirrored: {0}")]
    Unsupported(String),
}

fn hudi(e: impl std::fmt::Display) -> MirrorError {
    MirrorError::Hudi(e.to_string())
}

/// The Delta Lake mirror of one table (the coordinator's [`CommitMirror`]).
#[derive(Debug)]
pub struct DeltaMirror {
    config: DeltaConfig,
    last_report: Mutex<Option<MirrorReport>>,
}

impl DeltaMirror {
    /// The mirror of the table at `config.base_path`.
    pub fn new(config: DeltaConfig) -> Self {
        Self {
            config,
            last_report: Mutex::new(None),
        }
    }

    /// Brings the Delta log up to `timeline`; the error is the step's, after every version it did commit.
    pub async fn run(
        &self,
        shared: &Arc<dyn Storage>,
        timeline: &Timeline,
        report: &mut MirrorReport,
    ) -> Result<(), MirrorError> {
        let storage = shared.as_ref();
        let table_props = TableProperties::load(storage).await.map_err(hudi)?;
        let layout = Layout::of(&table_props);
        let log_store = store::log_store(shared.clone(), &self.config.base_path)?;
        let completed = timeline.completed_commits();
        let Some(latest) = completed.last() else {
            return Ok(());
        };
        let mut table = DeltaTable::new(log_store.clone());
        match table.load().await {
            Ok(()) => {}
            Err(DeltaTableError::NotATable(_)) => {
                // First step (a new table, or the key turned on for an existing one): the full snapshot.
                let step = Step::of(timeline, latest, &latest.time);
                self.create(storage, timeline, &layout, &log_store, &step, report)
                    .await?;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        let mut mirrored = Mirrored::read(&table, &log_store).await?;
        let mut checkpointed = false;
        for step in steps(timeline, &completed, &mirrored) {
            let version = self
                .commit(
                    storage, timeline, &layout, &table, &log_store, &mirrored, &step, report,
                )
                .await?;
            checkpointed |= (version + 1) % CHECKPOINT_INTERVAL == 0;
            mirrored.seq += 1;
            mirrored.watermark = Some(step.as_of.clone());
            table.update_state().await?;
            report.version = Some(version);
            report.instant = Some(step.label.time.to_string());
        }
        report.version = table.version();
        report.instant = mirrored.watermark.map(|w| w.to_string());
        if checkpointed {
            let floor = timeline.instants().first().map(|i| &i.time);
            expire_logs(&log_store, self.config.retention, floor).await?;
        }
        Ok(())
    }

    /// Creates the Delta table: protocol, metaData and the files visible as of `step`, as version 0.
    async fn create(
        &self,
        storage: &dyn Storage,
        timeline: &Timeline,
        layout: &Layout,
        log_store: &LogStoreRef,
        step: &Step,
        report: &mut MirrorReport,
    ) -> Result<(), MirrorError> {
        let schema_text = timeline
            .latest_schema(storage)
            .await
            .map_err(hudi)?
            .ok_or_else(|| MirrorError::Schema("no completed commit carries a schema".into()))?;
        let delta_schema = schema::delta_schema(&schema_text)?;
        let partition_columns = layout.partition_columns(&delta_schema)?;
        let target = target_files(storage, timeline, &step.as_of).await?;
        let mut sources = StatsSource::default();
        let shape = Shape {
            schema: &delta_schema,
            partition_columns: &partition_columns,
            options: layout.options,
        };
        let mut adds = Vec::new();
        for slice in target.values() {
            adds.push(Action::Add(
                add_of(storage, timeline, &shape, slice, &mut sources, true).await?,
            ));
        }
        report.files_added += adds.len() as u64;
        let table = CreateBuilder::new()
            .with_log_store(log_store.clone())
            .with_table_name(layout.table_name.clone())
            .with_columns(delta_schema.fields().cloned())
            .with_partition_columns(partition_columns.clone())
            .with_configuration_property(
                TableProperty::CheckpointInterval,
                Some(CHECKPOINT_INTERVAL.to_string()),
            )
            .with_configuration_property(
                TableProperty::LogRetentionDuration,
                Some(self.config.retention_interval()),
            )
            .with_configuration_property(
                TableProperty::DeletedFileRetentionDuration,
                Some(self.config.retention_interval()),
            )
            .with_actions(adds)
            .with_commit_properties(commit_properties(0, step, timeline))
            .await?;
        report.versions_committed += 1;
        report.version = table.version();
        report.instant = Some(step.as_of.to_string());
        Ok(())
    }

    /// Commits one step onto the loaded `table`; returns the new version.
    #[allow(clippy::too_many_arguments)]
    async fn commit(
        &self,
        storage: &dyn Storage,
        timeline: &Timeline,
        layout: &Layout,
        table: &DeltaTable,
        log_store: &LogStoreRef,
        mirrored: &Mirrored,
        step: &Step,
        report: &mut MirrorReport,
    ) -> Result<u64, MirrorError> {
        let snapshot = table.snapshot()?;
        let target = target_files(storage, timeline, &step.as_of).await?;
        let live: HashMap<String, _> = snapshot
            .log_data()
            .iter()
            .map(|f| (f.path().to_string(), f))
            .collect();
        let mut actions = Vec::new();
        let meta = timeline
            .commit_metadata(storage, &step.label)
            .await
            .map_err(hudi)?;
        // A clustering rewrites the same rows: streaming readers may skip it.
        let data_change = meta.operation_type != OperationType::Cluster;
        // Schema evolution: a write that changed the schema brings a new metaData (same id, partitions and
        // configuration).
        let schema_text = meta
            .operation_type
            .can_update_schema()
            .then(|| meta.schema().map(str::to_string))
            .flatten();
        // Retention: a change of Hudi's cleaner settings brings a new metaData too.
        let mut delta_schema: StructType = (*snapshot.schema()).clone();
        let partition_columns = snapshot.metadata().partition_columns().to_vec();
        let mut metadata = snapshot.metadata().clone();
        let mut metadata_changed = false;
        if let Some(text) = schema_text {
            let new = schema::delta_schema(&text)?;
            if delta_schema != new {
                metadata = metadata.with_schema(&new)?;
                metadata_changed = true;
                delta_schema = new;
            }
        }
        let retention = self.config.retention_interval();
        for key in RETENTION_KEYS {
            if metadata.configuration().get(key) != Some(&retention) {
                metadata = metadata.add_config_key(key.to_string(), retention.clone())?;
                metadata_changed = true;
            }
        }
        if metadata_changed {
            actions.push(Action::Metadata(metadata));
        }
        let now = chrono::Utc::now().timestamp_millis();
        let removes = !crate::mutation::is_disabled(crate::mutation::Mutation::DeltaMirrorRemoves);
        for (path, file) in &live {
            if removes && !target.contains_key(path) {
                let mut remove = file.remove_action(data_change);
                remove.deletion_timestamp = Some(now);
                actions.push(Action::Remove(remove));
                report.files_removed += 1;
            }
        }
        let mut sources = StatsSource::default();
        let shape = Shape {
            schema: &delta_schema,
            partition_columns: &partition_columns,
            options: layout.options,
        };
        for (path, slice) in &target {
            if !live.contains_key(path) {
                actions.push(Action::Add(
                    add_of(storage, timeline, &shape, slice, &mut sources, data_change).await?,
                ));
                report.files_added += 1;
            }
        }
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: (!partition_columns.is_empty()).then(|| partition_columns.clone()),
            predicate: None,
        };
        let finalized = CommitBuilder::from(commit_properties(mirrored.seq + 1, step, timeline))
            .with_actions(actions)
            .build(
                Some(snapshot as &dyn TableReference),
                log_store.clone(),
                operation,
            )
            .await?;
        report.versions_committed += 1;
        Ok(finalized.version() as u64)
    }
}

#[async_trait::async_trait]
impl CommitMirror for DeltaMirror {
    async fn mirror(&self, storage: &Arc<dyn Storage>, timeline: &Timeline) -> bool {
        let started = WallClock::now();
        let mut report = MirrorReport::default();
        let result = self.run(storage, timeline, &mut report).await;
        let caught_up = result.is_ok();
        if let Err(e) = result {
            tracing::warn!(table = %self.config.base_path, error = %e, "Delta mirror failed; the next commit catches up");
            report.error = Some(e.to_string());
            report.failures = 1;
        } else if report.versions_committed > 0 {
            tracing::info!(
                version = report.version,
                instant = report.instant.as_deref().unwrap_or(""),
                added = report.files_added,
                removed = report.files_removed,
                "Delta mirror committed"
            );
        }
        report.duration_ms = started.elapsed().as_millis() as u64;
        let mut last = self.last_report.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_mut() {
            Some(earlier) => earlier.merge(report),
            None => *last = Some(report),
        }
        caught_up
    }

    fn take_report(&self) -> Option<MirrorReport> {
        self.last_report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// What the Delta log of a table holds: for `hudi-sink show` and the tests' checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorStatus {
    /// The latest Delta version.
    pub version: u64,
    /// The mirror's sequence number (`txn.version` of [`APP_ID`]).
    pub seq: i64,
    /// The Hudi instant the latest version mirrors (its file-system view).
    pub instant: Option<InstantTime>,
    /// The live files of the latest version, by path relative to the table.
    pub files: std::collections::BTreeSet<String>,
}

/// The state of the Delta log under `storage` (the table at `base_path`), or `None` without one.
pub async fn status(
    storage: Arc<dyn Storage>,
    base_path: &str,
) -> Result<Option<MirrorStatus>, MirrorError> {
    let log_store = store::log_store(storage, base_path)?;
    let mut table = DeltaTable::new(log_store.clone());
    match table.load().await {
        Ok(()) => {}
        Err(DeltaTableError::NotATable(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let mirrored = Mirrored::read(&table, &log_store).await?;
    let files = table
        .snapshot()?
        .log_data()
        .iter()
        .map(|f| f.path().to_string())
        .collect();
    Ok(Some(MirrorStatus {
        version: table.version().unwrap_or_default(),
        seq: mirrored.seq,
        instant: mirrored.watermark,
        files,
    }))
}

/// How the table lays out its partitions (from `hoodie.properties`).
struct Layout {
    table_name: String,
    fields: Vec<String>,
    options: PartitionPathOptions,
    /// A timestamp-based key generator: the partition path is a formatted time, not the column's value.
    timestamp_keygen: bool,
    /// `hoodie.datasource.write.drop.partition.columns`: the base files do not hold the partition columns.
    drop_partition_columns: bool,
}

impl Layout {
    fn of(props: &TableProperties) -> Self {
        let timestamp_keygen = props
            .key_generator_class
            .as_deref()
            .is_some_and(|c| c.contains("TimestampBased"))
            || props
                .key_generator_type
                .as_ref()
                .is_some_and(|t| format!("{t:?}").starts_with("Timestamp"));
        Self {
            table_name: props.name.clone(),
            fields: props.partition_fields.clone(),
            options: PartitionPathOptions {
                hive_style: props.hive_style_partitioning.unwrap_or(false),
                url_encode: props.url_encode_partitioning.unwrap_or(false),
            },
            timestamp_keygen,
            drop_partition_columns: props.drop_partition_columns_or_default(),
        }
    }

    /// The partition columns of a new Delta table of `schema`: Hudi's partition fields when each path segment
    /// is its column's value as Delta writes partition values; else none, an unpartitioned Delta table over
    /// the same files, whose rows hold the column (a timestamp-based key generator's formatted path, a date,
    /// timestamp or decimal column, a nested field). Fails only when the files do not hold the column either.
    fn partition_columns(&self, schema: &StructType) -> Result<Vec<String>, MirrorError> {
        if self.fields.is_empty() {
            return Ok(Vec::new());
        }
        let unfit = if self.timestamp_keygen {
            Some(
                "a timestamp-based key generator's partition path is not the column's value"
                    .to_string(),
            )
        } else {
            schema::check_partition_columns(schema, &self.fields)
                .err()
                .map(|e| e.to_string())
        };
        match unfit {
            None => Ok(self.fields.clone()),
            Some(reason) if self.drop_partition_columns => Err(MirrorError::Unsupported(format!(
                "{reason}, and the base files do not hold it (hoodie.datasource.write.drop.partition.columns)"
            ))),
            Some(reason) => {
                tracing::info!(table = %self.table_name, %reason, "Delta mirror: an unpartitioned Delta table");
                Ok(Vec::new())
            }
        }
    }
}

/// What the Delta log says it holds.
struct Mirrored {
    /// The mirror's sequence number (`txn.version`): its commits so far, minus one.
    seq: i64,
    /// The latest Hudi instant mirrored.
    watermark: Option<InstantTime>,
    /// Commit-like instants that were pending below the watermark when it was mirrored.
    pending: Vec<InstantTime>,
}

impl Mirrored {
    async fn read(table: &DeltaTable, log_store: &LogStoreRef) -> Result<Self, MirrorError> {
        let snapshot = table.snapshot()?;
        let seq = snapshot
            .transaction_version(log_store.as_ref(), APP_ID)
            .await?
            .ok_or_else(|| {
                MirrorError::Unsupported(format!(
                    "_delta_log/ exists but has no `{APP_ID}` transaction: not written by the mirror"
                ))
            })?;
        let latest = table
            .history(Some(1))
            .next()
            .await
            .transpose()?
            .ok_or_else(|| MirrorError::Unsupported("the Delta log has no commitInfo".into()))?;
        let text = |key: &str| {
            latest
                .info
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let watermark = text(INSTANT_KEY)
            .map(|t| InstantTime::parse(&t))
            .transpose()
            .map_err(hudi)?;
        let pending = latest
            .info
            .get(PENDING_KEY)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter_map(|t| InstantTime::parse(t).ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            seq,
            watermark,
            pending,
        })
    }
}

/// One Delta commit to make: the files visible as of `as_of`, labelled with the instant that completed.
struct Step {
    /// The completed instant this step mirrors.
    label: Instant,
    /// The instant the file-system view is taken at (the label, or the watermark for an instant that was
    /// pending below it).
    as_of: InstantTime,
    /// Commit-like instants pending below `as_of`.
    pending: Vec<InstantTime>,
}

impl Step {
    fn of(timeline: &Timeline, label: &Instant, as_of: &InstantTime) -> Self {
        let pending = timeline
            .pending()
            .into_iter()
            // A pending compaction completes as a commit (its action is `compaction` until then).
            .filter(|i| i.action.comparable().is_commit_like() && i.time < *as_of)
            .map(|i| i.time.clone())
            .filter(|_| {
                !crate::mutation::is_disabled(crate::mutation::Mutation::DeltaMirrorLateInstants)
            })
            .collect();
        Self {
            label: label.clone(),
            as_of: as_of.clone(),
            pending,
        }
    }
}

/// The steps that bring the log from `mirrored` to the timeline, in order: instants pending at the watermark
/// that have completed since (seen as of the watermark), then every completed instant after the watermark.
fn steps(timeline: &Timeline, completed: &[&Instant], mirrored: &Mirrored) -> Vec<Step> {
    let Some(watermark) = &mirrored.watermark else {
        return Vec::new();
    };
    let mut steps = Vec::new();
    for late in completed
        .iter()
        .filter(|i| mirrored.pending.contains(&i.time))
    {
        steps.push(Step::of(timeline, late, watermark));
    }
    for instant in completed.iter().filter(|i| i.time > *watermark) {
        steps.push(Step::of(timeline, instant, &instant.time));
    }
    steps
}

/// The base files visible as of `as_of`, by path relative to the table.
async fn target_files(
    storage: &dyn Storage,
    timeline: &Timeline,
    as_of: &InstantTime,
) -> Result<BTreeMap<String, FileSlice>, MirrorError> {
    Ok(latest_file_slices(storage, timeline, Some(as_of))
        .await
        .map_err(hudi)?
        .into_iter()
        .map(|s| (s.path(), s))
        .collect())
}

/// Which base instants are clusterings, read once per step (a clustered file is a rewrite: `dataChange=false`).
#[derive(Default)]
struct StatsSource {
    cluster: HashMap<InstantTime, bool>,
}

impl StatsSource {
    /// Whether `instant` is a completed clustering.
    async fn is_cluster(
        &mut self,
        storage: &dyn Storage,
        timeline: &Timeline,
        instant: &InstantTime,
    ) -> bool {
        if let Some(known) = self.cluster.get(instant) {
            return *known;
        }
        let meta = match timeline
            .completed_commits()
            .into_iter()
            .find(|i| i.time == *instant)
        {
            Some(i) => timeline.commit_metadata(storage, i).await.ok(),
            None => None,
        };
        let cluster = meta.is_some_and(|m| m.operation_type == OperationType::Cluster);
        self.cluster.insert(instant.clone(), cluster);
        cluster
    }
}

/// The Delta table an `add` is made for: its schema and partition columns, and how Hudi's partition paths
/// encode values.
struct Shape<'a> {
    schema: &'a StructType,
    partition_columns: &'a [String],
    options: PartitionPathOptions,
}

/// The `add` of one base file: its path relative to the table (delta-rs URI-encodes it), its partition values,
/// exact size, the base instant's time, and its column statistics from its Parquet footer (`stats`).
async fn add_of(
    storage: &dyn Storage,
    timeline: &Timeline,
    shape: &Shape<'_>,
    slice: &FileSlice,
    sources: &mut StatsSource,
    data_change: bool,
) -> Result<Add, MirrorError> {
    let path = slice.path();
    // An unpartitioned Delta table of a partitioned Hudi table: no values, the rows hold the columns.
    let partition_values = if shape.partition_columns.is_empty() {
        Default::default()
    } else {
        partition_values(
            &slice.partition_path,
            shape.partition_columns,
            shape.options,
        )
        .map_err(MirrorError::Unsupported)?
        .into_iter()
        .collect()
    };
    let footer = read_metadata_from_storage(storage, &path, slice.size)
        .await
        .map_err(|e| MirrorError::Hudi(format!("the footer of {path}: {e}")))?;
    let stats = stats::file_stats(&footer, shape.schema, shape.partition_columns);
    let data_change = data_change
        && !sources
            .is_cluster(storage, timeline, &slice.base_instant)
            .await;
    Ok(Add {
        path,
        partition_values,
        size: slice.size as i64,
        modification_time: slice.base_instant.to_millis().unwrap_or(0),
        data_change,
        stats: Some(stats),
        ..Default::default()
    })
}

/// The commit properties of a step: the `txn` with sequence number `seq`, the Hudi instant, its action and the
/// instants pending below it; a checkpoint every `delta.checkpointInterval` (10) versions, and no expired-log
/// cleanup after it: the sink's store reports no modification times (`store.rs`), so delta-rs would take every
/// commit file before the checkpoint for expired and delete it, and Delta time travel to versions whose files
/// Hudi still retains would fail.
fn commit_properties(seq: i64, step: &Step, _timeline: &Timeline) -> CommitProperties {
    let now = chrono::Utc::now().timestamp_millis();
    CommitProperties::default()
        .with_application_transaction(Transaction::new_with_last_update(APP_ID, seq, Some(now)))
        .with_metadata([
            (INSTANT_KEY.to_string(), json!(step.as_of.as_str())),
            (COMPLETED_KEY.to_string(), json!(step.label.time.as_str())),
            (ACTION_KEY.to_string(), json!(step.label.action.as_str())),
            (
                PENDING_KEY.to_string(),
                json!(step
                    .pending
                    .iter()
                    .map(InstantTime::as_str)
                    .collect::<Vec<_>>()),
            ),
        ])
        .with_max_retries(0)
        // delta-rs's own clean-up reads the log files' modification times, which the sink's storage does not
        // list: the mirror expires the log itself ([`expire_logs`]).
        .with_cleanup_expired_logs(Some(false))
}

#[cfg(test)]
mod tests {
    use deltalake_core::kernel::{DataType, StructField};

    use super::*;

    fn layout(fields: &[&str], timestamp_keygen: bool, drop_partition_columns: bool) -> Layout {
        Layout {
            table_name: "t".into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            options: PartitionPathOptions {
                hive_style: true,
                url_encode: false,
            },
            timestamp_keygen,
            drop_partition_columns,
        }
    }

    #[test]
    fn partitions_whose_path_is_not_the_value_make_an_unpartitioned_table_unless_files_lack_the_column(
    ) {
        let schema = StructType::try_new([
            StructField::nullable("city", DataType::STRING),
            StructField::nullable("ts", DataType::LONG),
            StructField::nullable("day", DataType::DATE),
        ])
        .expect("schema");
        let columns = |l: &Layout| l.partition_columns(&schema).map_err(|e| e.to_string());
        assert_eq!(
            columns(&layout(&["city"], false, false)),
            Ok(vec!["city".to_string()])
        );
        assert_eq!(
            columns(&layout(&["city"], false, true)),
            Ok(vec!["city".to_string()])
        );
        assert_eq!(columns(&layout(&[], false, false)), Ok(vec![]));
        // A timestamp key's `yyyy/MM/dd`, a date column, a nested field: unpartitioned.
        assert_eq!(columns(&layout(&["ts"], true, false)), Ok(vec![]));
        assert_eq!(columns(&layout(&["day"], false, false)), Ok(vec![]));
        assert_eq!(columns(&layout(&["a.b"], false, false)), Ok(vec![]));
        // ... unless the files do not hold the column either.
        for refused in [layout(&["ts"], true, true), layout(&["day"], false, true)] {
            let err = columns(&refused).unwrap_err();
            assert!(err.contains("drop.partition.columns"), "{err}");
        }
    }
}
