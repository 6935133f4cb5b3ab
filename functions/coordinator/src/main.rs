//! Coordinator Lambda: begins and commits instants for the writers under the table lock, and runs table
//! services when invoked by the schedule (any event without an `op` field).
//!
//! Every answer carries the time the request waited for the table lock (`lock_wait_ms`), which the writer
//! reports in its metrics; every request is logged as one JSON line with its outcome. Every table-services run
//! that succeeds prints one EMF metrics line on stdout (`hudi_sink::metrics::service_emf`: files cleaned,
//! instants archived, file groups clustered, resumed services, run time), every catalog sync one more
//! (`hudi_sink::metrics::catalog_emf`: `CatalogSyncFailures`, partitions created, sync time), and every inline
//! service that failed after a commit a `ServiceFailures` line (`hudi_sink::metrics::after_commit_emf`).

use std::sync::Arc;

use hudi_sink::bootstrap::{build_coordinator, load_properties};
use hudi_sink::clock::SystemClock;
use hudi_sink::coordinator::Coordinator;
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::services::ServiceReport;
use hudi_sink::transport::answer_with_lock_wait;
use hudi_sink::write::WriteError;
use lambda_runtime::{service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hudi_sink::telemetry::init_json_logs();
    let config = std::env::var("HUDI_SINK_CONFIG")
        .map_err(|_| "HUDI_SINK_CONFIG must name the table properties file (s3://… or a path)")?;
    let props = load_properties(&config).await?;
    let coordinator = Arc::new(build_coordinator(&props, Arc::new(SystemClock)).await?);
    // Checked by build_coordinator: present and valid. The EMF dimension of the services metrics.
    let table: Arc<str> = props
        .get("hoodie.table.name")
        .map(|t| t.trim())
        .unwrap_or_default()
        .into();
    tracing::info!(config = %config, "coordinator ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let coordinator = coordinator.clone();
        let table = table.clone();
        async move { handle(&coordinator, &table, event).await }
    }))
    .await
}

/// Serves one request; a services run calls [`Coordinator::run_services`] itself, so that its report can go
/// to the metrics.
async fn serve(
    coordinator: &Coordinator,
    request: CoordinatorRequest,
) -> Result<(CoordinatorResponse, Option<ServiceReport>), WriteError> {
    match request {
        CoordinatorRequest::Services => {
            let report = coordinator.run_services().await?;
            Ok((CoordinatorResponse::Done, Some(report)))
        }
        other => Ok((coordinator.handle(other).await?, None)),
    }
}

/// The request an event stands for: a protocol message when it has an `op`, else the scheduled
/// table-services run (an EventBridge event or `{}`).
fn request_of(payload: Value) -> Result<CoordinatorRequest, String> {
    if payload.get("op").is_some() {
        serde_json::from_value(payload).map_err(|e| format!("not a coordinator request: {e}"))
    } else {
        Ok(CoordinatorRequest::Services)
    }
}

/// The request's name and instant, for the log line.
fn describe(request: &CoordinatorRequest) -> (&'static str, Option<&str>) {
    match request {
        CoordinatorRequest::Begin { .. } => ("begin", None),
        CoordinatorRequest::Commit(c) => ("commit", Some(c.instant.as_str())),
        CoordinatorRequest::Abort { instant } => ("abort", Some(instant.as_str())),
        CoordinatorRequest::Services => ("services", None),
        CoordinatorRequest::Join(j) => ("join", j.seen.as_deref()),
        CoordinatorRequest::Submit(s) => ("submit", Some(s.instant.as_str())),
        CoordinatorRequest::Close { instant, .. } => ("close", Some(instant.as_str())),
    }
}

/// The answer's status, for the log line.
fn status(response: &CoordinatorResponse) -> &'static str {
    match response {
        CoordinatorResponse::Begun { .. } => "begun",
        CoordinatorResponse::Committed { .. } => "committed",
        CoordinatorResponse::Conflict { .. } => "conflict",
        CoordinatorResponse::AlreadyCommitted { .. } => "already_committed",
        CoordinatorResponse::RolledBack { .. } => "rolled_back",
        CoordinatorResponse::Done => "done",
        CoordinatorResponse::Joined { .. } => "joined",
        CoordinatorResponse::WindowCommitted { .. } => "window_committed",
        CoordinatorResponse::Waiting { .. } => "waiting",
        CoordinatorResponse::Excluded { .. } => "excluded",
    }
}

async fn handle(
    coordinator: &Coordinator,
    table: &str,
    event: LambdaEvent<Value>,
) -> Result<Value, Diagnostic> {
    let request_id = event.context.request_id.clone();
    let request = request_of(event.payload).map_err(|message| {
        tracing::error!(request_id, error = %message, "invalid coordinator request");
        Diagnostic {
            error_type: "InvalidRequest".into(),
            error_message: message,
        }
    })?;
    let (op, instant) = describe(&request);
    let instant = instant.map(str::to_string);
    let started = std::time::Instant::now();
    let (result, lock_wait_ms) =
        hudi_sink::telemetry::with_lock_wait(serve(coordinator, request)).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    // The catalog sync after a commit or services run and the inline services that failed after a commit
    // (best effort: their failures are metrics, not the request's).
    hudi_sink::metrics::emit_after_commit(
        &coordinator.take_after_commit_report(),
        table,
        &request_id,
    );
    match result {
        Ok((response, services)) => {
            if let Some(report) = &services {
                hudi_sink::metrics::emit_services(report, table, &request_id);
            }
            tracing::info!(
                request_id,
                op,
                instant = instant.as_deref().unwrap_or(""),
                status = status(&response),
                lock_wait_ms,
                duration_ms,
                services = services
                    .as_ref()
                    .and_then(|r| serde_json::to_string(r).ok())
                    .unwrap_or_default(),
                "coordinator request served"
            );
            answer_with_lock_wait(&response, lock_wait_ms).map_err(|e| Diagnostic {
                error_type: "CoordinatorFailed".into(),
                error_message: format!("serialising the answer: {e}"),
            })
        }
        Err(e) => {
            tracing::error!(
                request_id,
                op,
                instant = instant.as_deref().unwrap_or(""),
                lock_wait_ms,
                duration_ms,
                error = %e,
                "coordinator request failed"
            );
            let failure = match op {
                "commit" | "submit" | "close" => Some(hudi_sink::metrics::Failure::Commit),
                "services" => Some(hudi_sink::metrics::Failure::Services),
                _ => None,
            };
            if let Some(failure) = failure {
                hudi_sink::metrics::emit_failure(failure, &e.to_string(), table, &request_id);
            }
            Err(Diagnostic {
                error_type: "CoordinatorFailed".into(),
                error_message: format!("{op}: {e}"),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hudi_sink::coordinator::CoordinatorConfig;
    use hudi_sink::lock::file::FileLock;
    use hudi_sink::lock::LeaseOptions;
    use hudi_sink::storage::MemoryStorage;

    #[tokio::test]
    async fn a_services_request_runs_the_services_and_returns_their_report() {
        let storage = Arc::new(MemoryStorage::new("mem://t"));
        let lock =
            Arc::new(FileLock::new(storage.clone(), "t", LeaseOptions::default()).expect("lock"));
        let coordinator = Coordinator::new(
            storage,
            lock,
            Arc::new(SystemClock),
            CoordinatorConfig::default(),
        );
        let (response, report) = serve(&coordinator, CoordinatorRequest::Services)
            .await
            .expect("services");
        assert_eq!(response, CoordinatorResponse::Done);
        let report = report.expect("a services run has a report");
        assert_eq!(
            ServiceReport {
                duration_ms: 0,
                ..report.clone()
            },
            ServiceReport::default(),
            "an empty table needs no service: {report:?}"
        );
        // Other requests have none.
        let (response, report) = serve(
            &coordinator,
            CoordinatorRequest::Begin { writer: "w".into() },
        )
        .await
        .expect("begin");
        assert!(matches!(response, CoordinatorResponse::Begun { .. }));
        assert!(report.is_none());
    }

    #[test]
    fn events_without_op_run_the_table_services() {
        assert_eq!(
            request_of(
                serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event"})
            ),
            Ok(CoordinatorRequest::Services)
        );
        assert_eq!(
            request_of(serde_json::json!({"op": "abort", "instant": "20251129103000123"})),
            Ok(CoordinatorRequest::Abort {
                instant: "20251129103000123".into()
            })
        );
        let bad = request_of(serde_json::json!({"op": "launch"})).expect_err("unknown op");
        assert!(
            bad.starts_with("not a coordinator request: unknown variant `launch`"),
            "{bad}"
        );
    }
}
