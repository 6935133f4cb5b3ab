//! AWS Glue Data Catalog sync: after every commit the coordinator makes the catalog show the table as Hudi's
//! `AwsGlueCatalogSyncTool` would, so that Athena (which cannot `MSCK REPAIR` a Hudi table), Spark, Trino and
//! EMR query it with no hand-written DDL.
//!
//! ```text
//!   commit <t> ──▶ GetTable ──(absent)──▶ CreateDatabase? ─▶ CreateTable
//!                     │
//!                     ├─ partitions written after last_commit_time_sync (commit metadata; a full listing
//!                     │  only when the watermark is missing or older than the active timeline)
//!                     ├─ BatchGetPartition ─▶ BatchCreatePartition (≤100) / BatchUpdatePartition / BatchDelete…
//!                     └─ UpdateTable: schema, parameters, last_commit_time_sync = <t>   (last, so a sync
//!                        that dies half-way is redone by the next one)
//! ```
//!
//! Best effort after a commit ([`CatalogSync::after_commit`]): the data is already durable, so a Glue failure
//! is logged and counted (EMF `CatalogSyncFailures`), never returned to the writer; the next sync catches up
//! from the watermark. Merge-on-read tables get `<table>_ro` and `<table>_rt`; with the Delta mirror on, the
//! Delta view gets `<table>_delta` (`delta_view.rs`). See `docs/architecture.md`.

pub mod config;
pub mod definition;
pub mod delta_view;
#[cfg(feature = "glue")]
pub mod glue;
pub mod hive_types;
pub mod memory;
pub mod partitions;
pub mod sync;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant as WallClock;

pub use config::CatalogConfig;
pub use sync::{sync_table, CatalogClient, CatalogSyncReport};

use crate::storage::{Storage, StorageError};
use crate::table::instant::InstantTime;
use crate::table::properties::PropertiesError;
use crate::table::timeline::TimelineError;

/// Why a catalog sync failed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A Glue request failed.
    #[error("Glue {operation} failed: {message}")]
    Glue { operation: String, message: String },
    /// The table schema cannot be expressed in the catalog.
    #[error("table schema cannot be synced: {reason}")]
    Schema { reason: String },
    /// A partition path does not give the partition values.
    #[error("partition {path:?}: {reason}")]
    Partition { path: String, reason: String },
    /// The sync did not finish within `hudi.sink.catalog.sync.timeout.ms`.
    #[error("catalog sync timed out after {ms} ms")]
    Timeout { ms: u64 },
    /// Reading the table failed.
    #[error("reading the table: {0}")]
    Storage(#[from] StorageError),
    /// Reading the timeline failed.
    #[error("reading the timeline: {0}")]
    Timeline(#[from] TimelineError),
    /// Reading `hoodie.properties` failed.
    #[error("reading hoodie.properties: {0}")]
    Properties(#[from] PropertiesError),
}

/// The sync of one table, as the coordinator runs it: a client, the settings, and the back-off after a
/// failure (a Glue outage must not add its timeout to every commit).
#[derive(Debug)]
pub struct CatalogSync {
    client: Arc<dyn CatalogClient>,
    config: CatalogConfig,
    base_path: String,
    failed_at: Mutex<Option<WallClock>>,
    last_report: Mutex<Option<CatalogSyncReport>>,
}

impl CatalogSync {
    /// A sync of the table at `base_path` (as users configured it: the catalog location derives from it).
    pub fn new(client: Arc<dyn CatalogClient>, config: CatalogConfig, base_path: &str) -> Self {
        Self {
            client,
            config,
            base_path: base_path.to_string(),
            failed_at: Mutex::new(None),
            last_report: Mutex::new(None),
        }
    }

    /// The settings.
    pub fn config(&self) -> &CatalogConfig {
        &self.config
    }

    /// One sync, errors returned (the `hudi-sink sync-catalog` command).
    pub async fn sync(
        &self,
        storage: &dyn Storage,
        known: &[(InstantTime, BTreeSet<String>)],
    ) -> Result<CatalogSyncReport, CatalogError> {
        let ms = self.config.timeout.as_millis() as u64;
        match tokio::time::timeout(
            self.config.timeout,
            sync_table(
                self.client.as_ref(),
                &self.config,
                storage,
                &self.base_path,
                known,
            ),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(CatalogError::Timeout { ms }),
        }
    }

    /// The sync after a commit: never fails. Skipped while backing off from a failure; the report (kept for
    /// [`CatalogSync::take_report`]) says what happened.
    pub async fn after_commit(
        &self,
        storage: &dyn Storage,
        known: &[(InstantTime, BTreeSet<String>)],
    ) -> CatalogSyncReport {
        let backing_off = self
            .failed_at
            .lock()
            .ok()
            .and_then(|f| *f)
            .is_some_and(|at| at.elapsed() < self.config.backoff);
        let report = if backing_off {
            CatalogSyncReport {
                skipped: true,
                ..CatalogSyncReport::default()
            }
        } else {
            let started = WallClock::now();
            match self.sync(storage, known).await {
                Ok(report) => {
                    if let Ok(mut f) = self.failed_at.lock() {
                        *f = None;
                    }
                    if report.tables_created + report.partitions_created + report.partitions_deleted
                        > 0
                    {
                        tracing::info!(?report, "catalog synced");
                    }
                    report
                }
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        backoff_ms = self.config.backoff.as_millis() as u64,
                        "catalog sync failed; the data is committed, a later sync catches up"
                    );
                    if let Ok(mut f) = self.failed_at.lock() {
                        *f = Some(WallClock::now());
                    }
                    CatalogSyncReport {
                        error: Some(e.to_string()),
                        duration_ms: started.elapsed().as_millis() as u64,
                        ..CatalogSyncReport::default()
                    }
                }
            }
        };
        if let Ok(mut last) = self.last_report.lock() {
            *last = Some(report.clone());
        }
        report
    }

    /// The report of the last best-effort sync, once (for the request's metrics).
    pub fn take_report(&self) -> Option<CatalogSyncReport> {
        self.last_report.lock().ok().and_then(|mut r| r.take())
    }
}

#[cfg(test)]
mod tests;
