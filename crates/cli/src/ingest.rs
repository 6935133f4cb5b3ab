//! The `ingest` command: the writer Lambda's path on a laptop, with a progress bar on a terminal.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hudi_sink::bootstrap::{build_sink, load_properties};
use hudi_sink::sink::SinkReport;
use hudi_sink::source::event::KafkaBatch;

/// Any error, reported with its cause chain by `main`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `hudi-sink ingest` options.
#[derive(clap::Args)]
pub struct Args {
    /// Table properties (Hudi keys plus `hudi.sink.*`), local path or `s3://`.
    #[arg(long)]
    pub config: String,
    /// Override or add a property (repeatable), e.g. `--set hoodie.base.path=/tmp/trips`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Print one JSON report per event file and a JSON total on stdout (the summary goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write one JSON line per processed event file to FILE: `event_file`, `ms` (wall time of reading,
    /// decoding and processing it) and `report`; flushed line by line, so a long run can be watched.
    #[arg(long, value_name = "FILE")]
    pub report_jsonl: Option<PathBuf>,
    /// Event files (`aws:kafka` or `SelfManagedKafka` payloads); a directory stands for its `*.json` files
    /// in name order.
    #[arg(required = true)]
    pub events: Vec<PathBuf>,
}

/// Applies `--set KEY=VALUE` overrides in order (a later one wins).
pub fn apply_overrides(
    props: &mut BTreeMap<String, String>,
    overrides: &[String],
) -> Result<(), BoxError> {
    for o in overrides {
        let (key, value) = o
            .split_once('=')
            .ok_or_else(|| format!("--set {o:?}: expected KEY=VALUE"))?;
        props.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(())
}

/// Processes each event file in order through one sink; prints progress, a summary and the accounting line.
pub async fn run(args: Args) -> Result<(), BoxError> {
    let Args {
        config,
        overrides,
        json,
        report_jsonl,
        events,
    } = args;
    let mut props = load_properties(&config).await?;
    apply_overrides(&mut props, &overrides)?;
    // Every file is found (and sized, for the bar) before anything is written.
    let files = expand(&events)?;
    let total_bytes: u64 = files.iter().map(|(_, size)| size).sum();
    let mut timings = report_jsonl.as_deref().map(Timings::create).transpose()?;
    let sink = build_sink(&props, "hudi-sink-cli").await?;
    let mut progress = Progress::new(files.len(), total_bytes);
    let mut total = SinkReport::default();
    let mut commits = 0u64;
    let mut done_bytes = 0u64;
    for (path, size) in &files {
        let batch_started = Instant::now();
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let batch =
            KafkaBatch::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let report = match sink.process(batch).await {
            Ok(r) => r,
            Err(e) => {
                progress.clear();
                return Err(format!("{}: {e}", path.display()).into());
            }
        };
        if let Some(t) = timings.as_mut() {
            t.write(path, batch_started.elapsed(), &report)?;
        }
        if json {
            println!(
                "{}",
                serde_json::json!({ "event_file": path.display().to_string(), "report": report })
            );
        }
        commits += u64::from(report.instant.is_some());
        done_bytes += size;
        add(&mut total, &report);
        progress.update(total.records_in, done_bytes, commits);
    }
    progress.clear();
    let elapsed = progress.started.elapsed();
    let c = &total.counts;
    let summary = [
        format!(
            "ingested {} event files, {} records ({}) in {:.1} s ({}/s): {} commits, {} conflicts, {} retries, \
             {} base files written ({})",
            files.len(),
            total.records_in,
            human_bytes(total_bytes),
            elapsed.as_secs_f64(),
            human_bytes(rate(total_bytes, elapsed)),
            commits,
            total.conflicts,
            total.retries,
            total.files,
            human_bytes(total.bytes),
        ),
        format!(
            "records in {} = written {} (inserted {} + updated {}) + deduped {} + deleted {} + ignored {} + \
             delete misses {} + dead-lettered {} + already committed {}",
            total.records_in,
            c.inserted + c.updated,
            c.inserted,
            c.updated,
            c.deduped,
            c.deleted,
            c.ignored_older,
            c.delete_misses,
            total.dead_lettered,
            total.skipped
        ),
    ];
    for line in &summary {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if json {
        println!(
            "{}",
            serde_json::json!({ "total": total, "commits": commits })
        );
    }
    if !total.balanced() {
        return Err("record accounting does not add up (a bug: please report it)".into());
    }
    Ok(())
}

/// The `--report-jsonl` file: one line per processed event file, flushed at once (a crash keeps every
/// finished line, and a benchmark can follow the file while the ingest runs).
struct Timings {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Timings {
    fn create(path: &Path) -> Result<Self, BoxError> {
        let file =
            File::create(path).map_err(|e| format!("--report-jsonl {}: {e}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    fn write(
        &mut self,
        event_file: &Path,
        took: Duration,
        report: &SinkReport,
    ) -> Result<(), BoxError> {
        let line = serde_json::json!({
            "event_file": event_file.display().to_string(),
            "ms": took.as_secs_f64() * 1000.0,
            "report": report,
        });
        writeln!(self.out, "{line}")
            .and_then(|()| self.out.flush())
            .map_err(|e| format!("--report-jsonl {}: {e}", self.path.display()).into())
    }
}

/// Files with their sizes; a directory stands for its `*.json` files in name order.
fn expand(events: &[PathBuf]) -> Result<Vec<(PathBuf, u64)>, BoxError> {
    let mut out = Vec::new();
    for path in events {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            inner.retain(|p| p.extension().is_some_and(|e| e == "json") && p.is_file());
            inner.sort();
            if inner.is_empty() {
                return Err(format!(
                    "{}: no *.json event files in this directory",
                    path.display()
                )
                .into());
            }
            for p in inner {
                let size = file_size(&p)?;
                out.push((p, size));
            }
        } else {
            out.push((path.clone(), meta.len()));
        }
    }
    Ok(out)
}

fn file_size(path: &Path) -> Result<u64, BoxError> {
    Ok(std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len())
}

/// Adds one file's report to the running total.
fn add(total: &mut SinkReport, r: &SinkReport) {
    total.records_in += r.records_in;
    total.skipped += r.skipped;
    total.dead_lettered += r.dead_lettered;
    total.counts.records_in += r.counts.records_in;
    total.counts.inserted += r.counts.inserted;
    total.counts.updated += r.counts.updated;
    total.counts.deleted += r.counts.deleted;
    total.counts.deduped += r.counts.deduped;
    total.counts.ignored_older += r.counts.ignored_older;
    total.counts.delete_misses += r.counts.delete_misses;
    total.files += r.files;
    total.bytes += r.bytes;
    total.conflicts += r.conflicts;
    total.retries += r.retries;
    if r.instant.is_some() {
        total.instant.clone_from(&r.instant);
    }
}

fn rate(bytes: u64, elapsed: Duration) -> u64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        (bytes as f64 / secs) as u64
    } else {
        0
    }
}

/// `12.3 MB` (decimal units, as Lambda's payload limit is stated).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A one-line bar on stderr, drawn only when stderr is a terminal (logs and pipes get the summary alone).
struct Progress {
    tty: bool,
    started: Instant,
    files: usize,
    done_files: usize,
    total_bytes: u64,
}

impl Progress {
    fn new(files: usize, total_bytes: u64) -> Self {
        let p = Self {
            tty: std::io::stderr().is_terminal(),
            started: Instant::now(),
            files,
            done_files: 0,
            total_bytes,
        };
        p.draw(0, 0, 0);
        p
    }

    fn update(&mut self, records: u64, done_bytes: u64, commits: u64) {
        self.done_files += 1;
        self.draw(records, done_bytes, commits);
    }

    fn draw(&self, records: u64, done_bytes: u64, commits: u64) {
        if !self.tty {
            return;
        }
        const WIDTH: u64 = 30;
        let filled = (done_bytes * WIDTH)
            .checked_div(self.total_bytes)
            .unwrap_or(WIDTH)
            .min(WIDTH);
        let bar: String = (0..WIDTH)
            .map(|i| if i < filled { '#' } else { '-' })
            .collect();
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be drawn is not worth failing the ingest for.
        let _ = write!(
            err,
            "\r\x1b[2K[{bar}] {}/{} files  {} records  {}/s  {} commits",
            self.done_files,
            self.files,
            records,
            human_bytes(rate(done_bytes, self.started.elapsed())),
            commits
        );
        let _ = err.flush();
    }

    /// Removes the bar so that the next line starts clean.
    fn clear(&self) {
        if self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
