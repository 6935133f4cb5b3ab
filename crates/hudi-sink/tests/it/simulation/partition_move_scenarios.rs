//! A scripted scenario of Debezium updates that move rows to another partition (`TableWriter::prepare_records`'
//! priors), on a copy-on-write and on a merge-on-read table, with its own invariant: **a row moved to another
//! partition is stored once**, in the partition of its latest image.
//!
//! The table is partitioned by `city`. Writer 1 creates three documents, two in `sf` and one in `la`. Writer 2,
//! another process, then sends updates with full before images (`REPLICA IDENTITY FULL`): `doc-1` moves from
//! `sf` to `la`; `doc-2` moves to `la` and back to `sf` in the same batch; `doc-3` changes in place. Its batch is
//! delivered twice. Writer 1, still warm, moves `doc-1` on to `ny`, leaving its TOASTed `doc` out (the
//! placeholder takes the before image's value). With the prior deletes switched off (`partition-move`) the
//! older versions stay in their partitions and the keys are read twice.

use super::toast_scenarios::{change, holds, process, stored_rows, Documents, PLACEHOLDER};
use super::*;

/// A Postgres update (or create, without `from`) of `uuid` at `lsn`: `from` is the before image's city and doc.
fn event(
    offset: i64,
    lsn: i64,
    uuid: &str,
    from: Option<(&str, &str)>,
    city: &str,
    doc: &str,
) -> Msg {
    let before = from.map_or(
        serde_json::Value::Null,
        |(city, doc)| serde_json::json!({"uuid": uuid, "city": city, "doc": doc, "amount": 0}),
    );
    let after = serde_json::json!({"uuid": uuid, "city": city, "doc": doc, "amount": lsn});
    let op = if from.is_some() { "u" } else { "c" };
    change(offset, lsn, op, uuid, before, after)
}

/// See the module doc, on one table type.
async fn moves_on(mor: bool) -> Result<(), Failure> {
    let documents = Documents::new(mor)?;
    let w1 = documents.writer(1).await?;
    process(
        &w1,
        &[
            event(0, 100, "doc-1", None, "sf", "doc-1 in sf"),
            event(1, 101, "doc-2", None, "sf", "doc-2 in sf"),
            event(2, 102, "doc-3", None, "la", "doc-3 in la"),
        ],
    )
    .await?;
    let w2 = documents.writer(2).await?;
    let updates = [
        event(
            3,
            110,
            "doc-1",
            Some(("sf", "doc-1 in sf")),
            "la",
            "doc-1 in la",
        ),
        event(
            4,
            111,
            "doc-2",
            Some(("sf", "doc-2 in sf")),
            "la",
            "doc-2 in la",
        ),
        event(
            5,
            112,
            "doc-2",
            Some(("la", "doc-2 in la")),
            "sf",
            "doc-2 back in sf",
        ),
        event(
            6,
            113,
            "doc-3",
            Some(("la", "doc-3 in la")),
            "la",
            "doc-3 changed in la",
        ),
    ];
    process(&w2, &updates).await?;
    process(&w2, &updates).await?;
    // The move leaves the TOASTed `doc` out: the new partition holds no version to take it from, the before
    // image does.
    process(
        &w1,
        &[event(
            7,
            120,
            "doc-1",
            Some(("la", "doc-1 in la")),
            "ny",
            PLACEHOLDER,
        )],
    )
    .await?;
    let mut got: Vec<(String, String, Option<String>)> =
        stored_rows(documents.store.as_ref()).await?;
    got.sort();
    let want: Vec<(String, String, Option<String>)> = [
        ("doc-1", "city=ny", "doc-1 in la"),
        ("doc-2", "city=sf", "doc-2 back in sf"),
        ("doc-3", "city=la", "doc-3 changed in la"),
    ]
    .into_iter()
    .map(|(k, p, d)| (k.to_string(), p.to_string(), Some(d.to_string())))
    .collect();
    holds(
        "a row moved to another partition is stored once",
        mor,
        &got,
        &want,
    )
}

async fn rows_moved_to_another_partition_are_stored_once() -> Result<(), Failure> {
    moves_on(false).await?;
    moves_on(true).await
}

pub(super) fn rows_moved_to_another_partition_are_stored_once_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(rows_moved_to_another_partition_are_stored_once())
}
