//! Writes Apache Hudi table-version-6 copy-on-write tables.
//!
//! This is the library behind msk-hudi-sink: everything that is not Lambda or CLI glue. One module per Hudi
//! concept, as in hudi-rs; storage, lock, clock and transport are traits handed in at construction so that
//! tests and simulations can inject faults at any step.

pub mod avro;
pub mod aws_clients;
pub mod base_file;
pub mod bootstrap;
pub mod catalog;
pub mod clock;
pub mod commit;
pub mod config;
pub mod dead_letter;
pub mod delta;
pub mod error;
pub mod generate;
pub mod index;
pub mod lock;
pub mod log_file;
pub mod metrics;
pub mod mutation;
pub mod protocol;
pub mod record;
pub mod registry;
pub mod router;
pub mod schema;
pub mod services;
pub mod sink;
pub mod source;
pub mod storage;
pub mod table;
pub mod telemetry;
pub mod transport;
pub mod write;

/// The coordinator under the path the functions, the command and the tests use:
/// `coordinator::Coordinator` is [`commit::Coordinator`].
pub use commit as coordinator;

pub use error::{Error, Result};
