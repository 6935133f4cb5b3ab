//! The Delta log store of a table: the sink's own [`Storage`] seen as an `object_store` store, with Delta's
//! default log store, whose commits are create-if-absent puts ([`Storage::put_if_absent`]: S3
//! `If-None-Match: *`). The mirror reads and writes through the same storage as the Hudi commit, so the same
//! credentials, endpoint and retries apply, and the fault-injecting storage and the simulation's in-memory
//! storage reach the mirror's every call.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use deltalake_core::logstore::{default_logstore, LogStoreRef, StorageConfig};
use futures_util::stream::{self, BoxStream, StreamExt as _};
use object_store::path::Path;
use object_store::{
    Attributes, CopyMode, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload,
    ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, UploadPart,
};
use url::Url;

use super::mirror::MirrorError;
use crate::storage::{PutOutcome, Storage, StorageError};

/// The log store of the table in `storage`, whose base path is `base_path` (for the table URL).
pub(super) fn log_store(
    storage: Arc<dyn Storage>,
    base_path: &str,
) -> Result<LogStoreRef, MirrorError> {
    let url = table_url(base_path)?;
    // Delta's engine reads through the root store with paths from the table URL (`<url path>/_delta_log/…`),
    // the log store through the prefixed one with paths relative to the table.
    let root_prefix = Path::from_url_path(url.path())
        .map_err(|e| MirrorError::Store(format!("{base_path}: {e}")))?
        .to_string();
    let prefixed: Arc<dyn ObjectStore> = Arc::new(SinkObjectStore {
        storage: storage.clone(),
        root_prefix: String::new(),
    });
    let root: Arc<dyn ObjectStore> = Arc::new(SinkObjectStore {
        storage,
        root_prefix,
    });
    Ok(default_logstore(
        prefixed,
        root,
        &url,
        &StorageConfig::default(),
    ))
}

/// The table's URL (a directory URL): `s3://bucket/prefix/`, `file:///dir/`, or the base path's own scheme.
fn table_url(base_path: &str) -> Result<Url, MirrorError> {
    let bad = |reason: String| MirrorError::Store(format!("{base_path}: {reason}"));
    let trimmed = base_path.trim_end_matches('/');
    if let Some(rest) = trimmed.strip_prefix("s3a://") {
        return Url::parse(&format!("s3://{rest}/")).map_err(|e| bad(e.to_string()));
    }
    if trimmed.contains("://") && !trimmed.starts_with("file://") {
        return Url::parse(&format!("{trimmed}/")).map_err(|e| bad(e.to_string()));
    }
    let dir = trimmed.strip_prefix("file://").unwrap_or(trimmed);
    let dir = std::path::absolute(dir).map_err(|e| bad(e.to_string()))?;
    Url::from_directory_path(&dir).map_err(|()| bad("not an absolute path".into()))
}

/// [`Storage`] as an `object_store` store: paths relative to the table (as both use them) under
/// `root_prefix`, the table URL's path (empty for the store of table-relative paths).
#[derive(Debug)]
struct SinkObjectStore {
    storage: Arc<dyn Storage>,
    root_prefix: String,
}

impl SinkObjectStore {
    /// The storage path of `location` (which must be under the root prefix).
    fn inner(&self, location: &Path) -> object_store::Result<String> {
        let path = location.as_ref();
        if self.root_prefix.is_empty() {
            return Ok(path.to_string());
        }
        path.strip_prefix(self.root_prefix.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            .map(str::to_string)
            .ok_or_else(|| object_store::Error::NotFound {
                path: path.to_string(),
                source: "outside the table".into(),
            })
    }

    /// The location of the storage path `path`.
    fn outer(root_prefix: &str, path: &str) -> Path {
        if root_prefix.is_empty() {
            Path::from(path)
        } else {
            Path::from(format!("{root_prefix}/{path}"))
        }
    }
}

impl fmt::Display for SinkObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SinkObjectStore({})", self.storage.base_uri())
    }
}

/// The `object_store` error of a storage error on `path`.
fn store_error(path: &str, e: StorageError) -> object_store::Error {
    if e.is_not_found() {
        object_store::Error::NotFound {
            path: path.to_string(),
            source: Box::new(e),
        }
    } else {
        object_store::Error::Generic {
            store: "hudi-sink",
            source: Box::new(e),
        }
    }
}

fn meta(location: Path, size: u64) -> ObjectMeta {
    ObjectMeta {
        location,
        last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        size,
        e_tag: None,
        version: None,
    }
}

fn not_supported(what: &str) -> object_store::Error {
    object_store::Error::NotImplemented {
        operation: what.to_string(),
        implementer: "hudi-sink storage".to_string(),
    }
}

#[async_trait]
impl ObjectStore for SinkObjectStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let inner = self.inner(location)?;
        let path = inner.as_str();
        let data = Bytes::from(payload);
        match opts.mode {
            PutMode::Overwrite => self
                .storage
                .put(path, data)
                .await
                .map_err(|e| store_error(path, e))?,
            PutMode::Create => match self
                .storage
                .put_if_absent(path, data)
                .await
                .map_err(|e| store_error(path, e))?
            {
                PutOutcome::Created => {}
                PutOutcome::AlreadyExists => {
                    return Err(object_store::Error::AlreadyExists {
                        path: path.to_string(),
                        source: "the object exists".into(),
                    })
                }
            },
            PutMode::Update(_) => return Err(not_supported("conditional update")),
        }
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Ok(Box::new(Buffered {
            storage: self.storage.clone(),
            path: self.inner(location)?,
            parts: Vec::new(),
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let inner = self.inner(location)?;
        let path = inner.as_str();
        let size = self
            .storage
            .head(path)
            .await
            .map_err(|e| store_error(path, e))?
            .ok_or_else(|| object_store::Error::NotFound {
                path: path.to_string(),
                source: "no such object".into(),
            })?
            .size;
        let range: Range<u64> = match &options.range {
            None => 0..size,
            Some(GetRange::Bounded(r)) => r.start..r.end.min(size),
            Some(GetRange::Offset(o)) => *o..size,
            Some(GetRange::Suffix(n)) => size.saturating_sub(*n)..size,
        };
        let bytes = if options.head {
            Bytes::new()
        } else if range == (0..size) {
            self.storage
                .get(path)
                .await
                .map_err(|e| store_error(path, e))?
        } else {
            self.storage
                .get_range(path, range.clone())
                .await
                .map_err(|e| store_error(path, e))?
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed()),
            meta: meta(location.clone(), size),
            range,
            attributes: Attributes::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let storage = self.storage.clone();
        let root_prefix = self.root_prefix.clone();
        locations
            .then(move |location| {
                let this = SinkObjectStore {
                    storage: storage.clone(),
                    root_prefix: root_prefix.clone(),
                };
                async move {
                    let location = location?;
                    let path = this.inner(&location)?;
                    this.storage
                        .delete(&path)
                        .await
                        .map_err(|e| store_error(&path, e))?;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let storage = self.storage.clone();
        let root_prefix = self.root_prefix.clone();
        let prefix = match prefix.map(|p| self.inner(p)) {
            None => Ok(String::new()),
            Some(Ok(p)) => Ok(format!("{p}/")),
            Some(Err(e)) => Err(e),
        };
        stream::once(async move {
            let prefix = prefix?;
            storage
                .list(&prefix)
                .await
                .map_err(|e| store_error(&prefix, e))
        })
        .flat_map(move |listed| {
            let items: Vec<object_store::Result<ObjectMeta>> = match listed {
                Ok(objects) => objects
                    .into_iter()
                    .map(|o| Ok(meta(Self::outer(&root_prefix, &o.path), o.size)))
                    .collect(),
                Err(e) => vec![Err(e)],
            };
            stream::iter(items)
        })
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let prefix = match prefix {
            Some(p) => format!("{}/", self.inner(p)?),
            None => String::new(),
        };
        let listed = self
            .storage
            .list(&prefix)
            .await
            .map_err(|e| store_error(&prefix, e))?;
        let mut common_prefixes = Vec::new();
        let mut objects = Vec::new();
        for object in listed {
            let rest = object.path.strip_prefix(&prefix).unwrap_or(&object.path);
            match rest.split_once('/') {
                Some((dir, _)) => {
                    let dir = Self::outer(&self.root_prefix, &format!("{prefix}{dir}"));
                    if common_prefixes.last() != Some(&dir) {
                        common_prefixes.push(dir);
                    }
                }
                None => objects.push(meta(
                    Self::outer(&self.root_prefix, &object.path),
                    object.size,
                )),
            }
        }
        common_prefixes.dedup();
        Ok(ListResult {
            common_prefixes,
            objects,
        })
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let source = self.inner(from)?;
        let bytes = self
            .storage
            .get(&source)
            .await
            .map_err(|e| store_error(&source, e))?;
        let mode = match options.mode {
            CopyMode::Overwrite => PutMode::Overwrite,
            CopyMode::Create => PutMode::Create,
        };
        self.put_opts(to, PutPayload::from(bytes), mode.into())
            .await
            .map(|_| ())
    }
}

/// A multipart upload that keeps the parts in memory and puts the object once complete (checkpoints are a
/// few megabytes at most).
#[derive(Debug)]
struct Buffered {
    storage: Arc<dyn Storage>,
    path: String,
    parts: Vec<PutPayload>,
}

#[async_trait]
impl MultipartUpload for Buffered {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.parts.push(data);
        Box::pin(async { Ok(()) })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let mut all = Vec::new();
        for part in self.parts.drain(..) {
            for chunk in part.iter() {
                all.extend_from_slice(chunk);
            }
        }
        self.storage
            .put(&self.path, Bytes::from(all))
            .await
            .map_err(|e| store_error(&self.path, e))?;
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.parts.clear();
        Ok(())
    }
}
