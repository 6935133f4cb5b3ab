//! An in-memory [`Storage`] for unit tests and simulations. Never the only evidence: see the local and S3
//! backends for what users run.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;

use super::{validate_relative_path, ObjectMeta, PutOutcome, Storage, StorageError, StorageResult};

/// Objects kept in a sorted map behind a mutex; create-if-absent is atomic under that mutex.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    uri: String,
    objects: Mutex<BTreeMap<String, Bytes>>,
}

impl MemoryStorage {
    /// An empty store; `uri` only names it in messages.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            objects: Mutex::default(),
        }
    }

    fn objects(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Bytes>> {
        // A poisoned lock only means another test thread panicked; the map itself is still consistent.
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Storage for MemoryStorage {
    fn base_uri(&self) -> &str {
        &self.uri
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.objects()
            .get(path)
            .cloned()
            .ok_or_else(|| StorageError::NotFound { path: path.into() })
    }

    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        let data = self.get(path).await?;
        let size = data.len() as u64;
        if range.start > range.end || range.end > size {
            return Err(StorageError::Range {
                path: path.into(),
                start: range.start,
                end: range.end,
                size,
            });
        }
        Ok(data.slice(range.start as usize..range.end as usize))
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        Ok(self.objects().get(path).map(|d| ObjectMeta {
            path: path.into(),
            size: d.len() as u64,
        }))
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        validate_relative_path(path)?;
        self.objects().insert(path.into(), data);
        Ok(())
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        validate_relative_path(path)?;
        let mut objects = self.objects();
        if objects.contains_key(path) {
            return Ok(PutOutcome::AlreadyExists);
        }
        objects.insert(path.into(), data);
        Ok(PutOutcome::Created)
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        Ok(self
            .objects()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| ObjectMeta {
                path: k.clone(),
                size: v.len() as u64,
            })
            .collect())
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.objects().remove(path);
        Ok(())
    }
}
