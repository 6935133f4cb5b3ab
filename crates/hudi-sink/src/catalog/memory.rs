//! A Glue catalog in memory, with Glue's batch limits enforced and failures injectable: for the sync's unit
//! tests and the deterministic simulation (the moto tests exercise the SDK client).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use async_trait::async_trait;

use super::definition::{PartitionDef, StoredPartition, TableDef};
use super::sync::{
    CatalogClient, MAX_CREATE_PARTITIONS, MAX_DELETE_PARTITIONS, MAX_GET_PARTITIONS,
};
use super::CatalogError;

/// Partitions per (database, table), by values.
pub type PartitionMap = BTreeMap<(String, String), BTreeMap<Vec<String>, PartitionDef>>;

/// A Glue catalog in memory: tables, partitions, the calls made, and an injected failure.
#[derive(Debug, Default)]
pub struct MemoryCatalog {
    /// Databases.
    pub databases: Mutex<BTreeSet<String>>,
    /// Tables by (database, name).
    pub tables: Mutex<BTreeMap<(String, String), TableDef>>,
    /// Partitions.
    pub partitions: Mutex<PartitionMap>,
    /// Fail every call after this many calls (None: never).
    pub fail_after: Mutex<Option<usize>>,
    /// Every call, by Glue operation name.
    pub calls: Mutex<Vec<String>>,
}

impl MemoryCatalog {
    fn call(&self, op: &str) -> Result<(), CatalogError> {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.push(op.to_string());
        if let Some(n) = *self.fail_after.lock().unwrap_or_else(|e| e.into_inner()) {
            if calls.len() > n {
                return Err(CatalogError::Glue {
                    operation: op.to_string(),
                    message: "injected".into(),
                });
            }
        }
        Ok(())
    }
}

#[async_trait]
impl CatalogClient for MemoryCatalog {
    async fn database_exists(&self, database: &str) -> Result<bool, CatalogError> {
        self.call("GetDatabase")?;
        Ok(self
            .databases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(database))
    }
    async fn create_database(&self, database: &str) -> Result<(), CatalogError> {
        self.call("CreateDatabase")?;
        self.databases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(database.into());
        Ok(())
    }
    async fn get_table(&self, db: &str, name: &str) -> Result<Option<TableDef>, CatalogError> {
        self.call("GetTable")?;
        Ok(self
            .tables
            .lock()
            .unwrap()
            .get(&(db.into(), name.into()))
            .cloned())
    }
    async fn create_table(&self, db: &str, table: &TableDef) -> Result<(), CatalogError> {
        self.call("CreateTable")?;
        if !self
            .databases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(db)
        {
            return Err(CatalogError::Glue {
                operation: "CreateTable".into(),
                message: "EntityNotFoundException: database".into(),
            });
        }
        self.tables.lock().unwrap().insert(
            (db.into(), table.name.clone()),
            TableDef {
                version: Some("1".into()),
                ..table.clone()
            },
        );
        Ok(())
    }
    async fn update_table(
        &self,
        db: &str,
        table: &TableDef,
        _: bool,
    ) -> Result<bool, CatalogError> {
        self.call("UpdateTable")?;
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let key = (db.to_string(), table.name.clone());
        let Some(current) = tables.get(&key) else {
            return Err(CatalogError::Glue {
                operation: "UpdateTable".into(),
                message: "EntityNotFoundException: table".into(),
            });
        };
        if table.version.is_some() && table.version != current.version {
            return Ok(false);
        }
        let next = current
            .version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1)
            + 1;
        let mut stored = table.clone();
        stored.version = Some(next.to_string());
        tables.insert(key, stored);
        Ok(true)
    }

    async fn get_partitions(
        &self,
        db: &str,
        table: &str,
        values: &[Vec<String>],
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        self.call("BatchGetPartition")?;
        check_limit("BatchGetPartition", values.len(), MAX_GET_PARTITIONS)?;
        let parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        let Some(map) = parts.get(&(db.into(), table.into())) else {
            return Ok(Vec::new());
        };
        Ok(values
            .iter()
            .filter_map(|v| map.get(v))
            .map(|p| StoredPartition {
                values: p.values.clone(),
                location: p.storage.location.clone(),
            })
            .collect())
    }
    async fn all_partitions(
        &self,
        db: &str,
        table: &str,
    ) -> Result<Vec<StoredPartition>, CatalogError> {
        self.call("GetPartitions")?;
        let parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        Ok(parts
            .get(&(db.into(), table.into()))
            .map(|m| {
                m.values()
                    .map(|p| StoredPartition {
                        values: p.values.clone(),
                        location: p.storage.location.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
    async fn create_partitions(
        &self,
        db: &str,
        table: &str,
        ps: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        self.call("BatchCreatePartition")?;
        check_limit("BatchCreatePartition", ps.len(), MAX_CREATE_PARTITIONS)?;
        let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        let map = parts.entry((db.into(), table.into())).or_default();
        for p in ps {
            map.entry(p.values.clone()).or_insert_with(|| p.clone());
        }
        Ok(())
    }
    async fn update_partitions(
        &self,
        db: &str,
        table: &str,
        ps: &[PartitionDef],
    ) -> Result<(), CatalogError> {
        self.call("BatchUpdatePartition")?;
        let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        let map = parts.entry((db.into(), table.into())).or_default();
        for p in ps {
            map.insert(p.values.clone(), p.clone());
        }
        Ok(())
    }
    async fn delete_partitions(
        &self,
        db: &str,
        table: &str,
        vs: &[Vec<String>],
    ) -> Result<(), CatalogError> {
        self.call("BatchDeletePartition")?;
        check_limit("BatchDeletePartition", vs.len(), MAX_DELETE_PARTITIONS)?;
        let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = parts.get_mut(&(db.into(), table.into())) {
            for v in vs {
                map.remove(v);
            }
        }
        Ok(())
    }
}

/// Glue refuses batches above its limits; so does this catalog.
fn check_limit(operation: &str, n: usize, max: usize) -> Result<(), CatalogError> {
    if n > max {
        return Err(CatalogError::Glue {
            operation: operation.into(),
            message: format!("{n} entries, above Glue's limit of {max}"),
        });
    }
    Ok(())
}
