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
