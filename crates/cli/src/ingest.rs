//! The `ingest` command: the writer Lambda's path on a laptop, with a progress bar on a terminal.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hudi_sink::bootstrap::{build_router, build_sink, load_properties};
use hudi_sink::router::{is_routed, RoutedReport, Router};
use std::borrow::Cow;

use hudi_sink::sink::parts::part_error;
use hudi_sink::sink::{BatchParts, KafkaSink, ProcessOptions, SinkReport};
use hudi_sink::source::event::{EventSource, KafkaBatch};
use hudi_sink::write::WriteError;

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
    /// Print one JSON report per batch (with its event files) and a JSON total on stdout (the summary goes to
    /// stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write one JSON line per processed batch to FILE: `event_files`, `ms` (wall time of reading,
    /// decoding and processing them) and `report`; flushed line by line, so a long run can be watched.
    #[arg(long, value_name = "FILE")]
    pub report_jsonl: Option<PathBuf>,
    /// Commit interval (`hudi.sink.commit.interval.ms`, default 5000): consecutive event files are written as
    /// one batch per interval, up to `--max-batch-bytes` of event files; 0 commits every file on its own.
    #[arg(long, value_name = "MS")]
    pub commit_interval_ms: Option<u64>,
    /// Under the interval commit, the most event-file bytes read into one batch.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BATCH_BYTES)]
    pub max_batch_bytes: u64,
    /// Event files (`aws:kafka` or `SelfManagedKafka` payloads); a directory stands for its `*.json` files
    /// in name order.
    #[arg(required = true)]
    pub events: Vec<PathBuf>,
}

/// 64 MiB of event files per batch: about ten full ESM payloads; the files are read one at a time, so the batch
/// is held as its decoded columns (about half its bytes) and one file (the grouping `generate --model` assumes by
/// default).
pub const DEFAULT_MAX_BATCH_BYTES: u64 = hudi_sink::generate::DEFAULT_MODEL_BATCH_BYTES;

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

/// Processes the event files in order through one sink, one batch per commit interval (the same window
/// protocol as the writer Lambda); prints progress, a summary and the accounting line.
pub async fn run(args: Args) -> Result<(), BoxError> {
    let Args {
        config,
        overrides,
        json,
        report_jsonl,
        commit_interval_ms,
        max_batch_bytes,
        events,
    } = args;
    let mut props = load_properties(&config).await?;
    apply_overrides(&mut props, &overrides)?;
    if let Some(ms) = commit_interval_ms {
        props.insert("hudi.sink.commit.interval.ms".into(), ms.to_string());
    }
    let windowed = !hudi_sink::sink::SinkConfig::from_properties(&props)?
        .commit_interval
        .is_zero();
    // Every file is found (and sized, for the bar) before anything is written.
    let files = expand(&events)?;
    let total_bytes: u64 = files.iter().map(|(_, size)| size).sum();
    let mut timings = report_jsonl.as_deref().map(Timings::create).transpose()?;
    let sink = if is_routed(&props) {
        let router = build_router(&props, "hudi-sink-cli").await?;
        check_routes(&router, &files)?;
        Writer::Many(router)
    } else {
        Writer::One(Box::new(build_sink(&props, "hudi-sink-cli").await?))
    };
    let mut per_table: BTreeMap<String, SinkReport> = BTreeMap::new();
    let mut progress = Progress::new(files.len(), total_bytes);
    let mut total = SinkReport::default();
    let mut commits = 0u64;
    let mut done_bytes = 0u64;
    let mut next = 0;
    while next < files.len() {
        let batch_started = Instant::now();
        let group = next_group(&files[next..], windowed, max_batch_bytes)?;
        next += group.files.len();
        let names: Vec<String> = group
            .files
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect();
        // Every file is there already: each batch has the rest behind it, so none waits for an interval slot
        // (the interval groups files into batches, it does not pace the reading).
        let options = ProcessOptions {
            backlog: true,
            ..ProcessOptions::default()
        };
        let (report, routed) = match sink.process_with(&group, options).await {
            Ok(r) => r,
            Err(e) => {
                progress.clear();
                return Err(format!("{}: {e}", names.join(", ")).into());
            }
        };
        if let Some(t) = timings.as_mut() {
            t.write(&names, batch_started.elapsed(), &report)?;
        }
        if json {
            let mut line = serde_json::json!({ "event_files": names, "report": report });
            if let Some(routed) = &routed {
                line["tables"] = serde_json::json!(routed.tables);
                line["unrouted"] = serde_json::json!(routed.unrouted);
            }
            println!("{line}");
        }
        match &routed {
            Some(routed) => {
                for (table, r) in &routed.tables {
                    commits += u64::from(r.instant.is_some());
                    per_table.entry(table.clone()).or_default().absorb(r);
                }
            }
            None => commits += u64::from(report.instant.is_some()),
        }
        done_bytes += group.payload_bytes();
        total.absorb(&report);
        progress.update(group.files.len(), total.records_in, done_bytes, commits);
    }
    progress.clear();
    let elapsed = progress.started.elapsed();
    let c = &total.counts;
    let mut summary = vec![
        format!(
            "ingested {} event files, {} records ({}) in {:.1} s ({}/s): {} commits, {} conflicts, {} retries, \
             {} slot waits, {} base files written ({})",
            files.len(),
            total.records_in,
            human_bytes(total_bytes),
            elapsed.as_secs_f64(),
            human_bytes(rate(total_bytes, elapsed)),
            commits,
            total.conflicts,
            total.retries,
            total.slot_waits,
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
    if total.tombstones_skipped > 0 {
        if let Some(line) = summary.last_mut() {
            line.push_str(&format!(
                " + Debezium tombstones {}",
                total.tombstones_skipped
            ));
        }
    }
    if c.moved > 0 {
        if let Some(line) = summary.last_mut() {
            line.push_str(&format!(
                " − moved to another partition {} (each also deleted its older partition's version)",
                c.moved
            ));
        }
    }
    for (table, r) in &per_table {
        summary.push(format!(
            "table {table}: records in {}, written {}, deleted {}, dead-lettered {}, already committed {}",
            r.records_in,
            r.counts.inserted + r.counts.updated,
            r.counts.deleted,
            r.dead_lettered,
            r.skipped
        ));
    }
    for line in &summary {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if json {
        let mut line = serde_json::json!({ "total": total, "commits": commits });
        if !per_table.is_empty() {
            line["tables"] = serde_json::json!(per_table);
        }
        println!("{line}");
    }
    if !total.balanced() {
        return Err("record accounting does not add up (a bug: please report it)".into());
    }
    Ok(())
}

/// One table's sink, or a router over many tables.
enum Writer {
    One(Box<KafkaSink>),
    Many(Router),
}

impl Writer {
    /// Processes one batch of event files: its report (over every table when routed) and, when routed, each
    /// table's. One table reads the files one at a time (only one file's values in memory); a router splits
    /// the batch by topic first, so it reads them all.
    async fn process_with(
        &self,
        group: &FileParts,
        options: ProcessOptions,
    ) -> Result<(SinkReport, Option<RoutedReport>), BoxError> {
        match self {
            Writer::One(sink) => Ok((sink.process_parts(group, options).await?, None)),
            Writer::Many(router) => {
                let routed = router.process_with(group.read_all()?, options).await?;
                Ok((routed.total(), Some(routed)))
            }
        }
    }
}

/// Every topic of the event files has a route: a topic without one is refused before anything is written
/// (the writer Lambda, which cannot know its topics beforehand, dead-letters such records instead).
fn check_routes(router: &Router, files: &[(PathBuf, u64)]) -> Result<(), BoxError> {
    let mut topics: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (path, _) in files {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let batch =
            KafkaBatch::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        for record in &batch.records {
            if !topics.contains_key(record.topic.as_ref()) {
                topics.insert(record.topic.to_string(), path.clone());
            }
        }
    }
    for (topic, path) in &topics {
        if let Err(reason) = router.config().table_of(topic) {
            return Err(format!(
                "{}: {reason}; add a route (hudi.sink.route.<name>.topic or .topic.regex) before ingesting",
                path.display()
            )
            .into());
        }
    }
    Ok(())
}

/// The next batch from `files`: one file, or under the interval commit (`windowed`) the consecutive files
/// of one event source up to `max_bytes` (at least one). Only each file's event source is read here.
fn next_group(
    files: &[(PathBuf, u64)],
    windowed: bool,
    max_bytes: u64,
) -> Result<FileParts, BoxError> {
    let source = |path: &Path| -> Result<EventSource, BoxError> {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        // The source's fields come before the records in the ESM's payloads: the file's head is enough.
        let mut head = Vec::with_capacity(HEAD_BYTES);
        File::open(path)
            .and_then(|f| f.take(HEAD_BYTES as u64).read_to_end(&mut head))
            .map_err(|e| failed(&e))?;
        if let Ok(source) = KafkaBatch::source_of(&head) {
            return Ok(source);
        }
        let bytes = std::fs::read(path).map_err(|e| failed(&e))?;
        Ok(KafkaBatch::source_of(&bytes).map_err(|e| failed(&e))?)
    };
    let Some((first, first_size)) = files.first() else {
        return Err("no event file left".into());
    };
    let first_source = source(first)?;
    let mut group = vec![(first.clone(), *first_size)];
    let mut bytes = *first_size;
    if windowed {
        for (path, size) in &files[1..] {
            if bytes + size > max_bytes || source(path)? != first_source {
                break;
            }
            group.push((path.clone(), *size));
            bytes += size;
        }
    }
    Ok(FileParts { files: group })
}

/// Bytes of an event file read to find its event source before the whole file is.
const HEAD_BYTES: usize = 64 * 1024;

/// Event files as the parts of one batch: each is read and parsed when the sink loads it.
struct FileParts {
    files: Vec<(PathBuf, u64)>,
}

impl FileParts {
    /// Every file read into one batch, their records in file order.
    fn read_all(&self) -> Result<KafkaBatch, BoxError> {
        let mut batch: Option<KafkaBatch> = None;
        for index in 0..self.files.len() {
            let part = self.load(index)?.into_owned();
            match batch.as_mut() {
                Some(b) => b.records.extend(part.records),
                None => batch = Some(part),
            }
        }
        batch.ok_or_else(|| "no event file in the batch".into())
    }
}

impl BatchParts for FileParts {
    fn parts(&self) -> usize {
        self.files.len()
    }

    fn load(&self, index: usize) -> Result<Cow<'_, KafkaBatch>, WriteError> {
        let Some((path, _)) = self.files.get(index) else {
            return Err(part_error(index, "no such event file"));
        };
        let bytes = std::fs::read(path)
            .map_err(|e| part_error(index, format!("{}: {e}", path.display())))?;
        KafkaBatch::from_slice(&bytes)
            .map(Cow::Owned)
            .map_err(|e| part_error(index, format!("{}: {e}", path.display())))
    }

    fn payload_bytes(&self) -> u64 {
        self.files.iter().map(|(_, size)| size).sum()
    }
}

/// The `--report-jsonl` file: one line per processed batch (its event files), flushed at once (a crash keeps every
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
        event_files: &[String],
        took: Duration,
        report: &SinkReport,
    ) -> Result<(), BoxError> {
        let line = serde_json::json!({
            "event_files": event_files,
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

    fn update(&mut self, files: usize, records: u64, done_bytes: u64, commits: u64) {
        self.done_files += files;
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
