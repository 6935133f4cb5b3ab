//! Integration tests, gathered into one binary to save link time.

mod bloom_golden;
mod bucket_jvm;
mod common;
mod exactly_once;
mod hostile_partitions;
mod keygen_golden;
mod lock_dynamodb;
mod lock_file;
mod schema_golden;
mod source_decode;
mod storage_contract;
mod table_golden;
mod writer_interop;
