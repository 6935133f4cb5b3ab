//! Builds the sink and the coordinator from a properties file: the one place where configuration turns
//! into storage, lock, transport and writer. The `hudi-sink` command and both Lambda functions use it, so
//! the embedded mode and AWS run the same code.
//!
//! - storage: `hoodie.base.path` (`s3://…` → S3, otherwise the local file system);
//! - lock: DynamoDB when `hoodie.write.lock.dynamodb.table` is set, else a lock object in the table;
//! - coordinator: the Lambda named by `hudi.sink.coordinator.function`, else in process;
//! - dead letters: `hudi.sink.dead.letter.path`, else `hoodie.errortable.base.path`, else
//!   `<hoodie.base.path>_dead_letters/` beside the table ([`crate::dead_letter::dead_letter_location`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::{Clock, SystemClock};
use crate::commit::{Coordinator, CoordinatorConfig};
use crate::config::java_properties;
use crate::config::ConfigError;
use crate::dead_letter::{dead_letter_location, StorageDeadLetterSink};
use crate::lock::file::FileLock;
use crate::lock::{LeaseOptions, Lock};
use crate::schema::avro::AvroSchema;
use crate::sink::{KafkaSink, SinkConfig};
use crate::storage::{open_storage, Storage, StorageError};
use crate::transport::{CoordinatorClient, InProcessClient};
use crate::write::WriteConfig;
use crate::write::{TableWriter, WriteError};

pub use crate::aws_clients::{
    ClientTimeouts, RemoteTimeouts, CONNECT_TIMEOUT_KEY, COORDINATOR_TIMEOUT_KEYS,
    DYNAMODB_TIMEOUT_KEYS, GLUE_TIMEOUT_KEYS, S3_TIMEOUT_KEYS,
};

/// Storage for `uri` with the configured S3 deadlines (`s3://`, `s3a://`); anything else as [`open_storage`].
pub async fn open_storage_with(
    uri: &str,
    timeouts: &ClientTimeouts,
) -> Result<Arc<dyn Storage>, StorageError> {
    #[cfg(feature = "aws")]
    {
        let scheme = uri.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if matches!(scheme.as_deref(), Some("s3" | "s3a")) {
            let sdk = crate::aws_clients::sdk_config(&timeouts.s3, None, None).await;
            let options = crate::storage::S3Options {
                attempt_timeout: timeouts.s3.attempt,
                operation_timeout: timeouts.s3.operation,
                connect_timeout: timeouts.s3.connect,
                ..crate::storage::S3Options::from_env()
            };
            return Ok(Arc::new(crate::storage::S3Storage::from_uri(
                uri, &sdk, options,
            )?));
        }
    }
    #[cfg(not(feature = "aws"))]
    let _ = timeouts;
    open_storage(uri).await
}

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
    check_keys(props)?;
    let mut write = WriteConfig::from_properties(props.clone())?;
    let sink = SinkConfig::from_properties(props)?;
    debezium_settings(&mut write, &sink)?;
    let timeouts = ClientTimeouts::from_properties(props)?;
    let storage = open_storage_with(&write.base_path, &timeouts).await?;
    let lock = build_lock(props, storage.clone(), &write.table_name).await?;
    let config = CoordinatorConfig {
        lock_wait: std::time::Duration::from_millis(crate::lock::wait_time_ms(props)?),
        heartbeat_tolerance: sink.heartbeat_tolerance(),
        services: crate::services::ServicesConfig::from_properties(props, write.max_file_size)?,
    };
    let mut coordinator = Coordinator::new(storage, lock, clock, config)
        .with_clustering(write.clone())
        .with_compaction(&write);
    if let Some(mirror) = build_mirror(props, &write.base_path)? {
        coordinator = coordinator.with_mirror(mirror);
    }
    Ok(match build_catalog(props, &write.base_path).await? {
        Some(catalog) => coordinator.with_catalog(Arc::new(catalog)),
        None => coordinator,
    })
}

/// The Delta Lake mirror the properties ask for (`hudi.sink.delta.mirror=true`), if any; it needs the `delta`
/// feature, which the coordinator Lambda and the `hudi-sink` command have.
pub fn build_mirror(
    props: &BTreeMap<String, String>,
    base_path: &str,
) -> Result<Option<Arc<dyn crate::commit::CommitMirror>>, WriteError> {
    let Some(config) = crate::delta::DeltaConfig::from_properties(props, base_path)? else {
        return Ok(None);
    };
    #[cfg(feature = "delta")]
    {
        Ok(Some(Arc::new(crate::delta::DeltaMirror::new(config))))
    }
    #[cfg(not(feature = "delta"))]
    {
        let _ = config;
        Err(ConfigError::Invalid {
            key: crate::delta::config::MIRROR_KEY.into(),
            value: "true".into(),
            reason: "the Delta Lake mirror needs the `delta` feature".into(),
        }
        .into())
    }
}

/// The Glue Data Catalog sync the properties ask for (`hoodie.datasource.meta.sync.enable` with
/// `org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool`), if any; it needs the `glue` feature, which the
/// coordinator Lambda and the `hudi-sink` command have. With the Delta mirror on it registers the Delta view too.
pub async fn build_catalog(
    props: &BTreeMap<String, String>,
    base_path: &str,
) -> Result<Option<crate::catalog::CatalogSync>, WriteError> {
    let Some(mut config) = crate::catalog::CatalogConfig::from_properties(props)? else {
        return Ok(None);
    };
    // The Delta view goes into Glue beside the Hudi table when the mirror writes one.
    config.delta_view = crate::delta::DeltaConfig::from_properties(props, base_path)?.is_some();
    #[cfg(feature = "glue")]
    {
        let timeouts = ClientTimeouts::from_properties(props)?;
        let client = crate::catalog::glue::GlueCatalog::from_config(&config, &timeouts.glue).await;
        Ok(Some(crate::catalog::CatalogSync::new(
            Arc::new(client),
            config,
            base_path,
        )))
    }
    #[cfg(not(feature = "glue"))]
    {
        let _ = (config, base_path);
        Err(WriteError::Config {
            reason: "the Glue catalog sync (hoodie.datasource.meta.sync.enable) needs the `glue` feature".into(),
        })
    }
}

/// What a table's own `hoodie.properties` settles, under the names of the writer's configuration: its name,
/// type, record key, partitioning, key generator and ordering field, so that commands acting on an existing
/// table (`services`, `sync-catalog`) agree with the table whatever their properties omit.
///
/// Each pair is `(key in hoodie.properties, key of the write configuration)`.
const TABLE_SETTINGS: &[(&str, &str)] = &[
    ("hoodie.table.name", "hoodie.table.name"),
    ("hoodie.database.name", "hoodie.database.name"),
    ("hoodie.table.type", "hoodie.table.type"),
    (
        "hoodie.table.recordkey.fields",
        "hoodie.datasource.write.recordkey.field",
    ),
    (
        "hoodie.table.partition.fields",
        "hoodie.datasource.write.partitionpath.field",
    ),
    (
        "hoodie.table.precombine.field",
        "hoodie.datasource.write.precombine.field",
    ),
    (
        "hoodie.table.keygenerator.class",
        "hoodie.datasource.write.keygenerator.class",
    ),
    (
        "hoodie.datasource.write.hive_style_partitioning",
        "hoodie.datasource.write.hive_style_partitioning",
    ),
    (
        "hoodie.datasource.write.partitionpath.urlencode",
        "hoodie.datasource.write.partitionpath.urlencode",
    ),
];

/// Adds to `props` every setting of the table at `storage` (see [`TABLE_SETTINGS`]) that `props` does not
/// give, plus the table's own key generator options (`hoodie.keygen.*`) and its bucket index. A setting `props` gives differently
/// is left alone: the writer's checks then name the contradiction.
pub async fn fill_from_table(
    props: &mut BTreeMap<String, String>,
    storage: &dyn Storage,
) -> Result<(), WriteError> {
    let table = crate::table::properties::TableProperties::load(storage)
        .await?
        .as_map();
    for (table_key, write_key) in TABLE_SETTINGS {
        if let Some(value) = table.get(*table_key).filter(|v| !v.trim().is_empty()) {
            props
                .entry(write_key.to_string())
                .or_insert_with(|| value.clone());
        }
    }
    for (key, value) in table
        .iter()
        .filter(|(k, _)| k.starts_with("hoodie.keygen."))
    {
        props.entry(key.clone()).or_insert_with(|| value.clone());
    }
    // A bucket-indexed table keeps its bucket count and hash fields in hoodie.properties.
    if let Some(buckets) = table.get("hoodie.bucket.index.num.buckets") {
        if !props.contains_key("hoodie.index.type") {
            props.insert("hoodie.index.type".into(), "BUCKET".into());
            props.insert("hoodie.bucket.index.num.buckets".into(), buckets.clone());
            if let Some(hash) = table
                .get("hoodie.bucket.index.hash.field")
                .filter(|h| !h.trim().is_empty())
            {
                props.insert("hoodie.bucket.index.hash.field".into(), hash.clone());
            }
        }
    }
    Ok(())
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
    for key in check_keys(props)? {
        tracing::info!(
            key,
            "configuration key ignored (meaningful only to other engines)"
        );
    }
    let mut write = WriteConfig::from_properties(props.clone())?;
    let sink = SinkConfig::from_properties(props)?;
    debezium_settings(&mut write, &sink)?;
    let dead_letters = dead_letter_location(props, &write.base_path);
    tracing::info!(
        location = %dead_letters.uri,
        chosen_by = dead_letters.source.as_str(),
        "dead letters"
    );
    let timeouts = ClientTimeouts::from_properties(props)?;
    let storage = open_storage_with(&write.base_path, &timeouts).await?;
    let mut schema = load_schema(&write).await?;
    let latest = build_latest(props, &sink)?;
    // Without a schema file the subject's latest version is the schema the table is opened (or created)
    // with: asked now, and taken once the writer took it.
    let mut opened_with = None;
    if let (None, Some(watch)) = (&schema, &latest) {
        let version = watch.fetch().await?;
        schema = Some(version.schema.as_ref().clone());
        opened_with = Some(version);
    }
    if let crate::sink::ValueFormat::Debezium(connector) = sink.value_format {
        schema = schema
            .map(|s| crate::record::debezium::table_schema(connector, &s))
            .transpose()
            .map_err(|reason| WriteError::Config { reason })?;
    }
    if sink.append_kafka_columns {
        schema = schema
            .map(|s| crate::sink::kafka_columns::with_kafka_columns(&s))
            .transpose()?;
    }
    // A Debezium table with neither schema file nor registry takes its columns from the Connect schema of
    // its values: when it does not exist yet, the first batch creates it.
    let deferred = match (sink.value_format, &schema) {
        (crate::sink::ValueFormat::Debezium(connector), None) => {
            match crate::table::properties::TableProperties::load(storage.as_ref()).await {
                Err(e) if e.is_not_found() => Some(crate::sink::DeferredTable::new(
                    storage.clone(),
                    clock.clone(),
                    write.clone(),
                    connector,
                    sink.append_kafka_columns,
                )),
                Err(e) => return Err(e.into()),
                Ok(_) => None,
            }
        }
        _ => None,
    };
    let writer = match deferred {
        Some(table) => Err(table),
        None => {
            let writer = TableWriter::create_or_open(storage, clock.clone(), write, schema).await?;
            if sink.append_kafka_columns {
                crate::sink::kafka_columns::check_table(&writer.schema().data)?;
            }
            if let crate::sink::ValueFormat::Debezium(connector) = sink.value_format {
                crate::record::debezium::check_table(connector, &writer.schema().data)
                    .map_err(|reason| WriteError::Config { reason })?;
            }
            Ok(writer)
        }
    };
    if let (Some(version), Some(watch)) = (&opened_with, &latest) {
        watch.taken(version, clock.now_millis());
    }
    let coordinator: Arc<dyn CoordinatorClient> = match &sink.coordinator_function {
        #[cfg(feature = "aws")]
        Some(function) => {
            let sdk = crate::aws_clients::sdk_config(&timeouts.coordinator, None, None).await;
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
        open_storage_with(&dead_letters.uri, &timeouts).await?,
    ));
    let registry = build_registry(props, &sink, &timeouts).await?;
    let sink = match writer {
        Ok(writer) => KafkaSink::new(writer, coordinator, dead_letters, clock, sink, writer_id),
        Err(table) => KafkaSink::deferred(table, coordinator, dead_letters, clock, sink, writer_id),
    };
    let sink = match latest {
        Some(watch) => sink.with_latest_schema(watch),
        None => sink,
    };
    Ok(match registry {
        Some(registry) => sink.with_registry(registry),
        None => sink,
    })
}

/// Opens routed tables from the routing configuration: each table's properties (the base, its file, its
/// own keys) through [`build_sink`], so a routed table is built exactly as a single table would be.
#[derive(Debug)]
pub struct PropertiesOpener {
    config: crate::router::RouteConfig,
    writer_id: String,
}

#[async_trait::async_trait]
impl crate::router::TableOpener for PropertiesOpener {
    async fn open(&self, table: &str) -> Result<KafkaSink, WriteError> {
        let file = match self.config.properties_file(table) {
            Some(uri) => Some(load_properties(uri).await?),
            None => None,
        };
        let props = self.config.table_properties(table, file)?;
        build_sink(&props, &self.writer_id).await
    }
}

/// A ready router for a routed configuration ([`crate::router::is_routed`]): tables are opened (and
/// created) on their first record; records of topics without a route go to the dead letters of the
/// pseudo-table [`crate::router::UNROUTED`].
pub async fn build_router(
    props: &BTreeMap<String, String>,
    writer_id: &str,
) -> Result<crate::router::Router, WriteError> {
    let config = crate::router::RouteConfig::from_properties(props)?;
    let base = config.base_for(crate::router::UNROUTED);
    // The shared keys are checked once here, so a typo fails at start-up, not at a table's first record.
    check_keys(&base)?;
    let base_path = base.get("hoodie.base.path").cloned().unwrap_or_default();
    let location = dead_letter_location(&base, &base_path);
    tracing::info!(location = %location.uri, routes = ?props.keys().filter(|k| k.starts_with(crate::router::config::ROUTE_PREFIX)).collect::<Vec<_>>(), "routed writer; unrouted records go to dead letters");
    let timeouts = ClientTimeouts::from_properties(&base)?;
    let unrouted = Arc::new(StorageDeadLetterSink::new(
        open_storage_with(&location.uri, &timeouts).await?,
    ));
    let opener = Arc::new(PropertiesOpener {
        config: config.clone(),
        writer_id: writer_id.to_string(),
    });
    Ok(crate::router::Router::new(config, opener, unrouted))
}

/// `hudi.sink.value.format=debezium`: the ordering field and payload class follow the connector, as
/// HoodieStreamer's Debezium sources need them (`_event_lsn` with `PostgresDebeziumAvroPayload`, `_event_seq`
/// with `MySqlDebeziumAvroPayload`); a configuration that names others is refused, and a Debezium payload
/// without the Debezium value format too.
pub fn debezium_settings(write: &mut WriteConfig, sink: &SinkConfig) -> Result<(), WriteError> {
    let crate::sink::ValueFormat::Debezium(connector) = sink.value_format else {
        return match &write.payload_class {
            Some(payload) => Err(WriteError::Config {
                reason: format!(
                    "hoodie.datasource.write.payload.class={payload} needs hudi.sink.value.format=debezium"
                ),
            }),
            None => Ok(()),
        };
    };
    check_replica_identity(write, connector)?;
    let (field, payload) = (connector.ordering_field(), connector.payload_class());
    match write.precombine_field.as_deref() {
        None => write.precombine_field = Some(field.to_string()),
        Some(f) if f == field => {}
        Some(other) => {
            return Err(WriteError::Config {
                reason: format!(
                    "hoodie.datasource.write.precombine.field={other}, but {connector:?} Debezium tables are ordered by {field}: set it to {field} or leave it out"
                ),
            })
        }
    }
    match write.payload_class.as_deref() {
        None => write.payload_class = Some(payload.to_string()),
        Some(p) if crate::record::debezium::connector_of_payload(p) == Some(connector) => {
            write.payload_class = Some(payload.to_string())
        }
        Some(other) => {
            return Err(WriteError::Config {
                reason: format!(
                    "hoodie.datasource.write.payload.class={other}, but {connector:?} Debezium tables use {payload}: set it to that or leave it out"
                ),
            })
        }
    }
    Ok(())
}

/// A Postgres delete's `before` holds only the replica identity (the primary key under `REPLICA IDENTITY
/// DEFAULT`): on a table partitioned by another column the delete would name the wrong partition and miss
/// the row. Such a table starts only when the configuration says the source tables use `REPLICA IDENTITY
/// FULL` (docs/cdc.md, "Deletes and tombstones").
fn check_replica_identity(
    write: &WriteConfig,
    connector: crate::record::debezium::Connector,
) -> Result<(), WriteError> {
    use crate::record::debezium::{Connector, REPLICA_IDENTITY_KEY};
    let declared = write
        .properties
        .get(REPLICA_IDENTITY_KEY)
        .map(|v| v.trim().to_ascii_lowercase());
    match declared.as_deref() {
        None | Some("full") | Some("default") => {}
        Some(other) => {
            return Err(WriteError::Config {
                reason: format!("{REPLICA_IDENTITY_KEY}={other}: expected full or default"),
            })
        }
    }
    if connector != Connector::Postgres || declared.as_deref() == Some("full") {
        return Ok(());
    }
    let outside_key = write.partition_fields_outside_key();
    if outside_key.is_empty() {
        return Ok(());
    }
    Err(WriteError::Config {
        reason: format!(
            "the table is partitioned by {} outside the record key, but a Postgres delete carries only the \
             replica identity: run ALTER TABLE ... REPLICA IDENTITY FULL on the source tables and set \
             {REPLICA_IDENTITY_KEY}=full, or partition by record key columns",
            outside_key.join(", ")
        ),
    })
}

/// The registry URL of Hudi's schema provider, if set.
fn registry_url(props: &BTreeMap<String, String>) -> Option<&str> {
    props
        .get(REGISTRY_URL_KEY)
        .or_else(|| props.get(REGISTRY_URL_KEY_OLD))
        .map(|u| u.trim())
        .filter(|u| !u.is_empty())
}

/// JSON values with [`REGISTRY_URL_KEY`] set: the subject it names, whose latest version is their schema
/// (HoodieStreamer's `SchemaRegistryProvider`).
pub fn build_latest(
    props: &BTreeMap<String, String>,
    sink: &SinkConfig,
) -> Result<Option<Arc<crate::registry::latest::LatestWatch>>, WriteError> {
    if !matches!(
        sink.value_format,
        crate::sink::ValueFormat::Json | crate::sink::ValueFormat::Debezium(_)
    ) {
        return Ok(None);
    }
    let Some(url) = registry_url(props) else {
        return Ok(None);
    };
    #[cfg(feature = "aws")]
    {
        if crate::registry::confluent::subject_url(url).is_none() {
            // Debezium values may be registry-framed Avro, whose schemas are asked for by id under a base URL.
            if matches!(sink.value_format, crate::sink::ValueFormat::Debezium(_)) {
                return Ok(None);
            }
            return Err(WriteError::Config {
                reason: format!(
                    "{REGISTRY_URL_KEY}={url:?}: JSON values take their schema from a registry subject, \
                     so the URL names one (https://host/subjects/<subject>/versions/latest)"
                ),
            });
        }
        let registry = crate::registry::confluent::ConfluentRegistry::new(
            url,
            sink.registry_user_info.as_deref(),
            sink.registry_timeout,
        )?;
        Ok(Some(Arc::new(crate::registry::latest::LatestWatch::new(
            Arc::new(registry),
            sink.registry_refresh,
        ))))
    }
    #[cfg(not(feature = "aws"))]
    Err(WriteError::Config {
        reason: format!("{REGISTRY_URL_KEY}={url:?} needs the `aws` feature"),
    })
}

/// Hudi's registry URL property (HoodieStreamer's `SchemaRegistryProvider`).
pub const REGISTRY_URL_KEY: &str = "hoodie.streamer.schemaprovider.registry.url";
/// The pre-0.14 spelling of [`REGISTRY_URL_KEY`], still accepted.
const REGISTRY_URL_KEY_OLD: &str = "hoodie.deltastreamer.schemaprovider.registry.url";
/// The keys [`build_registry`] reads.
pub const REGISTRY_KEYS: &[&str] = &[REGISTRY_URL_KEY, REGISTRY_URL_KEY_OLD];

/// Every module's key list, each declared beside its parser: a properties file may hold these keys, the
/// ignored keys of other engines (`crate::config::keys::IGNORED_PREFIXES`) and other engines' namespaces.
pub const KEY_LISTS: &[&[&str]] = &[
    crate::write::config::KEYS,
    crate::record::keygen::KEYS,
    crate::sink::config::KEYS,
    crate::services::config::KEYS,
    crate::catalog::config::KEYS,
    crate::delta::config::KEYS,
    crate::lock::KEYS,
    crate::aws_clients::KEYS,
    crate::dead_letter::KEYS,
    crate::router::config::KEYS,
    REGISTRY_KEYS,
];

/// Every configuration key some parser reads (what `docs/configuration.md` documents).
pub fn accepted_keys() -> std::collections::BTreeSet<&'static str> {
    KEY_LISTS
        .iter()
        .flat_map(|list| list.iter().copied())
        .collect()
}

/// Checks every key of a properties file before any parser reads it: returns the keys meaningful only to
/// other engines (to be reported), or an error naming the first unknown key of the sink's own namespaces.
pub fn check_keys(props: &BTreeMap<String, String>) -> Result<Vec<String>, ConfigError> {
    crate::config::keys::check(props, KEY_LISTS)
}

/// The schema registries of `hudi.sink.value.format=avro` (and of `debezium`, whose values may be
/// registry-framed Avro): Confluent when [`REGISTRY_URL_KEY`] is set, Glue whenever the `glue` feature is
/// built in (Glue-framed values name their registry by version id).
pub async fn build_registry(
    props: &BTreeMap<String, String>,
    sink: &SinkConfig,
    timeouts: &ClientTimeouts,
) -> Result<Option<Arc<crate::registry::SchemaRegistry>>, WriteError> {
    if !matches!(
        sink.value_format,
        crate::sink::ValueFormat::AvroRegistry | crate::sink::ValueFormat::Debezium(_)
    ) {
        return Ok(None);
    }
    let url = registry_url(props);
    #[cfg(feature = "aws")]
    let confluent: Option<Arc<dyn crate::registry::SchemaSource>> = match url {
        Some(url) => Some(Arc::new(
            crate::registry::confluent::ConfluentRegistry::new(
                url,
                sink.registry_user_info.as_deref(),
                sink.registry_timeout,
            )?,
        )),
        None => None,
    };
    #[cfg(not(feature = "aws"))]
    let confluent: Option<Arc<dyn crate::registry::SchemaSource>> = match url {
        Some(_) => {
            return Err(WriteError::Config {
                reason: format!("{REGISTRY_URL_KEY} needs the `aws` feature"),
            })
        }
        None => None,
    };
    #[cfg(feature = "glue")]
    let glue: Option<Arc<dyn crate::registry::SchemaSource>> = {
        let sdk = crate::aws_clients::sdk_config(&timeouts.glue, None, None).await;
        Some(Arc::new(crate::registry::glue::GlueRegistry::new(&sdk)))
    };
    #[cfg(not(feature = "glue"))]
    let glue: Option<Arc<dyn crate::registry::SchemaSource>> = {
        let _ = timeouts;
        None
    };
    Ok(Some(Arc::new(crate::registry::SchemaRegistry::new(
        confluent, glue,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn timeouts_have_defaults_and_read_their_keys() {
        let d = ClientTimeouts::from_properties(&BTreeMap::new()).expect("defaults");
        assert_eq!(d, ClientTimeouts::default());
        assert_eq!(d.s3.attempt, Duration::from_secs(30));
        assert_eq!(d.dynamodb.operation, Duration::from_secs(20));
        assert_eq!(d.coordinator.connect, Duration::from_millis(3100));
        let t = ClientTimeouts::from_properties(&props(&[
            ("hudi.sink.aws.connect.timeout.ms", "250"),
            ("hudi.sink.s3.attempt.timeout.ms", "1000"),
            ("hudi.sink.dynamodb.operation.timeout.ms", "7000"),
            ("hudi.sink.coordinator.attempt.timeout.ms", " 9000 "),
        ]))
        .expect("valid");
        assert_eq!(t.s3.connect, Duration::from_millis(250));
        assert_eq!(t.dynamodb.connect, Duration::from_millis(250));
        assert_eq!(t.s3.attempt, Duration::from_secs(1));
        assert_eq!(t.s3.operation, Duration::from_secs(120));
        assert_eq!(t.dynamodb.operation, Duration::from_secs(7));
        assert_eq!(t.coordinator.attempt, Duration::from_secs(9));
    }

    #[test]
    fn bad_timeouts_name_the_key() {
        for (key, value) in [
            ("hudi.sink.s3.attempt.timeout.ms", "0"),
            ("hudi.sink.s3.attempt.timeout.ms", "-5"),
            ("hudi.sink.dynamodb.attempt.timeout.ms", "1s"),
            ("hudi.sink.coordinator.attempt.timeout.ms", "400000"),
        ] {
            let err = ClientTimeouts::from_properties(&props(&[(key, value)]))
                .expect_err(value)
                .to_string();
            assert!(err.contains(key), "{key}={value}: {err}");
        }
        // Every timeout key is a known sink key (no "unknown key" at start-up).
        let all = props(&[
            (CONNECT_TIMEOUT_KEY, "1"),
            (S3_TIMEOUT_KEYS.0, "1"),
            (S3_TIMEOUT_KEYS.1, "1"),
            (DYNAMODB_TIMEOUT_KEYS.0, "1"),
            (DYNAMODB_TIMEOUT_KEYS.1, "1"),
            (COORDINATOR_TIMEOUT_KEYS.0, "1"),
            (COORDINATOR_TIMEOUT_KEYS.1, "1"),
            (GLUE_TIMEOUT_KEYS.0, "1"),
            (GLUE_TIMEOUT_KEYS.1, "1"),
        ]);
        assert_eq!(check_keys(&all), Ok(vec![]));
    }

    /// Each key is declared once, beside the one parser that owns it: no key stands in two lists.
    #[test]
    fn every_key_is_declared_in_one_list() {
        let mut seen = std::collections::BTreeMap::new();
        for (list, keys) in KEY_LISTS.iter().enumerate() {
            for key in keys.iter() {
                if let Some(first) = seen.insert(*key, list) {
                    panic!("{key} is declared in key lists {first} and {list} of KEY_LISTS");
                }
            }
        }
        assert_eq!(seen.len(), accepted_keys().len());
    }

    #[cfg(feature = "aws")]
    #[test]
    fn sdk_timeout_config_carries_all_three() {
        let t = ClientTimeouts::default().dynamodb.timeout_config();
        assert_eq!(t.connect_timeout(), Some(Duration::from_millis(3100)));
        assert_eq!(t.operation_attempt_timeout(), Some(Duration::from_secs(5)));
        assert_eq!(t.operation_timeout(), Some(Duration::from_secs(20)));
    }
}
