//! The keys of `hoodie.properties` this writer types, and their value enums with the exact Java spellings.

use super::*;

/// The keys of `hoodie.properties` that this writer types, with their exact Java spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableConfigKey {
    /// `hoodie.table.name` (required).
    Name,
    /// `hoodie.database.name`.
    DatabaseName,
    /// `hoodie.table.type` (required).
    TableType,
    /// `hoodie.table.version`.
    TableVersion,
    /// `hoodie.timeline.layout.version`.
    TimelineLayoutVersion,
    /// `hoodie.table.timeline.timezone`.
    TimelineTimezone,
    /// `hoodie.table.recordkey.fields`.
    RecordKeyFields,
    /// `hoodie.table.partition.fields`.
    PartitionFields,
    /// `hoodie.table.precombine.field`.
    PrecombineField,
    /// `hoodie.table.keygenerator.class`.
    KeyGeneratorClass,
    /// `hoodie.table.keygenerator.type`.
    KeyGeneratorType,
    /// `hoodie.table.base.file.format`.
    BaseFileFormat,
    /// `hoodie.populate.meta.fields`.
    PopulateMetaFields,
    /// `hoodie.datasource.write.hive_style_partitioning`.
    HiveStylePartitioning,
    /// `hoodie.datasource.write.partitionpath.urlencode`.
    UrlEncodePartitioning,
    /// `hoodie.datasource.write.drop.partition.columns`.
    DropPartitionColumns,
    /// `hoodie.partition.metafile.use.base.format`.
    PartitionMetafileUseBaseFormat,
    /// `hoodie.archivelog.folder`.
    ArchivelogFolder,
    /// `hoodie.table.metadata.partitions`.
    MetadataPartitions,
    /// `hoodie.table.metadata.partitions.inflight`.
    MetadataPartitionsInflight,
    /// `hoodie.table.create.schema`.
    CreateSchema,
    /// `hoodie.table.checksum`.
    Checksum,
}

impl TableConfigKey {
    /// Every typed key, in the order they are written.
    pub const ALL: [TableConfigKey; 22] = [
        TableConfigKey::Name,
        TableConfigKey::DatabaseName,
        TableConfigKey::TableType,
        TableConfigKey::TableVersion,
        TableConfigKey::TimelineLayoutVersion,
        TableConfigKey::TimelineTimezone,
        TableConfigKey::RecordKeyFields,
        TableConfigKey::PartitionFields,
        TableConfigKey::PrecombineField,
        TableConfigKey::KeyGeneratorClass,
        TableConfigKey::KeyGeneratorType,
        TableConfigKey::BaseFileFormat,
        TableConfigKey::PopulateMetaFields,
        TableConfigKey::HiveStylePartitioning,
        TableConfigKey::UrlEncodePartitioning,
        TableConfigKey::DropPartitionColumns,
        TableConfigKey::PartitionMetafileUseBaseFormat,
        TableConfigKey::ArchivelogFolder,
        TableConfigKey::MetadataPartitions,
        TableConfigKey::MetadataPartitionsInflight,
        TableConfigKey::CreateSchema,
        TableConfigKey::Checksum,
    ];

    /// The Java key string.
    pub fn key(self) -> &'static str {
        match self {
            TableConfigKey::Name => "hoodie.table.name",
            TableConfigKey::DatabaseName => "hoodie.database.name",
            TableConfigKey::TableType => "hoodie.table.type",
            TableConfigKey::TableVersion => "hoodie.table.version",
            TableConfigKey::TimelineLayoutVersion => "hoodie.timeline.layout.version",
            TableConfigKey::TimelineTimezone => "hoodie.table.timeline.timezone",
            TableConfigKey::RecordKeyFields => "hoodie.table.recordkey.fields",
            TableConfigKey::PartitionFields => "hoodie.table.partition.fields",
            TableConfigKey::PrecombineField => "hoodie.table.precombine.field",
            TableConfigKey::KeyGeneratorClass => "hoodie.table.keygenerator.class",
            TableConfigKey::KeyGeneratorType => "hoodie.table.keygenerator.type",
            TableConfigKey::BaseFileFormat => "hoodie.table.base.file.format",
            TableConfigKey::PopulateMetaFields => "hoodie.populate.meta.fields",
            TableConfigKey::HiveStylePartitioning => {
                "hoodie.datasource.write.hive_style_partitioning"
            }
            TableConfigKey::UrlEncodePartitioning => {
                "hoodie.datasource.write.partitionpath.urlencode"
            }
            TableConfigKey::DropPartitionColumns => {
                "hoodie.datasource.write.drop.partition.columns"
            }
            TableConfigKey::PartitionMetafileUseBaseFormat => {
                "hoodie.partition.metafile.use.base.format"
            }
            TableConfigKey::ArchivelogFolder => "hoodie.archivelog.folder",
            TableConfigKey::MetadataPartitions => "hoodie.table.metadata.partitions",
            TableConfigKey::MetadataPartitionsInflight => {
                "hoodie.table.metadata.partitions.inflight"
            }
            TableConfigKey::CreateSchema => "hoodie.table.create.schema",
            TableConfigKey::Checksum => "hoodie.table.checksum",
        }
    }

    /// The typed key for a Java key string.
    pub fn from_key(key: &str) -> Option<TableConfigKey> {
        Self::ALL.into_iter().find(|k| k.key() == key)
    }
}

impl fmt::Display for TableConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Declares a value enum whose text is the exact Java enum name.
macro_rules! java_enum {
    ($(#[$doc:meta])* $name:ident, $key:expr, $expected:expr, { $($(#[$vdoc:meta])* $variant:ident => $text:expr),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The exact Java spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = PropertiesError;
            /// Accepts only the exact Java name (Java's `valueOf` is case-sensitive).
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(PropertiesError::InvalidValue {
                        key: $key.key(),
                        value: s.to_string(),
                        expected: $expected,
                    }),
                }
            }
        }
    };
}

java_enum!(
    /// `hoodie.table.type` (`HoodieTableType`).
    TableType, TableConfigKey::TableType, "COPY_ON_WRITE or MERGE_ON_READ", {
        /// Copy-on-write: every change rewrites whole base files.
        CopyOnWrite => "COPY_ON_WRITE",
        /// Merge-on-read: base files plus log files.
        MergeOnRead => "MERGE_ON_READ",
    }
);

java_enum!(
    /// `hoodie.table.base.file.format` (`HoodieFileFormat`).
    BaseFileFormat, TableConfigKey::BaseFileFormat, "PARQUET, ORC, HFILE or LANCE (upper case)", {
        /// Apache Parquet: the only format this writer writes.
        Parquet => "PARQUET",
        /// Apache ORC.
        Orc => "ORC",
        /// HFile (metadata table).
        HFile => "HFILE",
        /// Lance (Hudi 1.1).
        Lance => "LANCE",
    }
);

java_enum!(
    /// `hoodie.table.timeline.timezone` (`HoodieTimelineTimeZone`).
    TimelineTimezone, TableConfigKey::TimelineTimezone, "UTC or LOCAL", {
        /// Instants are UTC wall-clock times: what this writer generates.
        Utc => "UTC",
        /// Instants are in the JVM's zone.
        Local => "LOCAL",
    }
);

java_enum!(
    /// `hoodie.table.keygenerator.type` (`KeyGeneratorType`), written by Hudi 1.x instead of the class.
    KeyGeneratorType, TableConfigKey::KeyGeneratorType, "a KeyGeneratorType name such as SIMPLE, COMPLEX, NON_PARTITION", {
        /// `SimpleKeyGenerator`.
        Simple => "SIMPLE",
        /// `SimpleAvroKeyGenerator`.
        SimpleAvro => "SIMPLE_AVRO",
        /// `ComplexKeyGenerator`.
        Complex => "COMPLEX",
        /// `ComplexAvroKeyGenerator`.
        ComplexAvro => "COMPLEX_AVRO",
        /// `TimestampBasedKeyGenerator`.
        Timestamp => "TIMESTAMP",
        /// `TimestampBasedAvroKeyGenerator`.
        TimestampAvro => "TIMESTAMP_AVRO",
        /// `CustomKeyGenerator`.
        Custom => "CUSTOM",
        /// `CustomAvroKeyGenerator`.
        CustomAvro => "CUSTOM_AVRO",
        /// `NonpartitionedKeyGenerator`.
        NonPartition => "NON_PARTITION",
        /// `NonpartitionedAvroKeyGenerator`.
        NonPartitionAvro => "NON_PARTITION_AVRO",
        /// `GlobalDeleteKeyGenerator`.
        GlobalDelete => "GLOBAL_DELETE",
        /// `GlobalAvroDeleteKeyGenerator`.
        GlobalDeleteAvro => "GLOBAL_DELETE_AVRO",
        /// `AutoRecordGenWrapperKeyGenerator`.
        AutoRecord => "AUTO_RECORD",
        /// `AutoRecordGenWrapperAvroKeyGenerator`.
        AutoRecordAvro => "AUTO_RECORD_AVRO",
        /// The metadata table's key generator.
        HoodieTableMetadata => "HOODIE_TABLE_METADATA",
        /// Spark SQL's `SqlKeyGenerator`.
        SparkSql => "SPARK_SQL",
        /// Spark SQL's `UuidKeyGenerator`.
        SparkSqlUuid => "SPARK_SQL_UUID",
        /// Spark SQL's `MergeIntoKeyGenerator`.
        SparkSqlMergeInto => "SPARK_SQL_MERGE_INTO",
        /// A streamer test generator.
        StreamerTest => "STREAMER_TEST",
        /// A class given by `hoodie.table.keygenerator.class`.
        UserProvided => "USER_PROVIDED",
    }
);

/// Key generator class names Hudi ships (`KeyGeneratorType.getClassName`).
pub mod key_generator_class {
    /// One record-key field, one partition field.
    pub const SIMPLE: &str = "org.apache.hudi.keygen.SimpleKeyGenerator";
    /// Several record-key or partition fields.
    pub const COMPLEX: &str = "org.apache.hudi.keygen.ComplexKeyGenerator";
    /// No partitions.
    pub const NON_PARTITIONED: &str = "org.apache.hudi.keygen.NonpartitionedKeyGenerator";
    /// Partition path from a formatted timestamp.
    pub const TIMESTAMP_BASED: &str = "org.apache.hudi.keygen.TimestampBasedKeyGenerator";
    /// Per-field partition types.
    pub const CUSTOM: &str = "org.apache.hudi.keygen.CustomKeyGenerator";
}
