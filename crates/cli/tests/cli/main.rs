//! The built `hudi-sink` command end to end, one test binary (one link of the command's dependencies):
//! `ingest` (generate → ingest → show, redelivery, timings, the interval commit, the Glue example), the commands
//! that act on an existing table (`table_commands`), and the Kafka metadata columns.

mod common;
mod debezium;
mod debezium_avro;
mod debezium_connect;
mod debezium_connect_flat;
mod debezium_example;
mod debezium_meta;
mod debezium_toast;
mod delta;
mod delta_log;
mod ingest;
mod kafka_columns;
mod routing;
mod table_commands;
