//! `hudi-sink`: run msk-hudi-sink on a laptop and inspect the tables it writes.

mod demo;
mod ingest;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hudi-sink",
    version,
    about = "Kafka -> Apache Hudi (v6 copy-on-write) sink"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a sample `trips` table on the local file system and write insert, upsert and delete instants.
    Demo {
        /// Directory of the table (created; must not hold another table).
        #[arg(long)]
        base_path: PathBuf,
    },
    /// Process ESM event files (one invocation payload each, in order) exactly as the writer Lambda does:
    /// embedded coordinator and file lock unless the configuration names AWS ones.
    Ingest {
        /// Table properties (Hudi keys plus `hudi.sink.*`), local path or `s3://`.
        #[arg(long)]
        config: String,
        /// Event files (`aws:kafka` or `SelfManagedKafka` payloads).
        #[arg(required = true)]
        events: Vec<PathBuf>,
    },
    /// Print a table's timeline and latest file slices.
    Show {
        /// Directory of the table.
        #[arg(long)]
        base_path: PathBuf,
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
            Command::Demo { base_path } => demo::run(&base_path).await,
            Command::Show { base_path } => demo::show(&base_path).await,
            Command::Ingest { config, events } => ingest::run(&config, &events).await,
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
