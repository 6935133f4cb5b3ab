//! A moto server (S3 + DynamoDB emulator from PyPI) on 127.0.0.1, started once per test binary.
//!
//! The server runs `tests/python/moto_server.py`, which exits when its stdin closes, i.e. when this test
//! process ends. Tests isolate themselves by using their own bucket / table names ([`unique_name`]).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The running server.
pub struct Moto {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    _child: Mutex<Child>,
}

static MOTO: OnceLock<Moto> = OnceLock::new();

/// Starts moto on first use and returns it; panics with moto's output if it cannot start.
pub fn moto() -> &'static Moto {
    MOTO.get_or_init(|| {
        let script = super::workspace_root().join("tests/python/moto_server.py");
        let mut child = Command::new(super::python::python())
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server.py");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read moto port");
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("moto did not start: {line:?}"));
        // Static credentials for every SDK client the library builds from the environment.
        std::env::set_var("AWS_ACCESS_KEY_ID", "test");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testtesttest");
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::remove_var("AWS_PROFILE");
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            _child: Mutex::new(child),
        }
    })
}

/// An SDK configuration pointing at moto with dummy credentials.
pub async fn sdk_config() -> aws_config::SdkConfig {
    let moto = moto();
    hudi_sink::aws_clients::install_crypto_provider();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&moto.endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test",
            "testtesttest",
            None,
            None,
            "moto",
        ))
        .load()
        .await
}

/// An S3 client for moto (path-style addressing, as moto on an IP address needs).
pub async fn s3_client() -> aws_sdk_s3::Client {
    let conf = sdk_config().await;
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&conf)
            .force_path_style(true)
            .build(),
    )
}

/// A name unique within this test process, usable as bucket or table name (`prefix-<pid>-<n>`).
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Creates a bucket in moto and returns its name.
pub async fn new_bucket(prefix: &str) -> String {
    let name = unique_name(prefix);
    s3_client()
        .await
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("create bucket");
    name
}

/// Uploads `body` to `bucket/key` in moto.
pub async fn put_object(bucket: &str, key: &str, body: &[u8]) {
    s3_client()
        .await
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(body.to_vec().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {key}: {e}"));
}

/// The endpoint if moto was started by this process (the Python reader then reads `s3://` from it).
pub fn endpoint_if_started() -> Option<&'static str> {
    MOTO.get().map(|m| m.endpoint.as_str())
}

/// Every key under `prefix` in `bucket`, with its size (all pages of the listing).
pub async fn object_sizes(bucket: &str, prefix: &str) -> std::collections::BTreeMap<String, i64> {
    let mut out = std::collections::BTreeMap::new();
    let mut pages = s3_client()
        .await
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for o in page.expect("list page").contents() {
            out.insert(
                o.key().expect("key").to_string(),
                o.size().unwrap_or_default(),
            );
        }
    }
    out
}

/// The bytes of one object.
pub async fn object_bytes(bucket: &str, key: &str) -> Vec<u8> {
    s3_client()
        .await
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e}"))
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec()
}
