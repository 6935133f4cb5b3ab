//! A scripted scenario of Postgres TOAST placeholders (`write::toast`), on a copy-on-write and on a
//! merge-on-read table, with its own invariant: **no placeholder replaces a stored value**.
//!
//! Writer 1 creates three documents. Writer 2, another process, then sends updates that leave the TOASTed
//! `doc` out (the placeholder): `doc-1` and `doc-2` against the stored rows, `doc-3` first with a new
//! text and then with the placeholder in the same batch. Its batch is delivered twice. Writer 1, still
//! warm, sends one more placeholder for `doc-1`. Each key must keep the last real text it was sent; with
//! the back-fill switched off (`toast-backfill`) the placeholder reaches the table.
//!
//! A second scenario, with its own invariant **a placeholder takes the latest earlier value by ordering**,
//! sends versions out of order: an old event re-sent before a newer update that leaves `doc` out (the
//! stored version is later than the re-sent one), versions of a key arriving out of their ordering in one
//! batch, and a placeholder after a delete of its key. With the back-fill following arrival order
//! (`toast-ordering`) the re-sent and the out-of-order values reach the table.

use super::window_scenarios::{batch_of, Table};
use super::*;
use hudi_sink::log_file::merge::{conform, merge_file_slice};
use hudi_sink::log_file::scan::{scan_stored_log_files, CommittedInstants, MergeMode};
use hudi_sink::record::debezium::{table_schema, Connector};
use hudi_sink::table::properties::TableProperties;

pub(super) const PLACEHOLDER: &str = "__debezium_unavailable_value";

const ROW_SCHEMA: &str = r#"{"type":"record","name":"Value","namespace":"pg.public.documents","fields":[
    {"name":"uuid","type":"string"},{"name":"city","type":"string"},
    {"name":"doc","type":["null","string"],"default":null},
    {"name":"amount","type":["null","long"],"default":null}]}"#;

/// A Postgres change event of `uuid` at `lsn` carrying `doc` (a delete when `op` is `d`).
fn event(offset: i64, lsn: i64, op: &str, uuid: &str, doc: &str) -> Msg {
    let row = serde_json::json!({"uuid": uuid, "city": "sf", "doc": doc, "amount": lsn});
    match op {
        "d" => change(offset, lsn, op, uuid, row, serde_json::Value::Null),
        _ => change(offset, lsn, op, uuid, serde_json::Value::Null, row),
    }
}

/// A Postgres change event `op` of `uuid` at `lsn` with its `before` and `after` images.
pub(super) fn change(
    offset: i64,
    lsn: i64,
    op: &str,
    uuid: &str,
    before: serde_json::Value,
    after: serde_json::Value,
) -> Msg {
    let value = serde_json::json!({
        "before": before,
        "after": after,
        "source": {"version": "2.7.3.Final", "connector": "postgresql", "name": "pg", "ts_ms": lsn,
                   "snapshot": "false", "db": "shop", "schema": "public", "table": "documents",
                   "txId": lsn, "lsn": lsn, "xmin": null},
        "op": op, "ts_ms": lsn, "transaction": null});
    Msg {
        topic: TOPIC.into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: serde_json::to_vec(&value).ok(),
    }
}

/// A table of Postgres change events of [`ROW_SCHEMA`] (one bucket per partition, ordered by `_event_lsn`,
/// with Hudi's Postgres payload), its table schema and its storage.
pub(super) struct Documents {
    table: Table,
    schema: AvroSchema,
    pub(super) store: Arc<dyn Storage>,
}

impl Documents {
    pub(super) fn new(mor: bool) -> Result<Self, Failure> {
        let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
        let table = Table::with_props(
            mor,
            &[
                ("hudi.sink.commit.interval.ms", "0"),
                ("hoodie.bucket.index.num.buckets", "1"),
                ("hudi.sink.value.format", "debezium"),
                ("hudi.sink.debezium.connector", "postgres"),
                ("hudi.sink.debezium.replica.identity", "full"),
                ("hoodie.datasource.write.precombine.field", "_event_lsn"),
                (
                    "hoodie.datasource.write.payload.class",
                    Connector::Postgres.payload_class(),
                ),
            ],
        )?;
        let schema = table_schema(
            Connector::Postgres,
            &AvroSchema::parse(ROW_SCHEMA).map_err(|e| setup(&e))?,
        )
        .map_err(|e| setup(&e))?;
        let store: Arc<dyn Storage> = table.recorder.clone();
        Ok(Self {
            table,
            schema,
            store,
        })
    }

    /// Writer `w<n>`, a process of its own (its own clock).
    pub(super) async fn writer(&self, n: usize) -> Result<KafkaSink, Failure> {
        self.table
            .sink_with(
                self.store.clone(),
                self.table.clocks[n].clone(),
                &format!("w{n}"),
                &self.schema,
            )
            .await
    }
}

/// `doc` per record key in the table's latest merged slices (base file and committed logs).
async fn docs(store: &dyn Storage) -> Result<BTreeMap<String, Option<String>>, Failure> {
    Ok(stored_rows(store)
        .await?
        .into_iter()
        .map(|(key, _, doc)| (key, doc))
        .collect())
}

/// `(record key, partition path, doc)` of every row in the table's latest merged slices (base file and
/// committed logs), in slice order.
pub(super) async fn stored_rows(
    store: &dyn Storage,
) -> Result<Vec<(String, String, Option<String>)>, Failure> {
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    let timeline = Timeline::load(store).await.map_err(|e| io(&e))?;
    let props = TableProperties::load(store).await.map_err(|e| io(&e))?;
    let mode = MergeMode::from_table_properties(&props.as_map()).map_err(|e| io(&e))?;
    let committed = CommittedInstants::new(
        timeline
            .completed_commits()
            .into_iter()
            .map(|i| i.time.clone()),
        timeline.instants().first().map(|i| i.time.clone()),
    );
    let mut out = Vec::new();
    for slice in latest_file_slices(store, &timeline, None)
        .await
        .map_err(|e| io(&e))?
    {
        let log = scan_stored_log_files(store, &slice.log_paths(), &committed, &mode)
            .await
            .map_err(|e| io(&e))?;
        let base = store.get(&slice.path()).await.map_err(|e| io(&e))?;
        for b in merge_file_slice(Some(base), log).map_err(|e| io(&e))? {
            let b = b.map_err(|e| io(&e))?;
            let b = conform(&b, &b.schema()).map_err(|e| io(&e))?;
            let column = |name: &str| {
                b.column_by_name(name)
                    .map(|c| c.as_string::<i32>().clone())
                    .ok_or_else(|| io(&format!("no {name} column")))
            };
            let (keys, parts, doc) = (
                column("_hoodie_record_key")?,
                column("_hoodie_partition_path")?,
                column("doc")?,
            );
            for row in 0..b.num_rows() {
                let d = doc.is_valid(row).then(|| doc.value(row).to_string());
                out.push((keys.value(row).to_string(), parts.value(row).to_string(), d));
            }
        }
    }
    Ok(out)
}

pub(super) async fn process(sink: &KafkaSink, batch: &[Msg]) -> Result<(), Failure> {
    sink.process(batch_of(batch)?)
        .await
        .map(|_| ())
        .map_err(|e| fail("batches commit", e.to_string()))
}

/// See the module doc, on one table type.
async fn placeholders_on(mor: bool) -> Result<(), Failure> {
    let documents = Documents::new(mor)?;
    let w1 = documents.writer(1).await?;
    process(
        &w1,
        &[
            event(0, 100, "c", "doc-1", "first text of doc-1"),
            event(1, 101, "c", "doc-2", "first text of doc-2"),
            event(2, 102, "c", "doc-3", "first text of doc-3"),
        ],
    )
    .await?;
    let w2 = documents.writer(2).await?;
    let updates = [
        event(3, 110, "u", "doc-1", PLACEHOLDER),
        event(4, 111, "u", "doc-2", PLACEHOLDER),
        event(5, 112, "u", "doc-3", "second text of doc-3"),
        event(6, 113, "u", "doc-3", PLACEHOLDER),
    ];
    process(&w2, &updates).await?;
    process(&w2, &updates).await?;
    process(&w1, &[event(7, 120, "u", "doc-1", PLACEHOLDER)]).await?;
    let got = docs(documents.store.as_ref()).await?;
    let want: BTreeMap<String, Option<String>> = [
        ("doc-1", "first text of doc-1"),
        ("doc-2", "first text of doc-2"),
        ("doc-3", "second text of doc-3"),
    ]
    .into_iter()
    .map(|(k, d)| (k.to_string(), Some(d.to_string())))
    .collect();
    holds("no placeholder replaces a stored value", mor, &got, &want)
}

/// `invariant` broken unless the table (merge-on-read or not) holds `want`.
pub(super) fn holds<T: PartialEq + std::fmt::Debug>(
    invariant: &'static str,
    mor: bool,
    got: &T,
    want: &T,
) -> Result<(), Failure> {
    if got == want {
        return Ok(());
    }
    let kind = if mor {
        "merge-on-read"
    } else {
        "copy-on-write"
    };
    Err(fail(
        invariant,
        format!("{kind} table holds {got:?}, want {want:?}"),
    ))
}

/// See the module doc (second scenario), on one table type.
async fn out_of_order_on(mor: bool) -> Result<(), Failure> {
    let documents = Documents::new(mor)?;
    let w1 = documents.writer(1).await?;
    process(
        &w1,
        &[
            event(0, 100, "c", "doc-1", "first text of doc-1"),
            event(1, 100, "c", "doc-2", "first text of doc-2"),
            event(2, 100, "c", "doc-3", "first text of doc-3"),
            event(3, 100, "c", "doc-4", "first text of doc-4"),
        ],
    )
    .await?;
    process(&w1, &[event(4, 150, "u", "doc-1", "second text of doc-1")]).await?;
    let w2 = documents.writer(2).await?;
    let batch = [
        // Re-sent alone: older than the stored version (150), so it is not the value before 160.
        event(5, 120, "u", "doc-1", "re-sent text of doc-1"),
        event(6, 160, "u", "doc-1", PLACEHOLDER),
        // By ordering: 130, 140, then the placeholder at 170, which takes 140's text.
        event(7, 130, "u", "doc-2", "text of doc-2 at 130"),
        event(8, 170, "u", "doc-2", PLACEHOLDER),
        event(9, 140, "u", "doc-2", "text of doc-2 at 140"),
        // The latest earlier version arrives first: 145, then 135, then the placeholder at 180.
        event(10, 145, "u", "doc-4", "text of doc-4 at 145"),
        event(11, 135, "u", "doc-4", "text of doc-4 at 135"),
        event(12, 180, "u", "doc-4", PLACEHOLDER),
        // A delete at 135, then a version at 175 that leaves `doc` out: nothing before it survives.
        event(13, 135, "d", "doc-3", "first text of doc-3"),
        event(14, 175, "c", "doc-3", PLACEHOLDER),
    ];
    process(&w2, &batch).await?;
    process(&w2, &batch).await?;
    let got = docs(documents.store.as_ref()).await?;
    let want: BTreeMap<String, Option<String>> = [
        ("doc-1", "second text of doc-1"),
        ("doc-2", "text of doc-2 at 140"),
        ("doc-3", PLACEHOLDER),
        ("doc-4", "text of doc-4 at 145"),
    ]
    .into_iter()
    .map(|(k, d)| (k.to_string(), Some(d.to_string())))
    .collect();
    holds(
        "a placeholder takes the latest earlier value by ordering",
        mor,
        &got,
        &want,
    )
}

async fn placeholders_follow_the_ordering_field() -> Result<(), Failure> {
    out_of_order_on(false).await?;
    out_of_order_on(true).await
}

pub(super) fn placeholders_follow_the_ordering_field_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(placeholders_follow_the_ordering_field())
}

async fn toast_placeholders_keep_stored_values() -> Result<(), Failure> {
    placeholders_on(false).await?;
    placeholders_on(true).await
}

pub(super) fn toast_placeholders_keep_stored_values_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(toast_placeholders_keep_stored_values())
}
