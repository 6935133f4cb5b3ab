//! The library's top-level error: each module's error wrapped with `#[from]`, so callers can match on the
//! layer that failed.

use thiserror::Error;

use crate::storage::StorageError;

/// Result alias for library calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Any failure of the library, by layer.
#[derive(Debug, Error)]
pub enum Error {
    /// Reading or writing storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
