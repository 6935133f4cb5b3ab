//! Clean and archive keep an upsert table correct for an independent reader: a bucket-indexed table on local
//! disk takes 16 small batches of upserts and deletes over a small key space (file slices are superseded
//! every batch, while some file groups stay untouched for several batches), through `KafkaSink` and the
//! in-process coordinator, which cleans and archives inline after every commit with
//! `hoodie.cleaner.commits.retained=3`, `hoodie.keep.min.commits=4`, `hoodie.keep.max.commits=6`.
//!
//! After every batch, hudi-rs (the Python `hudi` 0.5.0 package) must read, row for row (commit time, key,
//! partition and every data column):
//! - the snapshot: the model's rows;
//! - time travel as of every completed commit on the active timeline at or after the last clean's earliest
//!   commit to retain (every commit before the first clean): the model as of that commit;
//! - incremental queries between consecutive such commits: exactly the rows whose latest version was written
//!   in that range, with their values as of the end commit (deleted keys do not appear).
//!
//! and the services must really have run: every file group keeps at most one slice older than the current
//! earliest commit to retain (the one a query as of that commit reads), no file of an unknown instant
//! exists, the active timeline never holds more than `keep.max` completed commits, and clean instants exist.
//!
//! Queries beyond the retention (observed with hudi 0.5.0 and asserted at the end, so that a change of
//! behaviour shows). hudi-rs gives no error and no warning for any of them:
//! - As of an instant older than the last clean's earliest commit to retain, archived or still active: the
//!   answer is built from the base files that remain with an instant at or before the requested one (files
//!   older than the first active instant count as committed). The rows it returns are right for that
//!   instant (a surviving slice older than the ECR is its group's newest), but the keys of every file group
//!   rewritten since are missing: a silently partial answer (here 12 of 13 such instants; none at all as of
//!   the table's first commit). The one exception is the commit right before the ECR, which still reads
//!   whole: the clean keeps each group's newest slice older than the ECR for it.
//! - Incremental with a start before the active timeline: only the commits on the active timeline are
//!   scanned, so the rows whose latest version an archived commit wrote are left out (`(0, latest]` is not
//!   the snapshot); an incremental query ending at an archived instant returns nothing.
//!
//! `SERVICES_READ_MUTATION=<name>` (see `hudi_sink::mutation::Mutation::name`) runs the test with one safety
//! mechanism switched off, to see the checks catch it (the runtime is single-threaded so that the
//! per-thread switch covers the coordinator).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hudi_sink::bootstrap::build_sink;
use hudi_sink::services::clean::last_completed_clean;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::table::file_name::BaseFileName;
use hudi_sink::table::instant::{Action, Instant, InstantTime};
use hudi_sink::table::timeline::Timeline;
use serde_json::{Map, Value};

use crate::common::python::read_rows;
use crate::exactly_once::process;
use crate::model::{local_props, stream_with_seed, Model, Msg, Trip, SCHEMA};

const RETAINED: usize = 3;
const KEEP_MIN: usize = 4;
const KEEP_MAX: usize = 6;
const BATCHES: usize = 16;
/// Records per Kafka partition in one batch.
const PER_BATCH: usize = 5;
const KAFKA_PARTITIONS: i32 = 2;
/// Keys per Kafka partition.
const KEYS: u64 = 12;

/// One stored row as every check compares it: all columns but the sequence number and the file name.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    commit_time: String,
    partition_path: String,
    trip: Trip,
}

/// Rows by record key.
type Rows = BTreeMap<String, Row>;

/// The model's table as of one commit, with the commit time of each row's latest version.
#[derive(Debug, Clone)]
struct Version {
    instant: String,
    rows: Rows,
}

fn partition_path(city: &str) -> String {
    format!("city={city}")
}

/// The model's rows as of `instant`: a row keeps the commit time of `previous` unless it changed.
fn next_version(previous: Option<&Version>, model: &Model, instant: &str) -> Version {
    let rows = model
        .rows
        .iter()
        .map(|(key, trip)| {
            let commit_time = match previous.and_then(|p| p.rows.get(key)) {
                Some(row) if row.trip == *trip => row.commit_time.clone(),
                _ => instant.to_string(),
            };
            let row = Row {
                commit_time,
                partition_path: partition_path(&trip.city),
                trip: trip.clone(),
            };
            (key.clone(), row)
        })
        .collect();
    Version {
        instant: instant.to_string(),
        rows,
    }
}

/// Rows as hudi-rs returned them; fails on a missing column, a key differing from `uuid` or a duplicate.
fn keyed(read: Vec<Map<String, Value>>, what: &str) -> Rows {
    let mut out = Rows::new();
    for r in read {
        let text = |f: &str| {
            r[f].as_str()
                .unwrap_or_else(|| panic!("{what}: column {f} in {r:?}"))
                .to_string()
        };
        let trip = Trip {
            uuid: text("uuid"),
            ts: r["ts"].as_i64().expect("ts"),
            rider: text("rider"),
            fare: r["fare"].as_f64().expect("fare"),
            city: text("city"),
            deleted: r["_hoodie_is_deleted"].as_bool().expect("is_deleted"),
        };
        let key = text("_hoodie_record_key");
        assert_eq!(key, trip.uuid, "{what}: record key");
        let row = Row {
            commit_time: text("_hoodie_commit_time"),
            partition_path: text("_hoodie_partition_path"),
            trip,
        };
        assert!(
            out.insert(key.clone(), row).is_none(),
            "{what}: duplicate {key}"
        );
    }
    out
}

/// Asserts `actual == expected`, naming the first differences.
fn assert_rows(actual: &Rows, expected: &Rows, what: &str) {
    if actual == expected {
        return;
    }
    let missing: Vec<&String> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let extra: Vec<&String> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    let differ: Vec<String> = expected
        .iter()
        .filter_map(|(k, e)| {
            let a = actual.get(k)?;
            (a != e).then(|| format!("{k}: read {a:?}, expected {e:?}"))
        })
        .take(3)
        .collect();
    panic!("{what}: missing {missing:?}, unexpected {extra:?}, differing {differ:?}");
}

fn hudi(base: &Path, args: &[&str]) -> Rows {
    keyed(read_rows(base, "hudi", args), &args.join(" "))
}

/// Slice instants of every file group on disk, by (partition, file group), oldest first.
type Groups = BTreeMap<(String, String), Vec<InstantTime>>;

/// The file groups on disk and the set of all base file paths.
fn base_files(base: &Path) -> (Groups, BTreeSet<String>) {
    let mut groups = Groups::new();
    let mut paths = BTreeSet::new();
    for path in crate::common::parquet_files(base) {
        let rel = path
            .strip_prefix(base)
            .expect("inside the table")
            .to_string_lossy()
            .to_string();
        if rel.starts_with(".hoodie") {
            continue;
        }
        let (partition, name) = rel.rsplit_once('/').expect("partitioned");
        let parsed = BaseFileName::parse(name).expect("base file name");
        groups
            .entry((partition.to_string(), parsed.file_id))
            .or_default()
            .push(parsed.instant_time);
        paths.insert(rel);
    }
    for slices in groups.values_mut() {
        slices.sort();
    }
    (groups, paths)
}

/// The stream cut into batches of `PER_BATCH` records per Kafka partition.
fn batches() -> Vec<Vec<Msg>> {
    let msgs = stream_with_seed(
        "trips",
        KAFKA_PARTITIONS,
        (BATCHES * PER_BATCH) as i64,
        KEYS,
        0x5EED_C1EA_2024_0001,
    );
    let mut by_partition: BTreeMap<i32, Vec<Msg>> = BTreeMap::new();
    for m in msgs {
        by_partition.entry(m.partition).or_default().push(m);
    }
    (0..BATCHES)
        .map(|b| {
            by_partition
                .values()
                .flat_map(|part| part[b * PER_BATCH..(b + 1) * PER_BATCH].iter().cloned())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn cleaned_and_archived_upsert_table_reads_row_exact_inside_the_retention() {
    if let Ok(name) = std::env::var("SERVICES_READ_MUTATION") {
        let mutation = hudi_sink::mutation::Mutation::from_name(&name)
            .unwrap_or_else(|| panic!("unknown mutation {name}"));
        hudi_sink::mutation::set_active(Some(mutation));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("trips");
    let schema = dir.path().join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let mut props = local_props(&base, &schema, &dir.path().join("dead-letters"));
    for (k, v) in [
        ("hoodie.cleaner.commits.retained", RETAINED),
        ("hoodie.keep.min.commits", KEEP_MIN),
        ("hoodie.keep.max.commits", KEEP_MAX),
    ] {
        props.insert(k.to_string(), v.to_string());
    }
    let sink = build_sink(&props, "w0").await.expect("sink");
    let storage = LocalStorage::new(&base);

    let mut model = Model::default();
    let mut history: Vec<Version> = Vec::new();
    let mut clean_instants = BTreeSet::new();
    let mut files_deleted = 0usize;
    let mut previous_files = BTreeSet::new();
    let mut checks = (0usize, 0usize); // as-of and incremental reads
    let (mut nonempty_increments, mut partial_increments) = (0, 0);
    for (b, batch) in batches().iter().enumerate() {
        let report = process(&sink, batch).await;
        model.apply(batch);
        let Some(instant) = report.instant.clone() else {
            continue;
        };
        let version = next_version(history.last(), &model, &instant);
        history.push(version);
        let what = format!("after batch {b} ({instant})");

        // The timeline: bounded, nothing pending, every completed commit one of ours.
        let timeline = Timeline::load(&storage).await.expect("timeline");
        assert!(
            timeline.pending().is_empty(),
            "{what}: {:?}",
            timeline.pending()
        );
        let commits: Vec<String> = timeline
            .completed_commits()
            .iter()
            .map(|i| i.time.to_string())
            .collect();
        assert!(
            commits.len() <= KEEP_MAX,
            "{what}: {} commits",
            commits.len()
        );
        assert_eq!(commits.last(), Some(&instant), "{what}");
        let cleans: Vec<&Instant> = timeline
            .instants()
            .iter()
            .filter(|i| i.action == Action::Clean)
            .collect();
        assert!(cleans.iter().all(|i| i.is_completed()), "{what}");
        assert!(cleans.len() <= KEEP_MAX, "{what}: {} cleans", cleans.len());
        clean_instants.extend(cleans.iter().map(|i| i.time.to_string()));
        let by_instant: BTreeMap<&str, &Version> =
            history.iter().map(|v| (v.instant.as_str(), v)).collect();
        assert!(
            commits.iter().all(|c| by_instant.contains_key(c.as_str())),
            "{what}: unknown commit on {commits:?}"
        );

        // The retained commits: at or after the last clean's ECR.
        let ecr = last_completed_clean(&storage, &timeline)
            .await
            .expect("last clean")
            .map(|(_, meta)| meta.earliest_commit_to_retain);
        let retained: Vec<&String> = commits
            .iter()
            .filter(|c| ecr.as_ref().is_none_or(|e| c.as_str() >= e.as_str()))
            .collect();
        assert!(
            retained.len() >= RETAINED.min(history.len()),
            "{what}: {retained:?}"
        );

        // Snapshot, time travel, incremental.
        assert_rows(
            &hudi(&base, &["snapshot"]),
            &by_instant[instant.as_str()].rows,
            &what,
        );
        for c in &retained {
            let read = hudi(&base, &["as_of", c]);
            assert_rows(
                &read,
                &by_instant[c.as_str()].rows,
                &format!("{what}: as of {c}"),
            );
            checks.0 += 1;
        }
        for pair in retained.windows(2) {
            let (start, end) = (pair[0].as_str(), pair[1].as_str());
            let expected: Rows = by_instant[end]
                .rows
                .iter()
                .filter(|(_, r)| r.commit_time.as_str() > start)
                .map(|(k, r)| (k.clone(), r.clone()))
                .collect();
            // Not trivially empty, nor the whole table.
            nonempty_increments += usize::from(!expected.is_empty());
            partial_increments += usize::from(expected.len() < by_instant[end].rows.len());
            let read = hudi(&base, &["incremental", start, end]);
            assert_rows(
                &read,
                &expected,
                &format!("{what}: incremental ({start}, {end}]"),
            );
            checks.1 += 1;
        }

        // The clean ran: per file group, at most one slice older than the current ECR survives; every file
        // is of a commit the model knows.
        let (groups, files) = base_files(&base);
        if commits.len() > RETAINED {
            let config_ecr = InstantTime::parse(&commits[commits.len() - RETAINED]).expect("t");
            for ((partition, file_id), slices) in &groups {
                let old = slices.iter().filter(|s| **s < config_ecr).count();
                assert!(
                    old <= 1,
                    "{what}: {partition}/{file_id} keeps {old} slices before {config_ecr}: {slices:?}"
                );
            }
        }
        for slices in groups.values() {
            for s in slices {
                assert!(
                    history.iter().any(|v| v.instant == s.as_str()),
                    "{what}: file of unknown instant {s}"
                );
            }
        }
        files_deleted += previous_files.difference(&files).count();
        previous_files = files;
    }

    assert!(
        nonempty_increments >= checks.1 / 2,
        "{nonempty_increments} non-empty"
    );
    assert!(
        partial_increments >= checks.1 / 2,
        "{partial_increments} partial"
    );
    // The services ran.
    assert_eq!(history.len(), BATCHES, "every batch committed");
    assert!(clean_instants.len() >= 3, "cleans: {clean_instants:?}");
    assert!(files_deleted >= 10, "{files_deleted} files deleted");
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let active: Vec<String> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.to_string())
        .collect();
    assert!(active.len() >= KEEP_MIN, "{active:?}");
    let archived: Vec<&Version> = history
        .iter()
        .filter(|v| !active.contains(&v.instant))
        .collect();
    assert!(
        archived.len() >= BATCHES - KEEP_MAX,
        "{} instants archived",
        archived.len()
    );
    for v in &archived {
        assert!(
            !base.join(format!(".hoodie/{}.commit", v.instant)).exists(),
            "{}",
            v.instant
        );
    }

    // Beyond the retention (see the module doc).
    let ecr = last_completed_clean(&storage, &timeline)
        .await
        .expect("last clean")
        .map(|(_, meta)| meta.earliest_commit_to_retain)
        .expect("a clean");
    let first_active = active.first().expect("active").clone();
    let version = |t: &str| history.iter().find(|v| v.instant == t).expect("a version");
    let cleaned: Vec<&String> = active
        .iter()
        .filter(|c| c.as_str() < ecr.as_str())
        .collect();
    let newest_cleaned = *cleaned.last().expect("an active commit before the ECR");
    let mut partial = 0;
    for v in archived
        .iter()
        .copied()
        .chain(cleaned.iter().map(|c| version(c)))
    {
        let read = hudi(&base, &["as_of", &v.instant]);
        let what = format!("as of {} (beyond the retention)", v.instant);
        // Never a stale row, only missing ones: a surviving slice older than the ECR is its group's newest.
        for (k, r) in &read {
            assert_eq!(v.rows.get(k), Some(r), "{what}: {k}");
        }
        if read.len() < v.rows.len() {
            partial += 1;
        }
        if &v.instant == newest_cleaned {
            // The newest slices before the ECR are kept, so the commit right before it still reads whole.
            assert_rows(&read, &v.rows, &what);
        }
    }
    assert_rows(
        &hudi(&base, &["as_of", &archived[0].instant]),
        &Rows::new(),
        "as of the first",
    );
    assert!(partial * 2 >= archived.len(), "{partial} partial answers");
    // Incremental from before the active timeline: the rows last written by archived commits are left out.
    let last = history.last().expect("history");
    let zero = "00000000000000000";
    let expected: Rows = last
        .rows
        .iter()
        .filter(|(_, r)| r.commit_time >= first_active)
        .map(|(k, r)| (k.clone(), r.clone()))
        .collect();
    assert!(
        expected.len() < last.rows.len(),
        "some rows were last written by archived commits"
    );
    for start in [zero, archived[0].instant.as_str()] {
        let read = hudi(&base, &["incremental", start, &last.instant]);
        assert_rows(&read, &expected, &format!("incremental ({start}, last]"));
    }
    assert_rows(
        &hudi(
            &base,
            &["incremental", zero, &archived.last().expect("a").instant],
        ),
        &Rows::new(),
        "incremental to an archived commit",
    );
    eprintln!(
        "{} batches: {} as-of and {} incremental reads checked, {} cleans, {files_deleted} files \
         deleted, {} instants archived, {} commits active; beyond the retention {partial} of {} \
         as-of answers were partial",
        history.len(),
        checks.0,
        checks.1,
        clean_instants.len(),
        archived.len(),
        active.len(),
        archived.len() + cleaned.len(),
    );
}
