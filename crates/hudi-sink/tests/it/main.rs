//! Integration tests, gathered into one binary to save link time.

mod avro_fastavro;
mod avro_golden;
mod bad_input;
mod bloom_golden;
mod bucket_jvm;
mod clustering;
mod common;
mod exactly_once;
mod exactly_once_aws;
mod generate;
mod hostile_partitions;
mod keygen_golden;
mod lambda_watch;
mod lock_dynamodb;
mod lock_file;
mod model;
mod request_counts;
mod schema_golden;
mod services_crash;
mod simulation;
mod source_decode;
mod storage_contract;
mod streamer_properties;
mod table_golden;
mod writer_interop;
