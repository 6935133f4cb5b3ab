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
mod options;

pub use batching::DEFAULT_MODEL_BATCH_BYTES;
pub use options::{
    GenerateError, GenerateOptions, GenerateReport, Payload, SchemaKind, SourceKind,
};

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
mod tests;
