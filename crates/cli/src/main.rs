//! `hudi-sink`: run msk-hudi-sink on a laptop and inspect the tables it writes.

mod generate;
mod ingest;
mod show;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hudi-sink",
    version,
    about = "Kafka -> Apache Hudi (v6 copy-on-write) sink",
    after_help = "Try it:  hudi-sink generate --out target/demo/events --records 5000 --model target/demo/expected.jsonl\n         \
                  hudi-sink ingest --config examples/local.properties target/demo/events\n         \
                  hudi-sink show --table target/ingest/trips"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write synthetic ESM event files (inserts, updates, deletes, tombstones) for demos, tests and benchmarks.
    Generate(generate::Args),
    /// Process ESM event files (one invocation payload each, in order) exactly as the writer Lambda does:
    /// embedded coordinator and file lock unless the configuration names AWS ones.
    Ingest {
        /// Table properties (Hudi keys plus `hudi.sink.*`), local path or `s3://`.
        #[arg(long)]
        config: String,
        /// Override or add a property (repeatable), e.g. `--set hoodie.base.path=/tmp/trips`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Print one JSON report per event file and a JSON total on stdout (the summary goes to stderr).
        #[arg(long)]
        json: bool,
        /// Also write one JSON line per processed event file to FILE: `event_file`, `ms` (wall time of reading,
        /// decoding and processing it) and `report`; flushed line by line, so a long run can be watched.
        #[arg(long, value_name = "FILE")]
        report_jsonl: Option<PathBuf>,
        /// Event files (`aws:kafka` or `SelfManagedKafka` payloads); a directory stands for its `*.json` files
        /// in name order.
        #[arg(required = true)]
        events: Vec<PathBuf>,
    },
    /// Print a table's properties, timeline, checkpoint, latest file groups and row counts.
    Show {
        /// Table base path: a directory or `s3://bucket/prefix`.
        #[arg(long, visible_alias = "base-path", value_name = "PATH_OR_URI")]
        table: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hudi-sink: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Generate(args) => generate::run(args),
            Command::Show { table } => show::run(&table).await,
            Command::Ingest {
                config,
                overrides,
                json,
                report_jsonl,
                events,
            } => ingest::run(&config, &overrides, json, report_jsonl.as_deref(), &events).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hudi-sink: {e}");
            let mut source = std::error::Error::source(e.as_ref());
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
