//! The table schema: Avro (as Hudi stores it) and its Arrow / Parquet mapping.
//!
//! Hudi keeps the table schema as Avro JSON in every commit (`extraMetadata.schema`), in `hoodie.properties`
//! (`hoodie.table.create.schema`) and, with the meta fields, in each Parquet footer (`parquet.avro.schema`).
//! [`avro`] parses and re-serialises that JSON without losing anything, [`meta`] adds and checks the meta
//! fields, [`arrow`] maps Avro to the Arrow types of our record batches (and back), and [`parquet`] gives the
//! Parquet schema that makes arrow-rs write what parquet-avro would; [`evolution`] applies a newer writer
//! schema under Hudi's schema-on-write rules, [`project`] reads rows of older files in the current schema, and
//! [`spark_form`] writes decimals as Spark does in every schema Hudi's Java readers parse.

pub mod evolution;
pub mod meta;
pub mod parquet;
pub mod project;
pub mod spark_form;

/// The Avro ⇄ Arrow mapping lives in [`crate::avro::arrow`]; this path keeps its long-standing name.
pub use crate::avro::arrow;
/// The Avro schema model lives in [`crate::avro::schema`]; this path keeps its long-standing name.
pub use crate::avro::schema as avro;
pub use crate::avro::schema::{SchemaError, SchemaResult};
