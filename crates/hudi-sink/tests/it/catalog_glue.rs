//! The Glue Data Catalog sync through the real SDK against moto's Glue (on 127.0.0.1), read back with boto3:
//! the table Hudi's `AwsGlueCatalogSyncTool` would create, field for field; partitions equal to those on
//! storage; one create call per commit that adds a partition; a Glue outage that fails no batch and is caught
//! up by the next sync; the `_ro` / `_rt` tables of a Spark-written merge-on-read table; and the Delta view of a
//! mirrored table (`<table>_delta`).
//!
//! Glue requests go through a small HTTP proxy in this file, which counts them by operation
//! (`X-Amz-Target`) and can answer 500 to every request, as an outage would.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hudi_sink::bootstrap::build_sink;
use hudi_sink::catalog::glue::GlueCatalog;
use hudi_sink::catalog::{CatalogConfig, CatalogSync};
use hudi_sink::storage::open_storage;
use serde_json::{json, Value};

use crate::common::moto;
use crate::common::python::python;
use crate::exactly_once::process;
use crate::model::{local_props, non_partitioned, Msg, SCHEMA};

/// Forwards Glue requests to moto, counting them; answers 500 instead while `fail` is set.
struct GlueProxy {
    endpoint: String,
    fail: Arc<AtomicBool>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl GlueProxy {
    fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let upstream = upstream.trim_start_matches("http://").to_string();
        let fail = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let (f, c) = (fail.clone(), calls.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (f, c, upstream) = (f.clone(), c.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &upstream, &f, &c);
                });
            }
        });
        Self {
            endpoint,
            fail,
            calls,
        }
    }

    fn take_calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().expect("calls"))
    }
}

/// One request per connection: read it, count it, then answer 500 or relay moto's answer (`Connection: close`
/// both ways, so the client opens a new connection for the next request).
fn serve(
    mut client: TcpStream,
    upstream: &str,
    fail: &AtomicBool,
    calls: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    let mut length = 0usize;
    let mut target = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("x-amz-target:") {
            target = line["x-amz-target:".len()..].trim().to_string();
        }
        if !lower.starts_with("connection:") {
            head.extend_from_slice(line.as_bytes());
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    calls
        .lock()
        .expect("calls")
        .push(target.trim_start_matches("AWSGlue.").to_string());
    if fail.load(Ordering::SeqCst) {
        let msg = br#"{"__type":"InternalServiceException","message":"injected outage"}"#;
        write!(
            client,
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            msg.len()
        )?;
        client.write_all(msg)?;
        return Ok(());
    }
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(&head)?;
    up.write_all(b"Connection: close\r\n\r\n")?;
    up.write_all(&body)?;
    std::io::copy(&mut up, &mut client)?;
    Ok(())
}

/// The Glue table and partitions as boto3 reads them from moto.
fn glue_dump(database: &str, table: &str) -> Value {
    let script = crate::common::workspace_root().join("tests/python/glue_dump.py");
    let out = Command::new(python())
        .arg(script)
        .args([moto::moto().endpoint.as_str(), database, table])
        .output()
        .expect("run glue_dump.py");
    assert!(
        out.status.success(),
        "glue_dump.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("glue_dump JSON")
}

/// The TableInput part of a GetTable answer (what a sync sends), without what Glue adds (times, versions).
fn table_input(table: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in [
        "Name",
        "TableType",
        "Parameters",
        "PartitionKeys",
        "StorageDescriptor",
    ] {
        if let Some(v) = table.get(key) {
            out.insert(key.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// `{values: location}` of the dumped partitions.
fn catalog_partitions(dump: &Value) -> BTreeMap<Vec<String>, String> {
    dump["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .map(|p| {
            let values = p["Values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|v| v.as_str().expect("value").to_string())
                .collect();
            (
                values,
                p["Location"].as_str().expect("location").to_string(),
            )
        })
        .collect()
}

/// The partitions on storage, as the catalog should hold them: `city=<v>` → `[<v>]` at its S3 location.
async fn storage_partitions(bucket: &str) -> BTreeMap<Vec<String>, String> {
    moto::object_sizes(bucket, "tables/trips/")
        .await
        .keys()
        .filter_map(|k| k.strip_suffix("/.hoodie_partition_metadata"))
        .map(|dir| {
            let rel = dir.strip_prefix("tables/trips/").expect("under the table");
            let value = rel.strip_prefix("city=").expect("hive style").to_string();
            (vec![value], format!("s3://{bucket}/{dir}"))
        })
        .collect()
}

/// The latest completed instant on the table's timeline.
async fn latest_commit(bucket: &str) -> String {
    moto::object_sizes(bucket, "tables/trips/.hoodie/")
        .await
        .keys()
        .filter_map(|k| k.strip_prefix("tables/trips/.hoodie/"))
        .filter_map(|n| n.strip_suffix(".commit"))
        .filter(|n| !n.contains('/'))
        .max()
        .expect("a commit")
        .to_string()
}

struct Setup {
    bucket: String,
    database: String,
    props: BTreeMap<String, String>,
    proxy: GlueProxy,
}

async fn setup(partitioned: bool) -> Setup {
    let endpoint = moto::moto().endpoint.clone();
    std::env::set_var("AWS_ENDPOINT_URL_S3", &endpoint);
    let bucket = moto::new_bucket("glue").await;
    moto::put_object(&bucket, "schemas/trips.avsc", SCHEMA.as_bytes()).await;
    let mut props = local_props(
        Path::new(&format!("s3://{bucket}/tables/trips")),
        Path::new(&format!("s3://{bucket}/schemas/trips.avsc")),
        Path::new(&format!("s3://{bucket}/dead-letters")),
    );
    if !partitioned {
        non_partitioned(&mut props);
    }
    let proxy = GlueProxy::start(&endpoint);
    let database = moto::unique_name("lake").replace('-', "_");
    for (k, v) in [
        ("hoodie.datasource.meta.sync.enable", "true"),
        (
            "hoodie.meta.sync.client.tool.class",
            "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
        ),
        ("hoodie.datasource.hive_sync.database", database.as_str()),
        ("hoodie.aws.glue.endpoint", proxy.endpoint.as_str()),
        ("hoodie.aws.glue.region", "us-east-1"),
        ("hudi.sink.catalog.sync.backoff.ms", "1"),
        ("hudi.sink.glue.attempt.timeout.ms", "2000"),
        ("hudi.sink.glue.operation.timeout.ms", "4000"),
    ] {
        props.insert(k.to_string(), v.to_string());
    }
    Setup {
        bucket,
        database,
        props,
        proxy,
    }
}

fn msg(offset: i64, uuid: &str, city: &str) -> Msg {
    Msg {
        topic: "trips".into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: Some(
            json!({"uuid": uuid, "ts": offset, "rider": "r", "fare": 1.5, "city": city})
                .to_string()
                .into_bytes(),
        ),
    }
}

/// The document Hudi's Glue sync sends for the test table (written from the sync's reference, not from the
/// sink's code): columns by the Avro → Parquet → Hive mapping, the Spark data-source parameters with the
/// partition column last, Hudi's formats and serde.
fn expected_table(bucket: &str, partitioned: bool, watermark: &str) -> Value {
    let col = |n: &str, t: &str| json!({"Name": n, "Type": t, "Comment": ""});
    let mut columns = vec![
        col("_hoodie_commit_time", "string"),
        col("_hoodie_commit_seqno", "string"),
        col("_hoodie_record_key", "string"),
        col("_hoodie_partition_path", "string"),
        col("_hoodie_file_name", "string"),
        col("uuid", "string"),
        col("ts", "bigint"),
        col("rider", "string"),
        col("fare", "double"),
    ];
    if !partitioned {
        columns.push(col("city", "string"));
    }
    columns.push(col("_hoodie_is_deleted", "boolean"));
    let sf = |n: &str, t: &str, nullable: bool| json!({"name": n, "type": t, "nullable": nullable, "metadata": {}});
    let mut spark_fields = vec![
        sf("_hoodie_commit_time", "string", true),
        sf("_hoodie_commit_seqno", "string", true),
        sf("_hoodie_record_key", "string", true),
        sf("_hoodie_partition_path", "string", true),
        sf("_hoodie_file_name", "string", true),
        sf("uuid", "string", false),
        sf("ts", "long", false),
        sf("rider", "string", true),
        sf("fare", "double", true),
    ];
    if !partitioned {
        spark_fields.push(sf("city", "string", false));
    }
    spark_fields.push(sf("_hoodie_is_deleted", "boolean", true));
    if partitioned {
        spark_fields.push(sf("city", "string", false));
    }
    let spark = json!({"type": "struct", "fields": spark_fields}).to_string();
    let mut parameters = json!({
        "EXTERNAL": "TRUE",
        "hudi.metadata-listing-enabled": "FALSE",
        "spark.sql.sources.provider": "hudi",
        "spark.sql.sources.schema.numParts": "1",
        "spark.sql.sources.schema.part.0": spark,
        "last_commit_time_sync": watermark,
    });
    if partitioned {
        parameters["spark.sql.sources.schema.numPartCols"] = json!("1");
        parameters["spark.sql.sources.schema.partCol.0"] = json!("city");
    }
    let partition_keys = if partitioned {
        vec![col("city", "string")]
    } else {
        vec![]
    };
    json!({
        "Name": "trips",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "PartitionKeys": partition_keys,
        "StorageDescriptor": {
            "Columns": columns,
            "Location": format!("s3://{bucket}/tables/trips"),
            "InputFormat": "org.apache.hudi.hadoop.HoodieParquetInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            "SerdeInfo": {
                "SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                "Parameters": {
                    "serialization.format": "1",
                    "path": format!("s3://{bucket}/tables/trips"),
                    "hoodie.query.as.ro.table": "false",
                },
            },
        },
    })
}

async fn catalog_follows_commits(partitioned: bool) {
    let s = setup(partitioned).await;
    let sink = build_sink(&s.props, "w0").await.expect("sink");
    process(&sink, &[msg(0, "a", "sf"), msg(1, "b", "nyc")]).await;
    let dump = glue_dump(&s.database, "trips");
    let watermark = latest_commit(&s.bucket).await;
    assert_eq!(
        table_input(&dump["table"]),
        expected_table(&s.bucket, partitioned, &watermark),
        "the Glue table differs from what Hudi's sync sends"
    );
    let on_storage = if partitioned {
        storage_partitions(&s.bucket).await
    } else {
        BTreeMap::new()
    };
    assert_eq!(catalog_partitions(&dump), on_storage);
    if partitioned {
        assert_eq!(on_storage.len(), 2);
    }
    // A commit that adds one partition (and updates a known one) makes one partition-create call.
    s.proxy.take_calls();
    process(&sink, &[msg(2, "c", "chennai"), msg(3, "a", "sf")]).await;
    let calls = s.proxy.take_calls();
    let creates = calls
        .iter()
        .filter(|c| *c == "BatchCreatePartition")
        .count();
    if partitioned {
        assert_eq!(
            calls,
            [
                "GetTable",
                "BatchGetPartition",
                "BatchCreatePartition",
                "UpdateTable"
            ]
        );
        assert_eq!(creates, 1);
    } else {
        assert_eq!(calls, ["GetTable", "UpdateTable"]);
    }
    let dump = glue_dump(&s.database, "trips");
    let expected = if partitioned {
        storage_partitions(&s.bucket).await
    } else {
        BTreeMap::new()
    };
    assert_eq!(catalog_partitions(&dump), expected);
    assert_eq!(
        dump["table"]["Parameters"]["last_commit_time_sync"],
        json!(latest_commit(&s.bucket).await)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_table_is_registered_as_hudi_registers_it() {
    catalog_follows_commits(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_partitioned_table_is_registered_as_hudi_registers_it() {
    catalog_follows_commits(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glue_outage_fails_no_batch_and_the_next_sync_catches_up() {
    let s = setup(true).await;
    let sink = build_sink(&s.props, "w0").await.expect("sink");
    process(&sink, &[msg(0, "a", "sf")]).await;
    assert_eq!(
        catalog_partitions(&glue_dump(&s.database, "trips")).len(),
        1
    );
    s.proxy.fail.store(true, Ordering::SeqCst);
    s.proxy.take_calls();
    // Two commits during the outage: both succeed, the catalog is left behind.
    process(&sink, &[msg(1, "b", "nyc")]).await;
    process(&sink, &[msg(2, "c", "chennai")]).await;
    assert!(!s.proxy.take_calls().is_empty(), "the sync must have tried");
    let behind = glue_dump(&s.database, "trips");
    assert_eq!(catalog_partitions(&behind).len(), 1);
    assert_ne!(
        behind["table"]["Parameters"]["last_commit_time_sync"],
        json!(latest_commit(&s.bucket).await)
    );
    // Glue is back: the next commit's sync registers everything missed.
    s.proxy.fail.store(false, Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(5));
    process(&sink, &[msg(3, "d", "sf")]).await;
    let dump = glue_dump(&s.database, "trips");
    assert_eq!(
        catalog_partitions(&dump),
        storage_partitions(&s.bucket).await
    );
    assert_eq!(catalog_partitions(&dump).len(), 3);
    assert_eq!(
        dump["table"]["Parameters"]["last_commit_time_sync"],
        json!(latest_commit(&s.bucket).await)
    );
}

/// With the Delta mirror on, the first commit writes the Delta log and the sync registers `trips_delta` beside
/// `trips`: Athena's native Delta table at the base path, as boto3 reads it back from moto; the Hudi table is
/// registered as without the mirror.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delta_mirror_gets_a_native_delta_table() {
    let mut s = setup(true).await;
    s.props
        .insert("hudi.sink.delta.mirror".into(), "true".into());
    let sink = build_sink(&s.props, "w0").await.expect("sink");
    process(&sink, &[msg(0, "a", "sf"), msg(1, "b", "nyc")]).await;
    let log = moto::object_sizes(&s.bucket, "tables/trips/_delta_log/").await;
    assert!(
        log.contains_key("tables/trips/_delta_log/00000000000000000000.json"),
        "the mirror wrote no Delta log: {log:?}"
    );
    let delta = glue_dump(&s.database, "trips_delta");
    let location = format!("s3://{}/tables/trips", s.bucket);
    assert_eq!(
        table_input(&delta["table"]),
        json!({
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
                "Location": location,
                "InputFormat": "org.apache.hadoop.mapred.SequenceFileInputFormat",
                "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
                "SerdeInfo": {
                    "SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                    "Parameters": {"serialization.format": "1", "path": location},
                },
            },
        }),
        "the Delta view's Glue table"
    );
    assert!(delta["partitions"]
        .as_array()
        .expect("partitions")
        .is_empty());
    let hudi = glue_dump(&s.database, "trips");
    let watermark = latest_commit(&s.bucket).await;
    assert_eq!(
        table_input(&hudi["table"]),
        expected_table(&s.bucket, true, &watermark)
    );
    // Later commits only read the Delta view's table.
    s.proxy.take_calls();
    process(&sink, &[msg(2, "c", "sf")]).await;
    assert_eq!(
        s.proxy.take_calls(),
        ["GetTable", "BatchGetPartition", "UpdateTable", "GetTable"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_tables_get_ro_and_rt_tables() {
    let table = crate::common::golden_table_in(&crate::common::mor_testdata_dir(), "v6_trips_8i1u");
    let base = table.path.display().to_string();
    let database = moto::unique_name("mor").replace('-', "_");
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "v6_trips_8i1u"),
        ("hoodie.meta.sync.enable", "true"),
        (
            "hoodie.meta.sync.classes",
            "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
        ),
        ("hoodie.datasource.hive_sync.database", database.as_str()),
        ("hoodie.datasource.hive_sync.table", "trips"),
        ("hoodie.aws.glue.endpoint", moto::moto().endpoint.as_str()),
        ("hoodie.aws.glue.region", "us-east-1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = CatalogConfig::from_properties(&props)
        .expect("config")
        .expect("sync on");
    let timeouts = hudi_sink::aws_clients::ClientTimeouts::default();
    let sync = CatalogSync::new(
        Arc::new(GlueCatalog::from_config(&config, &timeouts.glue).await),
        config,
        &base,
    );
    let storage = open_storage(&base).await.expect("storage");
    let report = sync.sync(storage.as_ref(), &[]).await.expect("sync");
    assert_eq!(report.tables_created, 2, "{report:?}");
    let mut on_storage: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for entry in walk(&table.path) {
        if entry.ends_with(".hoodie_partition_metadata") {
            let dir = Path::new(&entry).parent().expect("dir");
            let rel = dir.strip_prefix(&table.path).expect("under");
            let value = rel.display().to_string();
            on_storage.insert(
                vec![value.strip_prefix("city=").unwrap_or(&value).to_string()],
                format!("{base}/{}", rel.display()),
            );
        }
    }
    assert!(on_storage.len() > 1, "a partitioned fixture");
    for (name, input, ro) in [
        (
            "trips_ro",
            "org.apache.hudi.hadoop.HoodieParquetInputFormat",
            "true",
        ),
        (
            "trips_rt",
            "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat",
            "false",
        ),
    ] {
        let dump = glue_dump(&database, name);
        let sd = &dump["table"]["StorageDescriptor"];
        assert_eq!(sd["InputFormat"], json!(input), "{name}");
        assert_eq!(
            sd["SerdeInfo"]["Parameters"]["hoodie.query.as.ro.table"],
            json!(ro),
            "{name}"
        );
        assert_eq!(
            dump["table"]["PartitionKeys"][0]["Name"],
            json!("city"),
            "{name}"
        );
        assert_eq!(catalog_partitions(&dump), on_storage, "{name}");
        let commits: Vec<String> = std::fs::read_dir(table.path.join(".hoodie"))
            .expect("timeline")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter_map(|n| {
                n.strip_suffix(".deltacommit")
                    .or(n.strip_suffix(".commit"))
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(
            dump["table"]["Parameters"]["last_commit_time_sync"],
            json!(commits.iter().max().expect("commits")),
            "{name}"
        );
    }
    // Nothing new: a second sync only reads.
    let report = sync.sync(storage.as_ref(), &[]).await.expect("sync");
    assert_eq!(
        report.calls.keys().collect::<Vec<_>>(),
        ["GetTable"],
        "{report:?}"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}
