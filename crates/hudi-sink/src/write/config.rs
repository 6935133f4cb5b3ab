//! The typed write configuration, built once from Hudi's own keys.
//!
//! [`KEYS`] lists the keys read here; `crate::bootstrap` checks a whole properties file against every
//! module's list before this parser runs (`crate::config::keys`). A bad value is a start-up error naming the
//! key, never a silent default.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::base_file::bloom::{BloomFilter, BloomFilterType, BloomSizing, DEFAULT_NUM_ENTRIES};
use crate::base_file::codec::CompressionCodec;
use crate::base_file::writer::BaseFileOptions;
use crate::config::{parse_bool, parse_list, parse_num, ConfigError};
use crate::table::properties::TableType;

/// Hudi write operations this writer performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteOperation {
    /// Append into new file groups; no lookups.
    Insert,
    /// Merge into the bucket's file group; larger ordering value wins.
    #[default]
    Upsert,
    /// Remove the given keys.
    Delete,
}

impl WriteOperation {
    /// Hudi's spelling (`hoodie.datasource.write.operation`).
    pub fn as_str(&self) -> &'static str {
        match self {
            WriteOperation::Insert => "insert",
            WriteOperation::Upsert => "upsert",
            WriteOperation::Delete => "delete",
        }
    }
}

impl fmt::Display for WriteOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WriteOperation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "insert" | "bulk_insert" => Ok(WriteOperation::Insert),
            "upsert" => Ok(WriteOperation::Upsert),
            "delete" => Ok(WriteOperation::Delete),
            _ => Err("expected insert, bulk_insert, upsert or delete".into()),
        }
    }
}

/// How records find their file group for upserts and deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexConfig {
    /// `hoodie.index.type=BUCKET` with the simple engine.
    Bucket {
        /// `hoodie.bucket.index.num.buckets`.
        num_buckets: u32,
        /// `hoodie.bucket.index.hash.field`; empty = the record key fields.
        hash_fields: Vec<String>,
    },
    /// No index: only inserts are possible.
    None,
}

/// Everything the writer needs, parsed and checked.
#[derive(Debug, Clone)]
pub struct WriteConfig {
    /// `hoodie.table.name` (also the Avro record name prefix).
    pub table_name: String,
    /// `hoodie.database.name`.
    pub database_name: Option<String>,
    /// `hoodie.base.path`: `s3://bucket/prefix` or a local directory.
    pub base_path: String,
    /// `hoodie.datasource.write.operation`.
    pub operation: WriteOperation,
    /// `hoodie.datasource.write.recordkey.field`.
    pub record_key_fields: Vec<String>,
    /// `hoodie.datasource.write.partitionpath.field` (empty = non-partitioned).
    pub partition_fields: Vec<String>,
    /// `hoodie.datasource.write.precombine.field`: larger value wins; `None` = incoming wins.
    pub precombine_field: Option<String>,
    /// `hoodie.datasource.write.payload.class`: only Hudi's Debezium payloads (set from
    /// `hudi.sink.debezium.connector` when absent); `hoodie.properties` names it, so that Spark readers and
    /// compaction merge with it, and the writer follows its delete and ordering rules.
    pub payload_class: Option<String>,
    /// `hoodie.datasource.write.hive_style_partitioning`.
    pub hive_style_partitioning: bool,
    /// `hoodie.datasource.write.partitionpath.urlencode`.
    pub url_encode_partitions: bool,
    /// The index.
    pub index: IndexConfig,
    /// `hoodie.table.type` / `hoodie.datasource.write.table.type`: whether upserts rewrite file groups
    /// (copy-on-write) or append log files to them (merge-on-read).
    pub table_type: TableType,
    /// `hoodie.streamer.schemaprovider.source.schema.file`: the Avro schema (path or `s3://`).
    pub schema_file: Option<String>,
    /// `hoodie.parquet.max.file.size`: new file groups are split at this size.
    pub max_file_size: u64,
    /// Parquet and bloom settings of base files.
    pub base_file: BaseFileOptions,
    /// Every key given, for the key generator and table properties.
    pub properties: BTreeMap<String, String>,
}

/// The keys [`WriteConfig::from_properties`] reads.
pub const KEYS: &[&str] = &[
    "hoodie.table.name",
    "hoodie.database.name",
    "hoodie.base.path",
    "hoodie.table.type",
    "hoodie.datasource.write.table.type",
    "hoodie.datasource.write.operation",
    "hoodie.datasource.write.recordkey.field",
    "hoodie.datasource.write.partitionpath.field",
    "hoodie.datasource.write.precombine.field",
    "hoodie.datasource.write.payload.class",
    "hoodie.datasource.write.hive_style_partitioning",
    "hoodie.datasource.write.partitionpath.urlencode",
    "hoodie.index.type",
    "hoodie.index.bucket.engine",
    "hoodie.bucket.index.num.buckets",
    "hoodie.bucket.index.hash.field",
    "hoodie.streamer.schemaprovider.source.schema.file",
    "hoodie.deltastreamer.schemaprovider.source.schema.file",
    "hoodie.parquet.max.file.size",
    "hoodie.parquet.block.size",
    "hoodie.parquet.page.size",
    "hoodie.parquet.compression.codec",
    "hoodie.index.bloom.num_entries",
    "hoodie.index.bloom.fpp",
    "hoodie.bloom.index.filter.type",
    "hoodie.bloom.index.filter.dynamic.max.entries",
    "hoodie.populate.meta.fields",
    "hoodie.table.base.file.format",
    "hoodie.metadata.enable",
];

impl WriteConfig {
    /// The partition path columns that are not record key columns (a custom key generator's `field:TYPE`
    /// read as `field`): only these let an update move a row to another partition, and only these need a
    /// delete to carry its whole row to find its partition.
    pub fn partition_fields_outside_key(&self) -> Vec<&str> {
        self.partition_fields
            .iter()
            .map(|f| f.split(':').next().unwrap_or(f).trim())
            .filter(|f| !self.record_key_fields.iter().any(|k| k == f))
            .collect()
    }

    /// Parses and checks the writer's keys ([`KEYS`]); other keys are left to their own parsers.
    pub fn from_properties(properties: BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let get = |k: &str| {
            properties
                .get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
        };

        let table_name = get("hoodie.table.name")
            .ok_or(ConfigError::Missing {
                key: "hoodie.table.name",
            })?
            .to_string();
        if !crate::table::properties::is_avro_name(&table_name) {
            return Err(ConfigError::Invalid {
                key: "hoodie.table.name".into(),
                value: table_name,
                reason: "must match [A-Za-z_][A-Za-z0-9_]* (Hudi derives Avro names from it)"
                    .into(),
            });
        }
        let base_path = get("hoodie.base.path")
            .ok_or(ConfigError::Missing {
                key: "hoodie.base.path",
            })?
            .to_string();
        let mut table_type = TableType::CopyOnWrite;
        for key in ["hoodie.table.type", "hoodie.datasource.write.table.type"] {
            if let Some(v) = get(key) {
                table_type = v
                    .to_ascii_uppercase()
                    .parse()
                    .map_err(|_| ConfigError::Invalid {
                        key: key.into(),
                        value: v.into(),
                        reason: "COPY_ON_WRITE or MERGE_ON_READ".into(),
                    })?;
            }
        }
        let operation = match get("hoodie.datasource.write.operation") {
            Some(v) => v.parse().map_err(|reason| ConfigError::Invalid {
                key: "hoodie.datasource.write.operation".into(),
                value: v.into(),
                reason,
            })?,
            None => WriteOperation::default(),
        };
        let record_key_fields = get("hoodie.datasource.write.recordkey.field")
            .map(parse_list)
            .unwrap_or_default();
        if record_key_fields.is_empty() {
            return Err(ConfigError::Missing {
                key: "hoodie.datasource.write.recordkey.field",
            });
        }
        let partition_fields = get("hoodie.datasource.write.partitionpath.field")
            .map(parse_list)
            .unwrap_or_default();
        let precombine_field = get("hoodie.datasource.write.precombine.field").map(String::from);
        let payload_class = match get("hoodie.datasource.write.payload.class") {
            None => None,
            Some(p) if crate::record::debezium::connector_of_payload(p).is_some() => {
                Some(p.to_string())
            }
            Some(p) => {
                return Err(ConfigError::Invalid {
                    key: "hoodie.datasource.write.payload.class".into(),
                    value: p.to_string(),
                    reason: format!(
                        "only {} and {} are supported (with hudi.sink.value.format=debezium)",
                        crate::record::debezium::POSTGRES_PAYLOAD,
                        crate::record::debezium::MYSQL_PAYLOAD
                    ),
                })
            }
        };
        let hive_style_partitioning = get("hoodie.datasource.write.hive_style_partitioning")
            .map(|v| parse_bool("hoodie.datasource.write.hive_style_partitioning", v))
            .transpose()?
            .unwrap_or(false);
        let url_encode_partitions = get("hoodie.datasource.write.partitionpath.urlencode")
            .map(|v| parse_bool("hoodie.datasource.write.partitionpath.urlencode", v))
            .transpose()?
            .unwrap_or(false);

        let index = match get("hoodie.index.type") {
            Some(v) if v.eq_ignore_ascii_case("BUCKET") => {
                if let Some(engine) = get("hoodie.index.bucket.engine") {
                    if !engine.eq_ignore_ascii_case("SIMPLE") {
                        return Err(ConfigError::Invalid {
                            key: "hoodie.index.bucket.engine".into(),
                            value: engine.into(),
                            reason: "only the SIMPLE bucket engine is supported".into(),
                        });
                    }
                }
                let num_buckets: u32 = match get("hoodie.bucket.index.num.buckets") {
                    Some(v) => parse_num("hoodie.bucket.index.num.buckets", v)?,
                    None => 256,
                };
                if num_buckets == 0 {
                    return Err(ConfigError::Invalid {
                        key: "hoodie.bucket.index.num.buckets".into(),
                        value: "0".into(),
                        reason: "must be at least 1".into(),
                    });
                }
                let hash_fields = get("hoodie.bucket.index.hash.field")
                    .map(parse_list)
                    .unwrap_or_default();
                if let Some(f) = hash_fields.iter().find(|f| !record_key_fields.contains(f)) {
                    return Err(ConfigError::Invalid {
                        key: "hoodie.bucket.index.hash.field".into(),
                        value: f.clone(),
                        reason: "hash fields must be a subset of the record key fields".into(),
                    });
                }
                IndexConfig::Bucket {
                    num_buckets,
                    hash_fields,
                }
            }
            Some(v) => {
                return Err(ConfigError::Invalid {
                    key: "hoodie.index.type".into(),
                    value: v.into(),
                    reason:
                        "only BUCKET is supported (upserts need an index that needs no lookups)"
                            .into(),
                })
            }
            None => IndexConfig::None,
        };
        if operation != WriteOperation::Insert && index == IndexConfig::None {
            return Err(ConfigError::Conflict {
                reason: format!(
                    "hoodie.datasource.write.operation={operation} needs hoodie.index.type=BUCKET"
                ),
            });
        }
        let schema_file = get("hoodie.streamer.schemaprovider.source.schema.file")
            .or_else(|| get("hoodie.deltastreamer.schemaprovider.source.schema.file"))
            .map(String::from);
        let max_file_size = match get("hoodie.parquet.max.file.size") {
            Some(v) => parse_num("hoodie.parquet.max.file.size", v)?,
            None => 120 * 1024 * 1024,
        };
        if max_file_size == 0 {
            return Err(ConfigError::Invalid {
                key: "hoodie.parquet.max.file.size".into(),
                value: "0".into(),
                reason: "must be positive".into(),
            });
        }
        let mut base_file = BaseFileOptions::default();
        if let Some(v) = get("hoodie.parquet.compression.codec") {
            base_file.codec = v
                .parse::<CompressionCodec>()
                .map_err(|e| ConfigError::Invalid {
                    key: "hoodie.parquet.compression.codec".into(),
                    value: v.into(),
                    reason: e.to_string(),
                })?;
        }
        if let Some(v) = get("hoodie.parquet.block.size") {
            base_file.row_group_bytes = parse_num("hoodie.parquet.block.size", v)?;
        }
        if let Some(v) = get("hoodie.parquet.page.size") {
            base_file.page_bytes = parse_num("hoodie.parquet.page.size", v)?;
        }
        let configured_entries = get("hoodie.index.bloom.num_entries");
        let num_entries: u32 = match configured_entries {
            Some(v) => parse_num("hoodie.index.bloom.num_entries", v)?,
            None => DEFAULT_NUM_ENTRIES,
        };
        let fpp: f64 = match get("hoodie.index.bloom.fpp") {
            Some(v) => parse_num("hoodie.index.bloom.fpp", v)?,
            None => 0.000_000_001,
        };
        if !(fpp > 0.0 && fpp < 1.0) || num_entries == 0 {
            return Err(ConfigError::Invalid {
                key: "hoodie.index.bloom.fpp".into(),
                value: format!("{fpp} (entries {num_entries})"),
                reason: "fpp must be in (0, 1) and num_entries positive".into(),
            });
        }
        let bloom_type = match get("hoodie.bloom.index.filter.type") {
            Some(v) => v
                .parse::<BloomFilterType>()
                .map_err(|e| ConfigError::Invalid {
                    key: "hoodie.bloom.index.filter.type".into(),
                    value: v.into(),
                    reason: e.to_string(),
                })?,
            None => BloomFilterType::DynamicV0,
        };
        let max_entries: u32 = match get("hoodie.bloom.index.filter.dynamic.max.entries") {
            Some(v) => parse_num("hoodie.bloom.index.filter.dynamic.max.entries", v)?,
            None => 100_000,
        };
        // Built once even when files get fitted filters: it validates the settings up front.
        let configured =
            BloomFilter::new(bloom_type, num_entries, fpp, max_entries).map_err(|e| {
                ConfigError::Invalid {
                    key: "hoodie.index.bloom.num_entries".into(),
                    value: num_entries.to_string(),
                    reason: e.to_string(),
                }
            })?;
        base_file.plain_columns = record_key_fields.clone();
        base_file.bloom = match configured_entries {
            Some(_) => BloomSizing::Fixed(configured),
            None => BloomSizing::FitToFile {
                filter_type: bloom_type,
                num_entries,
                fpp,
                max_entries,
            },
        };

        for (key, must) in [
            ("hoodie.populate.meta.fields", "true"),
            ("hoodie.table.base.file.format", "PARQUET"),
            ("hoodie.metadata.enable", "false"),
        ] {
            if let Some(v) = get(key) {
                if !v.eq_ignore_ascii_case(must) {
                    return Err(ConfigError::Invalid {
                        key: key.into(),
                        value: v.into(),
                        reason: format!("this writer requires {must}"),
                    });
                }
            }
        }

        Ok(Self {
            table_name,
            database_name: get("hoodie.database.name").map(String::from),
            base_path,
            operation,
            record_key_fields,
            partition_fields,
            precombine_field,
            payload_class,
            hive_style_partitioning,
            url_encode_partitions,
            index,
            table_type,
            schema_file,
            max_file_size,
            base_file,
            properties,
        })
    }

    /// Parses a Java `.properties` text.
    pub fn from_properties_text(text: &str) -> Result<Self, ConfigError> {
        let map =
            crate::config::java_properties::parse(text).map_err(|e| ConfigError::Invalid {
                key: "<properties file>".into(),
                value: String::new(),
                reason: e.to_string(),
            })?;
        Self::from_properties(map.into_iter().collect())
    }

    /// Returns a copy with one key changed (re-validated).
    pub fn with(&self, key: &str, value: &str) -> Result<Self, ConfigError> {
        let mut props = self.properties.clone();
        props.insert(key.into(), value.into());
        Self::from_properties(props)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> BTreeMap<String, String> {
        [
            ("hoodie.table.name", "trips"),
            ("hoodie.base.path", "/tmp/trips"),
            ("hoodie.datasource.write.recordkey.field", "uuid"),
            ("hoodie.datasource.write.partitionpath.field", "city"),
            ("hoodie.datasource.write.precombine.field", "ts"),
            ("hoodie.index.type", "BUCKET"),
            ("hoodie.bucket.index.num.buckets", "4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn parses_a_streamer_style_file() {
        let mut p = base();
        p.insert("bootstrap.servers".into(), "b-1:9092".into());
        p.insert("hoodie.deltastreamer.source.kafka.topic".into(), "t".into());
        let c = WriteConfig::from_properties(p).expect("valid");
        assert_eq!(c.operation, WriteOperation::Upsert);
        assert_eq!(
            c.index,
            IndexConfig::Bucket {
                num_buckets: 4,
                hash_fields: vec![]
            }
        );
        assert_eq!(c.precombine_field.as_deref(), Some("ts"));
        let ignored = crate::bootstrap::check_keys(&c.properties).expect("known keys");
        assert_eq!(ignored.len(), 2);
    }

    #[test]
    fn error_table_keys_are_known() {
        let mut p = base();
        p.insert("hoodie.errortable.base.path".into(), "s3://b/errors".into());
        p.insert("hoodie.errortable.enable".into(), "true".into());
        p.insert(
            "hoodie.errortable.target.table.name".into(),
            "trips_errors".into(),
        );
        // The base path is used (for dead letters); the rest is HoodieStreamer's alone.
        assert_eq!(
            crate::bootstrap::check_keys(&p).expect("known keys"),
            [
                "hoodie.errortable.enable",
                "hoodie.errortable.target.table.name"
            ]
        );
    }

    #[test]
    fn unknown_and_bad_keys_are_errors() {
        let mut p = base();
        p.insert("hoodie.bucket.index.num.bucket".into(), "4".into());
        assert_eq!(
            crate::bootstrap::check_keys(&p).unwrap_err(),
            ConfigError::UnknownKey {
                key: "hoodie.bucket.index.num.bucket".into()
            }
        );
        let mut p = base();
        p.insert("hoodie.bucket.index.num.buckets".into(), "four".into());
        assert!(matches!(
            WriteConfig::from_properties(p),
            Err(ConfigError::Invalid { .. })
        ));
        let mut p = base();
        p.insert("hudi.sink.nope".into(), "x".into());
        assert!(crate::bootstrap::check_keys(&p).is_err());
        // Every module's keys are known, the services' and the catalog's included.
        let mut p = base();
        for key in [
            "hudi.sink.services.retired.grace.ms",
            "hudi.sink.compaction.max.file.groups",
            "hudi.sink.clustering.copy.min.row.group.bytes",
            "hudi.sink.catalog.sync.timeout.ms",
            "hudi.sink.s3.attempt.timeout.ms",
            "hoodie.write.lock.dynamodb.table",
            "hoodie.keygen.timebased.timestamp.type",
        ] {
            p.insert(key.into(), "1".into());
        }
        assert_eq!(crate::bootstrap::check_keys(&p), Ok(vec![]));
        let mut p = base();
        p.remove("hoodie.index.type");
        assert!(matches!(
            WriteConfig::from_properties(p),
            Err(ConfigError::Conflict { .. })
        ));
        let mut p = base();
        p.insert("hoodie.table.type".into(), "MERGE_ON_READ".into());
        assert_eq!(
            WriteConfig::from_properties(p).expect("mor").table_type,
            TableType::MergeOnRead
        );
        let mut p = base();
        p.insert("hoodie.table.type".into(), "MERGE_ON_WRITE".into());
        assert!(WriteConfig::from_properties(p).is_err());
        // Merge-on-read inserts without an index write new file groups; upserts need the bucket index.
        let mut p = base();
        p.remove("hoodie.index.type");
        p.insert("hoodie.datasource.write.operation".into(), "insert".into());
        p.insert(
            "hoodie.datasource.write.table.type".into(),
            "MERGE_ON_READ".into(),
        );
        assert!(WriteConfig::from_properties(p.clone()).is_ok());
        p.insert("hoodie.datasource.write.operation".into(), "upsert".into());
        assert!(matches!(
            WriteConfig::from_properties(p),
            Err(ConfigError::Conflict { .. })
        ));
        let mut p = base();
        p.insert("hoodie.table.name".into(), "bad-name".into());
        assert!(WriteConfig::from_properties(p).is_err());
        let mut p = base();
        p.insert("hoodie.bucket.index.hash.field".into(), "other".into());
        assert!(WriteConfig::from_properties(p).is_err());
    }
}
