//! Benchmark driver: the cost of one upsert batch as the table grows, for one table type (`make bench-mor`,
//! see `bench/mor_growth.py`, which runs it once per table type and puts the curves side by side). Prints
//! one JSON object per measured batch, then a summary, on stdout.
//!
//! ```text
//! bench_growth COPY_ON_WRITE|MERGE_ON_READ TABLE_DIR LEVELS LOAD_ROWS BATCH_ROWS BATCHES_PER_LEVEL
//! ```
//!
//! The table (16 buckets × 6 partitions, the trips schema with a precombine field) grows by `LOAD_ROWS` new
//! keys per level, `LEVELS` times; at every level `BATCHES_PER_LEVEL` upsert batches of `BATCH_ROWS` rows
//! (half updates of random stored keys with a larger ordering value, half new keys) are timed one by one:
//! wall time, bytes written (the files of the instant) and the process's peak RSS during that batch (the
//! high-water mark is reset before each batch through `/proc/self/clear_refs`). Rows are generated straight
//! into Arrow (no JSON decoding), so the figures are the writer's. Benchmarks only; nothing is asserted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::SystemClock;
use hudi_sink::config::write_config::{WriteConfig, WriteOperation};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::write::TableWriter;

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
    let note: Vec<String> = ids
        .iter()
        .map(|_| format!("note {:016x} {:016x}", rng.next(), rng.next()))
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

/// Peak resident set size since the last [`reset_peak_rss`], in bytes (Linux `VmHWM`).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resets the peak RSS to the current RSS (writing 5 to `clear_refs`, Linux ≥ 4.0).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

async fn open(table_type: &str, table: &Path) -> Result<TableWriter, BoxError> {
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.table.type", table_type),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "16"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), table.display().to_string())])
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

async fn run(args: &[String]) -> Result<(), BoxError> {
    let [table_type, table, levels, load_rows, batch_rows, per_level] = args else {
        return Err("usage: bench_growth COPY_ON_WRITE|MERGE_ON_READ TABLE_DIR LEVELS LOAD_ROWS BATCH_ROWS BATCHES_PER_LEVEL".into());
    };
    let (levels, load_rows, batch_rows, per_level): (u64, u64, u64, u64) = (
        levels.parse()?,
        load_rows.parse()?,
        batch_rows.parse()?,
        per_level.parse()?,
    );
    let writer = open(table_type, Path::new(table)).await?;
    let mut rng = Rng(42);
    let mut stored = 0u64;
    let mut ts = 1i64;
    let mut batch_no = 0u64;
    for level in 0..levels {
        // Grow: LOAD_ROWS new keys in batches of at most 500,000 rows.
        let target = stored + load_rows;
        while stored < target {
            let n = (target - stored).min(500_000);
            let ids: Vec<u64> = (stored..stored + n).collect();
            let (batch, _) = rows(&ids, ts, &mut rng)?;
            writer
                .write_with(WriteOperation::Upsert, &[batch], BTreeMap::new())
                .await?;
            stored += n;
        }
        for _ in 0..per_level {
            ts += 1;
            let half = batch_rows / 2;
            let mut ids: Vec<u64> = (0..half).map(|_| rng.below(stored)).collect();
            ids.sort_unstable();
            ids.dedup();
            let updates = ids.len() as u64;
            ids.extend(stored..stored + (batch_rows - updates));
            let (batch, json_bytes) = rows(&ids, ts, &mut rng)?;
            reset_peak_rss();
            let started = Instant::now();
            let result = writer
                .write_with(WriteOperation::Upsert, &[batch], BTreeMap::new())
                .await?;
            let seconds = started.elapsed().as_secs_f64();
            let peak = peak_rss_bytes();
            stored += batch_rows - updates;
            let stats: Vec<_> = result
                .commit
                .partition_to_write_stats
                .values()
                .flatten()
                .collect();
            let bytes_written: i64 = stats.iter().map(|s| s.file_size_in_bytes).sum();
            let rows_written: i64 = stats.iter().map(|s| s.num_writes).sum();
            println!(
                "{}",
                serde_json::json!({
                    "table_type": table_type, "level": level, "batch": batch_no, "table_rows": stored,
                    "batch_rows": ids.len(), "batch_json_bytes": json_bytes, "seconds": seconds,
                    "bytes_written": bytes_written, "rows_written": rows_written, "files_written": stats.len(),
                    "bytes_written_per_batch_byte": bytes_written as f64 / json_bytes as f64,
                    "peak_rss_mb": peak as f64 / 1048576.0,
                })
            );
            batch_no += 1;
        }
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(&args))
}
