//! S3 error paths against a scripted HTTP server (what moto cannot be made to do): conditional-put
//! conflicts, throttling and 5xx retries, error messages and timeouts.

use super::*;

mod scripted {
    //! A one-connection-per-request HTTP/1.1 server on 127.0.0.1 answering from a script, recording each
    //! request's head.

    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// One scripted answer.
    #[derive(Clone, Debug)]
    pub enum Reply {
        /// Status, extra headers, body.
        Status(u16, Vec<(&'static str, String)>, String),
        /// Read the request, never answer (until the client gives up).
        Hang,
        /// Headers announcing `len` body bytes, a few of them, then silence.
        StallBody(usize),
    }

    /// An S3 error document.
    pub fn s3_error(status: u16, code: &str, message: &str) -> Reply {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>req-{status}</RequestId></Error>"
        );
        Reply::Status(
            status,
            vec![("Content-Type", "application/xml".into())],
            body,
        )
    }

    /// A 200 to a PutObject.
    pub fn put_ok() -> Reply {
        Reply::Status(
            200,
            vec![("ETag", "\"0123456789abcdef\"".into())],
            String::new(),
        )
    }

    pub struct Server {
        pub url: String,
        /// Request heads (request line and headers, lower-cased names) in arrival order.
        pub requests: Arc<Mutex<Vec<String>>>,
    }

    pub fn start(script: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        std::thread::spawn(move || {
            let mut script = script.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let reply = script
                    .next()
                    .unwrap_or_else(|| s3_error(500, "ScriptExhausted", "no more replies"));
                let log = log.clone();
                std::thread::spawn(move || serve(stream, reply, &log));
            }
        });
        Server { url, requests }
    }

    fn serve(stream: TcpStream, reply: Reply, log: &Mutex<Vec<String>>) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = String::new();
        let mut content_length = 0usize;
        let mut chunked = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
            head.push_str(&lower);
        }
        // Drain the body so that closing the socket does not reset the connection under the answer.
        if chunked {
            let mut tail = Vec::new();
            let mut byte = [0u8; 1];
            while !tail.ends_with(b"0\r\n\r\n") && reader.read(&mut byte).unwrap_or(0) == 1 {
                tail.push(byte[0]);
            }
        } else {
            let mut body = vec![0u8; content_length];
            let _ = reader.read_exact(&mut body);
        }
        log.lock().unwrap_or_else(|e| e.into_inner()).push(head);
        let mut stream = stream;
        match reply {
            Reply::Status(status, headers, body) => {
                let mut out = format!(
                    "HTTP/1.1 {status} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let _ = stream.write_all(out.as_bytes());
            }
            Reply::Hang => std::thread::sleep(Duration::from_secs(20)),
            Reply::StallBody(len) => {
                let out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\nabc"
                );
                let _ = stream.write_all(out.as_bytes());
                let _ = stream.flush();
                std::thread::sleep(Duration::from_secs(20));
            }
        }
    }
}

/// An `S3Storage` against a scripted server, with short timeouts (1.5 s per call, 400 ms per attempt).
async fn scripted_store(server: &scripted::Server, max_attempts: u32) -> S3Storage {
    scripted_store_with(
        server,
        max_attempts,
        Duration::from_millis(1500),
        Duration::from_millis(400),
    )
    .await
}

async fn scripted_store_with(
    server: &scripted::Server,
    max_attempts: u32,
    operation_timeout: Duration,
    attempt_timeout: Duration,
) -> S3Storage {
    hudi_sink::aws_clients::install_crypto_provider();
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test",
            "testtesttest",
            None,
            None,
            "test",
        ))
        .load()
        .await;
    let options = S3Options {
        endpoint_url: Some(server.url.clone()),
        force_path_style: true,
        operation_timeout,
        attempt_timeout,
        connect_timeout: Duration::from_millis(3100),
        max_attempts,
    };
    S3Storage::from_uri("s3://bkt/tables/t1", &sdk, options).expect("uri")
}

fn requests(server: &scripted::Server) -> Vec<String> {
    server
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_conditional_put_retries_409_conflicts_until_a_definite_answer() {
    use scripted::{put_ok, s3_error};
    let conflict = || {
        s3_error(
            409,
            "ConditionalRequestConflict",
            "A conflicting conditional operation is in progress",
        )
    };
    // 409, 409, then 412: the object exists.
    let server = scripted::start(vec![
        conflict(),
        conflict(),
        s3_error(
            412,
            "PreconditionFailed",
            "At least one precondition failed",
        ),
    ]);
    let store = scripted_store(&server, 5).await;
    let outcome = store
        .put_if_absent(".hoodie/1.commit", Bytes::from_static(b"c"))
        .await
        .expect("412");
    assert_eq!(outcome, PutOutcome::AlreadyExists);
    let seen = requests(&server);
    assert_eq!(seen.len(), 3);
    for head in &seen {
        assert!(
            head.starts_with("put /bkt/tables/t1/.hoodie/1.commit"),
            "{head}"
        );
        assert!(
            head.contains("if-none-match: *"),
            "conditional header missing: {head}"
        );
    }

    // 409, then 200: created.
    let server = scripted::start(vec![conflict(), put_ok()]);
    let store = scripted_store(&server, 5).await;
    let outcome = store
        .put_if_absent("x", Bytes::from_static(b"c"))
        .await
        .expect("created");
    assert_eq!((outcome, requests(&server).len()), (PutOutcome::Created, 2));

    // Conflicts on every attempt: a retryable error that keeps S3's code and message.
    let server = scripted::start(vec![conflict(), conflict(), conflict(), conflict()]);
    let store = scripted_store(&server, 3).await;
    match store.put_if_absent("x", Bytes::from_static(b"c")).await {
        Err(StorageError::Remote {
            message, retryable, ..
        }) => {
            assert!(retryable);
            assert!(message.contains("ConditionalRequestConflict"), "{message}");
            assert!(
                message.contains("A conflicting conditional operation is in progress"),
                "{message}"
            );
        }
        other => panic!("expected a remote error, got {other:?}"),
    }
    assert_eq!(requests(&server).len(), 3, "bounded by max_attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_throttling_and_5xx_are_retried_by_the_sdk() {
    use scripted::{put_ok, s3_error};
    let server = scripted::start(vec![
        s3_error(503, "SlowDown", "Please reduce your request rate."),
        s3_error(500, "InternalError", "We encountered an internal error."),
        put_ok(),
    ]);
    // The SDK backs off between attempts (up to seconds): give the call room.
    let store =
        scripted_store_with(&server, 3, Duration::from_secs(30), Duration::from_secs(5)).await;
    store
        .put("data.parquet", Bytes::from_static(b"p"))
        .await
        .expect("third attempt succeeds");
    assert_eq!(requests(&server).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_errors_keep_the_service_message_and_say_whether_to_retry() {
    use scripted::s3_error;
    let server = scripted::start(vec![s3_error(
        403,
        "AccessDenied",
        "Denied by test policy 7f3a",
    )]);
    let store = scripted_store(&server, 3).await;
    match store.get(".hoodie/hoodie.properties").await {
        Err(StorageError::Remote {
            operation,
            path,
            message,
            retryable,
        }) => {
            assert_eq!(operation, "GetObject");
            assert_eq!(path, "s3://bkt/tables/t1/.hoodie/hoodie.properties");
            assert!(message.contains("HTTP 403"), "{message}");
            assert!(message.contains("AccessDenied"), "{message}");
            assert!(message.contains("Denied by test policy 7f3a"), "{message}");
            assert!(!retryable, "access denied is not transient");
        }
        other => panic!("expected a remote error, got {other:?}"),
    }
    assert_eq!(requests(&server).len(), 1, "a 403 is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_calls_time_out() {
    use scripted::Reply;
    // No answer at all: every attempt times out after 400 ms; the SDK makes 2 attempts.
    let server = scripted::start(vec![Reply::Hang, Reply::Hang, Reply::Hang]);
    let store = scripted_store(&server, 2).await;
    let start = std::time::Instant::now();
    let err = store.head("x").await.expect_err("timeout");
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
    match err {
        StorageError::Remote {
            retryable, message, ..
        } => {
            assert!(retryable, "{message}");
            assert!(
                message.to_lowercase().contains("timeout")
                    || message.to_lowercase().contains("timed out"),
                "{message}"
            );
        }
        other => panic!("expected a remote error, got {other:?}"),
    }
    // Headers arrive but the body stalls: the operation deadline cuts the download.
    let server = scripted::start(vec![Reply::StallBody(1000)]);
    let store = scripted_store(&server, 2).await;
    let start = std::time::Instant::now();
    let err = store.get("x").await.expect_err("stalled body");
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
    assert!(
        matches!(
            err,
            StorageError::Remote {
                retryable: true,
                ..
            }
        ),
        "{err:?}"
    );
}
