//! The stream and the model shared by the exactly-once tests and the simulation: a deterministic Kafka
//! stream with every kind of record the sink meets, and an independent implementation of the documented
//! merge rules to compare tables with, row for row.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

pub const SCHEMA: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
 {"name":"uuid","type":"string"},
 {"name":"ts","type":"long"},
 {"name":"rider","type":["null","string"],"default":null},
 {"name":"fare","type":["null","double"],"default":null},
 {"name":"city","type":"string"},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

pub const CITIES: &[&str] = &["sf", "nyc", "sao_paulo", "chennai"];

/// One Kafka record as the test produces it.
#[derive(Clone, Debug)]
pub struct Msg {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    /// `None` = tombstone; `Some(raw)` = the value bytes (JSON or garbage).
    pub value: Option<Vec<u8>>,
}

/// An ESM `aws:kafka` payload for `msgs`.
pub fn esm_payload(msgs: &[Msg]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut records: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for m in msgs {
        records
            .entry(format!("{}-{}", m.topic, m.partition))
            .or_default()
            .push(json!({
                "topic": m.topic,
                "partition": m.partition,
                "offset": m.offset,
                "timestamp": 1_700_000_000_000i64 + m.offset,
                "timestampType": "CREATE_TIME",
                "key": m.key.as_ref().map(|k| b64.encode(k)),
                "value": m.value.as_ref().map(|v| b64.encode(v)),
                "headers": [],
            }));
    }
    serde_json::to_vec(&json!({
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/test/11111111-2222-3333-4444-555555555555-1",
        "bootstrapServers": "b-1.test:9098",
        "records": records,
    }))
    .expect("payload")
}

/// Row values of one trip version.
#[derive(Clone, Debug, PartialEq)]
pub struct Trip {
    pub uuid: String,
    pub ts: i64,
    pub rider: String,
    pub fare: f64,
    pub city: String,
    pub deleted: bool,
}

impl Trip {
    pub fn json(&self) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "uuid": self.uuid, "ts": self.ts, "rider": self.rider, "fare": self.fare,
            "city": self.city, "_hoodie_is_deleted": self.deleted,
        }))
        .expect("json")
    }
}

/// A deterministic stream over `partitions` Kafka partitions: inserts, newer and older updates,
/// `_hoodie_is_deleted`, tombstones (some followed by a recreate), offset gaps and bad records.
pub fn stream(topic: &str, partitions: i32, per_partition: i64, keys: u64) -> Vec<Msg> {
    stream_with_seed(
        topic,
        partitions,
        per_partition,
        keys,
        0x2545_F491_4F6C_DD1D,
    )
}

/// [`stream`] drawn from another seed (the simulation gives every run its own stream).
pub fn stream_with_seed(
    topic: &str,
    partitions: i32,
    per_partition: i64,
    keys: u64,
    seed: u64,
) -> Vec<Msg> {
    let mut out = Vec::new();
    // xorshift must not start at zero
    let mut x: u64 = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for p in 0..partitions {
        let mut offset = 0i64;
        for i in 0..per_partition {
            // gaps, as compaction or transaction markers leave them
            offset += if next() % 10 == 0 { 3 } else { 1 };
            // keys are owned by a partition (as Kafka's key partitioner guarantees)
            let k = (next() % keys) * partitions as u64 + p as u64;
            let uuid = format!("trip-{k:05}");
            let city = CITIES[(k % CITIES.len() as u64) as usize].to_string();
            let roll = next() % 100;
            let value = if roll < 6 {
                None // tombstone
            } else if roll < 8 {
                Some(b"{not json".to_vec())
            } else if roll < 9 {
                Some(br#"{"uuid":"x","ts":"not a number","city":"sf"}"#.to_vec())
            } else {
                let ts = (i / 3) + (next() % 5) as i64; // older versions happen
                Some(
                    Trip {
                        uuid: uuid.clone(),
                        ts,
                        rider: format!("rider-{}", next() % 1000),
                        fare: (next() % 10_000) as f64 / 100.0,
                        city,
                        deleted: roll < 14,
                    }
                    .json(),
                )
            };
            out.push(Msg {
                topic: topic.to_string(),
                partition: p,
                offset,
                key: Some(uuid),
                value,
            });
        }
    }
    out
}

/// The model: the rules of docs/semantics.md applied per batch (fold in offset order, then merge with stored).
#[derive(Default, Debug, Clone)]
pub struct Model {
    pub rows: BTreeMap<String, Trip>,
    pub next_offset: BTreeMap<(String, i32), i64>,
    /// (topic, partition, offset) of every fresh record that must become a dead letter.
    pub dead: std::collections::BTreeSet<(String, i32, i64)>,
}

#[derive(Clone, Debug)]
enum Version {
    Tombstone,
    Row(Trip, bool), // forced
}

impl Model {
    /// Applies one delivered batch (records below the checkpoint are skipped, as the sink does).
    pub fn apply(&mut self, msgs: &[Msg]) {
        let fresh: Vec<&Msg> = msgs
            .iter()
            .filter(|m| {
                self.next_offset
                    .get(&(m.topic.clone(), m.partition))
                    .is_none_or(|n| m.offset >= *n)
            })
            .collect();
        let mut folded: BTreeMap<String, Version> = BTreeMap::new();
        let mut order = Vec::new();
        for m in &fresh {
            let Some(key) = &m.key else { continue };
            let version = match &m.value {
                None => Version::Tombstone,
                Some(v) => match serde_json::from_slice::<Value>(v) {
                    Ok(j) if j["ts"].is_i64() => Version::Row(
                        Trip {
                            uuid: j["uuid"].as_str().expect("uuid").to_string(),
                            ts: j["ts"].as_i64().expect("ts"),
                            rider: j["rider"].as_str().expect("rider").to_string(),
                            fare: j["fare"].as_f64().expect("fare"),
                            city: j["city"].as_str().expect("city").to_string(),
                            deleted: j["_hoodie_is_deleted"].as_bool().unwrap_or(false),
                        },
                        false,
                    ),
                    _ => {
                        self.dead.insert((m.topic.clone(), m.partition, m.offset));
                        continue;
                    }
                },
            };
            if !folded.contains_key(key) {
                order.push(key.clone());
            }
            let merged = match (folded.remove(key), version) {
                (_, Version::Tombstone) => Version::Tombstone,
                (Some(Version::Tombstone), Version::Row(t, _)) => Version::Row(t, true),
                (Some(Version::Row(cur, forced)), Version::Row(t, _)) => {
                    if t.ts >= cur.ts {
                        Version::Row(t, forced)
                    } else {
                        Version::Row(cur, forced)
                    }
                }
                (None, v) => v,
            };
            folded.insert(key.clone(), merged);
        }
        for key in order {
            match folded.remove(&key) {
                Some(Version::Tombstone) => {
                    self.rows.remove(&key);
                }
                Some(Version::Row(t, forced)) => {
                    let wins = forced || self.rows.get(&key).is_none_or(|s| t.ts >= s.ts);
                    if wins {
                        if t.deleted {
                            self.rows.remove(&key);
                        } else {
                            self.rows.insert(key, t);
                        }
                    }
                }
                None => {}
            }
        }
        for m in &fresh {
            let e = self
                .next_offset
                .entry((m.topic.clone(), m.partition))
                .or_insert(0);
            *e = (*e).max(m.offset + 1);
        }
    }

    /// Asserts that rows read by hudi-rs equal the model.
    pub fn assert_table(&self, read: &[serde_json::Map<String, Value>], what: &str) {
        if let Err(e) = self.check_json_rows(read) {
            panic!("{what}: {e}");
        }
    }

    /// Compares rows in the readers' JSON form (one object per row, with `_hoodie_record_key`) with the
    /// model: same key set, no duplicate key, every row equal.
    pub fn check_json_rows(&self, read: &[serde_json::Map<String, Value>]) -> Result<(), String> {
        let mut rows = Vec::new();
        for r in read {
            let text = |f: &str| r[f].as_str().map(str::to_string);
            let (Some(uuid), Some(ts), Some(rider), Some(fare), Some(city)) = (
                text("uuid"),
                r["ts"].as_i64(),
                text("rider"),
                r["fare"].as_f64(),
                text("city"),
            ) else {
                return Err(format!("row with a missing column: {r:?}"));
            };
            if r["_hoodie_record_key"].as_str() != Some(uuid.as_str()) {
                return Err(format!("record key differs from uuid in {r:?}"));
            }
            rows.push(Trip {
                uuid,
                ts,
                rider,
                fare,
                city,
                deleted: r["_hoodie_is_deleted"].as_bool().unwrap_or(false),
            });
        }
        self.check_rows(rows)
    }

    /// Compares `rows` (one per stored row) with the model, row for row.
    pub fn check_rows(&self, rows: Vec<Trip>) -> Result<(), String> {
        let mut actual = BTreeMap::new();
        for trip in rows {
            let uuid = trip.uuid.clone();
            if actual.insert(uuid.clone(), trip).is_some() {
                return Err(format!("duplicate key {uuid}"));
            }
        }
        let missing: Vec<&String> = self
            .rows
            .keys()
            .filter(|k| !actual.contains_key(*k))
            .collect();
        let extra: Vec<&String> = actual
            .keys()
            .filter(|k| !self.rows.contains_key(*k))
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            return Err(format!(
                "key sets differ: missing {missing:?}, unexpected {extra:?}"
            ));
        }
        for (k, t) in &self.rows {
            if &actual[k] != t {
                return Err(format!("row {k}: table {:?}, model {t:?}", actual[k]));
            }
        }
        Ok(())
    }
}

/// Properties of a local table with the embedded coordinator and file lock.
pub fn local_props(
    base: &Path,
    schema_file: &Path,
    dead_letters: &Path,
) -> BTreeMap<String, String> {
    [
        ("hoodie.table.name", "trips"),
        ("hoodie.database.name", "default"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "4"),
        ("hoodie.parquet.compression.codec", "snappy"),
        ("hoodie.write.lock.wait_time_ms", "20000"),
        ("hudi.sink.retry.backoff.ms", "5"),
        ("hudi.sink.commit.max.attempts", "50"),
        // Every writer of the table shares one instant per 100 ms window.
        ("hudi.sink.commit.interval.ms", "100"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([
        ("hoodie.base.path".to_string(), base.display().to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file".to_string(),
            schema_file.display().to_string(),
        ),
        (
            "hudi.sink.dead.letter.path".to_string(),
            dead_letters.display().to_string(),
        ),
    ])
    .collect()
}

/// Lines of every dead-letter file under `dir`.
pub fn dead_letter_lines(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for f in crate::common::all_files(dir) {
        let text = std::fs::read_to_string(&f).expect("dead letter file");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            out.push(serde_json::from_str(line).expect("dead letter JSON line"));
        }
    }
    out
}

/// Makes `props` (from [`local_props`]) describe a non-partitioned table.
pub fn non_partitioned(props: &mut BTreeMap<String, String>) {
    props.insert(
        "hoodie.datasource.write.partitionpath.field".into(),
        String::new(),
    );
    props.insert(
        "hoodie.datasource.write.keygenerator.class".into(),
        "org.apache.hudi.keygen.NonpartitionedKeyGenerator".into(),
    );
}
