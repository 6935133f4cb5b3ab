//! `Storage::put_multipart` in the contract suite (every backend) and S3's multipart protocol on moto: the
//! object holds every piece in order, shows up only when complete, and an aborted or dropped upload leaves
//! the path as it was.

use std::sync::Arc;

use bytes::Bytes;
use hudi_sink::storage::{Storage, StorageError};

use super::{meta, moto, paths, pattern, s3_store};

const MIB: usize = 1024 * 1024;

/// Pieces of uneven sizes (an empty one among them) and their concatenation.
fn pieces(sizes: &[usize]) -> (Vec<Bytes>, Bytes) {
    let pieces: Vec<Bytes> = sizes
        .iter()
        .enumerate()
        .map(|(i, n)| pattern(*n, i as u8))
        .collect();
    let whole: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
    (pieces, Bytes::from(whole))
}

pub(super) async fn check_content_and_size(s: Arc<dyn Storage>) {
    let p = "m/part.bin";
    let (parts, whole) = pieces(&[1, 100_000, 0, 3 * MIB, 7]);
    let mut upload = s.put_multipart(p).await.expect("start");
    for part in parts {
        upload.write(part).await.expect("write");
        assert_eq!(
            s.head(p).await.expect("head"),
            None,
            "visible before completion"
        );
    }
    assert!(
        s.list("").await.expect("list").is_empty(),
        "listed before completion"
    );
    let size = upload.complete().await.expect("complete");
    assert_eq!(size, whole.len() as u64);
    assert_eq!(s.get(p).await.expect("get"), whole);
    assert_eq!(s.head(p).await.expect("head"), Some(meta(p, size)));
    assert_eq!(paths(&s.list("").await.expect("list")), [p]);

    // A second upload replaces the object; an empty one makes an empty object.
    let upload = s.put_multipart(p).await.expect("start");
    assert_eq!(upload.complete().await.expect("complete empty"), 0);
    assert_eq!(s.get(p).await.expect("get"), Bytes::new());

    assert!(matches!(
        s.put_multipart("../escape").await.err(),
        Some(StorageError::InvalidPath { .. })
    ));
}

pub(super) async fn check_abort_leaves_nothing(s: Arc<dyn Storage>) {
    let kept = pattern(10, 1);
    s.put("m/kept.bin", kept.clone()).await.expect("put");
    for path in ["m/kept.bin", "m/new.bin"] {
        let mut upload = s.put_multipart(path).await.expect("start");
        upload.write(pattern(MIB, 2)).await.expect("write");
        upload.abort().await.expect("abort");
        // Dropped without completion: the same.
        let mut upload = s.put_multipart(path).await.expect("start");
        upload.write(pattern(MIB, 3)).await.expect("write");
        drop(upload);
    }
    assert_eq!(s.get("m/kept.bin").await.expect("get"), kept);
    assert_eq!(s.head("m/new.bin").await.expect("head"), None);
    assert_eq!(
        s.list("").await.expect("list"),
        vec![meta("m/kept.bin", 10)]
    );
}

/// Parts of 5 MiB (S3's smallest): 11 MiB goes up as three parts, which moto checks for size like S3
/// (`EntityTooSmall`), and the ETag of a multipart object names its part count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_multipart_upload_sends_parts_and_abort_cleans_up() {
    let bucket = moto::new_bucket("multipart").await;
    let store = s3_store(&bucket, "t").await.with_part_size(5 * MIB);
    let (parts, whole) = pieces(&[3 * MIB, 3 * MIB, 0, 5 * MIB]);
    let mut upload = store.put_multipart("p/f.parquet").await.expect("start");
    for part in parts {
        upload.write(part).await.expect("write");
    }
    let size = upload.complete().await.expect("complete");
    assert_eq!(size, whole.len() as u64);
    assert_eq!(store.get("p/f.parquet").await.expect("get"), whole);
    let client = moto::s3_client().await;
    let head = client
        .head_object()
        .bucket(&bucket)
        .key("t/p/f.parquet")
        .send()
        .await
        .expect("head");
    let etag = head
        .e_tag()
        .unwrap_or_default()
        .trim_matches('"')
        .to_string();
    assert!(etag.ends_with("-3"), "ETag {etag:?} of a 3-part upload");

    // An aborted upload with parts sent leaves no object and no pending upload.
    let mut upload = store.put_multipart("p/g.parquet").await.expect("start");
    upload.write(pattern(6 * MIB, 9)).await.expect("write");
    let pending = client
        .list_multipart_uploads()
        .bucket(&bucket)
        .send()
        .await
        .expect("list uploads");
    assert_eq!(pending.uploads().len(), 1, "one part sent");
    upload.abort().await.expect("abort");
    let pending = client
        .list_multipart_uploads()
        .bucket(&bucket)
        .send()
        .await
        .expect("list uploads");
    assert!(pending.uploads().is_empty(), "{:?}", pending.uploads());
    assert_eq!(store.head("p/g.parquet").await.expect("head"), None);
    assert_eq!(paths(&store.list("").await.expect("list")), ["p/f.parquet"]);

    // A small object is one PutObject (no upload is created).
    let mut upload = store.put_multipart("p/small").await.expect("start");
    upload.write(pattern(100, 1)).await.expect("write");
    assert_eq!(upload.complete().await.expect("complete"), 100);
    let head = client
        .head_object()
        .bucket(&bucket)
        .key("t/p/small")
        .send()
        .await
        .expect("head");
    assert!(!head.e_tag().unwrap_or_default().contains('-'));
}
