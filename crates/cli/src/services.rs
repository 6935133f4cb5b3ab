//! The `services` command: one table-services run, as the coordinator Lambda's schedule makes it, from a
//! laptop. The coordinator is built by `bootstrap::build_coordinator` from the same properties the writers use,
//! so it takes the same table lock: a run never races the writers' commits.
//!
//! With `--table` and no `--config`, the settings are the defaults, the table's type, keys and partitioning come
//! from its `hoodie.properties` (as they do for whatever a `--config` omits), and the lock is the table's own file lock
//! (`.hoodie/.lock/<table name>/`). That is safe only when the table's writers use that lock too, so the command
//! refuses a table where no such lock was ever taken (its writers lock elsewhere, e.g. in DynamoDB: pass their
//! properties with `--config`).

use std::collections::BTreeMap;
use std::sync::Arc;

use hudi_sink::bootstrap::{build_coordinator, fill_from_table, load_properties};
use hudi_sink::clock::SystemClock;
use hudi_sink::config::java_properties::JavaProperties;
use hudi_sink::lock::file::LOCK_DIR;
use hudi_sink::storage::open_storage;

use crate::ingest::{apply_overrides, BoxError};

/// The table's properties file, relative to its base path.
const PROPERTIES: &str = ".hoodie/hoodie.properties";

/// `hudi-sink services` options.
#[derive(clap::Args)]
#[command(
    after_help = "Prints the run's report as one JSON object on stdout: clean_instant, files_cleaned, \
                  instants_archived, cluster_instant, file_groups_clustered, resumed, duration_ms."
)]
pub struct Args {
    /// Table properties (Hudi keys plus `hudi.sink.*`), local path or `s3://`: the service settings
    /// (`hoodie.clean.*`, `hoodie.cleaner.*`, `hoodie.keep.*`, `hoodie.clustering.*`) and the lock.
    #[arg(long, required_unless_present = "table")]
    pub config: Option<String>,
    /// Table base path (a directory or `s3://bucket/prefix`); with `--config` it replaces `hoodie.base.path`,
    /// without it the settings are the defaults and the lock is the table's file lock.
    #[arg(long, visible_alias = "base-path", value_name = "PATH_OR_URI")]
    pub table: Option<String>,
    /// Override or add a property (repeatable), e.g. `--set hoodie.cleaner.commits.retained=5`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// Runs the services once and prints the report.
pub async fn run(args: Args) -> Result<(), BoxError> {
    let mut props = match (&args.config, &args.table) {
        (Some(config), table) => {
            let mut props = load_properties(config).await?;
            if let Some(table) = table {
                props.insert("hoodie.base.path".into(), table.clone());
            }
            props
        }
        (None, Some(table)) => table_defaults(table).await?,
        (None, None) => return Err("give --config or --table".into()),
    };
    apply_overrides(&mut props, &args.overrides)?;
    // A mistyped base path must not get a lock directory: only an existing table is served. Whatever the
    // properties omit of the table's own settings (type, keys, partitioning) comes from its hoodie.properties.
    if let Some(base) = props.get("hoodie.base.path").cloned() {
        let storage = open_storage(&base).await?;
        if storage.head(PROPERTIES).await?.is_none() {
            return Err(format!("{base} is not a Hudi table (no {PROPERTIES})").into());
        }
        fill_from_table(&mut props, storage.as_ref()).await?;
    }
    let coordinator = build_coordinator(&props, Arc::new(SystemClock)).await?;
    let report = coordinator.run_services().await?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// The properties of a run with default settings: the table's base path, and its name, type, record key,
/// partitioning and key generator from `hoodie.properties` (added by `fill_from_table` in `run`). The
/// coordinator does not look records up, so the operation is `insert`: no index is needed.
async fn table_defaults(table: &str) -> Result<BTreeMap<String, String>, BoxError> {
    let storage = open_storage(table).await?;
    let bytes = storage
        .get(PROPERTIES)
        .await
        .map_err(|e| format!("{table} is not a Hudi table (no {PROPERTIES}): {e}"))?;
    let table_props = JavaProperties::parse(&bytes)?;
    let name = table_props
        .get("hoodie.table.name")
        .ok_or_else(|| format!("{table}: hoodie.properties has no hoodie.table.name"))?
        .to_string();
    let lock_dir = format!("{LOCK_DIR}/{name}/");
    if storage.list(&lock_dir).await?.is_empty() {
        return Err(format!(
            "{table}: no file lock was ever taken in this table ({lock_dir}), so its writers lock elsewhere \
             (e.g. in DynamoDB); pass their properties with --config so that this run takes the same lock"
        )
        .into());
    }
    Ok(BTreeMap::from([
        ("hoodie.base.path".to_string(), table.to_string()),
        (
            "hoodie.datasource.write.operation".to_string(),
            "insert".to_string(),
        ),
    ]))
}
