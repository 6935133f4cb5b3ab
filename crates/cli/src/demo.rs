//! The `demo` and `show` commands: a sample table written through the library's [`TableWriter`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::SystemClock;
use hudi_sink::config::write_config::{WriteConfig, WriteOperation};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use hudi_sink::write::TableWriter;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SCHEMA: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
 {"name":"uuid","type":"string"},
 {"name":"ts","type":"long"},
 {"name":"rider","type":["null","string"],"default":null},
 {"name":"fare","type":["null","double"],"default":null},
 {"name":"city","type":"string"},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

fn config(base_path: &Path) -> Result<WriteConfig, BoxError> {
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips"),
        ("hoodie.database.name", "default"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "4"),
        ("hoodie.parquet.compression.codec", "snappy"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([(
        "hoodie.base.path".to_string(),
        base_path.display().to_string(),
    )])
    .collect();
    Ok(WriteConfig::from_properties(props)?)
}

type Trip<'a> = (&'a str, i64, &'a str, f64, &'a str, bool);

fn batch(writer: &TableWriter, rows: &[Trip<'_>]) -> Result<RecordBatch, BoxError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| Some(r.2)))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| Some(r.3)))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.4))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.5)))),
    ];
    Ok(RecordBatch::try_new(writer.schema().data.clone(), columns)?)
}

/// Writes three instants into a new table at `base_path` and prints what each did.
pub async fn run(base_path: &Path) -> Result<(), BoxError> {
    let storage = Arc::new(LocalStorage::new(base_path));
    let writer = TableWriter::create_or_open(
        storage,
        Arc::new(SystemClock),
        config(base_path)?,
        Some(AvroSchema::parse(SCHEMA)?),
    )
    .await?;
    let steps: [(&str, WriteOperation, Vec<Trip<'_>>); 3] = [
        (
            "insert 8 trips",
            WriteOperation::Upsert,
            vec![
                ("t1", 1, "rider-A", 19.10, "san_francisco", false),
                ("t2", 1, "rider-B", 27.70, "san_francisco", false),
                ("t3", 1, "rider-C", 33.90, "san_francisco", false),
                ("t4", 1, "rider-D", 93.50, "sao_paulo", false),
                ("t5", 1, "rider-E", 34.15, "sao_paulo", false),
                ("t6", 1, "rider-F", 43.40, "chennai", false),
                ("t7", 1, "rider-G", 17.85, "chennai", false),
                ("t8", 1, "rider-H", 41.06, "chennai", false),
            ],
        ),
        (
            "upsert: 2 newer versions, 1 older (ignored), 1 new trip, 1 _hoodie_is_deleted",
            WriteOperation::Upsert,
            vec![
                ("t1", 2, "rider-A", 25.00, "san_francisco", false),
                ("t4", 3, "rider-D", 99.00, "sao_paulo", false),
                ("t6", 0, "rider-F", 1.00, "chennai", false),
                ("t9", 2, "rider-I", 12.30, "chennai", false),
                ("t7", 5, "rider-G", 17.85, "chennai", true),
            ],
        ),
        (
            "delete 2 trips",
            WriteOperation::Delete,
            vec![
                ("t2", 9, "rider-B", 0.0, "san_francisco", false),
                ("t5", 9, "rider-E", 0.0, "sao_paulo", false),
            ],
        ),
    ];
    for (what, op, rows) in steps {
        let b = batch(&writer, &rows)?;
        let result = writer.write_with(op, &[b], BTreeMap::new()).await?;
        let c = result.counts;
        println!(
            "{} {what}: in={} inserted={} updated={} deleted={} deduped={} ignored_older={} files={}",
            result.instant,
            c.records_in,
            c.inserted,
            c.updated,
            c.deleted,
            c.deduped,
            c.ignored_older,
            result.commit.write_stats().count()
        );
    }
    show(base_path).await
}

/// Prints the timeline and the latest file slices of the table at `base_path`.
pub async fn show(base_path: &Path) -> Result<(), BoxError> {
    let storage = LocalStorage::new(base_path);
    let timeline = Timeline::load(&storage as &dyn Storage).await?;
    println!("timeline of {}:", base_path.display());
    for instant in timeline.instants() {
        println!("  {}", instant.file_name());
    }
    println!("latest file slices:");
    for slice in latest_file_slices(&storage, &timeline, None).await? {
        println!(
            "  {:<28} {} ({} bytes)",
            slice.partition_path, slice.file_name, slice.size
        );
    }
    Ok(())
}
