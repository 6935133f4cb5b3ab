//! The `generate` command: synthetic ESM event files, and optionally the table they must produce.

use std::path::PathBuf;

use clap::ValueEnum;
use hudi_sink::generate::{
    event_file_name, generate, GenerateOptions, GenerateReport, SchemaKind, SourceKind,
    DEFAULT_MODEL_BATCH_BYTES, DEFAULT_START_MS, MAX_PAYLOAD_BYTES,
};

use crate::ingest::{human_bytes, BoxError};

/// Value schema on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum Schema {
    /// `events/schema/trips.avsc`: uuid, ts (ms), rider, fare, city (use with examples/local.properties).
    Trips,
    /// `events/schema/bench.avsc`: 14 mixed columns with a nested record (use with examples/bench.properties).
    Bench,
}

/// Event source on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum Source {
    /// Amazon MSK (`eventSource` = `aws:kafka`).
    Msk,
    /// Self-managed Kafka (`eventSource` = `SelfManagedKafka`).
    SelfManaged,
}

/// `hudi-sink generate` options.
#[derive(clap::Args)]
#[command(
    after_help = "Ratios are shares of all records; inserts of fresh keys take the rest. Keys are owned by one Kafka \
                  partition and keep their partition-path value. Files are cut at --records-per-file records or \
                  before --max-payload-bytes, whichever comes first. The same options always give the same files."
)]
pub struct Args {
    /// Output directory (created; must hold no events-*.json yet). Files: events-00000.json, events-00001.json, …
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Kafka records in all, tombstones included.
    #[arg(long, default_value_t = 10_000)]
    records: u64,
    /// Kafka partitions of the topic.
    #[arg(long, default_value_t = 4)]
    partitions: u32,
    /// Distinct keys at most (then inserts become updates) [default: no limit].
    #[arg(long)]
    keys: Option<u64>,
    /// Share of records that update an existing key.
    #[arg(long, default_value_t = 0.3)]
    update_ratio: f64,
    /// Share of records that delete an existing key.
    #[arg(long, default_value_t = 0.1)]
    delete_ratio: f64,
    /// Share of the deletes sent as Kafka tombstones (null value); the rest carry `_hoodie_is_deleted: true`.
    #[arg(long, default_value_t = 0.5)]
    tombstone_ratio: f64,
    /// Share of records whose ordering value lags by up to 30 s (late events).
    #[arg(long, default_value_t = 0.1)]
    late_ratio: f64,
    /// Records per file at most (the ESM's BatchSize, 1-10000).
    #[arg(long, default_value_t = 1_000)]
    records_per_file: usize,
    /// Bytes per file at most (Lambda's payload limit is 6 MB).
    #[arg(long, default_value_t = MAX_PAYLOAD_BYTES)]
    max_payload_bytes: usize,
    /// Value schema.
    #[arg(long, value_enum, default_value = "trips")]
    schema: Schema,
    /// Event source mapping to imitate.
    #[arg(long, value_enum, default_value = "msk")]
    source: Source,
    /// Topic name [default: the schema's name].
    #[arg(long)]
    topic: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Kafka timestamp of the first record, epoch milliseconds (each later record is 1 ms later).
    #[arg(long, default_value_t = DEFAULT_START_MS)]
    start_ms: i64,
    /// Also write the rows the table must hold after ingesting every file, as JSON lines in key order.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// The model folds consecutive files into one batch up to this many bytes, as `ingest` does under the
    /// interval commit (its `--max-batch-bytes`); 0 for one batch per file (`ingest --commit-interval-ms 0`).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MODEL_BATCH_BYTES)]
    model_batch_bytes: u64,
}

/// Writes the files and prints what they hold.
pub fn run(args: Args) -> Result<(), BoxError> {
    let opts = GenerateOptions {
        records: args.records,
        partitions: args.partitions,
        keys: args.keys,
        update_ratio: args.update_ratio,
        delete_ratio: args.delete_ratio,
        tombstone_ratio: args.tombstone_ratio,
        late_ratio: args.late_ratio,
        records_per_file: args.records_per_file,
        max_payload_bytes: args.max_payload_bytes,
        schema: match args.schema {
            Schema::Trips => SchemaKind::Trips,
            Schema::Bench => SchemaKind::Bench,
        },
        source: match args.source {
            Source::Msk => SourceKind::Msk,
            Source::SelfManaged => SourceKind::SelfManaged,
        },
        topic: args.topic,
        seed: args.seed,
        start_ms: args.start_ms,
        model_batch_bytes: args.model_batch_bytes,
    };
    let topic = opts.topic().to_string();
    let started = std::time::Instant::now();
    let report = generate(opts, &args.out, args.model.as_deref(), &mut |_| {})?;
    print_report(
        &report,
        &args.out,
        &topic,
        args.partitions,
        started.elapsed(),
    );
    if let Some(model) = &args.model {
        println!(
            "model: {} rows the table must hold -> {}",
            report.live_rows,
            model.display()
        );
    }
    Ok(())
}

fn print_report(
    r: &GenerateReport,
    out: &std::path::Path,
    topic: &str,
    partitions: u32,
    elapsed: std::time::Duration,
) {
    let last = r
        .files
        .checked_sub(1)
        .map(event_file_name)
        .unwrap_or_default();
    println!(
        "wrote {} event files ({} .. {}) to {}: {} in {:.1} s, largest file {}",
        r.files,
        event_file_name(0),
        last,
        out.display(),
        human_bytes(r.bytes),
        elapsed.as_secs_f64(),
        human_bytes(r.max_file_bytes),
    );
    println!(
        "records {} = inserts {} + updates {} + _hoodie_is_deleted {} + tombstones {}; {} keys on topic {topic} \
         ({partitions} partitions)",
        r.records, r.inserts, r.updates, r.deletes, r.tombstones, r.keys
    );
}
