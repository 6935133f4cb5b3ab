//! Many tables from one writer (`hudi_sink::router`): a batch spanning three topics lands in three local
//! tables, read back with hudi-rs row for row against the model; a commit that fails in one table leaves
//! the batch unacknowledged, and its redelivery writes only that table's part (the others skip theirs by
//! their own checkpoint, so no offset is committed twice); a topic without a route becomes dead letters; each
//! table's catalog sync and failed commit steps are reported per table for the writer's metrics.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hudi_sink::catalog::memory::MemoryCatalog;
use hudi_sink::catalog::{CatalogConfig, CatalogSync};
use hudi_sink::clock::SystemClock;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::dead_letter::StorageDeadLetterSink;
use hudi_sink::lock::memory::MemoryLock;
use hudi_sink::lock::LeaseOptions;
use hudi_sink::router::{RouteConfig, RouteError, Router, TableOpener};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::services::ServicesConfig;
use hudi_sink::sink::{KafkaSink, ProcessOptions, SinkConfig};
use hudi_sink::source::event::KafkaBatch;
use hudi_sink::storage::faulty::{FaultRule, Operation};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::{FaultyStorage, Storage};
use hudi_sink::table::timeline::{Timeline, META_DIR};
use hudi_sink::transport::InProcessClient;
use hudi_sink::write::{TableWriter, WriteConfig, WriteError};

use crate::common::python::read_rows;
use crate::model::{
    dead_letter_lines, esm_payload, local_props, stream_with_seed, Model, Msg, SCHEMA,
};

/// The three topics and the tables their routes name.
const TOPICS: [(&str, &str); 3] = [
    ("pg.public.customers", "customers"),
    ("pg.public.orders", "orders"),
    ("audit-log", "audit"),
];

/// The routed configuration of tables under `dir/tables/<table>`: a pattern route for the Postgres topics,
/// an exact one for the audit log.
fn routed_props(dir: &Path) -> BTreeMap<String, String> {
    let schema = dir.join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let mut props = local_props(
        &dir.join("tables/$table"),
        &schema,
        &dir.join("dead/$table"),
    );
    props.remove("hoodie.table.name");
    props.extend(
        [
            ("hudi.sink.route.pg.topic.regex", r"pg\.public\.(.*)"),
            ("hudi.sink.route.pg.table", "$1"),
            ("hudi.sink.route.audit.topic", "audit-log"),
            ("hudi.sink.route.parallelism", "2"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    props
}

/// Opens each table on local storage behind a fault injector, the parts built from the table's routed
/// properties as `bootstrap` builds them; with `catalogs`, each table is synced to an in-memory Glue catalog
/// after its commits (the tables in `refused` to one that refuses every call) and cleaned inline after every
/// commit, keeping one.
#[derive(Debug)]
struct FaultyOpener {
    config: RouteConfig,
    stores: Mutex<BTreeMap<String, Arc<FaultyStorage>>>,
    catalogs: bool,
    refused: BTreeSet<String>,
}

impl FaultyOpener {
    fn store(&self, table: &str) -> Arc<FaultyStorage> {
        self.stores.lock().expect("stores")[table].clone()
    }
}

#[async_trait]
impl TableOpener for FaultyOpener {
    async fn open(&self, table: &str) -> Result<KafkaSink, WriteError> {
        let props = self.config.table_properties(table, None)?;
        let write = WriteConfig::from_properties(props.clone())?;
        let sink_config = SinkConfig::from_properties(&props)?;
        let faulty = Arc::new(FaultyStorage::new(Arc::new(LocalStorage::new(
            &write.base_path,
        ))));
        self.stores
            .lock()
            .expect("stores")
            .insert(table.to_string(), faulty.clone());
        let storage: Arc<dyn Storage> = faulty;
        let clock = Arc::new(SystemClock);
        let mut coordinator = Coordinator::new(
            storage.clone(),
            Arc::new(MemoryLock::new(
                table,
                LeaseOptions::hudi(Duration::from_secs(20)),
            )),
            clock.clone(),
            CoordinatorConfig {
                lock_wait: Duration::from_secs(20),
                heartbeat_tolerance: sink_config.heartbeat_tolerance(),
                services: if self.catalogs {
                    ServicesConfig {
                        clean_max_commits: 1,
                        commits_retained: 1,
                        ..ServicesConfig::default()
                    }
                } else {
                    ServicesConfig::default()
                },
            },
        );
        if self.catalogs {
            let mut glue = props.clone();
            glue.extend(
                [
                    ("hoodie.datasource.meta.sync.enable", "true"),
                    (
                        "hoodie.meta.sync.client.tool.class",
                        "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
                    ),
                    ("hoodie.datasource.hive_sync.database", "lake"),
                ]
                .map(|(k, v)| (k.to_string(), v.to_string())),
            );
            let config = CatalogConfig::from_properties(&glue)
                .expect("catalog settings")
                .expect("the sync is on");
            let catalog = MemoryCatalog::default();
            if self.refused.contains(table) {
                *catalog.fail_after.lock().expect("fail_after") = Some(0);
            }
            coordinator = coordinator.with_catalog(Arc::new(CatalogSync::new(
                Arc::new(catalog),
                config,
                &write.base_path,
            )));
        }
        let writer = TableWriter::create_or_open(
            storage,
            clock.clone(),
            write,
            Some(AvroSchema::parse(SCHEMA).expect("schema")),
        )
        .await?;
        let dead = Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
            &props["hudi.sink.dead.letter.path"],
        ))));
        Ok(KafkaSink::new(
            writer,
            Arc::new(InProcessClient::new(coordinator)),
            dead,
            clock,
            sink_config,
            format!("router-{table}"),
        ))
    }
}

struct Setup {
    dir: tempfile::TempDir,
    opener: Arc<FaultyOpener>,
    router: Router,
}

impl Setup {
    fn new() -> Self {
        Self::opened_with(false, &[])
    }

    /// Tables synced to in-memory Glue catalogs, those of `refused` to catalogs that refuse every call.
    fn with_catalogs(refused: &[&str]) -> Self {
        Self::opened_with(true, refused)
    }

    fn opened_with(catalogs: bool, refused: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = RouteConfig::from_properties(&routed_props(dir.path())).expect("routes");
        let opener = Arc::new(FaultyOpener {
            config: config.clone(),
            stores: Mutex::new(BTreeMap::new()),
            catalogs,
            refused: refused.iter().map(|t| t.to_string()).collect(),
        });
        let unrouted = Arc::new(StorageDeadLetterSink::new(Arc::new(LocalStorage::new(
            dir.path().join("dead/_unrouted"),
        ))));
        let router = Router::new(config, opener.clone(), unrouted);
        Self {
            dir,
            opener,
            router,
        }
    }

    fn table(&self, table: &str) -> PathBuf {
        self.dir.path().join("tables").join(table)
    }
}

/// The three topics' streams, interleaved into batches of `per_batch` records per topic.
fn batches(per_batch: usize) -> Vec<Vec<Msg>> {
    let streams: Vec<Vec<Msg>> = TOPICS
        .iter()
        .enumerate()
        .map(|(i, (topic, _))| stream_with_seed(topic, 2, 40, 15, 0x5EED + i as u64))
        .collect();
    let n = streams
        .iter()
        .map(|s| s.len().div_ceil(per_batch))
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|b| {
            streams
                .iter()
                .flat_map(|s| s.iter().skip(b * per_batch).take(per_batch).cloned())
                .collect()
        })
        .collect()
}

/// `msgs` of the topic routed to `table`.
fn of_table(msgs: &[Msg], table: &str) -> Vec<Msg> {
    let topic = TOPICS.iter().find(|(_, t)| *t == table).expect("table").0;
    msgs.iter().filter(|m| m.topic == topic).cloned().collect()
}

async fn deliver(
    router: &Router,
    msgs: &[Msg],
) -> Result<hudi_sink::router::RoutedReport, RouteError> {
    let batch = KafkaBatch::from_slice(&esm_payload(msgs)).expect("event");
    router.process_with(batch, ProcessOptions::default()).await
}

/// Each completed commit's checkpoint, in timeline order: `(topic, partition) → next offset`.
async fn checkpoints(table: &Path) -> Vec<BTreeMap<(String, i32), i64>> {
    let storage = LocalStorage::new(table);
    let listed = storage.list(META_DIR).await.expect("list");
    let timeline = Timeline::from_listing(&listed).expect("timeline");
    let mut out = Vec::new();
    for instant in timeline.completed_commits() {
        let bytes = storage
            .get(&format!("{META_DIR}{}", instant.file_name()))
            .await
            .expect("commit");
        let checkpoint = hudi_sink::table::commit::CommitMetadata::from_json(&bytes)
            .and_then(|m| m.checkpoint())
            .expect("commit metadata with a readable checkpoint");
        let mut offsets = BTreeMap::new();
        if let Some(checkpoint) = checkpoint {
            for (topic, partitions) in checkpoint.topics() {
                for (partition, next) in partitions.iter() {
                    offsets.insert((topic.clone(), *partition), *next);
                }
            }
        }
        out.push(offsets);
    }
    out
}

/// hudi-rs reads `table` row for row as `model` says.
fn assert_rows(table: &Path, model: &Model, what: &str) {
    let rows = read_rows(table, "hudi", &["snapshot"]);
    model.assert_table(&rows, what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_in_one_table_is_redelivered_without_doubling_the_others() {
    let s = Setup::new();
    let batches = batches(40);
    assert_eq!(batches.len(), 2);
    let mut models: BTreeMap<&str, Model> = BTreeMap::new();
    // The first batch commits in all three tables, which it creates.
    let report = deliver(&s.router, &batches[0]).await.expect("first batch");
    assert_eq!(report.tables.len(), 3);
    assert!(report.total().balanced(), "{report:?}");
    for (_, table) in TOPICS {
        models
            .entry(table)
            .or_default()
            .apply(&of_table(&batches[0], table));
        assert!(report.tables[table].instant.is_some(), "{table} committed");
    }
    // The second batch: the orders table's commit fails; the others commit their parts.
    s.opener.store("orders").add_rule(
        FaultRule::fail(Operation::PutIfAbsent)
            .path_suffix(".commit")
            .always(),
    );
    let err = deliver(&s.router, &batches[1])
        .await
        .expect_err("orders fails");
    match &err {
        RouteError::Tables { failed, tables } => {
            assert_eq!(*tables, 3);
            let names: Vec<&str> = failed.iter().map(|f| f.table.as_str()).collect();
            assert_eq!(names, ["orders"], "{err}");
        }
        other => panic!("unexpected error {other}"),
    }
    for table in ["customers", "audit"] {
        assert_eq!(
            checkpoints(&s.table(table)).await.len(),
            2,
            "{table} committed its part"
        );
    }
    assert_eq!(
        checkpoints(&s.table("orders")).await.len(),
        1,
        "orders did not"
    );
    // The event source mapping redelivers the whole batch: only the orders part is written.
    s.opener.store("orders").clear_rules();
    let report = deliver(&s.router, &batches[1]).await.expect("redelivery");
    assert!(report.total().balanced(), "{report:?}");
    for (topic, table) in TOPICS {
        let part = of_table(&batches[1], table);
        let r = &report.tables[table];
        if table == "orders" {
            assert!(r.instant.is_some(), "orders commits on redelivery");
            assert_eq!(r.skipped, 0);
        } else {
            assert_eq!(r.instant, None, "{table} commits nothing twice");
            assert_eq!(r.skipped, part.len() as u64, "{table} skips its whole part");
        }
        let model = models.entry(table).or_default();
        model.apply(&part);
        // Every table: two commits, each checkpoint carrying only the table's own topic, the last one at
        // the end of what was routed to it; hudi-rs reads the model's rows.
        let cps = checkpoints(&s.table(table)).await;
        assert_eq!(cps.len(), 2, "{table}: one commit per batch");
        for cp in &cps {
            assert!(cp.keys().all(|(t, _)| t == topic), "{table}: {cp:?}");
        }
        let expected: BTreeMap<(String, i32), i64> = model.next_offset.clone();
        assert_eq!(cps[1], expected, "{table}: checkpoint");
        assert_rows(&s.table(table), model, table);
    }
}

/// What the routed tables' in-process coordinators did after their commits reaches the writer per table: a
/// catalog sync (failed against a catalog that refuses), a failed commit step (the batch is redelivered) and a
/// failed inline clean (the commit stands), each taken once; the writer prints them as the coordinator
/// function's lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_syncs_and_failed_commits_are_reported_per_table() {
    let s = Setup::with_catalogs(&["orders"]);
    let batches = batches(40);
    deliver(&s.router, &batches[0]).await.expect("first batch");
    let reports = s.router.take_after_commit_reports();
    assert_eq!(
        reports.keys().map(String::as_str).collect::<Vec<_>>(),
        ["audit", "customers", "orders"]
    );
    for table in ["audit", "customers"] {
        let sync = reports[table].catalog.as_ref().expect("a sync ran");
        assert_eq!(sync.error, None, "{table}: {sync:?}");
        assert!(sync.partitions_created > 0, "{table}: {sync:?}");
        assert!(reports[table].commit_failures.is_empty());
    }
    let orders = &reports["orders"];
    let refused = orders.catalog.as_ref().expect("a sync ran");
    assert!(
        refused
            .error
            .as_deref()
            .is_some_and(|e| e.contains("injected")),
        "{refused:?}"
    );
    assert!(orders.commit_failures.is_empty() && orders.service_failures.is_empty());
    let lines = hudi_sink::metrics::after_commit_emf(
        orders,
        &hudi_sink::metrics::EmfContext::now("orders", "req-1"),
    );
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["CatalogSyncFailures"], 1);
    assert_eq!(lines[0]["Table"], "orders");
    // Taken once.
    assert!(s.router.take_after_commit_reports().is_empty());
    // The orders table's commit fails: its part of the batch is not acknowledged, and the failed commit step
    // is reported under its name; the customers table commits, but its inline clean (due after its second
    // commit) cannot write its plan; the other tables report their syncs.
    s.opener.store("orders").add_rule(
        FaultRule::fail(Operation::PutIfAbsent)
            .path_suffix(".commit")
            .always(),
    );
    for op in [Operation::Put, Operation::PutIfAbsent] {
        s.opener
            .store("customers")
            .add_rule(FaultRule::fail(op).path_suffix(".clean.requested").always());
    }
    deliver(&s.router, &batches[1])
        .await
        .expect_err("orders fails");
    let reports = s.router.take_after_commit_reports();
    let orders = &reports["orders"];
    assert!(!orders.commit_failures.is_empty(), "{orders:?}");
    assert_eq!(orders.catalog, None, "no commit, no sync: {orders:?}");
    let lines = hudi_sink::metrics::after_commit_emf(
        orders,
        &hudi_sink::metrics::EmfContext::now("orders", "req-2"),
    );
    assert!(lines.iter().all(|l| l["CommitFailures"] == 1), "{lines:?}");
    let customers = &reports["customers"];
    assert_eq!(customers.service_failures.len(), 1, "{customers:?}");
    assert!(
        customers.service_failures[0].starts_with("inline clean and archive: "),
        "{customers:?}"
    );
    let lines = hudi_sink::metrics::after_commit_emf(
        customers,
        &hudi_sink::metrics::EmfContext::now("customers", "req-2"),
    );
    assert_eq!(lines.last().map(|l| &l["ServiceFailures"]), Some(&1.into()));
    assert!(reports["audit"].service_failures.is_empty());
    for table in ["audit", "customers"] {
        assert!(reports[table].commit_failures.is_empty(), "{table}");
        let sync = reports[table].catalog.as_ref().expect("a sync ran");
        assert_eq!(sync.error, None, "{table}: {sync:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_without_a_route_becomes_dead_letters_and_the_rest_commits() {
    let s = Setup::new();
    let batch = &batches(40)[0];
    let mut msgs = batch.clone();
    let stray: Vec<Msg> = stream_with_seed("inventory.items", 1, 5, 5, 7);
    msgs.extend(stray.iter().cloned());
    let report = deliver(&s.router, &msgs).await.expect("batch");
    assert_eq!(report.unrouted, stray.len() as u64);
    let total = report.total();
    assert!(total.balanced(), "{total:?}");
    assert_eq!(total.records_in, msgs.len() as u64);
    let letters = dead_letter_lines(&s.dir.path().join("dead/_unrouted"));
    let offsets: Vec<i64> = letters
        .iter()
        .map(|l| l["offset"].as_i64().expect("offset"))
        .collect();
    assert_eq!(offsets, stray.iter().map(|m| m.offset).collect::<Vec<_>>());
    for l in &letters {
        assert_eq!(l["stage"], "route");
        assert!(
            l["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no route for topic inventory.items")),
            "{l}"
        );
    }
    for (_, table) in TOPICS {
        let mut model = Model::default();
        model.apply(&of_table(batch, table));
        assert_rows(&s.table(table), &model, table);
    }
}

/// The router `bootstrap` builds (the command's and the writer function's): a table's properties file and its
/// own keys take effect over the shared keys, each table is created at its own base path on its first record,
/// and reads back row for row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrapped_router_applies_each_tables_file_and_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut props = routed_props(dir.path());
    // orders: non-partitioned from its file, 2 buckets from its own key (over the file's 3).
    let file = dir.path().join("orders.properties");
    std::fs::write(
        &file,
        "hoodie.datasource.write.partitionpath.field=\nhoodie.bucket.index.num.buckets=3\n",
    )
    .expect("file");
    props.insert(
        "hudi.sink.table.orders.properties.file".into(),
        file.display().to_string(),
    );
    props.insert(
        "hudi.sink.table.orders.hoodie.bucket.index.num.buckets".into(),
        "2".into(),
    );
    let router = hudi_sink::bootstrap::build_router(&props, "routing-test")
        .await
        .expect("router");
    let batch = &batches(40)[0];
    let report = deliver(&router, batch).await.expect("batch");
    assert!(report.total().balanced(), "{report:?}");
    let tables = dir.path().join("tables");
    let table_props = |table: &str| {
        std::fs::read_to_string(tables.join(table).join(".hoodie/hoodie.properties"))
            .expect("hoodie.properties")
    };
    let orders = table_props("orders");
    assert!(orders.contains("hoodie.table.name=orders"), "{orders}");
    assert!(
        orders.contains("hoodie.bucket.index.num.buckets=2"),
        "{orders}"
    );
    assert!(
        !orders.contains("hoodie.table.partition.fields=city"),
        "{orders}"
    );
    let customers = table_props("customers");
    assert!(
        customers.contains("hoodie.table.name=customers"),
        "{customers}"
    );
    assert!(
        customers.contains("hoodie.bucket.index.num.buckets=4"),
        "{customers}"
    );
    assert!(
        customers.contains("hoodie.table.partition.fields=city"),
        "{customers}"
    );
    for (_, table) in TOPICS {
        let mut model = Model::default();
        model.apply(&of_table(batch, table));
        assert_rows(&tables.join(table), &model, table);
    }
}
