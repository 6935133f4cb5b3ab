//! The Delta log store of a table's base path: object_store's own S3 client or local file system (the same
//! objects the sink's storage writes), with Delta's default log store, whose commits are create-if-absent puts
//! (S3 `If-None-Match: *`).

use std::sync::Arc;

use deltalake_core::logstore::{default_logstore, LogStoreRef, StorageConfig};
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::prefix::PrefixStore;
use object_store::ObjectStore;
use url::Url;

use super::mirror::MirrorError;

/// The log store of the table at `base_path` (`s3://bucket/prefix`, `s3a://…`, `file:///dir` or a directory).
pub(super) fn log_store(base_path: &str) -> Result<LogStoreRef, MirrorError> {
    let bad = |reason: String| MirrorError::Store(format!("{base_path}: {reason}"));
    let trimmed = base_path.trim_end_matches('/');
    let (root, prefixed, url): (Arc<dyn ObjectStore>, Arc<dyn ObjectStore>, Url) =
        if let Some(rest) = trimmed
            .strip_prefix("s3://")
            .or_else(|| trimmed.strip_prefix("s3a://"))
        {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
            // The sink's own endpoint override (moto, LocalStack): path-style, plain HTTP allowed.
            if let Ok(endpoint) =
                std::env::var("AWS_ENDPOINT_URL_S3").or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
            {
                builder = builder
                    .with_allow_http(endpoint.starts_with("http://"))
                    .with_virtual_hosted_style_request(false)
                    .with_endpoint(endpoint);
            }
            let root: Arc<dyn ObjectStore> =
                Arc::new(builder.build().map_err(|e| bad(e.to_string()))?);
            let prefixed: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(root.clone(), prefix));
            let url =
                Url::parse(&format!("s3://{bucket}/{prefix}/")).map_err(|e| bad(e.to_string()))?;
            (root, prefixed, url)
        } else {
            let dir = trimmed.strip_prefix("file://").unwrap_or(trimmed);
            let dir = std::path::absolute(dir).map_err(|e| bad(e.to_string()))?;
            std::fs::create_dir_all(&dir).map_err(|e| bad(e.to_string()))?;
            let url =
                Url::from_directory_path(&dir).map_err(|()| bad("not an absolute path".into()))?;
            let prefixed: Arc<dyn ObjectStore> =
                Arc::new(LocalFileSystem::new_with_prefix(&dir).map_err(|e| bad(e.to_string()))?);
            (Arc::new(LocalFileSystem::new()), prefixed, url)
        };
    Ok(default_logstore(
        prefixed,
        root,
        &url,
        &StorageConfig::default(),
    ))
}
