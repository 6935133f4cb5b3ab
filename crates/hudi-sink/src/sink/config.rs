//! The writer's `hudi.sink.*` settings: coordinator, dead-letter location, retries, heartbeats, deadline
//! (docs/architecture.md, "Configuration"). An unknown `hudi.sink.*` key is a start-up error naming it
//! (`crate::config::keys`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::ConfigError;
use crate::record::debezium::{Connector, CONNECTOR_KEY};

/// `hudi.sink.*` settings of the writer.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// `hudi.sink.coordinator.function`: the coordinator Lambda (absent = in-process coordinator).
    pub coordinator_function: Option<String>,
    /// `hudi.sink.dead.letter.path`: where dead letters go (`s3://…` or a directory); when absent,
    /// [`crate::dead_letter::dead_letter_location`] picks the error table's path or the table default.
    pub dead_letter_path: Option<String>,
    /// `hudi.sink.commit.max.attempts`: begin/commit rounds before the invocation fails.
    pub max_attempts: u32,
    /// `hudi.sink.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `hudi.sink.heartbeat.tolerable.misses`: a write is failed after this many missed heartbeats.
    pub heartbeat_tolerable_misses: u32,
    /// `hudi.sink.retry.backoff.ms`: base of the jittered backoff between attempts.
    pub retry_backoff: Duration,
    /// `hudi.sink.commit.interval.ms`: every writer of the table shares one instant per interval (zero: one
    /// instant per batch). See [`DEFAULT_COMMIT_INTERVAL`].
    pub commit_interval: Duration,
    /// `hudi.sink.commit.backlog.bytes`: a batch carrying at least this many value and key bytes has more
    /// records behind it (an event-source batch fills up only when the consumer is behind), so under the
    /// interval commit it does not wait for the next slot (`ProcessOptions::backlog`); 0: never.
    pub backlog_bytes: u64,
    /// `hudi.sink.deadline.reserve.ms`: time kept free before the invocation deadline; no begin, commit or
    /// retry starts inside it, so the function fails with a clear error instead of being killed mid-step.
    pub deadline_reserve: Duration,
    /// `hudi.sink.value.format` and `hudi.sink.value.avro.framing`: how record values are read.
    pub value_format: ValueFormat,
    /// `hudi.sink.schema.registry.basic.auth.user.info`: `key:secret` for the Confluent registry (else the
    /// URL's user info).
    pub registry_user_info: Option<String>,
    /// `hudi.sink.schema.registry.timeout.ms`: deadline of one registry request.
    pub registry_timeout: Duration,
    /// `hudi.sink.schema.evolution`: whether registry writer schemas evolve the table schema.
    pub schema_evolution: SchemaEvolution,
    /// `hudi.sink.schema.registry.refresh.ms`: JSON values with a registry subject URL: how often the
    /// subject's latest version is asked for (0: every batch, as HoodieStreamer does).
    pub registry_refresh: Duration,
    /// `hoodie.streamer.source.kafka.append.offsets`: every row carries its Kafka record's offset, partition,
    /// timestamp and key as HoodieStreamer's columns ([`super::kafka_columns`]).
    pub append_kafka_columns: bool,
}

/// What a registry writer schema that differs from the table's does (`hudi.sink.schema.evolution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaEvolution {
    /// `evolve` (the default): new nullable fields and wider types evolve the table schema under Hudi's
    /// schema-on-write rules; a change they refuse fails the invocation, naming the field and both schemas.
    #[default]
    Evolve,
    /// `pinned`: the table schema stays as the schema file gives it; each value is resolved into it (as
    /// Hudi's `KafkaAvroSchemaDeserializer` does): writer-only fields are not stored (logged once per
    /// writer schema), missing ones take their default or null.
    Pinned,
}

/// How record values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueFormat {
    /// `json` (the default): UTF-8 JSON objects, read against the table schema.
    #[default]
    Json,
    /// `avro`: Avro binary framed for a schema registry (Confluent or Glue, told apart by the first byte),
    /// resolved from the writer's schema to the table's.
    AvroRegistry,
    /// `avro` with `hudi.sink.value.avro.framing=none`: bare Avro binary written with the table schema
    /// (`hoodie.streamer.schemaprovider.source.schema.file`).
    AvroBare,
    /// `debezium` with `hudi.sink.debezium.connector`: Debezium change events as JSON (with or without the
    /// Connect schema, or flattened by `ExtractNewRecordState`), written as HoodieStreamer's Debezium
    /// sources write them (`crate::record::debezium`).
    Debezium(Connector),
}

impl Default for SinkConfig {
    fn default() -> Self {
        Self {
            coordinator_function: None,
            dead_letter_path: None,
            max_attempts: 5,
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_tolerable_misses: 6,
            retry_backoff: Duration::from_millis(100),
            deadline_reserve: Duration::from_secs(10),
            commit_interval: DEFAULT_COMMIT_INTERVAL,
            backlog_bytes: DEFAULT_BACKLOG_BYTES,
            value_format: ValueFormat::Json,
            registry_user_info: None,
            registry_timeout: Duration::from_secs(5),
            schema_evolution: SchemaEvolution::Evolve,
            registry_refresh: Duration::from_secs(60),
            append_kafka_columns: false,
        }
    }
}

pub use crate::config::DEFAULT_COMMIT_INTERVAL;

/// The default backlog size: 4 MiB of keys and values. A full event-source batch (the 6 MB invocation
/// payload, values base64-encoded in JSON) carries about 4.5 MB of them.
pub const DEFAULT_BACKLOG_BYTES: u64 = 4 << 20;

/// The keys [`SinkConfig::from_properties`] reads.
pub const KEYS: &[&str] = &[
    "hudi.sink.commit.interval.ms",
    "hudi.sink.commit.backlog.bytes",
    "hudi.sink.coordinator.function",
    "hudi.sink.dead.letter.path",
    "hudi.sink.commit.max.attempts",
    "hudi.sink.heartbeat.interval.ms",
    "hudi.sink.heartbeat.tolerable.misses",
    "hudi.sink.retry.backoff.ms",
    "hudi.sink.deadline.reserve.ms",
    "hudi.sink.value.format",
    "hudi.sink.value.avro.framing",
    "hudi.sink.schema.registry.basic.auth.user.info",
    "hudi.sink.schema.registry.timeout.ms",
    "hudi.sink.schema.registry.refresh.ms",
    "hudi.sink.schema.evolution",
    super::kafka_columns::APPEND_OFFSETS_KEY,
    super::kafka_columns::APPEND_OFFSETS_KEY_OLD,
    CONNECTOR_KEY,
    crate::record::debezium::REPLICA_IDENTITY_KEY,
    crate::write::toast::PLACEHOLDER_KEY,
];

impl SinkConfig {
    /// Reads the keys of [`KEYS`]; `crate::bootstrap` has refused unknown keys before.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = Self {
            value_format: value_format(props)?,
            ..Self::default()
        };
        for key in [
            super::kafka_columns::APPEND_OFFSETS_KEY_OLD,
            super::kafka_columns::APPEND_OFFSETS_KEY,
        ] {
            if let Some(value) = props.get(key) {
                c.append_kafka_columns = crate::config::parse_bool(key, value)?;
            }
        }
        for (key, value) in props.iter().filter(|(k, _)| k.starts_with("hudi.sink.")) {
            let num = |v: &str| crate::config::parse_num::<u64>(key, v);
            match key.as_str() {
                "hudi.sink.coordinator.function" => {
                    c.coordinator_function =
                        Some(value.trim().to_string()).filter(|v| !v.is_empty())
                }
                "hudi.sink.dead.letter.path" => {
                    c.dead_letter_path = Some(value.trim().to_string()).filter(|v| !v.is_empty())
                }
                "hudi.sink.commit.max.attempts" => {
                    c.max_attempts = num(value)?.clamp(1, 100) as u32
                }
                "hudi.sink.heartbeat.interval.ms" => {
                    c.heartbeat_interval = Duration::from_millis(num(value)?.max(1))
                }
                "hudi.sink.heartbeat.tolerable.misses" => {
                    c.heartbeat_tolerable_misses = num(value)?.max(1) as u32
                }
                "hudi.sink.retry.backoff.ms" => {
                    c.retry_backoff = Duration::from_millis(num(value)?)
                }
                "hudi.sink.commit.interval.ms" => {
                    c.commit_interval = Duration::from_millis(num(value)?)
                }
                "hudi.sink.commit.backlog.bytes" => c.backlog_bytes = num(value)?,
                "hudi.sink.deadline.reserve.ms" => {
                    c.deadline_reserve = Duration::from_millis(num(value)?)
                }
                "hudi.sink.schema.registry.basic.auth.user.info" => {
                    c.registry_user_info = Some(value.trim().to_string()).filter(|v| !v.is_empty())
                }
                "hudi.sink.schema.registry.timeout.ms" => {
                    c.registry_timeout = Duration::from_millis(num(value)?.max(1))
                }
                "hudi.sink.schema.registry.refresh.ms" => {
                    c.registry_refresh = Duration::from_millis(num(value)?)
                }
                "hudi.sink.schema.evolution" => {
                    c.schema_evolution = match value.trim().to_ascii_lowercase().as_str() {
                        "evolve" => SchemaEvolution::Evolve,
                        "pinned" => SchemaEvolution::Pinned,
                        _ => return Err(ConfigError::Invalid {
                            key: key.clone(),
                            value: value.clone(),
                            reason:
                                "expected evolve (new nullable fields and wider types evolve the \
                                         table schema) or pinned (the table schema stays)"
                                    .into(),
                        }),
                    }
                }
                _ => {}
            }
        }
        Ok(c)
    }

    /// How old a heartbeat may get before its write counts as failed.
    pub fn heartbeat_tolerance(&self) -> Duration {
        self.heartbeat_interval * self.heartbeat_tolerable_misses
    }
}

/// `hudi.sink.value.format` (`json` | `avro` | `debezium`) with `hudi.sink.value.avro.framing` (`registry` |
/// `none`) and `hudi.sink.debezium.connector` (`postgres` | `mysql`).
fn value_format(props: &BTreeMap<String, String>) -> Result<ValueFormat, ConfigError> {
    let get = |key: &str| props.get(key).map(|v| v.trim().to_ascii_lowercase());
    let invalid = |key: &str, value: String, reason: &str| ConfigError::Invalid {
        key: key.to_string(),
        value,
        reason: reason.to_string(),
    };
    let framing = get("hudi.sink.value.avro.framing");
    let format = get("hudi.sink.value.format");
    let connector = get(CONNECTOR_KEY);
    if format.as_deref() != Some("debezium") {
        if let Some(c) = connector {
            return Err(invalid(
                CONNECTOR_KEY,
                c,
                "only meaningful with hudi.sink.value.format=debezium",
            ));
        }
    }
    match format.as_deref() {
        None | Some("json") => match framing {
            None => Ok(ValueFormat::Json),
            Some(f) => Err(invalid(
                "hudi.sink.value.avro.framing",
                f,
                "only meaningful with hudi.sink.value.format=avro",
            )),
        },
        Some("avro") => match framing.as_deref() {
            None | Some("registry") => Ok(ValueFormat::AvroRegistry),
            Some("none") => Ok(ValueFormat::AvroBare),
            Some(_) => Err(invalid(
                "hudi.sink.value.avro.framing",
                framing.unwrap_or_default(),
                "expected registry (Confluent or Glue framing) or none (bare Avro)",
            )),
        },
        Some("debezium") => {
            if let Some(f) = framing {
                return Err(invalid(
                    "hudi.sink.value.avro.framing",
                    f,
                    "only meaningful with hudi.sink.value.format=avro",
                ));
            }
            match connector.as_deref().map(Connector::parse) {
                Some(Some(c)) => Ok(ValueFormat::Debezium(c)),
                Some(None) => Err(invalid(
                    CONNECTOR_KEY,
                    connector.unwrap_or_default(),
                    "expected postgres or mysql",
                )),
                None => Err(ConfigError::Invalid {
                    key: CONNECTOR_KEY.to_string(),
                    value: String::new(),
                    reason:
                        "hudi.sink.value.format=debezium needs the connector: postgres or mysql"
                            .into(),
                }),
            }
        }
        Some(other) => Err(invalid(
            "hudi.sink.value.format",
            other.to_string(),
            "expected json, avro or debezium (Protobuf is not supported yet)",
        )),
    }
}
