//! The table schema: Avro (as Hudi stores it) and its Arrow / Parquet mapping.

pub mod arrow;
pub mod avro;
pub mod meta;
