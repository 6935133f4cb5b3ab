//! [`TableWriter`]: creates a table and writes instants into it (insert, upsert, delete).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_select::concat::concat_batches;
use arrow_select::interleave::interleave;
use arrow_select::take::take;
use bytes::Bytes;

use super::merge::{fold_incoming, plan_file_group, FileGroupPlan, Source, Winner};
use super::WriteError;
use crate::base_file::reader::read_base_file;
use crate::base_file::writer::{BaseFileWriter, WrittenBaseFile};
use crate::clock::Clock;
use crate::index::bucket::{self, BucketIndexConfig};
use crate::record::keygen::KeyGenConfig;
use crate::schema::meta::META_COLUMNS;
use crate::storage::{join_path, PutOutcome, Storage};
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::{marker_path, BaseFileName, MarkerType, WriteToken};
use crate::table::fs_view::{FileSlice, FileSystemView};
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::partition_metadata::{metafile_path, PartitionMetadata};
use crate::table::planned_groups::PlannedGroups;
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::toast::BatchFills;
use crate::write::{WriteConfig, WriteOperation};

mod append;
mod merge_bucket;
mod open;
mod prepare;
mod rollback;
mod schema;
mod toast_slice;

use merge_bucket::footer_may_contain;
use open::check_compatible;
pub(crate) use rollback::{
    delete_data_files, delete_markers, files_named_by_markers, rollback_failed,
};
pub use schema::TableSchema;
use schema::{conform_batches, project_incoming, Shape};

/// The data column Hudi treats as a delete marker.
pub const IS_DELETED_FIELD: &str = "_hoodie_is_deleted";

/// Most rows encoded per Parquet write call when filling new file groups (the size check runs between calls).
const INSERT_CHUNK_ROWS: usize = 4096;
/// Rows of the first call, which measures the bytes per row.
const FIRST_CHUNK_ROWS: usize = 256;
/// Fewest rows per call, so that a nearly full file still makes progress.
const MIN_CHUNK_ROWS: usize = 16;

/// What happened to the incoming rows of one write. `records_in` always equals the sum of the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct WriteCounts {
    /// Rows handed to the writer.
    pub records_in: u64,
    /// New keys written.
    pub inserted: u64,
    /// Stored records replaced.
    pub updated: u64,
    /// Stored records deleted.
    pub deleted: u64,
    /// Incoming rows superseded by a later or larger version in the same write.
    pub deduped: u64,
    /// Incoming versions older than the stored one (ignored).
    pub ignored_older: u64,
    /// Deletes of keys that were not stored.
    pub delete_misses: u64,
    /// Rows that moved to another partition (a Debezium update whose before image names another partition):
    /// each also wrote a delete in that partition, so it counts in `records_in` and in one more bucket than
    /// there are records.
    pub moved: u64,
}

impl WriteCounts {
    fn add_plan(&mut self, plan: &FileGroupPlan) {
        self.inserted += plan.inserted;
        self.updated += plan.updated;
        self.deleted += plan.deleted;
        self.ignored_older += plan.ignored_older;
        self.delete_misses += plan.delete_misses;
    }

    /// Whether every incoming row is accounted for.
    pub fn balanced(&self) -> bool {
        self.records_in
            == self.inserted
                + self.updated
                + self.deleted
                + self.deduped
                + self.ignored_older
                + self.delete_misses
    }
}

/// A completed write.
#[derive(Debug, Clone)]
pub struct WriteResult {
    /// The instant that was committed.
    pub instant: InstantTime,
    /// The commit metadata as written to `<instant>.commit`.
    pub commit: CommitMetadata,
    /// Row accounting.
    pub counts: WriteCounts,
}

/// Incoming rows keyed, placed and folded: ready to be routed into file groups at some instant.
#[derive(Debug)]
pub struct PreparedWrite {
    /// The operation.
    pub operation: WriteOperation,
    /// All incoming rows, concatenated (data columns).
    pub batch: RecordBatch,
    /// Surviving versions per partition path, in first-arrival order: `(record key, winner)`.
    pub partitions: BTreeMap<String, Vec<(String, Winner)>>,
    /// Keys deleted by Kafka tombstones, in whatever partition they are stored (one count each).
    pub tombstones: Vec<String>,
    /// Keys whose tombstone was followed by a record: its partition gets the new version, other partitions'
    /// versions are deleted (not counted again).
    pub shadow_tombstones: Vec<String>,
    /// Row accounting so far (records in, deduped).
    pub counts: WriteCounts,
    /// Rows whose key or partition path could not be computed (row index, reason).
    pub rejected: Vec<(usize, crate::record::keygen::KeyError)>,
    /// Where the batch decided the TOAST placeholder cells of written rows: a stored version later than
    /// that source takes its place when the row is merged (`write::toast`).
    pub toast_fills: BatchFills,
}

/// The in-process single writer of one table. See the module doc of [`crate::write`].
#[derive(Debug)]
pub struct TableWriter {
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: WriteConfig,
    properties: TableProperties,
    /// The table schema and what is derived from it; replaced whole when the schema evolves.
    shape: std::sync::RwLock<Arc<Shape>>,
    bucket: Option<BucketIndexConfig>,
    /// The latest slice of every file group, kept across batches (a warm Lambda lists no partition) and synced
    /// from the timeline by every bucketed write.
    view: tokio::sync::Mutex<FileSystemView>,
    /// Partitions whose `.hoodie_partition_metadata` this writer saw or wrote: not checked again while warm
    /// (at most [`MAX_KNOWN_PARTITIONS`], then forgotten and checked again).
    known_partitions: std::sync::Mutex<BTreeSet<String>>,
    /// The latest completed commit whose schema [`TableWriter::catch_up_schema`] last applied.
    schema_seen: std::sync::Mutex<Option<InstantTime>>,
    /// The plans of the compactions pending at the last merge-on-read write (each plan is read once).
    planned: tokio::sync::Mutex<PlannedGroups>,
}

/// Partitions a writer remembers as having their metadata file.
const MAX_KNOWN_PARTITIONS: usize = 10_000;

fn table_err(storage: &dyn Storage, reason: impl Into<String>) -> WriteError {
    WriteError::Table {
        base_path: storage.base_uri().to_string(),
        reason: reason.into(),
    }
}

impl TableWriter {
    /// The write configuration.
    pub fn config(&self) -> &WriteConfig {
        &self.config
    }

    /// The table properties as loaded.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The storage the table lives in.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Writes one instant with the configured operation.
    pub async fn write(&self, batches: &[RecordBatch]) -> Result<WriteResult, WriteError> {
        self.write_with(self.config.operation, batches, BTreeMap::new())
            .await
    }

    /// Writes one instant: prepare, begin, write files, commit. `extra_metadata` goes into the commit's
    /// `extraMetadata` next to the schema (e.g. the Kafka checkpoint).
    pub async fn write_with(
        &self,
        operation: WriteOperation,
        batches: &[RecordBatch],
        extra_metadata: BTreeMap<String, String>,
    ) -> Result<WriteResult, WriteError> {
        let prepared = self.prepare(operation, batches)?;
        let instant = self.begin().await?;
        let (stats, counts) = self.write_files(&instant, &prepared).await?;
        let commit = self
            .commit(&instant, operation, stats, extra_metadata)
            .await?;
        Ok(WriteResult {
            instant,
            commit,
            counts,
        })
    }

    fn bucketed(&self) -> Option<&BucketIndexConfig> {
        self.bucket.as_ref()
    }

    /// Starts an instant: re-reads and re-checks `hoodie.properties`, rolls back failed writes (this is the
    /// single writer, so any pending commit is a failed one), and creates `<t>.commit.requested` and
    /// `<t>.inflight` for a new instant `t` strictly greater than every instant on the timeline.
    pub async fn begin(&self) -> Result<InstantTime, WriteError> {
        let storage = self.storage.as_ref();
        let props = TableProperties::load(storage).await?;
        props.validate_writable()?;
        let keygen_config = KeyGenConfig::from_properties(&self.config.properties)?;
        check_compatible(storage, &props, &self.config, &keygen_config)?;
        let timeline = Timeline::load(storage).await?;
        let action = props.write_action();
        for pending in timeline.pending() {
            if pending.action != action {
                return Err(table_err(
                    storage,
                    format!(
                        "pending {} instant {} from another engine; finish or roll it back first",
                        pending.action, pending.time
                    ),
                ));
            }
            rollback_failed(storage, &pending.time).await?;
        }
        let instant = InstantTime::next_after(self.clock.as_ref(), timeline.last_instant_time());
        create_pending_instant(storage, &instant, action).await?;
        Ok(instant)
    }

    /// Writes the base files of `prepared` for `instant` (markers first) and returns one write stat per file.
    pub async fn write_files(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        self.write_files_on(instant, prepared, None).await
    }

    /// As [`TableWriter::write_files`], with the active timeline the caller loaded instead of loading it again.
    /// `timeline`'s latest completed commit must be the instant's base (the one its begin reported) and no
    /// replacecommit or compaction may be pending on it, so that it shows what a fresh load would.
    pub async fn write_files_with_timeline(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: &Timeline,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        self.write_files_on(instant, prepared, Some(timeline)).await
    }

    /// Hands the writer's view the metadata of a completed commit the caller read (a window member reads its
    /// window's commit), so that the next write applies it without reading it again.
    pub async fn prime_commit(
        &self,
        time: InstantTime,
        meta: crate::table::commit::CommitMetadata,
    ) {
        self.view.lock().await.prime(time, meta);
    }

    /// The latest file slices as the writer's cached view last synced them (`None` while cold): what a bucketed
    /// write merges into, for checks against [`crate::table::fs_view::latest_file_slices`].
    pub async fn cached_file_slices(&self) -> Option<Vec<FileSlice>> {
        let view = self.view.lock().await;
        view.is_warm().then(|| view.slices().cloned().collect())
    }

    async fn write_files_on(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: Option<&Timeline>,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        let mut view = self.view.lock().await;
        let result = self
            .write_files_viewed(instant, prepared, timeline, &mut view)
            .await;
        if result.is_err() {
            // Whatever failed may have been the view being behind the table (a file it named is gone): the next
            // batch lists the table again.
            view.invalidate();
        }
        result
    }

    async fn write_files_viewed(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: Option<&Timeline>,
        view: &mut FileSystemView,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        let storage = self.storage.as_ref();
        let mut counts = prepared.counts;
        let mut stats = Vec::new();
        let mut file_index = 0usize;
        let Some(index) = self.bucketed() else {
            let incoming = project_incoming(&prepared.batch, &self.schema())?;
            if !prepared.tombstones.is_empty() || !prepared.shadow_tombstones.is_empty() {
                return Err(WriteError::Config {
                    reason: "Kafka tombstones need an index to find their records (hoodie.index.type=BUCKET)".into(),
                });
            }
            for (partition, winners) in &prepared.partitions {
                let rows: Vec<(&str, usize)> = winners
                    .iter()
                    .filter(|(_, w)| !w.delete)
                    .map(|(k, w)| (k.as_str(), w.row))
                    .collect();
                counts.delete_misses += (winners.len() - rows.len()) as u64;
                counts.inserted += rows.len() as u64;
                if rows.is_empty() {
                    continue;
                }
                self.ensure_partition_metadata(instant, partition).await?;
                stats.extend(
                    self.write_new_file_groups(
                        instant,
                        partition,
                        &incoming,
                        &rows,
                        &mut file_index,
                    )
                    .await?,
                );
            }
            return Ok((stats, counts));
        };
        let loaded;
        let timeline = match timeline {
            Some(timeline) => timeline,
            None => {
                loaded = Timeline::load(storage).await?;
                &loaded
            }
        };
        view.sync(storage, timeline).await?;
        view.saw_pending(instant);
        let planned = if self.properties.is_merge_on_read() {
            let mut known = self.planned.lock().await;
            *known = PlannedGroups::load(storage, timeline, Some(&known)).await?;
            known.clone()
        } else {
            PlannedGroups::default()
        };
        self.catch_up_schema(timeline, view.applied_schema())
            .await?;
        let incoming = project_incoming(&prepared.batch, &self.schema())?;
        let view = &*view;
        let mut groups: BTreeMap<(String, u32), Option<&FileSlice>> = BTreeMap::new();
        for slice in view.slices() {
            if let Some(b) = bucket::bucket_id_from_file_id(&slice.file_id) {
                let entry = groups
                    .entry((slice.partition_path.clone(), b))
                    .or_insert(None);
                if let Some(other) = entry {
                    return Err(table_err(
                        storage,
                        format!(
                            "bucket {b} of partition {:?} has more than one file group ({} and {}); the table is corrupt",
                            slice.partition_path, other.file_name, slice.file_name
                        ),
                    ));
                }
                *entry = Some(slice);
            }
        }
        // Work per (partition, bucket): folded winners, then tombstones in every partition whose bucket file
        // may hold the key (footer min/max and bloom filter prune the others).
        let mut work: BTreeMap<(String, u32), Vec<(&str, Winner)>> = BTreeMap::new();
        for (partition, winners) in &prepared.partitions {
            for (key, w) in winners {
                work.entry((partition.clone(), index.bucket_id(key)))
                    .or_default()
                    .push((key.as_str(), *w));
            }
        }
        let mut footers: HashMap<String, crate::base_file::reader::BaseFileFooter> = HashMap::new();
        // Lookups by hash, so that many tombstones in one bucket (adversarial keys) stay linear: which keys
        // each (partition, bucket) already has, and which stored file groups each bucket has.
        let mut queued: std::collections::HashSet<(&str, u32, &str)> = prepared
            .partitions
            .iter()
            .flat_map(|(partition, winners)| {
                winners
                    .iter()
                    .map(move |(key, _)| (partition.as_str(), index.bucket_id(key), key.as_str()))
            })
            .collect();
        let mut stored_by_bucket: HashMap<u32, Vec<(&String, &FileSlice)>> = HashMap::new();
        for ((partition, gb), slice) in &groups {
            if let Some(slice) = slice {
                stored_by_bucket
                    .entry(*gb)
                    .or_default()
                    .push((partition, *slice));
            }
        }
        for key in prepared
            .tombstones
            .iter()
            .chain(&prepared.shadow_tombstones)
        {
            let b = index.bucket_id(key);
            for &(partition, slice) in stored_by_bucket.get(&b).into_iter().flatten() {
                if !queued.insert((partition.as_str(), b, key.as_str())) {
                    continue;
                }
                let entry = work.entry((partition.clone(), b)).or_default();
                let path = slice.path();
                if !footers.contains_key(&path) && slice.log_files.is_empty() {
                    let footer = crate::base_file::reader::read_footer_from_storage(
                        storage, &path, slice.size,
                    )
                    .await?;
                    footers.insert(path.clone(), footer);
                }
                // A merge-on-read slice with logs may hold the key in a log: only a base-only slice is
                // pruned by its footer.
                if let Some(footer) = footers.get(&path) {
                    if slice.log_files.is_empty() && !footer_may_contain(footer, key)? {
                        continue;
                    }
                }
                entry.push((
                    key.as_str(),
                    Winner {
                        row: super::merge::TOMBSTONE_ROW,
                        delete: true,
                        force: true,
                    },
                ));
            }
        }
        let mut tombstoned: std::collections::HashSet<String> = std::collections::HashSet::new();
        for ((partition, b), winners) in work {
            if winners.is_empty() {
                continue;
            }
            let existing = groups.get(&(partition.clone(), b)).copied().flatten();
            if existing.is_none() && winners.iter().all(|(_, w)| w.delete) {
                // Deletes of keys in a bucket that has no file group: nothing stored to delete.
                counts.delete_misses += winners
                    .iter()
                    .filter(|(_, w)| w.row != super::merge::TOMBSTONE_ROW)
                    .count() as u64;
                continue;
            }
            if let (true, Some(slice)) = (self.properties.is_merge_on_read(), existing) {
                // Another engine's pending compaction of the group: append to the slice it will make, as
                // Hudi's writers do (its executor carries nothing; `table::planned_groups`).
                let append_to = planned.foreign(&partition, &slice.file_id).filter(|_| {
                    !crate::mutation::is_disabled(crate::mutation::Mutation::ForeignCompactionSlice)
                });
                let backfilled = self
                    .backfill_from_slice(
                        slice,
                        timeline,
                        &incoming,
                        &prepared.toast_fills,
                        &winners,
                    )
                    .await?;
                let (stat, applied) = self
                    .append_bucket(
                        instant,
                        &partition,
                        slice,
                        append_to,
                        backfilled.as_ref().unwrap_or(&incoming),
                        &winners,
                        &mut file_index,
                        &mut counts,
                    )
                    .await?;
                tombstoned.extend(applied);
                stats.extend(stat);
                continue;
            }
            self.ensure_partition_metadata(instant, &partition).await?;
            let (stat, applied) = self
                .merge_bucket(
                    instant,
                    &partition,
                    b,
                    existing,
                    &incoming,
                    &prepared.toast_fills,
                    &winners,
                    &mut file_index,
                    &mut counts,
                )
                .await?;
            tombstoned.extend(applied);
            stats.extend(stat);
        }
        for key in &prepared.tombstones {
            if tombstoned.contains(key) {
                counts.deleted += 1;
            } else {
                counts.delete_misses += 1;
            }
        }
        Ok((stats, counts))
    }

    async fn ensure_partition_metadata(
        &self,
        instant: &InstantTime,
        partition: &str,
    ) -> Result<(), WriteError> {
        let known = |p: &str| {
            self.known_partitions
                .lock()
                .map(|k| k.contains(p))
                .unwrap_or(false)
        };
        if known(partition) {
            return Ok(());
        }
        let path = metafile_path(partition);
        if self.storage.head(&path).await?.is_none() {
            let meta = PartitionMetadata::for_partition(partition, instant.clone());
            self.storage
                .put_if_absent(&path, Bytes::from(meta.to_bytes()))
                .await?;
        }
        if let Ok(mut k) = self.known_partitions.lock() {
            if k.len() >= MAX_KNOWN_PARTITIONS {
                k.clear();
            }
            k.insert(partition.to_string());
        }
        Ok(())
    }

    /// New file groups for inserts (no index), split at `hoodie.parquet.max.file.size`.
    async fn write_new_file_groups(
        &self,
        instant: &InstantTime,
        partition: &str,
        batch: &RecordBatch,
        rows: &[(&str, usize)],
        file_index: &mut usize,
    ) -> Result<Vec<WriteStat>, WriteError> {
        let mut stats = Vec::new();
        let mut start = 0;
        while start < rows.len() {
            let file_id = crate::table::file_name::new_file_id();
            let file_name = base_file_name(&file_id, *file_index, instant)?;
            self.put_marker(instant, partition, &file_name, MarkerType::Create)
                .await?;
            let mut writer = self.new_file_writer()?;
            let mut seq = 0u64;
            let mut end = start;
            while end < rows.len() {
                // Size the next chunk from the bytes per row so far, so that files end close to the limit.
                let size = writer.estimated_size() as u64;
                let chunk = match size.checked_div((end - start) as u64) {
                    None => FIRST_CHUNK_ROWS,
                    Some(per_row) => {
                        let room = self.config.max_file_size.saturating_sub(size);
                        ((room / per_row.max(1)) as usize).clamp(MIN_CHUNK_ROWS, INSERT_CHUNK_ROWS)
                    }
                };
                let chunk_end = (end + chunk).min(rows.len());
                let sources: Vec<Source> = rows[end..chunk_end]
                    .iter()
                    .map(|(_, r)| Source::Insert(*r))
                    .collect();
                let keys: Vec<&str> = rows[end..chunk_end].iter().map(|(k, _)| *k).collect();
                let out = self.build_output(
                    instant,
                    partition,
                    &file_name,
                    *file_index,
                    &mut seq,
                    None,
                    batch,
                    &sources,
                    &keys,
                )?;
                writer.write(&out)?;
                end = chunk_end;
                if writer.estimated_size() as u64 >= self.config.max_file_size {
                    break;
                }
            }
            let written = writer.finish()?;
            let inserts = (end - start) as u64;
            stats.push(
                self.put_base_file(
                    partition, &file_id, &file_name, written, None, inserts, 0, 0,
                )
                .await?,
            );
            *file_index += 1;
            start = end;
        }
        Ok(stats)
    }

    /// A writer for one base file of this table (also used by clustering, which writes outside
    /// [`TableWriter::write_files`]).
    pub(crate) fn new_file_writer(&self) -> Result<BaseFileWriter, WriteError> {
        self.new_file_writer_plain(&[])
    }

    /// As [`TableWriter::new_file_writer`], with the `plain` columns (dotted paths) also written without a
    /// dictionary (clustering's outputs: the columns whose dictionaries did not pay in the inputs).
    pub(crate) fn new_file_writer_plain(
        &self,
        plain: &[String],
    ) -> Result<BaseFileWriter, WriteError> {
        let schema = self.schema();
        let mut options = self.config.base_file.clone();
        for column in plain {
            if !options.plain_columns.contains(column) {
                options.plain_columns.push(column.clone());
            }
        }
        Ok(BaseFileWriter::try_new(
            schema.file.clone(),
            schema.parquet.clone(),
            schema.avro_with_meta_json.clone(),
            &options,
        )?)
    }

    /// Checks a batch read from a stored base file against the table's file schema and relabels it with
    /// that schema (clustering rewrites stored files).
    pub(crate) fn conform_stored_batch(
        &self,
        batch: RecordBatch,
    ) -> Result<RecordBatch, WriteError> {
        let mut conformed = conform_batches(&self.schema().file, vec![batch])?;
        conformed.pop().ok_or_else(|| WriteError::Data {
            reason: "conforming a stored batch returned no batch".into(),
        })
    }

    async fn put_marker(
        &self,
        instant: &InstantTime,
        partition: &str,
        file_name: &str,
        marker: MarkerType,
    ) -> Result<(), WriteError> {
        let path = marker_path(instant, partition, file_name, marker);
        crate::write::lease::check()?;
        self.storage.put(&path, Bytes::new()).await?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn put_base_file(
        &self,
        partition: &str,
        file_id: &str,
        file_name: &str,
        written: WrittenBaseFile,
        prev_commit: Option<String>,
        inserts: u64,
        updates: u64,
        deletes: u64,
    ) -> Result<WriteStat, WriteError> {
        let path = join_path(&[partition, file_name]);
        let size = written.data.len() as u64;
        crate::write::lease::check()?;
        if crate::write::lease::in_window() {
            // Under a window, a name is never reused: another member's file of the same group is not replaced.
            if self.storage.put_if_absent(&path, written.data).await? == PutOutcome::AlreadyExists {
                return Err(WriteError::InstantExists {
                    instant: crate::write::lease::instant().unwrap_or_default(),
                    file: path,
                });
            }
        } else {
            self.storage.put(&path, written.data).await?;
        }
        crate::write::lease::check_after_upload(self.storage.as_ref(), &path).await?;
        let mut stat = WriteStat::new(file_id, partition, &path);
        if let Some(prev) = prev_commit {
            stat.prev_commit = prev;
        }
        stat.num_writes = written.num_rows as i64;
        stat.num_inserts = inserts as i64;
        stat.num_update_writes = updates as i64;
        stat.num_deletes = deletes as i64;
        stat.total_write_bytes = size as i64;
        stat.file_size_in_bytes = size as i64;
        Ok(stat)
    }

    /// Completes `instant`: verifies every file of the stats exists with its size, writes `<t>.commit`
    /// with one atomic create-if-absent, then deletes the instant's markers.
    pub async fn commit(
        &self,
        instant: &InstantTime,
        operation: WriteOperation,
        stats: Vec<WriteStat>,
        extra_metadata: BTreeMap<String, String>,
    ) -> Result<CommitMetadata, WriteError> {
        let storage = self.storage.as_ref();
        crate::write::verify::verify_files(storage, instant, &stats).await?;
        let op = match operation {
            WriteOperation::Insert => OperationType::Insert,
            WriteOperation::Upsert => OperationType::Upsert,
            WriteOperation::Delete => OperationType::Delete,
        };
        let mut commit = CommitMetadata::new(op);
        for stat in stats {
            commit.add_write_stat(stat);
        }
        commit
            .extra_metadata
            .insert("schema".into(), self.schema().avro_json.clone());
        commit.extra_metadata.extend(extra_metadata);
        let file = Instant::new(
            instant.clone(),
            self.properties.write_action(),
            State::Completed,
        )
        .file_name();
        let path = format!(".hoodie/{file}");
        let body = Bytes::from(commit.to_json_pretty()?);
        if storage.put_if_absent(&path, body.clone()).await? == PutOutcome::AlreadyExists {
            let existing = storage.get(&path).await?;
            if existing != body {
                return Err(WriteError::InstantExists {
                    instant: instant.to_string(),
                    file: path,
                });
            }
        }
        delete_markers(storage, instant).await?;
        Ok(commit)
    }
}

/// Creates `<t>.commit.requested` and `<t>.inflight` (copy-on-write; `<t>.deltacommit.requested` and
/// `<t>.deltacommit.inflight` for merge-on-read), all empty, each with create-if-absent: an existing file
/// means another writer took the same instant.
pub(crate) async fn create_pending_instant(
    storage: &dyn Storage,
    instant: &InstantTime,
    action: Action,
) -> Result<(), WriteError> {
    for state in [State::Requested, State::Inflight] {
        let file = Instant::new(instant.clone(), action, state).file_name();
        let path = format!(".hoodie/{file}");
        if storage.put_if_absent(&path, Bytes::new()).await? == PutOutcome::AlreadyExists {
            return Err(WriteError::InstantExists {
                instant: instant.to_string(),
                file: path,
            });
        }
    }
    Ok(())
}

/// `<fileId>_<task>-<stage>-0_<t>.parquet`: Hudi's write token shape with the file's index in the instant as task,
/// and as stage the window member's number (0 outside a window): members of one window write the same file
/// group under the same instant, and their files must not share a name.
fn base_file_name(
    file_id: &str,
    file_index: usize,
    instant: &InstantTime,
) -> Result<String, WriteError> {
    let token = WriteToken::new(file_index as u64, crate::write::lease::stage(), 0);
    Ok(BaseFileName::new_parquet(file_id, &token, instant.clone())?.file_name())
}
