//! Parquet base files: the bloom filter footer, writing with Hudi's footers, reading back into Arrow.

pub mod bloom;
