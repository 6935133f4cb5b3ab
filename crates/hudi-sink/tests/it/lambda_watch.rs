//! Both Lambda functions under `cargo lambda watch`, against moto (S3 + DynamoDB), end to end: every writer
//! sample of `events/` is invoked through the Lambda invoke API (`cargo lambda invoke`), the writer reaches the
//! coordinator through the real Lambda `Invoke` API served by the same watch server, the table is read back
//! with Python `hudi==0.5.0` and compared row for row, dead letters are read from S3, redeliveries change
//! nothing, an invalid envelope is a clean function error, and every invocation's EMF line is checked.
//!
//! How the functions are started. `cargo lambda watch` normally compiles each function with
//! `cargo run --bin <name>` on the first invoke. That build resolves features without dev-dependencies
//! (criterion and zip turn on serde's `alloc`, flate2's Rust backend, ...), so after `cargo test --workspace
//! --all-targets` it would recompile about 300 crates. By default this test therefore runs the watch server
//! with `--only-lambda-apis` and starts the functions itself, exactly as watch would (same environment
//! variables, runtime API `http://<addr>/.rt/<function>`), from `cargo build --workspace --all-targets`,
//! whose units are the ones `make test` has just built: only the two executables are linked.
//! `HUDI_SINK_WATCH_MODE=cargo` lets watch build and start them itself (docs/cli.md's workflow; slow once).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use serde_json::{json, Map, Value};

use crate::common::moto::{
    moto, new_bucket, object_bytes, object_sizes, s3_client, sdk_config, unique_name,
};
use crate::common::python::{python, read_rows};
use crate::common::workspace_root;

pub(crate) const WRITER: &str = "hudi-sink-writer";
pub(crate) const COORDINATOR: &str = "hudi-sink-coordinator";
/// The writer samples, in the order they are delivered (the expected table below follows from it).
const SAMPLES: &[&str] = &[
    "msk-basic.json",
    "msk-tombstones.json",
    "msk-headers.json",
    "msk-bad-records.json",
    "self-managed-basic.json",
];
/// Lease of the dead holder the test plants in the lock table: the coordinator must wait that long.
const STALE_LEASE_MS: u64 = 1_500;
/// A hang guard for one invocation (not a timing assertion): far above any real run.
pub(crate) const INVOKE_LIMIT: Duration = Duration::from_secs(600);

/// A child process group killed (with everything it started) when dropped, also when the test fails.
pub(crate) struct Proc {
    name: String,
    child: Child,
    /// Reaped already (its id may belong to someone else by now).
    reaped: bool,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Proc {
    fn spawn(name: &str, mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(collect_lines(out, stdout.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(collect_lines(err, stderr.clone()));
        }
        Proc {
            name: name.to_string(),
            child,
            reaped: false,
            stdout,
            stderr,
            readers,
        }
    }

    fn alive(&mut self) -> bool {
        match self.child.try_wait() {
            Ok(None) => true,
            _ => {
                self.reaped = true;
                false
            }
        }
    }

    /// Waits for the process to end and for its output; kills it and fails past `limit`, a guard against
    /// hangs only (no assertion on how long anything takes).
    fn finish(mut self, limit: Duration) -> (std::process::ExitStatus, String, String) {
        let started = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => panic!("{} still running after {limit:?}", self.name),
                Err(e) => panic!("{}: {e}", self.name),
            }
        };
        self.reaped = true;
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        (status, self.stdout().join("\n"), self.stderr().join("\n"))
    }

    pub(crate) fn stdout(&self) -> Vec<String> {
        self.stdout.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub(crate) fn stderr(&self) -> Vec<String> {
        self.stderr.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The last lines of both streams, for failure messages.
    fn tail(&self) -> String {
        let last = |lines: Vec<String>| lines[lines.len().saturating_sub(40)..].join("\n");
        format!(
            "--- {} stdout ---\n{}\n--- {} stderr ---\n{}",
            self.name,
            last(self.stdout()),
            self.name,
            last(self.stderr())
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // The whole group: `cargo lambda watch` starts `cargo run` and the function under it.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect_lines(
    stream: impl std::io::Read + Send + 'static,
    into: Arc<Mutex<Vec<String>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut lines) = into.lock() {
                lines.push(line);
            }
        }
    })
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `.venv/bin` (where `cargo-lambda` and `python-zig` live), put first on PATH for `cargo lambda`.
fn venv_path() -> String {
    let bin = python()
        .parent()
        .map(Path::to_path_buf)
        .expect("python lives in a bin directory");
    assert!(
        bin.join("cargo-lambda").exists(),
        "cargo-lambda not found in {} (run `make venv`: it is pinned in tests/python/requirements.txt)",
        bin.display()
    );
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// The writer and coordinator executables of `cargo build --workspace --all-targets` (the unit graph of
/// `cargo test --workspace --all-targets`, so nothing but the two executables is built after `make test`).
fn function_binaries() -> BTreeMap<String, PathBuf> {
    let out = Command::new(cargo())
        .current_dir(workspace_root())
        .args([
            "build",
            "--workspace",
            "--all-targets",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(out.status.success(), "cargo build of the functions failed");
    let mut found = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let name = msg["target"]["name"].as_str().unwrap_or_default();
        if msg["reason"] == "compiler-artifact"
            && [WRITER, COORDINATOR].contains(&name)
            && msg["target"]["kind"] == json!(["bin"])
            && msg["profile"]["test"] == false
        {
            if let Some(exe) = msg["executable"].as_str() {
                found.insert(name.to_string(), PathBuf::from(exe));
            }
        }
    }
    assert_eq!(found.len(), 2, "function executables not found: {found:?}");
    found
}

/// The table, lock table and properties in moto, and the environment both functions run with.
pub(crate) struct Deployment {
    pub(crate) bucket: String,
    lock_table: String,
    lock_key: String,
    env: Vec<(String, String)>,
}

async fn deploy(watch_port: u16) -> Deployment {
    deploy_with(watch_port, "").await
}

/// [`deploy`] with `extra` property lines appended to the table's properties.
pub(crate) async fn deploy_with(watch_port: u16, extra: &str) -> Deployment {
    let endpoint = moto().endpoint.clone();
    let bucket = new_bucket("lambda-watch").await;
    let lock_table = unique_name("hudi-locks");
    let lock_key = unique_name("trips-lock");
    let ddb = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    ddb.create_table()
        .table_name(&lock_table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("key")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attribute"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("key")
                .key_type(KeyType::Hash)
                .build()
                .expect("key schema"),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("create lock table");
    let s3 = s3_client().await;
    let schema = std::fs::read(workspace_root().join("events/schema/trips.avsc")).expect("schema");
    put(&s3, &bucket, "config/trips.avsc", schema).await;
    let props = format!(
        "# written by the lambda_watch test\n\
         hoodie.table.name=trips\n\
         hoodie.database.name=default\n\
         hoodie.base.path=s3://{bucket}/tables/trips\n\
         hoodie.streamer.schemaprovider.source.schema.file=s3://{bucket}/config/trips.avsc\n\
         hoodie.datasource.write.recordkey.field=uuid\n\
         hoodie.datasource.write.partitionpath.field=city\n\
         hoodie.datasource.write.precombine.field=ts\n\
         hoodie.datasource.write.hive_style_partitioning=true\n\
         hoodie.datasource.write.operation=upsert\n\
         hoodie.index.type=BUCKET\n\
         hoodie.bucket.index.num.buckets=4\n\
         hoodie.parquet.compression.codec=snappy\n\
         hoodie.write.lock.dynamodb.table={lock_table}\n\
         hoodie.write.lock.dynamodb.partition_key={lock_key}\n\
         hoodie.write.lock.dynamodb.region=us-east-1\n\
         hoodie.write.lock.dynamodb.endpoint_url={endpoint}\n\
         hoodie.write.lock.wait_time_ms=20000\n\
         hudi.sink.dead.letter.path=s3://{bucket}/dead-letters\n\
         hudi.sink.coordinator.function={COORDINATOR}\n\
         {extra}"
    );
    put(&s3, &bucket, "config/trips.properties", props.into_bytes()).await;
    let env = [
        (
            "HUDI_SINK_CONFIG",
            format!("s3://{bucket}/config/trips.properties"),
        ),
        ("AWS_ENDPOINT_URL", endpoint.clone()),
        (
            "AWS_ENDPOINT_URL_LAMBDA",
            format!("http://127.0.0.1:{watch_port}"),
        ),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "testtesttest".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("RUST_LOG", "info".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Deployment {
        bucket,
        lock_table,
        lock_key,
        env,
    }
}

async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, body: Vec<u8>) {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(body.into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {key}: {e}"));
}

/// Every object under `prefix`, with its bytes, by key.
pub(crate) async fn objects(bucket: &str, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for key in object_sizes(bucket, prefix).await.into_keys() {
        let body = object_bytes(bucket, &key).await;
        out.insert(key, body);
    }
    out
}

/// The watch server and the function processes of one run.
pub(crate) struct Lambdas {
    port: u16,
    watch: Proc,
    /// Function processes started by the test (`--only-lambda-apis`); empty when watch starts them.
    pub(crate) functions: BTreeMap<String, Proc>,
}

impl Lambdas {
    fn start(deployment: &Deployment, port: u16) -> Lambdas {
        Lambdas::start_scaled(deployment, port, 1, 1)
    }

    /// [`Lambdas::start`] with `writers` and `coordinators` execution environments (processes polling the
    /// same runtime API, each taking one invocation at a time, as Lambda scales a function out).
    pub(crate) fn start_scaled(
        deployment: &Deployment,
        port: u16,
        writers: usize,
        coordinators: usize,
    ) -> Lambdas {
        let watch_builds = std::env::var("HUDI_SINK_WATCH_MODE").is_ok_and(|m| m == "cargo");
        let binaries = (!watch_builds).then(function_binaries);
        let mut cmd = Command::new(cargo());
        cmd.current_dir(workspace_root())
            .env("PATH", venv_path())
            .args(["lambda", "watch", "--invoke-address", "127.0.0.1"])
            .args(["--invoke-port", &port.to_string()]);
        if watch_builds {
            cmd.arg("--ignore-changes");
            // Watch spawns another instance while invocations queue and none is idle, up to this many.
            let concurrency = writers.max(coordinators).max(1);
            cmd.args(["--concurrency", &concurrency.to_string()]);
            for (k, v) in &deployment.env {
                cmd.args(["--env-var", &format!("{k}={v}")]);
            }
        } else {
            cmd.arg("--only-lambda-apis");
        }
        let mut watch = Proc::spawn("cargo lambda watch", cmd);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                watch.alive(),
                "cargo lambda watch exited:\n{}",
                watch.tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut functions = BTreeMap::new();
        for (name, exe) in binaries.into_iter().flatten() {
            let instances = if name == WRITER {
                writers
            } else {
                coordinators
            };
            for i in 0..instances.max(1) {
                // What `cargo lambda watch` sets for a function it starts itself, and the log stream Lambda
                // gives each execution environment.
                let mut cmd = Command::new(&exe);
                cmd.current_dir(workspace_root())
                    .envs(deployment.env.iter().map(|(k, v)| (k, v)))
                    .env("AWS_LAMBDA_FUNCTION_NAME", &name)
                    .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                    .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "4096")
                    .env("AWS_LAMBDA_MAX_CONCURRENCY", "1")
                    .env(
                        "AWS_LAMBDA_LOG_STREAM_NAME",
                        format!("2026/01/01/[1]environment{i}"),
                    )
                    .env(
                        "AWS_LAMBDA_RUNTIME_API",
                        format!("http://127.0.0.1:{port}/.rt/{name}"),
                    );
                // The first instance under the function's name (`writer()` finds it), others numbered.
                let key = if i == 0 {
                    name.clone()
                } else {
                    format!("{name}#{i}")
                };
                functions.insert(key.clone(), Proc::spawn(&key, cmd));
            }
        }
        Lambdas {
            port,
            watch,
            functions,
        }
    }

    /// The writer's process output: its own process, or watch's when watch started it.
    fn writer(&self) -> &Proc {
        self.functions.get(WRITER).unwrap_or(&self.watch)
    }

    /// What watch printed (the functions' output too when watch started them).
    pub(crate) fn watch_stdout(&self) -> Vec<String> {
        self.watch.stdout()
    }

    pub(crate) fn diagnostics(&self) -> String {
        let mut s = self.watch.tail();
        for p in self.functions.values() {
            s.push('\n');
            s.push_str(&p.tail());
        }
        s
    }

    pub(crate) fn all_alive(&mut self) -> bool {
        self.watch.alive() && self.functions.values_mut().all(Proc::alive)
    }

    /// `cargo lambda invoke <function> --data-file <file>` (or `--data-ascii`), as a user runs it.
    fn invoke(&self, function: &str, data: Data<'_>) -> Invoked {
        let mut cmd = Command::new(cargo());
        cmd.current_dir(workspace_root())
            .env("PATH", venv_path())
            .args([
                "lambda",
                "invoke",
                function,
                "--invoke-address",
                "127.0.0.1",
            ])
            .args([
                "--invoke-port",
                &self.port.to_string(),
                "--output-format",
                "json",
            ]);
        match data {
            Data::File(path) => cmd.args(["--data-file", &path.display().to_string()]),
            Data::Ascii(text) => cmd.args(["--data-ascii", text]),
        };
        let (status, stdout, stderr) =
            Proc::spawn(&format!("cargo lambda invoke {function}"), cmd).finish(INVOKE_LIMIT);
        Invoked {
            ok: status.success(),
            stdout,
            stderr,
        }
    }

    /// Invokes `function` and returns its JSON answer; fails with every process's output otherwise.
    pub(crate) fn invoke_ok(&self, function: &str, data: Data<'_>) -> Value {
        let what = format!("{function} {data:?}");
        let out = self.invoke(function, data);
        assert!(
            out.ok,
            "invoking {what} failed: {}\n{}\n{}",
            out.stdout,
            out.stderr,
            self.diagnostics()
        );
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: answer is not JSON ({e}): {}", out.stdout))
    }
}

/// What `cargo lambda invoke` printed.
struct Invoked {
    ok: bool,
    stdout: String,
    stderr: String,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Data<'a> {
    File(&'a Path),
    Ascii(&'a str),
}

/// A row of the trips table: uuid → (ts, rider, fare, city).
type Row = (i64, Option<String>, Option<f64>, String);

/// The table the five samples must produce, stated from the merge rules of docs/semantics.md (not computed by the
/// library): msk-basic inserts trip-001..005 (trip-006 is a `_hoodie_is_deleted` delete of an absent key);
/// msk-tombstones updates trip-001 then deletes it by tombstone, deletes trip-002, dead-letters the keyless
/// tombstone and ignores an older `_hoodie_is_deleted` version of trip-003; msk-headers inserts trip-010 and
/// trip-011; msk-bad-records inserts trip-100 and trip-114 and dead-letters the other 13; self-managed-basic
/// inserts trip-200..202 (topic `trips.v2`).
fn expected_rows() -> BTreeMap<String, Row> {
    let row = |ts: i64, rider: Option<&str>, fare: Option<f64>, city: &str| -> Row {
        (ts, rider.map(str::to_string), fare, city.to_string())
    };
    [
        ("trip-003", row(9007199254740993, None, None, "chennai")),
        (
            "trip-004",
            row(1764412800456, Some("rider-C"), Some(33.9), "san_francisco"),
        ),
        ("trip-005", row(1764412800457, None, None, "chennai")),
        (
            "trip-010",
            row(1764412802000, Some("rider-É"), Some(12.0), "montréal"),
        ),
        (
            "trip-011",
            row(1764412802001, Some("rider-Z"), Some(8.25), "zürich"),
        ),
        (
            "trip-100",
            row(1764412803000, Some("rider-A"), Some(1.0), "sf"),
        ),
        ("trip-114", row(1764412803014, None, Some(2.5), "sf")),
        (
            "trip-200",
            row(1764412804000, Some("rider-S"), Some(5.5), "berlin"),
        ),
        (
            "trip-201",
            row(1764412804001, Some("rider-T"), Some(6.5), "berlin"),
        ),
        ("trip-202", row(1764412804005, None, None, "paris")),
    ]
    .into_iter()
    .map(|(k, r)| (k.to_string(), r))
    .collect()
}

/// Per sample: records in, written (inserted + updated), deduped, deleted, ignored older, delete misses,
/// dead-lettered, and the oldest record timestamp of the batch.
const EXPECTED_COUNTS: &[(&str, [u64; 7], i64)] = &[
    ("msk-basic.json", [6, 5, 0, 0, 0, 1, 0], 1700000000001),
    ("msk-tombstones.json", [5, 0, 1, 2, 1, 0, 1], 1764412801000),
    ("msk-headers.json", [2, 2, 0, 0, 0, 0, 0], 1764412802000),
    (
        "msk-bad-records.json",
        [15, 2, 0, 0, 0, 0, 13],
        1764412803000,
    ),
    (
        "self-managed-basic.json",
        [3, 3, 0, 0, 0, 0, 0],
        1764412804000,
    ),
];

/// The dead letters the samples must produce: (topic, partition, offset, stage, reason).
fn expected_dead_letters() -> Vec<(String, i64, i64, String, String)> {
    let bad = |offset: i64, stage: &str, reason: &str| {
        (
            "trips".to_string(),
            0,
            offset,
            stage.to_string(),
            reason.to_string(),
        )
    };
    vec![
        bad(
            203,
            "keyless_tombstone",
            "tombstone (null value) without a Kafka key: no record to delete",
        ),
        bad(
            301,
            "base64",
            "value is not valid standard base64: Invalid symbol 32, offset 3.",
        ),
        bad(302, "not_json", "not JSON: invalid literal at byte 0"),
        bad(303, "not_object", "expected a JSON object, found an array"),
        bad(
            304,
            "decode",
            "field `uuid`: required field is missing (not nullable and no default)",
        ),
        bad(305, "decode", "field `ts`: expected long, found a string"),
        bad(
            306,
            "decode",
            "field `ts`: 9223372036854775808 is not a valid long: out of range \
             -9223372036854775808..=9223372036854775807",
        ),
        bad(
            307,
            "decode",
            "field `fare`: \"12.50\" is not a valid double: a string is accepted only as \"NaN\", \
             \"Infinity\" or \"-Infinity\"",
        ),
        bad(308, "decode", "duplicate key \"city\" in one object"),
        bad(
            309,
            "base64",
            "key is not valid standard base64: Invalid symbol 37, offset 0.",
        ),
        bad(310, "not_json", "not JSON: the value is empty"),
        bad(
            311,
            "not_json",
            "not UTF-8 text (invalid byte sequence at byte 9)",
        ),
        bad(
            312,
            "decode",
            "field `ts`: 1.5 is not a valid long: not an integer (fraction or exponent)",
        ),
        bad(
            313,
            "decode",
            "field `uuid`: null is not allowed: the field is a non-nullable string",
        ),
    ]
}

/// The snapshot read by hudi-rs 0.5.0, as uuid → row, checking the meta columns on the way.
fn read_table(bucket: &str) -> BTreeMap<String, Row> {
    let uri = format!("s3://{bucket}/tables/trips");
    let mut out = BTreeMap::new();
    for r in read_rows(&uri, "hudi", &["snapshot"]) {
        let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        let uuid = s("uuid").expect("uuid");
        let city = s("city").expect("city");
        assert_eq!(s("_hoodie_record_key").as_deref(), Some(uuid.as_str()));
        assert_eq!(s("_hoodie_partition_path"), Some(format!("city={city}")));
        assert!(!r["_hoodie_is_deleted"].as_bool().unwrap_or(false), "{r:?}");
        let row = (
            r["ts"].as_i64().expect("ts"),
            s("rider"),
            r["fare"].as_f64(),
            city,
        );
        assert!(out.insert(uuid.clone(), row).is_none(), "duplicate {uuid}");
    }
    out
}

/// Completed instants on the table's timeline.
pub(crate) async fn completed_commits(bucket: &str) -> Vec<String> {
    objects(bucket, "tables/trips/.hoodie/")
        .await
        .into_keys()
        .filter_map(|k| {
            k.strip_prefix("tables/trips/.hoodie/")
                .and_then(|n| n.strip_suffix(".commit"))
                .filter(|n| !n.contains('/') && !n.contains('.'))
                .map(str::to_string)
        })
        .collect()
}

/// Checks one EMF document against the specification and returns its metric values by name.
pub(crate) fn check_emf(doc: &Value) -> BTreeMap<String, u64> {
    let aws = &doc["_aws"];
    assert!(aws["Timestamp"].is_i64(), "Timestamp: {doc}");
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics");
    assert_eq!(directives.len(), 1, "{doc}");
    let d = &directives[0];
    assert_eq!(d["Namespace"], "MskHudiSink");
    for set in d["Dimensions"].as_array().expect("Dimensions") {
        for name in set.as_array().expect("dimension set") {
            let name = name.as_str().expect("dimension name");
            assert!(doc[name].is_string(), "dimension {name} missing: {doc}");
        }
    }
    let mut values = BTreeMap::new();
    for m in d["Metrics"].as_array().expect("Metrics") {
        let name = m["Name"].as_str().expect("Name").to_string();
        assert!(m["Unit"].is_string(), "{m}");
        let value = doc[&name]
            .as_u64()
            .unwrap_or_else(|| panic!("metric {name} is not a number in {doc}"));
        values.insert(name, value);
    }
    values
}

/// Writes a lock item of a holder that died (Hudi's lock client attributes), so that the next
/// acquisition has to wait out its lease before stealing it.
async fn plant_dead_holder(deployment: &Deployment) {
    let ddb = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    ddb.put_item()
        .table_name(&deployment.lock_table)
        .item("key", AttributeValue::S(deployment.lock_key.clone()))
        .item("ownerName", AttributeValue::S("crashed-writer-host".into()))
        .item(
            "leaseDuration",
            AttributeValue::S(STALE_LEASE_MS.to_string()),
        )
        .item(
            "recordVersionNumber",
            AttributeValue::S("dead-holder-version".into()),
        )
        .send()
        .await
        .expect("plant lock item");
}

#[test]
fn functions_under_cargo_lambda_watch_process_every_sample_exactly_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let port = free_port();
    let deployment = rt.block_on(deploy(port));
    let mut lambdas = Lambdas::start(&deployment, port);
    let events = workspace_root().join("events");
    let started_ms = chrono::Utc::now().timestamp_millis();

    // The coordinator answers a scheduled table-services run.
    let services = lambdas.invoke_ok(COORDINATOR, Data::Ascii("{}"));
    assert_eq!(services["status"], "done", "{services}");
    assert!(services["lock_wait_ms"].is_u64(), "{services}");

    // Every sample once, in order; before the third, a dead holder sits on the table lock.
    let mut reports = Vec::new();
    for (i, sample) in SAMPLES.iter().enumerate() {
        if i == 2 {
            rt.block_on(plant_dead_holder(&deployment));
        }
        let report = lambdas.invoke_ok(WRITER, Data::File(&events.join(sample)));
        reports.push((sample.to_string(), report));
    }
    let mut instants = Vec::new();
    for ((sample, report), (name, c, _)) in reports.iter().zip(EXPECTED_COUNTS) {
        assert_eq!(sample, name);
        let n = |k: &str| {
            report[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {report}"))
        };
        let w = |k: &str| report["counts"][k].as_u64().expect("count");
        let actual = [
            n("records_in"),
            w("inserted") + w("updated"),
            w("deduped"),
            w("deleted"),
            w("ignored_older"),
            w("delete_misses"),
            n("dead_lettered"),
        ];
        assert_eq!(&actual, c, "{sample}: {report}");
        assert_eq!(n("skipped"), 0, "{sample}");
        let instant = report["instant"].as_str().expect("committed instant");
        instants.push(instant.to_string());
        if actual[1] > 0 {
            assert!(n("files") > 0 && n("bytes") > 0, "{sample}: {report}");
        }
    }
    // The planted holder was waited out: at least its lease, by the coordinator, reported by the writer.
    let lock_wait = reports[2].1["lock_wait_ms"].as_u64().expect("lock_wait_ms");
    assert!(
        lock_wait >= STALE_LEASE_MS,
        "lock wait {lock_wait} ms: {}",
        reports[2].1
    );

    // The table, read by hudi-rs 0.5.0, equals the expected rows; one commit per sample, in order.
    let expected = expected_rows();
    assert_eq!(read_table(&deployment.bucket), expected);
    let commits = rt.block_on(completed_commits(&deployment.bucket));
    let mut sorted = instants.clone();
    sorted.sort();
    assert_eq!(instants, sorted, "instants increase with every batch");
    assert_eq!(commits, instants);

    // Dead letters, read back from S3.
    let mut letters: Vec<(String, i64, i64, String, String)> = rt
        .block_on(objects(&deployment.bucket, "dead-letters/"))
        .values()
        .flat_map(|body| {
            String::from_utf8_lossy(body)
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("dead letter JSON"))
                .collect::<Vec<_>>()
        })
        .map(|d| {
            (
                d["topic"].as_str().expect("topic").to_string(),
                d["partition"].as_i64().expect("partition"),
                d["offset"].as_i64().expect("offset"),
                d["stage"].as_str().expect("stage").to_string(),
                d["reason"].as_str().expect("reason").to_string(),
            )
        })
        .collect();
    letters.sort();
    assert_eq!(letters, expected_dead_letters());

    // An invalid envelope is a function error with a clear message, and nothing dies.
    let bad = lambdas.invoke(
        WRITER,
        Data::Ascii(r#"{"eventSource":"aws:sqs","Records":[]}"#),
    );
    let said = format!("{}{}", bad.stdout, bad.stderr);
    assert!(!bad.ok, "an SQS event was accepted: {said}");
    assert!(
        said.contains("InvalidEvent")
            && said.contains("not an MSK or self-managed Kafka event-source-mapping payload"),
        "{said}"
    );
    assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());

    // Redelivering every sample changes nothing: all skipped, no commit, same rows, no new dead letter.
    let letters_before = rt.block_on(objects(&deployment.bucket, "dead-letters/"));
    for sample in SAMPLES {
        let report = lambdas.invoke_ok(WRITER, Data::File(&events.join(sample)));
        assert_eq!(
            report["skipped"], report["records_in"],
            "{sample}: {report}"
        );
        assert_eq!(report["instant"], Value::Null, "{sample}: {report}");
    }
    assert_eq!(read_table(&deployment.bucket), expected);
    assert_eq!(rt.block_on(completed_commits(&deployment.bucket)), instants);
    assert_eq!(
        rt.block_on(objects(&deployment.bucket, "dead-letters/"))
            .len(),
        letters_before.len()
    );

    // The coordinator's own requests (samples in events/coordinator-*.json, if any).
    check_coordinator_samples(&lambdas, &events);
    assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());

    // One EMF line per successful writer invocation, in order, whose counts add up and match the answers.
    let writer_out = lambdas.writer().stdout();
    let emf: Vec<Value> = writer_out
        .iter()
        .filter(|l| l.contains("\"_aws\""))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("EMF line ({e}): {l}")))
        .collect();
    assert_eq!(emf.len(), 2 * SAMPLES.len(), "{writer_out:#?}");
    for (i, doc) in emf.iter().enumerate() {
        let v = check_emf(doc);
        let (_, counts, oldest) = EXPECTED_COUNTS[i % SAMPLES.len()];
        let sum: u64 = [
            "RecordsSkipped",
            "RecordsWritten",
            "RecordsDeduped",
            "RecordsDeleted",
            "RecordsIgnoredOlder",
            "DeleteMisses",
            "RecordsDeadLettered",
            "TombstonesSkipped",
        ]
        .iter()
        .map(|k| v[*k])
        .sum();
        assert_eq!(sum, v["RecordsIn"], "{doc}");
        assert_eq!(v["RecordsIn"], counts[0], "{doc}");
        assert_eq!(doc["Table"], "trips");
        if i < SAMPLES.len() {
            assert_eq!(
                [
                    v["RecordsWritten"],
                    v["RecordsDeduped"],
                    v["RecordsDeleted"],
                    v["RecordsDeadLettered"]
                ],
                [counts[1], counts[2], counts[3], counts[6]],
                "{doc}"
            );
            assert_eq!(doc["Instant"].as_str(), Some(instants[i].as_str()));
            assert!(
                v["CommitLatency"] >= 1,
                "a commit through Lambda and moto takes time: {doc}"
            );
        } else {
            assert_eq!(v["RecordsSkipped"], counts[0], "{doc}");
            assert_eq!(doc["Instant"], Value::Null);
        }
        // Lag: at least the age the oldest record had when the test started.
        let lag = v.get("MaxLag").copied().expect("MaxLag");
        assert!(lag as i64 >= started_ms - oldest, "{doc}");
    }
    assert!(check_emf(&emf[2])["LockWait"] >= STALE_LEASE_MS);
    // Logs are JSON lines (function processes started by the test only; watch's own lines are text).
    for proc in lambdas.functions.values() {
        let lines = proc.stderr();
        assert!(!lines.is_empty(), "{} logged nothing", proc.name);
        for line in lines.iter().filter(|l| !l.trim().is_empty()) {
            let v: Map<String, Value> = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: log line is not JSON ({e}): {line}", proc.name));
            assert!(
                v.contains_key("level") && v.contains_key("fields"),
                "{line}"
            );
        }
    }
}

/// Invokes the coordinator with every `events/coordinator-*.json` sample: each answers with a protocol
/// status (or, for a request about an instant that does not exist, a clean function error), and an instant
/// begun by a sample is aborted again so that nothing is left pending.
fn check_coordinator_samples(lambdas: &Lambdas, events: &Path) {
    let mut samples: Vec<PathBuf> = std::fs::read_dir(events)
        .expect("events dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("coordinator-") && n.ends_with(".json"))
        })
        .collect();
    samples.sort();
    for sample in samples {
        let out = lambdas.invoke(COORDINATOR, Data::File(&sample));
        if !out.ok {
            assert!(
                format!("{}{}", out.stdout, out.stderr).contains("CoordinatorFailed"),
                "{}: {}{}",
                sample.display(),
                out.stdout,
                out.stderr
            );
            continue;
        }
        let answer: Value = serde_json::from_str(&out.stdout).expect("JSON answer");
        let status = answer["status"].as_str().expect("status");
        assert!(
            [
                "begun",
                "committed",
                "conflict",
                "already_committed",
                "rolled_back",
                "done",
                "joined",
                "waiting",
                "window_committed",
                "excluded"
            ]
            .contains(&status),
            "{}: {answer}",
            sample.display()
        );
        let name = sample
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let expected = match name {
            "coordinator-begin.json" => Some("begun"),
            "coordinator-services.json" | "coordinator-abort.json" => Some("done"),
            // About a window that does not exist.
            "coordinator-submit.json" | "coordinator-close.json" => Some("rolled_back"),
            _ => None,
        };
        if let Some(expected) = expected {
            assert_eq!(status, expected, "{name}: {answer}");
        }
        if name == "coordinator-join.json" {
            // Joined, or told to wait for the next slot when the samples' window just used this one.
            assert!(["joined", "waiting"].contains(&status), "{name}: {answer}");
        }
        if status == "begun" {
            let instant = answer["instant"].as_str().expect("instant");
            let abort = json!({"op": "abort", "instant": instant}).to_string();
            let done = lambdas.invoke_ok(COORDINATOR, Data::Ascii(&abort));
            assert_eq!(done["status"], "done");
        }
        if status == "joined" {
            // The sample's member leaves with an empty contribution: the window, with nothing to commit, is
            // rolled back, and nothing is left pending.
            let sample: Value =
                serde_json::from_slice(&std::fs::read(&sample).expect("sample")).expect("JSON");
            let leave = json!({
                "op": "submit",
                "instant": answer["instant"],
                "end_ms": answer["end_ms"],
                "contribution": {
                    "member": sample["member"], "operation": "UPSERT", "write_stats": [],
                    "schema": "", "offsets": []
                }
            })
            .to_string();
            let left = lambdas.invoke_ok(COORDINATOR, Data::Ascii(&leave));
            assert!(
                ["rolled_back", "waiting"].contains(&left["status"].as_str().unwrap_or_default()),
                "{left}"
            );
        }
    }
}
