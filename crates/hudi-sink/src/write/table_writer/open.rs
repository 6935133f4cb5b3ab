//! Opening a table: creating it from the write configuration and schema, or checking that an existing one
//! agrees with them (name, keys, partitioning, key generator, bucket count, merge rule) and evolving its
//! latest committed schema with the given one.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::schema::{Shape, TableSchema};
use super::{table_err, TableWriter};
use crate::clock::Clock;
use crate::index::bucket::BucketIndexConfig;
use crate::record::keygen::KeyGenConfig;
use crate::schema::avro::AvroSchema;
use crate::storage::Storage;
use crate::table::fs_view::FileSystemView;
use crate::table::properties::{TableProperties, TableType};
use crate::table::timeline::Timeline;
use crate::write::WriteError;
use crate::write::{IndexConfig, WriteConfig};

/// The `hoodie.properties` of a new table written from `config`.
fn new_table_properties(
    config: &WriteConfig,
    schema: &TableSchema,
    keygen: &KeyGenConfig,
) -> Result<TableProperties, WriteError> {
    let mut p = TableProperties::new_v6_cow(&config.table_name)?;
    p.database = config.database_name.clone();
    p.record_key_fields = config.record_key_fields.clone();
    p.partition_fields = config.partition_fields.clone();
    p.precombine_field = config.precombine_field.clone();
    p.key_generator_class = Some(keygen.kind.class_name().to_string());
    p.hive_style_partitioning = Some(config.hive_style_partitioning);
    if let Some(payload) = &config.payload_class {
        // A Debezium payload, in every table type (HoodieStreamer writes it so): Spark's upserts, reads
        // and compaction merge with it.
        p.set_other("hoodie.compaction.payload.class", payload)?;
    }
    if config.table_type == TableType::MergeOnRead {
        // Every reader merges base and logs by the rule these name (docs/architecture.md, "Merge-on-read"):
        // with an ordering field the larger value wins (Spark and hudi-rs agree only for this payload),
        // without one the later commit.
        p.table_type = TableType::MergeOnRead;
        let (payload, strategy) = match &config.precombine_field {
            Some(_) if config.payload_class.is_some() => (
                config.payload_class.as_deref().unwrap_or_default(),
                "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            ),
            Some(_) => (
                "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
                "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            ),
            None => (
                "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                "ce9acb64-bde0-424c-9b91-f6ebba25356d",
            ),
        };
        p.set_other("hoodie.compaction.payload.class", payload)?;
        p.set_other("hoodie.compaction.record.merger.strategy", strategy)?;
    }
    p.url_encode_partitioning = Some(config.url_encode_partitions);
    // hudi-rs reads property values raw and Java unescapes backslashes: store the create schema only when
    // both read it the same way.
    if !schema.avro_json.contains('\\') && schema.avro_json.is_ascii() {
        p.create_schema = Some(schema.avro_json.clone());
    }
    if let IndexConfig::Bucket {
        num_buckets,
        hash_fields,
    } = &config.index
    {
        // Hudi does not persist the bucket layout; a writer with another count would corrupt the table.
        p.set_other("hoodie.index.type", "BUCKET")?;
        p.set_other("hoodie.bucket.index.num.buckets", &num_buckets.to_string())?;
        if !hash_fields.is_empty() {
            p.set_other("hoodie.bucket.index.hash.field", &hash_fields.join(","))?;
        }
    }
    Ok(p)
}

/// A merge-on-read table's readers merge by the rule of its payload class: refuses a table whose rule
/// readers do not share (another payload) or whose ordering field is not the configured precombine field,
/// since the writer folds each batch by that field.
fn check_merge_mode(
    storage: &dyn Storage,
    props: &TableProperties,
    config: &WriteConfig,
) -> Result<(), WriteError> {
    use crate::log_file::scan::MergeMode;
    if !props.is_merge_on_read() {
        return Ok(());
    }
    let mode = MergeMode::from_table_properties(&props.as_map())
        .map_err(|e| table_err(storage, format!("merge-on-read table: {e}")))?;
    let ordering = match &mode {
        MergeMode::EventTime { ordering_field } => Some(ordering_field.as_str()),
        MergeMode::CommitTime => None,
    };
    if ordering != config.precombine_field.as_deref() {
        return Err(table_err(
            storage,
            format!(
                "readers merge this table's records by {} but hoodie.datasource.write.precombine.field is {:?}",
                ordering.map_or("commit time".to_string(), |f| format!("ordering field {f}")),
                config.precombine_field
            ),
        ));
    }
    Ok(())
}

/// Refuses a configuration that disagrees with what the table on storage was written with.
pub(super) fn check_compatible(
    storage: &dyn Storage,
    props: &TableProperties,
    config: &WriteConfig,
    keygen: &KeyGenConfig,
) -> Result<(), WriteError> {
    let mismatch = |what: &str, table: String, config: String| {
        table_err(
            storage,
            format!("{what} of the table is {table:?} but the configuration says {config:?}"),
        )
    };
    if props.name != config.table_name {
        return Err(mismatch(
            "hoodie.table.name",
            props.name.clone(),
            config.table_name.clone(),
        ));
    }
    if props.table_type != config.table_type {
        return Err(mismatch(
            "hoodie.table.type",
            props.table_type.to_string(),
            config.table_type.to_string(),
        ));
    }
    if props.record_key_fields != config.record_key_fields {
        return Err(mismatch(
            "the record key fields",
            props.record_key_fields.join(","),
            config.record_key_fields.join(","),
        ));
    }
    if props.partition_fields != config.partition_fields {
        return Err(mismatch(
            "the partition fields",
            props.partition_fields.join(","),
            config.partition_fields.join(","),
        ));
    }
    if props.hive_style_partitioning_or_default() != config.hive_style_partitioning {
        return Err(mismatch(
            "hive_style_partitioning",
            props.hive_style_partitioning_or_default().to_string(),
            config.hive_style_partitioning.to_string(),
        ));
    }
    if props.url_encode_partitioning_or_default() != config.url_encode_partitions {
        return Err(mismatch(
            "partitionpath.urlencode",
            props.url_encode_partitioning_or_default().to_string(),
            config.url_encode_partitions.to_string(),
        ));
    }
    if let Some(class) = &props.key_generator_class {
        if class.rsplit('.').next() != keygen.kind.class_name().rsplit('.').next() {
            return Err(mismatch(
                "the key generator",
                class.clone(),
                keygen.kind.class_name().to_string(),
            ));
        }
    }
    let stored_payload = props.other().get("hoodie.compaction.payload.class");
    let debezium = |p: Option<&str>| p.and_then(crate::record::debezium::connector_of_payload);
    if debezium(stored_payload) != debezium(config.payload_class.as_deref()) {
        return Err(mismatch(
            "the payload class",
            stored_payload.unwrap_or_default().to_string(),
            config.payload_class.clone().unwrap_or_default(),
        ));
    }
    let stored_buckets = props.other().get("hoodie.bucket.index.num.buckets");
    let configured = match &config.index {
        IndexConfig::Bucket { num_buckets, .. } => Some(num_buckets.to_string()),
        IndexConfig::None => None,
    };
    if let (Some(stored), Some(configured)) = (stored_buckets, &configured) {
        if stored != configured {
            return Err(mismatch(
                "hoodie.bucket.index.num.buckets",
                stored.to_string(),
                configured.clone(),
            ));
        }
    }
    if stored_buckets.is_some() && configured.is_none() {
        return Err(table_err(
            storage,
            "the table uses the bucket index; configure hoodie.index.type=BUCKET with its bucket count",
        ));
    }
    let stored_hash = props
        .other()
        .get("hoodie.bucket.index.hash.field")
        .unwrap_or("");
    if let IndexConfig::Bucket { hash_fields, .. } = &config.index {
        if stored_buckets.is_some() && stored_hash != hash_fields.join(",") {
            return Err(mismatch(
                "hoodie.bucket.index.hash.field",
                stored_hash.to_string(),
                hash_fields.join(","),
            ));
        }
    }
    Ok(())
}

impl TableWriter {
    /// Opens the table at `storage`, creating it with `schema` when it does not exist yet.
    ///
    /// An existing table must agree with `config` (name, keys, partitioning, key generator, bucket count).
    /// When `schema` is given, the table schema is the latest committed one evolved with it
    /// ([`TableWriter::evolve_schema`]); the first commit after the change carries the evolved schema.
    pub async fn create_or_open(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: WriteConfig,
        schema: Option<AvroSchema>,
    ) -> Result<Self, WriteError> {
        let keygen_config = KeyGenConfig::from_properties(&config.properties)?;
        let properties = match TableProperties::load(storage.as_ref()).await {
            Ok(p) => Some(p),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let (properties, table_schema) = match properties {
            Some(props) => {
                props.validate_writable()?;
                check_compatible(storage.as_ref(), &props, &config, &keygen_config)?;
                let timeline = Timeline::load(storage.as_ref()).await?;
                let stored = match timeline.latest_schema(storage.as_ref()).await? {
                    Some(s) => Some(s),
                    None => props.create_schema.clone(),
                };
                let stored = stored.map(|s| AvroSchema::parse(&s)).transpose()?;
                let avro = match (stored, schema) {
                    // A newer schema file (or registry version) evolves the table under Hudi's rules; an
                    // older one leaves it as it is; one Hudi refuses fails here, before anything is written.
                    (Some(stored), Some(given)) => {
                        let evolved = crate::schema::evolution::evolve(&stored, &given)?;
                        if !evolved.changes.is_empty() {
                            tracing::info!(changes = ?evolved.changes, "the given schema evolves the table schema");
                        }
                        evolved.schema
                    }
                    (Some(stored), None) => stored,
                    (None, Some(given)) => given,
                    (None, None) => {
                        return Err(table_err(
                            storage.as_ref(),
                            "the table has no schema yet; give one (hoodie.streamer.schemaprovider.source.schema.file)",
                        ))
                    }
                };
                (props, TableSchema::try_new(avro)?)
            }
            None => {
                let avro = schema.ok_or_else(|| {
                    table_err(
                        storage.as_ref(),
                        "no table here and no schema to create one (hoodie.streamer.schemaprovider.source.schema.file)",
                    )
                })?;
                let table_schema = TableSchema::try_new(avro)?;
                let props = new_table_properties(&config, &table_schema, &keygen_config)?;
                props.create(storage.as_ref(), clock.as_ref()).await?;
                // Another creator may have won the race: use what is stored and check it.
                let stored = TableProperties::load(storage.as_ref()).await?;
                stored.validate_writable()?;
                check_compatible(storage.as_ref(), &stored, &config, &keygen_config)?;
                (stored, table_schema)
            }
        };
        check_merge_mode(storage.as_ref(), &properties, &config)?;
        let shape = Shape::try_new(table_schema, &config)?;
        let bucket = match &config.index {
            IndexConfig::Bucket {
                num_buckets,
                hash_fields,
            } => Some(BucketIndexConfig::try_new(
                *num_buckets,
                hash_fields.clone(),
                &config.record_key_fields,
            )?),
            IndexConfig::None => None,
        };
        Ok(Self {
            storage,
            clock,
            config,
            properties,
            shape: std::sync::RwLock::new(Arc::new(shape)),
            bucket,
            view: tokio::sync::Mutex::new(FileSystemView::new()),
            known_partitions: std::sync::Mutex::new(BTreeSet::new()),
            schema_seen: std::sync::Mutex::new(None),
            planned: tokio::sync::Mutex::new(Default::default()),
        })
    }
}
