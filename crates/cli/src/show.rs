//! The `show` command: what a table holds, read the way the writer reads it (properties, timeline, checkpoint,
//! latest file slices and their footers), so that a user can check a table without Spark. The table services'
//! work is visible too: clean instants, replacecommits (clustering), pending compactions, and where the active
//! timeline starts and whether anything was ever archived under `.hoodie/archived/`. Merge-on-read slices
//! list their committed log files under the base file (its row count is the base file's). A Delta Lake mirror
//! shows its version and lag.

use std::collections::BTreeMap;

use hudi_sink::base_file::reader::read_footer_from_storage;
use hudi_sink::config::java_properties::JavaProperties;
use hudi_sink::services::clean::pending_compaction::pending_compactions;
use hudi_sink::storage::open_storage;
use hudi_sink::storage::Storage;
use hudi_sink::table::instant::{Action, State};
use hudi_sink::table::timeline::{latest_file_slices, Timeline};

use crate::ingest::{human_bytes, BoxError};

/// `hudi-sink show` options.
#[derive(clap::Args)]
pub struct Args {
    /// Table base path: a directory or `s3://bucket/prefix`.
    #[arg(long, visible_alias = "base-path", value_name = "PATH_OR_URI")]
    pub table: String,
}

/// Where Hudi's archived timeline lives (this project's archival writes nothing there).
const ARCHIVED_DIR: &str = ".hoodie/archived/";

/// Properties worth a glance, in this order.
const SHOWN_PROPERTIES: &[&str] = &[
    "hoodie.table.name",
    "hoodie.table.type",
    "hoodie.table.version",
    "hoodie.table.recordkey.fields",
    "hoodie.table.partition.fields",
    "hoodie.table.precombine.field",
    "hoodie.table.keygenerator.class",
    "hoodie.bucket.index.num.buckets",
];

/// Prints the table at `uri` (a directory or `s3://bucket/prefix`).
pub async fn run(uri: &str) -> Result<(), BoxError> {
    let storage = open_storage(uri).await?;
    let props_bytes = storage
        .get(".hoodie/hoodie.properties")
        .await
        .map_err(|e| format!("{uri} is not a Hudi table (no .hoodie/hoodie.properties): {e}"))?;
    let props = JavaProperties::parse(&props_bytes)?;
    println!("table {uri}");
    for key in SHOWN_PROPERTIES {
        if let Some(value) = props.get(key) {
            println!("  {key}={value}");
        }
    }

    let timeline = Timeline::load(storage.as_ref()).await?;
    println!("timeline ({} instants):", timeline.instants().len());
    for instant in timeline.instants() {
        if instant.state == State::Completed && instant.action.is_commit_like() {
            let meta = timeline.commit_metadata(storage.as_ref(), instant).await?;
            let (mut files, mut inserts, mut updates, mut deletes) = (0, 0, 0, 0);
            for s in meta.write_stats() {
                files += 1;
                inserts += s.num_inserts;
                updates += s.num_update_writes;
                deletes += s.num_deletes;
            }
            println!(
                "  {:<40} {:<8} files {files:>4}  inserted {inserts:>7}  updated {updates:>7}  deleted {deletes:>7}",
                instant.file_name(),
                meta.operation_type.as_str(),
            );
        } else {
            println!("  {}", instant.file_name());
        }
    }

    show_services(storage.as_ref(), &timeline).await?;
    #[cfg(feature = "delta")]
    show_delta_mirror(&storage, uri, &timeline).await;

    match timeline.latest_checkpoint(storage.as_ref()).await? {
        Some((instant, checkpoint)) => {
            println!(
                "checkpoint (next offset per Kafka partition, as of {}):",
                instant.time
            );
            for (topic, partitions) in checkpoint.topics() {
                let list: Vec<String> =
                    partitions.iter().map(|(p, o)| format!("{p}:{o}")).collect();
                println!("  {topic} {}", list.join(" "));
            }
        }
        None => println!("checkpoint: none"),
    }

    let slices = latest_file_slices(storage.as_ref(), &timeline, None).await?;
    println!("file groups ({} latest slices):", slices.len());
    let mut per_partition: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    let mut total_rows = 0u64;
    let mut total_bytes = 0u64;
    for slice in &slices {
        let footer = read_footer_from_storage(storage.as_ref(), &slice.path(), slice.size).await?;
        println!(
            "  {:<28} {:<44} {} rows {:>8}  {}",
            if slice.partition_path.is_empty() {
                "(non-partitioned)"
            } else {
                &slice.partition_path
            },
            slice.file_id,
            slice.base_instant,
            footer.num_rows,
            human_bytes(slice.size)
        );
        for log in &slice.log_files {
            println!(
                "      log {} {} bytes ({})",
                log.name.file_name(),
                log.size,
                human_bytes(log.size)
            );
        }
        let e = per_partition.entry(&slice.partition_path).or_default();
        e.0 += 1;
        e.1 += footer.num_rows;
        e.2 += slice.size;
        total_rows += footer.num_rows;
        total_bytes += slice.size;
    }
    println!("rows per partition:");
    for (partition, (groups, rows, bytes)) in &per_partition {
        let name = if partition.is_empty() {
            "(non-partitioned)"
        } else {
            partition
        };
        println!(
            "  {name:<28} {rows:>10} rows in {groups} file groups ({})",
            human_bytes(*bytes)
        );
    }
    println!(
        "total: {total_rows} rows in {} file groups ({})",
        slices.len(),
        human_bytes(total_bytes)
    );
    Ok(())
}

/// The Delta Lake mirror (`hudi.sink.delta.mirror`), when `_delta_log/` exists: its latest version, the Hudi
/// instant it mirrors, and the lag in completed commit-like instants it does not hold yet.
#[cfg(feature = "delta")]
async fn show_delta_mirror(storage: &std::sync::Arc<dyn Storage>, uri: &str, timeline: &Timeline) {
    match hudi_sink::delta::status(storage.clone(), uri).await {
        Ok(None) => {}
        Ok(Some(status)) => {
            let lag = timeline
                .completed_commits()
                .iter()
                .filter(|i| status.instant.as_ref().is_none_or(|w| i.time > *w))
                .count();
            println!(
                "delta mirror: version {} (sequence {}), mirrors {}, {lag} completed instants behind, {} files",
                status.version,
                status.seq,
                status
                    .instant
                    .as_ref()
                    .map(|i| i.as_str())
                    .unwrap_or("nothing"),
                status.files.len()
            );
        }
        Err(e) => println!("delta mirror: unreadable: {e}"),
    }
}

/// The table services' traces: cleans, replacecommits, and the active/archived boundary.
async fn show_services(storage: &dyn Storage, timeline: &Timeline) -> Result<(), BoxError> {
    let instants = timeline.instants();
    match (instants.first(), instants.last()) {
        (Some(first), Some(last)) => println!(
            "active timeline: {} instants, first {}, last {}",
            instants.len(),
            first.time,
            last.time
        ),
        _ => println!("active timeline: 0 instants"),
    }
    let archived = storage.list(ARCHIVED_DIR).await?;
    if archived.is_empty() {
        println!("archived timeline: {ARCHIVED_DIR} is empty");
    } else {
        let bytes: u64 = archived.iter().map(|o| o.size).sum();
        println!(
            "archived timeline: {ARCHIVED_DIR} holds {} files ({})",
            archived.len(),
            human_bytes(bytes)
        );
    }

    let cleans: Vec<_> = instants
        .iter()
        .filter(|i| i.action == Action::Clean)
        .collect();
    println!("cleans ({}):", cleans.len());
    for clean in cleans {
        println!("  {} {}", clean.time, clean.state);
    }

    let replaces: Vec<_> = instants
        .iter()
        .filter(|i| i.action == Action::ReplaceCommit)
        .collect();
    println!("replacecommits ({}):", replaces.len());
    for replace in replaces {
        if replace.state == State::Completed {
            let meta = timeline.replace_commit_metadata(storage, replace).await?;
            println!(
                "  {} {} {:<17} replaced {} file groups, wrote {} files",
                replace.time,
                replace.state,
                meta.commit.operation_type.as_str(),
                meta.replaced_file_groups().count(),
                meta.commit.write_stats().count()
            );
        } else {
            println!("  {} {}", replace.time, replace.state);
        }
    }
    show_pending_compactions(storage, timeline).await
}

/// Merge-on-read: the compactions still requested or inflight, with the file groups of their plans (a plan
/// that cannot be read is reported, not fatal: `show` is how a user finds it).
async fn show_pending_compactions(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<(), BoxError> {
    let pending = pending_compactions(storage, timeline).await?;
    println!("pending compactions ({}):", pending.len());
    for (instant, plan) in pending {
        match plan {
            Ok(operations) => {
                println!(
                    "  {} {} {} file groups",
                    instant.time,
                    instant.state,
                    operations.len()
                );
                for op in operations {
                    println!(
                        "    {:<28} {:<44} base {} logs {}",
                        if op.partition_path.is_empty() {
                            "(non-partitioned)"
                        } else {
                            &op.partition_path
                        },
                        op.file_id,
                        op.base_instant,
                        op.delta_files.len()
                    );
                }
            }
            Err(e) => println!(
                "  {} {} plan not readable: {e}",
                instant.time, instant.state
            ),
        }
    }
    Ok(())
}
