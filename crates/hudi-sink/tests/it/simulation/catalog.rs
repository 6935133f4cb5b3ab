//! The Glue catalog of a run: the in-memory catalog behind random failures (before or after the call takes
//! effect, as a lost answer would), checked on every watermark move.
//!
//! Invariants, on every `UpdateTable`: the catalog holds every partition written by a commit at or before the
//! watermark it is given (a reader trusting the watermark misses nothing), and the watermark never moves back
//! (concurrent syncs update conditionally on the version they read). After the run, one clean sync
//! leaves the catalog's partitions equal to those on storage, at their locations, with the watermark at the
//! latest commit.

use hudi_sink::catalog::definition::{PartitionDef, StoredPartition, TableDef, WATERMARK};
use hudi_sink::catalog::memory::MemoryCatalog;
use hudi_sink::catalog::{CatalogClient, CatalogConfig, CatalogError};

use super::*;

/// The sync settings of every coordinator of a run.
pub(super) fn sim_catalog_config() -> CatalogConfig {
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.datasource.meta.sync.enable", "true"),
        (
            "hoodie.meta.sync.client.tool.class",
            "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
        ),
        ("hoodie.datasource.hive_sync.database", "lake"),
        ("hudi.sink.catalog.sync.backoff.ms", "1"),
        ("hudi.sink.catalog.sync.timeout.ms", "600000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    CatalogConfig::from_properties(&props)
        .ok()
        .flatten()
        .expect("valid catalog settings")
}

#[derive(Debug)]
pub(super) struct SimCatalog {
    inner: MemoryCatalog,
    world: Arc<World>,
    recorder: Arc<Recorder>,
    violations: Mutex<Vec<String>>,
    updates: AtomicU64,
}

impl SimCatalog {
    pub(super) fn new(world: Arc<World>, recorder: Arc<Recorder>) -> Self {
        Self {
            inner: MemoryCatalog::default(),
            world,
            recorder,
            violations: Mutex::new(Vec::new()),
            updates: AtomicU64::new(0),
        }
    }

    /// An injected failure before the call (`Err` now) or after it took effect (`Some` error to return).
    fn before(&self, op: &str) -> Result<bool, CatalogError> {
        if self.world.chance(6) {
            self.world.count("catalog call failed (injected)");
            return Err(CatalogError::Glue {
                operation: op.into(),
                message: "injected failure".into(),
            });
        }
        Ok(self.world.chance(4))
    }

    fn after(&self, op: &str, lost: bool) -> Result<(), CatalogError> {
        if lost {
            self.world.count("catalog answer lost (injected)");
            return Err(CatalogError::Glue {
                operation: op.into(),
                message: "injected lost answer".into(),
            });
        }
        Ok(())
    }

    /// The watermark invariants, as the catalog stands after an `UpdateTable` to `table` (the watermark was
    /// `before`).
    async fn check_watermark(&self, table: &TableDef, before: Option<String>) {
        self.updates.fetch_add(1, Ordering::SeqCst);
        let Some(w) = table.parameters.get(WATERMARK) else {
            return;
        };
        if before.as_ref().is_some_and(|b| b > w) {
            lock(&self.violations).push(format!("watermark moved back from {before:?} to {w}"));
        }
        let written = match self.recorder.partitions_written_up_to(w) {
            Ok(p) => p,
            Err(f) => {
                lock(&self.violations).push(format!("reading commits: {}", f.detail));
                return;
            }
        };
        let held: BTreeSet<String> = self
            .catalog_partitions_of(&table.name)
            .into_keys()
            .filter_map(|v| v.first().cloned())
            .collect();
        let missing: Vec<String> = written
            .iter()
            .filter_map(|p| p.strip_prefix("city="))
            .filter(|v| !held.contains(*v))
            .map(String::from)
            .collect();
        if !missing.is_empty() {
            lock(&self.violations).push(format!(
                "watermark {w} set while partitions {missing:?} of commits at or before it are missing"
            ));
        }
    }

    /// The catalog's tables: `trips`, or `trips_ro` and `trips_rt` for a merge-on-read table.
    pub(super) fn table_names(&self) -> Vec<String> {
        lock(&self.inner.tables)
            .keys()
            .filter(|(db, _)| db == "lake")
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// `{values: location}` of the catalog table `name`'s partitions.
    pub(super) fn catalog_partitions_of(&self, name: &str) -> BTreeMap<Vec<String>, String> {
        lock(&self.inner.partitions)
            .get(&("lake".to_string(), name.to_string()))
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.storage.location.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The watermark of the catalog table `name`.
    pub(super) fn watermark_of(&self, name: &str) -> Option<String> {
        lock(&self.inner.tables)
            .get(&("lake".to_string(), name.to_string()))
            .and_then(|t| t.parameters.get(WATERMARK).cloned())
    }

    pub(super) fn violations(&self) -> Vec<String> {
        lock(&self.violations).clone()
    }

    pub(super) fn updates(&self) -> u64 {
        self.updates.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl CatalogClient for SimCatalog {
    async fn database_exists(&self, database: &str) -> Result<bool, CatalogError> {
        let lost = self.before("GetDatabase")?;
        let r = self.inner.database_exists(database).await?;
        self.after("GetDatabase", lost).map(|()| r)
    }
    async fn create_database(&self, database: &str) -> Result<(), CatalogError> {
        let lost = self.before("CreateDatabase")?;
        self.inner.create_database(database).await?;
        self.after("CreateDatabase", lost)
    }
    async fn get_table(&self, db: &str, name: &str) -> Result<Option<TableDef>, CatalogError> {
        let lost = self.before("GetTable")?;
        let r = self.inner.get_table(db, name).await?;
        self.after("GetTable", lost).map(|()| r)
    }
    async fn create_table(&self, db: &str, table: &TableDef) -> Result<(), CatalogError> {
        let lost = self.before("CreateTable")?;
        if self.inner.get_table(db, &table.name).await?.is_some() {
            // Glue refuses a second create; a sync that lost the answer of its first sees this.
            return Err(CatalogError::Glue {
                operation: "CreateTable".into(),
                message: "AlreadyExistsException".into(),
            });
        }
        self.inner.create_table(db, table).await?;
        self.after("CreateTable", lost)
    }
    async fn update_table(
        &self,
        db: &str,
        table: &TableDef,
        skip: bool,
    ) -> Result<bool, CatalogError> {
        let lost = self.before("UpdateTable")?;
        let before = self.watermark_of(&table.name);
        let updated = self.inner.update_table(db, table, skip).await?;
        if updated {
            self.check_watermark(table, before).await;
        }
        self.after("UpdateTable", lost).map(|()| updated)
    }
    async fn get_partitions(
        &self,
        db: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        let lost = self.before("BatchGetPartition")?;
        let r = self.inner.get_partitions(db, table, values).await?;
        self.after("BatchGetPartition", lost).map(|()| r)
    }
    async fn all_partitions(
        &self,
        db: &str,
        table: &str,
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        let lost = self.before("GetPartitions")?;
        let r = self.inner.all_partitions(db, table).await?;
        self.after("GetPartitions", lost).map(|()| r)
    }
    async fn create_partitions(
        &self,
        db: &str,
        table: &str,
        ps: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        let lost = self.before("BatchCreatePartition")?;
        self.inner.create_partitions(db, table, ps).await?;
        self.after("BatchCreatePartition", lost)
    }
    async fn update_partitions(
        &self,
        db: &str,
        table: &str,
        ps: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        let lost = self.before("BatchUpdatePartition")?;
        self.inner.update_partitions(db, table, ps).await?;
        self.after("BatchUpdatePartition", lost)
    }
    async fn delete_partitions(
        &self,
        db: &str,
        table: &str,
        vs: &[Vec<String>],
    ) -> Result<(), CatalogError> {
        let lost = self.before("BatchDeletePartition")?;
        self.inner.delete_partitions(db, table, vs).await?;
        self.after("BatchDeletePartition", lost)
    }
}

/// After the run's final clean sync: the catalog equals the table.
pub(super) async fn check_catalog(
    catalog: &SimCatalog,
    table: &dyn Storage,
) -> Result<(), Failure> {
    let violations = catalog.violations();
    if let Some(v) = violations.first() {
        return Err(fail("catalog watermark covers its partitions", v.clone()));
    }
    let on_storage: BTreeMap<Vec<String>, String> = table
        .list("")
        .await
        .map_err(|e| fail("read", e.to_string()))?
        .into_iter()
        .filter_map(|o| {
            let dir = o
                .path
                .strip_suffix("/.hoodie_partition_metadata")?
                .to_string();
            let value = dir.strip_prefix("city=")?.to_string();
            Some((vec![value], format!("memory://sim/{dir}")))
        })
        .collect();
    let latest = Timeline::load(table)
        .await
        .map_err(|e| fail("read", e.to_string()))?
        .latest_completed()
        .map(|i| i.time.to_string());
    let names = catalog.table_names();
    if names.is_empty() {
        return Err(fail("catalog equals the table", "no catalog table"));
    }
    for name in names {
        let held = catalog.catalog_partitions_of(&name);
        if held != on_storage {
            return Err(fail(
                "catalog equals the table",
                format!("{name}: catalog {held:?}, storage {on_storage:?}"),
            ));
        }
        if catalog.watermark_of(&name) != latest {
            return Err(fail(
                "catalog equals the table",
                format!(
                    "{name}: watermark {:?}, latest commit {latest:?}",
                    catalog.watermark_of(&name)
                ),
            ));
        }
    }
    Ok(())
}
