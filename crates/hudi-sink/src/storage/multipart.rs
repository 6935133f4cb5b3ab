//! Objects written in pieces: [`MultipartUpload`], and [`BufferedUpload`], the fallback that gathers the
//! pieces and stores them with one [`Storage::put`].
//!
//! Invariants: the object appears under its path only when [`MultipartUpload::complete`] succeeds, holding
//! the concatenation of every piece written, in order; [`MultipartUpload::abort`] (or dropping the upload)
//! leaves the path as it was.

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};

use super::{Storage, StorageResult};

/// An object being written piece by piece. Pieces may have any size: the backend groups them into the
/// parts its protocol needs (S3: at least 5 MiB each but the last), so memory stays at about one part.
///
/// Call [`MultipartUpload::abort`] when giving up: dropping an S3 upload without it leaves its parts billed
/// until a bucket lifecycle rule removes them (they never become an object).
#[async_trait]
pub trait MultipartUpload: Send {
    /// Appends `data` to the object.
    async fn write(&mut self, data: Bytes) -> StorageResult<()>;

    /// Makes the object visible with everything written; returns its size in bytes.
    async fn complete(self: Box<Self>) -> StorageResult<u64>;

    /// Discards everything written; the path is left as it was.
    async fn abort(self: Box<Self>) -> StorageResult<()>;
}

/// The default upload: pieces gathered in memory, one [`Storage::put`] on completion.
#[derive(Debug)]
pub struct BufferedUpload<'a, S: ?Sized> {
    storage: &'a S,
    path: String,
    pieces: Vec<Bytes>,
}

impl<'a, S: Storage + ?Sized> BufferedUpload<'a, S> {
    /// An upload of `path` into `storage`.
    pub fn new(storage: &'a S, path: &str) -> Self {
        Self {
            storage,
            path: path.to_string(),
            pieces: Vec::new(),
        }
    }
}

/// The concatenation of `pieces` (no copy for a single piece).
pub(crate) fn concat(pieces: Vec<Bytes>) -> Bytes {
    if pieces.len() == 1 {
        return pieces.into_iter().next().unwrap_or_default();
    }
    let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
    for piece in pieces {
        out.extend_from_slice(&piece);
    }
    out.freeze()
}

#[async_trait]
impl<S: Storage + ?Sized> MultipartUpload for BufferedUpload<'_, S> {
    async fn write(&mut self, data: Bytes) -> StorageResult<()> {
        if !data.is_empty() {
            self.pieces.push(data);
        }
        Ok(())
    }

    async fn complete(self: Box<Self>) -> StorageResult<u64> {
        let data = concat(self.pieces);
        let size = data.len() as u64;
        self.storage.put(&self.path, data).await?;
        Ok(size)
    }

    async fn abort(self: Box<Self>) -> StorageResult<()> {
        Ok(())
    }
}
