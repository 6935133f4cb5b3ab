//! How a writer reaches the coordinator: in process (the embedded mode and tests) or over Lambda `Invoke`.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::commit::{AfterCommitReport, Coordinator};
use crate::protocol::{CoordinatorRequest, CoordinatorResponse};
use crate::write::WriteError;

/// Member the coordinator function adds to its JSON answer: milliseconds it waited for the table lock while
/// serving the request, so that the writer can report the lock wait of its invocation. Unknown to the
/// protocol types, so either side may be older than the other.
pub const LOCK_WAIT_FIELD: &str = "lock_wait_ms";

/// The coordinator function's answer: `response` with its lock wait as [`LOCK_WAIT_FIELD`].
pub fn answer_with_lock_wait(
    response: &CoordinatorResponse,
    lock_wait_ms: u64,
) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(response)?;
    if let Some(object) = value.as_object_mut() {
        object.insert(LOCK_WAIT_FIELD.into(), lock_wait_ms.into());
    }
    Ok(value)
}

/// Parses a coordinator function's answer and records its lock wait (see [`crate::telemetry`]).
pub fn parse_answer(body: &[u8]) -> Result<CoordinatorResponse, serde_json::Error> {
    let mut value: serde_json::Value = serde_json::from_slice(body)?;
    if let Some(waited) = value
        .as_object_mut()
        .and_then(|o| o.remove(LOCK_WAIT_FIELD))
        .and_then(|v| v.as_u64())
    {
        crate::telemetry::record_lock_wait(waited);
    }
    serde_json::from_value(value)
}

/// Sends protocol requests to a coordinator. Every request is safe to repeat.
#[async_trait]
pub trait CoordinatorClient: Send + Sync + Debug {
    /// Sends one request and waits for the answer.
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError>;

    /// What followed the commits since the last call, once, when the coordinator runs in this process (its
    /// metrics are then the writer's to print). Empty for a remote coordinator, which prints its own.
    fn take_after_commit_report(&self) -> AfterCommitReport {
        AfterCommitReport::default()
    }
}

/// A coordinator living in the same process.
#[derive(Debug, Clone)]
pub struct InProcessClient {
    coordinator: Coordinator,
    /// Failed commit steps since the last report (the coordinator function's `CommitFailures`).
    commit_failures: Arc<Mutex<Vec<String>>>,
}

impl InProcessClient {
    /// Wraps a coordinator.
    pub fn new(coordinator: Coordinator) -> Self {
        Self {
            coordinator,
            commit_failures: Arc::default(),
        }
    }
}

/// Whether `request` is a commit step, whose failure counts as `CommitFailures` (as the coordinator function
/// counts it).
fn is_commit_step(request: &CoordinatorRequest) -> bool {
    matches!(
        request,
        CoordinatorRequest::Commit(_)
            | CoordinatorRequest::Submit(_)
            | CoordinatorRequest::Close { .. }
    )
}

#[async_trait]
impl CoordinatorClient for InProcessClient {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let commit_step = is_commit_step(&request);
        let result = self.coordinator.handle(request).await;
        if let (true, Err(e)) = (commit_step, &result) {
            if let Ok(mut failures) = self.commit_failures.lock() {
                if failures.len() < crate::commit::MAX_KEPT_FAILURES {
                    failures.push(e.to_string());
                }
            }
        }
        result
    }

    fn take_after_commit_report(&self) -> AfterCommitReport {
        let mut report = self.coordinator.take_after_commit_report();
        if let Ok(mut failures) = self.commit_failures.lock() {
            report.commit_failures = std::mem::take(&mut *failures);
        }
        report
    }
}

/// The coordinator Lambda function, invoked synchronously (`RequestResponse`).
#[cfg(feature = "aws")]
#[derive(Debug, Clone)]
pub struct LambdaClient {
    client: aws_sdk_lambda::Client,
    function: String,
}

#[cfg(feature = "aws")]
impl LambdaClient {
    /// A client for `function` (name or ARN, `hudi.sink.coordinator.function`). An endpoint override in
    /// `sdk` (or `AWS_ENDPOINT_URL_LAMBDA`) targets `cargo lambda watch` locally.
    pub fn new(sdk: &aws_config::SdkConfig, function: impl Into<String>) -> Self {
        Self {
            client: aws_sdk_lambda::Client::new(sdk),
            function: function.into(),
        }
    }
}

#[cfg(feature = "aws")]
#[async_trait]
impl CoordinatorClient for LambdaClient {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let transport = |message: String| WriteError::Transport {
            function: self.function.clone(),
            message,
        };
        let payload = serde_json::to_vec(&request).map_err(|e| transport(e.to_string()))?;
        let out = self
            .client
            .invoke()
            .function_name(&self.function)
            .payload(aws_smithy_types::Blob::new(payload))
            .send()
            .await
            .map_err(|e| {
                transport(format!(
                    "{}",
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                ))
            })?;
        let body = out
            .payload()
            .map(|b| b.as_ref().to_vec())
            .unwrap_or_default();
        if let Some(kind) = out.function_error() {
            return Err(transport(format!(
                "coordinator failed ({kind}): {}",
                String::from_utf8_lossy(&body)
            )));
        }
        parse_answer(&body).map_err(|e| {
            transport(format!(
                "unreadable coordinator answer ({e}): {}",
                String::from_utf8_lossy(&body)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lock_wait_travels_with_the_answer_and_is_recorded() {
        let response = CoordinatorResponse::Committed {
            instant: "20251129103000123".into(),
        };
        let wire = answer_with_lock_wait(&response, 42).expect("serialises");
        assert_eq!(wire[LOCK_WAIT_FIELD], 42);
        let body = serde_json::to_vec(&wire).expect("bytes");
        let (parsed, waited) =
            crate::telemetry::with_lock_wait(async { parse_answer(&body) }).await;
        assert_eq!(parsed.expect("parses"), response);
        assert_eq!(waited, 42);
        // Unit answers and answers of an older coordinator (no lock wait) parse too.
        let done = answer_with_lock_wait(&CoordinatorResponse::Done, 7).expect("serialises");
        assert_eq!(
            done,
            serde_json::json!({"status": "done", "lock_wait_ms": 7})
        );
        let (old, waited) = crate::telemetry::with_lock_wait(async {
            parse_answer(br#"{"status":"conflict","reason":"bucket 3"}"#)
        })
        .await;
        assert_eq!(
            old.expect("parses"),
            CoordinatorResponse::Conflict {
                reason: "bucket 3".into()
            }
        );
        assert_eq!(waited, 0);
    }
}
