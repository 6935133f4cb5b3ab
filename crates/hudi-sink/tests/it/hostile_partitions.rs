//! Hostile partition values never create a file outside the table's base path: they are URL-encoded
//! (`hoodie.datasource.write.partitionpath.urlencode=true`) or rejected with a record error naming the row.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use hudi_sink::clock::SystemClock;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::write::WriteConfig;
use hudi_sink::write::{TableWriter, WriteError};

const SCHEMA: &str = r#"{"type":"record","name":"h_record","namespace":"hoodie.h","fields":[
 {"name":"id","type":"string"},{"name":"ts","type":"long"},{"name":"p","type":["null","string"],"default":null}]}"#;

const HOSTILE: &[&str] = &[
    "../x",
    "..",
    ".",
    "/abs",
    "/etc/passwd",
    "a/b",
    "a/../../b",
    "nul\0byte",
    "line\nbreak",
    "tab\tchar",
    "bell\u{7}",
    "back\\slash",
    "%2e%2e",
];

fn all_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(
                    p.strip_prefix(root)
                        .expect("under root")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

async fn writer(base: &Path, hive: bool, encode: bool) -> TableWriter {
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", "h"),
        ("hoodie.datasource.write.recordkey.field", "id"),
        ("hoodie.datasource.write.partitionpath.field", "p"),
        ("hoodie.datasource.write.precombine.field", "ts"),
        ("hoodie.index.type", "BUCKET"),
        ("hoodie.bucket.index.num.buckets", "2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([
        ("hoodie.base.path".to_string(), base.display().to_string()),
        (
            "hoodie.datasource.write.hive_style_partitioning".to_string(),
            hive.to_string(),
        ),
        (
            "hoodie.datasource.write.partitionpath.urlencode".to_string(),
            encode.to_string(),
        ),
    ])
    .collect();
    TableWriter::create_or_open(
        Arc::new(LocalStorage::new(base)),
        Arc::new(SystemClock),
        WriteConfig::from_properties(props).expect("config"),
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("table")
}

fn batch(w: &TableWriter, value: &str) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["k1"])),
        Arc::new(Int64Array::from(vec![1])),
        Arc::new(StringArray::from(vec![Some(value)])),
    ];
    RecordBatch::try_new(w.schema().data.clone(), cols).expect("batch")
}

#[tokio::test]
async fn hostile_partition_values_stay_inside_the_table() {
    for hive in [false, true] {
        for encode in [false, true] {
            let outer = tempfile::tempdir().expect("tempdir");
            let base = outer.path().join("table");
            let w = writer(&base, hive, encode).await;
            for value in HOSTILE {
                // What the test expects, independently of the library: URL encoding escapes `/`, `\` and
                // control characters; a `.`/`..` segment is only safe behind a hive-style `p=` prefix.
                let unsafe_chars = value.contains('/')
                    || value.contains('\\')
                    || value.chars().any(|c| c.is_control());
                let dot_segment = !hive && (*value == "." || *value == "..");
                let expect_ok = !dot_segment && (encode || !unsafe_chars);
                let outcome = w.write(&[batch(&w, value)]).await;
                assert_eq!(
                    outcome.is_ok(),
                    expect_ok,
                    "hive={hive} encode={encode} {value:?}: {:?}",
                    outcome.as_ref().err().map(|e| e.to_string())
                );
                match outcome {
                    Ok(result) => {
                        for stat in result.commit.write_stats() {
                            let p = &stat.partition_path;
                            assert!(!p.is_empty(), "{value:?}: empty partition path");
                            assert!(!p.contains('/'), "{value:?} -> {p:?} has a separator");
                            assert!(
                                p != "." && p != ".." && !p.chars().any(|c| c.is_control()),
                                "{value:?} -> {p:?}"
                            );
                        }
                    }
                    Err(WriteError::Record { row, source }) => {
                        assert_eq!(row, 0);
                        let msg = source.to_string();
                        assert!(!msg.is_empty());
                    }
                    Err(other) => {
                        panic!("hive={hive} encode={encode} {value:?}: unexpected error {other}")
                    }
                }
            }
            // Nothing outside the base path, and every file inside is part of the table layout.
            let outside: Vec<_> = std::fs::read_dir(outer.path())
                .expect("read_dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
                .collect();
            assert_eq!(
                outside,
                vec!["table".to_string()],
                "hive={hive} encode={encode}"
            );
            for f in all_files(&base) {
                assert!(
                    f.starts_with(".hoodie/")
                        || f.ends_with(".parquet")
                        || f.ends_with(".hoodie_partition_metadata"),
                    "unexpected file {f}"
                );
                assert!(f.split('/').all(|seg| seg != ".." && seg != "."), "{f}");
            }
        }
    }
}
