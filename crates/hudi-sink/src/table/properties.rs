//! `.hoodie/hoodie.properties`: the table's identity and format settings (hudi-format.md §2).
//!
//! Every key of §2.2 is a variant of [`TableConfigKey`] and a typed field of [`TableProperties`]; every other key
//! is kept verbatim and written back unchanged on a rewrite. Invariants:
//! - Reading is as strict as Java: enum values must be the exact Java names (`COPY_ON_WRITE`, `PARQUET`, `UTC`)
//!   because Java and Trino use `valueOf`; a stored `hoodie.table.checksum` must equal CRC32(`"<db>.<name>"`)
//!   (Java refuses the table otherwise). Booleans must be `true`/`false` (any case): Java would silently read
//!   anything else as `false`, so we refuse instead.
//! - Writing emits raw `key=value` lines (no escapes, see [`crate::config::java_properties`]) in Spark's style:
//!   a `#Properties saved on <instant>` comment, known keys, other keys in their original order, then the
//!   recomputed checksum last. A value that cannot be written raw is an error, never silently escaped.
//! - [`TableProperties::validate_writable`] is the gate for this writer: table version 6, timeline layout 1,
//!   COPY_ON_WRITE, PARQUET, no metadata table, partition columns kept, meta fields populated, UTC timeline.
//!   Hudi 1.x tables (version ≥ 8, or instants under `.hoodie/timeline/`) get their own error.
//! - Updates follow Hudi's backup protocol: write `hoodie.properties.backup`, replace the main file, verify it,
//!   delete the backup; readers fall back to the backup while the main file is missing or invalid.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use chrono::{TimeZone, Utc};
use thiserror::Error;

use crate::clock::Clock;
use crate::config::java_properties::{self, JavaProperties, JavaPropertiesError};
use crate::storage::{PutOutcome, Storage, StorageError};

/// Path of the properties file relative to the table base path.
pub const PROPERTIES_PATH: &str = ".hoodie/hoodie.properties";
/// Path of the backup written while the properties file is being replaced.
pub const PROPERTIES_BACKUP_PATH: &str = ".hoodie/hoodie.properties.backup";
/// Where Hudi 1.x (timeline layout 2) keeps its instants.
pub const V8_TIMELINE_DIR: &str = ".hoodie/timeline/";

/// The only table version this writer writes.
pub const WRITABLE_TABLE_VERSION: u32 = 6;
/// The timeline layout of table version 6.
pub const WRITABLE_TIMELINE_LAYOUT: u32 = 1;

/// Text shared by every "this is a Hudi 1.x table" error.
pub(crate) const HUDI_1X_HINT: &str = "this is a Hudi 1.x table (table version 8/9, timeline layout 2, instants under \
     .hoodie/timeline/); msk-hudi-sink reads and writes only table version 6 (Hudi 0.14/0.15, timeline layout 1)";

/// Failures reading, validating or writing `hoodie.properties`.
#[derive(Debug, Error)]
pub enum PropertiesError {
    /// Neither `hoodie.properties` nor its backup exists.
    #[error("no hoodie.properties (nor backup) under {base}: not a Hudi table")]
    NotFound {
        /// The table base URI.
        base: String,
    },
    /// The file is not valid `.properties` text.
    #[error("{path}: {source}")]
    Syntax {
        /// The file read.
        path: String,
        /// The parse error.
        #[source]
        source: JavaPropertiesError,
    },
    /// A key Hudi requires is absent.
    #[error("hoodie.properties seems invalid: required key {key} is missing")]
    MissingKey {
        /// The missing key.
        key: &'static str,
    },
    /// A value that does not parse as its key's type.
    #[error("hoodie.properties: invalid value {value:?} for {key}: expected {expected}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value found.
        value: String,
        /// What would be accepted.
        expected: &'static str,
    },
    /// `hoodie.table.checksum` does not match CRC32(`"<db>.<name>"`).
    #[error(
        "hoodie.properties seems invalid: hoodie.table.checksum={stored} but CRC32(\"{database}.{name}\")={computed}"
    )]
    ChecksumMismatch {
        /// The stored checksum.
        stored: u64,
        /// The checksum the name and database give.
        computed: u32,
        /// `hoodie.database.name` (empty if absent).
        database: String,
        /// `hoodie.table.name`.
        name: String,
    },
    /// A Hudi 1.x table.
    #[error("{HUDI_1X_HINT} (found {key}={value})")]
    Hudi1xTable {
        /// The key that shows it (or the timeline directory).
        key: &'static str,
        /// The value or path found.
        value: String,
    },
    /// A setting this writer cannot honour.
    #[error("msk-hudi-sink cannot write this table: {key}={value} ({reason})")]
    NotWritable {
        /// The key.
        key: &'static str,
        /// The value found (`<absent>` when missing).
        value: String,
        /// What the writer needs instead.
        reason: &'static str,
    },
    /// The table name cannot be used for a new table.
    #[error("invalid table name {name:?}: must be an Avro name [A-Za-z_][A-Za-z0-9_]*")]
    InvalidTableName {
        /// The name given.
        name: String,
    },
    /// A key or value cannot be written unescaped.
    #[error(transparent)]
    Unwritable(JavaPropertiesError),
    /// A key given as "other" is one of the typed keys.
    #[error("{key} is a typed table property; set the field instead")]
    TypedKey {
        /// The key.
        key: String,
    },
    /// Re-reading the rewritten file did not give back what was written.
    #[error("hoodie.properties changed while being rewritten (expected checksum {expected}); backup kept")]
    RewriteVerification {
        /// The checksum written.
        expected: u32,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl PropertiesError {
    /// Whether the table does not exist yet (no properties file nor backup): the caller may create it.
    pub fn is_not_found(&self) -> bool {
        matches!(self, PropertiesError::NotFound { .. })
    }
}

mod keys;

pub use keys::{
    key_generator_class, BaseFileFormat, KeyGeneratorType, TableConfigKey, TableType,
    TimelineTimezone,
};

/// The typed content of `hoodie.properties`.
///
/// `None` / empty means the key is absent; the `*_or_default` methods give the value Java assumes then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProperties {
    /// `hoodie.table.name`.
    pub name: String,
    /// `hoodie.database.name`.
    pub database: Option<String>,
    /// `hoodie.table.type`.
    pub table_type: TableType,
    /// `hoodie.table.version`.
    pub table_version: Option<u32>,
    /// `hoodie.timeline.layout.version`.
    pub timeline_layout_version: Option<u32>,
    /// `hoodie.table.timeline.timezone`.
    pub timeline_timezone: Option<TimelineTimezone>,
    /// `hoodie.table.recordkey.fields` (comma list; empty = absent).
    pub record_key_fields: Vec<String>,
    /// `hoodie.table.partition.fields` (comma list in path order; empty = absent = non-partitioned).
    pub partition_fields: Vec<String>,
    /// `hoodie.table.precombine.field`.
    pub precombine_field: Option<String>,
    /// `hoodie.table.keygenerator.class`.
    pub key_generator_class: Option<String>,
    /// `hoodie.table.keygenerator.type`.
    pub key_generator_type: Option<KeyGeneratorType>,
    /// `hoodie.table.base.file.format`.
    pub base_file_format: Option<BaseFileFormat>,
    /// `hoodie.populate.meta.fields`.
    pub populate_meta_fields: Option<bool>,
    /// `hoodie.datasource.write.hive_style_partitioning`.
    pub hive_style_partitioning: Option<bool>,
    /// `hoodie.datasource.write.partitionpath.urlencode`.
    pub url_encode_partitioning: Option<bool>,
    /// `hoodie.datasource.write.drop.partition.columns`.
    pub drop_partition_columns: Option<bool>,
    /// `hoodie.partition.metafile.use.base.format`.
    pub partition_metafile_use_base_format: Option<bool>,
    /// `hoodie.archivelog.folder`.
    pub archivelog_folder: Option<String>,
    /// `hoodie.table.metadata.partitions` (comma list; non-empty = metadata table in use).
    pub metadata_partitions: Vec<String>,
    /// `hoodie.table.metadata.partitions.inflight` (comma list).
    pub metadata_partitions_inflight: Vec<String>,
    /// `hoodie.table.create.schema` (Avro schema JSON, unescaped).
    pub create_schema: Option<String>,
    /// `hoodie.table.checksum` as read (always recomputed when writing).
    stored_checksum: Option<u64>,
    /// Every other key, verbatim, in file order.
    other: JavaProperties,
}

/// CRC32 of `"<database>.<name>"` (`HoodieTableConfig.generateChecksum`).
pub fn table_checksum(database: Option<&str>, name: &str) -> u32 {
    crc32fast::hash(format!("{}.{}", database.unwrap_or(""), name).as_bytes())
}

fn parse_bool(key: TableConfigKey, value: &str) -> Result<bool, PropertiesError> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(PropertiesError::InvalidValue {
            key: key.key(),
            value: value.to_string(),
            expected: "true or false",
        })
    }
}

fn parse_u32(key: TableConfigKey, value: &str) -> Result<u32, PropertiesError> {
    let trimmed = value.trim();
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = trimmed.parse() {
            return Ok(n);
        }
    }
    Err(PropertiesError::InvalidValue {
        key: key.key(),
        value: value.to_string(),
        expected: "a non-negative integer",
    })
}

/// Splits a comma list as Java does (`split(",")`, blanks trimmed, empty entries dropped).
fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

/// Whether `name` is an Avro name (Spark derives `<name>_record` / `hoodie.<name>` from the table name).
pub(crate) fn is_avro_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl TableProperties {
    /// Properties for a new version-6 copy-on-write table with this writer's settings: layout 1, UTC timeline,
    /// PARQUET, meta fields on, hive-style off, no URL encoding, partition columns kept, text partition metafiles,
    /// archive folder `archived`, no metadata table. Key fields and key generator are left for the caller.
    pub fn new_v6_cow(name: &str) -> Result<Self, PropertiesError> {
        if !is_avro_name(name) {
            return Err(PropertiesError::InvalidTableName {
                name: name.to_string(),
            });
        }
        Ok(Self {
            name: name.to_string(),
            database: None,
            table_type: TableType::CopyOnWrite,
            table_version: Some(WRITABLE_TABLE_VERSION),
            timeline_layout_version: Some(WRITABLE_TIMELINE_LAYOUT),
            timeline_timezone: Some(TimelineTimezone::Utc),
            record_key_fields: Vec::new(),
            partition_fields: Vec::new(),
            precombine_field: None,
            key_generator_class: None,
            key_generator_type: None,
            base_file_format: Some(BaseFileFormat::Parquet),
            populate_meta_fields: Some(true),
            hive_style_partitioning: Some(false),
            url_encode_partitioning: Some(false),
            drop_partition_columns: Some(false),
            partition_metafile_use_base_format: Some(false),
            archivelog_folder: Some("archived".to_string()),
            metadata_partitions: Vec::new(),
            metadata_partitions_inflight: Vec::new(),
            create_schema: None,
            stored_checksum: None,
            other: JavaProperties::new(),
        })
    }

    /// Parses the file's bytes (ISO-8859-1 `.properties`), checking types and the checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PropertiesError> {
        let props = JavaProperties::parse(bytes).map_err(|source| PropertiesError::Syntax {
            path: PROPERTIES_PATH.to_string(),
            source,
        })?;
        Self::from_java_properties(&props)
    }

    /// Builds the typed view of an already parsed properties map.
    pub fn from_java_properties(props: &JavaProperties) -> Result<Self, PropertiesError> {
        use TableConfigKey as K;
        let get = |k: K| props.get(k.key());
        let name = get(K::Name)
            .filter(|v| !v.is_empty())
            .ok_or(PropertiesError::MissingKey { key: K::Name.key() })?
            .to_string();
        let table_type = get(K::TableType)
            .ok_or(PropertiesError::MissingKey {
                key: K::TableType.key(),
            })?
            .parse()?;
        let opt_bool = |k: K| get(k).map(|v| parse_bool(k, v)).transpose();
        let opt_u32 = |k: K| get(k).map(|v| parse_u32(k, v)).transpose();
        let stored_checksum = get(K::Checksum)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| PropertiesError::InvalidValue {
                        key: K::Checksum.key(),
                        value: v.to_string(),
                        expected: "a decimal CRC32",
                    })
            })
            .transpose()?;
        let mut other = JavaProperties::new();
        for (k, v) in props.iter() {
            if TableConfigKey::from_key(k).is_none() {
                other.insert(k, v);
            }
        }
        let parsed = Self {
            name,
            database: get(K::DatabaseName).map(str::to_string),
            table_type,
            table_version: opt_u32(K::TableVersion)?,
            timeline_layout_version: opt_u32(K::TimelineLayoutVersion)?,
            timeline_timezone: get(K::TimelineTimezone).map(str::parse).transpose()?,
            record_key_fields: get(K::RecordKeyFields).map(parse_list).unwrap_or_default(),
            partition_fields: get(K::PartitionFields).map(parse_list).unwrap_or_default(),
            precombine_field: get(K::PrecombineField).and_then(non_empty),
            key_generator_class: get(K::KeyGeneratorClass).and_then(non_empty),
            key_generator_type: get(K::KeyGeneratorType).map(str::parse).transpose()?,
            base_file_format: get(K::BaseFileFormat).map(str::parse).transpose()?,
            populate_meta_fields: opt_bool(K::PopulateMetaFields)?,
            hive_style_partitioning: opt_bool(K::HiveStylePartitioning)?,
            url_encode_partitioning: opt_bool(K::UrlEncodePartitioning)?,
            drop_partition_columns: opt_bool(K::DropPartitionColumns)?,
            partition_metafile_use_base_format: opt_bool(K::PartitionMetafileUseBaseFormat)?,
            archivelog_folder: get(K::ArchivelogFolder).and_then(non_empty),
            metadata_partitions: get(K::MetadataPartitions)
                .map(parse_list)
                .unwrap_or_default(),
            metadata_partitions_inflight: get(K::MetadataPartitionsInflight)
                .map(parse_list)
                .unwrap_or_default(),
            create_schema: get(K::CreateSchema).and_then(non_empty),
            stored_checksum,
            other,
        };
        parsed.verify_checksum()?;
        Ok(parsed)
    }

    /// Checks a stored checksum (absent is accepted, as Java does).
    fn verify_checksum(&self) -> Result<(), PropertiesError> {
        let computed = self.checksum();
        match self.stored_checksum {
            Some(stored) if stored != u64::from(computed) => {
                Err(PropertiesError::ChecksumMismatch {
                    stored,
                    computed,
                    database: self.database.clone().unwrap_or_default(),
                    name: self.name.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    /// CRC32(`"<db>.<name>"`): the checksum written for the current name and database.
    pub fn checksum(&self) -> u32 {
        table_checksum(self.database.as_deref(), &self.name)
    }

    /// The checksum found in the file read, if any.
    pub fn stored_checksum(&self) -> Option<u64> {
        self.stored_checksum
    }

    /// Keys this writer does not type, verbatim.
    pub fn other(&self) -> &JavaProperties {
        &self.other
    }

    /// Sets an untyped key (e.g. a key generator option such as `hoodie.keygen.timebased.output.dateformat`).
    ///
    /// Refuses typed keys (set the field) and text that cannot be written unescaped.
    pub fn set_other(&mut self, key: &str, value: &str) -> Result<(), PropertiesError> {
        if TableConfigKey::from_key(key).is_some() {
            return Err(PropertiesError::TypedKey {
                key: key.to_string(),
            });
        }
        java_properties::check_writable_key(key).map_err(PropertiesError::Unwritable)?;
        java_properties::check_writable_value(key, value).map_err(PropertiesError::Unwritable)?;
        self.other.insert(key, value);
        Ok(())
    }

    /// Removes an untyped key; returns its value.
    pub fn remove_other(&mut self, key: &str) -> Option<String> {
        self.other.remove(key)
    }

    /// Base file format, `PARQUET` when absent (Java's default).
    pub fn base_file_format_or_default(&self) -> BaseFileFormat {
        self.base_file_format.unwrap_or(BaseFileFormat::Parquet)
    }

    /// Whether meta fields are written, `true` when absent.
    pub fn populate_meta_fields_or_default(&self) -> bool {
        self.populate_meta_fields.unwrap_or(true)
    }

    /// Hive-style partition paths, `false` when absent.
    pub fn hive_style_partitioning_or_default(&self) -> bool {
        self.hive_style_partitioning.unwrap_or(false)
    }

    /// URL-encoded partition values, `false` when absent.
    pub fn url_encode_partitioning_or_default(&self) -> bool {
        self.url_encode_partitioning.unwrap_or(false)
    }

    /// Partition columns dropped from files, `false` when absent.
    pub fn drop_partition_columns_or_default(&self) -> bool {
        self.drop_partition_columns.unwrap_or(false)
    }

    /// Timeline time zone, `LOCAL` when absent (Java's default; this writer always writes `UTC`).
    pub fn timeline_timezone_or_default(&self) -> TimelineTimezone {
        self.timeline_timezone.unwrap_or(TimelineTimezone::Local)
    }

    /// Archive folder, `archived` when absent.
    pub fn archivelog_folder_or_default(&self) -> &str {
        self.archivelog_folder.as_deref().unwrap_or("archived")
    }

    /// The action of this table's writes: `commit` (copy-on-write) or `deltacommit` (merge-on-read, whose
    /// `commit`s are compactions).
    pub fn write_action(&self) -> crate::table::instant::Action {
        match self.table_type {
            TableType::CopyOnWrite => crate::table::instant::Action::Commit,
            TableType::MergeOnRead => crate::table::instant::Action::DeltaCommit,
        }
    }

    /// Whether upserts append log files (merge-on-read).
    pub fn is_merge_on_read(&self) -> bool {
        self.table_type == TableType::MergeOnRead
    }

    /// Whether the table is partitioned (hudi-rs's rule: partition fields set and the key generator is not the
    /// non-partitioned one).
    pub fn is_partitioned(&self) -> bool {
        !self.partition_fields.is_empty()
            && self.key_generator_class.as_deref() != Some(key_generator_class::NON_PARTITIONED)
            && self.key_generator_type != Some(KeyGeneratorType::NonPartition)
    }

    /// The typed keys rendered as written, in write order, without the checksum.
    fn typed_entries(&self) -> Vec<(TableConfigKey, String)> {
        use TableConfigKey as K;
        let mut out: Vec<(TableConfigKey, String)> = Vec::new();
        let mut push = |k: K, v: Option<String>| {
            if let Some(v) = v {
                out.push((k, v));
            }
        };
        let list = |v: &[String]| (!v.is_empty()).then(|| v.join(","));
        push(K::Name, Some(self.name.clone()));
        push(K::DatabaseName, self.database.clone());
        push(K::TableType, Some(self.table_type.to_string()));
        push(K::TableVersion, self.table_version.map(|v| v.to_string()));
        push(
            K::TimelineLayoutVersion,
            self.timeline_layout_version.map(|v| v.to_string()),
        );
        push(
            K::TimelineTimezone,
            self.timeline_timezone.map(|v| v.to_string()),
        );
        push(K::RecordKeyFields, list(&self.record_key_fields));
        push(K::PartitionFields, list(&self.partition_fields));
        push(K::PrecombineField, self.precombine_field.clone());
        push(K::KeyGeneratorClass, self.key_generator_class.clone());
        push(
            K::KeyGeneratorType,
            self.key_generator_type.map(|v| v.to_string()),
        );
        push(
            K::BaseFileFormat,
            self.base_file_format.map(|v| v.to_string()),
        );
        push(
            K::PopulateMetaFields,
            self.populate_meta_fields.map(|v| v.to_string()),
        );
        push(
            K::HiveStylePartitioning,
            self.hive_style_partitioning.map(|v| v.to_string()),
        );
        push(
            K::UrlEncodePartitioning,
            self.url_encode_partitioning.map(|v| v.to_string()),
        );
        push(
            K::DropPartitionColumns,
            self.drop_partition_columns.map(|v| v.to_string()),
        );
        push(
            K::PartitionMetafileUseBaseFormat,
            self.partition_metafile_use_base_format
                .map(|v| v.to_string()),
        );
        push(K::ArchivelogFolder, self.archivelog_folder.clone());
        push(K::MetadataPartitions, list(&self.metadata_partitions));
        push(
            K::MetadataPartitionsInflight,
            list(&self.metadata_partitions_inflight),
        );
        push(K::CreateSchema, self.create_schema.clone());
        out
    }

    /// Every key as written (typed keys rendered, other keys verbatim, the recomputed checksum), for code that
    /// reads Hudi options from a plain map (key generators).
    pub fn as_map(&self) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = self
            .typed_entries()
            .into_iter()
            .map(|(k, v)| (k.key().to_string(), v))
            .collect();
        for (k, v) in self.other.iter() {
            map.insert(k.to_string(), v.to_string());
        }
        map.insert(
            TableConfigKey::Checksum.key().to_string(),
            self.checksum().to_string(),
        );
        map
    }

    /// The file's bytes in Spark's style: `#Properties saved on <ISO instant>`, typed keys (create schema last
    /// among them), other keys in original order, checksum last. Fails if any value cannot be written raw.
    pub fn to_bytes(&self, clock: &dyn Clock) -> Result<Vec<u8>, PropertiesError> {
        let saved = Utc
            .timestamp_millis_opt(clock.now_millis())
            .single()
            .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let mut props = JavaProperties::new();
        let mut create_schema = None;
        for (k, v) in self.typed_entries() {
            if k == TableConfigKey::CreateSchema {
                create_schema = Some(v);
            } else {
                props.insert(k.key(), v);
            }
        }
        for (k, v) in self.other.iter() {
            props.insert(k, v);
        }
        if let Some(schema) = create_schema {
            props.insert(TableConfigKey::CreateSchema.key(), schema);
        }
        props.insert(TableConfigKey::Checksum.key(), self.checksum().to_string());
        props
            .to_bytes(&[&format!("Properties saved on {saved}")])
            .map_err(PropertiesError::Unwritable)
    }

    /// Refuses tables this writer must not write to; the error names the key and the value found.
    pub fn validate_writable(&self) -> Result<(), PropertiesError> {
        use TableConfigKey as K;
        if let Some(v) = self.table_version.filter(|v| *v >= 8) {
            return Err(PropertiesError::Hudi1xTable {
                key: K::TableVersion.key(),
                value: v.to_string(),
            });
        }
        if let Some(v) = self.timeline_layout_version.filter(|v| *v >= 2) {
            return Err(PropertiesError::Hudi1xTable {
                key: K::TimelineLayoutVersion.key(),
                value: v.to_string(),
            });
        }
        let shown = |v: Option<String>| v.unwrap_or_else(|| "<absent>".to_string());
        let refuse = |key: K, value: String, reason| {
            Err(PropertiesError::NotWritable {
                key: key.key(),
                value,
                reason,
            })
        };
        if self.table_version != Some(WRITABLE_TABLE_VERSION) {
            return refuse(
                K::TableVersion,
                shown(self.table_version.map(|v| v.to_string())),
                "only table version 6 is written",
            );
        }
        if self.timeline_layout_version != Some(WRITABLE_TIMELINE_LAYOUT) {
            return refuse(
                K::TimelineLayoutVersion,
                shown(self.timeline_layout_version.map(|v| v.to_string())),
                "table version 6 needs timeline layout 1",
            );
        }
        if self.base_file_format_or_default() != BaseFileFormat::Parquet {
            return refuse(
                K::BaseFileFormat,
                self.base_file_format_or_default().to_string(),
                "only PARQUET base files are written",
            );
        }
        if !self.metadata_partitions.is_empty() {
            return refuse(
                K::MetadataPartitions,
                self.metadata_partitions.join(","),
                "the metadata table is enabled; readers would list files from it and miss this writer's files",
            );
        }
        if !self.metadata_partitions_inflight.is_empty() {
            return refuse(
                K::MetadataPartitionsInflight,
                self.metadata_partitions_inflight.join(","),
                "metadata table partitions are being built by another engine",
            );
        }
        if self.drop_partition_columns_or_default() {
            return refuse(
                K::DropPartitionColumns,
                "true".to_string(),
                "partition columns must be stored in the files (hudi-rs refuses such tables)",
            );
        }
        if !self.populate_meta_fields_or_default() {
            return refuse(
                K::PopulateMetaFields,
                "false".to_string(),
                "the writer always populates the _hoodie_* meta fields",
            );
        }
        if self.timeline_timezone_or_default() != TimelineTimezone::Utc {
            return refuse(
                K::TimelineTimezone,
                shown(self.timeline_timezone.map(|v| v.to_string())),
                "instants are generated in UTC; the table must declare UTC",
            );
        }
        Ok(())
    }

    /// Reads `hoodie.properties`, falling back to `hoodie.properties.backup` when the main file is missing or
    /// invalid (a rewrite was interrupted), as Java's `fetchConfigs` does.
    pub async fn load(storage: &dyn Storage) -> Result<Self, PropertiesError> {
        let main = match storage.get(PROPERTIES_PATH).await {
            Ok(bytes) => match Self::from_bytes(&bytes) {
                Ok(props) => return Ok(props),
                Err(
                    e @ (PropertiesError::Syntax { .. } | PropertiesError::ChecksumMismatch { .. }),
                ) => Some(e),
                Err(e) => return Err(e),
            },
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        match storage.get(PROPERTIES_BACKUP_PATH).await {
            Ok(bytes) => match Self::from_bytes(&bytes) {
                Ok(props) => Ok(props),
                Err(e) => Err(main.unwrap_or(e)),
            },
            Err(e) if e.is_not_found() => Err(main.unwrap_or_else(|| PropertiesError::NotFound {
                base: storage.base_uri().to_string(),
            })),
            Err(e) => Err(e.into()),
        }
    }

    /// Loads and checks that this writer may write the table: rejects Hudi 1.x layouts (by version or by a
    /// `.hoodie/timeline/` directory) and everything [`TableProperties::validate_writable`] rejects.
    pub async fn load_writable(storage: &dyn Storage) -> Result<Self, PropertiesError> {
        let props = Self::load(storage).await?;
        if let Some(first) = storage.list(V8_TIMELINE_DIR).await?.first() {
            return Err(PropertiesError::Hudi1xTable {
                key: "timeline directory",
                value: first.path.clone(),
            });
        }
        props.validate_writable()?;
        Ok(props)
    }

    /// Creates `hoodie.properties` for a new table (atomic create-if-absent). Returns
    /// [`PutOutcome::AlreadyExists`] without touching anything if the table already has one.
    pub async fn create(
        &self,
        storage: &dyn Storage,
        clock: &dyn Clock,
    ) -> Result<PutOutcome, PropertiesError> {
        if !is_avro_name(&self.name) {
            return Err(PropertiesError::InvalidTableName {
                name: self.name.clone(),
            });
        }
        self.validate_writable()?;
        let bytes = self.to_bytes(clock)?;
        Ok(storage
            .put_if_absent(PROPERTIES_PATH, Bytes::from(bytes))
            .await?)
    }

    /// Rewrites `hoodie.properties` with Hudi's backup protocol: copy the current file to the backup, replace the
    /// main file, read it back and verify, delete the backup. A crash at any point leaves a readable table (the
    /// main file or, through [`TableProperties::load`], the backup).
    pub async fn store(
        &self,
        storage: &dyn Storage,
        clock: &dyn Clock,
    ) -> Result<(), PropertiesError> {
        let bytes = self.to_bytes(clock)?;
        match storage.get(PROPERTIES_PATH).await {
            Ok(current) => storage.put(PROPERTIES_BACKUP_PATH, current).await?,
            // No main file: an earlier rewrite was interrupted and the backup (if any) is the good copy; keep it.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        storage.put(PROPERTIES_PATH, Bytes::from(bytes)).await?;
        let written = Self::from_bytes(&storage.get(PROPERTIES_PATH).await?)?;
        if written.stored_checksum != Some(u64::from(self.checksum())) {
            return Err(PropertiesError::RewriteVerification {
                expected: self.checksum(),
            });
        }
        storage.delete(PROPERTIES_BACKUP_PATH).await?;
        Ok(())
    }

    /// Makes this value equal to what reading back its own serialisation gives (the stored checksum is set).
    pub fn with_stored_checksum(mut self) -> Self {
        self.stored_checksum = Some(u64::from(self.checksum()));
        self
    }
}

#[cfg(test)]
mod tests;
