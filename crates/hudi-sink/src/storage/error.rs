use thiserror::Error;

/// Result of a storage call.
pub type StorageResult<T> = std::result::Result<T, StorageError>;

/// Storage failures, with the path involved.
#[derive(Debug, Error)]
pub enum StorageError {
    /// The object does not exist.
    #[error("object not found: {path}")]
    NotFound { path: String },
    /// The path could escape the table or is malformed.
    #[error("invalid storage path {path:?}: {reason}")]
    InvalidPath { path: String, reason: &'static str },
    /// Local file-system error.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A remote store failed (after retries); `retryable` tells whether the caller may try again.
    #[error("storage request {operation} on {path} failed: {message}")]
    Remote {
        operation: &'static str,
        path: String,
        message: String,
        retryable: bool,
    },
    /// A requested byte range lies outside the object.
    #[error("range {start}..{end} outside {path} (size {size})")]
    Range {
        path: String,
        start: u64,
        end: u64,
        size: u64,
    },
    /// Injected by a fault-injecting storage in tests and simulations.
    #[error("injected fault on {operation} {path}")]
    Injected {
        operation: &'static str,
        path: String,
    },
}

impl StorageError {
    /// Whether this error means the object is absent.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::NotFound { .. })
    }
}
