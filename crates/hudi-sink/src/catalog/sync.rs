//! One catalog sync of a Hudi table: make the Glue table(s) match the table's schema, register the partitions
//! written since the watermark, then move the watermark. Safe to repeat and to interrupt: the watermark moves
//! last, a create that finds the partition present is success, so the next sync converges.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

use super::config::CatalogConfig;
use super::definition::{
    partition_columns, partition_def, partition_location, table_def, PartitionDef, StoredPartition,
    TableDef, TableView, WATERMARK,
};
use super::partitions::{
    all_partitions, changes_since, default_extractor, needs_full_sync, partition_values,
};
use super::CatalogError;
use crate::storage::Storage;
use crate::table::instant::InstantTime;
use crate::table::properties::{TableProperties, TableType};
use crate::table::timeline::Timeline;
use crate::write::TableSchema;

/// Glue's request limits (Hudi uses the same).
pub const MAX_GET_PARTITIONS: usize = 1000;
/// Most partitions per `BatchCreatePartition` / `BatchUpdatePartition`.
pub const MAX_CREATE_PARTITIONS: usize = 100;
/// Most partitions per `BatchDeletePartition`.
pub const MAX_DELETE_PARTITIONS: usize = 25;

/// The catalog calls a sync makes; one method per Glue operation, one request per call (the sync splits
/// batches to Glue's limits).
#[async_trait]
pub trait CatalogClient: Send + Sync + std::fmt::Debug {
    /// `GetDatabase`: whether it exists.
    async fn database_exists(&self, database: &str) -> Result<bool, CatalogError>;
    /// `CreateDatabase`; an existing database is success.
    async fn create_database(&self, database: &str) -> Result<(), CatalogError>;
    /// `GetTable`: `None` when it does not exist.
    async fn get_table(&self, database: &str, name: &str)
        -> Result<Option<TableDef>, CatalogError>;
    /// `CreateTable`.
    async fn create_table(&self, database: &str, table: &TableDef) -> Result<(), CatalogError>;
    /// `UpdateTable` (with `SkipArchive` as given), conditional on `table.version` when it is set: `false`
    /// when another sync updated the table since that version was read (its update stands).
    async fn update_table(
        &self,
        database: &str,
        table: &TableDef,
        skip_archive: bool,
    ) -> Result<bool, CatalogError>;
    /// `BatchGetPartition` of at most [`MAX_GET_PARTITIONS`] value lists: those that exist.
    async fn get_partitions(
        &self,
        database: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<Vec<StoredPartition>, CatalogError>;
    /// `GetPartitions`, every page: all partitions of the table.
    async fn all_partitions(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Vec<StoredPartition>, CatalogError>;
    /// `BatchCreatePartition` of at most [`MAX_CREATE_PARTITIONS`]; partitions that already exist are success.
    async fn create_partitions(
        &self,
        database: &str,
        table: &str,
        partitions: &[PartitionDef],
    ) -> Result<(), CatalogError>;
    /// `BatchUpdatePartition` of at most [`MAX_CREATE_PARTITIONS`].
    async fn update_partitions(
        &self,
        database: &str,
        table: &str,
        partitions: &[PartitionDef],
    ) -> Result<(), CatalogError>;
    /// `BatchDeletePartition` of at most [`MAX_DELETE_PARTITIONS`]; missing partitions are success.
    async fn delete_partitions(
        &self,
        database: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<(), CatalogError>;
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CatalogSyncReport {
    /// Glue tables created.
    pub tables_created: u64,
    /// Glue tables whose schema or parameters changed.
    pub tables_updated: u64,
    /// Partitions registered.
    pub partitions_created: u64,
    /// Partitions whose location changed.
    pub partitions_updated: u64,
    /// Partitions removed (dropped from storage).
    pub partitions_deleted: u64,
    /// Whether the whole table was listed (first sync, or a watermark older than the active timeline).
    pub full_listing: bool,
    /// The watermark after the sync.
    pub watermark: Option<String>,
    /// Requests per Glue operation.
    pub calls: BTreeMap<String, u64>,
    /// Wall time, milliseconds.
    pub duration_ms: u64,
    /// Why the sync failed (best-effort runs only; `None` when it succeeded).
    pub error: Option<String>,
    /// Whether the sync was skipped (backing off after a failure).
    pub skipped: bool,
    /// Whether another sync updated the table between this one's read and its update (that one's stands).
    pub raced: bool,
}

impl CatalogSyncReport {
    pub(super) fn call(&mut self, operation: &str) {
        *self.calls.entry(operation.to_string()).or_default() += 1;
    }

    /// Requests of `operation` this sync made.
    pub fn calls_of(&self, operation: &str) -> u64 {
        self.calls.get(operation).copied().unwrap_or(0)
    }
}

/// The Glue tables of a Hudi table: one for copy-on-write, `_ro` and `_rt` for merge-on-read.
pub fn table_views(config: &CatalogConfig, table_type: TableType) -> Vec<(String, TableView)> {
    match table_type {
        TableType::CopyOnWrite => vec![(config.table.clone(), TableView::CopyOnWrite)],
        TableType::MergeOnRead => {
            let ro = if config.skip_ro_suffix {
                config.table.clone()
            } else {
                format!("{}_ro", config.table)
            };
            vec![
                (ro, TableView::ReadOptimized),
                (format!("{}_rt", config.table), TableView::Snapshot),
            ]
        }
    }
}

/// The table's current schema: the latest commit's, else the create schema.
async fn table_schema(
    storage: &dyn Storage,
    timeline: &Timeline,
    props: &TableProperties,
) -> Result<Option<TableSchema>, CatalogError> {
    let text = match timeline.latest_schema(storage).await? {
        Some(s) => Some(s),
        None => props.create_schema.clone(),
    };
    let Some(text) = text else {
        return Ok(None);
    };
    let avro = crate::schema::avro::AvroSchema::parse(&text).map_err(|e| CatalogError::Schema {
        reason: e.to_string(),
    })?;
    TableSchema::try_new(avro)
        .map(Some)
        .map_err(|e| CatalogError::Schema {
            reason: e.to_string(),
        })
}

/// Syncs the catalog with the table at `storage` (whose base path as users configured it is `base_path`).
/// `known` are written partitions the caller has in hand, per instant (see [`changes_since`]).
pub async fn sync_table(
    client: &dyn CatalogClient,
    config: &CatalogConfig,
    storage: &dyn Storage,
    base_path: &str,
    known: &[(InstantTime, BTreeSet<String>)],
) -> Result<CatalogSyncReport, CatalogError> {
    let started = std::time::Instant::now();
    let mut report = CatalogSyncReport::default();
    let props = TableProperties::load(storage).await?;
    let timeline = &Timeline::load(storage).await?;
    let Some(schema) = table_schema(storage, timeline, &props).await? else {
        // Nothing committed and no create schema: there is nothing a reader could query yet.
        return Ok(report);
    };
    let fields = partition_columns(
        config
            .partition_fields
            .as_deref()
            .unwrap_or(&props.partition_fields),
    );
    let extractor = config
        .extractor
        .unwrap_or_else(|| default_extractor(&fields));
    let fields = if extractor == super::config::PartitionExtractor::NonPartitioned {
        Vec::new()
    } else {
        fields
    };
    // The watermark stays below a pending write that may still complete after a newer instant (a deltacommit
    // behind a compaction): the partitions of commits above it are read again by the next sync, never skipped
    // (`table/timeline.rs` `writer_base`).
    let mark =
        crate::table::timeline::writer_base(timeline, props.table_type == TableType::MergeOnRead)
            .map(|i| i.time.clone());
    for (name, view) in table_views(config, props.table_type) {
        let desired = table_def(config, &name, view, &schema, &fields, base_path)?;
        sync_one(
            client,
            config,
            storage,
            timeline,
            known,
            &desired,
            extractor,
            &fields,
            mark.as_ref(),
            &mut report,
        )
        .await?;
    }
    if config.delta_view {
        super::delta_view::sync_delta_view(client, config, storage, base_path, &mut report).await?;
    }
    report.duration_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
async fn sync_one(
    client: &dyn CatalogClient,
    config: &CatalogConfig,
    storage: &dyn Storage,
    timeline: &Timeline,
    known: &[(InstantTime, BTreeSet<String>)],
    desired: &TableDef,
    extractor: super::config::PartitionExtractor,
    fields: &[String],
    mark: Option<&InstantTime>,
    report: &mut CatalogSyncReport,
) -> Result<(), CatalogError> {
    let db = config.database.as_str();
    let name = desired.name.as_str();
    report.call("GetTable");
    let stored = client.get_table(db, name).await?;
    let (mut target, watermark, changed) = match stored {
        None => {
            if config.auto_create_database {
                report.call("GetDatabase");
                if !client.database_exists(db).await? {
                    report.call("CreateDatabase");
                    client.create_database(db).await?;
                }
            }
            report.call("CreateTable");
            client.create_table(db, desired).await?;
            report.tables_created += 1;
            // The created table's version, so that this sync's update is conditional like any other (a
            // concurrent sync may update the new table first). Once per table's life.
            report.call("GetTable");
            let version = client
                .get_table(db, name)
                .await?
                .ok_or_else(|| CatalogError::Glue {
                    operation: "GetTable".into(),
                    message: format!("table {db}.{name} missing right after its creation"),
                })?
                .version;
            let mut created = desired.clone();
            created.version = version;
            (created, None, false)
        }
        Some(stored) => {
            let watermark = stored
                .parameters
                .get(WATERMARK)
                .and_then(|w| InstantTime::parse(w).ok());
            // Parameters others added (users, Lake Formation) stay; ours win.
            let mut merged = desired.clone();
            let mut params = stored.parameters.clone();
            params.extend(desired.parameters.clone());
            merged.parameters = params;
            // Updates are conditional on the version read, so a slower concurrent sync cannot undo a newer one.
            merged.version = stored.version.clone();
            let changed = differs(&merged, &stored);
            (merged, watermark, changed)
        }
    };
    if timeline.latest_completed().is_none() {
        // A table with no commit yet has no partitions to register.
        if changed {
            update_table(client, db, &target, config, report).await?;
        }
        return Ok(());
    };
    let values_of =
        |path: &str| partition_values(extractor, path, fields.len(), config.decode_partition);
    let full = needs_full_sync(timeline, watermark.as_ref());
    report.full_listing |= full;
    let mut creates: Vec<PartitionDef> = Vec::new();
    let mut updates: Vec<PartitionDef> = Vec::new();
    let mut deletes: Vec<Vec<String>> = Vec::new();
    if !fields.is_empty() {
        if full {
            let on_storage = all_partitions(storage).await?;
            report.call("GetPartitions");
            let in_catalog: BTreeMap<Vec<String>, String> = client
                .all_partitions(db, name)
                .await?
                .into_iter()
                .map(|p| (p.values, p.location))
                .collect();
            let mut seen = BTreeSet::new();
            for path in &on_storage {
                let Some(values) = values_of(path)? else {
                    continue;
                };
                seen.insert(values.clone());
                let location = partition_location(&target.storage.location, path);
                match in_catalog.get(&values) {
                    None => creates.push(partition_def(&target, path, values)),
                    Some(l) if !same_location(l, &location) => {
                        updates.push(partition_def(&target, path, values))
                    }
                    Some(_) => {}
                }
            }
            deletes.extend(in_catalog.into_keys().filter(|v| !seen.contains(v)));
        } else {
            let changes = changes_since(storage, timeline, watermark.as_ref(), known).await?;
            let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
            for path in &changes.written {
                if let Some(values) = values_of(path)? {
                    wanted.push((path.clone(), values));
                }
            }
            let mut existing: BTreeMap<Vec<String>, String> = BTreeMap::new();
            for chunk in wanted.chunks(MAX_GET_PARTITIONS) {
                let values: Vec<Vec<String>> = chunk.iter().map(|(_, v)| v.clone()).collect();
                report.call("BatchGetPartition");
                for p in client.get_partitions(db, name, &values).await? {
                    existing.insert(p.values, p.location);
                }
            }
            for (path, values) in wanted {
                let location = partition_location(&target.storage.location, &path);
                match existing.get(&values) {
                    None => creates.push(partition_def(&target, &path, values)),
                    Some(l) if !same_location(l, &location) => {
                        updates.push(partition_def(&target, &path, values))
                    }
                    Some(_) => {}
                }
            }
            for path in &changes.dropped {
                if let Some(values) = values_of(path)? {
                    deletes.push(values);
                }
            }
        }
    }
    // The watermark never moves back (a slower concurrent sync may have moved it further already).
    let advance_to = mark.filter(|m| watermark.as_ref().is_none_or(|w| w < *m));
    if let (true, Some(latest)) = (
        crate::mutation::is_disabled(crate::mutation::Mutation::CatalogWatermarkLast),
        advance_to,
    ) {
        // The mutation: the watermark moves before the partitions it covers exist.
        let mut early = target.clone();
        early
            .parameters
            .insert(WATERMARK.to_string(), latest.to_string());
        report.call("UpdateTable");
        client
            .update_table(db, &early, config.skip_table_archive)
            .await?;
        target.version = None;
    }
    for chunk in creates.chunks(MAX_CREATE_PARTITIONS) {
        report.call("BatchCreatePartition");
        client.create_partitions(db, name, chunk).await?;
        report.partitions_created += chunk.len() as u64;
    }
    for chunk in updates.chunks(MAX_CREATE_PARTITIONS) {
        report.call("BatchUpdatePartition");
        client.update_partitions(db, name, chunk).await?;
        report.partitions_updated += chunk.len() as u64;
    }
    for chunk in deletes.chunks(MAX_DELETE_PARTITIONS) {
        report.call("BatchDeletePartition");
        client.delete_partitions(db, name, chunk).await?;
        report.partitions_deleted += chunk.len() as u64;
    }
    let partitions_changed = !(creates.is_empty() && updates.is_empty() && deletes.is_empty());
    let move_watermark = advance_to.is_some()
        && (!config.condition_sync || partitions_changed || changed || watermark.is_none());
    if let (true, Some(latest)) = (move_watermark, advance_to) {
        target
            .parameters
            .insert(WATERMARK.to_string(), latest.to_string());
    } else if let Some(w) = &watermark {
        target
            .parameters
            .insert(WATERMARK.to_string(), w.to_string());
    }
    if move_watermark || changed {
        report.call("UpdateTable");
        if client
            .update_table(db, &target, config.skip_table_archive)
            .await?
        {
            if changed {
                report.tables_updated += 1;
            }
        } else {
            // A concurrent sync updated the table after this one read it; its watermark stands (it is never
            // older than the one this sync read, and this sync's partitions are registered already).
            report.raced = true;
            return Ok(());
        }
    }
    report.watermark = target.parameters.get(WATERMARK).cloned();
    Ok(())
}

/// Whether `target` (a stored table with our definition merged in) differs from `stored` in anything the sync
/// writes.
pub(super) fn differs(target: &TableDef, stored: &TableDef) -> bool {
    target.partition_keys != stored.partition_keys
        || target.storage != stored.storage
        || target.parameters != stored.parameters
        || target.table_type != stored.table_type
}

/// `UpdateTable`, conditional on `table.version`: counted as an update, or as a race lost to a concurrent sync.
pub(super) async fn update_table(
    client: &dyn CatalogClient,
    db: &str,
    table: &TableDef,
    config: &CatalogConfig,
    report: &mut CatalogSyncReport,
) -> Result<(), CatalogError> {
    report.call("UpdateTable");
    if client
        .update_table(db, table, config.skip_table_archive)
        .await?
    {
        report.tables_updated += 1;
    } else {
        report.raced = true;
    }
    Ok(())
}

/// Locations compare without the scheme's `a`/`n` variants and trailing slashes.
fn same_location(a: &str, b: &str) -> bool {
    super::definition::catalog_location(a) == super::definition::catalog_location(b)
}
