//! Benchmark driver of the writer core (`make bench`, see `bench/run.py`): ESM event files → Hudi base
//! files on the local file system, single-threaded, in this process. Prints one JSON object on stdout.
//!
//! ```text
//! bench_writer insert   PROPERTIES TABLE_DIR EVENT_FILE...   one insert instant per event file (no index)
//! bench_writer upsert   PROPERTIES TABLE_DIR EVENT_FILE...   bucket index: one instant loading every file, then
//!                                                            one instant of updates (every 10th file again)
//!                                                            merged into the existing bucket file groups
//! bench_writer insert-avro PROPERTIES TABLE_DIR EVENT_FILE... as insert, the values Confluent-framed Avro of the
//!                                                            table schema (`bench/avro_events.py`), read with
//!                                                            a plan compiled once (a registry cache hit)
//! ```
//!
//! Timed per file: reading the event file, envelope parsing and base64 (`KafkaBatch::from_slice`), JSON decoding
//! straight into Arrow builders, record keys, partition paths, meta columns, bloom filters, Parquet encoding and
//! the instant (begin, markers, files, commit) through [`TableWriter`]. No coordinator, no lock: those are in the
//! whole-process comparison (`hudi-sink ingest`). Benchmarks only; nothing is asserted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use hudi_sink::bootstrap::{load_properties, load_schema};
use hudi_sink::clock::SystemClock;
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::source::event::{KafkaBatch, Payload};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::write::TableWriter;
use hudi_sink::write::{WriteConfig, WriteOperation};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Peak resident set size of this process so far, in bytes (Linux `VmHWM`).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Decoded records of one event file and the bytes of JSON they held.
struct Decoded {
    batch: RecordBatch,
    records: u64,
    json_bytes: u64,
    /// Seconds reading the file, parsing the envelope and base64.
    envelope_s: f64,
    /// Seconds decoding the values into Arrow.
    values_s: f64,
}

fn decode_file(writer: &TableWriter, path: &Path, avro: bool) -> Result<Decoded, BoxError> {
    let started = Instant::now();
    let bytes = std::fs::read(path)?;
    let batch = KafkaBatch::from_slice(&bytes)?;
    drop(bytes);
    let envelope_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let schema = writer.schema();
    let mut decoder = RecordDecoder::try_new(schema.data.clone(), &schema.avro)?;
    let plan = if avro {
        Some(decoder.compile_avro(&schema.avro)?)
    } else {
        None
    };
    let mut json_bytes = 0u64;
    for record in &batch.records {
        if let Payload::Value(v) = record.payload() {
            json_bytes += v.len() as u64;
            match &plan {
                Some(plan) => {
                    let framed = hudi_sink::registry::unframe(v)?;
                    decoder.append_avro(plan, &framed.body)?
                }
                None => decoder.append(v)?,
            }
        }
    }
    let records = batch.len() as u64;
    let batch = decoder.finish()?;
    Ok(Decoded {
        batch,
        records,
        json_bytes,
        envelope_s,
        values_s: started.elapsed().as_secs_f64(),
    })
}

async fn open(props: &Path, table: &Path, operation: &str) -> Result<TableWriter, BoxError> {
    let mut p: BTreeMap<String, String> = load_properties(&props.display().to_string()).await?;
    p.insert("hoodie.base.path".into(), table.display().to_string());
    p.insert("hoodie.datasource.write.operation".into(), operation.into());
    if operation == "insert" {
        p.remove("hoodie.index.type");
        p.remove("hoodie.bucket.index.num.buckets");
    }
    p.retain(|k, _| !k.starts_with("hudi.sink."));
    let config = WriteConfig::from_properties(p)?;
    let schema = load_schema(&config).await?;
    std::fs::create_dir_all(table)?;
    let storage = Arc::new(LocalStorage::new(table));
    Ok(TableWriter::create_or_open(storage, Arc::new(SystemClock), config, schema).await?)
}

async fn insert(
    props: &Path,
    table: &Path,
    files: &[PathBuf],
    avro: bool,
) -> Result<serde_json::Value, BoxError> {
    let writer = open(props, table, "insert").await?;
    let (mut records, mut json_bytes, mut out_bytes, mut out_files) = (0u64, 0u64, 0u64, 0u64);
    let (mut envelope_s, mut values_s) = (0f64, 0f64);
    let started = Instant::now();
    for path in files {
        let d = decode_file(&writer, path, avro)?;
        records += d.records;
        json_bytes += d.json_bytes;
        envelope_s += d.envelope_s;
        values_s += d.values_s;
        let result = writer
            .write_with(WriteOperation::Insert, &[d.batch], BTreeMap::new())
            .await?;
        for stat in result.commit.partition_to_write_stats.values().flatten() {
            out_bytes += stat.file_size_in_bytes.max(0) as u64;
            out_files += 1;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "mode": if avro { "insert-avro" } else { "insert" }, "event_files": files.len(), "records": records,
        "json_bytes": json_bytes,
        "seconds": secs, "records_per_s": records as f64 / secs, "json_mb_per_s": json_bytes as f64 / 1e6 / secs,
        "envelope_seconds": envelope_s, "values_seconds": values_s, "write_seconds": secs - envelope_s - values_s,
        "parquet_bytes": out_bytes, "parquet_files": out_files, "peak_rss_mb": peak_rss_bytes() as f64 / 1048576.0,
    }))
}

async fn upsert(
    props: &Path,
    table: &Path,
    files: &[PathBuf],
) -> Result<serde_json::Value, BoxError> {
    let writer = open(props, table, "upsert").await?;
    // Pass 1: every file, one instant (creates the bucket file groups).
    let started = Instant::now();
    let (mut records, mut batches) = (0u64, Vec::new());
    for path in files {
        let d = decode_file(&writer, path, false)?;
        records += d.records;
        batches.push(d.batch);
    }
    let load = writer
        .write_with(WriteOperation::Upsert, &batches, BTreeMap::new())
        .await?;
    let load_secs = started.elapsed().as_secs_f64();
    drop(batches);
    // Pass 2: every 10th file again (same keys and ordering values: each record updates its stored row),
    // merged into the existing file groups; the other rows of each group are kept as they are.
    let started = Instant::now();
    let (mut updates, mut json_bytes, mut batches) = (0u64, 0u64, Vec::new());
    for path in files.iter().step_by(10) {
        let d = decode_file(&writer, path, false)?;
        updates += d.records;
        json_bytes += d.json_bytes;
        batches.push(d.batch);
    }
    let merge = writer
        .write_with(WriteOperation::Upsert, &batches, BTreeMap::new())
        .await?;
    let merge_secs = started.elapsed().as_secs_f64();
    let rewritten: i64 = merge
        .commit
        .partition_to_write_stats
        .values()
        .flatten()
        .map(|s| s.num_writes)
        .sum();
    Ok(serde_json::json!({
        "mode": "upsert", "load_records": records, "load_seconds": load_secs,
        "load_records_per_s": records as f64 / load_secs, "load_inserted": load.counts.inserted,
        "update_records": updates, "update_json_bytes": json_bytes, "update_seconds": merge_secs,
        "update_records_per_s": updates as f64 / merge_secs, "updated": merge.counts.updated,
        "rows_rewritten": rewritten, "rows_rewritten_per_s": rewritten as f64 / merge_secs,
        "peak_rss_mb": peak_rss_bytes() as f64 / 1048576.0,
    }))
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, props, table, events @ ..] = args.as_slice() else {
        return Err(
            "usage: bench_writer insert|insert-avro|upsert PROPERTIES TABLE_DIR EVENT_FILE..."
                .into(),
        );
    };
    let files: Vec<PathBuf> = events.iter().map(PathBuf::from).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (props, table) = (Path::new(props), Path::new(table));
    let report = runtime.block_on(async {
        match mode.as_str() {
            "insert" => insert(props, table, &files, false).await,
            "insert-avro" => insert(props, table, &files, true).await,
            "upsert" => upsert(props, table, &files).await,
            other => Err(format!("unknown mode {other:?}").into()),
        }
    })?;
    println!("{report}");
    Ok(())
}
