//! The Delta mirror's per-file column statistics (`stats` of each `add`, docs/delta.md) read back by Python
//! `deltalake` equal what pyarrow computes from each file's rows, for every column type the sink writes
//! (the writer interop test's types, decimals of all three physical forms, long strings cut as the protocol
//! allows, nested structs, Hudi's meta columns), over files of several row groups; and a filter on a non-partition
//! column prunes files by those stats and returns exactly the filtered rows (deltalake's dataset and Polars).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::SystemClock;
use hudi_sink::commit::CommitMirror;
use hudi_sink::delta::{DeltaConfig, DeltaMirror};
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::timeline::Timeline;
use hudi_sink::write::{TableWriter, WriteConfig, WriteOperation};
use serde_json::Value;

use crate::common::gen::{gen_batch, with_column};
use crate::common::python::python;
use crate::common::workspace_root;

const SCHEMA: &str = r#"{"type":"record","name":"stats_record","namespace":"hoodie.stats","fields":[
 {"name":"id","type":"string"},
 {"name":"seq","type":"long"},
 {"name":"region","type":["null","string"],"default":null},
 {"name":"b","type":["null","boolean"],"default":null},
 {"name":"i","type":["null","int"],"default":null},
 {"name":"l","type":["null","long"],"default":null},
 {"name":"f","type":["null","float"],"default":null},
 {"name":"d","type":["null","double"],"default":null},
 {"name":"s","type":["null","string"],"default":null},
 {"name":"long_s","type":["null","string"],"default":null},
 {"name":"bin","type":["null","bytes"],"default":null},
 {"name":"fx","type":["null",{"type":"fixed","name":"fx","size":4}],"default":null},
 {"name":"dec","type":["null",{"type":"fixed","name":"dec","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},
 {"name":"dec_small","type":["null",{"type":"bytes","logicalType":"decimal","precision":7,"scale":2}],"default":null},
 {"name":"dec_wide","type":["null",{"type":"fixed","name":"dec_wide","size":13,"logicalType":"decimal","precision":30,"scale":10}],"default":null},
 {"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
 {"name":"ts_us","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},
 {"name":"ts_ms","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
 {"name":"st","type":["null",{"type":"record","name":"st","fields":[{"name":"a","type":["null","string"],"default":null},{"name":"inner","type":["null",{"type":"record","name":"inner","fields":[{"name":"x","type":["null","double"],"default":null},{"name":"y","type":"long"}]}],"default":null}]}],"default":null},
 {"name":"arr","type":["null",{"type":"array","items":["null","int"]}],"default":null},
 {"name":"m","type":["null",{"type":"map","values":["null","long"]}],"default":null},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}
]}"#;

/// Strings longer than the 32-character prefix, some with a non-ASCII or DEL character right at the cut.
fn long_strings(ids: &[u32]) -> ArrayRef {
    Arc::new(StringArray::from_iter(ids.iter().map(|id| {
        let head = format!("{:0>31}", id * 7919 % 100_000);
        match id % 5 {
            0 => None,
            1 => Some(format!("{head}-tail-{id}-{}", "x".repeat(40))),
            2 => Some(format!("{head}éü-{id}")),
            3 => Some(format!("{head}\u{7f}\u{7f}{id}")),
            _ => Some(format!("{head}z")),
        }
    })))
}

fn batch(writer: &TableWriter, ids: &[u32], seed: u64) -> RecordBatch {
    let b = gen_batch(&writer.schema().data, ids.len(), seed);
    let id: ArrayRef = Arc::new(StringArray::from_iter_values(
        ids.iter().map(|i| format!("id-{i:05}")),
    ));
    // `seq` follows the id, so that files hold ranges of it and a filter on it prunes files.
    let seq: ArrayRef = Arc::new(Int64Array::from_iter_values(
        ids.iter().map(|i| i64::from(*i)),
    ));
    let region: ArrayRef = Arc::new(StringArray::from_iter_values(ids.iter().map(|i| {
        if i % 4 == 0 {
            "eu"
        } else {
            "us"
        }
    })));
    let b = with_column(&b, "id", id);
    let b = with_column(&b, "seq", seq);
    let b = with_column(&b, "region", region);
    let b = with_column(&b, "long_s", long_strings(ids));
    with_column(
        &b,
        "_hoodie_is_deleted",
        Arc::new(arrow_array::BooleanArray::from(vec![false; ids.len()])),
    )
}

fn check(table: &Path, filter: &str, polars_filter: &str) -> Value {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/delta_stats.py"))
        .arg(table)
        .arg(filter)
        .arg(polars_filter)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "delta_stats.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_equal_the_rows_of_each_file_and_prune_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("stats");
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "stats"),
        ("hoodie.database.name", "default"),
        ("hoodie.datasource.write.recordkey.field", "id"),
        ("hoodie.datasource.write.partitionpath.field", "region"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        ("hoodie.datasource.write.operation", "insert"),
        ("hoodie.parquet.max.file.size", "40000"),
        ("hoodie.parquet.block.size", "8192"),
        ("hoodie.parquet.small.file.limit", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), base.display().to_string())])
    .collect();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
    let writer = TableWriter::create_or_open(
        storage.clone(),
        Arc::new(SystemClock),
        WriteConfig::from_properties(props).expect("config"),
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("create table");
    let mirror = DeltaMirror::new(DeltaConfig::with_defaults(&base.display().to_string()));
    for (n, ids) in [(0..400u32).collect::<Vec<_>>(), (400..700).collect()]
        .iter()
        .enumerate()
    {
        let b = batch(&writer, ids, n as u64 + 1);
        writer
            .write_with(WriteOperation::Insert, &[b], BTreeMap::new())
            .await
            .expect("write");
        let timeline = Timeline::load(storage.as_ref()).await.expect("timeline");
        assert!(mirror.mirror(&storage, &timeline).await, "mirror step {n}");
    }

    let report = check(&base, "pc.field(\"seq\") >= 650", "pl.col(\"seq\") >= 650");
    let files = report["files"].as_u64().expect("files");
    assert!(files >= 4, "several files: {report}");
    assert_eq!(report["mismatches"], Value::Array(vec![]), "{report}");
    // Every column readers skip by was compared in every file, and the others have no bounds.
    let compared = &report["compared"];
    for column in [
        "_hoodie_commit_time",
        "_hoodie_record_key",
        "_hoodie_file_name",
        "id",
        "seq",
        "i",
        "l",
        "f",
        "d",
        "s",
        "long_s",
        "dec",
        "dec_small",
        "dec_wide",
        "day",
        "ts_us",
        "ts_ms",
        "st.a",
        "st.inner.x",
        "st.inner.y",
    ] {
        for side in ["min", "max"] {
            assert_eq!(
                compared[format!("{side}.{column}")].as_u64(),
                Some(files),
                "{side}.{column}: {report}"
            );
        }
    }
    let columns: Vec<&str> = report["stat_columns"]
        .as_array()
        .expect("stat columns")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Booleans have stats columns in the reader, always null: delta_stats.py checks every value.
    for absent in ["min.region", "min.bin", "min.fx", "min.arr", "min.m"] {
        assert!(!columns.contains(&absent), "{absent}: {columns:?}");
    }
    for present in ["null_count.b", "null_count.bin", "null_count.st.inner.y"] {
        assert!(columns.contains(&present), "{present}: {columns:?}");
    }

    // Data skipping: files whose `seq` range lies below the bound are pruned, and the rows are exact.
    let skipping = &report["skipping"];
    let kept = skipping["kept"].as_u64().expect("kept");
    assert!(
        kept >= 1 && kept < skipping["fragments"].as_u64().expect("fragments"),
        "{skipping}"
    );
    assert_eq!(skipping["rows"].as_u64(), Some(50), "{skipping}");
    assert_eq!(skipping["rows_equal"], Value::Bool(true), "{skipping}");
    assert_eq!(skipping["polars_equal"], Value::Bool(true), "{skipping}");
    assert_eq!(
        skipping["pruned_with_rows"],
        Value::Array(vec![]),
        "{skipping}"
    );
}
