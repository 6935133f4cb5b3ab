//! The `Storage` contract (module doc of `hudi_sink::storage`), checked by one generic suite against every
//! backend: `LocalStorage`, `MemoryStorage` and `S3Storage` on moto (rooted under a key prefix and at the
//! bucket root). Then what only S3 has: pagination, isolation from neighbouring keys, error mapping and
//! retries/timeouts against a scripted HTTP server, and a whole table written through `open_storage` to
//! `s3://` and read back row-exact by the independent hudi-rs reader.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use bytes::Bytes;
use hudi_sink::clock::SystemClock;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::{
    open_storage, LocalStorage, MemoryStorage, ObjectMeta, PutOutcome, S3Options, S3Storage,
    Storage, StorageError,
};
use hudi_sink::write::TableWriter;
use hudi_sink::write::{WriteConfig, WriteOperation};
use serde_json::{Map, Value};
use tokio::task::JoinSet;

use crate::common::canon::canon_value;
use crate::common::gen::{gen_batch, with_column};
use crate::common::moto;
use crate::common::python::read_rows;

mod multipart;

// ---------------------------------------------------------------------------------------------------------
// The generic suite
// ---------------------------------------------------------------------------------------------------------

/// A fresh, empty store for one check (and whatever keeps it alive).
struct Fresh {
    store: Arc<dyn Storage>,
    _dir: Option<tempfile::TempDir>,
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    Local,
    Memory,
    /// A new moto bucket per check, the table under `warehouse/t1`, with neighbouring keys planted around
    /// it that must never show up.
    S3Prefixed,
    /// A new moto bucket per check, the table at the bucket root.
    S3Root,
}

/// Keys planted next to a prefixed S3 table: siblings sharing the prefix as a string, and keys outside.
const S3_NEIGHBOURS: &[&str] = &[
    "warehouse/t10",
    "warehouse/t1x/a/d.txt",
    "warehouse/t1-other/a/b/c.bin",
    "warehouse/a/b/c.bin",
    "outside.txt",
];

impl Backend {
    async fn fresh(self) -> Fresh {
        match self {
            Backend::Local => {
                let dir = tempfile::tempdir().expect("tempdir");
                let store = Arc::new(LocalStorage::new(dir.path().join("table")));
                Fresh {
                    store,
                    _dir: Some(dir),
                }
            }
            Backend::Memory => Fresh {
                store: Arc::new(MemoryStorage::new("memory://table")),
                _dir: None,
            },
            Backend::S3Prefixed | Backend::S3Root => {
                let bucket = moto::new_bucket("contract").await;
                let prefix = if matches!(self, Backend::S3Prefixed) {
                    "warehouse/t1"
                } else {
                    ""
                };
                if !prefix.is_empty() {
                    let client = moto::s3_client().await;
                    for key in S3_NEIGHBOURS {
                        client
                            .put_object()
                            .bucket(&bucket)
                            .key(*key)
                            .body(Bytes::from_static(b"neighbour").into())
                            .send()
                            .await
                            .expect("plant neighbour");
                    }
                }
                Fresh {
                    store: Arc::new(s3_store(&bucket, prefix).await),
                    _dir: None,
                }
            }
        }
    }
}

/// An `S3Storage` on moto built the way users build one (`from_uri`), with short timeouts.
async fn s3_store(bucket: &str, prefix: &str) -> S3Storage {
    let sdk = moto::sdk_config().await;
    let options = S3Options {
        endpoint_url: Some(moto::moto().endpoint.clone()),
        force_path_style: true,
        operation_timeout: Duration::from_secs(60),
        attempt_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(3),
        max_attempts: 3,
    };
    S3Storage::from_uri(&format!("s3://{bucket}/{prefix}"), &sdk, options).expect("s3 uri")
}

type Check = fn(Arc<dyn Storage>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Every check of the contract; each gets a fresh store.
const CHECKS: &[(&str, Check)] = &[
    ("put_get_head_range", |s| {
        Box::pin(check_put_get_head_range(s))
    }),
    ("empty_object", |s| Box::pin(check_empty_object(s))),
    ("list_prefix_semantics", |s| {
        Box::pin(check_list_prefix_semantics(s))
    }),
    ("list_many_pages", |s| Box::pin(check_list_many_pages(s))),
    ("put_overwrites", |s| Box::pin(check_put_overwrites(s))),
    ("put_if_absent", |s| Box::pin(check_put_if_absent(s))),
    ("put_if_absent_race", |s| {
        Box::pin(check_put_if_absent_race(s))
    }),
    ("delete_idempotent", |s| {
        Box::pin(check_delete_idempotent(s))
    }),
    ("not_found", |s| Box::pin(check_not_found(s))),
    ("hostile_paths", |s| Box::pin(check_hostile_paths(s))),
    ("special_characters", |s| {
        Box::pin(check_special_characters(s))
    }),
    ("multipart_content_and_size", |s| {
        Box::pin(multipart::check_content_and_size(s))
    }),
    ("multipart_abort_leaves_nothing", |s| {
        Box::pin(multipart::check_abort_leaves_nothing(s))
    }),
];

async fn run_contract(backend: Backend) {
    for (name, check) in CHECKS {
        eprintln!("{backend:?}: {name}");
        let fresh = backend.fresh().await;
        check(fresh.store.clone()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_storage_meets_the_contract() {
    run_contract(Backend::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_storage_meets_the_contract() {
    run_contract(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_storage_under_a_prefix_meets_the_contract() {
    run_contract(Backend::S3Prefixed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_storage_at_the_bucket_root_meets_the_contract() {
    run_contract(Backend::S3Root).await;
}

fn pattern(len: usize, salt: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect::<Vec<u8>>()
        .into()
}

fn paths(listed: &[ObjectMeta]) -> Vec<&str> {
    listed.iter().map(|o| o.path.as_str()).collect()
}

fn meta(path: &str, size: u64) -> ObjectMeta {
    ObjectMeta {
        path: path.into(),
        size,
    }
}

fn assert_range_error(result: Result<Bytes, StorageError>, want: (u64, u64, u64), what: &str) {
    match result {
        Err(StorageError::Range {
            start, end, size, ..
        }) => assert_eq!((start, end, size), want, "{what}"),
        other => panic!("{what}: expected a range error, got {other:?}"),
    }
}

async fn check_put_get_head_range(s: Arc<dyn Storage>) {
    let p = "a/b/c.bin";
    let data = pattern(1000, 3);
    s.put(p, data.clone()).await.expect("put");
    assert_eq!(s.get(p).await.expect("get"), data);
    assert_eq!(s.head(p).await.expect("head"), Some(meta(p, 1000)));
    assert_eq!(s.head("a/b/nope").await.expect("head missing"), None);
    assert_eq!(
        s.head("a/b").await.expect("head of a directory"),
        None,
        "a directory is not an object"
    );
    for r in [0..10u64, 990..1000, 0..1000, 500..501, 7..7, 1000..1000] {
        let got = s
            .get_range(p, r.clone())
            .await
            .unwrap_or_else(|e| panic!("range {r:?}: {e}"));
        assert_eq!(
            got,
            data.slice(r.start as usize..r.end as usize),
            "range {r:?}"
        );
    }
    assert_range_error(
        s.get_range(p, 990..1001).await,
        (990, 1001, 1000),
        "past the end",
    );
    assert_range_error(
        s.get_range(p, 1000..1001).await,
        (1000, 1001, 1000),
        "at the end",
    );
    assert_range_error(
        s.get_range(p, 2000..3000).await,
        (2000, 3000, 1000),
        "beyond the end",
    );
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 10..5;
    assert_range_error(s.get_range(p, reversed).await, (10, 5, 1000), "reversed");
}

async fn check_empty_object(s: Arc<dyn Storage>) {
    s.put("e/empty", Bytes::new()).await.expect("put empty");
    assert_eq!(s.get("e/empty").await.expect("get").len(), 0);
    assert_eq!(
        s.head("e/empty").await.expect("head"),
        Some(meta("e/empty", 0))
    );
    assert_eq!(
        s.get_range("e/empty", 0..0)
            .await
            .expect("empty range")
            .len(),
        0
    );
    assert_range_error(
        s.get_range("e/empty", 0..1).await,
        (0, 1, 0),
        "range of an empty object",
    );
    assert_eq!(s.list("e/").await.expect("list"), vec![meta("e/empty", 0)]);
    assert_eq!(
        s.put_if_absent("e/empty2", Bytes::new())
            .await
            .expect("pia empty"),
        PutOutcome::Created
    );
    assert_eq!(
        s.head("e/empty2").await.expect("head"),
        Some(meta("e/empty2", 0))
    );
}

async fn check_list_prefix_semantics(s: Arc<dyn Storage>) {
    for (p, len) in [
        ("a/b/c.txt", 5),
        ("a/d.txt", 1),
        ("ab.txt", 2),
        ("b.txt", 3),
        ("a/b/e/f.txt", 4),
    ] {
        s.put(p, pattern(len, 1)).await.expect("put");
    }
    assert_eq!(
        s.list("a/").await.expect("list a/"),
        vec![
            meta("a/b/c.txt", 5),
            meta("a/b/e/f.txt", 4),
            meta("a/d.txt", 1)
        ],
        "a/ is a directory prefix"
    );
    assert_eq!(
        paths(&s.list("a").await.expect("list a")),
        vec!["a/b/c.txt", "a/b/e/f.txt", "a/d.txt", "ab.txt"],
        "a is a string prefix"
    );
    assert_eq!(
        s.list("").await.expect("list all"),
        vec![
            meta("a/b/c.txt", 5),
            meta("a/b/e/f.txt", 4),
            meta("a/d.txt", 1),
            meta("ab.txt", 2),
            meta("b.txt", 3)
        ]
    );
    assert_eq!(
        paths(&s.list("a/b/").await.expect("list a/b/")),
        vec!["a/b/c.txt", "a/b/e/f.txt"]
    );
    assert_eq!(
        paths(&s.list("a/b/c.txt").await.expect("exact")),
        vec!["a/b/c.txt"]
    );
    assert_eq!(
        paths(&s.list("a/b/c").await.expect("partial name")),
        vec!["a/b/c.txt"]
    );
    assert!(s.list("zzz/").await.expect("list missing").is_empty());
    assert!(s.list("a/x").await.expect("list missing").is_empty());
}

async fn check_list_many_pages(s: Arc<dyn Storage>) {
    const N: usize = 1100;
    let mut expected = Vec::new();
    let mut tasks = JoinSet::new();
    for i in 0..N {
        let p = format!("many/obj-{i:05}");
        let len = i % 13;
        expected.push(meta(&p, len as u64));
        let s = s.clone();
        tasks.spawn(async move { s.put(&p, pattern(len, i as u8)).await });
        if tasks.len() >= 32 {
            tasks
                .join_next()
                .await
                .expect("task")
                .expect("join")
                .expect("put");
        }
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("join").expect("put");
    }
    s.put("many-other/x", Bytes::from_static(b"x"))
        .await
        .expect("put");
    s.put("man.txt", Bytes::from_static(b"x"))
        .await
        .expect("put");
    let listed = s.list("many/").await.expect("list");
    assert_eq!(listed.len(), N);
    assert_eq!(listed, expected, "every object, sorted, with its size");
    assert_eq!(s.list("many").await.expect("list").len(), N + 1);
    assert_eq!(s.list("").await.expect("list").len(), N + 2);
}

async fn check_put_overwrites(s: Arc<dyn Storage>) {
    s.put("o/x", Bytes::from_static(b"one")).await.expect("put");
    s.put("o/x", Bytes::from_static(b"second, longer"))
        .await
        .expect("overwrite");
    assert_eq!(&s.get("o/x").await.expect("get")[..], b"second, longer");
    assert_eq!(s.head("o/x").await.expect("head"), Some(meta("o/x", 14)));
    s.put("o/x", Bytes::from_static(b"3"))
        .await
        .expect("shrink");
    assert_eq!(&s.get("o/x").await.expect("get")[..], b"3");
    assert_eq!(s.list("o/").await.expect("list"), vec![meta("o/x", 1)]);
}

async fn check_put_if_absent(s: Arc<dyn Storage>) {
    let p = ".hoodie/20250101000000000.commit";
    assert_eq!(
        s.put_if_absent(p, Bytes::from_static(b"first"))
            .await
            .expect("create"),
        PutOutcome::Created
    );
    assert_eq!(
        s.put_if_absent(p, Bytes::from_static(b"second"))
            .await
            .expect("again"),
        PutOutcome::AlreadyExists
    );
    assert_eq!(
        &s.get(p).await.expect("get")[..],
        b"first",
        "left unchanged"
    );
    // An object made by a plain put counts as existing too.
    s.put(".hoodie/other", Bytes::from_static(b"o"))
        .await
        .expect("put");
    assert_eq!(
        s.put_if_absent(".hoodie/other", Bytes::from_static(b"p"))
            .await
            .expect("exists"),
        PutOutcome::AlreadyExists
    );
    s.delete(p).await.expect("delete");
    assert_eq!(
        s.put_if_absent(p, Bytes::from_static(b"third"))
            .await
            .expect("recreate"),
        PutOutcome::Created
    );
    assert_eq!(&s.get(p).await.expect("get")[..], b"third");
}

async fn check_put_if_absent_race(s: Arc<dyn Storage>) {
    const WRITERS: usize = 16;
    const ROUNDS: usize = 10;
    // Distinct content and length per writer, so a torn or mixed object cannot pass for any writer's.
    let content = |w: usize| -> Bytes {
        let unit = format!("writer-{w:02};");
        unit.repeat((2048 + 97 * w) / unit.len())
            .into_bytes()
            .into()
    };
    for round in 0..ROUNDS {
        let path = format!("race/{round:02}.commit");
        let barrier = Arc::new(tokio::sync::Barrier::new(WRITERS));
        let mut tasks = JoinSet::new();
        for w in 0..WRITERS {
            let (s, path, barrier, data) = (s.clone(), path.clone(), barrier.clone(), content(w));
            tasks.spawn(async move {
                barrier.wait().await;
                (w, s.put_if_absent(&path, data).await)
            });
        }
        let mut winners = Vec::new();
        while let Some(r) = tasks.join_next().await {
            let (w, outcome) = r.expect("join");
            match outcome {
                Ok(PutOutcome::Created) => winners.push(w),
                Ok(PutOutcome::AlreadyExists) => {}
                Err(e) => panic!("round {round} writer {w}: {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let stored = s.get(&path).await.expect("get");
        assert_eq!(
            stored,
            content(winners[0]),
            "round {round}: stored bytes are not the winner's"
        );
        assert_eq!(
            s.head(&path).await.expect("head").map(|m| m.size),
            Some(stored.len() as u64)
        );
    }
    assert_eq!(s.list("race/").await.expect("list").len(), ROUNDS);
}

async fn check_delete_idempotent(s: Arc<dyn Storage>) {
    s.delete("d/never-existed").await.expect("delete missing");
    s.put("d/x", Bytes::from_static(b"x")).await.expect("put");
    s.put("d/y", Bytes::from_static(b"y")).await.expect("put");
    s.delete("d/x").await.expect("delete");
    assert_eq!(s.head("d/x").await.expect("head"), None);
    assert!(s.get("d/x").await.expect_err("gone").is_not_found());
    s.delete("d/x").await.expect("delete twice");
    assert_eq!(paths(&s.list("d/").await.expect("list")), vec!["d/y"]);
    // Many at once: present and absent paths alike, more than one S3 request's worth (1,000 keys).
    let many: Vec<String> = (0..1_005).map(|i| format!("m/{i:04}")).collect();
    for p in many.iter().step_by(97) {
        s.put(p, Bytes::from_static(b"m")).await.expect("put");
    }
    s.put("m/keep", Bytes::from_static(b"k"))
        .await
        .expect("put");
    s.delete_many(&many).await.expect("delete many");
    assert_eq!(paths(&s.list("m/").await.expect("list")), vec!["m/keep"]);
    s.delete_many(&[]).await.expect("delete none");
}

async fn check_not_found(s: Arc<dyn Storage>) {
    let err = s.get("missing/x.parquet").await.expect_err("missing");
    assert!(err.is_not_found(), "get: {err}");
    let err = s
        .get_range("missing/x.parquet", 0..4)
        .await
        .expect_err("missing");
    assert!(err.is_not_found(), "get_range: {err}");
    let err = s
        .get_range("missing/x.parquet", 0..0)
        .await
        .expect_err("missing");
    assert!(err.is_not_found(), "empty get_range: {err}");
    assert_eq!(s.head("missing/x.parquet").await.expect("head"), None);
    assert!(s.list("missing/").await.expect("list").is_empty());
}

async fn check_hostile_paths(s: Arc<dyn Storage>) {
    for p in [
        "../x",
        "/abs",
        "a/../../x",
        "a//b",
        "./a",
        "a/.",
        "a\\b",
        "a\0b",
        "",
    ] {
        let data = Bytes::from_static(b"evil");
        assert!(
            matches!(
                s.put(p, data.clone()).await,
                Err(StorageError::InvalidPath { .. })
            ),
            "put {p:?} not rejected"
        );
        assert!(
            matches!(
                s.put_if_absent(p, data).await,
                Err(StorageError::InvalidPath { .. })
            ),
            "put_if_absent {p:?} not rejected"
        );
        assert!(s.get(p).await.is_err(), "get {p:?} succeeded");
    }
    assert!(
        s.list("").await.expect("list").is_empty(),
        "something was written"
    );
}

async fn check_special_characters(s: Arc<dyn Storage>) {
    let paths_in = [
        "region=a%2Fb/é ü/file name+1.parquet",
        "region=x:y=z/it's (1)&[2].parquet",
        "region=50%/中文/a~b!c$d,e;f@g.parquet",
    ];
    for (i, p) in paths_in.iter().enumerate() {
        s.put(p, pattern(10 + i, 9)).await.expect("put");
        assert_eq!(s.get(p).await.expect("get"), pattern(10 + i, 9), "{p}");
        assert_eq!(
            s.head(p).await.expect("head"),
            Some(meta(p, 10 + i as u64)),
            "{p}"
        );
        assert_eq!(
            s.get_range(p, 2..5).await.expect("range"),
            pattern(10 + i, 9).slice(2..5),
            "{p}"
        );
    }
    let mut sorted = paths_in.to_vec();
    sorted.sort();
    assert_eq!(paths(&s.list("").await.expect("list")), sorted);
    assert_eq!(
        paths(&s.list("region=a%2Fb/").await.expect("list")),
        vec![paths_in[0]]
    );
    assert_eq!(
        paths(&s.list("region=50%/中文/").await.expect("list")),
        vec![paths_in[2]]
    );
    for p in paths_in {
        s.delete(p).await.expect("delete");
    }
    assert!(s.list("").await.expect("list").is_empty());
}

// ---------------------------------------------------------------------------------------------------------
// S3 only, on moto
// ---------------------------------------------------------------------------------------------------------

/// Every key of a bucket, through the raw client.
async fn bucket_keys(bucket: &str) -> Vec<String> {
    moto::object_sizes(bucket, "").await.into_keys().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_listing_follows_continuation_tokens() {
    let bucket = moto::new_bucket("pages").await;
    let store = s3_store(&bucket, "t").await.with_list_page_size(7);
    let mut expected = Vec::new();
    for i in 0..30 {
        let p = format!("p/{i:03}");
        store.put(&p, pattern(i, 0)).await.expect("put");
        expected.push(meta(&p, i as u64));
    }
    // moto honours MaxKeys, so the listing above spans 5 pages.
    let first = moto::s3_client()
        .await
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("t/p/")
        .max_keys(7)
        .send()
        .await
        .expect("list");
    assert_eq!(
        (first.contents().len(), first.is_truncated()),
        (7, Some(true))
    );
    assert_eq!(store.list("p/").await.expect("list"), expected);
    assert_eq!(store.list("p/01").await.expect("list").len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_storage_keeps_to_its_prefix() {
    let fresh = Backend::S3Prefixed.fresh().await;
    let s = fresh.store;
    assert_eq!(s.base_uri().rsplit_once('/').map(|(_, t)| t), Some("t1"));
    let bucket = s
        .base_uri()
        .trim_start_matches("s3://")
        .split('/')
        .next()
        .expect("bucket")
        .to_string();
    s.put("a/b/c.bin", Bytes::from_static(b"mine"))
        .await
        .expect("put");
    assert_eq!(paths(&s.list("").await.expect("list")), vec!["a/b/c.bin"]);
    assert_eq!(
        &s.get("a/b/c.bin").await.expect("get")[..],
        b"mine",
        "not the neighbour's"
    );
    assert_eq!(
        s.head("0").await.expect("head"),
        None,
        "warehouse/t10 is a neighbour"
    );
    for p in ["../t1-other/a/b/c.bin", "/outside.txt", "../../outside.txt"] {
        assert!(s.put(p, Bytes::new()).await.is_err());
        assert!(s.delete(p).await.is_err());
    }
    assert!(s.list("../").await.is_err(), "listing outside the root");
    assert!(
        s.list("../t1-other/a").await.is_err(),
        "listing outside the root"
    );
    assert_eq!(
        paths(&s.list("a/b/c").await.expect("partial name")),
        vec!["a/b/c.bin"]
    );
    let mut expected: Vec<String> = S3_NEIGHBOURS.iter().map(|k| k.to_string()).collect();
    expected.push("warehouse/t1/a/b/c.bin".into());
    expected.sort();
    assert_eq!(bucket_keys(&bucket).await, expected);
    // Neighbours are untouched.
    let client = moto::s3_client().await;
    for key in S3_NEIGHBOURS {
        let body = client
            .get_object()
            .bucket(&bucket)
            .key(*key)
            .send()
            .await
            .expect("neighbour")
            .body;
        assert_eq!(
            &body.collect().await.expect("body").into_bytes()[..],
            b"neighbour"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_missing_bucket_is_an_error_not_an_absent_object() {
    moto::moto();
    let store = s3_store(&moto::unique_name("no-such-bucket"), "t").await;
    let err = store.get("x").await.expect_err("no bucket");
    match &err {
        StorageError::Remote {
            operation,
            message,
            retryable,
            path,
        } => {
            assert_eq!(*operation, "GetObject");
            assert!(message.contains("NoSuchBucket"), "{message}");
            assert!(message.contains("HTTP 404"), "{message}");
            assert!(
                message.contains("The specified bucket does not exist"),
                "{message}"
            );
            assert!(message.contains("request id"), "{message}");
            assert!(!retryable);
            assert!(
                path.starts_with("s3://no-such-bucket-") && path.ends_with("/t/x"),
                "{path}"
            );
        }
        other => panic!("expected a remote error, got {other:?}"),
    }
    for result in [
        store.put("x", Bytes::new()).await.map(|_| ()),
        store.put_if_absent("x", Bytes::new()).await.map(|_| ()),
        store.list("").await.map(|_| ()),
    ] {
        match result {
            Err(StorageError::Remote { message, .. }) => {
                assert!(message.contains("NoSuchBucket"), "{message}")
            }
            other => panic!("expected a remote error, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// S3 error paths against a scripted HTTP server (what moto cannot be made to do)
// ---------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------
// A table on S3 through `open_storage`, read back by hudi-rs
// ---------------------------------------------------------------------------------------------------------

const TRIPS: &str = r#"{"type":"record","name":"trip","namespace":"test.s3","fields":[
 {"name":"id","type":"string"},
 {"name":"seq","type":"long"},
 {"name":"region","type":"string"},
 {"name":"fare","type":["null","double"],"default":null},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"tags","type":["null",{"type":"array","items":"string"}],"default":null}
]}"#;

const REGIONS: &[&str] = &["eu", "us", "apac"];

/// (partition path, record key) → (commit time, data columns).
type Expected = BTreeMap<(String, String), (String, Map<String, Value>)>;

/// A batch of rows `(id, seq)`; the region follows from the id, the other columns are generated.
fn trips_batch(writer: &TableWriter, rows: &[(u32, i64)], seed: u64) -> RecordBatch {
    let b = gen_batch(&writer.schema().data, rows.len(), seed);
    let ids: ArrayRef = Arc::new(StringArray::from_iter_values(
        rows.iter().map(|(id, _)| format!("trip-{id:03}")),
    ));
    let seq: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|(_, s)| *s)));
    let region: ArrayRef = Arc::new(StringArray::from_iter_values(
        rows.iter()
            .map(|(id, _)| REGIONS[*id as usize % REGIONS.len()]),
    ));
    let b = with_column(&b, "id", ids);
    let b = with_column(&b, "seq", seq);
    with_column(&b, "region", region)
}

/// Applies a write to the expected table: a row replaces the stored one unless its `seq` is smaller.
fn apply(expected: &mut Expected, batch: &RecordBatch, instant: &str) {
    let schema = batch.schema();
    for row in 0..batch.num_rows() {
        let mut data = Map::new();
        for (i, f) in schema.fields().iter().enumerate() {
            data.insert(f.name().clone(), canon_value(batch.column(i), row));
        }
        let key = data["id"].as_str().expect("id").to_string();
        let part = format!("region={}", data["region"].as_str().expect("region"));
        let seq = data["seq"].as_i64().expect("seq");
        if let Some((_, stored)) = expected.get(&(part.clone(), key.clone())) {
            if stored["seq"].as_i64().expect("seq") > seq {
                continue;
            }
        }
        expected.insert((part, key), (instant.to_string(), data));
    }
}

fn assert_rows(read: &[Map<String, Value>], expected: &Expected, what: &str) {
    let mut actual: Expected = BTreeMap::new();
    for row in read {
        let get = |c: &str| {
            row[c]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no {c} in {row:?}"))
                .to_string()
        };
        let data: Map<String, Value> = row
            .iter()
            .filter(|(c, _)| !c.starts_with("_hoodie_"))
            .map(|(c, v)| (c.clone(), v.clone()))
            .collect();
        let key = (get("_hoodie_partition_path"), get("_hoodie_record_key"));
        assert!(
            get("_hoodie_file_name").ends_with(".parquet"),
            "{what}: {row:?}"
        );
        assert!(
            actual
                .insert(key.clone(), (get("_hoodie_commit_time"), data))
                .is_none(),
            "{what}: duplicate {key:?}"
        );
    }
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{what}: keys"
    );
    for (k, v) in expected {
        assert_eq!(&actual[k], v, "{what}: row {k:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_writer_on_s3_reads_back_row_exact() {
    let endpoint = moto::moto().endpoint.clone();
    // `open_storage` finds moto the way users point it at LocalStack: through the environment.
    std::env::set_var("AWS_ENDPOINT_URL_S3", &endpoint);
    let bucket = moto::new_bucket("tables").await;
    let base = format!("s3://{bucket}/tables/t1");
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips_s3"),
        ("hoodie.database.name", "default"),
        ("hoodie.base.path", base.as_str()),
        ("hoodie.datasource.write.recordkey.field", "id"),
        ("hoodie.datasource.write.partitionpath.field", "region"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        ("hoodie.datasource.write.precombine.field", "seq"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = WriteConfig::from_properties(props).expect("config");
    let storage = open_storage(&config.base_path)
        .await
        .expect("open s3 storage");
    assert_eq!(storage.base_uri(), base);
    let writer = TableWriter::create_or_open(
        storage.clone(),
        Arc::new(SystemClock),
        config,
        Some(AvroSchema::parse(TRIPS).expect("schema")),
    )
    .await
    .expect("create table on s3");

    let mut expected = Expected::new();
    // 1: insert 40 new keys.
    let rows: Vec<(u32, i64)> = (0..40).map(|id| (id, 1)).collect();
    let batch = trips_batch(&writer, &rows, 1);
    let first = writer
        .write_with(
            WriteOperation::Insert,
            std::slice::from_ref(&batch),
            BTreeMap::new(),
        )
        .await
        .expect("insert");
    let t1 = first.instant.to_string();
    apply(&mut expected, &batch, &t1);
    assert_rows(
        &read_rows(&base, "hudi", &["snapshot"]),
        &expected,
        "snapshot after insert",
    );
    let after_insert = expected.clone();

    // 2: upsert: newer versions of 10..20, stale versions of 0..5 (ignored), new keys 40..50.
    let rows: Vec<(u32, i64)> = (10..20)
        .map(|id| (id, 2))
        .chain((0..5).map(|id| (id, 0)))
        .chain((40..50).map(|id| (id, 1)))
        .collect();
    let batch = trips_batch(&writer, &rows, 2);
    let second = writer
        .write_with(
            WriteOperation::Upsert,
            std::slice::from_ref(&batch),
            BTreeMap::new(),
        )
        .await
        .expect("upsert");
    let t2 = second.instant.to_string();
    assert!(t2 > t1);
    apply(&mut expected, &batch, &t2);
    assert_eq!(expected.len(), 50);
    assert_eq!(expected.values().filter(|(t, _)| *t == t2).count(), 20);
    assert_rows(
        &read_rows(&base, "hudi", &["snapshot"]),
        &expected,
        "snapshot after upsert",
    );
    assert_rows(
        &read_rows(&base, "hudi", &["as_of", &t1]),
        &after_insert,
        "as of the insert",
    );

    // The table sits under the prefix, written through the storage: timeline and partitions.
    let keys = bucket_keys(&bucket).await;
    assert!(keys.iter().all(|k| k.starts_with("tables/t1/")), "{keys:?}");
    for name in [
        ".hoodie/hoodie.properties".to_string(),
        format!(".hoodie/{t1}.commit"),
        format!(".hoodie/{t2}.commit"),
    ] {
        assert!(
            keys.contains(&format!("tables/t1/{name}")),
            "{name} missing in {keys:?}"
        );
    }
    for region in REGIONS {
        let listed = storage
            .list(&format!("region={region}/"))
            .await
            .expect("list partition");
        assert!(
            listed
                .iter()
                .any(|o| o.path.ends_with(".parquet") && o.size > 0),
            "{region}: {listed:?}"
        );
        assert!(
            listed
                .iter()
                .any(|o| o.path.ends_with(".hoodie_partition_metadata")),
            "{region}: {listed:?}"
        );
    }
    // The s3a:// spelling opens the same table.
    let again = open_storage(&format!("s3a://{bucket}/tables/t1"))
        .await
        .expect("s3a");
    assert_eq!(
        again.get(".hoodie/hoodie.properties").await.expect("props"),
        storage
            .get(".hoodie/hoodie.properties")
            .await
            .expect("props")
    );
}
