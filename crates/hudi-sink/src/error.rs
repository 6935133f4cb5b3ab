//! The library's top-level error: each layer's error wrapped with `#[from]`, so callers can match on the
//! layer that failed.

use thiserror::Error;

use crate::base_file::BaseFileError;
use crate::config::ConfigError;
use crate::record::keygen::KeyGenError;
use crate::schema::SchemaError;
use crate::storage::StorageError;
use crate::table::TableError;
use crate::write::WriteError;

/// Result alias for library calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Any failure of the library, by layer.
#[derive(Debug, Error)]
pub enum Error {
    /// Configuration keys or values.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Key generator configuration.
    #[error(transparent)]
    KeyGen(#[from] KeyGenError),
    /// Schemas.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Table metadata: properties, timeline, commits, file names.
    #[error(transparent)]
    Table(#[from] TableError),
    /// Base files.
    #[error(transparent)]
    BaseFile(#[from] BaseFileError),
    /// The write path.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Reading or writing storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
