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
mod s3_errors;
mod table_on_s3;

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
    // A modification time where the store keeps one (S3, files): near now; none for a missing object.
    if let Some(ms) = s.modified_ms(p).await.expect("modified") {
        let now = chrono::Utc::now().timestamp_millis();
        assert!((now - ms).abs() < 300_000, "modified at {ms}, now {now}");
    } else {
        assert!(
            s.base_uri().starts_with("memory://"),
            "{} keeps no modification time",
            s.base_uri()
        );
    }
    assert_eq!(
        s.modified_ms("a/b/nope").await.expect("modified missing"),
        None
    );
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
