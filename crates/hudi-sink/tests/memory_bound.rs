//! Peak heap of one invocation with a 6 MB payload, whatever the payload holds.
//!
//! A counting global allocator (this binary only) records the high-water mark of live heap bytes while one
//! ESM payload is parsed and written through `KafkaSink::process` into a local table. Each adversarial shape
//! must stay under [`BOUND_FACTOR`] × the payload size above the heap in use before the invocation. The bound
//! is generous on purpose (a Lambda function has at least 128 MB per 6 MB payload); what it catches is
//! memory that grows faster than the input: a quadratic index, a copy per record of something batch-sized,
//! a JSON tree per record. Each shape prints its figure, for docs/reliability.md.
//!
//! Memory only: nothing here measures or asserts time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hudi_sink::bootstrap::build_sink;
use hudi_sink::sink::{KafkaSink, SinkReport};
use hudi_sink::source::event::KafkaBatch;
use serde_json::{json, Value};

/// Live heap may grow by at most this many times the payload size during one invocation.
const BOUND_FACTOR: usize = 16;
/// The ESM's synchronous-invocation payload limit.
const PAYLOAD_LIMIT: usize = 6 * 1024 * 1024;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SCHEMA: &str = r#"{"type":"record","name":"m_record","namespace":"hoodie.m","fields":[
 {"name":"id","type":"string"},
 {"name":"ts","type":"long"},
 {"name":"region","type":"string"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"x","type":["null",{"type":"array","items":"long"}],"default":null}]}"#;

fn props(dir: &Path, buckets: u32) -> BTreeMap<String, String> {
    let schema = dir.join("m.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    [
        ("hoodie.table.name", "m".to_string()),
        ("hoodie.datasource.write.recordkey.field", "id".into()),
        (
            "hoodie.datasource.write.partitionpath.field",
            "region".into(),
        ),
        ("hoodie.datasource.write.precombine.field", "ts".into()),
        ("hoodie.datasource.write.operation", "upsert".into()),
        ("hoodie.index.type", "BUCKET".into()),
        ("hoodie.bucket.index.num.buckets", buckets.to_string()),
        ("hoodie.parquet.compression.codec", "snappy".into()),
        ("hoodie.base.path", dir.join("table").display().to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            schema.display().to_string(),
        ),
        (
            "hudi.sink.dead.letter.path",
            dir.join("dead-letters").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// An `aws:kafka` payload of `(key, value)` records (value `None` = tombstone) on one partition, offsets from
/// `first_offset`.
fn payload(records: &[(Option<String>, Option<Vec<u8>>)], first_offset: i64) -> Vec<u8> {
    let list: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            json!({
                "topic": "m", "partition": 0, "offset": first_offset + i as i64, "timestamp": 1,
                "key": k.as_ref().map(|k| STANDARD.encode(k)),
                "value": v.as_ref().map(|v| STANDARD.encode(v)),
                "headers": [],
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/m/1",
        "records": { "m-0": list },
    }))
    .expect("payload")
}

/// Adds records made by `make(i)` while the payload stays under the limit.
fn fill(
    first_offset: i64,
    mut make: impl FnMut(usize) -> (Option<String>, Option<Vec<u8>>),
) -> Vec<u8> {
    let mut records = Vec::new();
    // Estimate the size per record from a sample, then fill to ~97% of the limit and check.
    let sample: Vec<_> = (0..100).map(&mut make).collect();
    let per_record =
        (payload(&sample, first_offset).len() - payload(&[], first_offset).len()) / 100;
    let n = (PAYLOAD_LIMIT * 97 / 100) / per_record.max(1);
    for i in 0..n.max(1) {
        records.push(make(i));
    }
    let mut bytes = payload(&records, first_offset);
    while bytes.len() > PAYLOAD_LIMIT && records.len() > 1 {
        records.truncate(records.len() * 95 / 100);
        bytes = payload(&records, first_offset);
    }
    bytes
}

fn row(id: &str, ts: i64, region: &str, note: Option<&str>) -> Vec<u8> {
    serde_json::to_vec(&json!({"id": id, "ts": ts, "region": region, "note": note})).expect("row")
}

/// `2^n` distinct keys with one Java `String.hashCode` ("Aa" and "BB" hash alike), so all share a bucket.
fn colliding_keys(n: u32) -> Vec<String> {
    (0..1u32 << n)
        .map(|bits| {
            (0..n)
                .map(|b| if bits >> b & 1 == 1 { "BB" } else { "Aa" })
                .collect()
        })
        .collect()
}

/// Parses and processes one payload; returns the report and the peak heap growth above the level before.
async fn measure(sink: &KafkaSink, bytes: Vec<u8>) -> (SinkReport, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let batch = KafkaBatch::from_slice(&bytes).expect("valid payload");
    drop(bytes);
    let report = sink.process(batch).await.expect("process");
    let peak = PEAK.load(Ordering::Relaxed);
    (report, peak.saturating_sub(before))
}

struct Shape {
    name: &'static str,
    /// Buckets of the table.
    buckets: u32,
    /// Payloads processed before the measured one (to have stored rows to merge into or delete).
    before: Vec<Vec<u8>>,
    measured: Vec<u8>,
}

fn shapes() -> Vec<Shape> {
    let huge_note = "0123456789abcdef".repeat(4_500_000 / 16);
    let deep = format!("{}{}", "[".repeat(63), "]".repeat(63));
    let colliding = colliding_keys(15);
    let write_colliding = {
        let keys = colliding.clone();
        fill(0, move |i| {
            let k = &keys[i % keys.len()];
            (Some(k.clone()), Some(row(k, 1, "eu", None)))
        })
    };
    vec![
        Shape {
            name: "many tiny records",
            buckets: 16,
            before: vec![],
            measured: fill(0, |i| {
                let id = format!("t{i}");
                (Some(id.clone()), Some(row(&id, 1, "eu", None)))
            }),
        },
        Shape {
            name: "one huge record",
            buckets: 16,
            before: vec![],
            measured: payload(
                &[(Some("h".into()), Some(row("h", 1, "eu", Some(&huge_note))))],
                0,
            ),
        },
        Shape {
            name: "keys all in one bucket (Java hash collisions), upsert into stored rows",
            buckets: 256,
            before: vec![write_colliding],
            measured: {
                let keys = colliding.clone();
                fill(1_000_000, move |i| {
                    let k = &keys[i % keys.len()];
                    (Some(k.clone()), Some(row(k, 2, "eu", None)))
                })
            },
        },
        Shape {
            name: "tombstones all in one bucket",
            buckets: 256,
            before: vec![{
                let keys = colliding.clone();
                fill(0, move |i| {
                    let k = &keys[i % keys.len()];
                    (Some(k.clone()), Some(row(k, 1, "eu", None)))
                })
            }],
            measured: {
                let keys = colliding;
                fill(1_000_000, move |i| {
                    (Some(keys[i % keys.len()].clone()), None)
                })
            },
        },
        Shape {
            name: "deep nesting (63 levels accepted, 50,000 refused)",
            buckets: 16,
            before: vec![],
            measured: fill(0, |i| {
                let id = format!("d{i}");
                let value = if i % 50 == 0 {
                    format!(
                        r#"{{"id":"{id}","ts":1,"region":"eu","y":{}{}}}"#,
                        "[".repeat(50_000),
                        "]".repeat(50_000)
                    )
                } else {
                    format!(r#"{{"id":"{id}","ts":1,"region":"eu","y":{deep}}}"#)
                };
                (Some(id), Some(value.into_bytes()))
            }),
        },
        Shape {
            name: "many distinct partitions",
            buckets: 1,
            before: vec![],
            measured: fill(0, |i| {
                let id = format!("p{i}");
                let note = "n".repeat(1000);
                (
                    Some(id.clone()),
                    Some(row(&id, 1, &format!("r{i}"), Some(&note))),
                )
            }),
        },
        Shape {
            name: "every record a dead letter",
            buckets: 16,
            before: vec![],
            measured: fill(0, |i| {
                (Some(format!("x{i}")), Some(b"{not json at all".to_vec()))
            }),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peak_heap_stays_within_a_multiple_of_the_payload() {
    let mut failures = Vec::new();
    for shape in shapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sink = build_sink(&props(dir.path(), shape.buckets), "mem")
            .await
            .expect("sink");
        for bytes in shape.before {
            let batch = KafkaBatch::from_slice(&bytes).expect("valid payload");
            let report = sink.process(batch).await.expect("process");
            assert!(report.balanced(), "{}: {report:?}", shape.name);
        }
        let size = shape.measured.len();
        assert!(size <= PAYLOAD_LIMIT, "{}: {size} bytes", shape.name);
        let (report, peak) = measure(&sink, shape.measured).await;
        assert!(report.balanced(), "{}: {report:?}", shape.name);
        assert!(report.records_in > 0);
        eprintln!(
            "memory: {:<72} payload {:>5.2} MB, {:>6} records, peak heap growth {:>6.1} MB = {:>4.1} x payload",
            shape.name,
            size as f64 / 1e6,
            report.records_in,
            peak as f64 / 1e6,
            peak as f64 / size as f64
        );
        if peak > BOUND_FACTOR * size {
            failures.push(format!(
                "{}: peak heap growth {peak} bytes > {BOUND_FACTOR} x {size}",
                shape.name
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
