//! Multipart uploads to S3: pieces gathered into parts of [`S3Storage::with_part_size`] bytes, each sent
//! with `UploadPart` as soon as it is full, so that memory stays at about one part.
//!
//! The upload is created lazily, with the first full part: an object smaller than one part is written
//! with a single `PutObject` on completion (S3 refuses to complete an upload without parts, and a small
//! object needs no more than one request). A failed `UploadPart` or `CompleteMultipartUpload` leaves the
//! upload to the caller's [`MultipartUpload::abort`]; a failed completion aborts it right away.

use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::Bytes;

use super::S3Storage;
use crate::storage::multipart::concat;
use crate::storage::{MultipartUpload, Storage, StorageError, StorageResult};

/// S3's smallest part of a multipart upload (all but the last).
pub const MIN_PART_BYTES: usize = 5 * 1024 * 1024;
/// Default part size of [`Storage::put_multipart`].
pub(super) const DEFAULT_PART_BYTES: usize = 8 * 1024 * 1024;

/// One object being uploaded in parts.
#[derive(Debug)]
pub(super) struct S3Upload<'a> {
    storage: &'a S3Storage,
    path: String,
    key: String,
    /// Set by `CreateMultipartUpload`, with the first full part.
    upload_id: Option<String>,
    parts: Vec<CompletedPart>,
    /// Bytes not sent yet (less than one part between calls).
    pending: Vec<Bytes>,
    pending_len: usize,
    size: u64,
}

impl<'a> S3Upload<'a> {
    pub(super) fn new(storage: &'a S3Storage, path: &str) -> StorageResult<Self> {
        Ok(Self {
            storage,
            path: path.to_string(),
            key: storage.key(path)?,
            upload_id: None,
            parts: Vec::new(),
            pending: Vec::new(),
            pending_len: 0,
            size: 0,
        })
    }

    /// The upload id, creating the upload on first use.
    async fn upload_id(&mut self) -> StorageResult<String> {
        if let Some(id) = &self.upload_id {
            return Ok(id.clone());
        }
        let s = self.storage;
        let out = s
            .client
            .create_multipart_upload()
            .bucket(&s.bucket)
            .key(&self.key)
            .send()
            .await
            .map_err(|e| s.remote("CreateMultipartUpload", &self.path, &e))?;
        let id = out
            .upload_id()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| StorageError::Remote {
                operation: "CreateMultipartUpload",
                path: format!("s3://{}/{}", s.bucket, self.key),
                message: "response without an upload id".into(),
                retryable: true,
            })?
            .to_string();
        self.upload_id = Some(id.clone());
        Ok(id)
    }

    /// Sends `data` as the next part.
    async fn send_part(&mut self, data: Bytes) -> StorageResult<()> {
        let id = self.upload_id().await?;
        let s = self.storage;
        let number = i32::try_from(self.parts.len() + 1).unwrap_or(i32::MAX);
        let out = s
            .client
            .upload_part()
            .bucket(&s.bucket)
            .key(&self.key)
            .upload_id(&id)
            .part_number(number)
            .body(ByteStream::from(data))
            .send()
            .await
            .map_err(|e| s.remote("UploadPart", &self.path, &e))?;
        self.parts.push(
            CompletedPart::builder()
                .part_number(number)
                .set_e_tag(out.e_tag().map(str::to_string))
                .build(),
        );
        Ok(())
    }

    /// Takes every pending byte as one buffer.
    fn take_pending(&mut self) -> Bytes {
        self.pending_len = 0;
        concat(std::mem::take(&mut self.pending))
    }

    async fn finish(&mut self) -> StorageResult<()> {
        let s = self.storage;
        let Some(id) = self.upload_id.clone() else {
            let data = self.take_pending();
            return s.put(&self.path, data).await;
        };
        if self.pending_len > 0 {
            let last = self.take_pending();
            self.send_part(last).await?;
        }
        let parts = CompletedMultipartUpload::builder()
            .set_parts(Some(std::mem::take(&mut self.parts)))
            .build();
        s.client
            .complete_multipart_upload()
            .bucket(&s.bucket)
            .key(&self.key)
            .upload_id(&id)
            .multipart_upload(parts)
            .send()
            .await
            .map_err(|e| s.remote("CompleteMultipartUpload", &self.path, &e))?;
        Ok(())
    }

    async fn abort_upload(&mut self) -> StorageResult<()> {
        self.pending.clear();
        self.pending_len = 0;
        let Some(id) = self.upload_id.take() else {
            return Ok(());
        };
        let s = self.storage;
        s.client
            .abort_multipart_upload()
            .bucket(&s.bucket)
            .key(&self.key)
            .upload_id(&id)
            .send()
            .await
            .map_err(|e| s.remote("AbortMultipartUpload", &self.path, &e))?;
        Ok(())
    }
}

#[async_trait]
impl MultipartUpload for S3Upload<'_> {
    async fn write(&mut self, data: Bytes) -> StorageResult<()> {
        let part_size = self.storage.part_size;
        self.size += data.len() as u64;
        let mut data = data;
        while !data.is_empty() {
            let room = part_size - self.pending_len;
            let piece = data.split_to(room.min(data.len()));
            self.pending_len += piece.len();
            self.pending.push(piece);
            if self.pending_len >= part_size {
                let part = self.take_pending();
                self.send_part(part).await?;
            }
        }
        Ok(())
    }

    async fn complete(mut self: Box<Self>) -> StorageResult<u64> {
        match self.finish().await {
            Ok(()) => Ok(self.size),
            Err(e) => {
                if let Err(abort) = self.abort_upload().await {
                    tracing::warn!(path = %self.path, error = %abort, "aborting a failed upload failed");
                }
                Err(e)
            }
        }
    }

    async fn abort(mut self: Box<Self>) -> StorageResult<()> {
        self.abort_upload().await
    }
}
