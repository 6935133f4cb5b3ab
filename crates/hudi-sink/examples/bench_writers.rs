//! Benchmark driver: how the interval commit scales with concurrent writers (`make bench-writers`, see
//! `bench/writers.py`, which starts moto, runs one configuration per process and draws the curves).
//!
//! ```text
//! bench_writers --endpoint http://127.0.0.1:PORT [--writers K] [--interval-ms 5000] [--latency-ms 20]
//!               [--duration-s 60 | --batches N] [--records 1000] [--table-type MERGE_ON_READ|COPY_ON_WRITE]
//!               [--buckets 16] [--keys 100000]
//! ```
//!
//! One table in a fresh bucket of the moto server at `--endpoint` (S3 through the real SDK client, every
//! storage call delayed by `--latency-ms` with a [`FaultyStorage`] rule), the DynamoDB lock in a fresh lock
//! table of the same server. K writers, each its own Kafka partition, its own [`KafkaSink`], in-process
//! [`Coordinator`] and DynamoDB lock client (as K Lambda invocations would be), sharing the storage. Each
//! writer processes one batch of `--records` upserts (keys drawn from `--keys`, spread over the buckets),
//! then the next, until `--duration-s` has passed or it did `--batches` batches. A warm-up batch creates
//! every file group first, outside the measurement.
//!
//! Prints one JSON object: committed records per second of wall time, completed write instants per minute,
//! members and exclusions per instant (from each window commit's `hudi.sink.window` metadata), the
//! `SinkReport` figures (window wait, lock wait, commit latency, conflicts, retries) and the lock hold time.
//! Lock hold: from the response of the lock client's acquiring `PutItem` to the sending of its releasing
//! `DeleteItem`, measured by an SDK interceptor on each writer's DynamoDB client (the coordinator's critical
//! section as DynamoDB sees it). Only S3 calls carry the added latency; DynamoDB calls go to moto directly.
//! `RUST_LOG` (e.g. `hudi_sink=info,bench_writers=warn`) prints the library's logs and every lock hold of a second
//! or more to stderr. Benchmarks only; nothing is asserted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use base64::Engine as _;
use hudi_sink::clock::{Clock, SystemClock};
use hudi_sink::commit::window::WindowRecord;
use hudi_sink::commit::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::dynamodb::{ENDPOINT_URL_KEY, REGION_KEY, TABLE_KEY};
use hudi_sink::lock::{
    create_lock_table_if_missing, DynamoDbLock, DynamoDbLockConfig, WAIT_TIME_MS_KEY,
};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::ServicesConfig;
use hudi_sink::sink::{KafkaSink, SinkConfig, SinkReport};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultAction, FaultRule};
use hudi_sink::storage::{FaultyStorage, S3Options, S3Storage, Storage};
use hudi_sink::table::instant::{Action, InstantTime, State};
use hudi_sink::table::timeline::Timeline;
use hudi_sink::transport::InProcessClient;
use hudi_sink::write::TableWriter;
use hudi_sink::write::WriteConfig;
use serde_json::{json, Value};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SCHEMA: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
 {"name":"uuid","type":"string"},
 {"name":"ts","type":"long"},
 {"name":"rider","type":["null","string"],"default":null},
 {"name":"fare","type":["null","double"],"default":null},
 {"name":"city","type":"string"},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

const CITIES: [&str; 4] = ["sf", "nyc", "sao_paulo", "chennai"];
const TOPIC: &str = "trips";

/// The command line.
#[derive(Debug, Clone)]
struct Args {
    endpoint: String,
    writers: usize,
    interval_ms: u64,
    latency_ms: u64,
    duration_s: f64,
    batches: Option<u64>,
    records: u64,
    table_type: String,
    buckets: u32,
    keys: u64,
}

impl Args {
    fn parse(args: &[String]) -> Result<Self, BoxError> {
        let mut a = Args {
            endpoint: String::new(),
            writers: 1,
            interval_ms: 5000,
            latency_ms: 20,
            duration_s: 60.0,
            batches: None,
            records: 1000,
            table_type: "MERGE_ON_READ".into(),
            buckets: 16,
            keys: 100_000,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--endpoint" => a.endpoint = value.clone(),
                "--writers" => a.writers = value.parse()?,
                "--interval-ms" => a.interval_ms = value.parse()?,
                "--latency-ms" => a.latency_ms = value.parse()?,
                "--duration-s" => a.duration_s = value.parse()?,
                "--batches" => a.batches = Some(value.parse()?),
                "--records" => a.records = value.parse()?,
                "--table-type" => a.table_type = value.clone(),
                "--buckets" => a.buckets = value.parse()?,
                "--keys" => a.keys = value.parse()?,
                other => return Err(format!("unknown option {other}").into()),
            }
        }
        if a.endpoint.is_empty() || a.writers == 0 {
            return Err(
                "usage: bench_writers --endpoint URL [--writers K] ... (see the file's doc)".into(),
            );
        }
        Ok(a)
    }
}

/// SplitMix64: deterministic keys per writer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Lock hold times of one DynamoDB lock client, from the wire: an acquiring `PutItem` answered with success
/// starts a hold, the next `DeleteItem` sent ends it. One writer's coordinator holds at most one guard at a
/// time, and no heartbeat runs while it acquires, so the last request sent is the one answered.
#[derive(Debug, Default)]
struct HoldTimer {
    state: Mutex<HoldState>,
}

#[derive(Debug, Default)]
struct HoldState {
    last_target: String,
    acquired_at: Option<Instant>,
    holds_ms: Vec<f64>,
}

impl HoldTimer {
    fn state(&self) -> std::sync::MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug)]
struct HoldInterceptor(Arc<HoldTimer>);

impl Intercept for HoldInterceptor {
    fn name(&self) -> &'static str {
        "bench-lock-hold"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or_default()
            .to_string();
        let mut state = self.0.state();
        if target.ends_with(".DeleteItem") {
            if let Some(at) = state.acquired_at.take() {
                let ms = at.elapsed().as_secs_f64() * 1000.0;
                if ms >= 1000.0 {
                    // With RUST_LOG set, long holds line up with the library's log lines.
                    tracing::warn!(hold_ms = ms as u64, "long lock hold ended");
                }
                state.holds_ms.push(ms);
            }
        }
        state.last_target = target;
        Ok(())
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut state = self.0.state();
        if state.last_target.ends_with(".PutItem") && context.response().status().is_success() {
            state.acquired_at = Some(Instant::now());
        }
        Ok(())
    }
}

async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    hudi_sink::aws_clients::install_crypto_provider();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test",
            "testtesttest",
            None,
            None,
            "bench",
        ))
        .load()
        .await
}

fn properties(args: &Args, base: &str, lock_table: &str) -> BTreeMap<String, String> {
    let mut props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.database.name", "default"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", ""),
        (
            "hoodie.datasource.write.keygenerator.class",
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        ),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.parquet.compression.codec", "snappy"),
        (WAIT_TIME_MS_KEY, "60000"),
        // Conflicting copy-on-write members retry in a later window; do not give up within the run.
        ("hudi.sink.commit.max.attempts", "1000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    props.insert("hoodie.table.type".into(), args.table_type.clone());
    props.insert(
        "hoodie.bucket.index.num.buckets".into(),
        args.buckets.to_string(),
    );
    props.insert("hoodie.base.path".into(), base.to_string());
    props.insert(
        "hudi.sink.commit.interval.ms".into(),
        args.interval_ms.to_string(),
    );
    props.insert(TABLE_KEY.into(), lock_table.to_string());
    props.insert(ENDPOINT_URL_KEY.into(), args.endpoint.clone());
    props.insert(REGION_KEY.into(), "us-east-1".into());
    props
}

/// The ESM payload of one batch: `records` upserts of partition `partition` from offset `first`.
fn batch(
    args: &Args,
    partition: i32,
    first: i64,
    rng: &mut Rng,
    ts: i64,
) -> Result<KafkaBatch, BoxError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let records: Vec<Value> = (0..args.records as i64)
        .map(|i| {
            let key = rng.next() % args.keys.max(1);
            let value = json!({
                "uuid": format!("trip-{key:09}"), "ts": ts + i, "rider": format!("rider-{}", key % 977),
                "fare": (rng.next() % 10_000) as f64 / 100.0, "city": CITIES[(key % 4) as usize],
            });
            json!({
                "topic": TOPIC, "partition": partition, "offset": first + i,
                "timestamp": SystemClock.now_millis(), "timestampType": "CREATE_TIME",
                "key": b64.encode(format!("trip-{key:09}")), "value": b64.encode(value.to_string()),
                "headers": [],
            })
        })
        .collect();
    let payload = json!({
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/bench/11111111-2222-3333-4444-555555555555-1",
        "bootstrapServers": "b-1.bench:9098",
        "records": { format!("{TOPIC}-{partition}"): records },
    });
    Ok(KafkaBatch::from_slice(&serde_json::to_vec(&payload)?)?)
}

/// One writer: its own lock client (with the hold timer), coordinator, table writer and sink.
async fn writer(
    props: &BTreeMap<String, String>,
    storage: Arc<dyn Storage>,
    dead_letters: Arc<dyn Storage>,
    sdk: &aws_config::SdkConfig,
    name: &str,
) -> Result<(KafkaSink, Arc<HoldTimer>), BoxError> {
    let timer = Arc::new(HoldTimer::default());
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(sdk)
            .interceptor(HoldInterceptor(timer.clone()))
            .build(),
    );
    let lock_config = DynamoDbLockConfig::from_props(props)?
        .with_owner_name(format!("{name}-{}", uuid::Uuid::new_v4()));
    let lock = Arc::new(DynamoDbLock::new(ddb, lock_config)?);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let write = WriteConfig::from_properties(props.clone())?;
    let sink_config = SinkConfig::from_properties(props)?;
    let config = CoordinatorConfig {
        lock_wait: Duration::from_millis(hudi_sink::lock::wait_time_ms(props)?),
        heartbeat_tolerance: sink_config.heartbeat_tolerance(),
        services: ServicesConfig::from_properties(props, write.max_file_size)?,
    };
    let coordinator = Coordinator::new(storage.clone(), lock, clock.clone(), config)
        .with_clustering(write.clone())
        .with_compaction(&write);
    let table = TableWriter::create_or_open(
        storage,
        clock.clone(),
        write,
        Some(AvroSchema::parse(SCHEMA)?),
    )
    .await?;
    let sink = KafkaSink::new(
        table,
        Arc::new(InProcessClient::new(coordinator)),
        Arc::new(StorageDeadLetterSink::new(dead_letters)),
        clock,
        sink_config,
        name,
    );
    Ok((sink, timer))
}

/// What one writer did.
#[derive(Debug, Default)]
struct WriterRun {
    reports: Vec<SinkReport>,
    batch_ms: Vec<f64>,
    errors: Vec<String>,
}

/// Writer `w`'s loop: one batch of its partition at a time, redelivering a failed batch (same offsets).
async fn run_writer(
    sink: Arc<KafkaSink>,
    args: Args,
    w: usize,
    first_offset: i64,
    deadline: Instant,
) -> WriterRun {
    let mut run = WriterRun::default();
    let mut rng = Rng(0xBEEF ^ (w as u64).wrapping_mul(0x1234_5678_9ABC));
    let mut offset = first_offset;
    let mut done = 0u64;
    loop {
        let more = match args.batches {
            Some(n) => done < n,
            None => Instant::now() < deadline,
        };
        if !more {
            break;
        }
        let ts = SystemClock.now_millis() * 1000;
        let kafka = match batch(&args, w as i32, offset, &mut rng, ts) {
            Ok(b) => b,
            Err(e) => {
                run.errors.push(e.to_string());
                break;
            }
        };
        let started = Instant::now();
        match sink.process(kafka).await {
            Ok(report) => {
                run.batch_ms.push(started.elapsed().as_secs_f64() * 1000.0);
                offset += args.records as i64;
                done += 1;
                run.reports.push(report);
            }
            Err(e) => run.errors.push(e.to_string()),
        }
    }
    run
}

fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let idx = ((v.len() - 1) as f64 * q).round() as usize;
    v.get(idx).copied()
}

fn summary(values: &[f64]) -> Value {
    json!({
        "n": values.len(), "p50": quantile(values, 0.5), "p90": quantile(values, 0.9),
        "max": quantile(values, 1.0),
        "mean": (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64),
    })
}

/// Completed write instants (commit on copy-on-write, deltacommit on merge-on-read) after `after`.
fn write_instants<'a>(
    timeline: &'a Timeline,
    action: Action,
    after: Option<&InstantTime>,
) -> Vec<&'a hudi_sink::table::instant::Instant> {
    timeline
        .instants()
        .iter()
        .filter(|i| i.action == action && i.state == State::Completed)
        .filter(|i| after.is_none_or(|a| &i.time > a))
        .collect()
}

/// What a storage path is, for the call breakdown.
fn path_kind(path: &str) -> &'static str {
    if path.contains("/window/") {
        "window"
    } else if path.starts_with(".hoodie/.aux/") {
        "aux"
    } else if path.starts_with(".hoodie/.heartbeat") {
        "heartbeat"
    } else if path.starts_with(".hoodie/.temp") {
        "marker"
    } else if path.starts_with(".hoodie") {
        "timeline"
    } else if path.contains(".log.") {
        "log"
    } else if path.ends_with(".parquet") {
        "base"
    } else {
        "other"
    }
}

async fn run(args: Args) -> Result<Value, BoxError> {
    let sdk = sdk_config(&args.endpoint).await;
    let stamp = SystemClock.now_millis();
    let bucket = format!("bench-writers-{}-{stamp}", std::process::id());
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .build(),
    );
    s3.create_bucket().bucket(&bucket).send().await?;
    let lock_table = format!("hudi-locks-{}-{stamp}", std::process::id());
    let base = format!("s3://{bucket}/tables/trips");
    let props = properties(&args, &base, &lock_table);
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    create_lock_table_if_missing(&ddb, &DynamoDbLockConfig::from_props(&props)?).await?;

    let options = S3Options {
        endpoint_url: Some(args.endpoint.clone()),
        force_path_style: true,
        ..S3Options::from_env()
    };
    let s3_table: Arc<dyn Storage> = Arc::new(S3Storage::from_uri(&base, &sdk, options.clone())?);
    let faulty = Arc::new(FaultyStorage::new(s3_table.clone()));
    if args.latency_ms > 0 {
        faulty.add_rule(
            FaultRule::any_operation(FaultAction::Delay(Duration::from_millis(args.latency_ms)))
                .always(),
        );
    }
    let storage: Arc<dyn Storage> = faulty.clone();
    let dead_letters: Arc<dyn Storage> = Arc::new(S3Storage::from_uri(
        &format!("s3://{bucket}/dead-letters/trips"),
        &sdk,
        options,
    )?);

    let mut sinks = Vec::new();
    let mut timers = Vec::new();
    for w in 0..args.writers {
        let (sink, timer) = writer(
            &props,
            storage.clone(),
            dead_letters.clone(),
            &sdk,
            &format!("w{w}"),
        )
        .await?;
        sinks.push(Arc::new(sink));
        timers.push(timer);
    }
    // Warm-up outside the measurement: the first batch of partition 0 creates every file group.
    let mut warm_rng = Rng(0x5EED);
    let warm = batch(&args, 0, 0, &mut warm_rng, SystemClock.now_millis() * 1000)?;
    sinks[0].process(warm).await?;
    for t in &timers {
        t.state().holds_ms.clear();
    }
    let write_action = if args.table_type == "MERGE_ON_READ" {
        Action::DeltaCommit
    } else {
        Action::Commit
    };
    let before = Timeline::load(s3_table.as_ref()).await?;
    let last_before = before.last_instant_time().cloned();
    let calls_before = faulty.calls().len();

    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration_s);
    let mut handles = Vec::new();
    for (w, sink) in sinks.iter().enumerate() {
        let first = if w == 0 { args.records as i64 } else { 0 };
        handles.push(tokio::spawn(run_writer(
            sink.clone(),
            args.clone(),
            w,
            first,
            deadline,
        )));
    }
    let mut runs = Vec::new();
    for h in handles {
        runs.push(h.await?);
    }
    let wall_s = started.elapsed().as_secs_f64();
    let all_calls = faulty.calls();
    let calls = all_calls.len() - calls_before;
    let mut calls_by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for c in all_calls.iter().skip(calls_before) {
        *calls_by_kind
            .entry(format!("{} {}", c.operation.as_str(), path_kind(&c.path)))
            .or_default() += 1;
    }

    // The timeline's view of the run: write instants, their members and exclusions, compactions.
    let after = Timeline::load(s3_table.as_ref()).await?;
    let instants = write_instants(&after, write_action, last_before.as_ref());
    let mut members = Vec::new();
    let mut excluded = 0usize;
    let mut excluded_reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut timeline_records = 0i64;
    for i in &instants {
        let meta = after.commit_metadata(s3_table.as_ref(), i).await?;
        timeline_records += meta.write_stats().map(|s| s.num_writes).sum::<i64>();
        if let Some(record) = WindowRecord::from_extra_metadata(&meta.extra_metadata) {
            members.push(record.members.len() as f64);
            excluded += record.excluded.len();
            for reason in record.excluded.values() {
                let kind = reason.split([':', ' ']).next().unwrap_or_default();
                *excluded_reasons.entry(kind.to_string()).or_default() += 1;
            }
        }
    }
    // Compactions, and the logs they carried into their new slices (appended while they merged).
    let (compactions, carried_logs) = if write_action == Action::DeltaCommit {
        let done = write_instants(&after, Action::Commit, last_before.as_ref());
        let mut carried = 0usize;
        for c in &done {
            let meta = after.commit_metadata(s3_table.as_ref(), c).await?;
            carried += hudi_sink::table::carried::carried_logs(&meta)
                .map(|l| l.len())
                .unwrap_or_default();
        }
        (done.len(), carried)
    } else {
        (0, 0)
    };

    let reports: Vec<&SinkReport> = runs.iter().flat_map(|r| &r.reports).collect();
    let committed: Vec<&&SinkReport> = reports.iter().filter(|r| r.instant.is_some()).collect();
    let committed_records: u64 = committed.iter().map(|r| r.records_in - r.skipped).sum();
    let batch_ms: Vec<f64> = runs.iter().flat_map(|r| r.batch_ms.clone()).collect();
    let window_wait: Vec<f64> = reports
        .iter()
        .filter_map(|r| r.window_wait_ms.map(|v| v as f64))
        .collect();
    let per_report_contributions: Vec<f64> = reports
        .iter()
        .filter_map(|r| r.contributions_per_instant.map(f64::from))
        .collect();
    let lock_wait: Vec<f64> = reports.iter().map(|r| r.lock_wait_ms as f64).collect();
    let commit_latency: Vec<f64> = committed
        .iter()
        .map(|r| r.commit_latency_ms as f64)
        .collect();
    let holds: Vec<f64> = timers
        .iter()
        .flat_map(|t| t.state().holds_ms.clone())
        .collect();
    let errors: Vec<String> = runs.iter().flat_map(|r| r.errors.clone()).collect();
    Ok(json!({
        "writers": args.writers, "interval_ms": args.interval_ms, "latency_ms": args.latency_ms,
        "table_type": args.table_type, "records_per_batch": args.records, "buckets": args.buckets,
        "keys": args.keys, "duration_s": args.duration_s, "wall_s": wall_s,
        "batches": reports.len(), "committed_batches": committed.len(),
        "committed_records": committed_records, "timeline_records": timeline_records,
        "records_per_s": committed_records as f64 / wall_s,
        "instants": instants.len(), "instants_per_min": instants.len() as f64 / (wall_s / 60.0),
        "compactions": compactions, "carried_logs": carried_logs,
        "contributions_per_instant": summary(&members),
        "contributions_per_instant_reported": summary(&per_report_contributions),
        "excluded_members": excluded, "excluded_reasons": excluded_reasons,
        "window_wait_ms": summary(&window_wait),
        "lock_hold_ms": summary(&holds),
        "lock_hold_share": holds.iter().sum::<f64>() / 1000.0 / wall_s,
        "lock_wait_ms": summary(&lock_wait),
        "commit_latency_ms": summary(&commit_latency),
        "batch_ms": summary(&batch_ms),
        "conflicts": reports.iter().map(|r| u64::from(r.conflicts)).sum::<u64>(),
        "retries": reports.iter().map(|r| u64::from(r.retries)).sum::<u64>(),
        "storage_calls": calls,
        "storage_calls_per_batch": calls as f64 / reports.len().max(1) as f64,
        "storage_calls_by_kind": calls_by_kind,
        "errors": errors.len(), "first_errors": errors.iter().take(3).collect::<Vec<_>>(),
    }))
}

fn main() -> Result<(), BoxError> {
    let args = Args::parse(&std::env::args().skip(1).collect::<Vec<_>>())?;
    // `RUST_LOG=hudi_sink=info,bench_writers=warn` prints the library's logs (and long lock holds) to stderr.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?
        .block_on(run(args))?;
    println!("{result}");
    Ok(())
}
