//! Amazon S3 (and S3-compatible stores) as a [`Storage`], over `aws_sdk_s3::Client`.
//!
//! A table lives under `s3://<bucket>/<prefix>`; every path the [`Storage`] trait takes is relative to that
//! root and becomes the key `<prefix>/<path>` (or `<path>` when the table sits at the bucket root).
//!
//! How the module contract is met on S3:
//!
//! - **create-if-absent**: `PutObject` with `If-None-Match: *`. S3 answers 412 `PreconditionFailed` when
//!   the key exists ([`PutOutcome::AlreadyExists`]) and, when two conditional writes to one key overlap,
//!   may answer 409 `ConditionalRequestConflict` to one of them; that one is retried here (bounded, with
//!   jittered backoff) until it gets a definite 200 or 412. S3 objects become visible whole, so nobody reads
//!   a partial commit file.
//! - **atomic replace**: a single `PutObject`, or the `CompleteMultipartUpload` of an upload: readers see the
//!   old or the new bytes.
//! - **list**: `ListObjectsV2`, every page, keys stripped of the root prefix, sorted by path. Zero-byte
//!   "folder" keys ending in `/` (made by consoles) are not objects of the table and are skipped.
//! - **idempotent delete**: `DeleteObject` of a missing key succeeds on S3 already.
//!
//! Every request has a deadline: the SDK's operation timeout (all attempts) and attempt timeout (one
//! attempt), and a body read that outlives the response headers is cut at the same operation deadline.
//! Throttling, 5xx and network errors are retried by the SDK's standard retry mode with exponential
//! backoff. After that, failures come back as [`StorageError::Remote`] with the SDK's full error text
//! (code, message, request id) and whether trying again later makes sense.
//!
//! Permissions: `s3:GetObject`, `s3:PutObject`, `s3:DeleteObject` on the keys and `s3:ListBucket` on the
//! bucket. Without `s3:ListBucket`, S3 answers 403 instead of 404 for a missing key, and a missing object
//! (a table not created yet) would surface as an access error instead of [`StorageError::NotFound`].
//! A missing bucket is an error, never an absent object (except for `head`, whose 404 carries no code).
//! Objects are written with one `PutObject` each, which S3 caps at 5 GB, except through
//! [`Storage::put_multipart`] (compaction's base files): `CreateMultipartUpload`, one `UploadPart` per
//! [`S3Storage::with_part_size`] bytes (8 MiB by default, at least S3's 5 MiB), `CompleteMultipartUpload`,
//! which makes the object visible whole; an object smaller than one part is a single `PutObject`. A failed
//! upload is aborted (`AbortMultipartUpload`, which needs `s3:AbortMultipartUpload`).
//!
//! One ambiguity is inherent to S3 and is left to the caller: when an attempt of a conditional put times
//! out after S3 applied it, the SDK's retry finds the object present and this storage reports
//! [`PutOutcome::AlreadyExists`] for an object that this very call created. The commit protocol handles it
//! by comparing the stored content with its own (docs/architecture.md, "Exactly-once": a retried commit
//! with the same content is a success).

use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use bytes::Bytes;
use tokio::time::Instant;

use super::{
    validate_relative_path, MultipartUpload, ObjectMeta, PutOutcome, Storage, StorageError,
    StorageResult,
};

mod multipart;

use multipart::DEFAULT_PART_BYTES;
pub use multipart::MIN_PART_BYTES;

/// The SDK's own default connect timeout, the default of [`S3Options::connect_timeout`].
const CONNECT_TIMEOUT: Duration = Duration::from_millis(3100);
/// First backoff after a 409 `ConditionalRequestConflict`; doubled per retry, full jitter.
const CONFLICT_BACKOFF_BASE: Duration = Duration::from_millis(50);
/// Largest backoff after a 409 `ConditionalRequestConflict`.
const CONFLICT_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// How the S3 client is built by [`S3Storage::from_uri`].
///
/// The defaults suit a Lambda function (≤ 14 min per invocation) writing base files of up to a few hundred
/// MB: one attempt may take 30 s, one call with its retries 2 min, so that a stuck request fails the
/// invocation well before the function times out and the ESM redelivers the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Options {
    /// Endpoint to use instead of AWS's (moto, LocalStack, MinIO); `None` keeps the SDK configuration's
    /// endpoint (which already honours `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`).
    pub endpoint_url: Option<String>,
    /// Path-style addressing (`http://host/bucket/key`), needed by emulators reached by IP address.
    pub force_path_style: bool,
    /// Deadline of one call including all its retries (and, for reads, the body download).
    pub operation_timeout: Duration,
    /// Deadline of one attempt (request sent to response headers received).
    pub attempt_timeout: Duration,
    /// Deadline of establishing one connection (capped by the attempt timeout).
    pub connect_timeout: Duration,
    /// Attempts per call for the SDK's standard retry mode (throttling, 5xx, network errors), and per
    /// conditional put for 409 conflicts. At least 1.
    pub max_attempts: u32,
}

impl Default for S3Options {
    fn default() -> Self {
        Self {
            endpoint_url: None,
            force_path_style: false,
            operation_timeout: Duration::from_secs(120),
            attempt_timeout: Duration::from_secs(30),
            connect_timeout: CONNECT_TIMEOUT,
            max_attempts: 5,
        }
    }
}

impl S3Options {
    /// Defaults, with the endpoint taken from `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` (unless
    /// `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`), and path-style addressing whenever an endpoint is set:
    /// that is how tests (moto) and LocalStack-style setups are reached.
    pub fn from_env() -> Self {
        let ignore = std::env::var("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        let endpoint_url = if ignore {
            None
        } else {
            ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
                .iter()
                .filter_map(|name| std::env::var(name).ok())
                .map(|v| v.trim().to_string())
                .find(|v| !v.is_empty())
        };
        Self {
            force_path_style: endpoint_url.is_some(),
            endpoint_url,
            ..Self::default()
        }
    }

    /// An S3 client configuration: `sdk` (region, credentials, HTTP client) with these options' endpoint,
    /// addressing, timeouts and retry policy.
    pub fn client_config(&self, sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Config {
        let attempts = self.max_attempts.max(1);
        let mut builder = aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(self.force_path_style)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(self.connect_timeout.min(self.attempt_timeout))
                    .operation_attempt_timeout(self.attempt_timeout)
                    .operation_timeout(self.operation_timeout)
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(attempts));
        if let Some(url) = &self.endpoint_url {
            builder = builder.endpoint_url(url);
        }
        builder.build()
    }
}

/// A table rooted at `s3://bucket/prefix`. Cheap to clone (the client is shared).
#[derive(Debug, Clone)]
pub struct S3Storage {
    client: Client,
    bucket: String,
    /// Key prefix without leading or trailing `/`; empty at the bucket root.
    prefix: String,
    uri: String,
    /// Deadline of a whole call, used to bound body downloads the SDK timeouts do not cover.
    operation_timeout: Duration,
    /// Tries of a conditional put that keeps getting 409 `ConditionalRequestConflict`.
    conflict_attempts: u32,
    /// `MaxKeys` per `ListObjectsV2` page; `None` = S3's default (1,000).
    list_page_size: Option<i32>,
    /// Bytes per `UploadPart` of a multipart upload.
    part_size: usize,
}

impl S3Storage {
    /// `HeadObject` of `path`: `None` when it does not exist.
    async fn head_object(
        &self,
        path: &str,
    ) -> StorageResult<Option<aws_sdk_s3::operation::head_object::HeadObjectOutput>> {
        let key = self.key(path)?;
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(out)),
            // A HEAD response has no body, hence no error code: a missing bucket also reads as absent here.
            Err(e) if status_of(&e) == Some(404) => Ok(None),
            Err(e) => Err(self.remote("HeadObject", path, &e)),
        }
    }

    /// Storage over `client` rooted at `s3://bucket/prefix` (`prefix` may be empty; surrounding `/` are
    /// ignored). The client's own timeout and retry configuration apply; see [`S3Options::client_config`].
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        let bucket = bucket.into();
        let prefix = prefix.into().trim_matches('/').to_string();
        let uri = if prefix.is_empty() {
            format!("s3://{bucket}")
        } else {
            format!("s3://{bucket}/{prefix}")
        };
        let defaults = S3Options::default();
        Self {
            client,
            bucket,
            prefix,
            uri,
            operation_timeout: defaults.operation_timeout,
            conflict_attempts: defaults.max_attempts,
            list_page_size: None,
            part_size: DEFAULT_PART_BYTES,
        }
    }

    /// Storage for `s3://bucket/prefix` (or `s3a://`), with a client built from `sdk` and `options`.
    pub fn from_uri(
        uri: &str,
        sdk: &aws_config::SdkConfig,
        options: S3Options,
    ) -> StorageResult<Self> {
        let (bucket, prefix) = parse_s3_uri(uri)?;
        let client = Client::from_conf(options.client_config(sdk));
        let mut storage = Self::new(client, bucket, prefix);
        storage.operation_timeout = options.operation_timeout;
        storage.conflict_attempts = options.max_attempts.max(1);
        Ok(storage)
    }

    /// Storage for `uri` with the SDK configuration and [`S3Options::from_env`] loaded from the
    /// environment. Loading resolves credentials and region, so build it once and share it.
    pub async fn from_env(uri: &str) -> StorageResult<Self> {
        // Check the URI before the (slower) configuration load.
        parse_s3_uri(uri)?;
        install_crypto_provider();
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .load()
            .await;
        Self::from_uri(uri, &sdk, S3Options::from_env())
    }

    /// Lists with at most `n` keys per `ListObjectsV2` page (S3's own default and maximum is 1,000). Only
    /// useful to exercise pagination with few objects.
    pub fn with_list_page_size(mut self, n: i32) -> Self {
        self.list_page_size = Some(n.max(1));
        self
    }

    /// Uploads multipart objects in parts of `bytes` (at least [`MIN_PART_BYTES`]; S3 allows 10,000 parts, so
    /// 8 MiB parts cap an object at 80 GB). Larger parts mean fewer requests and more memory per upload.
    pub fn with_part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(MIN_PART_BYTES);
        self
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix of the table root (no surrounding `/`; empty at the bucket root).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The object key of a relative path, after rejecting paths that could leave the root.
    fn key(&self, path: &str) -> StorageResult<String> {
        validate_relative_path(path)?;
        Ok(self.join(path))
    }

    fn join(&self, rel: &str) -> String {
        if self.prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.prefix)
        }
    }

    /// A [`StorageError::Remote`] naming the full object URI and keeping the SDK's whole error text.
    fn remote<E>(
        &self,
        operation: &'static str,
        path: &str,
        err: &SdkError<E, HttpResponse>,
    ) -> StorageError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let status = status_of(err);
        let retryable = match err {
            SdkError::TimeoutError(_)
            | SdkError::DispatchFailure(_)
            | SdkError::ResponseError(_) => true,
            SdkError::ServiceError(ctx) => {
                let code = ctx.err().code().unwrap_or_default();
                status.is_some_and(|s| s >= 500 || s == 429 || s == 409)
                    || matches!(
                        code,
                        "SlowDown" | "RequestTimeout" | "Throttling" | "ThrottlingException"
                    )
            }
            _ => false,
        };
        let message = describe(err);
        StorageError::Remote {
            operation,
            path: format!("s3://{}/{}", self.bucket, self.join(path)),
            message,
            retryable,
        }
    }

    /// Reads a response body, bounded by what is left of the call's deadline.
    async fn collect(
        &self,
        operation: &'static str,
        path: &str,
        body: ByteStream,
        deadline: Instant,
    ) -> StorageResult<Bytes> {
        let remote = |message: String| StorageError::Remote {
            operation,
            path: format!("s3://{}/{}", self.bucket, self.join(path)),
            message,
            retryable: true,
        };
        match tokio::time::timeout_at(deadline, body.collect()).await {
            Ok(Ok(data)) => Ok(data.into_bytes()),
            Ok(Err(e)) => Err(remote(format!(
                "reading the response body failed: {}",
                DisplayErrorContext(&e)
            ))),
            Err(_) => Err(remote(format!(
                "reading the response body did not finish within the operation timeout of {:?}",
                self.operation_timeout
            ))),
        }
    }

    /// The size of an object for range errors, or [`StorageError::NotFound`].
    async fn size_for_range_error(&self, path: &str, range: &Range<u64>) -> StorageError {
        match self.head(path).await {
            Ok(Some(meta)) => StorageError::Range {
                path: path.to_string(),
                start: range.start,
                end: range.end,
                size: meta.size,
            },
            Ok(None) => StorageError::NotFound {
                path: path.to_string(),
            },
            Err(e) => e,
        }
    }
}

/// Splits `s3://bucket/prefix` (or `s3a://`) into bucket and prefix (no surrounding `/`).
///
/// Rejects other schemes, an empty bucket, and prefixes with `.`/`..`/empty segments, which S3 would store
/// literally but Hudi readers would resolve differently.
pub fn parse_s3_uri(uri: &str) -> StorageResult<(String, String)> {
    let bad = |reason: &'static str| StorageError::InvalidPath {
        path: uri.to_string(),
        reason,
    };
    let rest = match uri.split_once("://") {
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("s3") || scheme.eq_ignore_ascii_case("s3a") =>
        {
            rest
        }
        _ => return Err(bad("not an s3:// or s3a:// URI")),
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("no bucket in S3 URI"));
    }
    if bucket.contains(['?', '#', '\\']) {
        return Err(bad("malformed bucket name in S3 URI"));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        validate_relative_path(prefix).map_err(|_| bad("malformed key prefix in S3 URI"))?;
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// The text of an SDK error. Service errors: `HTTP <status> <code>: <message> (request id …)`, everything
/// S3 said without the raw response dump; other errors (timeouts, connection failures): the whole source
/// chain.
fn describe<E>(err: &SdkError<E, HttpResponse>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let SdkError::ServiceError(ctx) = err else {
        return DisplayErrorContext(err).to_string();
    };
    let e = ctx.err();
    let mut out = format!("HTTP {}", ctx.raw().status().as_u16());
    if let Some(code) = e.code() {
        out.push(' ');
        out.push_str(code);
    }
    out.push_str(": ");
    match e.message() {
        Some(message) => out.push_str(message),
        // No error document (HEAD responses): the SDK's own description.
        None => out.push_str(&DisplayErrorContext(e).to_string()),
    }
    let ids: Vec<String> = [
        ("request id", "aws_request_id"),
        ("extended request id", "s3_extended_request_id"),
    ]
    .iter()
    .filter_map(|(label, key)| e.meta().extra(key).map(|v| format!("{label} {v}")))
    .collect();
    if !ids.is_empty() {
        out.push_str(&format!(" ({})", ids.join(", ")));
    }
    out
}

/// The HTTP status of a service or response error.
fn status_of<E>(err: &SdkError<E, HttpResponse>) -> Option<u16> {
    err.raw_response().map(|r| r.status().as_u16())
}

/// The error code S3 sent, if any (HEAD responses carry none).
fn code_of<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> Option<&str> {
    err.as_service_error().and_then(|e| e.code())
}

/// Whether an error means "no such key" (404, but not a missing bucket, which is a configuration error).
fn is_missing_key<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    status_of(err) == Some(404) && code_of(err) != Some("NoSuchBucket")
}

/// Total size from a `Content-Range: bytes <start>-<end>/<size>` header.
fn total_from_content_range(value: &str) -> Option<u64> {
    value
        .rsplit_once('/')
        .and_then(|(_, total)| total.trim().parse().ok())
}

/// A random delay in `[0, min(max, base·2^retry)]` ("full jitter"), so that conflicting writers spread out.
fn conflict_backoff(retry: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let cap = CONFLICT_BACKOFF_BASE
        .saturating_mul(1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX))
        .min(CONFLICT_BACKOFF_MAX);
    // std's per-instance random hash keys are randomness enough for jitter, with no extra dependency.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(retry);
    let fraction = (hasher.finish() % 1_000_000) as f64 / 1_000_000.0;
    cap.mul_f64(fraction)
}

#[async_trait]
impl Storage for S3Storage {
    fn base_uri(&self) -> &str {
        &self.uri
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        let key = self.key(path)?;
        let deadline = Instant::now() + self.operation_timeout;
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
            .map_err(|e| {
                if is_missing_key(&e) {
                    StorageError::NotFound { path: path.into() }
                } else {
                    self.remote("GetObject", path, &e)
                }
            })?;
        self.collect("GetObject", path, out.body, deadline).await
    }

    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        let key = self.key(path)?;
        // HTTP ranges cannot express an empty or reversed range: answer those from the object's size.
        if range.start >= range.end {
            return match self.head(path).await? {
                None => Err(StorageError::NotFound { path: path.into() }),
                Some(meta) if range.start == range.end && range.end <= meta.size => {
                    Ok(Bytes::new())
                }
                Some(meta) => Err(StorageError::Range {
                    path: path.into(),
                    start: range.start,
                    end: range.end,
                    size: meta.size,
                }),
            };
        }
        let deadline = Instant::now() + self.operation_timeout;
        let result = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&key)
            .range(format!("bytes={}-{}", range.start, range.end - 1))
            .send()
            .await;
        let out = match result {
            Ok(out) => out,
            Err(e) if is_missing_key(&e) => {
                return Err(StorageError::NotFound { path: path.into() })
            }
            // 416: the range starts at or past the end of the object.
            Err(e) if status_of(&e) == Some(416) => {
                return Err(self.size_for_range_error(path, &range).await)
            }
            Err(e) => return Err(self.remote("GetObject", path, &e)),
        };
        let total = out.content_range().and_then(total_from_content_range);
        let data = self.collect("GetObject", path, out.body, deadline).await?;
        // S3 shortens a range that runs past the end instead of refusing it.
        if data.len() as u64 != range.end - range.start {
            return Err(StorageError::Range {
                path: path.into(),
                start: range.start,
                end: range.end,
                size: total.unwrap_or(range.start + data.len() as u64),
            });
        }
        Ok(data)
    }

    async fn modified_ms(&self, path: &str) -> StorageResult<Option<i64>> {
        Ok(self
            .head_object(path)
            .await?
            .and_then(|out| out.last_modified().and_then(|t| t.to_millis().ok())))
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        let Some(out) = self.head_object(path).await? else {
            return Ok(None);
        };
        let size = out
            .content_length()
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| StorageError::Remote {
                operation: "HeadObject",
                path: format!("s3://{}/{}", self.bucket, self.join(path)),
                message: format!(
                    "response without a valid Content-Length ({:?})",
                    out.content_length()
                ),
                retryable: false,
            })?;
        Ok(Some(ObjectMeta {
            path: path.into(),
            size,
        }))
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        let key = self.key(path)?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .body(ByteStream::from(data))
            .send()
            .await
            .map_err(|e| self.remote("PutObject", path, &e))?;
        Ok(())
    }

    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        Ok(Box::new(multipart::S3Upload::new(self, path)?))
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let key = self.key(path)?;
        let mut attempt = 1;
        loop {
            let result = self
                .client
                .put_object()
                .bucket(&self.bucket)
                .key(&key)
                .if_none_match("*")
                .body(ByteStream::from(data.clone()))
                .send()
                .await;
            let err = match result {
                Ok(_) => return Ok(PutOutcome::Created),
                Err(e) => e,
            };
            match status_of(&err) {
                Some(412) => return Ok(PutOutcome::AlreadyExists),
                // 409 ConditionalRequestConflict: another conditional write to this key was in flight. The
                // SDK does not retry it; trying again gives a definite answer (200 or 412).
                Some(409) if attempt < self.conflict_attempts => {
                    tracing::debug!(
                        key = %key,
                        attempt,
                        code = code_of(&err).unwrap_or_default(),
                        "conditional put conflicted, retrying"
                    );
                    tokio::time::sleep(conflict_backoff(attempt - 1)).await;
                    attempt += 1;
                }
                _ => return Err(self.remote("PutObject(If-None-Match)", path, &err)),
            }
        }
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        // As for local directories: the directory part of the prefix must be a clean relative path; the last
        // part is a plain string prefix (`a` lists `a/x` and `ab`).
        if let Some((dir, _)) = prefix.rsplit_once('/') {
            validate_relative_path(dir)?;
        }
        // The root's own prefix always ends in `/`, so a sibling table (`t1` vs `t10`) is never listed.
        let root = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.prefix)
        };
        let full_prefix = format!("{root}{prefix}");
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(&full_prefix)
                .set_max_keys(self.list_page_size)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| self.remote("ListObjectsV2", prefix, &e))?;
            for object in page.contents() {
                let Some(rel) = object.key().and_then(|k| k.strip_prefix(root.as_str())) else {
                    continue;
                };
                if rel.is_empty() || rel.ends_with('/') {
                    continue;
                }
                let size = object
                    .size()
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| StorageError::Remote {
                        operation: "ListObjectsV2",
                        path: format!("s3://{}/{full_prefix}", self.bucket),
                        message: format!(
                            "listing gave {rel} without a valid size ({:?})",
                            object.size()
                        ),
                        retryable: false,
                    })?;
                out.push(ObjectMeta {
                    path: rel.to_string(),
                    size,
                });
            }
            if page.is_truncated() != Some(true) {
                break;
            }
            match page.next_continuation_token() {
                Some(next) if !next.is_empty() => token = Some(next.to_string()),
                _ => {
                    return Err(StorageError::Remote {
                        operation: "ListObjectsV2",
                        path: format!("s3://{}/{full_prefix}", self.bucket),
                        message: "truncated listing without a continuation token".into(),
                        retryable: true,
                    })
                }
            }
        }
        out.sort();
        Ok(out)
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        use aws_sdk_s3::types::{Delete, ObjectIdentifier};
        let invalid = |path: &str, e: &dyn std::fmt::Display| StorageError::Remote {
            operation: "DeleteObjects",
            path: path.to_string(),
            message: e.to_string(),
            retryable: false,
        };
        for chunk in paths.chunks(1000) {
            let Some(first) = chunk.first() else {
                continue;
            };
            let mut objects = Vec::with_capacity(chunk.len());
            for path in chunk {
                let key = self.key(path)?;
                objects.push(
                    ObjectIdentifier::builder()
                        .key(key)
                        .build()
                        .map_err(|e| invalid(path, &e))?,
                );
            }
            let delete = Delete::builder()
                .set_objects(Some(objects))
                .quiet(true)
                .build()
                .map_err(|e| invalid(first, &e))?;
            let out = self
                .client
                .delete_objects()
                .bucket(&self.bucket)
                .delete(delete)
                .send()
                .await
                .map_err(|e| self.remote("DeleteObjects", first, &e))?;
            // Quiet mode lists only the keys that failed; a missing key is not a failure.
            if let Some(failed) = out.errors().first() {
                let code = failed.code().unwrap_or("unknown");
                return Err(StorageError::Remote {
                    operation: "DeleteObjects",
                    path: format!("s3://{}/{}", self.bucket, failed.key().unwrap_or("?")),
                    message: format!(
                        "{code}: {} ({} of {} keys failed)",
                        failed.message().unwrap_or(""),
                        out.errors().len(),
                        chunk.len()
                    ),
                    retryable: matches!(code, "InternalError" | "SlowDown" | "ServiceUnavailable"),
                });
            }
        }
        Ok(())
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        let key = self.key(path)?;
        match self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            // S3 answers 204 for a missing key; a store that says 404 instead means the same.
            Err(e) if is_missing_key(&e) => Ok(()),
            Err(e) => Err(self.remote("DeleteObject", path, &e)),
        }
    }
}

#[cfg(test)]
mod tests;

/// Makes aws-lc-rs the process's TLS provider, once (later calls do nothing). With the `delta` feature both of
/// rustls's providers are in the build (the AWS SDK's aws-lc-rs, and ring through the Delta crate's HTTP
/// client), and rustls then refuses to pick a default: every TLS client the sink builds (the SDK's, the schema
/// registry's) calls this first.
pub fn install_crypto_provider() {
    // An error means a provider is installed already (by an earlier call or by the embedding program): keep it.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}
