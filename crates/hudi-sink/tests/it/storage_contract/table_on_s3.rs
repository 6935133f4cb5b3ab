//! A table on S3 through `open_storage`, read back row-exact by hudi-rs.

use super::*;

const TRIPS: &str = r#"{"type":"record","name":"trip","namespace":"test.s3","fields":[
 {"name":"id","type":"string"},
 {"name":"seq","type":"long"},
 {"name":"region","type":"string"},
 {"name":"fare","type":["null","double"],"default":null},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"tags","type":["null",{"type":"array","items":"string"}],"default":null}
]}"#;

const REGIONS: &[&str] = &["eu", "us", "apac"];

/// (partition path, record key) → (commit time, data columns).
type Expected = BTreeMap<(String, String), (String, Map<String, Value>)>;

/// A batch of rows `(id, seq)`; the region follows from the id, the other columns are generated.
fn trips_batch(writer: &TableWriter, rows: &[(u32, i64)], seed: u64) -> RecordBatch {
    let b = gen_batch(&writer.schema().data, rows.len(), seed);
    let ids: ArrayRef = Arc::new(StringArray::from_iter_values(
        rows.iter().map(|(id, _)| format!("trip-{id:03}")),
    ));
    let seq: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|(_, s)| *s)));
    let region: ArrayRef = Arc::new(StringArray::from_iter_values(
        rows.iter()
            .map(|(id, _)| REGIONS[*id as usize % REGIONS.len()]),
    ));
    let b = with_column(&b, "id", ids);
    let b = with_column(&b, "seq", seq);
    with_column(&b, "region", region)
}

/// Applies a write to the expected table: a row replaces the stored one unless its `seq` is smaller.
fn apply(expected: &mut Expected, batch: &RecordBatch, instant: &str) {
    let schema = batch.schema();
    for row in 0..batch.num_rows() {
        let mut data = Map::new();
        for (i, f) in schema.fields().iter().enumerate() {
            data.insert(f.name().clone(), canon_value(batch.column(i), row));
        }
        let key = data["id"].as_str().expect("id").to_string();
        let part = format!("region={}", data["region"].as_str().expect("region"));
        let seq = data["seq"].as_i64().expect("seq");
        if let Some((_, stored)) = expected.get(&(part.clone(), key.clone())) {
            if stored["seq"].as_i64().expect("seq") > seq {
                continue;
            }
        }
        expected.insert((part, key), (instant.to_string(), data));
    }
}

fn assert_rows(read: &[Map<String, Value>], expected: &Expected, what: &str) {
    let mut actual: Expected = BTreeMap::new();
    for row in read {
        let get = |c: &str| {
            row[c]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no {c} in {row:?}"))
                .to_string()
        };
        let data: Map<String, Value> = row
            .iter()
            .filter(|(c, _)| !c.starts_with("_hoodie_"))
            .map(|(c, v)| (c.clone(), v.clone()))
            .collect();
        let key = (get("_hoodie_partition_path"), get("_hoodie_record_key"));
        assert!(
            get("_hoodie_file_name").ends_with(".parquet"),
            "{what}: {row:?}"
        );
        assert!(
            actual
                .insert(key.clone(), (get("_hoodie_commit_time"), data))
                .is_none(),
            "{what}: duplicate {key:?}"
        );
    }
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{what}: keys"
    );
    for (k, v) in expected {
        assert_eq!(&actual[k], v, "{what}: row {k:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_writer_on_s3_reads_back_row_exact() {
    let endpoint = moto::moto().endpoint.clone();
    // `open_storage` finds moto the way users point it at LocalStack: through the environment.
    std::env::set_var("AWS_ENDPOINT_URL_S3", &endpoint);
    let bucket = moto::new_bucket("tables").await;
    let base = format!("s3://{bucket}/tables/t1");
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "trips_s3"),
        ("hoodie.database.name", "default"),
        ("hoodie.base.path", base.as_str()),
        ("hoodie.datasource.write.recordkey.field", "id"),
        ("hoodie.datasource.write.partitionpath.field", "region"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        ("hoodie.datasource.write.precombine.field", "seq"),
        ("hoodie.datasource.write.operation", "upsert"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = WriteConfig::from_properties(props).expect("config");
    let storage = open_storage(&config.base_path)
        .await
        .expect("open s3 storage");
    assert_eq!(storage.base_uri(), base);
    let writer = TableWriter::create_or_open(
        storage.clone(),
        Arc::new(SystemClock),
        config,
        Some(AvroSchema::parse(TRIPS).expect("schema")),
    )
    .await
    .expect("create table on s3");

    let mut expected = Expected::new();
    // 1: insert 40 new keys.
    let rows: Vec<(u32, i64)> = (0..40).map(|id| (id, 1)).collect();
    let batch = trips_batch(&writer, &rows, 1);
    let first = writer
        .write_with(
            WriteOperation::Insert,
            std::slice::from_ref(&batch),
            BTreeMap::new(),
        )
        .await
        .expect("insert");
    let t1 = first.instant.to_string();
    apply(&mut expected, &batch, &t1);
    assert_rows(
        &read_rows(&base, "hudi", &["snapshot"]),
        &expected,
        "snapshot after insert",
    );
    let after_insert = expected.clone();

    // 2: upsert: newer versions of 10..20, stale versions of 0..5 (ignored), new keys 40..50.
    let rows: Vec<(u32, i64)> = (10..20)
        .map(|id| (id, 2))
        .chain((0..5).map(|id| (id, 0)))
        .chain((40..50).map(|id| (id, 1)))
        .collect();
    let batch = trips_batch(&writer, &rows, 2);
    let second = writer
        .write_with(
            WriteOperation::Upsert,
            std::slice::from_ref(&batch),
            BTreeMap::new(),
        )
        .await
        .expect("upsert");
    let t2 = second.instant.to_string();
    assert!(t2 > t1);
    apply(&mut expected, &batch, &t2);
    assert_eq!(expected.len(), 50);
    assert_eq!(expected.values().filter(|(t, _)| *t == t2).count(), 20);
    assert_rows(
        &read_rows(&base, "hudi", &["snapshot"]),
        &expected,
        "snapshot after upsert",
    );
    assert_rows(
        &read_rows(&base, "hudi", &["as_of", &t1]),
        &after_insert,
        "as of the insert",
    );

    // The table sits under the prefix, written through the storage: timeline and partitions.
    let keys = bucket_keys(&bucket).await;
    assert!(keys.iter().all(|k| k.starts_with("tables/t1/")), "{keys:?}");
    for name in [
        ".hoodie/hoodie.properties".to_string(),
        format!(".hoodie/{t1}.commit"),
        format!(".hoodie/{t2}.commit"),
    ] {
        assert!(
            keys.contains(&format!("tables/t1/{name}")),
            "{name} missing in {keys:?}"
        );
    }
    for region in REGIONS {
        let listed = storage
            .list(&format!("region={region}/"))
            .await
            .expect("list partition");
        assert!(
            listed
                .iter()
                .any(|o| o.path.ends_with(".parquet") && o.size > 0),
            "{region}: {listed:?}"
        );
        assert!(
            listed
                .iter()
                .any(|o| o.path.ends_with(".hoodie_partition_metadata")),
            "{region}: {listed:?}"
        );
    }
    // The s3a:// spelling opens the same table.
    let again = open_storage(&format!("s3a://{bucket}/tables/t1"))
        .await
        .expect("s3a");
    assert_eq!(
        again.get(".hoodie/hoodie.properties").await.expect("props"),
        storage
            .get(".hoodie/hoodie.properties")
            .await
            .expect("props")
    );
}
