//! Merge-on-read file slices read as a snapshot reader reads them: for every Spark-written merge-on-read
//! table, the merged rows of all latest file slices (base file + log files, through `log_file::scan` and
//! `log_file::merge`) equal, row for row with all five meta columns, what hudi-rs 0.5.0 reads as the table's
//! snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use hudi_sink::log_file::{
    merge_file_slice, scan_log_files, CommittedInstants, DeleteRecord, LogFileName, LogFileWriter,
    LogRecords, MergeMode, OrderingValue,
};
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::schema::meta::with_meta_fields;
use hudi_sink::table::file_name::{BaseFileName, WriteToken};
use hudi_sink::table::instant::InstantTime;
use serde_json::{json, Value};

use crate::common::canon::canon_rows;
use crate::common::python::read_rows;
use crate::common::rows::{keyed, Rows};
use crate::common::{all_files, golden_table_in, mor_testdata_dir};

/// One file slice: a base file and/or log files, sharing file id and base instant.
#[derive(Debug, Default)]
struct Slice {
    base: Option<PathBuf>,
    logs: Vec<(LogFileName, PathBuf)>,
}

/// `hoodie.properties` as a map (`\:` and `\=` unescaped).
fn properties(table: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(table.join(".hoodie/hoodie.properties")).expect("props");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("\\:", ":").replace("\\=", "=")))
        .collect()
}

/// The completed commit-timeline instants and the first active instant, from the timeline's file names.
fn committed(table: &Path) -> CommittedInstants {
    let mut completed = Vec::new();
    let mut first: Option<InstantTime> = None;
    for entry in std::fs::read_dir(table.join(".hoodie")).expect("timeline") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        let mut parts = name.split('.');
        let (Some(t), Some(action)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(instant) = InstantTime::parse(t) else {
            continue;
        };
        if first.as_ref().is_none_or(|f| &instant < f) {
            first = Some(instant.clone());
        }
        let completed_commit =
            parts.next().is_none() && matches!(action, "commit" | "deltacommit" | "replacecommit");
        if completed_commit {
            completed.push(instant);
        }
    }
    CommittedInstants::new(completed, first)
}

/// The latest slice of every file group under `table`, keyed by (partition dir, file id); files whose name
/// instant is not committed are not part of any slice.
fn latest_slices(
    table: &Path,
    committed: &CommittedInstants,
) -> BTreeMap<(PathBuf, String), Slice> {
    let mut slices: BTreeMap<(PathBuf, String, InstantTime), Slice> = BTreeMap::new();
    for path in all_files(table) {
        if path.components().any(|c| c.as_os_str() == ".hoodie") {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let dir = path.parent().expect("dir").to_path_buf();
        if name.ends_with(".parquet") {
            let base = BaseFileName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let key = (dir, base.file_id.clone(), base.instant_time.clone());
            if committed.is_committed(&base.instant_time) {
                slices.entry(key).or_default().base = Some(path);
            }
        } else if name.starts_with('.') && name.contains(".log.") {
            let log = LogFileName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let key = (dir, log.file_id.clone(), log.base_instant.clone());
            if committed.is_committed(&log.base_instant) {
                slices.entry(key).or_default().logs.push((log, path));
            }
        }
    }
    let mut latest = BTreeMap::new();
    // Ascending base instant: the last slice of a group replaces the earlier ones.
    for ((dir, file_id, _), mut slice) in slices {
        slice.logs.sort_by(|a, b| a.0.cmp(&b.0));
        latest.insert((dir, file_id), slice);
    }
    latest
}

/// The rows of `slice` merged by this crate, and the scan's record of what it did.
fn merged_rows(
    slice: &Slice,
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> (Rows, LogRecords) {
    let bytes: Vec<(String, Vec<u8>)> = slice
        .logs
        .iter()
        .map(|(name, path)| (name.file_name(), std::fs::read(path).expect("log")))
        .collect();
    let log = scan_log_files(
        bytes.iter().map(|(n, b)| (n.as_str(), b.as_slice())),
        committed,
        mode,
    )
    .expect("scan");
    let base = slice
        .base
        .as_ref()
        .map(|p| Bytes::from(std::fs::read(p).expect("base")));
    let batches = merge_file_slice(base, log.clone())
        .expect("merge")
        .collect::<Result<Vec<_>, _>>()
        .expect("merged batches");
    (keyed(canon_rows(&batches), false, "ours"), log)
}

const TABLES: &[&str] = &[
    "v6_complexkeygen_hivestyle",
    "v6_empty",
    "v6_nonpartitioned",
    "v6_nonpartitioned_rollback",
    "v6_simplekeygen_nonhivestyle",
    "v6_trips_8i1u",
    "v6_trips_8i3d",
];

#[test]
fn merged_latest_slices_equal_the_hudi_rs_snapshot_of_every_spark_mor_table() {
    let mut slices_with_logs = 0;
    let mut rolled_back = 0;
    let mut seen_updates = BTreeSet::new();
    for table in TABLES {
        let golden = golden_table_in(&mor_testdata_dir(), table);
        let committed = committed(&golden.path);
        let mode = MergeMode::from_table_properties(&properties(&golden.path)).expect("mode");
        let mut ours = Rows::new();
        for ((dir, file_id), slice) in latest_slices(&golden.path, &committed) {
            if !slice.logs.is_empty() {
                slices_with_logs += 1;
            }
            let (rows, log) = merged_rows(&slice, &committed, &mode);
            rolled_back += log.stats().blocks_rolled_back;
            for (key, row) in rows {
                // A row from a log block names the file id, a base row its file.
                let file_name = row["_hoodie_file_name"].as_str().expect("file name");
                assert!(
                    file_name.starts_with(&file_id),
                    "{table}: {dir:?} {file_name}"
                );
                if !file_name.ends_with(".parquet") {
                    seen_updates.insert(table.to_string());
                }
                assert!(
                    ours.insert(key.clone(), row).is_none(),
                    "{table}: {key:?} twice"
                );
            }
        }
        let theirs = keyed(
            read_rows(&golden.path, "hudi", &["snapshot"]),
            false,
            "hudi-rs",
        );
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{table}: keys"
        );
        for (key, row) in &theirs {
            assert_eq!(&ours[key], row, "{table}: {key:?}");
        }
        match *table {
            "v6_trips_8i1u" => assert_eq!(ours.len(), 8),
            "v6_trips_8i3d" => assert_eq!(ours.len(), 5, "three keys deleted"),
            "v6_nonpartitioned_rollback" => assert_eq!(ours.len(), 3),
            _ => {}
        }
    }
    assert_eq!(slices_with_logs, 6, "slices with log files compared");
    assert!(rolled_back >= 1, "the rollback fixture's rolled-back block");
    assert!(seen_updates.contains("v6_trips_8i1u") && seen_updates.contains("v6_nonpartitioned"));
}

#[test]
fn sparks_rollback_block_removes_the_failed_write_even_if_its_instant_counted_as_committed() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_nonpartitioned_rollback");
    let table = &golden.path;
    let mode = MergeMode::from_table_properties(&properties(table)).expect("mode");
    assert_eq!(
        mode,
        MergeMode::CommitTime,
        "OverwriteWithLatestAvroPayload"
    );
    let timeline = committed(table);
    let failed = InstantTime::parse("20250126040826878").expect("instant");
    assert!(!timeline.is_committed(&failed));
    // Only the rollback block can hide the failed write now.
    let completed = ["20250126040823628", "20250126060846931", failed.as_str()]
        .map(|t| InstantTime::parse(t).expect("instant"));
    let lenient = CommittedInstants::new(completed, None);
    let slices = latest_slices(table, &timeline);
    let [slice] = slices.values().collect::<Vec<_>>()[..] else {
        panic!("one file group expected")
    };
    assert_eq!(slice.logs.len(), 3);
    let (strict_rows, strict) = merged_rows(slice, &timeline, &mode);
    let (lenient_rows, lenient_log) = merged_rows(slice, &lenient, &mode);
    assert_eq!(strict.stats().blocks_rolled_back, 1);
    assert_eq!(lenient_log.stats().blocks_rolled_back, 1);
    assert_eq!(lenient_log.stats().rollback_blocks, 1);
    assert_eq!(lenient_log.stats().blocks_merged, 1, "the later write only");
    assert_eq!(lenient_rows, strict_rows);
    let theirs = keyed(read_rows(table, "hudi", &["snapshot"]), false, "hudi-rs");
    assert_eq!(lenient_rows, theirs);
}

/// The file groups of `v6_trips_8i1u` that get new logs, with their partitions.
const SF: (&str, &str) = (
    "city=san_francisco",
    "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
);
const CHENNAI: (&str, &str) = ("city=chennai", "84e82649-b1ee-4a25-a316-17cc6872616b-0");
const TRIPS_BASE: &str = "20250331030642808";

/// Appends one log file (next version of the slice) holding `rows` and/or `deletes`, written by `t`.
fn append_log(
    table: &Path,
    schema: &AvroSchema,
    (partition, file_id): (&str, &str),
    t: &str,
    rows: &[(&str, i64, f64)],
    deletes: &[DeleteRecord],
) {
    let block_schema = with_meta_fields(schema);
    let arrow = std::sync::Arc::new(avro_to_arrow(&block_schema).expect("arrow"));
    let mut writer = LogFileWriter::new(InstantTime::parse(t).expect("t"), file_id, schema);
    if !rows.is_empty() {
        let mut decoder = RecordDecoder::try_new(arrow, &block_schema).expect("decoder");
        for (seq, (uuid, ts, fare)) in rows.iter().enumerate() {
            let row = json!({
                "_hoodie_commit_time": t, "_hoodie_commit_seqno": format!("{t}_0_{seq}"),
                "_hoodie_record_key": uuid, "_hoodie_partition_path": partition,
                "_hoodie_file_name": file_id, "ts": ts, "uuid": uuid, "rider": "r", "driver": "d",
                "fare": fare, "city": partition.trim_start_matches("city="),
            });
            decoder.append(row.to_string().as_bytes()).expect("row");
        }
        let batch = decoder.finish().expect("batch");
        writer = writer.with_records(&[batch]).expect("records");
    }
    if !deletes.is_empty() {
        writer = writer.with_deletes(deletes).expect("deletes");
    }
    let dir = table.join(partition);
    let existing: Vec<LogFileName> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| LogFileName::parse(e.expect("entry").file_name().to_str()?).ok())
        .collect();
    let base = InstantTime::parse(TRIPS_BASE).expect("base");
    let name = LogFileName::next_in_slice(&existing, file_id, &base, WriteToken::new(0, 3, 9))
        .expect("name");
    std::fs::write(dir.join(name.file_name()), writer.finish().expect("finish")).expect("write");
}

/// A deltacommit `t`: requested, inflight, and (when `complete`) completed with the schema.
fn deltacommit(table: &Path, t: &str, schema_text: &str, complete: bool) {
    let hoodie = table.join(".hoodie");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.requested")), b"").expect("requested");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.inflight")), b"").expect("inflight");
    if complete {
        let commit = json!({
            "partitionToWriteStats": {}, "compacted": false,
            "extraMetadata": {"schema": schema_text}, "operationType": "UPSERT",
        });
        std::fs::write(
            hoodie.join(format!("{t}.deltacommit")),
            serde_json::to_vec(&commit).expect("json"),
        )
        .expect("commit");
    }
}

#[test]
fn event_time_merging_of_hand_written_logs_equals_hudi_rs() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    let table = &golden.path;
    // The same table with DefaultHoodieRecordPayload: event-time merging on `ts`.
    let props_path = table.join(".hoodie/hoodie.properties");
    let props = std::fs::read_to_string(&props_path)
        .expect("props")
        .replace(
            "payload.class=org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
            "payload.class=org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        );
    std::fs::write(&props_path, props).expect("props");
    let mode = MergeMode::from_table_properties(&properties(table)).expect("mode");
    assert_eq!(
        mode,
        MergeMode::EventTime {
            ordering_field: "ts".into()
        }
    );
    let last: Value = serde_json::from_slice(
        &std::fs::read(table.join(".hoodie/20250331030645735.deltacommit")).expect("deltacommit"),
    )
    .expect("json");
    let schema_text = last["extraMetadata"]["schema"].as_str().expect("schema");
    let schema = AvroSchema::parse(schema_text).expect("schema");

    let (t1, t2, t3) = (
        "20250401000000001",
        "20250401000000002",
        "20250401000000003",
    );
    let long = |key: &str, partition: &str, ts: i64| DeleteRecord {
        ordering_value: Some(OrderingValue::Long(ts)),
        ..DeleteRecord::new(key, partition)
    };
    // t1: an older update of a base row, a tie with a base row, an older update of the previous log's row,
    // an insert; a delete older than the stored row; in Chennai a delete that ties with the stored row.
    append_log(
        table,
        &schema,
        SF,
        t1,
        &[
            ("1dced545-862b-4ceb-8b43-d2a568f6616b", 1695332066203, 1.0),
            ("334e26e9-8355-45cc-97c6-c31daf0df330", 1695159649087, 2.0),
            ("9909a8b1-2d15-4d3d-8ec9-efc48c536a00", 1695046462178, 3.0),
            ("00000000-0000-4000-8000-000000000001", 1900000000000, 4.0),
        ],
        &[long(
            "e96c4396-3fad-413a-a942-4cb36106d721",
            SF.0,
            1695091554787,
        )],
    );
    append_log(
        table,
        &schema,
        CHENNAI,
        t1,
        &[],
        &[long(
            "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa",
            CHENNAI.0,
            1695115999911,
        )],
    );
    deltacommit(table, t1, schema_text, true);
    // t2: a commit-time delete of the insert, whose ordering value is far larger.
    append_log(
        table,
        &schema,
        SF,
        t2,
        &[],
        &[DeleteRecord::new(
            "00000000-0000-4000-8000-000000000001",
            SF.0,
        )],
    );
    deltacommit(table, t2, schema_text, true);
    // t3: never completes; its newer versions must stay invisible.
    append_log(
        table,
        &schema,
        SF,
        t3,
        &[("1dced545-862b-4ceb-8b43-d2a568f6616b", 1999999999999, 5.0)],
        &[],
    );
    deltacommit(table, t3, schema_text, false);

    let committed = committed(table);
    let mut ours = Rows::new();
    for slice in latest_slices(table, &committed).values() {
        let (rows, _) = merged_rows(slice, &committed, &mode);
        ours.extend(rows);
    }
    let theirs = keyed(read_rows(table, "hudi", &["snapshot"]), false, "hudi-rs");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "keys"
    );
    for (key, row) in &theirs {
        assert_eq!(&ours[key], row, "{key:?}");
    }
    // The cases above happened as described.
    let commit_of = |partition: &str, key: &str| {
        ours[&(partition.to_string(), key.to_string())]["_hoodie_commit_time"]
            .as_str()
            .expect("commit time")
            .to_string()
    };
    assert_eq!(ours.len(), 7);
    assert_eq!(
        commit_of(SF.0, "1dced545-862b-4ceb-8b43-d2a568f6616b"),
        TRIPS_BASE
    );
    assert_eq!(commit_of(SF.0, "334e26e9-8355-45cc-97c6-c31daf0df330"), t1);
    assert_eq!(
        commit_of(SF.0, "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"),
        "20250331030645735"
    );
    assert_eq!(
        commit_of(SF.0, "e96c4396-3fad-413a-a942-4cb36106d721"),
        TRIPS_BASE
    );
    assert!(!ours.contains_key(&(
        CHENNAI.0.into(),
        "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa".into()
    )));
}
