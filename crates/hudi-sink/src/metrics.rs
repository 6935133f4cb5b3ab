//! One CloudWatch Embedded Metric Format (EMF) line per writer invocation, and one per scheduled table-services
//! run of the coordinator: CloudWatch Logs turns the JSON line into metrics without any `PutMetricData` call
//! (no extra permission, no extra latency). Both go to the same namespace under the same `Table` dimension.
//!
//! The record counts add up: records in = skipped + written + deduped + deleted + ignored (older than the
//! stored row) + delete misses + dead-lettered, so an alarm on `RecordsDeadLettered` or a dashboard of the
//! rates never has an unexplained gap. Timings are in milliseconds; `MaxLag` is present only when the batch
//! had a record with a timestamp.

use serde_json::{json, Map, Value};

use crate::services::ServiceReport;
use crate::sink::SinkReport;

/// The CloudWatch namespace of the metrics.
pub const NAMESPACE: &str = "MskHudiSink";

/// The dimension every metric is published under (one series per table).
pub const DIMENSION: &str = "Table";

/// What the EMF document says about where it comes from, beyond the report.
#[derive(Debug, Clone, Copy)]
pub struct EmfContext<'a> {
    /// `hoodie.table.name`: the value of the [`DIMENSION`].
    pub table: &'a str,
    /// The Lambda request id (a property, not a dimension: it would make every line its own series).
    pub request_id: &'a str,
    /// When the invocation finished, epoch milliseconds (EMF's `Timestamp`).
    pub timestamp_ms: i64,
}

impl<'a> EmfContext<'a> {
    /// The context of a line printed now.
    pub fn now(table: &'a str, request_id: &'a str) -> Self {
        EmfContext {
            table,
            request_id,
            timestamp_ms: chrono::Utc::now().timestamp_millis(),
        }
    }
}

/// The metrics of one report: name, CloudWatch unit, value.
pub fn metric_values(report: &SinkReport) -> Vec<(&'static str, &'static str, u64)> {
    let c = &report.counts;
    let mut metrics = vec![
        ("RecordsIn", "Count", report.records_in),
        ("RecordsSkipped", "Count", report.skipped),
        ("RecordsWritten", "Count", c.inserted + c.updated),
        ("RecordsDeduped", "Count", c.deduped),
        ("RecordsDeleted", "Count", c.deleted),
        ("RecordsIgnoredOlder", "Count", c.ignored_older),
        ("DeleteMisses", "Count", c.delete_misses),
        ("RecordsDeadLettered", "Count", report.dead_lettered),
        ("TombstonesSkipped", "Count", report.tombstones_skipped),
        ("RowsMovedPartition", "Count", c.moved),
        ("IgnoredFields", "Count", report.ignored_fields),
        ("FilesWritten", "Count", report.files),
        ("BytesWritten", "Bytes", report.bytes),
        ("CommitLatency", "Milliseconds", report.commit_latency_ms),
        ("LockWait", "Milliseconds", report.lock_wait_ms),
        ("CommitConflicts", "Count", u64::from(report.conflicts)),
        ("CommitRetries", "Count", u64::from(report.retries)),
        ("SlotWaits", "Count", u64::from(report.slot_waits)),
    ];
    if let Some(lag) = report.max_lag_ms {
        metrics.push(("MaxLag", "Milliseconds", lag));
    }
    if let Some(wait) = report.window_wait_ms {
        metrics.push(("WindowWait", "Milliseconds", wait));
    }
    if let Some(n) = report.contributions_per_instant {
        metrics.push(("ContributionsPerInstant", "Count", u64::from(n)));
    }
    if let Some(n) = report.excluded_members {
        metrics.push(("ExcludedMembers", "Count", u64::from(n)));
    }
    metrics
}

/// The EMF document of one invocation.
pub fn emf(report: &SinkReport, context: &EmfContext<'_>) -> Value {
    document(
        &metric_values(report),
        context,
        [("Instant", json!(report.instant))],
    )
}

/// The metrics of one table-services run: name, CloudWatch unit, value.
pub fn service_metric_values(report: &ServiceReport) -> Vec<(&'static str, &'static str, u64)> {
    vec![
        ("FilesCleaned", "Count", report.files_cleaned),
        ("InstantsArchived", "Count", report.instants_archived),
        ("FileGroupsClustered", "Count", report.file_groups_clustered),
        ("ServiceResumed", "Count", report.resumed),
        ("ServiceTime", "Milliseconds", report.duration_ms),
    ]
}

/// The EMF document of one table-services run; the clean and clustering instants are properties (searchable
/// in the log line, not metrics).
pub fn service_emf(report: &ServiceReport, context: &EmfContext<'_>) -> Value {
    document(
        &service_metric_values(report),
        context,
        [
            ("CleanInstant", json!(report.clean_instant)),
            ("ClusterInstant", json!(report.cluster_instant)),
        ],
    )
}

/// The metrics of one catalog sync: name, CloudWatch unit, value.
pub fn catalog_metric_values(
    report: &crate::catalog::CatalogSyncReport,
) -> Vec<(&'static str, &'static str, u64)> {
    vec![
        (
            "CatalogSyncFailures",
            "Count",
            u64::from(report.error.is_some()),
        ),
        (
            "CatalogPartitionsCreated",
            "Count",
            report.partitions_created,
        ),
        ("CatalogSyncTime", "Milliseconds", report.duration_ms),
    ]
}

/// The EMF document of one catalog sync; the error and watermark are properties.
pub fn catalog_emf(report: &crate::catalog::CatalogSyncReport, context: &EmfContext<'_>) -> Value {
    document(
        &catalog_metric_values(report),
        context,
        [
            ("CatalogSyncError", json!(report.error)),
            ("CatalogWatermark", json!(report.watermark)),
        ],
    )
}

/// The metrics of one Delta mirror step: name, CloudWatch unit, value.
pub fn mirror_metric_values(
    report: &crate::commit::MirrorReport,
) -> Vec<(&'static str, &'static str, u64)> {
    vec![
        ("DeltaMirrorFailures", "Count", report.failures),
        ("DeltaMirrorVersions", "Count", report.versions_committed),
        ("DeltaMirrorTime", "Milliseconds", report.duration_ms),
    ]
}

/// The EMF document of one Delta mirror step; the error, version and instant are properties.
pub fn mirror_emf(report: &crate::commit::MirrorReport, context: &EmfContext<'_>) -> Value {
    document(
        &mirror_metric_values(report),
        context,
        [
            ("DeltaMirrorError", json!(report.error)),
            ("DeltaMirrorVersion", json!(report.version)),
            ("DeltaMirrorInstant", json!(report.instant)),
        ],
    )
}

/// An EMF document: the metadata directive naming every metric, the dimension, the request id, `properties`
/// and one member per metric.
fn document<const N: usize>(
    metrics: &[(&'static str, &'static str, u64)],
    context: &EmfContext<'_>,
    properties: [(&'static str, Value); N],
) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": context.timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[DIMENSION]],
                "Metrics": metrics
                    .iter()
                    .map(|(name, unit, _)| json!({"Name": name, "Unit": unit}))
                    .collect::<Vec<_>>(),
            }],
        }),
    );
    doc.insert(DIMENSION.into(), json!(context.table));
    doc.insert("RequestId".into(), json!(context.request_id));
    for (name, value) in properties {
        doc.insert(name.into(), value);
    }
    for (name, _, value) in metrics {
        doc.insert((*name).into(), json!(value));
    }
    Value::Object(doc)
}

/// Prints the EMF line of `report` to stdout, where the Lambda runtime forwards it to CloudWatch Logs.
pub fn emit(report: &SinkReport, table: &str, request_id: &str) {
    println!("{}", emf(report, &EmfContext::now(table, request_id)));
}

/// Prints the EMF line of a table-services run to stdout (see [`emit`]).
pub fn emit_services(report: &ServiceReport, table: &str, request_id: &str) {
    println!(
        "{}",
        service_emf(report, &EmfContext::now(table, request_id))
    );
}

/// A failed coordinator request or writer batch, for the deployments' alarms: the metric is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A commit step failed (`commit`, `submit` or `close`): the batch is redelivered.
    Commit,
    /// A scheduled table-services run failed.
    Services,
    /// A writer invocation failed (any cause; the event source mapping redelivers the batch).
    Batch,
}

/// The failure metrics: name, CloudWatch unit.
const FAILURE_METRICS: [(&str, &str); 3] = [
    ("CommitFailures", "Count"),
    ("ServiceFailures", "Count"),
    ("BatchFailures", "Count"),
];

impl Failure {
    /// The metric's name.
    pub fn metric(self) -> &'static str {
        match self {
            Failure::Commit => FAILURE_METRICS[0].0,
            Failure::Services => FAILURE_METRICS[1].0,
            Failure::Batch => FAILURE_METRICS[2].0,
        }
    }
}

/// The EMF document of a failure; the error text is a property.
pub fn failure_emf(failure: Failure, error: &str, context: &EmfContext<'_>) -> Value {
    document(
        &[(failure.metric(), "Count", 1)],
        context,
        [("Error", json!(error))],
    )
}

/// Prints the EMF line of a failure to stdout (see [`emit`]).
pub fn emit_failure(failure: Failure, error: &str, table: &str, request_id: &str) {
    println!(
        "{}",
        failure_emf(failure, error, &EmfContext::now(table, request_id))
    );
}

/// The EMF documents of what followed a table's commits in a writer that commits in process, as the
/// coordinator function prints them: the catalog sync (`CatalogSyncFailures`, partitions created, sync time),
/// the Delta mirror step (`DeltaMirrorFailures`, versions committed, time), then one `CommitFailures` per failed commit step and one `ServiceFailures` per failed inline service.
pub fn after_commit_emf(
    report: &crate::commit::AfterCommitReport,
    context: &EmfContext<'_>,
) -> Vec<Value> {
    let catalog = report.catalog.iter().map(|r| catalog_emf(r, context));
    let mirror = report.mirror.iter().map(|r| mirror_emf(r, context));
    let commits = report
        .commit_failures
        .iter()
        .map(|e| failure_emf(Failure::Commit, e, context));
    let services = report
        .service_failures
        .iter()
        .map(|e| failure_emf(Failure::Services, e, context));
    catalog
        .chain(mirror)
        .chain(commits)
        .chain(services)
        .collect()
}

/// Prints the EMF lines of what followed a table's commits (see [`after_commit_emf`] and [`emit`]).
pub fn emit_after_commit(report: &crate::commit::AfterCommitReport, table: &str, request_id: &str) {
    for doc in after_commit_emf(report, &EmfContext::now(table, request_id)) {
        println!("{doc}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::WriteCounts;

    fn report() -> SinkReport {
        SinkReport {
            records_in: 22,
            skipped: 2,
            dead_lettered: 3,
            tombstones_skipped: 2,
            ignored_fields: 7,
            counts: WriteCounts {
                records_in: 15,
                inserted: 6,
                updated: 2,
                deleted: 1,
                deduped: 3,
                ignored_older: 2,
                delete_misses: 1,
                moved: 0,
            },
            instant: Some("20251129103000123".into()),
            files: 4,
            bytes: 123_456,
            conflicts: 1,
            retries: 2,
            commit_latency_ms: 87,
            lock_wait_ms: 12,
            max_lag_ms: Some(4_500),
            window_wait_ms: Some(1_200),
            contributions_per_instant: Some(6),
            excluded_members: Some(1),
            slot_waits: 1,
        }
    }

    const CONTEXT: EmfContext<'static> = EmfContext {
        table: "trips",
        request_id: "req-1",
        timestamp_ms: 1_764_412_800_000,
    };

    /// Checks the EMF specification's rules on `doc` and returns the metric values by name.
    fn check_emf(doc: &Value) -> std::collections::BTreeMap<String, u64> {
        let aws = &doc["_aws"];
        assert!(aws["Timestamp"].is_i64(), "{doc}");
        let directives = aws["CloudWatchMetrics"].as_array().expect("directives");
        assert_eq!(directives.len(), 1);
        let d = &directives[0];
        assert_eq!(d["Namespace"], NAMESPACE);
        for set in d["Dimensions"].as_array().expect("dimension sets") {
            for dim in set.as_array().expect("dimension set") {
                let name = dim.as_str().expect("dimension name");
                assert!(
                    doc[name].is_string(),
                    "dimension {name} must be a string member"
                );
            }
        }
        let mut values = std::collections::BTreeMap::new();
        for m in d["Metrics"].as_array().expect("metrics") {
            let name = m["Name"].as_str().expect("name");
            let unit = m["Unit"].as_str().expect("unit");
            assert!(["Count", "Bytes", "Milliseconds"].contains(&unit), "{unit}");
            let v = doc[name]
                .as_u64()
                .unwrap_or_else(|| panic!("{name} is not a number"));
            assert!(values.insert(name.to_string(), v).is_none(), "{name} twice");
        }
        values
    }

    #[test]
    fn document_follows_emf_and_carries_every_measure() {
        let doc = emf(&report(), &CONTEXT);
        let v = check_emf(&doc);
        assert_eq!(doc["_aws"]["Timestamp"], 1_764_412_800_000i64);
        assert_eq!(doc["Table"], "trips");
        assert_eq!(doc["RequestId"], "req-1");
        assert_eq!(doc["Instant"], "20251129103000123");
        let expected: Vec<(&str, u64)> = vec![
            ("BytesWritten", 123_456),
            ("CommitConflicts", 1),
            ("CommitLatency", 87),
            ("CommitRetries", 2),
            ("ContributionsPerInstant", 6),
            ("DeleteMisses", 1),
            ("ExcludedMembers", 1),
            ("FilesWritten", 4),
            ("IgnoredFields", 7),
            ("LockWait", 12),
            ("MaxLag", 4_500),
            ("RecordsDeadLettered", 3),
            ("RecordsDeduped", 3),
            ("RecordsDeleted", 1),
            ("RecordsIgnoredOlder", 2),
            ("RecordsIn", 22),
            ("RecordsSkipped", 2),
            ("RecordsWritten", 8),
            ("RowsMovedPartition", 0),
            ("SlotWaits", 1),
            ("TombstonesSkipped", 2),
            ("WindowWait", 1_200),
        ];
        let actual: Vec<(&str, u64)> = v.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(actual, expected);
        // The record counts add up to the records in.
        let parts: u64 = [
            "RecordsSkipped",
            "RecordsWritten",
            "RecordsDeduped",
            "RecordsDeleted",
            "RecordsIgnoredOlder",
            "DeleteMisses",
            "RecordsDeadLettered",
            "TombstonesSkipped",
        ]
        .iter()
        .map(|k| v[*k])
        .sum();
        assert_eq!(parts, v["RecordsIn"]);
        assert!(report().balanced());
    }

    #[test]
    fn lag_is_left_out_when_no_record_had_a_timestamp() {
        let empty = SinkReport {
            records_in: 0,
            ..SinkReport::default()
        };
        let doc = emf(&empty, &CONTEXT);
        let v = check_emf(&doc);
        assert!(!v.contains_key("MaxLag"));
        assert!(doc.get("MaxLag").is_none());
        assert_eq!(doc["Instant"], Value::Null);
        assert_eq!(v.len(), 18);
        assert!(v.values().all(|n| *n == 0));
    }

    #[test]
    fn mirror_document_counts_a_failure_and_carries_the_error() {
        let mut failed = crate::commit::MirrorReport {
            error: Some("Delta log: boom".into()),
            failures: 1,
            ..Default::default()
        };
        // A second step of the same request (after a clustering) that succeeded keeps the failure counted.
        failed.merge(crate::commit::MirrorReport {
            versions_committed: 1,
            version: Some(3),
            ..Default::default()
        });
        let doc = mirror_emf(&failed, &CONTEXT);
        assert_eq!(check_emf(&doc)["DeltaMirrorFailures"], 1);
        assert_eq!(doc["DeltaMirrorError"], "Delta log: boom");
        let ok = crate::commit::MirrorReport {
            versions_committed: 2,
            version: Some(7),
            ..Default::default()
        };
        let doc = mirror_emf(&ok, &CONTEXT);
        assert_eq!(check_emf(&doc)["DeltaMirrorFailures"], 0);
        assert_eq!(check_emf(&doc)["DeltaMirrorVersions"], 2);
    }

    #[test]
    fn catalog_document_counts_a_failure_and_carries_the_error() {
        let failed = crate::catalog::CatalogSyncReport {
            error: Some("Glue GetTable failed: injected".into()),
            duration_ms: 812,
            ..Default::default()
        };
        let doc = catalog_emf(&failed, &CONTEXT);
        let v = check_emf(&doc);
        let actual: Vec<(&str, u64)> = v.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(
            actual,
            [
                ("CatalogPartitionsCreated", 0),
                ("CatalogSyncFailures", 1),
                ("CatalogSyncTime", 812)
            ]
        );
        assert_eq!(
            doc["CatalogSyncError"],
            json!("Glue GetTable failed: injected")
        );
        let ok = crate::catalog::CatalogSyncReport {
            partitions_created: 3,
            watermark: Some("20251129103000123".into()),
            ..Default::default()
        };
        let doc = catalog_emf(&ok, &CONTEXT);
        assert_eq!(check_emf(&doc)["CatalogSyncFailures"], 0);
        assert_eq!(check_emf(&doc)["CatalogPartitionsCreated"], 3);
        assert_eq!(doc["CatalogWatermark"], json!("20251129103000123"));
    }

    #[test]
    fn failure_documents_follow_emf_and_count_one() {
        for (failure, name) in [
            (Failure::Commit, "CommitFailures"),
            (Failure::Services, "ServiceFailures"),
            (Failure::Batch, "BatchFailures"),
        ] {
            let doc = failure_emf(failure, "lock: timed out", &CONTEXT);
            let values = check_emf(&doc);
            assert_eq!(values.len(), 1, "{doc}");
            assert_eq!(values[name], 1);
            assert_eq!(doc["Error"], json!("lock: timed out"));
        }
    }

    #[test]
    fn after_commit_documents_are_the_coordinator_functions_lines() {
        let report = crate::commit::AfterCommitReport {
            catalog: Some(crate::catalog::CatalogSyncReport {
                error: Some("Glue GetTable failed: injected".into()),
                duration_ms: 40,
                ..Default::default()
            }),
            mirror: None,
            commit_failures: vec!["storage: put failed".into()],
            service_failures: vec!["inline clustering: timed out".into()],
        };
        let docs = after_commit_emf(&report, &CONTEXT);
        let lines: Vec<(Vec<String>, Value)> = docs
            .iter()
            .map(|d| {
                let names = check_emf(d).into_keys().collect();
                let error = d
                    .get("Error")
                    .or_else(|| d.get("CatalogSyncError"))
                    .cloned()
                    .unwrap_or(Value::Null);
                (names, error)
            })
            .collect();
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            lines,
            [
                (
                    names(&[
                        "CatalogPartitionsCreated",
                        "CatalogSyncFailures",
                        "CatalogSyncTime"
                    ]),
                    json!("Glue GetTable failed: injected")
                ),
                (names(&["CommitFailures"]), json!("storage: put failed")),
                (
                    names(&["ServiceFailures"]),
                    json!("inline clustering: timed out")
                ),
            ]
        );
        assert_eq!(check_emf(&docs[0])["CatalogSyncFailures"], 1);
        assert!(docs.iter().all(|d| d["Table"] == "trips"));
        assert!(
            after_commit_emf(&crate::commit::AfterCommitReport::default(), &CONTEXT).is_empty()
        );
    }

    #[test]
    fn service_document_follows_emf_and_carries_every_measure() {
        let report = ServiceReport {
            clean_instant: Some("20251129103000123".into()),
            files_cleaned: 7,
            instants_archived: 12,
            cluster_instant: None,
            file_groups_clustered: 3,
            resumed: 1,
            duration_ms: 4_321,
            ..ServiceReport::default()
        };
        let doc = service_emf(&report, &CONTEXT);
        let v = check_emf(&doc);
        let actual: Vec<(&str, u64)> = v.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(
            actual,
            [
                ("FileGroupsClustered", 3),
                ("FilesCleaned", 7),
                ("InstantsArchived", 12),
                ("ServiceResumed", 1),
                ("ServiceTime", 4_321),
            ]
        );
        let units: Vec<(&str, &str)> = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .map(|m| {
                (
                    m["Name"].as_str().expect("name"),
                    m["Unit"].as_str().expect("unit"),
                )
            })
            .collect();
        assert_eq!(
            units,
            [
                ("FilesCleaned", "Count"),
                ("InstantsArchived", "Count"),
                ("FileGroupsClustered", "Count"),
                ("ServiceResumed", "Count"),
                ("ServiceTime", "Milliseconds"),
            ]
        );
        // The whole document: nothing else rides along.
        let mut members: Vec<&str> = doc
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        members.sort_unstable();
        assert_eq!(
            members,
            [
                "CleanInstant",
                "ClusterInstant",
                "FileGroupsClustered",
                "FilesCleaned",
                "InstantsArchived",
                "RequestId",
                "ServiceResumed",
                "ServiceTime",
                "Table",
                "_aws"
            ]
        );
        assert_eq!(doc["Table"], "trips");
        assert_eq!(doc["RequestId"], "req-1");
        assert_eq!(doc["_aws"]["Timestamp"], 1_764_412_800_000i64);
        assert_eq!(doc["CleanInstant"], "20251129103000123");
        assert_eq!(doc["ClusterInstant"], Value::Null);
        let line = doc.to_string();
        assert!(!line.contains('\n'));
        check_emf(&serde_json::from_str(&line).expect("parses"));
        // An idle run still reports, with zeros.
        let idle = check_emf(&service_emf(&ServiceReport::default(), &CONTEXT));
        assert_eq!(idle.len(), 5);
        assert!(idle.values().all(|n| *n == 0));
    }

    #[test]
    fn the_line_is_one_json_document() {
        let line = emf(&report(), &CONTEXT).to_string();
        assert!(!line.contains('\n'));
        let back: Value = serde_json::from_str(&line).expect("parses");
        check_emf(&back);
    }
}
