//! Multipart uploads through a [`FaultyStorage`]: each piece, the completion and the abort are calls the
//! rules see, on the object's path.

use async_trait::async_trait;
use bytes::Bytes;

use super::{FaultyStorage, Operation};
use crate::storage::{MultipartUpload, StorageResult};

/// An upload of the inner store under the rules of its [`FaultyStorage`] ([`Operation::WritePart`],
/// [`Operation::CompleteUpload`], [`Operation::AbortUpload`], all on the object's path).
pub(super) struct FaultyUpload<'a> {
    pub(super) storage: &'a FaultyStorage,
    pub(super) path: String,
    pub(super) inner: Box<dyn MultipartUpload + 'a>,
}

#[async_trait]
impl MultipartUpload for FaultyUpload<'_> {
    async fn write(&mut self, data: Bytes) -> StorageResult<()> {
        self.storage
            .run(Operation::WritePart, &self.path, self.inner.write(data))
            .await
    }

    async fn complete(self: Box<Self>) -> StorageResult<u64> {
        let this = *self;
        this.storage
            .run(Operation::CompleteUpload, &this.path, this.inner.complete())
            .await
    }

    async fn abort(self: Box<Self>) -> StorageResult<()> {
        let this = *self;
        this.storage
            .run(Operation::AbortUpload, &this.path, this.inner.abort())
            .await
    }
}
