//! Many tables from one writer: the router splits a Kafka batch by topic, hands each table its part, and
//! acknowledges the batch only when every table has committed its part.
//!
//! ```text
//! KafkaBatch ─ split by topic (config.rs: route → table; no route → dead letter)
//!            ─ unrouted letters stored
//!            ─ each table's part → its own KafkaSink (own checkpoint, lock, services, catalog sync),
//!              at most `hudi.sink.route.parallelism` tables at a time, every part run to its end
//!            ─ Ok only if every part committed; else Err naming the tables that failed
//! ```
//!
//! Each table commits through its own in-process coordinator, whose after-commit work (catalog sync, inline
//! services) and failed commit steps reach no answer: [`Router::take_after_commit_reports`] hands them to the
//! writer's metrics per table.
//!
//! Each table is a full single-table sink, created (with its table) on its first record. A batch whose part
//! failed in one table is redelivered whole; the tables that committed their part find its offsets under
//! their own checkpoint (kept per topic-partition) and skip it, so the redelivery writes only what is
//! missing and nothing is doubled (docs/routing.md).
//!
//! A record whose topic has no route is a dead letter (stage `route`) in the location the base properties
//! give the table name `_unrouted`; the command refuses such topics before it writes anything.

pub mod config;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::StreamExt;
use thiserror::Error;

use crate::commit::AfterCommitReport;
use crate::dead_letter::{DeadLetter, DeadLetterError, DeadLetterSink};
use crate::sink::{KafkaSink, ProcessOptions, SinkReport};
use crate::source::event::KafkaBatch;
use crate::write::WriteError;

pub use config::{is_routed, RouteConfig};

/// The pseudo-table name whose dead-letter location receives the records of topics without a route.
pub const UNROUTED: &str = "_unrouted";

/// Opens (creating it if absent) the sink of one routed table; `bootstrap` builds it from the table's
/// properties, the simulation from in-memory parts.
#[async_trait]
pub trait TableOpener: Send + Sync + fmt::Debug {
    /// The ready sink of `table`.
    async fn open(&self, table: &str) -> Result<KafkaSink, WriteError>;
}

/// A table whose part of the batch was not committed.
#[derive(Debug)]
pub struct TableFailure {
    /// The table.
    pub table: String,
    /// Why.
    pub error: WriteError,
}

/// Why a routed batch is not acknowledged. It is always safe to redeliver.
#[derive(Debug, Error)]
pub enum RouteError {
    /// Some tables did not commit their part; the others did and skip it when the batch comes again.
    #[error("{} of {} tables did not commit their part of the batch (it is redelivered; the tables that committed skip their part): {}", failed.len(), tables, describe(failed))]
    Tables {
        /// The tables that failed, in name order.
        failed: Vec<TableFailure>,
        /// How many tables the batch touched.
        tables: usize,
    },
    /// The dead letters of records without a route could not be stored.
    #[error("storing the dead letters of unrouted records: {0}")]
    Unrouted(#[from] DeadLetterError),
}

fn describe(failed: &[TableFailure]) -> String {
    failed
        .iter()
        .map(|f| format!("{}: {}", f.table, f.error))
        .collect::<Vec<_>>()
        .join("; ")
}

impl RouteError {
    /// Whether every failure is the invocation's deadline coming near (nothing is wrong but time).
    pub fn is_deadline(&self) -> bool {
        matches!(self, RouteError::Tables { failed, .. }
            if !failed.is_empty() && failed.iter().all(|f| matches!(f.error, WriteError::Deadline { .. })))
    }

    /// Whether some table's configuration is wrong (redelivery will not help).
    pub fn is_config(&self) -> bool {
        matches!(self, RouteError::Tables { failed, .. }
            if failed.iter().any(|f| matches!(f.error, WriteError::Config { .. } | WriteError::ConfigKey(_))))
    }
}

/// What a routed batch did: each table's report, and the records without a route.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoutedReport {
    /// Each table's part, by table name.
    pub tables: BTreeMap<String, SinkReport>,
    /// Records whose topic has no route (dead letters).
    pub unrouted: u64,
}

impl RoutedReport {
    /// The batch as one report: the tables' sums, the unrouted records counted as records in and dead
    /// letters, so that the accounting still adds up.
    pub fn total(&self) -> SinkReport {
        let mut total = SinkReport::default();
        for report in self.tables.values() {
            total.absorb(report);
        }
        total.records_in += self.unrouted;
        total.dead_lettered += self.unrouted;
        total
    }
}

/// Routes Kafka batches to many tables (see the module doc).
#[derive(Debug)]
pub struct Router {
    config: RouteConfig,
    opener: Arc<dyn TableOpener>,
    /// The sinks opened so far, by table.
    sinks: Mutex<BTreeMap<String, Arc<KafkaSink>>>,
    /// Where the records without a route go.
    unrouted: Arc<dyn DeadLetterSink>,
}

impl Router {
    /// A router opening tables with `opener` and storing unrouted records in `unrouted`.
    pub fn new(
        config: RouteConfig,
        opener: Arc<dyn TableOpener>,
        unrouted: Arc<dyn DeadLetterSink>,
    ) -> Self {
        Self {
            config,
            opener,
            sinks: Mutex::new(BTreeMap::new()),
            unrouted,
        }
    }

    /// The routing configuration.
    pub fn config(&self) -> &RouteConfig {
        &self.config
    }

    /// The sink of `table`, if it was opened.
    pub fn sink(&self, table: &str) -> Option<Arc<KafkaSink>> {
        self.lock_sinks().get(table).cloned()
    }

    /// Each opened table's [`KafkaSink::take_after_commit_report`], by table, leaving out the empty ones: what
    /// the tables' in-process coordinators did after their commits (catalog syncs, failed commit steps and
    /// inline services), for the writer's per-table metrics. Call it after every batch, failed or not.
    pub fn take_after_commit_reports(&self) -> BTreeMap<String, AfterCommitReport> {
        let sinks: Vec<(String, Arc<KafkaSink>)> = self
            .lock_sinks()
            .iter()
            .map(|(table, sink)| (table.clone(), sink.clone()))
            .collect();
        sinks
            .into_iter()
            .map(|(table, sink)| (table, sink.take_after_commit_report()))
            .filter(|(_, report)| !report.is_empty())
            .collect()
    }

    fn lock_sinks(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<KafkaSink>>> {
        // The map is only ever inserted into: a panic elsewhere cannot leave it half-changed.
        self.sinks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes one batch into its tables exactly once. Returns only when every table committed its part;
    /// any error means the batch must be redelivered, which is always safe.
    pub async fn process_with(
        &self,
        batch: KafkaBatch,
        options: ProcessOptions,
    ) -> Result<RoutedReport, RouteError> {
        let KafkaBatch { source, records } = batch;
        let mut parts: BTreeMap<String, Vec<crate::source::KafkaRecord>> = BTreeMap::new();
        let mut letters = Vec::new();
        let mut routes: BTreeMap<Arc<str>, Result<String, String>> = BTreeMap::new();
        for record in records {
            let route = routes
                .entry(record.topic.clone())
                .or_insert_with(|| self.config.table_of(&record.topic));
            match route {
                Ok(table) => parts.entry(table.clone()).or_default().push(record),
                Err(reason) => letters.push(DeadLetter::unrouted(&record, reason.clone())),
            }
        }
        let mut report = RoutedReport {
            unrouted: letters.len() as u64,
            ..RoutedReport::default()
        };
        if !letters.is_empty() {
            tracing::warn!(
                records = letters.len(),
                "records of topics without a route go to the dead letters"
            );
            self.unrouted.write(&letters).await?;
        }
        let tables = parts.len();
        let mut failed = Vec::new();
        let opened = self.open_all(parts.keys().cloned().collect()).await;
        let mut work = Vec::new();
        for (table, records) in parts {
            // A table that did not open has its failure below; its records wait for the redelivery.
            if let Some(Ok(sink)) = opened.get(&table) {
                let part = KafkaBatch {
                    source: source.clone(),
                    records,
                };
                work.push((table, sink.clone(), part));
            }
        }
        for (table, result) in opened {
            if let Err(error) = result {
                failed.push(TableFailure { table, error });
            }
        }
        // Every part runs to its end, whatever the others do: a part cut off half-way would only leave
        // more to roll back.
        let results: Vec<(String, Result<SinkReport, WriteError>)> =
            futures_util::stream::iter(work)
                .map(|(table, sink, part)| async move {
                    let result = sink.process_with(part, options).await;
                    (table, result)
                })
                .buffer_unordered(self.config.parallelism)
                .collect()
                .await;
        for (table, result) in results {
            match result {
                Ok(r) => {
                    report.tables.insert(table, r);
                }
                Err(error) => failed.push(TableFailure { table, error }),
            }
        }
        let early_ack =
            crate::mutation::is_disabled(crate::mutation::Mutation::RouterAwaitsEveryTable)
                && !report.tables.is_empty();
        if failed.is_empty() || early_ack {
            return Ok(report);
        }
        failed.sort_by(|a, b| a.table.cmp(&b.table));
        Err(RouteError::Tables { failed, tables })
    }

    /// The sinks of `tables`, opening (and creating) the missing ones at most `parallelism` at a time.
    async fn open_all(
        &self,
        tables: Vec<String>,
    ) -> BTreeMap<String, Result<Arc<KafkaSink>, WriteError>> {
        let mut out = BTreeMap::new();
        let mut missing = Vec::new();
        {
            let sinks = self.lock_sinks();
            for table in tables {
                match sinks.get(&table) {
                    Some(sink) => {
                        out.insert(table, Ok(sink.clone()));
                    }
                    None => missing.push(table),
                }
            }
        }
        let opened: Vec<(String, Result<KafkaSink, WriteError>)> =
            futures_util::stream::iter(missing)
                .map(|table| async move {
                    let result = self.opener.open(&table).await;
                    (table, result)
                })
                .buffer_unordered(self.config.parallelism)
                .collect()
                .await;
        for (table, result) in opened {
            let result = result.map(|sink| {
                tracing::info!(table, "routed table opened");
                self.lock_sinks()
                    .entry(table.clone())
                    .or_insert_with(|| Arc::new(sink))
                    .clone()
            });
            out.insert(table, result);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(table: &str, error: WriteError) -> TableFailure {
        TableFailure {
            table: table.into(),
            error,
        }
    }

    fn deadline() -> WriteError {
        WriteError::Deadline {
            step: "begin",
            remaining_ms: 5,
            needed_ms: 10,
        }
    }

    #[test]
    fn errors_say_which_tables_failed_and_what_kind_of_failure_it_was() {
        let e = RouteError::Tables {
            failed: vec![failure("orders", deadline())],
            tables: 3,
        };
        assert!(e.is_deadline() && !e.is_config());
        let text = e.to_string();
        assert!(text.starts_with("1 of 3 tables"), "{text}");
        assert!(text.contains("orders: "), "{text}");
        let e = RouteError::Tables {
            failed: vec![
                failure("audit", deadline()),
                failure(
                    "orders",
                    WriteError::Config {
                        reason: "bad".into(),
                    },
                ),
            ],
            tables: 2,
        };
        assert!(!e.is_deadline() && e.is_config());
    }

    #[test]
    fn the_total_counts_unrouted_records_as_dead_letters() {
        let mut report = RoutedReport {
            unrouted: 2,
            ..RoutedReport::default()
        };
        let mut part = SinkReport {
            records_in: 3,
            skipped: 1,
            dead_lettered: 2,
            instant: Some("20260101000000000".into()),
            ..SinkReport::default()
        };
        report.tables.insert("a".into(), part.clone());
        part.instant = None;
        report.tables.insert("b".into(), part);
        let total = report.total();
        assert_eq!(
            (total.records_in, total.skipped, total.dead_lettered),
            (8, 2, 6)
        );
        assert!(total.balanced(), "{total:?}");
        assert_eq!(total.instant.as_deref(), Some("20260101000000000"));
    }
}
