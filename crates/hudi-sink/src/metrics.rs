//! One CloudWatch Embedded Metric Format (EMF) line per invocation: CloudWatch turns the JSON log line into
//! metrics without any API call. Counts add up: records in = skipped + written + deduped + deleted +
//! ignored + delete misses + dead-lettered.

use serde_json::{json, Value};

use crate::sink::SinkReport;

/// The CloudWatch namespace of the metrics.
pub const NAMESPACE: &str = "MskHudiSink";

/// The EMF document of one invocation (`timestamp_ms`: when it finished).
pub fn emf(report: &SinkReport, request_id: &str, timestamp_ms: i64) -> Value {
    let c = &report.counts;
    let names = [
        ("RecordsIn", "Count"),
        ("RecordsSkipped", "Count"),
        ("RecordsWritten", "Count"),
        ("RecordsDeduped", "Count"),
        ("RecordsDeleted", "Count"),
        ("RecordsIgnoredOlder", "Count"),
        ("DeleteMisses", "Count"),
        ("RecordsDeadLettered", "Count"),
        ("FilesWritten", "Count"),
        ("BytesWritten", "Bytes"),
        ("CommitConflicts", "Count"),
        ("CommitRetries", "Count"),
    ];
    json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[]],
                "Metrics": names.iter().map(|(n, u)| json!({"Name": n, "Unit": u})).collect::<Vec<_>>(),
            }],
        },
        "RequestId": request_id,
        "Instant": report.instant,
        "RecordsIn": report.records_in,
        "RecordsSkipped": report.skipped,
        "RecordsWritten": c.inserted + c.updated,
        "RecordsDeduped": c.deduped,
        "RecordsDeleted": c.deleted,
        "RecordsIgnoredOlder": c.ignored_older,
        "DeleteMisses": c.delete_misses,
        "RecordsDeadLettered": report.dead_lettered,
        "FilesWritten": report.files,
        "BytesWritten": report.bytes,
        "CommitConflicts": report.conflicts,
        "CommitRetries": report.retries,
    })
}

/// Prints the EMF line of `report` to stdout (where the Lambda runtime forwards it to CloudWatch Logs).
pub fn emit(report: &SinkReport, request_id: &str) {
    let line = emf(report, request_id, chrono::Utc::now().timestamp_millis());
    println!("{line}");
}
