//! Every AWS client the sink builds (S3, DynamoDB, Lambda, Glue) gets its configuration here, with the same
//! deadline rules, so that no client is built with the SDK's open-ended defaults and the modules that use them
//! do not depend on each other.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::ConfigError;

/// `hudi.sink.aws.connect.timeout.ms`: connection set-up of every AWS client.
pub const CONNECT_TIMEOUT_KEY: &str = "hudi.sink.aws.connect.timeout.ms";
/// `hudi.sink.s3.attempt.timeout.ms` / `hudi.sink.s3.operation.timeout.ms`.
pub const S3_TIMEOUT_KEYS: (&str, &str) = (
    "hudi.sink.s3.attempt.timeout.ms",
    "hudi.sink.s3.operation.timeout.ms",
);
/// `hudi.sink.dynamodb.attempt.timeout.ms` / `hudi.sink.dynamodb.operation.timeout.ms`.
pub const DYNAMODB_TIMEOUT_KEYS: (&str, &str) = (
    "hudi.sink.dynamodb.attempt.timeout.ms",
    "hudi.sink.dynamodb.operation.timeout.ms",
);
/// `hudi.sink.glue.attempt.timeout.ms` / `hudi.sink.glue.operation.timeout.ms` (catalog sync).
pub const GLUE_TIMEOUT_KEYS: (&str, &str) = (
    "hudi.sink.glue.attempt.timeout.ms",
    "hudi.sink.glue.operation.timeout.ms",
);
/// `hudi.sink.coordinator.attempt.timeout.ms` / `hudi.sink.coordinator.operation.timeout.ms` (Lambda `Invoke`).
pub const COORDINATOR_TIMEOUT_KEYS: (&str, &str) = (
    "hudi.sink.coordinator.attempt.timeout.ms",
    "hudi.sink.coordinator.operation.timeout.ms",
);

/// The keys [`ClientTimeouts::from_properties`] reads.
pub const KEYS: &[&str] = &[
    CONNECT_TIMEOUT_KEY,
    S3_TIMEOUT_KEYS.0,
    S3_TIMEOUT_KEYS.1,
    DYNAMODB_TIMEOUT_KEYS.0,
    DYNAMODB_TIMEOUT_KEYS.1,
    GLUE_TIMEOUT_KEYS.0,
    GLUE_TIMEOUT_KEYS.1,
    COORDINATOR_TIMEOUT_KEYS.0,
    COORDINATOR_TIMEOUT_KEYS.1,
];

/// Deadlines of one remote client, so that a request that hangs (a dead connection, a stalled service) fails
/// the invocation with a clear error, and the ESM redelivers the batch, long before the Lambda is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteTimeouts {
    /// Establishing one connection.
    pub connect: Duration,
    /// One attempt: request sent to response headers received.
    pub attempt: Duration,
    /// One call, all retries included.
    pub operation: Duration,
}

/// The deadlines of every remote client, from the `hudi.sink.*` timeout keys.
///
/// Defaults: connect 3.1 s (the SDK's own); S3 30 s per attempt and 2 min per call (base files of a few
/// hundred MB); DynamoDB 5 s / 20 s (small conditional writes; a heartbeat must land well within the lease);
/// coordinator 150 s / 5 min (a begin may wait for the table lock, `hoodie.write.lock.wait_time_ms`); Glue
/// 3 s / 8 s (a best-effort sync after a commit must not hold the commit's answer long).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientTimeouts {
    /// S3 storage (table and dead letters).
    pub s3: RemoteTimeouts,
    /// The DynamoDB lock.
    pub dynamodb: RemoteTimeouts,
    /// The coordinator Lambda.
    pub coordinator: RemoteTimeouts,
    /// The Glue Data Catalog (catalog sync after commits).
    pub glue: RemoteTimeouts,
}

impl Default for ClientTimeouts {
    fn default() -> Self {
        let connect = Duration::from_millis(3100);
        let t = |attempt: u64, operation: u64| RemoteTimeouts {
            connect,
            attempt: Duration::from_millis(attempt),
            operation: Duration::from_millis(operation),
        };
        Self {
            s3: t(30_000, 120_000),
            dynamodb: t(5_000, 20_000),
            coordinator: t(150_000, 300_000),
            glue: t(3_000, 8_000),
        }
    }
}

impl ClientTimeouts {
    /// Reads the timeout keys (milliseconds, at least 1); other keys are ignored here. An attempt timeout
    /// longer than its operation timeout is an error, as it could never apply.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut t = Self::default();
        let ms = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
            match props.get(key) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(Duration::from_millis(n)),
                    _ => Err(ConfigError::Invalid {
                        key: key.to_string(),
                        value: v.clone(),
                        reason: "expected a positive number of milliseconds".into(),
                    }),
                },
            }
        };
        let connect = ms(CONNECT_TIMEOUT_KEY, t.s3.connect)?;
        for (keys, slot) in [
            (S3_TIMEOUT_KEYS, &mut t.s3),
            (DYNAMODB_TIMEOUT_KEYS, &mut t.dynamodb),
            (COORDINATOR_TIMEOUT_KEYS, &mut t.coordinator),
            (GLUE_TIMEOUT_KEYS, &mut t.glue),
        ] {
            slot.connect = connect;
            slot.attempt = ms(keys.0, slot.attempt)?;
            slot.operation = ms(keys.1, slot.operation)?;
            if slot.attempt > slot.operation {
                return Err(ConfigError::Invalid {
                    key: keys.0.to_string(),
                    value: slot.attempt.as_millis().to_string(),
                    reason: format!(
                        "longer than {} ({} ms): the attempt could never time out",
                        keys.1,
                        slot.operation.as_millis()
                    ),
                });
            }
        }
        Ok(t)
    }
}

#[cfg(feature = "aws")]
impl RemoteTimeouts {
    /// The SDK form: connect, attempt and operation deadlines.
    pub fn timeout_config(&self) -> aws_smithy_types::timeout::TimeoutConfig {
        aws_smithy_types::timeout::TimeoutConfig::builder()
            .connect_timeout(self.connect.min(self.attempt))
            .operation_attempt_timeout(self.attempt)
            .operation_timeout(self.operation)
            .build()
    }
}

/// The SDK configuration every client of the sink starts from: the default credential chain and region, the
/// standard endpoint settings (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`), `timeouts`, and an explicit
/// region or endpoint when the properties give one.
#[cfg(feature = "aws")]
pub async fn sdk_config(
    timeouts: &RemoteTimeouts,
    region: Option<&str>,
    endpoint: Option<&str>,
) -> aws_config::SdkConfig {
    install_crypto_provider();
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .timeout_config(timeouts.timeout_config());
    if let Some(region) = region {
        loader = loader.region(aws_config::Region::new(region.to_string()));
    }
    if let Some(url) = endpoint {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// The process's TLS provider for every client the sink builds (defined with the S3 storage, the lowest layer
/// that builds one).
#[cfg(feature = "aws")]
pub use crate::storage::s3::install_crypto_provider;
