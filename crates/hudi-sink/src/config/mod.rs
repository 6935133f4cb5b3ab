//! Configuration primitives every layer shares: Java `.properties` files, the error and value parsers of every
//! configuration module, and the check that every key of a properties file is known.
//!
//! Each key is declared once, beside its parser, in a `KEYS` list of the module that reads it (the writer's
//! `crate::write::config`, the services', the catalog sync's, the lock's, …). `crate::bootstrap`, the layer
//! that sees every module, joins the lists and runs [`keys::check`] over a properties file before any parser.

pub mod error;
pub mod java_properties;
pub mod keys;

pub use error::{invalid, parse_bool, parse_list, parse_num, ConfigError};

/// The default commit interval: at most one write instant per 5 s (17,280 a day), while a Kafka partition can
/// still move one ≤ 6 MB batch per 5 s (docs/architecture.md, "Interval commit", for the trade-off). Here,
/// below both, because the sink paces its instants by it and the Delta mirror derives its retention from it.
pub const DEFAULT_COMMIT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
