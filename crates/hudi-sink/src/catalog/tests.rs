//! The sync against an in-memory catalog and an in-memory table: what is created, which calls are made, and
//! that an interrupted or failed sync converges on the next one.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

use super::definition::WATERMARK;
use super::memory::MemoryCatalog;
use super::*;
use crate::clock::ManualClock;
use crate::schema::avro::AvroSchema;
use crate::storage::memory::MemoryStorage;
use crate::write::TableWriter;
use crate::write::WriteConfig;

const SCHEMA: &str = r#"{"type":"record","name":"trips","namespace":"t","fields":[
 {"name":"uuid","type":"string"},{"name":"ts","type":"long"},{"name":"city","type":"string"}]}"#;

struct Fixture {
    storage: Arc<MemoryStorage>,
    clock: Arc<ManualClock>,
    writer: TableWriter,
    catalog: Arc<MemoryCatalog>,
    sync: CatalogSync,
}

fn catalog_config(extra: &[(&str, &str)]) -> CatalogConfig {
    let mut props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.datasource.meta.sync.enable", "true"),
        ("hoodie.meta.sync.client.tool.class", config::GLUE_SYNC_TOOL),
        ("hoodie.datasource.hive_sync.database", "lake"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    CatalogConfig::from_properties(&props).unwrap().unwrap()
}

async fn fixture(partitioned: bool, extra: &[(&str, &str)]) -> Fixture {
    fixture_with(partitioned, "", extra).await
}

async fn fixture_with(partitioned: bool, write_extra: &str, extra: &[(&str, &str)]) -> Fixture {
    let storage = Arc::new(MemoryStorage::new("mem://catalog/trips"));
    let clock = Arc::new(ManualClock::new(1_767_225_600_000));
    let partition = if partitioned {
        "hoodie.datasource.write.partitionpath.field=city\n"
    } else {
        ""
    };
    let config = WriteConfig::from_properties_text(&format!(
        "hoodie.table.name=trips\nhoodie.base.path=mem://catalog/trips\n\
         hoodie.datasource.write.recordkey.field=uuid\nhoodie.datasource.write.operation=insert\n{partition}{write_extra}"
    ))
    .unwrap();
    let writer = TableWriter::create_or_open(
        storage.clone(),
        clock.clone(),
        config,
        Some(AvroSchema::parse(SCHEMA).unwrap()),
    )
    .await
    .unwrap();
    let catalog = Arc::new(MemoryCatalog::default());
    let sync = CatalogSync::new(catalog.clone(), catalog_config(extra), "s3a://bucket/trips");
    Fixture {
        storage,
        clock,
        writer,
        catalog,
        sync,
    }
}

impl Fixture {
    async fn insert(&self, cities: &[&str]) -> InstantTime {
        self.clock.advance(1000);
        let n = cities.len();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("k{i}")),
            )),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(StringArray::from_iter_values(cities.iter().copied())),
        ];
        let batch = RecordBatch::try_new(self.writer.schema().data.clone(), columns).unwrap();
        self.writer.write(&[batch]).await.unwrap().instant
    }

    async fn sync(&self) -> CatalogSyncReport {
        self.catalog.calls.lock().unwrap().clear();
        self.sync.sync(self.storage.as_ref(), &[]).await.unwrap()
    }

    fn partitions(&self, table: &str) -> BTreeMap<Vec<String>, String> {
        self.catalog
            .partitions
            .lock()
            .unwrap()
            .get(&("lake".to_string(), table.to_string()))
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.storage.location.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn watermark(&self, table: &str) -> Option<String> {
        self.catalog
            .tables
            .lock()
            .unwrap()
            .get(&("lake".to_string(), table.to_string()))
            .and_then(|t| t.parameters.get(WATERMARK).cloned())
    }

    /// The `trips` table as the catalog holds it.
    fn table(&self) -> definition::TableDef {
        self.catalog.tables.lock().unwrap()[&("lake".to_string(), "trips".to_string())].clone()
    }

    /// Changes the stored `trips` table behind the sync's back.
    fn edit_table(&self, edit: impl FnOnce(&mut definition::TableDef)) {
        let mut tables = self.catalog.tables.lock().unwrap();
        edit(
            tables
                .get_mut(&("lake".to_string(), "trips".to_string()))
                .unwrap(),
        );
    }

    fn calls(&self) -> Vec<String> {
        self.catalog.calls.lock().unwrap().clone()
    }
}

fn p(v: &str, loc: &str) -> (Vec<String>, String) {
    (vec![v.to_string()], loc.to_string())
}

#[tokio::test]
async fn first_sync_creates_database_table_and_every_partition() {
    let f = fixture(true, &[]).await;
    let t1 = f.insert(&["sf", "nyc"]).await;
    let report = f.sync().await;
    assert_eq!(
        f.calls(),
        [
            "GetTable",
            "GetDatabase",
            "CreateDatabase",
            "CreateTable",
            "GetTable",
            "GetPartitions",
            "BatchCreatePartition",
            "UpdateTable"
        ]
    );
    assert!(report.full_listing);
    assert_eq!(report.tables_created, 1);
    assert_eq!(report.partitions_created, 2);
    assert_eq!(
        f.partitions("trips"),
        BTreeMap::from([
            p("nyc", "s3://bucket/trips/nyc"),
            p("sf", "s3://bucket/trips/sf")
        ])
    );
    assert_eq!(f.watermark("trips"), Some(t1.to_string()));
    let table = f.table();
    let keys: Vec<&str> = table
        .partition_keys
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(keys, ["city"]);
    assert!(table.storage.columns.iter().all(|c| c.name != "city"));
}

#[tokio::test]
async fn a_commit_to_one_new_partition_makes_one_create_call() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf", "nyc"]).await;
    f.sync().await;
    let t2 = f.insert(&["la", "sf"]).await;
    let report = f.sync().await;
    assert_eq!(
        f.calls(),
        [
            "GetTable",
            "BatchGetPartition",
            "BatchCreatePartition",
            "UpdateTable"
        ]
    );
    assert!(!report.full_listing);
    assert_eq!(report.partitions_created, 1);
    assert_eq!(f.partitions("trips").len(), 3);
    assert_eq!(f.watermark("trips"), Some(t2.to_string()));
    // Nothing new: one read, no write at all.
    let report = f.sync().await;
    assert_eq!(f.calls(), ["GetTable"]);
    assert_eq!(report.watermark, Some(t2.to_string()));
    // A commit to known partitions only moves the watermark.
    f.insert(&["la"]).await;
    f.sync().await;
    assert_eq!(f.calls(), ["GetTable", "BatchGetPartition", "UpdateTable"]);
}

#[tokio::test]
async fn known_partitions_save_the_commit_read() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    f.sync().await;
    let t2 = f.insert(&["la"]).await;
    // The caller's partitions are taken as given: the commit file is not read again.
    let known = [(t2.clone(), BTreeSet::from(["given".to_string()]))];
    let report = f.sync.sync(f.storage.as_ref(), &known).await.unwrap();
    assert_eq!(report.partitions_created, 1);
    let parts: Vec<Vec<String>> = f.partitions("trips").into_keys().collect();
    assert_eq!(parts, [vec!["given".to_string()], vec!["sf".to_string()]]);
}

#[tokio::test]
async fn a_failed_sync_is_caught_up_by_the_next() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    f.sync().await;
    f.insert(&["la"]).await;
    f.insert(&["ny"]).await;
    // Fails at BatchCreatePartition: the watermark must stay where it was.
    *f.catalog.fail_after.lock().unwrap() = Some(2);
    let before = f.watermark("trips");
    let report = f.sync.after_commit(f.storage.as_ref(), &[]).await;
    assert!(
        report
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("injected"),
        "{report:?}"
    );
    assert_eq!(f.watermark("trips"), before);
    // Backing off: the next commit skips the sync without a call.
    *f.catalog.fail_after.lock().unwrap() = None;
    f.catalog.calls.lock().unwrap().clear();
    let report = f.sync.after_commit(f.storage.as_ref(), &[]).await;
    assert!(report.skipped);
    assert!(f.calls().is_empty());
    // The next real sync registers everything missed.
    let report = f.sync().await;
    assert_eq!(report.partitions_created, 2);
    assert_eq!(f.partitions("trips").len(), 3);
}

#[tokio::test]
async fn an_interrupted_create_converges() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf", "la"]).await;
    // Dies after the table is created, before the partitions.
    *f.catalog.fail_after.lock().unwrap() = Some(4);
    assert!(f.sync.sync(f.storage.as_ref(), &[]).await.is_err());
    assert!(f.watermark("trips").is_none());
    *f.catalog.fail_after.lock().unwrap() = None;
    let report = f.sync().await;
    assert_eq!(report.partitions_created, 2);
    assert_eq!(report.tables_created, 0);
}

#[tokio::test]
async fn a_full_sync_drops_partitions_gone_from_storage_and_fixes_locations() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    {
        let mut parts = f.catalog.partitions.lock().unwrap();
        let map = parts.entry(("lake".into(), "trips".into())).or_default();
        let stale = definition::PartitionDef {
            values: vec!["gone".into()],
            storage: definition::StorageDef {
                columns: vec![],
                location: "s3://bucket/trips/gone".into(),
                input_format: String::new(),
                output_format: String::new(),
                serde_library: String::new(),
                serde_parameters: BTreeMap::new(),
            },
        };
        map.insert(vec!["gone".into()], stale.clone());
        let mut moved = stale;
        moved.values = vec!["sf".into()];
        moved.storage.location = "s3://elsewhere/sf".into();
        map.insert(vec!["sf".into()], moved);
    }
    let report = f.sync().await;
    assert_eq!(
        (report.partitions_deleted, report.partitions_updated),
        (1, 1)
    );
    assert_eq!(
        f.partitions("trips"),
        BTreeMap::from([p("sf", "s3://bucket/trips/sf")])
    );
}

#[tokio::test]
async fn many_partitions_go_in_batches_of_a_hundred() {
    let f = fixture(true, &[]).await;
    let cities: Vec<String> = (0..250).map(|i| format!("c{i:03}")).collect();
    let refs: Vec<&str> = cities.iter().map(String::as_str).collect();
    f.insert(&refs).await;
    let report = f.sync().await;
    assert_eq!(report.calls_of("BatchCreatePartition"), 3);
    assert_eq!(f.partitions("trips").len(), 250);
}

#[tokio::test]
async fn unpartitioned_tables_register_no_partitions() {
    let f = fixture(false, &[]).await;
    let t1 = f.insert(&["sf"]).await;
    f.sync().await;
    assert_eq!(
        f.calls(),
        [
            "GetTable",
            "GetDatabase",
            "CreateDatabase",
            "CreateTable",
            "GetTable",
            "UpdateTable"
        ]
    );
    assert!(f.partitions("trips").is_empty());
    assert_eq!(f.watermark("trips"), Some(t1.to_string()));
}

#[tokio::test]
async fn condition_sync_leaves_the_watermark_when_nothing_changed() {
    let f = fixture(
        true,
        &[("hoodie.datasource.meta_sync.condition.sync", "true")],
    )
    .await;
    let t1 = f.insert(&["sf"]).await;
    f.sync().await;
    f.insert(&["sf"]).await;
    f.sync().await;
    assert_eq!(f.calls(), ["GetTable", "BatchGetPartition"]);
    assert_eq!(f.watermark("trips"), Some(t1.to_string()));
}

#[tokio::test]
async fn parameters_others_added_survive_and_ours_are_restored() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    f.sync().await;
    f.edit_table(|t| {
        t.parameters.insert("owner.note".into(), "kept".into());
        t.parameters.insert("EXTERNAL".into(), "FALSE".into());
    });
    let report = f.sync().await;
    assert_eq!(report.tables_updated, 1);
    let t = f.table();
    assert_eq!(t.parameters["owner.note"], "kept");
    assert_eq!(t.parameters["EXTERNAL"], "TRUE");
}

#[tokio::test]
async fn a_sync_that_read_an_older_version_does_not_overwrite_a_newer_one() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    f.sync().await;
    let t2 = f.insert(&["la"]).await;
    // A slow sync read the table at this version, then another sync moved the watermark on.
    let stale = f.table();
    f.sync().await;
    assert_eq!(f.watermark("trips"), Some(t2.to_string()));
    let mut old = stale;
    old.parameters
        .insert(WATERMARK.into(), "20200101000000000".into());
    assert!(!f.catalog.update_table("lake", &old, true).await.unwrap());
    assert_eq!(f.watermark("trips"), Some(t2.to_string()));
}

#[tokio::test]
async fn url_encoded_and_hostile_values_get_their_stored_location() {
    let f = fixture_with(
        true,
        "hoodie.datasource.write.partitionpath.urlencode=true\nhoodie.datasource.write.hive_style_partitioning=true\n",
        &[],
    )
    .await;
    // The writer's partition path escaping decides the directory; the catalog uses it as stored, and the
    // value is the escaped text after `city=` (Hudi decodes only with hoodie.meta.sync.decode_partition).
    let storage = f.storage.clone();
    f.insert(&["s=f/x", "a b%"]).await;
    let paths: Vec<String> = partitions::all_partitions(storage.as_ref())
        .await
        .unwrap()
        .into_iter()
        .collect();
    f.sync().await;
    let held = f.partitions("trips");
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(
        paths
            .iter()
            .all(|p| p.starts_with("city=") && !p[5..].contains('/')),
        "{paths:?}"
    );
    let decoded: BTreeSet<String> = held
        .keys()
        .map(|v| crate::record::partition::unescape_path_name(&v[0]))
        .collect();
    assert_eq!(
        decoded,
        BTreeSet::from(["s=f/x".to_string(), "a b%".to_string()])
    );
    for path in &paths {
        let values =
            partitions::partition_values(config::PartitionExtractor::MultiPartKeys, path, 1, false)
                .unwrap()
                .unwrap();
        assert_eq!(
            held.get(&values),
            Some(&format!("s3://bucket/trips/{path}")),
            "{path}: {held:?}"
        );
    }
}

#[tokio::test]
async fn a_schema_change_updates_the_columns() {
    let f = fixture(true, &[]).await;
    f.insert(&["sf"]).await;
    f.sync().await;
    // As if the table had been registered with an older schema.
    f.edit_table(|t| t.storage.columns.retain(|c| c.name != "ts"));
    let report = f.sync().await;
    assert_eq!(report.tables_updated, 1);
    let t = f.table();
    assert!(t
        .storage
        .columns
        .iter()
        .any(|c| c.name == "ts" && c.type_name == "bigint"));
}

/// A sync of the fixture's table with the Delta view on, named by `extra`'s keys.
fn delta_sync(f: &Fixture, extra: &[(&str, &str)]) -> CatalogSync {
    let mut config = catalog_config(extra);
    config.delta_view = true;
    CatalogSync::new(f.catalog.clone(), config, "s3a://bucket/trips")
}

fn stored(f: &Fixture, name: &str) -> Option<definition::TableDef> {
    f.catalog
        .tables
        .lock()
        .unwrap()
        .get(&("lake".to_string(), name.to_string()))
        .cloned()
}

#[tokio::test]
async fn the_delta_view_is_registered_once_its_log_exists_and_repaired_when_changed() {
    let f = fixture(true, &[]).await;
    let sync = delta_sync(&f, &[]);
    f.insert(&["sf"]).await;
    // No Delta log yet: nothing to register.
    sync.sync(f.storage.as_ref(), &[]).await.unwrap();
    assert!(stored(&f, "trips").is_some());
    assert_eq!(stored(&f, "trips_delta"), None);

    f.storage
        .put(
            "_delta_log/00000000000000000000.json",
            bytes::Bytes::from_static(b"{}\n"),
        )
        .await
        .unwrap();
    f.insert(&["nyc"]).await;
    let report = sync.sync(f.storage.as_ref(), &[]).await.unwrap();
    assert_eq!(report.tables_created, 1, "{report:?}");
    let delta = stored(&f, "trips_delta").expect("the Delta view");
    assert_eq!(
        delta.to_json(),
        serde_json::json!({
            "Name": "trips_delta",
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {
                "EXTERNAL": "TRUE",
                "table_type": "DELTA",
                "spark.sql.sources.provider": "delta",
            },
            "PartitionKeys": [],
            "StorageDescriptor": {
                "Columns": [],
                "Location": "s3://bucket/trips",
                "InputFormat": "org.apache.hadoop.mapred.SequenceFileInputFormat",
                "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
                "SerdeInfo": {
                    "SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                    "Parameters": {"serialization.format": "1", "path": "s3a://bucket/trips"},
                },
            },
        })
    );
    // The Hudi table is synced as without the view.
    assert_eq!(
        f.partitions("trips").into_keys().collect::<Vec<_>>(),
        [vec!["nyc".to_string()], vec!["sf".to_string()]]
    );

    // Up to date: one read, no write.
    f.catalog.calls.lock().unwrap().clear();
    f.insert(&["sf"]).await;
    let report = sync.sync(f.storage.as_ref(), &[]).await.unwrap();
    assert_eq!(report.tables_created + report.tables_updated, 0);
    assert_eq!(
        f.calls(),
        ["GetTable", "BatchGetPartition", "UpdateTable", "GetTable"]
    );

    // Someone dropped the type and added a parameter: the type comes back, theirs stays.
    {
        let mut tables = f.catalog.tables.lock().unwrap();
        let t = tables
            .get_mut(&("lake".to_string(), "trips_delta".to_string()))
            .unwrap();
        t.parameters.remove("table_type");
        t.parameters.insert("owner".into(), "analytics".into());
    }
    let report = sync.sync(f.storage.as_ref(), &[]).await.unwrap();
    assert_eq!(report.tables_updated, 1, "{report:?}");
    let delta = stored(&f, "trips_delta").unwrap();
    assert_eq!(delta.parameters["table_type"], "DELTA");
    assert_eq!(delta.parameters["owner"], "analytics");
}

#[tokio::test]
async fn the_delta_view_takes_its_configured_name_and_stays_off_without_the_mirror() {
    let f = fixture(false, &[]).await;
    f.storage
        .put(
            "_delta_log/00000000000000000000.json",
            bytes::Bytes::from_static(b"{}\n"),
        )
        .await
        .unwrap();
    f.insert(&["sf"]).await;
    // The fixture's sync: the mirror is off.
    f.sync().await;
    assert_eq!(stored(&f, "trips_delta"), None);
    delta_sync(&f, &[(config::DELTA_TABLE_KEY, "Trips_Mirror")])
        .sync(f.storage.as_ref(), &[])
        .await
        .unwrap();
    assert_eq!(stored(&f, "trips_delta"), None);
    assert_eq!(
        stored(&f, "trips_mirror")
            .expect("named by the key")
            .parameters["table_type"],
        "DELTA"
    );
    let err = CatalogConfig::from_properties(
        &[
            ("hoodie.table.name", "trips"),
            ("hoodie.datasource.meta.sync.enable", "true"),
            ("hoodie.meta.sync.client.tool.class", config::GLUE_SYNC_TOOL),
            (config::DELTA_TABLE_KEY, "trips.delta"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    )
    .unwrap_err();
    assert!(err.to_string().contains(config::DELTA_TABLE_KEY), "{err}");
}
