//! File slices built by hand (base files with `ArrowWriter`, logs with [`LogFileWriter`]) and read back
//! through [`super::scan`] and [`super::merge`]: one rule per test. The builders are shared with other
//! modules' tests of merge-on-read slices.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{ChunkReader, Length};

use super::merge::merge_file_slice;
use super::scan::{scan_log_files, CommittedInstants, LogRecords, MergeMode};
use super::{rollback_log_file, DeleteRecord, LogFileWriter, OrderingValue};
use crate::schema::arrow::avro_to_arrow;
use crate::schema::avro::AvroSchema;
use crate::schema::meta::with_meta_fields;
use crate::table::instant::InstantTime;

const SCHEMA: &str = r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[
 {"name":"id","type":"string"},
 {"name":"ts","type":["null","long"],"default":null},
 {"name":"v","type":["null","string"],"default":null},
 {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;
pub(crate) const FILE_ID: &str = "f1-0";
pub(crate) const T0: &str = "20250101000000000";
pub(crate) const T1: &str = "20250101000000001";
pub(crate) const T2: &str = "20250101000000002";
pub(crate) const T3: &str = "20250101000000003";

pub(crate) fn instant(t: &str) -> InstantTime {
    InstantTime::parse(t).expect("instant")
}

pub(crate) fn table_schema() -> AvroSchema {
    AvroSchema::parse(SCHEMA).expect("schema")
}

pub(crate) fn arrow_schema() -> SchemaRef {
    Arc::new(avro_to_arrow(&with_meta_fields(&table_schema())).expect("arrow"))
}

pub(crate) fn event_time() -> MergeMode {
    MergeMode::EventTime {
        ordering_field: "ts".into(),
    }
}

/// One row: key, ordering value, payload, `_hoodie_is_deleted`.
pub(crate) type Row<'a> = (&'a str, i64, &'a str, bool);

/// Rows written by instant `t` (a log's meta: the file id; a base file's: its file name).
pub(crate) fn batch(t: &str, file_name: &str, rows: &[Row]) -> RecordBatch {
    let text = |f: &dyn Fn(usize, &Row) -> String| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter()
                .enumerate()
                .map(|(i, r)| f(i, r))
                .collect::<Vec<_>>(),
        ))
    };
    let columns: Vec<ArrayRef> = vec![
        text(&|_, _| t.to_string()),
        text(&|i, _| format!("{t}_0_{i}")),
        text(&|_, r| r.0.to_string()),
        text(&|_, _| String::new()),
        text(&|_, _| file_name.to_string()),
        text(&|_, r| r.0.to_string()),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        )),
        text(&|_, r| r.2.to_string()),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        )),
    ];
    RecordBatch::try_new(arrow_schema(), columns).expect("batch")
}

pub(crate) fn upserts(t: &str, rows: &[Row]) -> Vec<u8> {
    LogFileWriter::new(instant(t), FILE_ID, &table_schema())
        .with_records(&[batch(t, FILE_ID, rows)])
        .expect("records")
        .finish()
        .expect("finish")
}

pub(crate) fn deletes(t: &str, records: &[DeleteRecord]) -> Vec<u8> {
    LogFileWriter::new(instant(t), FILE_ID, &table_schema())
        .with_deletes(records)
        .expect("deletes")
        .finish()
        .expect("finish")
}

/// A base file written by `T0` with `rows_per_group` rows per row group.
pub(crate) fn base_file(rows: &[Row], rows_per_group: usize) -> Bytes {
    let name = format!("{FILE_ID}_0-1-0_{T0}.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows_per_group))
        .build();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, arrow_schema(), Some(props)).expect("writer");
    writer.write(&batch(T0, &name, rows)).expect("write");
    writer.close().expect("close");
    Bytes::from(out)
}

pub(crate) fn all_committed() -> CommittedInstants {
    CommittedInstants::new([T0, T1, T2, T3].map(instant), Some(instant(T0)))
}

pub(crate) fn scan(
    logs: &[Vec<u8>],
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> LogRecords {
    let names: Vec<String> = (1..=logs.len())
        .map(|v| format!(".{FILE_ID}_{T0}.log.{v}_0-1-0"))
        .collect();
    scan_log_files(
        names
            .iter()
            .zip(logs)
            .map(|(n, b)| (n.as_str(), b.as_slice())),
        committed,
        mode,
    )
    .expect("scan")
}

/// The merged slice as key → (commit time, ts, v), in output order.
pub(crate) fn merged(base: Option<Bytes>, log: LogRecords) -> Vec<(String, String, i64, String)> {
    rows_of(
        merge_file_slice(base, log)
            .expect("merge")
            .map(|b| b.expect("batch")),
    )
}

/// Output rows as key → (commit time, ts, v), in order.
pub(crate) fn rows_of(
    batches: impl Iterator<Item = RecordBatch>,
) -> Vec<(String, String, i64, String)> {
    let mut out = Vec::new();
    for batch in batches {
        let s = |name: &str| {
            batch
                .column_by_name(name)
                .expect(name)
                .as_string::<i32>()
                .clone()
        };
        let (commit, key, v) = (s("_hoodie_commit_time"), s("_hoodie_record_key"), s("v"));
        let ts = batch
            .column_by_name("ts")
            .expect("ts")
            .as_primitive::<Int64Type>()
            .clone();
        for row in 0..batch.num_rows() {
            out.push((
                key.value(row).to_string(),
                commit.value(row).to_string(),
                ts.value(row),
                v.value(row).to_string(),
            ));
        }
    }
    out
}

fn row(key: &str, t: &str, ts: i64, v: &str) -> (String, String, i64, String) {
    (key.into(), t.into(), ts, v.into())
}

#[test]
fn an_uncommitted_block_is_ignored_and_an_archived_one_counts() {
    let logs = [
        upserts(T1, &[("a", 1, "one", false)]),
        upserts(T2, &[("a", 5, "two", false), ("b", 1, "b", false)]),
    ];
    // T1 precedes the first active instant (archived: committed); T2 is inflight.
    let committed = CommittedInstants::new([instant(T3)], Some(instant(T2)));
    let log = scan(&logs, &committed, &event_time());
    assert_eq!(log.stats().blocks_uncommitted, 1);
    assert_eq!(log.stats().blocks_merged, 1);
    assert_eq!(merged(None::<Bytes>, log), [row("a", T1, 1, "one")]);
}

#[test]
fn a_rolled_back_block_is_removed() {
    let logs = [
        upserts(T1, &[("a", 1, "one", false)]),
        upserts(T2, &[("a", 9, "two", false), ("b", 1, "b", false)]),
        rollback_log_file(&instant(T3), &instant(T2)),
    ];
    // Even with T2 on the timeline, the command removes its block.
    let log = scan(&logs, &all_committed(), &event_time());
    assert_eq!(log.stats().blocks_rolled_back, 1);
    assert_eq!(log.stats().rollback_blocks, 1);
    let base = base_file(&[("a", 0, "base", false)], 10);
    assert_eq!(merged(Some(base), log), [row("a", T1, 1, "one")]);
}

#[test]
fn an_older_ordering_value_loses_and_ties_go_to_the_later_version() {
    let logs = [
        upserts(
            T1,
            &[
                ("a", 10, "a1", false),
                ("t", 7, "t1", false),
                ("b", 15, "b1", false),
            ],
        ),
        upserts(
            T2,
            &[
                ("a", 5, "a2", false),
                ("t", 7, "t2", false),
                ("c", 3, "c2", false),
            ],
        ),
    ];
    let log = scan(&logs, &all_committed(), &event_time());
    // Against the base: b's log version (15) loses to the stored 20; c ties with the base and wins.
    let base = base_file(&[("b", 20, "b0", false), ("c", 3, "c0", false)], 10);
    assert_eq!(
        merged(Some(base), log),
        [
            row("b", T0, 20, "b0"),
            row("c", T2, 3, "c2"),
            row("a", T1, 10, "a1"),
            row("t", T2, 7, "t2"),
        ]
    );
}

#[test]
fn a_delete_then_a_reinsert_in_a_later_block() {
    let logs = [
        upserts(T1, &[("a", 4, "a1", false)]),
        deletes(
            T2,
            &[DeleteRecord::new("a", ""), DeleteRecord::new("z", "")],
        ),
        upserts(T3, &[("a", 3, "a3", false)]),
    ];
    let log = scan(&logs, &all_committed(), &event_time());
    let base = base_file(&[("a", 1, "a0", false), ("z", 1, "z0", false)], 10);
    // z is deleted; a comes back with the later insert (its ordering value 3 still beats the base's 1).
    assert_eq!(merged(Some(base), log), [row("a", T3, 3, "a3")]);
}

#[test]
fn a_commit_time_delete_wins_over_an_earlier_larger_ordering_value() {
    let logs = [
        upserts(T1, &[("a", 100, "a1", false)]),
        deletes(
            T2,
            &[DeleteRecord::new("a", ""), DeleteRecord::new("b", "")],
        ),
    ];
    let log = scan(&logs, &all_committed(), &event_time());
    let base = base_file(&[("b", 100, "b0", false), ("c", 1, "c0", false)], 10);
    assert_eq!(merged(Some(base), log), [row("c", T0, 1, "c0")]);
}

#[test]
fn a_delete_with_an_ordering_value_competes_by_event_time() {
    let with = |key: &str, ts: i64| DeleteRecord {
        ordering_value: Some(OrderingValue::Long(ts)),
        ..DeleteRecord::new(key, "")
    };
    // Older than the stored value: ignored; equal: deletes; and a _hoodie_is_deleted row the same.
    let logs = [
        deletes(T1, &[with("a", 50), with("b", 100)]),
        upserts(T2, &[("c", 99, "c2", true), ("d", 100, "d2", true)]),
    ];
    let log = scan(&logs, &all_committed(), &event_time());
    let stored: Vec<Row> = ["a", "b", "c", "d"]
        .iter()
        .map(|k| (*k, 100, "v0", false))
        .collect();
    assert_eq!(
        merged(Some(base_file(&stored, 10)), log),
        [row("a", T0, 100, "v0"), row("c", T0, 100, "v0")]
    );
}

#[test]
fn commit_time_ordering_takes_the_latest_version_whatever_the_ordering_value() {
    let logs = [
        upserts(T1, &[("a", 10, "a1", false), ("b", 10, "b1", false)]),
        upserts(T2, &[("a", 1, "a2", false)]),
        deletes(
            T3,
            &[DeleteRecord {
                ordering_value: Some(OrderingValue::Long(-1)),
                ..DeleteRecord::new("c", "")
            }],
        ),
    ];
    let log = scan(&logs, &all_committed(), &MergeMode::CommitTime);
    let base = base_file(&[("b", 99, "b0", false), ("c", 99, "c0", false)], 10);
    assert_eq!(
        merged(Some(base), log),
        [row("b", T1, 10, "b1"), row("a", T2, 1, "a2")]
    );
}

/// A base file in memory that counts the bytes readers take from it.
#[derive(Clone)]
struct CountingReader {
    data: Bytes,
    read: Arc<AtomicU64>,
}

impl Length for CountingReader {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
}

impl ChunkReader for CountingReader {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let rest = self.data.slice(start as usize..);
        self.read
            .fetch_add(rest.len() as u64, AtomicOrdering::SeqCst);
        Ok(bytes::Buf::reader(rest))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read.fetch_add(length as u64, AtomicOrdering::SeqCst);
        Ok(self.data.slice(start as usize..start as usize + length))
    }
}

#[test]
fn the_base_file_is_read_one_row_group_at_a_time() {
    let keys: Vec<String> = (0..50).map(|i| format!("k{i:02}")).collect();
    let stored: Vec<Row> = keys.iter().map(|k| (k.as_str(), 1, "v0", false)).collect();
    let data = base_file(&stored, 10);
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&data)
        .expect("footer");
    assert_eq!(meta.num_row_groups(), 5);
    let log = scan(
        &[upserts(
            T1,
            &[("k07", 2, "new", false), ("n", 1, "ins", false)],
        )],
        &all_committed(),
        &event_time(),
    );
    let read = Arc::new(AtomicU64::new(0));
    let reader = CountingReader {
        data: data.clone(),
        read: read.clone(),
    };
    let mut merger = merge_file_slice(Some(reader), log).expect("merge");
    let opened = read.load(AtomicOrdering::SeqCst);
    let mut sizes = Vec::new();
    let mut after_each = Vec::new();
    for batch in merger.by_ref() {
        sizes.push(batch.expect("batch").num_rows());
        after_each.push(read.load(AtomicOrdering::SeqCst));
    }
    // Five base batches of one row group each, then the insert.
    assert_eq!(sizes, [10, 10, 10, 10, 10, 1]);
    // Each row group's bytes are fetched when it is decoded, not before: reading grows batch by batch.
    let total = after_each[4];
    assert!(opened < data.len() as u64 / 2, "{opened} of {}", data.len());
    for w in after_each[..5].windows(2) {
        assert!(w[0] < w[1], "{after_each:?}");
    }
    assert!(
        after_each[0] - opened < (total - opened) / 3,
        "{after_each:?}"
    );
}

#[tokio::test]
async fn stored_log_files_scan_as_the_same_bytes_do() {
    use crate::storage::memory::MemoryStorage;
    use crate::storage::Storage;
    let logs = [
        upserts(T1, &[("a", 1, "one", false), ("b", 2, "b1", false)]),
        deletes(T2, &[DeleteRecord::new("b", "")]),
    ];
    let storage = MemoryStorage::new("memory://t");
    let mut paths = Vec::new();
    for (v, bytes) in logs.iter().enumerate() {
        let path = format!("p/.{FILE_ID}_{T0}.log.{}_0-1-0", v + 1);
        storage
            .put(&path, Bytes::from(bytes.clone()))
            .await
            .expect("put");
        paths.push(path);
    }
    let stored =
        super::scan::scan_stored_log_files(&storage, &paths, &all_committed(), &event_time())
            .await
            .expect("scan");
    assert_eq!(
        stored.versions(),
        scan(&logs, &all_committed(), &event_time()).versions()
    );
    assert_eq!(merged(None::<Bytes>, stored), [row("a", T1, 1, "one")]);
    let missing = super::scan::scan_stored_log_files(
        &storage,
        &["p/none".to_string()],
        &all_committed(),
        &event_time(),
    )
    .await;
    assert!(matches!(
        missing,
        Err(super::scan::MergeError::Storage { .. })
    ));
}

#[test]
fn merge_modes_follow_the_table_properties() {
    let props = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let pre = ("hoodie.table.precombine.field", "ts");
    let payload = "hoodie.compaction.payload.class";
    let default = "org.apache.hudi.common.model.DefaultHoodieRecordPayload";
    let latest = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload";
    let strategy = "hoodie.compaction.record.merger.strategy";
    let event_strategy = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5";
    let mode = |pairs: &[(&str, &str)]| MergeMode::from_table_properties(&props(pairs));
    assert_eq!(
        mode(&[pre, (payload, default)]).expect("mode"),
        event_time()
    );
    // The payload class decides before the strategy.
    assert_eq!(
        mode(&[pre, (payload, latest), (strategy, event_strategy)]).expect("mode"),
        MergeMode::CommitTime
    );
    assert_eq!(mode(&[pre]).expect("mode"), event_time());
    assert_eq!(mode(&[]).expect("mode"), MergeMode::CommitTime);
    assert!(mode(&[(payload, default)]).is_err(), "no ordering field");
    assert!(mode(&[pre, (payload, "com.example.MyPayload")]).is_err());
    assert!(mode(&[("hoodie.table.precombine.field", "a,b")]).is_err());
}

#[test]
fn log_rows_take_the_file_schema_types_by_name() {
    use arrow_array::{Array, StructArray, TimestampMicrosecondArray};
    use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
    let ts = |tz: &str| DataType::Timestamp(TimeUnit::Microsecond, Some(tz.into()));
    let inner = |nullable| Fields::from(vec![Field::new("x", DataType::Int64, nullable)]);
    let s = StructArray::new(
        inner(false),
        vec![Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef],
        None,
    );
    let log = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("s", DataType::Struct(inner(false)), true),
            Field::new("a", ts("+00:00"), true),
            Field::new("extra", DataType::Int64, true),
        ])),
        vec![
            Arc::new(s),
            Arc::new(TimestampMicrosecondArray::from(vec![5, 6]).with_timezone("+00:00")),
            Arc::new(Int64Array::from(vec![7, 8])),
        ],
    )
    .expect("log batch");
    let file: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("a", ts("UTC"), true),
        Field::new("s", DataType::Struct(inner(true)), true),
        Field::new("missing", DataType::Utf8, true),
    ]));
    let out = super::merge::conform(&log, &file).expect("conform");
    assert_eq!(out.schema(), file);
    let a = out
        .column(0)
        .as_primitive::<arrow_array::types::TimestampMicrosecondType>();
    assert_eq!(a.values().to_vec(), [5, 6]);
    let x = out
        .column(1)
        .as_struct()
        .column(0)
        .as_primitive::<Int64Type>();
    assert_eq!(x.values().to_vec(), [1, 2]);
    assert_eq!(out.column(2).null_count(), 2);
    // A narrowing is refused (a widening such as long → string is a projection: `schema/project.rs`).
    let wrong: SchemaRef = Arc::new(Schema::new(vec![Field::new(
        "extra",
        DataType::Int32,
        true,
    )]));
    assert!(super::merge::conform(&log, &wrong).is_err());
}

#[tokio::test]
async fn ranged_row_groups_merge_as_the_whole_file_does() {
    use crate::base_file::ranged::RangedBaseFile;
    use crate::storage::faulty::{FaultyStorage, Operation};
    use crate::storage::{MemoryStorage, Storage};

    let keys: Vec<String> = (0..50).map(|i| format!("k{i:02}")).collect();
    let stored: Vec<Row> = keys.iter().map(|k| (k.as_str(), 1, "v0", false)).collect();
    let data = base_file(&stored, 10);
    let logs = [
        upserts(
            T1,
            &[
                ("k07", 2, "new", false),
                ("k33", 0, "loses", false),
                ("n1", 1, "ins", false),
            ],
        ),
        deletes(T2, &[DeleteRecord::new("k21", "")]),
    ];
    let log = || scan(&logs, &all_committed(), &event_time());
    let mut whole = merge_file_slice(Some(data.clone()), log()).expect("merge");
    let want = rows_of(whole.by_ref().map(|b| b.expect("batch")));
    let want_counts = whole.counts();

    let storage = FaultyStorage::new(Arc::new(MemoryStorage::new("mem://t")));
    storage
        .put("p/base.parquet", data.clone())
        .await
        .expect("put");
    storage.clear_log();
    let base = RangedBaseFile::open(&storage, "p/base.parquet", data.len() as u64)
        .await
        .expect("open");
    assert_eq!((base.num_row_groups(), base.num_rows()), (5, 50));
    let mut merger = super::BaseRowMerger::new(base.schema(), log()).expect("merger");
    let mut out = Vec::new();
    for index in 0..base.num_row_groups() {
        for batch in base.row_group(&storage, index, 4).await.expect("row group") {
            out.push(merger.merge(&batch.expect("decode")).expect("merge"));
        }
    }
    let mut inserts = merger.into_inserts();
    out.extend(inserts.by_ref().map(|b| b.expect("insert")));
    assert_eq!(rows_of(out.into_iter()), want);
    assert_eq!(inserts.counts(), want_counts);
    assert!(want.iter().any(|r| r.0 == "n1") && !want.iter().any(|r| r.0 == "k21"));
    // Two reads of the tail, then one ranged read per row group, each well under the whole file.
    assert_eq!(storage.count(Operation::Get), 0);
    assert_eq!(storage.count(Operation::GetRange), 2 + 5);
}
