//! Log files (HoodieLogFormat v1) against Spark and independent readers:
//! * every log file of every Spark-written merge-on-read table decodes, record for record and key for key,
//!   as `tests/python/log_read.py` (fastavro and pyarrow, written from the format description) decodes it;
//! * the rollback, delete and Avro data blocks we build from the same inputs are Spark's bytes;
//! * our files of every supported type decode in Python to exactly the rows written;
//! * a deltacommit appended by hand with our log file reads in hudi-rs 0.5.0 as the expected snapshot.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, TimeUnit};
use hudi_sink::log_file::block::{encode_block, read_blocks, BlockType, HeaderKey};
use hudi_sink::log_file::delete_block::encode_delete_content;
use hudi_sink::log_file::{
    read_log_file, rollback_log_file, DataBlockFormat, DeleteRecord, LogBlock, LogFileName,
    LogFileWriter, OrderingValue,
};
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::schema::meta::with_meta_fields;
use hudi_sink::table::file_name::WriteToken;
use hudi_sink::table::instant::InstantTime;
use serde_json::{json, Map, Value};

use crate::common::canon::canon_rows;
use crate::common::gen::{gen_batch, with_column};
use crate::common::python::{python, read_rows};
use crate::common::rows::keyed;
use crate::common::{all_files, golden_table_in, mor_testdata_dir, workspace_root};

/// Every merge-on-read golden table.
const MOR_TABLES: &[&str] = &[
    "v6_complexkeygen_hivestyle",
    "v6_empty",
    "v6_nonpartitioned",
    "v6_nonpartitioned_rollback",
    "v6_simplekeygen_nonhivestyle",
    "v6_trips_8i1u",
    "v6_trips_8i3d",
];

fn instant(s: &str) -> InstantTime {
    InstantTime::parse(s).expect("instant")
}

/// The log files under `root` (names `.<fileId>_<instant>.log.<version>_<token>`), sorted.
fn log_files(root: &Path) -> Vec<PathBuf> {
    all_files(root)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with('.')
                && name.contains(".log.")
                && !p.components().any(|c| c.as_os_str() == ".hoodie")
        })
        .collect()
}

/// What `log_read.py` decodes from `files`, one JSON object per file.
fn python_blocks(files: &[PathBuf]) -> Vec<Value> {
    let script = workspace_root().join("tests/python/log_read.py");
    let out = Command::new(python())
        .arg(&script)
        .args(files)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "log_read.py failed on {files:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("log_read.py prints JSON");
    v["files"].as_array().expect("files").clone()
}

fn ordering_json(v: &Option<OrderingValue>) -> Value {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let (name, value) = match v {
        None => return Value::Null,
        Some(OrderingValue::Boolean(b)) => ("BooleanWrapper", json!(b)),
        Some(OrderingValue::Int(i)) => ("IntWrapper", json!(i)),
        Some(OrderingValue::Long(i)) => ("LongWrapper", json!(i)),
        Some(OrderingValue::Float(f)) => ("FloatWrapper", json!(f64::from(*f))),
        Some(OrderingValue::Double(f)) => ("DoubleWrapper", json!(f)),
        Some(OrderingValue::Bytes(b)) => ("BytesWrapper", json!(hex(b))),
        Some(OrderingValue::String(s)) => ("StringWrapper", json!(s)),
        Some(OrderingValue::Date(i)) => ("DateWrapper", json!(i)),
        Some(OrderingValue::Decimal(b)) => ("DecimalWrapper", json!(hex(b))),
        Some(OrderingValue::TimeMicros(i)) => ("TimeMicrosWrapper", json!(i)),
        Some(OrderingValue::TimestampMicros(i)) => ("TimestampMicrosWrapper", json!(i)),
    };
    json!({"type": name, "value": value})
}

fn deletes_json(records: &[DeleteRecord]) -> Value {
    Value::Array(
        records
            .iter()
            .map(|r| {
                json!({
                    "recordKey": r.record_key,
                    "partitionPath": r.partition_path,
                    "orderingVal": ordering_json(&r.ordering_value),
                })
            })
            .collect(),
    )
}

fn rows_json(batch: &RecordBatch) -> Value {
    Value::Array(
        canon_rows(std::slice::from_ref(batch))
            .into_iter()
            .map(Value::Object)
            .collect(),
    )
}

/// Our reading of one file, in the shape `log_read.py` prints (without offsets and raw headers).
fn our_blocks(file: &Path) -> Vec<Value> {
    let bytes = std::fs::read(file).expect("read log file");
    let name = file.display().to_string();
    let raw = read_blocks(&name, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let blocks = read_log_file(&name, &bytes).unwrap_or_else(|e| panic!("{e}"));
    raw.iter()
        .zip(&blocks)
        .map(|(raw, block)| {
            let header: Map<String, Value> = raw
                .header
                .iter()
                .map(|(k, v)| (k.ordinal().to_string(), json!(v)))
                .collect();
            let footer: Map<String, Value> = raw
                .footer
                .iter()
                .map(|(k, v)| (k.ordinal().to_string(), json!(v)))
                .collect();
            assert_eq!(
                block.instant_time().as_str(),
                raw.header[&HeaderKey::InstantTime]
            );
            let mut out = json!({
                "offset": raw.offset,
                "type": raw.block_type.ordinal(),
                "header": header,
                "footer": footer,
            });
            match block {
                LogBlock::Data {
                    records, format, ..
                } => {
                    let expected_type = match format {
                        DataBlockFormat::Avro => BlockType::AvroData,
                        DataBlockFormat::Parquet => BlockType::ParquetData,
                    };
                    assert_eq!(raw.block_type, expected_type);
                    out["records"] = rows_json(records);
                }
                LogBlock::Delete { records, .. } => out["deletes"] = deletes_json(records),
                LogBlock::Rollback {
                    target_instant_time,
                    ..
                } => {
                    assert_eq!(
                        target_instant_time.as_str(),
                        raw.header[&HeaderKey::TargetInstantTime]
                    );
                }
            }
            out
        })
        .collect()
}

/// Row lists equal, reported row by row.
fn assert_same_rows(ours: &Value, theirs: &Value, what: &str) {
    let (ours, theirs) = (
        ours.as_array().expect("rows"),
        theirs.as_array().expect("rows"),
    );
    assert_eq!(ours.len(), theirs.len(), "{what}: row count");
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        assert_eq!(o, t, "{what}: row {i}");
    }
}

/// Blocks equal: records row by row, then everything else.
fn assert_same_block(ours: &Value, theirs: &Value, what: &str) {
    if ours.get("records").is_some() || theirs.get("records").is_some() {
        assert_same_rows(&ours["records"], &theirs["records"], what);
    }
    assert_eq!(ours, theirs, "{what}");
}

#[test]
fn every_spark_log_file_reads_as_fastavro_and_pyarrow_read_it() {
    let mut seen = std::collections::BTreeMap::<i64, usize>::new();
    let mut records = 0;
    for table in MOR_TABLES {
        let golden = golden_table_in(&mor_testdata_dir(), table);
        let files = log_files(&golden.path);
        for file in &files {
            let name = file.file_name().and_then(|n| n.to_str()).expect("name");
            let parsed = LogFileName::parse(name).unwrap_or_else(|e| panic!("{table}: {e}"));
            assert_eq!(parsed.to_string(), name);
        }
        if files.is_empty() {
            continue;
        }
        let theirs = python_blocks(&files);
        for (file, theirs) in files.iter().zip(&theirs) {
            let ours = our_blocks(file);
            let their_blocks = theirs["blocks"].as_array().expect("blocks");
            assert_eq!(ours.len(), their_blocks.len(), "{}", file.display());
            for (o, t) in ours.iter().zip(their_blocks) {
                assert_same_block(o, t, &format!("{table}: {}", file.display()));
                *seen.entry(o["type"].as_i64().expect("type")).or_default() += 1;
                records += o["records"].as_array().map_or(0, Vec::len)
                    + o["deletes"].as_array().map_or(0, Vec::len);
            }
        }
    }
    // Command, delete, Avro data and Parquet data blocks were all compared (the fixtures hold 1, 1, 1 and 5).
    assert_eq!(
        seen,
        [(0, 1), (1, 1), (3, 1), (5, 5)].into_iter().collect(),
        "block types seen"
    );
    assert!(records >= 9, "{records} records compared");
}

/// The one log file of a golden table whose name ends with `suffix`.
fn fixture_log(table: &str, suffix: &str) -> (crate::common::GoldenTable, PathBuf) {
    let golden = golden_table_in(&mor_testdata_dir(), table);
    let file = log_files(&golden.path)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("{table}: no log file *{suffix}"));
    (golden, file)
}

#[test]
fn our_rollback_delete_and_avro_blocks_are_sparks_bytes() {
    // Rollback: the same two instants give the same 105 bytes.
    let (_g, file) = fixture_log("v6_nonpartitioned_rollback", ".log.2_1-0-1");
    let spark = std::fs::read(&file).expect("read");
    let ours = rollback_log_file(&instant("20250126040936578"), &instant("20250126040826878"));
    assert_eq!(ours, spark);

    // Delete: the same keys give the same content, and framed with Spark's header order the same file; our
    // writer (INSTANT_TIME first) differs only in header order.
    let (_g, file) = fixture_log("v6_trips_8i3d", ".log.1_0-26-85");
    let spark = std::fs::read(&file).expect("read");
    let raw = read_blocks("delete", &spark).expect("frame");
    let [block] = &raw[..] else {
        panic!("one block expected")
    };
    let keys = [
        "e96c4396-3fad-413a-a942-4cb36106d721",
        "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
        "334e26e9-8355-45cc-97c6-c31daf0df330",
    ];
    let deletes: Vec<DeleteRecord> = keys
        .iter()
        .map(|k| DeleteRecord::new(*k, "city=san_francisco"))
        .collect();
    let content = encode_delete_content(&deletes).expect("encode");
    assert_eq!(content, block.content);
    let schema_text = &block.header[&HeaderKey::Schema];
    let instant_text = &block.header[&HeaderKey::InstantTime];
    let spark_order = encode_block(
        BlockType::Delete,
        &[
            (HeaderKey::Schema, schema_text),
            (HeaderKey::InstantTime, instant_text),
        ],
        &content,
    );
    assert_eq!(spark_order, spark);
    let schema = AvroSchema::parse(schema_text).expect("schema");
    let ours = LogFileWriter::new(
        instant(instant_text),
        "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0",
        &schema,
    )
    .with_deletes(&deletes)
    .expect("deletes")
    .finish()
    .expect("finish");
    let ours_raw = read_blocks("ours", &ours).expect("frame");
    assert_eq!(
        ours_raw[0].header, block.header,
        "same header map (schema text byte for byte)"
    );
    assert_eq!(ours_raw[0].content, block.content);
    assert_eq!(ours.len(), spark.len());

    // Avro data: the record Spark wrote, re-encoded from its decoded batch, is the same file.
    let (_g, file) = fixture_log("v6_trips_8i1u", ".log.1_0-26-85");
    let spark = std::fs::read(&file).expect("read");
    let blocks = read_log_file("avro", &spark).expect("read");
    let [LogBlock::Data {
        instant_time,
        schema,
        records,
        ..
    }] = &blocks[..]
    else {
        panic!("one data block expected: {blocks:?}")
    };
    let ours = LogFileWriter::new(
        instant_time.clone(),
        "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
        schema,
    )
    .with_records(std::slice::from_ref(records))
    .expect("records")
    .finish()
    .expect("finish");
    assert_eq!(ours, spark);
}

/// Every type the base-file path maps (enum, fixed and decimal on both, references, times, timestamps,
/// local timestamps, nested records, arrays, maps, `[T, "null"]`).
const ALL_TYPES: &str = r#"{"type":"record","name":"all_types_record","namespace":"hoodie.all_types","fields":[
 {"name":"id","type":"string"},
 {"name":"b","type":["null","boolean"],"default":null},
 {"name":"i","type":["int","null"]},
 {"name":"l","type":["null","long"],"default":null},
 {"name":"f","type":"float"},
 {"name":"d","type":["null","double"],"default":null},
 {"name":"s","type":["null","string"],"default":null},
 {"name":"bin","type":["null","bytes"],"default":null},
 {"name":"fx","type":["null",{"type":"fixed","name":"fx","size":4}],"default":null},
 {"name":"fx_again","type":"fx"},
 {"name":"en","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
 {"name":"dec","type":["null",{"type":"fixed","name":"dec","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},
 {"name":"bdec","type":["null",{"type":"bytes","logicalType":"decimal","precision":20,"scale":3}],"default":null},
 {"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
 {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tus","type":["null",{"type":"long","logicalType":"time-micros"}],"default":null},
 {"name":"ts_ms","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
 {"name":"ts_us","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},
 {"name":"lts_ms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"lts_us","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}],"default":null},
 {"name":"u","type":{"type":"string","logicalType":"uuid"}},
 {"name":"st","type":["null",{"type":"record","name":"st","fields":[
   {"name":"a","type":["null","string"],"default":null},
   {"name":"n","type":"int"},
   {"name":"child","type":["null",{"type":"record","name":"child","fields":[{"name":"x","type":["null","double"],"default":null}]}],"default":null}]}],"default":null},
 {"name":"arr","type":["null",{"type":"array","items":["null",{"type":"record","name":"item","fields":[{"name":"f1","type":["null","string"],"default":null},{"name":"f2","type":["null","long"],"default":null}]}]}],"default":null},
 {"name":"longs","type":{"type":"array","items":"long"}},
 {"name":"m","type":["null",{"type":"map","values":["null",{"type":"array","items":"string"}]}],"default":null},
 {"name":"mi","type":{"type":"map","values":["null","int"]}}
]}"#;

const FILE_ID: &str = "7b1f1e4c-9f6a-4c3e-8d2b-0a1b2c3d4e5f-0";

/// `n` generated rows of [`ALL_TYPES`] with the meta fields of instant `t` in file group [`FILE_ID`].
fn all_types_rows(schema: &AvroSchema, t: &str, n: usize) -> RecordBatch {
    let arrow = Arc::new(avro_to_arrow(schema).expect("arrow"));
    let mut batch = gen_batch(&arrow, n, 7);
    let text = |f: &dyn Fn(usize) -> String| -> ArrayRef {
        Arc::new(StringArray::from((0..n).map(f).collect::<Vec<_>>()))
    };
    batch = with_column(&batch, "_hoodie_commit_time", text(&|_| t.to_string()));
    batch = with_column(
        &batch,
        "_hoodie_commit_seqno",
        text(&|i| format!("{t}_0_{i}")),
    );
    batch = with_column(&batch, "_hoodie_record_key", text(&|i| format!("key{i}")));
    batch = with_column(&batch, "_hoodie_partition_path", text(&|_| String::new()));
    batch = with_column(&batch, "_hoodie_file_name", text(&|_| FILE_ID.to_string()));
    batch = with_column(
        &batch,
        "en",
        text(&|i| ["RED", "GREEN", "BLUE"][i % 3].to_string()),
    );
    batch
}

#[test]
fn our_log_files_decode_in_fastavro_to_the_rows_written() {
    let table_schema = AvroSchema::parse(ALL_TYPES).expect("schema");
    let schema = with_meta_fields(&table_schema);
    let t = "20250501120000000";
    let batch = all_types_rows(&schema, t, 60);
    // Sanity: the generator gave nulls and nested values, so the comparison covers them.
    assert!(batch.column_by_name("st").expect("st").null_count() > 0);
    assert_eq!(
        batch
            .schema()
            .field_with_name("tus")
            .expect("tus")
            .data_type(),
        &DataType::Time64(TimeUnit::Microsecond)
    );
    let deletes = vec![
        DeleteRecord::new("key1", ""),
        DeleteRecord {
            record_key: Some("k-null".into()),
            partition_path: None,
            ordering_value: None,
        },
        DeleteRecord {
            record_key: None,
            partition_path: Some("p".into()),
            ordering_value: Some(OrderingValue::Boolean(true)),
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Long(-5)),
            ..DeleteRecord::new("k3", "a/b")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Float(1.25)),
            ..DeleteRecord::new("k4", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Double(-0.5)),
            ..DeleteRecord::new("k5", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Bytes(vec![0, 1, 255])),
            ..DeleteRecord::new("k6", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::String("ü".into())),
            ..DeleteRecord::new("k7", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Date(19_000)),
            ..DeleteRecord::new("k8", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::Decimal(vec![0xfe, 0x0c])),
            ..DeleteRecord::new("k9", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::TimeMicros(1)),
            ..DeleteRecord::new("k10", "")
        },
        DeleteRecord {
            ordering_value: Some(OrderingValue::TimestampMicros(1_700_000_000_000_001)),
            ..DeleteRecord::new("k11", "")
        },
    ];
    let bytes = LogFileWriter::new(instant(t), FILE_ID, &table_schema)
        .with_records(std::slice::from_ref(&batch))
        .expect("records")
        .with_deletes(&deletes)
        .expect("deletes")
        .finish()
        .expect("finish");
    let dir = tempfile::tempdir().expect("tempdir");
    let base = instant("20250501110000000");
    let name = LogFileName::first(FILE_ID, base.clone(), WriteToken::new(0, 1, 0)).expect("name");
    let data_file = dir.path().join(name.file_name());
    std::fs::write(&data_file, &bytes).expect("write");
    let rollback_name = name
        .next_version(hudi_sink::log_file::name::UNKNOWN_WRITE_TOKEN)
        .expect("next");
    let rollback_file = dir.path().join(rollback_name.file_name());
    std::fs::write(
        &rollback_file,
        rollback_log_file(&instant("20250501130000000"), &instant(t)),
    )
    .expect("write");

    let theirs = python_blocks(&[data_file.clone(), rollback_file.clone()]);
    let data_blocks = theirs[0]["blocks"].as_array().expect("blocks");
    assert_eq!(data_blocks.len(), 2);
    assert_eq!(data_blocks[0]["type"], 3);
    assert_eq!(data_blocks[0]["header"]["0"], t);
    // The header declares decimals in Spark's `fixed` form (`schema::spark_form`); fastavro decodes the same rows.
    assert_eq!(
        data_blocks[0]["header"]["2"],
        hudi_sink::schema::spark_form::spark_form(&schema).to_json_string()
    );
    assert_eq!(
        data_blocks[0]["records"],
        rows_json(&batch),
        "fastavro reads the rows written"
    );
    assert_eq!(data_blocks[1]["type"], 1);
    assert_eq!(data_blocks[1]["header"], data_blocks[0]["header"]);
    assert_eq!(
        data_blocks[1]["deletes"],
        deletes_json(&deletes),
        "fastavro reads the keys written"
    );
    let rollback = &theirs[1]["blocks"].as_array().expect("blocks")[..];
    assert_eq!(
        rollback,
        [json!({"offset": 0, "type": 0, "footer": {},
                "header": {"0": "20250501130000000", "1": t, "3": "0"}})]
    );
    // And our own reader agrees with both.
    assert_eq!(our_blocks(&data_file), *data_blocks);
    assert_eq!(our_blocks(&rollback_file), rollback);
}

/// The file group of `city=san_francisco` in `v6_trips_8i1u`.
const TRIPS_FILE_ID: &str = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0";

/// One row of the trips table with the meta fields of a log record written by `t` into [`TRIPS_FILE_ID`].
fn trip(t: &str, seq: usize, uuid: &str, ts: i64, rider: &str, driver: &str, fare: f64) -> Value {
    json!({
        "_hoodie_commit_time": t,
        "_hoodie_commit_seqno": format!("{t}_0_{seq}"),
        "_hoodie_record_key": uuid,
        "_hoodie_partition_path": "city=san_francisco",
        "_hoodie_file_name": TRIPS_FILE_ID,
        "ts": ts, "uuid": uuid, "rider": rider, "driver": driver, "fare": fare, "city": "san_francisco",
    })
}

#[test]
fn a_deltacommit_with_our_log_file_reads_in_hudi_rs() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    let table = &golden.path;
    let before = keyed(read_rows(table, "hudi", &["snapshot"]), false, "before");
    assert_eq!(before.len(), 8);

    let partition = "city=san_francisco";
    let file_id = TRIPS_FILE_ID;
    let base_instant = instant("20250331030642808");
    let base_file = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet";
    let t = "20250401000000000";

    // The table schema as the latest deltacommit records it.
    let last: Value = serde_json::from_slice(
        &std::fs::read(table.join(".hoodie/20250331030645735.deltacommit")).expect("deltacommit"),
    )
    .expect("json");
    let schema_text = last["extraMetadata"]["schema"]
        .as_str()
        .expect("schema")
        .to_string();
    let table_schema = AvroSchema::parse(&schema_text).expect("schema");
    let block_schema = with_meta_fields(&table_schema);

    // Updates of a base-file row and of the row the previous log updated, an insert, and a delete.
    let updated_base = "1dced545-862b-4ceb-8b43-d2a568f6616b";
    let updated_log = "9909a8b1-2d15-4d3d-8ec9-efc48c536a00";
    let inserted = "00000000-0000-4000-8000-000000000042";
    let deleted = "e96c4396-3fad-413a-a942-4cb36106d721";
    let rows = [
        trip(
            t,
            0,
            updated_base,
            1695332066999,
            "rider-E2",
            "driver-O2",
            99.5,
        ),
        trip(
            t,
            1,
            updated_log,
            1695046462999,
            "rider-D2",
            "driver-L2",
            12.25,
        ),
        trip(t, 2, inserted, 1695400000000, "rider-Z", "driver-Z", 7.0),
    ];
    let arrow = Arc::new(avro_to_arrow(&block_schema).expect("arrow"));
    let mut decoder = RecordDecoder::try_new(arrow, &block_schema).expect("decoder");
    for row in &rows {
        decoder.append(row.to_string().as_bytes()).expect("row");
    }
    let batch = decoder.finish().expect("batch");
    let bytes = LogFileWriter::new(instant(t), file_id, &table_schema)
        .with_records(std::slice::from_ref(&batch))
        .expect("records")
        .with_deletes(&[DeleteRecord::new(deleted, partition)])
        .expect("deletes")
        .finish()
        .expect("finish");

    // The next log version of the slice, after the one Spark wrote.
    let existing: Vec<LogFileName> = log_files(&table.join(partition))
        .iter()
        .map(|p| {
            LogFileName::parse(p.file_name().and_then(|n| n.to_str()).expect("name"))
                .expect("log name")
        })
        .collect();
    let name =
        LogFileName::next_in_slice(&existing, file_id, &base_instant, WriteToken::new(0, 2, 7))
            .expect("name");
    assert_eq!(
        name.to_string(),
        format!(".{file_id}_20250331030642808.log.2_0-2-7")
    );
    std::fs::write(table.join(partition).join(name.file_name()), &bytes).expect("write log");

    // The instant: requested (empty), inflight, completed, modelled on the table's own deltacommits.
    let hoodie = table.join(".hoodie");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.requested")), b"").expect("requested");
    let mut log_names: Vec<String> = existing.iter().map(LogFileName::file_name).collect();
    log_names.push(name.file_name());
    let size = bytes.len();
    let stat = json!({
        "fileId": file_id,
        "path": format!("{partition}/{}", name.file_name()),
        "cdcStats": null,
        "prevCommit": base_instant.as_str(),
        "numWrites": 3, "numDeletes": 1, "numUpdateWrites": 2, "numInserts": 1,
        "totalWriteBytes": size, "totalWriteErrors": 0, "tempPath": null,
        "partitionPath": partition,
        "totalLogRecords": 0, "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0,
        "totalUpdatedRecordsCompacted": 0, "totalLogBlocks": 0, "totalCorruptLogBlock": 0,
        "totalRollbackBlocks": 0, "fileSizeInBytes": size, "minEventTime": null, "maxEventTime": null,
        "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 1, "totalCreateTime": 0},
        "logVersion": name.version, "logOffset": 0, "baseFile": base_file, "logFiles": log_names,
        "recordsStats": {"val": null},
    });
    let inflight = json!({
        "partitionToWriteStats": {partition: [{"fileId": file_id, "path": null, "prevCommit": base_instant.as_str(),
            "numWrites": 0, "numDeletes": 0, "numUpdateWrites": 2, "numInserts": 1}]},
        "compacted": false, "extraMetadata": {}, "operationType": "UPSERT",
    });
    std::fs::write(
        hoodie.join(format!("{t}.deltacommit.inflight")),
        serde_json::to_vec_pretty(&inflight).expect("json"),
    )
    .expect("inflight");
    let commit = json!({
        "partitionToWriteStats": {partition: [stat]},
        "compacted": false,
        "extraMetadata": {"schema": schema_text},
        "operationType": "UPSERT",
    });
    std::fs::write(
        hoodie.join(format!("{t}.deltacommit")),
        serde_json::to_vec_pretty(&commit).expect("json"),
    )
    .expect("commit");

    // Expected: the log's rows replace (or add to) the snapshot, the deleted key is gone, the rest unchanged.
    let mut expected = before.clone();
    assert!(expected
        .remove(&(partition.to_string(), deleted.to_string()))
        .is_some());
    for row in &rows {
        let row = row.as_object().expect("object").clone();
        let key = (
            partition.to_string(),
            row["uuid"].as_str().expect("uuid").to_string(),
        );
        expected.insert(key, row);
    }
    assert_eq!(expected.len(), 8);
    let after = keyed(read_rows(table, "hudi", &["snapshot"]), false, "after");
    assert_eq!(after, expected);
    // As of the previous instant, hudi-rs still sees the old snapshot (our blocks are bound to their instant).
    let as_of = keyed(
        read_rows(table, "hudi", &["as_of", "20250331030645735"]),
        false,
        "as of",
    );
    assert_eq!(as_of, before);
}
