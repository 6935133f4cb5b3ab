//! A scripted scenario of keys deleted (Kafka tombstone) and re-created in one batch on a merge-on-read
//! table, with its own invariant: **a batch's tombstone removes the key's earlier log versions**, so the
//! re-created record is merged against the base file's version only (docs/semantics.md, "Merge-on-read
//! tables").
//!
//! Two keys get a version V1 (`ts` 100) in the base file and a newer V2 (`ts` 300) in a log; then one batch
//! holds, per key, a tombstone and a re-creation: `trip-k` with `ts` 50 (below V1: the base version shows
//! again), `trip-j` with `ts` 200 (the re-created version). The random seeds cannot see this: on merge-on-read
//! they draw ordering values that never decrease per key (so that one copy-on-write model checks both table
//! types), and then the re-creation wins over V2 with or without the delete. With the delete left out
//! (`recreate-drops-delete`) V2 survives for both keys.

use super::invariants::table_rows;
use super::window_scenarios::{batch_of, Table};
use super::*;

/// A `sf` trip of `uuid` at Kafka `offset` (partition 0) with ordering value `ts`.
pub(super) fn trip(offset: i64, uuid: &str, ts: i64, rider: &str) -> Msg {
    trip_in("sf", offset, uuid, ts, rider)
}

/// [`trip`] in `city` (the table's partition field).
pub(super) fn trip_in(city: &str, offset: i64, uuid: &str, ts: i64, rider: &str) -> Msg {
    Msg {
        topic: TOPIC.into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: Some(
            Trip {
                uuid: uuid.to_string(),
                ts,
                rider: rider.to_string(),
                fare: ts as f64,
                city: city.into(),
                deleted: false,
            }
            .json(),
        ),
    }
}

/// A Kafka tombstone of `uuid` at `offset` (partition 0).
pub(super) fn tombstone(offset: i64, uuid: &str) -> Msg {
    Msg {
        topic: TOPIC.into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: None,
    }
}

async fn process(sink: &KafkaSink, batch: &[Msg]) -> Result<(), Failure> {
    sink.process(batch_of(batch)?)
        .await
        .map(|_| ())
        .map_err(|e| fail("batches commit", e.to_string()))
}

/// See the module doc.
async fn keys_recreated_in_their_tombstones_batch() -> Result<(), Failure> {
    let table = Table::with_props(
        true,
        &[
            ("hudi.sink.commit.interval.ms", "0"),
            ("hoodie.bucket.index.num.buckets", "1"),
        ],
    )?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let sink = table
        .sink(store.clone(), table.clocks[1].clone(), "w")
        .await?;
    process(
        &sink,
        &[trip(0, "trip-k", 100, "v1"), trip(1, "trip-j", 100, "v1")],
    )
    .await?;
    process(
        &sink,
        &[trip(2, "trip-k", 300, "v2"), trip(3, "trip-j", 300, "v2")],
    )
    .await?;
    process(
        &sink,
        &[
            tombstone(4, "trip-k"),
            trip(5, "trip-k", 50, "v3"),
            tombstone(6, "trip-j"),
            trip(7, "trip-j", 200, "v3"),
        ],
    )
    .await?;
    let timeline = Timeline::load(store.as_ref())
        .await
        .map_err(|e| fail("readable table", e.to_string()))?;
    let got: BTreeMap<String, (i64, String)> = table_rows(store.as_ref(), &timeline)
        .await?
        .into_iter()
        .map(|t| (t.uuid, (t.ts, t.rider)))
        .collect();
    let want: BTreeMap<String, (i64, String)> = [("trip-j", 200, "v3"), ("trip-k", 100, "v1")]
        .into_iter()
        .map(|(k, ts, r)| (k.to_string(), (ts, r.to_string())))
        .collect();
    if got != want {
        return Err(fail(
            "a batch's tombstone removes the key's earlier log versions",
            format!("merge-on-read table holds {got:?}, want {want:?}"),
        ));
    }
    Ok(())
}

pub(super) fn keys_recreated_in_their_tombstones_batch_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(keys_recreated_in_their_tombstones_batch())
}
