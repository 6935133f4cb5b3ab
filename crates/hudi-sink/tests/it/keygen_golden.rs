//! Record keys and partition paths recomputed from the data columns of every row of every Spark-written
//! table-version-6 golden table, compared with the `_hoodie_record_key` and `_hoodie_partition_path` Hudi wrote,
//! and with the directory each file sits in.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use hudi_sink::record::keygen::{KeyGenConfig, KeyGenerator};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common;

/// A minimal reader of Java `.properties` text (comments, `key=value`/`key:value`, backslash escapes, line
/// continuations) — enough for `hoodie.properties`.
fn read_java_properties(path: &Path) -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut logical_lines = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        let trailing_backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
        if trailing_backslashes % 2 == 1 {
            pending.push_str(&line[..line.len() - 1]);
        } else {
            pending.push_str(line);
            logical_lines.push(std::mem::take(&mut pending));
        }
    }
    let mut props = BTreeMap::new();
    for line in logical_lines {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let mut key = String::new();
        let mut chars = line.chars();
        let mut escaped = false;
        for c in chars.by_ref() {
            if escaped {
                key.push(unescape(c));
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '=' || c == ':' || c.is_whitespace() {
                break;
            } else {
                key.push(c);
            }
        }
        let rest: String = chars.collect();
        let rest = rest.trim_start();
        let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest).trim_start();
        let mut value = String::new();
        let mut escaped = false;
        for c in rest.chars() {
            if escaped {
                value.push(unescape(c));
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else {
                value.push(c);
            }
        }
        props.insert(key, value);
    }
    props
}

fn unescape(c: char) -> char {
    match c {
        't' => '\t',
        'n' => '\n',
        'r' => '\r',
        'f' => '\u{c}',
        other => other,
    }
}

/// The partition path a data file's directory stands for (`""` for files at the base path).
fn directory_partition(table: &Path, file: &Path) -> String {
    let dir = file.parent().expect("file in a directory");
    let relative = dir.strip_prefix(table).expect("file inside the table");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn every_golden_row_gets_the_key_and_partition_path_hudi_wrote() {
    let mut summary = Vec::new();
    for name in common::V6_TABLES {
        let table = common::golden_table(name);
        let mut props = read_java_properties(&table.path.join(".hoodie/hoodie.properties"));
        assert_eq!(
            props.get("hoodie.table.version").map(String::as_str),
            Some("6"),
            "{name}"
        );
        if name == &"v6_timebasedkeygen_nonhivestyle" {
            // Hudi keeps the timestamp type in the write config only; the table was created with
            // 'hoodie.keygen.timebased.timestamp.type' = 'DATE_STRING' (hudi-rs crates/test/data/.../*.sql).
            assert!(!props.contains_key("hoodie.keygen.timebased.timestamp.type"));
            props.insert(
                "hoodie.keygen.timebased.timestamp.type".to_string(),
                "DATE_STRING".to_string(),
            );
        }
        let config =
            KeyGenConfig::from_properties(&props).unwrap_or_else(|e| panic!("{name}: {e}"));
        let populate_meta_fields =
            props.get("hoodie.populate.meta.fields").map(String::as_str) != Some("false");
        let files: Vec<_> = common::parquet_files(&table.path)
            .into_iter()
            .filter(|f| {
                !f.strip_prefix(&table.path)
                    .expect("inside")
                    .starts_with(".hoodie")
            })
            .collect();
        let mut rows_checked = 0usize;
        for file in &files {
            let expected_dir = directory_partition(&table.path, file);
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(File::open(file).expect("open parquet"))
                    .expect("parquet metadata")
                    .build()
                    .expect("reader");
            let mut keygen: Option<KeyGenerator> = None;
            let mut key = String::new();
            let mut partition_path = String::new();
            for batch in reader {
                let batch = batch.expect("batch");
                let keygen = keygen.get_or_insert_with(|| {
                    KeyGenerator::try_new(config.clone(), &batch.schema())
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                });
                let stored_keys = batch
                    .column_by_name("_hoodie_record_key")
                    .expect("_hoodie_record_key column")
                    .as_string::<i32>()
                    .clone();
                let stored_paths = batch
                    .column_by_name("_hoodie_partition_path")
                    .expect("_hoodie_partition_path column")
                    .as_string::<i32>()
                    .clone();
                for row in 0..batch.num_rows() {
                    let at = || format!("{name}, {}, row {row}", file.display());
                    keygen
                        .record_key(&batch, row, &mut key)
                        .unwrap_or_else(|e| panic!("{}: {e}", at()));
                    keygen
                        .partition_path(&batch, row, &mut partition_path)
                        .unwrap_or_else(|e| panic!("{}: {e}", at()));
                    if populate_meta_fields {
                        assert_eq!(key, stored_keys.value(row), "record key, {}", at());
                        assert_eq!(
                            partition_path,
                            stored_paths.value(row),
                            "partition path, {}",
                            at()
                        );
                    } else {
                        assert!(
                            stored_keys.is_null(row),
                            "meta fields are not populated, {}",
                            at()
                        );
                        assert!(
                            stored_paths.is_null(row),
                            "meta fields are not populated, {}",
                            at()
                        );
                    }
                    assert_eq!(
                        partition_path,
                        expected_dir,
                        "the file's directory, {}",
                        at()
                    );
                    rows_checked += 1;
                }
            }
        }
        if files.is_empty() {
            assert_eq!(name, &"v6_empty", "only the empty table has no data files");
        } else {
            assert!(rows_checked > 0, "{name}: no rows checked");
        }
        summary.push(format!(
            "{name}: {rows_checked} rows in {} files",
            files.len()
        ));
    }
    println!("{}", summary.join("\n"));
}
