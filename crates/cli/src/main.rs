//! `hudi-sink`: run msk-hudi-sink on a laptop and inspect the tables it writes.

mod generate;
mod ingest;
mod services;
mod show;
mod sync_catalog;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hudi-sink",
    version,
    about = "Kafka -> Apache Hudi (v6 copy-on-write) sink",
    after_help = "Try it:  hudi-sink generate --out target/demo/events --records 5000 --model target/demo/expected.jsonl\n         \
                  hudi-sink ingest --config examples/local.properties target/demo/events\n         \
                  hudi-sink show --table target/ingest/trips\n         \
                  hudi-sink services --config examples/local.properties\n         \
                  hudi-sink sync-catalog --config examples/glue.properties"
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
    Ingest(ingest::Args),
    /// Print a table's properties, timeline (cleans, replacecommits, the active/archived boundary), checkpoint,
    /// latest file groups and row counts.
    Show(show::Args),
    /// Run the table services once (roll back failed writes, clean, archive, cluster) as the coordinator's
    /// schedule does, and print what they did as JSON.
    Services(services::Args),
    /// Sync the AWS Glue Data Catalog with the table once (as the coordinator does after every commit) and
    /// print what changed as JSON.
    SyncCatalog(sync_catalog::Args),
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
            Command::Ingest(args) => ingest::run(args).await,
            Command::Show(args) => show::run(&args.table).await,
            Command::Services(args) => services::run(args).await,
            Command::SyncCatalog(args) => sync_catalog::run(args).await,
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
