//! The Delta Lake mirror: every completed Hudi instant the coordinator makes is mirrored into a Delta log
//! (`<base>/_delta_log/`) over the same parquet base files, so that Delta readers (delta-rs, Polars, DuckDB,
//! Spark, Databricks, Snowflake) see the rows Hudi readers see. See `docs/delta.md`.
//!
//! ```text
//! commit <t> ─ after_commit (under the table lock) ─ DeltaMirror::mirror
//!     open _delta_log/ ── txn(hudi-sink-mirror) = n, commitInfo.hudiInstant = w (the watermark)
//!     for each completed commit-like instant u > w, in timeline order (and each instant pending at w that
//!     has completed since):
//!         base files visible as of u (the file-system view) − the Delta snapshot's files → add / remove
//!         commit version with txn n+1, hudiInstant u                  (one Delta version per Hudi instant)
//! ```
//!
//! - [`config`]: the key `hudi.sink.delta.mirror`.
//! - [`partition`]: partition values decoded from a partition path exactly as the sink encodes them.
//! - `schema` (feature `delta`): the Delta schema from the table's Avro schema, meta columns included.
//! - `stats` (feature `delta`): the per-file column statistics of `add` actions, from the Parquet footers.
//! - `store` (feature `delta`): the sink's storage as the object store of Delta's log store.
//! - `expiry` (feature `delta`): deletes the log below a checkpoint once neither the retention nor Hudi's
//!   active timeline needs it.
//! - `mirror` (feature `delta`): the mirror step: plan each instant's adds and removes and commit it.
//!
//! It sits above the coordinator (`crate::commit`): it implements the coordinator's [`crate::commit::CommitMirror`]
//! hook, which the bootstrap hands in. Best effort: a failure is logged and reported (EMF
//! `DeltaMirrorFailures`), never returned to the writer, and the next commit catches up.

pub mod config;
#[cfg(feature = "delta")]
mod expiry;
#[cfg(feature = "delta")]
mod mirror;
pub mod partition;
#[cfg(feature = "delta")]
mod schema;
#[cfg(feature = "delta")]
mod stats;
#[cfg(feature = "delta")]
mod store;

pub use config::DeltaConfig;
#[cfg(feature = "delta")]
pub use mirror::{status, DeltaMirror, MirrorError, MirrorStatus, APP_ID};
