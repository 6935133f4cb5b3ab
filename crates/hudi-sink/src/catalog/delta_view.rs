//! The Delta view in Glue: with the Delta mirror on (`hudi.sink.delta.mirror`, docs/delta.md), a second Glue
//! table (`<table>_delta`, `hudi.sink.catalog.delta.table`) at the table's base path, of Athena's native Delta
//! table type, so that Athena, Trino's Delta Lake connector and Spark find the mirror by name.
//!
//! Delta readers take the schema and the files from `_delta_log/`, not from Glue: the table carries no partitions
//! and no watermark, so after it exists a sync only reads it (one `GetTable`) and repairs what someone changed.
//! It is created only once the Delta log has a version, so that no reader meets a Delta table without a log.

use std::collections::BTreeMap;

use super::config::CatalogConfig;
use super::definition::{catalog_location, StorageDef, TableDef};
use super::sync::{differs, update_table, CatalogClient, CatalogSyncReport};
use super::CatalogError;
use crate::storage::Storage;

/// The Delta log's directory under the base path.
pub const DELTA_LOG_DIR: &str = "_delta_log/";
/// What Trino's Delta Lake connector writes for a Delta table's storage (the format fields are required by
/// Glue's Hive clients, and no Delta reader uses them).
const INPUT_FORMAT: &str = "org.apache.hadoop.mapred.SequenceFileInputFormat";
const OUTPUT_FORMAT: &str = "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat";
const SERDE: &str = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe";

/// The Glue table of the Delta view for a table at `base_path`: parameters `table_type=DELTA` (Athena) and
/// `spark.sql.sources.provider=delta` (Spark, Trino), the location the base path, no columns.
pub fn delta_table_def(config: &CatalogConfig, base_path: &str) -> TableDef {
    let mut parameters = BTreeMap::new();
    if !config.create_managed_table {
        parameters.insert("EXTERNAL".to_string(), "TRUE".to_string());
    }
    parameters.insert("table_type".into(), "DELTA".into());
    parameters.insert("spark.sql.sources.provider".into(), "delta".into());
    let serde_parameters = BTreeMap::from([
        ("serialization.format".to_string(), "1".to_string()),
        (
            "path".to_string(),
            base_path.trim_end_matches('/').to_string(),
        ),
    ]);
    TableDef {
        name: config.delta_table.clone(),
        table_type: "EXTERNAL_TABLE".into(),
        parameters,
        partition_keys: Vec::new(),
        storage: StorageDef {
            columns: Vec::new(),
            location: catalog_location(base_path),
            input_format: INPUT_FORMAT.into(),
            output_format: OUTPUT_FORMAT.into(),
            serde_library: SERDE.into(),
            serde_parameters,
        },
        version: None,
    }
}

/// Makes the Delta view's Glue table exist as [`delta_table_def`] describes it (parameters others added stay,
/// columns a crawler or user added stay). Nothing while the table has no Delta log yet.
pub async fn sync_delta_view(
    client: &dyn CatalogClient,
    config: &CatalogConfig,
    storage: &dyn Storage,
    base_path: &str,
    report: &mut CatalogSyncReport,
) -> Result<(), CatalogError> {
    let db = config.database.as_str();
    let desired = delta_table_def(config, base_path);
    report.call("GetTable");
    match client.get_table(db, &desired.name).await? {
        None => {
            // Once per table's life: the listing that says the mirror has written its first version.
            if storage.list(DELTA_LOG_DIR).await?.is_empty() {
                return Ok(());
            }
            report.call("CreateTable");
            client.create_table(db, &desired).await?;
            report.tables_created += 1;
        }
        Some(stored) => {
            let mut target = desired;
            let mut parameters = stored.parameters.clone();
            parameters.extend(target.parameters);
            target.parameters = parameters;
            target.storage.columns = stored.storage.columns.clone();
            target.version = stored.version.clone();
            if differs(&target, &stored) {
                update_table(client, db, &target, config, report).await?;
            }
        }
    }
    Ok(())
}
