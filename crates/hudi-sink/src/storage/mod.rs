//! Object storage rooted at a table's base path.
//!
//! Every path handed to a [`Storage`] is relative to the table base path and uses `/` as separator
//! (`.hoodie/hoodie.properties`, `city=sf/<file>.parquet`). Implementations owe these guarantees:
//!
//! - [`Storage::put_if_absent`] is atomic: of several concurrent callers on one path exactly one gets
//!   [`PutOutcome::Created`]; the object is never visible half-written. The commit protocol rests on it.
//! - [`Storage::put`] replaces an object atomically (readers see the old or the new bytes, never a mix).
//! - [`Storage::list`] returns every object under a prefix, recursively, with its exact size.
//! - [`Storage::delete`] of a missing object succeeds (deletes are retried).
//! - [`Storage::put_multipart`] writes one object in pieces: nothing is visible under the path until
//!   [`MultipartUpload::complete`] returns, then the whole object is (an atomic replace, like `put`); an
//!   aborted or abandoned upload never shows up in a listing.
//!
//! Backends: [`local::LocalStorage`] (a directory), [`s3::S3Storage`] (feature `aws`),
//! [`memory::MemoryStorage`] (tests), and [`faulty::FaultyStorage`], which wraps any of them to inject
//! failures. [`open_storage`] picks the backend from a table's `hoodie.base.path`.

mod error;
pub mod faulty;
pub mod local;
pub mod memory;
mod multipart;
#[cfg(feature = "aws")]
pub mod s3;

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

pub use error::{StorageError, StorageResult};
pub use faulty::FaultyStorage;
pub use local::LocalStorage;
pub use memory::MemoryStorage;
pub use multipart::{BufferedUpload, MultipartUpload};
#[cfg(feature = "aws")]
pub use s3::{S3Options, S3Storage};

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectMeta {
    /// Path relative to the storage root.
    pub path: String,
    /// Exact size in bytes.
    pub size: u64,
}

/// What a create-if-absent put found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// The object did not exist and now holds the given bytes.
    Created,
    /// The object already existed; it was left unchanged.
    AlreadyExists,
}

/// Storage rooted at a table base path. See the module doc for the contract.
#[async_trait]
pub trait Storage: Send + Sync + Debug {
    /// The base URI, for messages (`s3://bucket/prefix` or a directory path).
    fn base_uri(&self) -> &str;

    /// Reads a whole object; [`StorageError::NotFound`] when it does not exist.
    async fn get(&self, path: &str) -> StorageResult<Bytes>;

    /// Reads a byte range of an object.
    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes>;

    /// Size of an object, or `None` when it does not exist.
    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>>;

    /// When the object was last written, in epoch milliseconds: `None` when it does not exist or the store
    /// does not keep it. Hudi's Java writers beat by rewriting an empty heartbeat file, so its modification
    /// time is their beat.
    async fn modified_ms(&self, path: &str) -> StorageResult<Option<i64>> {
        let _ = path;
        Ok(None)
    }

    /// Creates or replaces an object.
    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()>;

    /// Creates an object only if no object exists at `path`.
    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome>;

    /// Every object whose path starts with `prefix` (a directory prefix, `""` for all), sorted by path.
    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>>;

    /// Deletes an object; succeeds when it does not exist.
    async fn delete(&self, path: &str) -> StorageResult<()>;

    /// Starts writing the object at `path` in pieces ([`MultipartUpload`]), for files too large to hold in
    /// memory whole. The default buffers every piece and makes one [`Storage::put`] on completion (test
    /// doubles); S3 and the local file system stream instead.
    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        validate_relative_path(path)?;
        Ok(Box::new(BufferedUpload::new(self, path)))
    }

    /// Deletes every object in `paths`, absent ones included. S3 deletes up to 1,000 keys per request, so a
    /// clean-up of many small objects (markers) costs one request instead of one per object; elsewhere it is
    /// one [`Storage::delete`] per path. Stops at the first failure.
    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        for path in paths {
            self.delete(path).await?;
        }
        Ok(())
    }
}

/// The storage for a table's base path (`hoodie.base.path`).
///
/// - `s3://bucket/prefix` and `s3a://bucket/prefix` (Hadoop's spelling, found in Hudi configurations):
///   [`S3Storage`] with the AWS SDK configuration of the environment (credentials, region) and
///   [`S3Options::from_env`], which honours `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` and then uses
///   path-style addressing (moto, LocalStack). Needs the `aws` feature.
/// - `file:///dir` and plain paths: [`LocalStorage`].
///
/// Other schemes are refused rather than taken for local directory names. Building an S3 storage loads
/// credentials: open it once per process (per warm Lambda environment) and share the `Arc`.
pub async fn open_storage(base_path: &str) -> Result<Arc<dyn Storage>, StorageError> {
    let bad = |reason: &'static str| StorageError::InvalidPath {
        path: base_path.to_string(),
        reason,
    };
    if base_path.trim().is_empty() {
        return Err(bad("empty base path"));
    }
    let scheme = base_path
        .split_once("://")
        .map(|(scheme, _)| scheme)
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
    match scheme.map(|s| s.to_ascii_lowercase()).as_deref() {
        None => Ok(Arc::new(LocalStorage::new(base_path))),
        Some("file") => {
            let rest = &base_path["file://".len()..];
            // `file:///dir` (empty host) or `file://localhost/dir`; a remote host cannot be reached.
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(bad("file:// URI with a host other than localhost"));
            }
            Ok(Arc::new(LocalStorage::new(path)))
        }
        #[cfg(feature = "aws")]
        Some("s3" | "s3a") => Ok(Arc::new(S3Storage::from_env(base_path).await?)),
        #[cfg(not(feature = "aws"))]
        Some("s3" | "s3a") => Err(bad("s3:// base paths need the `aws` feature")),
        Some(_) => Err(bad(
            "unsupported URI scheme (use s3://, s3a://, file:// or a local path)",
        )),
    }
}

/// Joins relative path segments with `/`, skipping empty ones (a non-partitioned table's partition is `""`).
pub fn join_path(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part.trim_matches('/'));
    }
    out
}

/// Rejects paths that could leave the storage root: absolute, `.`/`..` segments, empty segments, NUL,
/// backslashes.
pub fn validate_relative_path(path: &str) -> StorageResult<()> {
    let bad = |reason: &'static str| StorageError::InvalidPath {
        path: path.to_string(),
        reason,
    };
    if path.is_empty() {
        return Err(bad("empty path"));
    }
    if path.starts_with('/') {
        return Err(bad("absolute path"));
    }
    if path.contains('\0') {
        return Err(bad("NUL byte"));
    }
    if path.contains('\\') {
        return Err(bad("backslash"));
    }
    for seg in path.split('/') {
        match seg {
            "" => return Err(bad("empty path segment")),
            "." | ".." => return Err(bad("relative path segment")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_skips_empty_parts() {
        assert_eq!(join_path(&["", "a.parquet"]), "a.parquet");
        assert_eq!(join_path(&["p=1/q=2", "a.parquet"]), "p=1/q=2/a.parquet");
    }

    #[test]
    fn hostile_paths_are_rejected() {
        for p in ["", "/abs", "a/../b", "..", "a//b", "a/./b", "a\0b", "a\\b"] {
            assert!(validate_relative_path(p).is_err(), "{p:?} accepted");
        }
        assert!(validate_relative_path(".hoodie/hoodie.properties").is_ok());
    }

    #[tokio::test]
    async fn open_storage_picks_the_backend_by_scheme() {
        let local = open_storage("/tmp/some/table").await.expect("plain path");
        assert_eq!(local.base_uri(), "/tmp/some/table");
        let file = open_storage("file:///tmp/some/table")
            .await
            .expect("file uri");
        assert_eq!(file.base_uri(), "/tmp/some/table");
        let file = open_storage("file://localhost/tmp/t")
            .await
            .expect("file uri with localhost");
        assert_eq!(file.base_uri(), "/tmp/t");
        let relative = open_storage("tables/t1").await.expect("relative dir");
        assert_eq!(relative.base_uri(), "tables/t1");
        for bad in ["", "  ", "gs://b/t", "hdfs://nn/t", "file://otherhost/t"] {
            let err = open_storage(bad).await.expect_err(bad);
            assert!(
                matches!(err, StorageError::InvalidPath { .. }),
                "{bad:?}: {err}"
            );
        }
        #[cfg(feature = "aws")]
        for bad in ["s3://", "s3:///t", "s3://b/../t"] {
            let err = open_storage(bad).await.expect_err(bad);
            assert!(
                matches!(err, StorageError::InvalidPath { .. }),
                "{bad:?}: {err}"
            );
        }
    }
}
