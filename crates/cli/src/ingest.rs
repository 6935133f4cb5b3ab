//! The `ingest` command: the writer Lambda's path on a laptop.

use std::path::PathBuf;

use hudi_sink::bootstrap::{build_sink, load_properties};
use hudi_sink::sink::SinkReport;
use hudi_sink::source::event::KafkaBatch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Processes each event file in order and prints one JSON report per file and a total line.
pub async fn run(config: &str, events: &[PathBuf]) -> Result<(), BoxError> {
    let props = load_properties(config).await?;
    let sink = build_sink(&props, "hudi-sink-cli").await?;
    let mut total = SinkReport::default();
    for path in events {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let batch =
            KafkaBatch::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let report = sink.process(batch).await?;
        println!(
            "{}",
            serde_json::json!({ "event_file": path.display().to_string(), "report": report })
        );
        total.records_in += report.records_in;
        total.skipped += report.skipped;
        total.dead_lettered += report.dead_lettered;
        total.counts.records_in += report.counts.records_in;
        total.counts.inserted += report.counts.inserted;
        total.counts.updated += report.counts.updated;
        total.counts.deleted += report.counts.deleted;
        total.counts.deduped += report.counts.deduped;
        total.counts.ignored_older += report.counts.ignored_older;
        total.counts.delete_misses += report.counts.delete_misses;
        total.files += report.files;
        total.bytes += report.bytes;
        total.conflicts += report.conflicts;
        total.retries += report.retries;
    }
    let c = &total.counts;
    eprintln!(
        "records in {} = written {} + deduped {} + deleted {} + ignored {} + delete misses {} + dead-lettered {} + already committed {}",
        total.records_in,
        c.inserted + c.updated,
        c.deduped,
        c.deleted,
        c.ignored_older,
        c.delete_misses,
        total.dead_lettered,
        total.skipped
    );
    if !total.balanced() {
        return Err("record accounting does not add up (a bug: please report it)".into());
    }
    Ok(())
}
