//! Coordinator Lambda: begins and commits instants for the writers under the table lock, and runs table
//! services when invoked by the schedule (any event without an `op` field).
//!
//! Every answer carries the time the request waited for the table lock (`lock_wait_ms`), which the writer
//! reports in its metrics; every request is logged as one JSON line with its outcome.

use std::sync::Arc;

use hudi_sink::bootstrap::{build_coordinator, load_properties};
use hudi_sink::clock::SystemClock;
use hudi_sink::coordinator::Coordinator;
use hudi_sink::protocol::{CoordinatorRequest, CoordinatorResponse};
use hudi_sink::transport::answer_with_lock_wait;
use lambda_runtime::{service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hudi_sink::telemetry::init_json_logs();
    let config = std::env::var("HUDI_SINK_CONFIG")
        .map_err(|_| "HUDI_SINK_CONFIG must name the table properties file (s3://… or a path)")?;
    let props = load_properties(&config).await?;
    let coordinator = Arc::new(build_coordinator(&props, Arc::new(SystemClock)).await?);
    tracing::info!(config = %config, "coordinator ready");
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let coordinator = coordinator.clone();
        async move { handle(&coordinator, event).await }
    }))
    .await
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
    }
}

async fn handle(coordinator: &Coordinator, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
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
        hudi_sink::telemetry::with_lock_wait(coordinator.handle(request)).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    match result {
        Ok(response) => {
            tracing::info!(
                request_id,
                op,
                instant = instant.as_deref().unwrap_or(""),
                status = status(&response),
                lock_wait_ms,
                duration_ms,
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
