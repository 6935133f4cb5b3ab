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

/// The endpoint if moto was started by this process (the Python reader then reads `s3://` from it).
pub fn endpoint_if_started() -> Option<&'static str> {
    MOTO.get().map(|m| m.endpoint.as_str())
}
