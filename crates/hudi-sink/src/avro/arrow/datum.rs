//! What the datum codec shares: its error, the nesting limit, and where a value sits in a record.

use thiserror::Error;

use crate::avro::binary::{self, ReadError};
use crate::avro::schema::SchemaError;

/// Deepest nesting of values accepted when encoding or decoding.
pub const MAX_DEPTH: usize = 64;

/// Why a datum could not be encoded from Arrow columns or decoded into them. Offsets count from where the
/// caller says the datum starts; `path` locates a value as `$.field`, `[i]` (array item), `{"key"}` (map value).
#[derive(Debug, Error)]
pub enum DatumError {
    /// The datum ends inside `what`.
    #[error("truncated at offset {offset} while reading {what}")]
    Truncated { offset: usize, what: String },
    /// The bytes cannot be what the schema says.
    #[error("corrupt at offset {offset}: {reason}")]
    Corrupt { offset: usize, reason: String },
    /// The schema cannot be mapped (Avro → Arrow).
    #[error("schema: {0}")]
    Schema(#[from] SchemaError),
    /// A column does not hold what the Avro schema says at `path`.
    #[error("value at {path}: {reason}")]
    Mismatch { path: String, reason: String },
    /// Building the Arrow arrays failed.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Nesting deeper than [`MAX_DEPTH`] (a recursive schema or hostile bytes).
    #[error("value at {path} nests deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
}

impl ReadError for DatumError {
    fn truncated(offset: usize, what: &str) -> Self {
        DatumError::Truncated {
            offset,
            what: what.to_string(),
        }
    }

    fn corrupt(offset: usize, reason: String) -> Self {
        DatumError::Corrupt { offset, reason }
    }
}

/// Reads a datum's Avro binary values.
pub(super) type Cursor<'a> = binary::Reader<'a, DatumError>;

/// Where a value sits in a record, rendered only when an error needs it.
#[derive(Clone, Copy)]
pub(super) enum Path<'p> {
    Root,
    Field(&'p Path<'p>, &'p str),
    Item(&'p Path<'p>, usize),
    MapValue(&'p Path<'p>, &'p str),
}

impl Path<'_> {
    pub(super) fn render(&self) -> String {
        match self {
            Path::Root => "$".to_string(),
            Path::Field(p, name) => format!("{}.{name}", p.render()),
            Path::Item(p, i) => format!("{}[{i}]", p.render()),
            Path::MapValue(p, k) => format!("{}{{{k:?}}}", p.render()),
        }
    }
}

pub(super) fn mismatch(path: &Path<'_>, reason: impl Into<String>) -> DatumError {
    DatumError::Mismatch {
        path: path.render(),
        reason: reason.into(),
    }
}
