//! The `sync-catalog` command: one Glue Data Catalog sync of a table, as the coordinator runs it after every
//! commit, from a laptop. It only reads the table (no lock): the catalog converges whoever syncs.

use hudi_sink::bootstrap::{
    build_catalog, check_keys, fill_from_table, load_properties, open_storage_with, ClientTimeouts,
};

use crate::ingest::{apply_overrides, BoxError};

/// `hudi-sink sync-catalog` options.
#[derive(clap::Args)]
#[command(
    after_help = "Prints the sync's report as one JSON object on stdout: tables_created, tables_updated, \
                  partitions_created, partitions_updated, partitions_deleted, full_listing, watermark, calls \
                  (requests per Glue operation), duration_ms."
)]
pub struct Args {
    /// Table properties with the sync keys (`hoodie.datasource.meta.sync.enable=true`,
    /// `hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool`,
    /// `hoodie.datasource.hive_sync.*`), local path or `s3://`.
    #[arg(long)]
    pub config: String,
    /// Table base path; replaces `hoodie.base.path`.
    #[arg(long, visible_alias = "base-path", value_name = "PATH_OR_URI")]
    pub table: Option<String>,
    /// Override or add a property (repeatable), e.g. `--set hoodie.datasource.hive_sync.database=lake`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// Syncs once and prints the report; a failed sync is an error here.
pub async fn run(args: Args) -> Result<(), BoxError> {
    let mut props = load_properties(&args.config).await?;
    if let Some(table) = &args.table {
        props.insert("hoodie.base.path".into(), table.clone());
    }
    apply_overrides(&mut props, &args.overrides)?;
    let base = props
        .get("hoodie.base.path")
        .cloned()
        .ok_or("the configuration has no hoodie.base.path (or pass --table)")?;
    let storage = open_storage_with(&base, &ClientTimeouts::from_properties(&props)?).await?;
    if storage.head(".hoodie/hoodie.properties").await?.is_none() {
        return Err(format!("{base} is not a Hudi table (no .hoodie/hoodie.properties)").into());
    }
    // The table's own partitioning and keys settle what the properties omit.
    fill_from_table(&mut props, storage.as_ref()).await?;
    check_keys(&props)?;
    let Some(sync) = build_catalog(&props, &base).await? else {
        return Err("the catalog sync is off: set hoodie.datasource.meta.sync.enable=true and \
                    hoodie.meta.sync.client.tool.class=org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool"
            .into());
    };
    let report = sync.sync(storage.as_ref(), &[]).await?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
