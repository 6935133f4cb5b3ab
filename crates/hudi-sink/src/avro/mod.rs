//! Avro for the whole crate: the one binary encoding ([`binary`]) every Avro reader and writer uses.

pub mod binary;
