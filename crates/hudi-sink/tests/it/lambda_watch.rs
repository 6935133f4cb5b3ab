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
    let mut command = Command::new(cargo());
    // Without the variables cargo sets for this test process: some build scripts track them (ring's tracks
    // `CARGO_MANIFEST_DIR`), and with them set the build would recompile ring and all that depends on it.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let set_for_tests = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_CRATE_",
        ]
        .iter()
        .any(|p| key.starts_with(p))
            || [
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&key.as_ref());
        if set_for_tests {
            command.env_remove(key.as_ref());
        }
    }
    let out = command
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

mod samples;
