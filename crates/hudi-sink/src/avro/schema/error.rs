//! Errors of the schema layer.
//!
//! Every variant names where in the schema the problem sits: `path` is a location inside the Avro JSON
//! (`$` is the top, `.fields[name]` a record field, `.type` a field's type, `[i]` a union branch, `.items` and
//! `.values` the element of an array or map), or for Arrow a dotted column path.

use thiserror::Error;

/// Result of a schema call.
pub type SchemaResult<T> = std::result::Result<T, SchemaError>;

/// A schema that cannot be parsed, mapped or written, with the place and the reason.
#[derive(Debug, Error)]
pub enum SchemaError {
    /// The schema text is not JSON at all.
    #[error("Avro schema is not valid JSON: {source}")]
    Json {
        #[source]
        source: serde_json::Error,
    },
    /// A required Avro attribute is missing.
    #[error("invalid Avro schema at {path}: missing attribute {attribute:?}")]
    MissingAttribute {
        path: String,
        attribute: &'static str,
    },
    /// An Avro attribute has the wrong JSON type or value.
    #[error(
        "invalid Avro schema at {path}: attribute {attribute:?} must be {expected}, found {found}"
    )]
    InvalidAttribute {
        path: String,
        attribute: &'static str,
        expected: &'static str,
        found: String,
    },
    /// A JSON value that cannot be a schema (number, boolean, null, or an unknown `type`).
    #[error("invalid Avro schema at {path}: {found} is not a schema")]
    NotASchema { path: String, found: String },
    /// A name, namespace, symbol or alias that breaks the Avro naming rule (a letter or `_`, then letters,
    /// digits or `_`).
    #[error("invalid Avro schema at {path}: {name:?} is not a valid Avro {kind}")]
    InvalidName {
        path: String,
        kind: &'static str,
        name: String,
    },
    /// A reference to a named type that is not defined before it is used.
    #[error(
        "invalid Avro schema at {path}: {name:?} is not a defined type (resolved as {fullname:?})"
    )]
    UndefinedName {
        path: String,
        name: String,
        fullname: String,
    },
    /// Two named types share a full name, or a named type is called like a primitive.
    #[error("invalid Avro schema at {path}: type {fullname:?} {reason}")]
    DuplicateName {
        path: String,
        fullname: String,
        reason: &'static str,
    },
    /// Two record fields share a name.
    #[error("invalid Avro schema at {path}: duplicate field {name:?}")]
    DuplicateField { path: String, name: String },
    /// An enum lists a symbol twice, or its default is not a symbol.
    #[error("invalid Avro schema at {path}: enum symbol {symbol:?} {reason}")]
    InvalidSymbol {
        path: String,
        symbol: String,
        reason: &'static str,
    },
    /// A union that Avro itself forbids (empty, nested, or with two branches of one type).
    #[error("invalid Avro schema at {path}: {reason}")]
    InvalidUnion { path: String, reason: String },
    /// A union with more than one non-null branch: valid Avro, but this writer maps only `["null", T]`.
    #[error(
        "unsupported union at {path}: {} non-null branches ({}); only unions of \"null\" and one type can be written",
        branches.len(),
        branches.join(", ")
    )]
    UnsupportedUnion { path: String, branches: Vec<String> },
    /// A logical type whose parameters or underlying type are wrong.
    #[error("invalid logical type {logical_type:?} at {path}: {reason}")]
    InvalidLogicalType {
        path: String,
        logical_type: String,
        reason: String,
    },
    /// A field default that does not match the field's type (for a union: its first branch).
    #[error("invalid default at {path}: {reason}")]
    InvalidDefault { path: String, reason: String },
    /// A schema that must be a record (a table schema) is something else.
    #[error("{context}: expected an Avro record, found {found}")]
    NotARecord {
        context: &'static str,
        found: String,
    },
    /// A user schema defines a column reserved for Hudi's meta fields.
    #[error("user schema defines {field:?}: columns starting with \"_hoodie_\" are reserved for Hudi (only {allowed:?} may be a data column)")]
    ReservedField {
        field: String,
        allowed: &'static str,
    },
    /// `_hoodie_is_deleted` exists but is not a boolean.
    #[error("{field:?} must be a boolean (or [\"null\",\"boolean\"]), found {found}")]
    IsDeletedNotBoolean { field: &'static str, found: String },
    /// An Avro type that has no Arrow (or Parquet) representation in this writer.
    #[error("cannot map Avro {path} to Arrow: {reason}")]
    AvroToArrow { path: String, reason: String },
    /// An Arrow type that has no Avro representation in this writer.
    #[error("cannot map Arrow column {path} ({data_type}) to Avro: {reason}")]
    ArrowToAvro {
        path: String,
        data_type: String,
        reason: &'static str,
    },
    /// The Arrow schema handed to the Parquet schema builder does not match the Avro schema.
    #[error("Arrow column {path} does not match the Avro schema: {reason}")]
    ArrowMismatch { path: String, reason: String },
    /// The Parquet crate refused a schema we built.
    #[error("Parquet schema for {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
}

impl SchemaError {
    /// Where in the Avro schema JSON the problem sits, for the variants of the Avro model (not the Arrow and
    /// Parquet mapping ones, whose paths name columns).
    pub fn path(&self) -> Option<&str> {
        match self {
            SchemaError::MissingAttribute { path, .. }
            | SchemaError::InvalidAttribute { path, .. }
            | SchemaError::NotASchema { path, .. }
            | SchemaError::InvalidName { path, .. }
            | SchemaError::UndefinedName { path, .. }
            | SchemaError::DuplicateName { path, .. }
            | SchemaError::DuplicateField { path, .. }
            | SchemaError::InvalidSymbol { path, .. }
            | SchemaError::InvalidUnion { path, .. }
            | SchemaError::UnsupportedUnion { path, .. }
            | SchemaError::InvalidLogicalType { path, .. }
            | SchemaError::InvalidDefault { path, .. } => Some(path),
            _ => None,
        }
    }
}
