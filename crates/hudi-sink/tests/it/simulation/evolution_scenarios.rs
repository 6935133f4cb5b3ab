//! Scripted scenarios of schema evolution with two writers, checked with the simulation's invariants and
//! two of their own: no stored column value is ever lost, and no commit carries a narrower schema than an
//! earlier one (readers take the latest commit's schema).
//!
//! **A warm writer rewrites files of an evolved schema.** Writer 1 is deployed with schema v1 and stays
//! warm. Writer 2, deployed with v2 (a nullable `note` added), updates three keys with notes: the table
//! evolves and their file groups are rewritten under v2. Writer 1 then writes new keys into the same file
//! groups, still decoding v1. Were it to merge in v1 (no catch-up with the committed schema, no refusal of
//! a stored column its schema lacks), the three notes would be gone.
//!
//! **A narrower writer commits after an evolution.** On an insert table (no index: a write reads no stored
//! file and so never catches up), writer 1 (v1) commits after writer 2 evolved the table to v2. Its commit
//! must still carry v2, or readers would stop seeing `note` in the files writer 2 wrote.

use super::window_scenarios::{batch_of, Table};
use super::*;

/// The simulation's schema with a nullable `note` at the end.
fn v2() -> Result<AvroSchema, Failure> {
    let mut v: serde_json::Value =
        serde_json::from_str(SCHEMA).map_err(|e| fail("setup", e.to_string()))?;
    if let Some(fields) = v["fields"].as_array_mut() {
        fields
            .push(serde_json::json!({"name": "note", "type": ["null", "string"], "default": null}));
    }
    AvroSchema::parse(&v.to_string()).map_err(|e| fail("setup", e.to_string()))
}

/// Trips `city-<n>` for `n` in `keys` at offsets from `first`, with a note when `note` is set.
fn msgs(city: &str, keys: std::ops::RangeInclusive<i64>, first: i64, note: bool) -> Vec<Msg> {
    keys.enumerate()
        .map(|(i, n)| {
            let uuid = format!("{city}-{n}");
            let trip = Trip {
                uuid: uuid.clone(),
                ts: 100 + first + i as i64,
                rider: format!("rider-{n}"),
                fare: n as f64,
                city: city.into(),
                deleted: false,
            };
            let mut value: serde_json::Value =
                serde_json::from_slice(&trip.json()).unwrap_or_default();
            if note {
                value["note"] = serde_json::json!(format!("note of {uuid}"));
            }
            Msg {
                topic: TOPIC.into(),
                partition: 0,
                offset: first + i as i64,
                key: Some(uuid),
                value: serde_json::to_vec(&value).ok(),
            }
        })
        .collect()
}

/// `note` per record key in the table's latest base files (`None` where a file has no such column).
async fn notes(store: &dyn Storage) -> Result<BTreeMap<String, Option<String>>, Failure> {
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    let timeline = Timeline::load(store).await.map_err(|e| io(&e))?;
    let mut out = BTreeMap::new();
    for slice in latest_file_slices(store, &timeline, None)
        .await
        .map_err(|e| io(&e))?
    {
        let data = store.get(&slice.path()).await.map_err(|e| io(&e))?;
        let (_, batches) =
            hudi_sink::base_file::reader::read_base_file(data).map_err(|e| io(&e))?;
        for b in batches {
            let keys = b
                .column_by_name("_hoodie_record_key")
                .ok_or_else(|| io(&"no record key column"))?
                .as_string::<i32>()
                .clone();
            let note = b
                .column_by_name("note")
                .map(|c| c.as_string::<i32>().clone());
            for row in 0..b.num_rows() {
                let n = note
                    .as_ref()
                    .filter(|c| c.is_valid(row))
                    .map(|c| c.value(row).to_string());
                out.insert(keys.value(row).to_string(), n);
            }
        }
    }
    Ok(out)
}

/// Fails when a completed commit carries a schema without `note` after one that had it.
async fn schemas_never_narrow(store: &dyn Storage) -> Result<(), Failure> {
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    let timeline = Timeline::load(store).await.map_err(|e| io(&e))?;
    let mut widened_at = None;
    for instant in timeline.completed_commits() {
        let meta = timeline
            .commit_metadata(store, instant)
            .await
            .map_err(|e| io(&e))?;
        let Some(schema) = meta
            .schema()
            .filter(|_| meta.operation_type.can_update_schema())
        else {
            continue;
        };
        let has_note = schema.contains("\"note\"");
        match (&widened_at, has_note) {
            (None, true) => widened_at = Some(instant.time.to_string()),
            (Some(at), false) => {
                return Err(fail(
                    "no commit carries a narrower schema than an earlier one",
                    format!("{} lacks `note`, which {at} added", instant.time),
                ))
            }
            _ => {}
        }
    }
    if widened_at.is_none() {
        return Err(fail(
            "no commit carries a narrower schema than an earlier one",
            "no commit carries the evolved schema",
        ));
    }
    Ok(())
}

async fn process(sink: &KafkaSink, batch: &[Msg], what: &'static str) -> Result<(), Failure> {
    sink.process(batch_of(batch)?)
        .await
        .map(|_| ())
        .map_err(|e| fail(what, e.to_string()))
}

/// The script both scenarios share: writer 1 (v1) writes `first_city-1..3`, writer 2 (v2) updates
/// `sf-1..3` with notes, then writer 1, still warm at v1, writes `later_city-4..6`. Checks that the notes
/// survive and that no commit narrows the schema; returns the three batches for the common invariants.
async fn evolve_between(
    table: &Table,
    first_city: &str,
    later_city: &str,
) -> Result<[Vec<Msg>; 3], Failure> {
    let store: Arc<dyn Storage> = table.recorder.clone();
    let w1 = table
        .sink(store.clone(), table.clocks[1].clone(), "w1")
        .await?;
    let first = msgs(first_city, 1..=3, 1, false);
    process(&w1, &first, "batches commit").await?;
    let w2 = table
        .sink_with(store.clone(), table.clocks[2].clone(), "w2", &v2()?)
        .await?;
    let noted = msgs("sf", 1..=3, 4, true);
    process(&w2, &noted, "batches commit").await?;
    let later = msgs(later_city, 4..=6, 7, false);
    process(&w1, &later, "batches commit").await?;
    let got = notes(store.as_ref()).await?;
    for n in 1..=3 {
        let key = format!("sf-{n}");
        let want = Some(format!("note of {key}"));
        if got.get(&key) != Some(&want) {
            return Err(fail(
                "no stored column value is lost",
                format!(
                    "{key}: note {:?}, want {want:?} (table: {got:?})",
                    got.get(&key)
                ),
            ));
        }
    }
    schemas_never_narrow(store.as_ref()).await?;
    Ok([first, noted, later])
}

/// See the module doc: writer 1's later keys land in the file group writer 2 rewrote under v2.
async fn warm_writer_rewrites_files_of_an_evolved_schema() -> Result<(), Failure> {
    let table = Table::with_props(
        false,
        &[
            ("hudi.sink.commit.interval.ms", "0"),
            ("hoodie.bucket.index.num.buckets", "1"),
        ],
    )?;
    let [first, noted, later] = evolve_between(&table, "sf", "sf").await?;
    table.check(&[&first, &noted, &later]).await
}

/// See the module doc: an insert table, writer 1 in another partition.
async fn narrower_writer_commits_after_an_evolution() -> Result<(), Failure> {
    let table = Table::with_props(
        false,
        &[
            ("hudi.sink.commit.interval.ms", "0"),
            ("hoodie.datasource.write.operation", "insert"),
            ("hoodie.index.type", ""),
            ("hoodie.bucket.index.num.buckets", ""),
        ],
    )?;
    let [first, noted, later] = evolve_between(&table, "nyc", "nyc").await?;
    table.check(&[&first, &noted, &later]).await
}

pub(super) fn warm_writer_rewrites_files_of_an_evolved_schema_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(warm_writer_rewrites_files_of_an_evolved_schema())
}

pub(super) fn narrower_writer_commits_after_an_evolution_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(narrower_writer_commits_after_an_evolution())
}
