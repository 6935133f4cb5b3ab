//! Benchmark driver: the cost of one upsert batch as the table grows, per table type, and of compaction as
//! file groups grow (`make bench-mor`, see `bench/mor_growth.py`, which drives it and puts the curves side
//! by side). `batch` and `compact` print one JSON object on stdout.
//!
//! ```text
//! bench_growth load  COPY_ON_WRITE|MERGE_ON_READ TABLE_DIR STORED_ROWS ROWS TS   add ROWS new keys
//! bench_growth batch COPY_ON_WRITE|MERGE_ON_READ TABLE_DIR STORED_ROWS ROWS TS   one timed upsert batch
//! bench_growth compact MERGE_ON_READ TABLE_DIR 0 0 0                            compact every group with logs
//! ```
//!
//! `BENCH_SINGLE_GROUP=1`: the table is one file group (non-partitioned, one bucket), so that `compact`
//! measures a file group of the table's whole size; `BENCH_NOTE_BYTES=n`: an incompressible text column of
//! about `n` bytes per row (default 38), for large file groups from fewer rows.
//!
//! The table: 16 buckets × 6 partitions, the trips schema with a precombine field. A `batch` is half updates
//! of random stored keys (with a larger ordering value `TS`), half new keys; it prints its wall time, the
//! bytes written (the instant's files), the rows written and the process's peak RSS (one process per batch:
//! opening the table and the batch). Rows are generated straight into Arrow (no JSON decoding), so the
//! figures are the writer's. Benchmarks only; nothing is asserted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::SystemClock;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::write::TableWriter;
use hudi_sink::write::{WriteConfig, WriteOperation};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SCHEMA: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
 {"name":"uuid","type":"string"},
 {"name":"ts","type":"long"},
 {"name":"rider","type":"string"},
 {"name":"driver","type":"string"},
 {"name":"fare","type":"double"},
 {"name":"begin_lat","type":"double"},
 {"name":"begin_lon","type":"double"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"city","type":"string"},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

const CITIES: [&str; 6] = [
    "san_francisco",
    "sao_paulo",
    "chennai",
    "amsterdam",
    "tokyo",
    "nairobi",
];

/// SplitMix64: deterministic rows for every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Rows for keys `ids` at ordering value `ts`, and their size as newline-delimited JSON (what the Kafka
/// payload of the batch would hold).
fn rows(ids: &[u64], ts: i64, rng: &mut Rng) -> Result<(RecordBatch, u64), BoxError> {
    let schema = hudi_sink::schema::arrow::avro_to_arrow(&AvroSchema::parse(SCHEMA)?)?;
    let uuid: Vec<String> = ids.iter().map(|i| format!("trip-{i:012}")).collect();
    let rider: Vec<String> = ids
        .iter()
        .map(|i| format!("rider-{:06}", i % 100_000))
        .collect();
    let driver: Vec<String> = ids
        .iter()
        .map(|_| format!("driver-{:06}", rng.below(100_000)))
        .collect();
    let fare: Vec<f64> = ids
        .iter()
        .map(|_| rng.below(10_000) as f64 / 100.0)
        .collect();
    let lat: Vec<f64> = ids
        .iter()
        .map(|_| rng.below(180_000) as f64 / 1000.0 - 90.0)
        .collect();
    let lon: Vec<f64> = ids
        .iter()
        .map(|_| rng.below(360_000) as f64 / 1000.0 - 180.0)
        .collect();
    // `BENCH_NOTE_BYTES`: a wider incompressible column, for large file groups from fewer rows.
    let note_words = std::env::var("BENCH_NOTE_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(2, |b| (b / 17).max(2));
    let note: Vec<String> = ids
        .iter()
        .map(|_| {
            let mut n = String::from("note");
            for _ in 0..note_words {
                n.push_str(&format!(" {:016x}", rng.next()));
            }
            n
        })
        .collect();
    let city: Vec<&str> = ids.iter().map(|i| CITIES[(*i % 6) as usize]).collect();
    let json_bytes: u64 = (0..ids.len())
        .map(|r| {
            // {"uuid":"…","ts":…,"rider":"…","driver":"…","fare":…,"begin_lat":…,"begin_lon":…,"note":"…","city":"…"}
            (95 + uuid[r].len()
                + 19
                + rider[r].len()
                + driver[r].len()
                + 3 * 8
                + note[r].len()
                + city[r].len()) as u64
        })
        .sum();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(uuid)),
        Arc::new(Int64Array::from(vec![ts; ids.len()])),
        Arc::new(StringArray::from(rider)),
        Arc::new(StringArray::from(driver)),
        Arc::new(Float64Array::from(fare)),
        Arc::new(Float64Array::from(lat)),
        Arc::new(Float64Array::from(lon)),
        Arc::new(StringArray::from(note)),
        Arc::new(StringArray::from(city)),
        Arc::new(BooleanArray::from(vec![Some(false); ids.len()])),
    ];
    Ok((RecordBatch::try_new(Arc::new(schema), columns)?, json_bytes))
}

/// Peak resident set size of this process, in bytes (Linux `VmHWM`).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

async fn open(table_type: &str, table: &Path) -> Result<TableWriter, BoxError> {
    let single = std::env::var("BENCH_SINGLE_GROUP").is_ok_and(|v| v == "1");
    let buckets = if single { "1" } else { "16" };
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.table.type", table_type),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", buckets),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), table.display().to_string())])
    .chain((!single).then(|| {
        (
            "hoodie.datasource.write.partitionpath.field".to_string(),
            "city".to_string(),
        )
    }))
    .collect();
    std::fs::create_dir_all(table)?;
    Ok(TableWriter::create_or_open(
        Arc::new(LocalStorage::new(table)),
        Arc::new(SystemClock),
        WriteConfig::from_properties(props)?,
        Some(AvroSchema::parse(SCHEMA)?),
    )
    .await?)
}

/// `load`: `rows` new keys from `stored` on, in upsert batches of at most 500,000 rows.
async fn load(
    writer: &TableWriter,
    stored: u64,
    rows_to_add: u64,
    ts: i64,
) -> Result<(), BoxError> {
    let mut rng = Rng(stored ^ 0xA5A5);
    let target = stored + rows_to_add;
    let mut next = stored;
    while next < target {
        let n = (target - next).min(500_000);
        let ids: Vec<u64> = (next..next + n).collect();
        let (batch, _) = rows(&ids, ts, &mut rng)?;
        writer
            .write_with(WriteOperation::Upsert, &[batch], BTreeMap::new())
            .await?;
        next += n;
    }
    Ok(())
}

/// `batch`: one upsert batch of `batch_rows` rows, half updates of random keys below `stored`, half new
/// keys from `stored` on, timed; the process's peak RSS covers opening the table and this one batch.
async fn batch(
    writer: &TableWriter,
    table_type: &str,
    stored: u64,
    batch_rows: u64,
    ts: i64,
) -> Result<serde_json::Value, BoxError> {
    let mut rng = Rng(stored ^ ts as u64);
    let mut ids: Vec<u64> = (0..batch_rows / 2).map(|_| rng.below(stored)).collect();
    ids.sort_unstable();
    ids.dedup();
    let updates = ids.len() as u64;
    ids.extend(stored..stored + (batch_rows - updates));
    let (batch, json_bytes) = rows(&ids, ts, &mut rng)?;
    let started = Instant::now();
    let result = writer
        .write_with(WriteOperation::Upsert, &[batch], BTreeMap::new())
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    let stats: Vec<_> = result
        .commit
        .partition_to_write_stats
        .values()
        .flatten()
        .collect();
    let bytes_written: i64 = stats.iter().map(|s| s.file_size_in_bytes).sum();
    let rows_written: i64 = stats.iter().map(|s| s.num_writes).sum();
    Ok(serde_json::json!({
        "table_type": table_type, "table_rows": stored, "batch_rows": ids.len(),
        "new_rows": batch_rows - updates, "batch_json_bytes": json_bytes, "seconds": seconds,
        "bytes_written": bytes_written, "rows_written": rows_written, "files_written": stats.len(),
        "bytes_written_per_batch_byte": bytes_written as f64 / json_bytes as f64,
        "peak_rss_mb": peak_rss_bytes() as f64 / 1048576.0,
    }))
}

/// `compact`: one compaction of every file group with committed logs, timed; the process's peak RSS covers
/// opening the table and the compaction.
async fn compact(table: &Path) -> Result<serde_json::Value, BoxError> {
    use hudi_sink::lock::memory::MemoryLock;
    use hudi_sink::lock::{LeaseOptions, Lock};
    use hudi_sink::services::{ServiceContext, ServicesConfig};
    let storage = LocalStorage::new(table);
    let lock = MemoryLock::new(
        "bench",
        LeaseOptions::hudi(std::time::Duration::from_secs(600)),
    );
    let guard = lock.acquire(std::time::Duration::from_secs(1)).await?;
    let config = ServicesConfig {
        compact_max_delta_commits: 1,
        compaction_max_file_groups: u32::MAX,
        ..ServicesConfig::default()
    };
    let clock = SystemClock;
    let ctx = ServiceContext {
        storage: &storage,
        guard: &guard,
        clock: &clock,
        config: &config,
    };
    let timeline = hudi_sink::table::timeline::Timeline::load(&storage).await?;
    let (base_bytes, log_bytes) = file_bytes(table)?;
    let started = Instant::now();
    let options = hudi_sink::base_file::writer::BaseFileOptions::default();
    let report = hudi_sink::services::compact::compact(&ctx, &timeline, None, &options).await?;
    let seconds = started.elapsed().as_secs_f64();
    let commit = match &report {
        Some(r) => {
            let t = hudi_sink::table::timeline::Timeline::load(&storage).await?;
            let instant = t
                .completed_commits()
                .into_iter()
                .find(|i| i.time == r.instant)
                .cloned()
                .ok_or("compaction commit not found")?;
            Some(t.commit_metadata(&storage, &instant).await?)
        }
        None => None,
    };
    let rows: i64 = commit
        .iter()
        .flat_map(|c| c.write_stats())
        .map(|s| s.num_writes)
        .sum();
    let written: i64 = commit
        .iter()
        .flat_map(|c| c.write_stats())
        .map(|s| s.file_size_in_bytes)
        .sum();
    guard.release().await?;
    Ok(serde_json::json!({
        "file_groups": report.as_ref().map_or(0, |r| r.file_groups),
        "log_files": report.as_ref().map_or(0, |r| r.log_files),
        "base_bytes_before": base_bytes, "log_bytes_before": log_bytes, "rows_written": rows,
        "bytes_written": written, "seconds": seconds,
        "rows_per_s": rows as f64 / seconds, "mb_read_per_s": (base_bytes + log_bytes) as f64 / 1e6 / seconds,
        "peak_rss_mb": peak_rss_bytes() as f64 / 1048576.0,
    }))
}

/// Bytes of base files and of log files in the table.
fn file_bytes(table: &Path) -> Result<(u64, u64), BoxError> {
    let (mut base, mut logs) = (0, 0);
    let mut dirs = vec![table.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            if entry.file_type()?.is_dir() {
                if name != ".hoodie" {
                    dirs.push(entry.path());
                }
            } else if name.ends_with(".parquet") {
                base += entry.metadata()?.len();
            } else if name.contains(".log.") {
                logs += entry.metadata()?.len();
            }
        }
    }
    Ok((base, logs))
}

async fn run(args: &[String]) -> Result<(), BoxError> {
    let usage =
        "usage: bench_growth load|batch|compact COPY_ON_WRITE|MERGE_ON_READ TABLE_DIR STORED_ROWS ROWS TS";
    let [mode, table_type, table, stored, n, ts] = args else {
        return Err(usage.into());
    };
    if mode == "compact" {
        println!("{}", compact(Path::new(table)).await?);
        return Ok(());
    }
    let (stored, n, ts): (u64, u64, i64) = (stored.parse()?, n.parse()?, ts.parse()?);
    let writer = open(table_type, Path::new(table)).await?;
    match mode.as_str() {
        "load" => load(&writer, stored, n, ts).await,
        "batch" => {
            println!("{}", batch(&writer, table_type, stored, n, ts).await?);
            Ok(())
        }
        _ => Err(usage.into()),
    }
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(&args))
}
