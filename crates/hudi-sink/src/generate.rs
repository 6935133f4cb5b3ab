//! Synthetic event-source-mapping payloads for demos, tests and benchmarks, and the table they must produce.
//!
//! A [`Generator`] turns [`GenerateOptions`] into a sequence of ESM invocation payloads (`aws:kafka` or
//! `SelfManagedKafka`), one per event file, exactly as Lambda would deliver them: records grouped under
//! `"<topic>-<partition>"`, offsets increasing per Kafka partition across files (with occasional gaps, as
//! compaction and transaction markers leave them), base64 keys and values, millisecond timestamps. Each payload
//! holds at most [`GenerateOptions::records_per_file`] records and never more than
//! [`GenerateOptions::max_payload_bytes`] bytes (default [`MAX_PAYLOAD_BYTES`], under Lambda's 6 MB limit).
//!
//! The stream mixes inserts of fresh keys, updates (some late, with an older ordering value, and some tying
//! the previous version's ordering value), `_hoodie_is_deleted` deletes and Kafka tombstones (null value, key =
//! the record key). Keys are owned by one Kafka partition (as Kafka's key partitioner guarantees), and a key's
//! partition-path value never changes, so one key is one row of the table.
//!
//! While generating, the generator applies the documented merge semantics per delivered batch (= per file) to
//! an independent model: in offset order per key, a tombstone deletes whatever came before it, the first
//! record after a tombstone recreates the key unconditionally, otherwise the larger ordering value wins and
//! ties go to the later offset; the folded result then merges with the stored row (tombstone deletes; a row
//! with an ordering value ≥ the stored one replaces it, or deletes it when `_hoodie_is_deleted`; a lower one is
//! ignored). [`Generator::write_model`] prints the final live rows as JSON lines, so a test can compare a table
//! with it row for row.
//!
//! Everything is a pure function of the options: record `i`'s decisions and values come from generators seeded
//! with `(seed, i)`, so the same options give byte-identical files, and the model re-creates a row from its
//! record index instead of keeping every value in memory. Memory is one payload plus a few words per key.

mod batching;

pub use batching::DEFAULT_MODEL_BATCH_BYTES;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Serialize;
use thiserror::Error;

use crate::source::event::{MSK_EVENT_SOURCE, SELF_MANAGED_EVENT_SOURCE};

/// Largest payload file written: Lambda refuses synchronous payloads over 6 MB (6,291,456 bytes); staying
/// under the decimal 6,000,000 keeps every file valid whichever way "6 MB" is read.
pub const MAX_PAYLOAD_BYTES: usize = 6_000_000;

/// The ESM's largest `BatchSize` for Kafka sources.
pub const MAX_RECORDS_PER_FILE: usize = 10_000;

/// Keys chosen from the most recently inserted ones half of the time, so that versions of one key meet in
/// one batch (where the fold rules apply) and not only across batches.
const HOT_KEYS: u64 = 64;

/// Share of updates and deletes that reuse the key's previous ordering value (ties go to the later offset).
const TIE_RATIO: f64 = 0.05;

/// Share of offsets followed by a gap of 1–3 offsets.
const GAP_RATIO: f64 = 0.02;

/// Default first Kafka timestamp: 2025-11-29T10:40:00Z, as in the sample events.
pub const DEFAULT_START_MS: i64 = 1_764_412_800_000;

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
            SchemaKind::Trips => include_str!("../../../events/schema/trips.avsc"),
            SchemaKind::Bench => include_str!("../../../events/schema/bench.avsc"),
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

/// Small, fast, well-mixed pseudo-random numbers (SplitMix64): reproducible across platforms and versions,
/// which an external RNG crate does not promise.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator for record `index` and stream `lane` of `seed`.
    fn for_record(seed: u64, index: u64, lane: u64) -> Self {
        let mut s = SplitMix64(seed ^ lane.wrapping_mul(0xD1B5_4A32_D192_ED03));
        s.0 ^= s.next_u64() ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        s.next_u64();
        s
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A stable hash of a key, for values fixed per key (partition path values).
fn key_hash(key: u64) -> u64 {
    let mut s = SplitMix64(key ^ 0x5851_F42D_4C95_7F2D);
    s.next_u64()
}

const CITIES: &[&str] = &[
    "san_francisco",
    "sao_paulo",
    "chennai",
    "new_york",
    "berlin",
    "tokyo",
    "london",
    "sydney",
];

const REGIONS: &[&str] = &[
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-2",
    "sa-east-1",
];

const DEVICES: &[(&str, &str, i64)] = &[
    ("android", "Pixel 8", 1080),
    ("android", "Galaxy S24", 1080),
    ("ios", "iPhone 15", 1179),
    ("ios", "iPad Air", 1640),
    ("linux", "ThinkPad X1", 1920),
    ("windows", "Surface Pro", 2880),
];

const WORDS: &[&str] = &[
    "ride", "late", "pickup", "airport", "café", "downtown", "rain", "surge", "tip", "東京",
    "receipt", "driver", "rating", "detour", "toll", "night", "pool", "São", "express", "quiet",
];

/// What a record does to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Update,
    Delete,
    Tombstone,
}

/// One record, built but perhaps not yet placed in a payload.
#[derive(Debug)]
struct Record {
    index: u64,
    key: u64,
    partition: u32,
    kind: Kind,
    ordering: i64,
    /// The record's JSON object in the `records` array.
    json: String,
}

/// Per key: the last ordering value sent (for ties) and the model's stored row.
#[derive(Debug, Clone, Copy)]
struct KeyState {
    last_ordering: i64,
    /// `(record index, ordering value)` of the stored row, if the key is live.
    stored: Option<(u64, i64)>,
}

/// A key's folded version within one batch.
#[derive(Debug, Clone, Copy)]
enum Fold {
    Tombstone,
    Row {
        index: u64,
        ordering: i64,
        deleted: bool,
        /// Follows a tombstone of the same batch: replaces the stored row whatever its ordering value.
        forced: bool,
    },
}

/// Streams payloads for [`GenerateOptions`] and keeps the model of the resulting table.
#[derive(Debug)]
pub struct Generator {
    opts: GenerateOptions,
    next_index: u64,
    next_offset: Vec<i64>,
    keys: Vec<KeyState>,
    pending: Option<Record>,
    report: GenerateReport,
    header: String,
    /// The model's batch being gathered (files fold together up to `model_batch_bytes`).
    batch: batching::ModelBatch,
}

impl Generator {
    /// A generator for `opts` (checked first).
    pub fn new(opts: GenerateOptions) -> Result<Self, GenerateError> {
        opts.validate()?;
        let header = match opts.source {
            SourceKind::Msk => format!(
                "{{\"eventSource\":\"{MSK_EVENT_SOURCE}\",\"eventSourceArn\":\"arn:aws:kafka:us-east-1:\
                 123456789012:cluster/{topic}-cluster/5b3f1c2a-9e7b-4d4c-8a55-0d6e2f8b1c77-1\",\
                 \"bootstrapServers\":\"b-1.{topic}cluster.abc123.c1.kafka.us-east-1.amazonaws.com:9098,\
                 b-2.{topic}cluster.abc123.c1.kafka.us-east-1.amazonaws.com:9098\",\"records\":{{",
                topic = opts.topic().replace(['.', '_'], "-")
            ),
            SourceKind::SelfManaged => format!(
                "{{\"eventSource\":\"{SELF_MANAGED_EVENT_SOURCE}\",\"bootstrapServers\":\
                 \"kafka-1.internal.example:9092,kafka-2.internal.example:9092\",\"records\":{{"
            ),
        };
        Ok(Self {
            next_offset: vec![0; opts.partitions as usize],
            opts,
            next_index: 0,
            keys: Vec::new(),
            pending: None,
            report: GenerateReport::default(),
            header,
            batch: batching::ModelBatch::default(),
        })
    }

    /// What has been generated so far (`live_rows` as of the payloads handed out).
    pub fn report(&self) -> &GenerateReport {
        &self.report
    }

    /// The next payload, or `None` when every record has been handed out.
    pub fn next_payload(&mut self) -> Result<Option<Payload>, GenerateError> {
        let topic = self.opts.topic().to_string();
        let limit = self.opts.max_payload_bytes;
        // Records of each Kafka partition, comma-separated, in offset order.
        let mut parts: Vec<String> = vec![String::new(); self.opts.partitions as usize];
        let mut non_empty = 0usize;
        let mut size = self.header.len() + "}}".len();
        let mut count = 0usize;
        let mut fold: HashMap<u64, Fold> = HashMap::new();
        let mut order: Vec<u64> = Vec::new();
        while count < self.opts.records_per_file {
            let record = match self.pending.take() {
                Some(r) => r,
                None if self.next_index < self.opts.records => self.make_record(),
                None => break,
            };
            let part = &mut parts[record.partition as usize];
            let added = if part.is_empty() {
                // `"<topic>-<p>":[` … `]`, and a comma before every partition but the first.
                let comma = usize::from(non_empty > 0);
                comma
                    + topic.len()
                    + decimal_len(u64::from(record.partition))
                    + 6
                    + record.json.len()
            } else {
                1 + record.json.len()
            };
            if size + added > limit {
                if count == 0 {
                    return Err(GenerateError::RecordTooLarge {
                        index: record.index,
                        bytes: added,
                        limit,
                    });
                }
                self.pending = Some(record);
                break;
            }
            if part.is_empty() {
                non_empty += 1;
            } else {
                part.push(',');
            }
            part.push_str(&record.json);
            size += added;
            count += 1;
            self.fold_record(&record, &mut fold, &mut order);
        }
        if count == 0 {
            // The last batch of the model.
            let (fold, order) = self.batch.take();
            self.apply_batch(&fold, &order);
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(self.header.as_bytes());
        let mut first = true;
        for (p, part) in parts.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
            if !first {
                bytes.push(b',');
            }
            first = false;
            bytes.extend_from_slice(format!("\"{topic}-{p}\":[").as_bytes());
            bytes.extend_from_slice(part.as_bytes());
            bytes.push(b']');
        }
        bytes.extend_from_slice(b"}}");
        if bytes.len() != size || size > limit {
            // The size bookkeeping is what keeps payloads under the limit: never hand out a payload it got wrong.
            return Err(GenerateError::RecordTooLarge {
                index: self.next_index,
                bytes: bytes.len(),
                limit,
            });
        }
        let cap = self.opts.model_batch_bytes;
        if self.batch.full_for(size as u64, cap) {
            let (done, done_order) = self.batch.take();
            self.apply_batch(&done, &done_order);
        }
        self.batch.add_file(fold, order, size as u64);
        if cap == 0 {
            let (done, done_order) = self.batch.take();
            self.apply_batch(&done, &done_order);
        }
        let index = self.report.files;
        self.report.files += 1;
        self.report.bytes += bytes.len() as u64;
        self.report.max_file_bytes = self.report.max_file_bytes.max(bytes.len() as u64);
        Ok(Some(Payload {
            index,
            records: count,
            bytes,
        }))
    }

    /// Draws record `next_index`: its kind, key, offset, ordering value and JSON.
    fn make_record(&mut self) -> Record {
        let index = self.next_index;
        self.next_index += 1;
        let opts = &self.opts;
        let mut rng = SplitMix64::for_record(opts.seed, index, 0);
        let used = self.keys.len() as u64;
        let fresh_left = opts.keys.is_none_or(|k| used < k);
        let roll = rng.unit();
        let mut kind = if used == 0 {
            Kind::Insert
        } else if roll < opts.delete_ratio {
            if rng.unit() < opts.tombstone_ratio {
                Kind::Tombstone
            } else {
                Kind::Delete
            }
        } else if roll < opts.delete_ratio + opts.update_ratio {
            Kind::Update
        } else {
            Kind::Insert
        };
        if kind == Kind::Insert && !fresh_left {
            kind = Kind::Update;
        }
        let key = if kind == Kind::Insert {
            self.keys.push(KeyState {
                last_ordering: 0,
                stored: None,
            });
            used
        } else if rng.unit() < 0.5 {
            used - 1 - rng.below(used.min(HOT_KEYS))
        } else {
            rng.below(used)
        };
        let partition = (key % u64::from(opts.partitions)) as u32;
        let slot = &mut self.next_offset[partition as usize];
        if rng.unit() < GAP_RATIO {
            *slot += 1 + rng.below(3) as i64;
        }
        let offset = *slot;
        *slot += 1;
        let timestamp_ms = opts.start_ms + index as i64;
        let mut event_ms = timestamp_ms;
        if rng.unit() < opts.late_ratio {
            event_ms -= 1 + rng.below(30_000) as i64;
        }
        let mut ordering = match opts.schema {
            SchemaKind::Trips => event_ms,
            SchemaKind::Bench => event_ms * 1000 + rng.below(1000) as i64,
        };
        let state = &mut self.keys[key as usize];
        if kind != Kind::Insert && rng.unit() < TIE_RATIO {
            ordering = state.last_ordering;
        }
        if kind != Kind::Tombstone {
            state.last_ordering = ordering;
        }
        match kind {
            Kind::Insert => self.report.inserts += 1,
            Kind::Update => self.report.updates += 1,
            Kind::Delete => self.report.deletes += 1,
            Kind::Tombstone => self.report.tombstones += 1,
        }
        self.report.records += 1;
        self.report.keys = self.keys.len() as u64;

        let schema = opts.schema;
        let record_key = schema.record_key(key);
        let value = match kind {
            Kind::Tombstone => None,
            _ => Some(value_json(
                schema,
                opts.seed,
                index,
                key,
                ordering,
                kind == Kind::Delete,
            )),
        };
        let mut json = String::with_capacity(160 + value.as_ref().map_or(0, |v| v.len() * 4 / 3));
        // Topic names are checked to be [A-Za-z0-9._-]: no escaping needed.
        let _ = write!(
            json,
            "{{\"topic\":\"{}\",\"partition\":{partition},\"offset\":{offset},\"timestamp\":{timestamp_ms},\
             \"timestampType\":\"CREATE_TIME\",\"key\":\"",
            opts.topic()
        );
        STANDARD.encode_string(record_key.as_bytes(), &mut json);
        match &value {
            Some(v) => {
                json.push_str("\",\"value\":\"");
                STANDARD.encode_string(v.as_bytes(), &mut json);
                json.push_str("\",\"headers\":[]}");
            }
            None => json.push_str("\",\"value\":null,\"headers\":[]}"),
        }
        Record {
            index,
            key,
            partition,
            kind,
            ordering,
            json,
        }
    }

    /// Folds one record into its batch's version of the key (offset order per key = stream order).
    fn fold_record(&self, record: &Record, fold: &mut HashMap<u64, Fold>, order: &mut Vec<u64>) {
        let incoming = match record.kind {
            Kind::Tombstone => Fold::Tombstone,
            kind => Fold::Row {
                index: record.index,
                ordering: record.ordering,
                deleted: kind == Kind::Delete,
                forced: false,
            },
        };
        let prior = fold.get(&record.key).copied();
        if prior.is_none() {
            order.push(record.key);
        }
        let merged = batching::fold_step(prior, incoming);
        fold.insert(record.key, merged);
    }

    /// Merges a batch's folded versions into the stored rows.
    fn apply_batch(&mut self, fold: &HashMap<u64, Fold>, order: &[u64]) {
        for key in order {
            let Some(version) = fold.get(key) else {
                continue;
            };
            let Some(state) = self.keys.get_mut(*key as usize) else {
                continue;
            };
            let before = state.stored.is_some();
            match *version {
                Fold::Tombstone => state.stored = None,
                Fold::Row {
                    index,
                    ordering,
                    deleted,
                    forced,
                } => {
                    let wins = forced || state.stored.is_none_or(|(_, s)| ordering >= s);
                    if wins {
                        state.stored = if deleted {
                            None
                        } else {
                            Some((index, ordering))
                        };
                    }
                }
            }
            match (before, state.stored.is_some()) {
                (false, true) => self.report.live_rows += 1,
                (true, false) => self.report.live_rows -= 1,
                _ => {}
            }
        }
    }

    /// Writes the model's live rows as JSON lines (the record values, `_hoodie_is_deleted` false), in key
    /// order. Meaningful once every payload has been handed out.
    pub fn write_model(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for (key, state) in self.keys.iter().enumerate() {
            if let Some((index, ordering)) = state.stored {
                let line = value_json(
                    self.opts.schema,
                    self.opts.seed,
                    index,
                    key as u64,
                    ordering,
                    false,
                );
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    }
}

/// Digits of `n` in decimal.
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The record value of record `index` (key `key`, ordering value `ordering`) as JSON text. A pure function of
/// its arguments, so the model can re-create a row from its record index.
pub fn value_json(
    schema: SchemaKind,
    seed: u64,
    index: u64,
    key: u64,
    ordering: i64,
    deleted: bool,
) -> String {
    let mut rng = SplitMix64::for_record(seed, index, 1);
    let mut s = String::with_capacity(384);
    let record_key = schema.record_key(key);
    match schema {
        SchemaKind::Trips => {
            let city = CITIES[(key_hash(key) % CITIES.len() as u64) as usize];
            let _ = write!(
                s,
                "{{\"uuid\":\"{record_key}\",\"ts\":{ordering},\"rider\":"
            );
            if rng.unit() < 0.05 {
                s.push_str("null");
            } else {
                let _ = write!(s, "\"rider-{:03}\"", rng.below(1000));
            }
            s.push_str(",\"fare\":");
            if rng.unit() < 0.03 {
                s.push_str("null");
            } else {
                let _ = write!(s, "{:?}", (rng.below(20_000) + 250) as f64 / 100.0);
            }
            let _ = write!(s, ",\"city\":\"{city}\",\"_hoodie_is_deleted\":{deleted}}}");
        }
        SchemaKind::Bench => {
            let region = REGIONS[(key_hash(key) % REGIONS.len() as u64) as usize];
            let days = ordering.div_euclid(86_400_000_000);
            let _ = write!(
                s,
                "{{\"event_id\":\"{record_key}\",\"event_ts\":{ordering},\"seq\":{index},\"region\":\"{region}\",\
                 \"user_id\":{},\"session\":",
                1_000_000 + rng.below(50_000_000)
            );
            if rng.unit() < 0.1 {
                s.push_str("null");
            } else {
                let _ = write!(s, "\"{:016x}{:016x}\"", rng.next_u64(), rng.next_u64());
            }
            let cents = rng.below(10_000_000);
            let _ = write!(
                s,
                ",\"amount\":{:?},\"price\":\"{}.{:02}\",\"quantity\":{},\"active\":{},\"event_date\":{days}",
                rng.below(100_000_000) as f64 / 1000.0,
                cents / 100,
                cents % 100,
                1 + rng.below(20),
                rng.unit() < 0.8
            );
            let (os, model, width) = DEVICES[rng.below(DEVICES.len() as u64) as usize];
            let _ = write!(
                s,
                ",\"device\":{{\"os\":\"{os}\",\"model\":\"{model}\",\"screen_width\":{width},\"lat\":"
            );
            if rng.unit() < 0.2 {
                s.push_str("null");
            } else {
                let micro_degrees = rng.below(180_000_001) as i64 - 90_000_000;
                let _ = write!(s, "{:?}", micro_degrees as f64 / 1e6);
            }
            s.push_str("},\"note\":");
            if rng.unit() < 0.1 {
                s.push_str("null");
            } else {
                s.push('"');
                for i in 0..(3 + rng.below(18)) {
                    if i > 0 {
                        s.push(' ');
                    }
                    s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
                }
                s.push('"');
            }
            let _ = write!(s, ",\"_hoodie_is_deleted\":{deleted}}}");
        }
    }
    s
}

/// The file name of payload `index`: `events-00000.json`, …
pub fn event_file_name(index: u64) -> String {
    format!("events-{index:05}.json")
}

/// Writes every payload of `opts` to `out_dir` (created if missing; must hold no `events-*.json`) and, with
/// `model`, the model's rows as JSON lines to that file. `on_file` sees the report after each file.
pub fn generate(
    opts: GenerateOptions,
    out_dir: &Path,
    model: Option<&Path>,
    on_file: &mut dyn FnMut(&GenerateReport),
) -> Result<GenerateReport, GenerateError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GenerateError::Io { path, source }
    };
    let mut generator = Generator::new(opts)?;
    std::fs::create_dir_all(out_dir).map_err(io(out_dir))?;
    for entry in std::fs::read_dir(out_dir).map_err(io(out_dir))? {
        let name = entry.map_err(io(out_dir))?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("events-") && name.ends_with(".json") {
            return Err(GenerateError::OutputNotEmpty {
                dir: out_dir.to_path_buf(),
                first: name.into_owned(),
            });
        }
    }
    while let Some(payload) = generator.next_payload()? {
        let path = out_dir.join(event_file_name(payload.index));
        std::fs::write(&path, &payload.bytes).map_err(io(&path))?;
        on_file(generator.report());
    }
    if let Some(path) = model {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let file = std::fs::File::create(path).map_err(io(path))?;
        let mut out = BufWriter::new(file);
        generator.write_model(&mut out).map_err(io(path))?;
        out.flush().map_err(io(path))?;
    }
    Ok(generator.report().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode::RecordDecoder;
    use crate::schema::arrow::avro_to_arrow;
    use crate::schema::avro::AvroSchema;
    use crate::source::event::{KafkaBatch, Payload as KafkaPayload};

    fn payloads(opts: GenerateOptions) -> (Vec<Payload>, Generator) {
        let mut g = Generator::new(opts).expect("options");
        let mut out = Vec::new();
        while let Some(p) = g.next_payload().expect("payload") {
            out.push(p);
        }
        (out, g)
    }

    #[test]
    fn every_value_decodes_with_its_schema_and_every_payload_parses() {
        for (schema, source) in [
            (SchemaKind::Trips, SourceKind::Msk),
            (SchemaKind::Bench, SourceKind::SelfManaged),
        ] {
            let avro = AvroSchema::parse(schema.avro_schema()).expect("schema");
            let arrow = std::sync::Arc::new(avro_to_arrow(&avro).expect("arrow"));
            let mut decoder = RecordDecoder::try_new(arrow, &avro).expect("decoder");
            let opts = GenerateOptions {
                records: 2_000,
                partitions: 3,
                records_per_file: 300,
                schema,
                source,
                ..GenerateOptions::default()
            };
            let (files, g) = payloads(opts);
            let mut records = 0u64;
            let mut tombstones = 0u64;
            let mut next: BTreeMapOffsets = BTreeMapOffsets::new();
            for f in &files {
                let batch = KafkaBatch::from_slice(&f.bytes).expect("valid event");
                for r in &batch.records {
                    records += 1;
                    let prev = next.insert(r.partition, r.offset);
                    assert!(prev.is_none_or(|p| r.offset > p), "offsets increase");
                    match r.payload() {
                        KafkaPayload::Value(v) => decoder.append(v).expect("value decodes"),
                        KafkaPayload::Tombstone => {
                            tombstones += 1;
                            assert!(r.key.is_some(), "tombstones carry the key");
                        }
                        KafkaPayload::Undecodable(e) => panic!("{e}"),
                    }
                }
            }
            assert_eq!(records, 2_000);
            assert_eq!(tombstones, g.report().tombstones);
            assert!(g.report().tombstones > 0 && g.report().deletes > 0 && g.report().updates > 0);
        }
    }

    type BTreeMapOffsets = std::collections::BTreeMap<i32, i64>;

    #[test]
    fn payloads_stay_under_the_byte_limit_and_are_cut_by_size() {
        let opts = GenerateOptions {
            records: 3_000,
            records_per_file: 2_000,
            max_payload_bytes: 200_000,
            schema: SchemaKind::Bench,
            ..GenerateOptions::default()
        };
        let (files, _) = payloads(opts);
        assert!(files.len() > 2, "cut by size, not by count");
        for f in &files {
            assert!(f.bytes.len() <= 200_000, "{} bytes", f.bytes.len());
            assert!(f.records < 2_000);
        }
        assert_eq!(files.iter().map(|f| f.records).sum::<usize>(), 3_000);
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let opts = GenerateOptions {
            records: 500,
            ..GenerateOptions::default()
        };
        let (a, _) = payloads(opts.clone());
        let (b, _) = payloads(opts.clone());
        let (c, _) = payloads(GenerateOptions { seed: 7, ..opts });
        let bytes = |v: &[Payload]| v.iter().map(|p| p.bytes.clone()).collect::<Vec<_>>();
        assert_eq!(bytes(&a), bytes(&b));
        assert_ne!(bytes(&a), bytes(&c));
    }

    #[test]
    fn model_follows_the_fold_rules() {
        // One key, one batch: tombstone, then a late record recreates it unconditionally.
        let mut g = Generator::new(GenerateOptions::default()).expect("options");
        g.keys.push(KeyState {
            last_ordering: 0,
            stored: Some((0, 100)),
        });
        g.report.live_rows = 1;
        let rec = |index, kind, ordering| Record {
            index,
            key: 0,
            partition: 0,
            kind,
            ordering,
            json: String::new(),
        };
        let mut fold = HashMap::new();
        let mut order = Vec::new();
        g.fold_record(&rec(1, Kind::Update, 50), &mut fold, &mut order);
        g.apply_batch(&fold, &order);
        assert_eq!(g.keys[0].stored, Some((0, 100)), "older update ignored");
        let (mut fold, mut order) = (HashMap::new(), Vec::new());
        g.fold_record(&rec(2, Kind::Tombstone, 0), &mut fold, &mut order);
        g.fold_record(&rec(3, Kind::Update, 10), &mut fold, &mut order);
        g.fold_record(&rec(4, Kind::Update, 5), &mut fold, &mut order);
        g.apply_batch(&fold, &order);
        assert_eq!(g.keys[0].stored, Some((3, 10)), "recreated after tombstone");
        let (mut fold, mut order) = (HashMap::new(), Vec::new());
        g.fold_record(&rec(5, Kind::Update, 10), &mut fold, &mut order);
        g.apply_batch(&fold, &order);
        assert_eq!(
            g.keys[0].stored,
            Some((5, 10)),
            "tie goes to the later offset"
        );
        let (mut fold, mut order) = (HashMap::new(), Vec::new());
        g.fold_record(&rec(6, Kind::Delete, 9), &mut fold, &mut order);
        g.apply_batch(&fold, &order);
        assert_eq!(g.keys[0].stored, Some((5, 10)), "older delete ignored");
        let (mut fold, mut order) = (HashMap::new(), Vec::new());
        g.fold_record(&rec(7, Kind::Delete, 11), &mut fold, &mut order);
        g.apply_batch(&fold, &order);
        assert_eq!(g.keys[0].stored, None);
        assert_eq!(g.report.live_rows, 0);
    }

    #[test]
    fn options_are_checked() {
        for bad in [
            GenerateOptions {
                update_ratio: 0.8,
                delete_ratio: 0.3,
                ..GenerateOptions::default()
            },
            GenerateOptions {
                records_per_file: 10_001,
                ..GenerateOptions::default()
            },
            GenerateOptions {
                max_payload_bytes: MAX_PAYLOAD_BYTES + 1,
                ..GenerateOptions::default()
            },
            GenerateOptions {
                topic: Some("no spaces".into()),
                ..GenerateOptions::default()
            },
        ] {
            assert!(Generator::new(bad).is_err());
        }
    }
}
