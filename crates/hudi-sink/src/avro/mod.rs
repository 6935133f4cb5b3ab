//! Avro for the whole crate: the binary encoding every Avro reader and writer uses, the object-container
//! codec of the timeline files, and the bridge between Avro and Arrow.
//!
//! [`binary`] is the one zig-zag varint and primitive encoding (log blocks, Kafka values and container files
//! all use it); [`schema`] is the schema model (parsed, validated and written back without loss) that the
//! table, the Arrow mapping and the record decoder share; [`graph`] parses a schema's JSON into the node
//! graph the container's datum codec walks; [`write`] encodes a datum and the container around it, [`read`]
//! decodes a container; [`value`] is the generic datum; [`arrow`] maps Avro schemas to Arrow schemas and
//! back, and encodes Arrow rows as bare Avro datums and decodes them into Arrow columns (the log blocks'
//! records); [`resolve`] compiles a writer schema against the table's (Avro's resolution rules): the plan of
//! what each writer value becomes, which the record decoder executes into its columns. This module depends on
//! no other module of the crate.
//!
//! Invariants:
//! * [`encode_container`] returns a whole file or an error, never a partial one: the datum is encoded (and
//!   thereby checked against the schema) in memory before any byte of the container exists. The file is
//!   what Java writes for codec null: `Obj\x01`, a metadata map holding only `avro.schema`, a random 16-byte
//!   sync marker, one block with one record, the sync marker again.
//! * [`decode_container`] accepts only a file with exactly one record (as Hudi's reader requires) and reports
//!   empty, truncated, corrupt and over-long files as distinct [`AvroError`]s instead of guessing.

pub mod arrow;
pub mod binary;
mod error;
pub mod graph;
pub mod read;
pub mod resolve;
pub mod schema;
pub mod value;
pub mod write;

#[cfg(test)]
mod tests;

pub use error::AvroError;
pub use graph::SchemaGraph;
pub use read::decode_container;
pub use schema::{AvroSchema, SchemaError, SchemaResult};
pub use value::AvroValue;
pub use write::encode_container;
