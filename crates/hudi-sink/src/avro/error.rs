//! The one error type of the Avro codec: schemas, datums and container files.

use thiserror::Error;

/// Why an Avro schema, datum or container file was refused.
///
/// `path` fields locate the problem: in a schema, `$` is the top and `.fields[name]`, `.items`, `.values`
/// and `[i]` (a union branch) go down; in a datum, `$` is the record and `.name`, `[i]` (array item) and
/// `["key"]` (map value) go down. `offset` fields are byte offsets into the file (or, for a deflate block,
/// into its inflated data, as the message says).
#[derive(Debug, Error)]
pub enum AvroError {
    /// The schema text is not JSON.
    #[error("Avro schema is not valid JSON: {0}")]
    SchemaJson(#[from] serde_json::Error),
    /// The schema JSON is not a valid Avro schema.
    #[error("invalid Avro schema at {path}: {reason}")]
    Schema { path: String, reason: String },
    /// A value does not fit the schema at `path`.
    #[error("Avro value at {path} does not match the schema: expected {expected}, found {found}")]
    Mismatch {
        path: String,
        expected: String,
        found: String,
    },
    /// A record field without a value: none given (and the schema has no default), or, when reading a
    /// typed Hudi record, none stored for a field Hudi requires.
    #[error("Avro record field {path} has no value and no default")]
    MissingField { path: String },
    /// A value gives a field the record schema does not have (a misspelt name would otherwise be lost).
    #[error("Avro record at {path} has no field {field:?}")]
    UnknownField { path: String, field: String },
    /// A value gives a record field or map key twice.
    #[error("Avro value at {path} repeats {key:?}")]
    Duplicate { path: String, key: String },
    /// A field default in the schema does not fit the field's type.
    #[error("Avro default at {path} does not fit the schema: {reason}")]
    BadDefault { path: String, reason: String },
    /// The file has no bytes at all (Hudi's reader throws on it too).
    #[error("Avro container file is empty")]
    Empty,
    /// The file does not start with `Obj\x01`.
    #[error("not an Avro container file: bad magic {found:02x?}")]
    BadMagic { found: Vec<u8> },
    /// The file ends inside `what`.
    #[error("Avro container file truncated at offset {offset} while reading {what}")]
    Truncated { offset: usize, what: String },
    /// The bytes cannot be Avro data of the writer schema.
    #[error("corrupt Avro data at offset {offset}: {reason}")]
    Corrupt { offset: usize, reason: String },
    /// The header has no `avro.schema`.
    #[error("Avro container header has no avro.schema")]
    MissingSchema,
    /// A codec other than null and deflate.
    #[error("unsupported Avro codec {0:?} (null and deflate are supported)")]
    UnsupportedCodec(String),
    /// A block does not end with the header's sync marker.
    #[error("Avro block at offset {offset} does not end with the file's sync marker")]
    BadSync { offset: usize },
    /// The file holds no record (a header alone, or only empty blocks).
    #[error("Avro container file holds no record")]
    NoRecord,
    /// The file holds more than the one record a timeline file has.
    #[error("Avro container file holds {count} records, expected exactly one")]
    TooManyRecords { count: u64 },
    /// Bytes after the last block that are not a block.
    #[error("Avro container file has trailing garbage from offset {offset}: {reason}")]
    TrailingGarbage { offset: usize, reason: String },
    /// Nesting deeper than any timeline schema needs (a recursive schema or hostile data).
    #[error("Avro value at {path} nests deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
    /// A deflate block does not inflate.
    #[error("Avro deflate block at offset {offset} does not inflate: {source}")]
    Deflate {
        offset: usize,
        #[source]
        source: std::io::Error,
    },
    /// A typed Hudi record was asked of a file written with another record schema.
    #[error("Avro file holds {found}, expected {expected}")]
    WrongRecord { expected: String, found: String },
}
