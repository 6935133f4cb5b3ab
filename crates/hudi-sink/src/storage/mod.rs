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

mod error;
pub mod local;
pub mod memory;

use std::fmt::Debug;
use std::ops::Range;

use async_trait::async_trait;
use bytes::Bytes;

pub use error::{StorageError, StorageResult};

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

    /// Creates or replaces an object.
    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()>;

    /// Creates an object only if no object exists at `path`.
    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome>;

    /// Every object whose path starts with `prefix` (a directory prefix, `""` for all), sorted by path.
    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>>;

    /// Deletes an object; succeeds when it does not exist.
    async fn delete(&self, path: &str) -> StorageResult<()>;
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
}
