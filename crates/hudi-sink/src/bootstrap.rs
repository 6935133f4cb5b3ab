//! Builds the sink and the coordinator from a properties file: the one place where configuration turns
//! into storage, lock, transport and writer. The `hudi-sink` command and both Lambda functions use it, so
//! the embedded mode and AWS run the same code.
//!
//! - storage: `hoodie.base.path` (`s3://…` → S3, otherwise the local file system);
//! - lock: DynamoDB when `hoodie.write.lock.dynamodb.table` is set, else a lock object in the table;
//! - coordinator: the Lambda named by `hudi.sink.coordinator.function`, else in process;
//! - dead letters: `hudi.sink.dead.letter.path` (required for the sink: a record is never dropped silently).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::{Clock, SystemClock};
use crate::config::java_properties;
use crate::config::write_config::{ConfigError, WriteConfig};
use crate::coordinator::{Coordinator, CoordinatorConfig};
use crate::dead_letter::StorageDeadLetterSink;
use crate::lock::file::FileLock;
use crate::lock::{LeaseOptions, Lock};
use crate::schema::avro::AvroSchema;
use crate::sink::{KafkaSink, SinkConfig};
use crate::storage::{open_storage, Storage, StorageError};
use crate::transport::{CoordinatorClient, InProcessClient};
use crate::write::{TableWriter, WriteError};

/// Reads a whole object given as `s3://bucket/key` or a local path.
pub async fn read_uri(uri: &str) -> Result<Bytes, StorageError> {
    let trimmed = uri.trim_end_matches('/');
    let (parent, name) = match trimmed.rsplit_once('/') {
        Some((p, n)) if !n.is_empty() => (p, n),
        _ => (".", trimmed),
    };
    let parent = if parent.is_empty() { "/" } else { parent };
    open_storage(parent).await?.get(name).await
}

/// Parses a Java `.properties` file (local path or `s3://`) into a map.
pub async fn load_properties(uri: &str) -> Result<BTreeMap<String, String>, WriteError> {
    let bytes = read_uri(uri).await?;
    let text = String::from_utf8_lossy(&bytes);
    let props = java_properties::parse(&text).map_err(|e| ConfigError::Invalid {
        key: "<properties file>".into(),
        value: uri.to_string(),
        reason: e.to_string(),
    })?;
    Ok(props.into_iter().collect())
}

/// The table lock the configuration asks for.
pub async fn build_lock(
    props: &BTreeMap<String, String>,
    storage: Arc<dyn Storage>,
    table_name: &str,
) -> Result<Arc<dyn Lock>, WriteError> {
    #[cfg(feature = "aws")]
    if props.contains_key("hoodie.write.lock.dynamodb.table") {
        let lock = crate::lock::dynamodb::DynamoDbLock::from_props(props).await?;
        return Ok(Arc::new(lock));
    }
    #[cfg(not(feature = "aws"))]
    if props.contains_key("hoodie.write.lock.dynamodb.table") {
        return Err(WriteError::Config {
            reason: "hoodie.write.lock.dynamodb.table needs the `aws` feature".into(),
        });
    }
    let options = LeaseOptions::from_props(props)?;
    Ok(Arc::new(FileLock::new(storage, table_name, options)?))
}

/// The coordinator of the configured table.
pub async fn build_coordinator(
    props: &BTreeMap<String, String>,
    clock: Arc<dyn Clock>,
) -> Result<Coordinator, WriteError> {
    let write = WriteConfig::from_properties(props.clone())?;
    let sink = SinkConfig::from_properties(props)?;
    let storage = open_storage(&write.base_path).await?;
    let lock = build_lock(props, storage.clone(), &write.table_name).await?;
    let config = CoordinatorConfig {
        lock_wait: std::time::Duration::from_millis(crate::lock::wait_time_ms(props)?),
        heartbeat_tolerance: sink.heartbeat_tolerance(),
    };
    Ok(Coordinator::new(storage, lock, clock, config))
}

/// The Avro schema named by `hoodie.streamer.schemaprovider.source.schema.file`, if any.
pub async fn load_schema(config: &WriteConfig) -> Result<Option<AvroSchema>, WriteError> {
    match &config.schema_file {
        Some(uri) => {
            let bytes = read_uri(uri).await?;
            let text = String::from_utf8_lossy(&bytes);
            Ok(Some(AvroSchema::parse(&text)?))
        }
        None => Ok(None),
    }
}

/// A ready sink for the configured table (creating the table if it does not exist yet).
pub async fn build_sink(
    props: &BTreeMap<String, String>,
    writer_id: &str,
) -> Result<KafkaSink, WriteError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let write = WriteConfig::from_properties(props.clone())?;
    let sink = SinkConfig::from_properties(props)?;
    for key in write.ignored_keys() {
        tracing::info!(
            key,
            "configuration key ignored (meaningful only to other engines)"
        );
    }
    let dead_letter_path = sink.dead_letter_path.clone().ok_or(ConfigError::Missing {
        key: "hudi.sink.dead.letter.path",
    })?;
    let storage = open_storage(&write.base_path).await?;
    let schema = load_schema(&write).await?;
    let writer = TableWriter::create_or_open(storage, clock.clone(), write, schema).await?;
    let coordinator: Arc<dyn CoordinatorClient> = match &sink.coordinator_function {
        #[cfg(feature = "aws")]
        Some(function) => {
            let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .load()
                .await;
            Arc::new(crate::transport::LambdaClient::new(&sdk, function.clone()))
        }
        #[cfg(not(feature = "aws"))]
        Some(_) => {
            return Err(WriteError::Config {
                reason: "hudi.sink.coordinator.function needs the `aws` feature".into(),
            })
        }
        None => Arc::new(InProcessClient::new(
            build_coordinator(props, clock.clone()).await?,
        )),
    };
    let dead_letters = Arc::new(StorageDeadLetterSink::new(
        open_storage(&dead_letter_path).await?,
    ));
    Ok(KafkaSink::new(
        writer,
        coordinator,
        dead_letters,
        clock,
        sink,
        writer_id,
    ))
}
