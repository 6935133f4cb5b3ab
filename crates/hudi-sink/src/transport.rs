//! How a writer reaches the coordinator: in process (the embedded mode and tests) or over Lambda `Invoke`.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::coordinator::Coordinator;
use crate::protocol::{CoordinatorRequest, CoordinatorResponse};
use crate::write::WriteError;

/// Sends protocol requests to a coordinator. Every request is safe to repeat.
#[async_trait]
pub trait CoordinatorClient: Send + Sync + Debug {
    /// Sends one request and waits for the answer.
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError>;
}

/// A coordinator living in the same process.
#[derive(Debug, Clone)]
pub struct InProcessClient {
    coordinator: Coordinator,
}

impl InProcessClient {
    /// Wraps a coordinator.
    pub fn new(coordinator: Coordinator) -> Self {
        Self { coordinator }
    }
}

#[async_trait]
impl CoordinatorClient for InProcessClient {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        self.coordinator.handle(request).await
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
        serde_json::from_slice(&body).map_err(|e| {
            transport(format!(
                "unreadable coordinator answer ({e}): {}",
                String::from_utf8_lossy(&body)
            ))
        })
    }
}
