//! Writer Lambda: one event-source-mapping batch (MSK or self-managed Kafka) → one committed Hudi instant.
//! Returns only after the commit is durable, so the ESM commits the Kafka offsets only then; any error
//! makes the ESM redeliver the batch, which the sink handles exactly once.
//!
//! Per invocation it prints one EMF metrics line on stdout and logs JSON lines on stderr (see
//! `hudi_sink::metrics` and `hudi_sink::telemetry`); it stops starting new work when the invocation's
//! deadline comes within `hudi.sink.deadline.reserve.ms`.
//!
//! A properties file with routes (`hudi.sink.route.*`) makes one function write many tables: the batch is
//! split by topic, each table commits its part, and the invocation succeeds only when every table did
//! (`hudi_sink::router`); one EMF line is printed per table, and per table what followed its commit, as the
//! coordinator function prints it for one table (`CatalogSyncFailures`, `CommitFailures`, `ServiceFailures`:
//! `hudi_sink::metrics::after_commit_emf`), since the routed writer commits each table in process.

use std::sync::Arc;

use hudi_sink::bootstrap::{build_router, build_sink, load_properties};
use hudi_sink::clock::{Clock, SystemClock};
use hudi_sink::router::{is_routed, RouteError, Router};
use hudi_sink::sink::{KafkaSink, ProcessOptions};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::write::WriteError;
use lambda_runtime::{service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::value::RawValue;
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hudi_sink::telemetry::init_json_logs();
    let config = std::env::var("HUDI_SINK_CONFIG")
        .map_err(|_| "HUDI_SINK_CONFIG must name the table properties file (s3://… or a path)")?;
    let props = load_properties(&config).await?;
    if is_routed(&props) {
        let router = Arc::new(build_router(&props, &writer_id()).await?);
        tracing::info!(config = %config, "routed writer ready");
        return lambda_runtime::run(service_fn(move |event: LambdaEvent<Box<RawValue>>| {
            let router = router.clone();
            async move { handle_routed(&router, event).await }
        }))
        .await;
    }
    let table = props.get("hoodie.table.name").cloned().unwrap_or_default();
    let sink = Arc::new(build_sink(&props, &writer_id()).await?);
    tracing::info!(config = %config, table = %table, "writer ready");
    // The payload arrives as raw JSON text, parsed once by `KafkaBatch` itself: going through a
    // `serde_json::Value` would silently keep only the last of two equal keys (a repeated `records` or
    // "<topic>-<partition>" key would lose records), and would hold the batch in memory twice over.
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Box<RawValue>>| {
        let sink = sink.clone();
        let table = table.clone();
        async move { handle(&sink, &table, event).await }
    }))
    .await
}

/// Who begins instants, for the coordinator's logs and heartbeats: the function and its log stream
/// (one per execution environment), so that a stuck instant can be traced to its logs. It also names this
/// environment's window members, so it must differ between environments running at once: without a log
/// stream (`cargo lambda watch --concurrency` sets only `AWS_LAMBDA_INSTANCE_ID`) the instance id stands in.
fn writer_id() -> String {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    writer_id_of(
        var("AWS_LAMBDA_FUNCTION_NAME"),
        var("AWS_LAMBDA_LOG_STREAM_NAME").or_else(|| var("AWS_LAMBDA_INSTANCE_ID")),
    )
}

/// [`writer_id`] from the function name and the environment's stream (or instance) name.
fn writer_id_of(function: Option<String>, environment: Option<String>) -> String {
    match (function, environment) {
        (Some(function), Some(stream)) => format!("{function}/{stream}"),
        (Some(function), None) => function,
        _ => "writer".to_string(),
    }
}

/// The invocation deadline to honour, if it is usable. Lambda always hands over a deadline in the future;
/// a runtime emulator may send a placeholder (`cargo lambda watch` sends 600000, i.e. 1970), which would
/// otherwise make every batch fail at once.
fn usable_deadline(deadline_ms: u64, now_ms: i64) -> Option<i64> {
    let deadline = i64::try_from(deadline_ms).ok()?;
    (deadline > now_ms).then_some(deadline)
}

/// A function error whose type tells the operator what kind of failure it was.
fn diagnostic(error_type: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic {
        error_type: error_type.to_string(),
        error_message: message.into(),
    }
}

/// The batch of an invocation payload, or the `InvalidEvent` error that fails the invocation.
fn parse_event(payload: &RawValue) -> Result<KafkaBatch, Diagnostic> {
    KafkaBatch::from_json_str(payload.get()).map_err(|e| {
        diagnostic(
            "InvalidEvent",
            format!("not an MSK or self-managed Kafka event-source-mapping payload: {e}"),
        )
    })
}

/// The invocation's batch and deadline, or the `InvalidEvent` error that fails it.
fn batch_and_deadline(
    event: LambdaEvent<Box<RawValue>>,
) -> Result<(KafkaBatch, Option<i64>), Diagnostic> {
    let request_id = event.context.request_id.clone();
    let batch = parse_event(&event.payload).inspect_err(|d| {
        tracing::error!(request_id, error = %d.error_message, "invalid event-source-mapping payload");
    })?;
    let now = SystemClock.now_millis();
    let deadline_ms = usable_deadline(event.context.deadline, now);
    if deadline_ms.is_none() {
        tracing::warn!(
            request_id,
            deadline = event.context.deadline,
            "the invocation deadline is not in the future (a local emulator?); running without one"
        );
    }
    Ok((batch, deadline_ms))
}

/// A routed batch: every table's part committed, or the invocation fails and the batch comes again (the
/// tables that committed skip their part then).
async fn handle_routed(
    router: &Router,
    event: LambdaEvent<Box<RawValue>>,
) -> Result<Value, Diagnostic> {
    let request_id = event.context.request_id.clone();
    let (batch, deadline_ms) = batch_and_deadline(event)?;
    let records = batch.len();
    let options = ProcessOptions {
        deadline_ms,
        ..ProcessOptions::default()
    };
    let result = router.process_with(batch, options).await;
    // What followed each table's commits (catalog sync, failed commit steps and inline services), failed
    // batch or not: the lines the coordinator function prints for a single table.
    for (table, r) in router.take_after_commit_reports() {
        hudi_sink::metrics::emit_after_commit(&r, &table, &request_id);
    }
    match result {
        Ok(report) => {
            for (table, r) in &report.tables {
                hudi_sink::metrics::emit(r, table, &request_id);
            }
            tracing::info!(
                request_id,
                records,
                tables = report.tables.len(),
                unrouted = report.unrouted,
                "batch committed in every table"
            );
            serde_json::to_value(&report)
                .map_err(|e| diagnostic("WriteFailed", format!("serialising the report: {e}")))
        }
        Err(e) => {
            tracing::error!(request_id, records, error = %e, "batch failed; the event source mapping will redeliver it");
            if let RouteError::Tables { failed, .. } = &e {
                for f in failed {
                    hudi_sink::metrics::emit_failure(
                        hudi_sink::metrics::Failure::Batch,
                        &f.error.to_string(),
                        &f.table,
                        &request_id,
                    );
                }
            }
            let kind = if e.is_deadline() {
                "DeadlineNear"
            } else if e.is_config() {
                "Configuration"
            } else {
                "WriteFailed"
            };
            Err(diagnostic(kind, e.to_string()))
        }
    }
}

async fn handle(
    sink: &KafkaSink,
    table: &str,
    event: LambdaEvent<Box<RawValue>>,
) -> Result<Value, Diagnostic> {
    let request_id = event.context.request_id.clone();
    let (batch, deadline_ms) = batch_and_deadline(event)?;
    let records = batch.len();
    let result = sink
        .process_with(
            batch,
            ProcessOptions {
                deadline_ms,
                ..ProcessOptions::default()
            },
        )
        .await;
    // Without `hudi.sink.coordinator.function` the table commits in process: its after-commit lines are ours.
    hudi_sink::metrics::emit_after_commit(&sink.take_after_commit_report(), table, &request_id);
    match result {
        Ok(report) => {
            hudi_sink::metrics::emit(&report, table, &request_id);
            tracing::info!(
                request_id,
                records,
                instant = report.instant.as_deref().unwrap_or(""),
                dead_lettered = report.dead_lettered,
                "batch committed"
            );
            serde_json::to_value(&report)
                .map_err(|e| diagnostic("WriteFailed", format!("serialising the report: {e}")))
        }
        Err(e) => {
            tracing::error!(request_id, records, error = %e, "batch failed; the event source mapping will redeliver it");
            hudi_sink::metrics::emit_failure(
                hudi_sink::metrics::Failure::Batch,
                &e.to_string(),
                table,
                &request_id,
            );
            let kind = match e {
                WriteError::Deadline { .. } => "DeadlineNear",
                WriteError::Config { .. } | WriteError::ConfigKey(_) => "Configuration",
                _ => "WriteFailed",
            };
            Err(diagnostic(kind, e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_have_distinct_writer_ids() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            writer_id_of(some("w"), some("2026/01/01/[1]abc")),
            "w/2026/01/01/[1]abc"
        );
        assert_ne!(
            writer_id_of(some("w"), some("instance-1")),
            writer_id_of(some("w"), some("instance-2"))
        );
        assert_eq!(writer_id_of(some("w"), None), "w");
        assert_eq!(writer_id_of(None, some("x")), "writer");
    }

    #[test]
    fn only_a_deadline_in_the_future_is_honoured() {
        let now = 1_764_412_800_000;
        assert_eq!(
            usable_deadline(1_764_412_900_000, now),
            Some(1_764_412_900_000)
        );
        // cargo lambda watch's placeholder, a deadline already passed, and nonsense.
        assert_eq!(usable_deadline(600_000, now), None);
        assert_eq!(usable_deadline(now as u64, now), None);
        assert_eq!(usable_deadline(u64::MAX, now), None);
    }

    fn record(partition: i32, offset: i64) -> String {
        format!(
            r#"{{"topic":"trips","partition":{partition},"offset":{offset},"timestamp":1764412800123,"timestampType":"CREATE_TIME","key":"az0x","value":"e30=","headers":[]}}"#
        )
    }

    fn raw(text: String) -> Box<RawValue> {
        RawValue::from_string(text).expect("valid JSON text")
    }

    #[test]
    fn repeated_keys_lose_no_record() {
        // The same "<topic>-<partition>" key twice: both arrays are kept, in order, or refused; never
        // silently replaced by the last one (what a `serde_json::Value` would do).
        let payload = raw(format!(
            r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:eu-west-1:111122223333:cluster/c/1","records":{{"trips-0":[{}],"trips-0":[{}]}}}}"#,
            record(0, 1),
            record(0, 2)
        ));
        match parse_event(&payload) {
            Ok(batch) => {
                let offsets: Vec<i64> = batch.records.iter().map(|r| r.offset).collect();
                assert_eq!(offsets, vec![1, 2]);
            }
            Err(d) => assert_eq!(d.error_type, "InvalidEvent", "{}", d.error_message),
        }
        // `records` twice: refused with a message naming it.
        let payload = raw(format!(
            r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:eu-west-1:111122223333:cluster/c/1","records":{{"trips-0":[{}]}},"records":{{"trips-1":[{}]}}}}"#,
            record(0, 1),
            record(1, 1)
        ));
        let d = parse_event(&payload).expect_err("a repeated `records` key is refused");
        assert_eq!(d.error_type, "InvalidEvent");
        assert!(d.error_message.contains("records"), "{}", d.error_message);
    }

    #[test]
    fn function_errors_say_what_failed() {
        let d = diagnostic("InvalidEvent", "bad");
        assert_eq!(
            (d.error_type.as_str(), d.error_message.as_str()),
            ("InvalidEvent", "bad")
        );
    }
}
