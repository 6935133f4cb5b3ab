//! What a generation takes (schema, source, ratios, sizes), what it reports, and why it fails.

use super::*;

/// Which record schema the values follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// `events/schema/trips.avsc`: the six-column demo table (`uuid`, `ts` in ms, rider, fare, city).
    Trips,
    /// `events/schema/bench.avsc`: 14 columns of mixed types with a nested record, for benchmarks.
    Bench,
}

impl SchemaKind {
    /// The Avro schema the generated values match (the file under `events/schema/`).
    pub fn avro_schema(self) -> &'static str {
        match self {
            SchemaKind::Trips => include_str!("../../../../events/schema/trips.avsc"),
            SchemaKind::Bench => include_str!("../../../../events/schema/bench.avsc"),
        }
    }

    /// The record key field (`hoodie.datasource.write.recordkey.field`).
    pub fn record_key_field(self) -> &'static str {
        match self {
            SchemaKind::Trips => "uuid",
            SchemaKind::Bench => "event_id",
        }
    }

    /// The ordering field (`hoodie.datasource.write.precombine.field`).
    pub fn ordering_field(self) -> &'static str {
        match self {
            SchemaKind::Trips => "ts",
            SchemaKind::Bench => "event_ts",
        }
    }

    /// The partition path field (`hoodie.datasource.write.partitionpath.field`).
    pub fn partition_field(self) -> &'static str {
        match self {
            SchemaKind::Trips => "city",
            SchemaKind::Bench => "region",
        }
    }

    /// The command-line spelling, also the default topic name.
    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Trips => "trips",
            SchemaKind::Bench => "bench",
        }
    }

    /// The record key of key number `key` (zero-padded, so key order is numeric order).
    pub fn record_key(self, key: u64) -> String {
        match self {
            SchemaKind::Trips => format!("trip-{key:08}"),
            SchemaKind::Bench => format!("evt-{key:010}"),
        }
    }
}

impl FromStr for SchemaKind {
    type Err = GenerateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trips" => Ok(SchemaKind::Trips),
            "bench" => Ok(SchemaKind::Bench),
            other => Err(GenerateError::InvalidOption {
                option: "schema",
                value: other.to_string(),
                reason: "expected `trips` or `bench`".into(),
            }),
        }
    }
}

/// Which event source mapping the payloads imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// Amazon MSK: `eventSource` = `aws:kafka`, with the cluster ARN.
    Msk,
    /// Self-managed Kafka: `eventSource` = `SelfManagedKafka`, no ARN.
    SelfManaged,
}

impl FromStr for SourceKind {
    type Err = GenerateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "msk" | MSK_EVENT_SOURCE => Ok(SourceKind::Msk),
            "self-managed" | SELF_MANAGED_EVENT_SOURCE => Ok(SourceKind::SelfManaged),
            other => Err(GenerateError::InvalidOption {
                option: "source",
                value: other.to_string(),
                reason: "expected `msk` or `self-managed`".into(),
            }),
        }
    }
}

/// What to generate. Ratios are shares of all records; inserts take what updates and deletes leave.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Kafka records in all (tombstones included).
    pub records: u64,
    /// Kafka partitions of the topic (1–10,000).
    pub partitions: u32,
    /// Distinct keys at most; once all are used, inserts become updates. `None`: every insert is a new key.
    pub keys: Option<u64>,
    /// Share of records that update an existing key.
    pub update_ratio: f64,
    /// Share of records that delete an existing key.
    pub delete_ratio: f64,
    /// Share of those deletes sent as Kafka tombstones; the others are `_hoodie_is_deleted = true` records.
    pub tombstone_ratio: f64,
    /// Share of records whose ordering value lags by up to 30 s (late events; such updates often lose).
    pub late_ratio: f64,
    /// Records per payload file at most (the ESM's `BatchSize`, 1–10,000).
    pub records_per_file: usize,
    /// Bytes per payload file at most (≤ [`MAX_PAYLOAD_BYTES`]); a file is cut early to stay under it.
    pub max_payload_bytes: usize,
    /// Value schema.
    pub schema: SchemaKind,
    /// Event source of the payloads.
    pub source: SourceKind,
    /// Topic name; `None`: the schema's name.
    pub topic: Option<String>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Kafka timestamp of the first record (epoch ms); each later record is 1 ms later.
    pub start_ms: i64,
    /// The model folds consecutive files into one batch up to this many file bytes, as `hudi-sink ingest`
    /// does under the interval commit ([`DEFAULT_MODEL_BATCH_BYTES`]); 0: one batch per file (as the
    /// per-batch protocol, or Lambda invocations of one file each, write them).
    pub model_batch_bytes: u64,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            records: 10_000,
            partitions: 4,
            keys: None,
            update_ratio: 0.3,
            delete_ratio: 0.1,
            tombstone_ratio: 0.5,
            late_ratio: 0.1,
            records_per_file: 1_000,
            max_payload_bytes: MAX_PAYLOAD_BYTES,
            schema: SchemaKind::Trips,
            source: SourceKind::Msk,
            topic: None,
            seed: 42,
            start_ms: DEFAULT_START_MS,
            model_batch_bytes: DEFAULT_MODEL_BATCH_BYTES,
        }
    }
}

impl GenerateOptions {
    /// Checks every option; the error names the option and the value.
    pub fn validate(&self) -> Result<(), GenerateError> {
        let invalid = |option: &'static str, value: String, reason: &str| {
            Err(GenerateError::InvalidOption {
                option,
                value,
                reason: reason.to_string(),
            })
        };
        for (option, value) in [
            ("update-ratio", self.update_ratio),
            ("delete-ratio", self.delete_ratio),
            ("tombstone-ratio", self.tombstone_ratio),
            ("late-ratio", self.late_ratio),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return invalid(option, value.to_string(), "must be between 0 and 1");
            }
        }
        if self.update_ratio + self.delete_ratio > 1.0 {
            return invalid(
                "update-ratio",
                format!(
                    "{} (+ delete-ratio {})",
                    self.update_ratio, self.delete_ratio
                ),
                "update and delete ratios add up to more than 1",
            );
        }
        if !(1..=10_000).contains(&self.partitions) {
            return invalid(
                "partitions",
                self.partitions.to_string(),
                "must be 1 to 10000",
            );
        }
        if self.keys == Some(0) {
            return invalid("keys", "0".into(), "must be at least 1");
        }
        if !(1..=MAX_RECORDS_PER_FILE).contains(&self.records_per_file) {
            return invalid(
                "records-per-file",
                self.records_per_file.to_string(),
                "must be 1 to 10000 (the ESM's largest BatchSize)",
            );
        }
        if !(1024..=MAX_PAYLOAD_BYTES).contains(&self.max_payload_bytes) {
            return invalid(
                "max-payload-bytes",
                self.max_payload_bytes.to_string(),
                "must be 1024 to 6000000 (Lambda's 6 MB payload limit)",
            );
        }
        let topic = self.topic();
        let legal = (1..=249).contains(&topic.len())
            && topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !legal {
            return invalid(
                "topic",
                topic.to_string(),
                "Kafka topic names are 1-249 characters of [A-Za-z0-9._-]",
            );
        }
        if self.start_ms < 0 {
            return invalid(
                "start-ms",
                self.start_ms.to_string(),
                "must not be negative",
            );
        }
        Ok(())
    }

    /// The topic name in use.
    pub fn topic(&self) -> &str {
        self.topic.as_deref().unwrap_or(self.schema.name())
    }
}

/// Why generation failed.
#[derive(Debug, Error)]
pub enum GenerateError {
    /// An option is out of range.
    #[error("invalid --{option} {value}: {reason}")]
    InvalidOption {
        /// The option's command-line name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The output directory already holds event files (they would mix with the new stream).
    #[error("{}: already holds event files ({first}); use an empty directory", dir.display())]
    OutputNotEmpty {
        /// The output directory.
        dir: PathBuf,
        /// One of the files found.
        first: String,
    },
    /// One record does not fit into a payload on its own.
    #[error(
        "record {index} takes {bytes} bytes, more than a payload of at most {limit} bytes can hold"
    )]
    RecordTooLarge {
        /// Record number in the stream.
        index: u64,
        /// Its size in the payload.
        bytes: usize,
        /// The payload limit.
        limit: usize,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Counts of what was generated, and the row count of the model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GenerateReport {
    /// Payload files.
    pub files: u64,
    /// Kafka records in all.
    pub records: u64,
    /// Records of a fresh key.
    pub inserts: u64,
    /// Records of an existing key.
    pub updates: u64,
    /// `_hoodie_is_deleted = true` records.
    pub deletes: u64,
    /// Kafka tombstones.
    pub tombstones: u64,
    /// Distinct keys used.
    pub keys: u64,
    /// Payload bytes in all.
    pub bytes: u64,
    /// The largest payload.
    pub max_file_bytes: u64,
    /// Rows of the table after ingesting every file (the model's rows).
    pub live_rows: u64,
}

/// One payload: an ESM invocation event as JSON.
#[derive(Debug, Clone)]
pub struct Payload {
    /// Position in the stream (0, 1, …): the file is `events-<index:05>.json`.
    pub index: u64,
    /// Kafka records in it.
    pub records: usize,
    /// The JSON bytes.
    pub bytes: Vec<u8>,
}
