//! The interval commit under the real Lambda runtime API: several writer execution environments, each
//! invoked at nearly the same moment with another Kafka partition's batch, share one write instant.
//!
//! `cargo lambda watch` gives every function one queue of invocations behind its runtime API; each
//! environment (process) takes one invocation at a time from it, as on Lambda. So concurrency means several
//! writer processes polling the same runtime API: this test starts [`WRITERS`] of them (and two
//! coordinators) with `--only-lambda-apis`; under `HUDI_SINK_WATCH_MODE=cargo` watch starts them itself,
//! up to `--concurrency`, when invocations queue and no instance is idle.
//!
//! Each partition's rows are in a city of their own: copy-on-write members writing the same file group
//! conflict, and all but one of them move to a later window.
//!
//! Checked: every invocation succeeds, and exactly one completed commit holds all their records; its
//! `hudi.sink.window` record lists every member with its offsets, its checkpoint covers every partition;
//! the table read by hudi-rs equals the model row for row; dead letters are the model's; each
//! environment printed one EMF line with `WindowWait` and `ContributionsPerInstant`.
//! The cost of waiting for the window is printed (not asserted).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::moto::object_bytes;
use crate::common::python::read_rows;
use crate::lambda_watch::{
    check_emf, completed_commits, deploy_with, free_port, objects, Data, Lambdas, COORDINATOR,
    WRITER,
};
use crate::model::{esm_payload, stream, Model, Msg, CITIES};

/// Writer environments invoked at once, one Kafka partition each.
const WRITERS: usize = 3;
/// The commit interval: the window stays open long enough for every writer to join it.
const INTERVAL_MS: i64 = 3_000;
/// Lambda memory the cost is stated for (one full vCPU).
const MEMORY_GB: f64 = 1.769;
/// A hang guard while the environments start (not a timing assertion).
const READY_LIMIT: Duration = Duration::from_secs(120);

/// What one invocation answered, and how long it took from the invoke command's start to its end.
struct Invocation {
    partition: i32,
    report: Value,
    /// When its invoke command started, after the first one's.
    started: Duration,
    wall: Duration,
}

#[test]
fn concurrent_writer_invocations_share_one_window_instant() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let port = free_port();
    let deployment = rt.block_on(deploy_with(
        port,
        &format!("hudi.sink.commit.interval.ms={INTERVAL_MS}\n"),
    ));
    let mut lambdas = Lambdas::start_scaled(&deployment, port, WRITERS, 2);
    wait_until_ready(&mut lambdas);
    // A table-services run first: the coordinator answers before any batch arrives.
    let services = lambdas.invoke_ok(COORDINATOR, Data::Ascii("{}"));
    assert_eq!(services["status"], "done", "{services}");

    // One batch per Kafka partition (keys are owned by a partition), each in its own payload file.
    let msgs = own_city_per_partition(stream("trips", WRITERS as i32, 40, 30));
    let dir = tempfile::tempdir().expect("temp dir");
    let mut model = Model::default();
    let mut batches: Vec<(i32, std::path::PathBuf)> = Vec::new();
    for p in 0..WRITERS as i32 {
        let batch: Vec<Msg> = msgs.iter().filter(|m| m.partition == p).cloned().collect();
        model.apply(&batch);
        let path = dir.path().join(format!("partition-{p}.json"));
        std::fs::write(&path, esm_payload(&batch)).expect("payload file");
        batches.push((p, path));
    }

    // Start all invocations just after an interval slot begins, so that the window opened by the first
    // one is still open when the last one joins (a slot boundary in between would open a second window).
    let now = chrono::Utc::now().timestamp_millis();
    let into_slot = now.rem_euclid(INTERVAL_MS);
    std::thread::sleep(Duration::from_millis((INTERVAL_MS - into_slot + 20) as u64));
    let t0 = Instant::now();
    let invocations: Vec<Invocation> = std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .map(|(p, path)| {
                let lambdas = &lambdas;
                s.spawn(move || {
                    let started = Instant::now();
                    let report = lambdas.invoke_ok(WRITER, Data::File(path));
                    Invocation {
                        partition: *p,
                        report,
                        started: started - t0,
                        wall: started.elapsed(),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("invoking thread"))
            .collect()
    });

    for inv in &invocations {
        eprintln!("partition {}: {}", inv.partition, inv.report);
    }
    // Every invocation committed, all in the same instant, which counted every contribution.
    let instant = invocations[0].report["instant"]
        .as_str()
        .unwrap_or_else(|| panic!("no instant: {}", invocations[0].report))
        .to_string();
    for inv in &invocations {
        let r = &inv.report;
        assert_eq!(
            r["instant"].as_str(),
            Some(instant.as_str()),
            "partition {}: {r}",
            inv.partition
        );
        assert_eq!(r["skipped"], 0, "{r}");
        assert_eq!(r["contributions_per_instant"], WRITERS as u64, "{r}");
        assert!(r["window_wait_ms"].is_u64(), "{r}");
        assert!(
            r["excluded_members"].is_null() || r["excluded_members"] == 0,
            "{r}"
        );
    }
    assert_eq!(
        rt.block_on(completed_commits(&deployment.bucket)),
        vec![instant.clone()],
        "exactly one completed write instant"
    );

    // The commit's window record lists one member per environment, whose offsets are exactly the batches';
    // its checkpoint is the next offset of every partition.
    let commit: Value = serde_json::from_slice(&rt.block_on(object_bytes(
        &deployment.bucket,
        &format!("tables/trips/.hoodie/{instant}.commit"),
    )))
    .expect("commit JSON");
    let extra = &commit["extraMetadata"];
    let window: Value = serde_json::from_str(
        extra["hudi.sink.window"]
            .as_str()
            .unwrap_or_else(|| panic!("no window record: {commit}")),
    )
    .expect("window record JSON");
    let members = window["members"].as_object().expect("members");
    assert_eq!(members.len(), WRITERS, "{window}");
    let member_names: BTreeSet<&str> = members
        .keys()
        .map(|m| m.rsplit_once('.').map_or(m.as_str(), |(w, _)| w))
        .collect();
    assert_eq!(
        member_names.len(),
        WRITERS,
        "one member per environment: {window}"
    );
    let mut ranges: Vec<(String, i64, i64, i64)> = members
        .values()
        .flat_map(|topics| topics.as_array().expect("topic offsets").clone())
        .flat_map(|t| {
            let topic = t["topic"].as_str().expect("topic").to_string();
            t["ranges"]
                .as_array()
                .expect("ranges")
                .iter()
                .map(|r| {
                    (
                        topic.clone(),
                        r["partition"].as_i64().expect("partition"),
                        r["first"].as_i64().expect("first"),
                        r["last"].as_i64().expect("last"),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ranges.sort();
    let mut expected_ranges: Vec<(String, i64, i64, i64)> = (0..WRITERS as i32)
        .map(|p| {
            let offsets: Vec<i64> = msgs
                .iter()
                .filter(|m| m.partition == p)
                .map(|m| m.offset)
                .collect();
            (
                "trips".to_string(),
                i64::from(p),
                offsets[0],
                offsets[offsets.len() - 1],
            )
        })
        .collect();
    expected_ranges.sort();
    assert_eq!(ranges, expected_ranges, "{window}");
    assert_eq!(window["excluded"].as_object().map_or(0, |e| e.len()), 0);
    let checkpoint: Value = serde_json::from_str(
        extra["hudi.sink.checkpoint"]
            .as_str()
            .unwrap_or_else(|| panic!("no checkpoint: {commit}")),
    )
    .expect("checkpoint JSON");
    let expected_checkpoint: BTreeMap<String, i64> = model
        .next_offset
        .iter()
        .map(|((_, p), next)| (p.to_string(), *next))
        .collect();
    let actual_checkpoint: BTreeMap<String, i64> = checkpoint["trips"]
        .as_object()
        .unwrap_or_else(|| panic!("checkpoint without topic trips: {checkpoint}"))
        .iter()
        .map(|(p, n)| (p.clone(), n.as_i64().expect("offset")))
        .collect();
    assert_eq!(actual_checkpoint, expected_checkpoint, "{checkpoint}");

    // The table, read by hudi-rs, is the model's; the dead letters are the model's too.
    let rows = read_rows(
        format!("s3://{}/tables/trips", deployment.bucket),
        "hudi",
        &["snapshot"],
    );
    model.assert_table(&rows, "after the shared window");
    let letters: BTreeSet<(String, i32, i64)> = rt
        .block_on(objects(&deployment.bucket, "dead-letters/"))
        .values()
        .flat_map(|body| {
            String::from_utf8_lossy(body)
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("dead letter JSON"))
                .collect::<Vec<_>>()
        })
        .map(|d| {
            (
                d["topic"].as_str().expect("topic").to_string(),
                i32::try_from(d["partition"].as_i64().expect("partition")).expect("partition"),
                d["offset"].as_i64().expect("offset"),
            )
        })
        .collect();
    assert_eq!(letters, model.dead);

    // One EMF line per invocation, with the window's metrics.
    let emf = writer_emf(&lambdas);
    assert_eq!(emf.len(), WRITERS, "{emf:#?}");
    for doc in &emf {
        let v = check_emf(doc);
        assert_eq!(doc["Instant"].as_str(), Some(instant.as_str()), "{doc}");
        assert_eq!(v.get("ContributionsPerInstant"), Some(&(WRITERS as u64)));
        assert!(v.contains_key("WindowWait"), "{doc}");
    }
    assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());

    // What waiting for the window costs (printed, not asserted).
    for inv in &invocations {
        let ms = |k: &str| inv.report[k].as_u64().unwrap_or(0);
        let wall_ms = inv.wall.as_millis() as u64;
        eprintln!(
            "window cost: partition {} records {}: invoke from +{} ms for {wall_ms} ms, commit_latency {} ms, \
             window_wait {} ms, lock_wait {} ms; at {MEMORY_GB} GB: {:.3} GB-s by commit latency, \
             {:.3} GB-s by invoke wall time",
            inv.partition,
            ms("records_in"),
            inv.started.as_millis(),
            ms("commit_latency_ms"),
            ms("window_wait_ms"),
            ms("lock_wait_ms"),
            ms("commit_latency_ms") as f64 / 1000.0 * MEMORY_GB,
            wall_ms as f64 / 1000.0 * MEMORY_GB,
        );
    }
}

/// `msgs` with every row of Kafka partition `p` in city `CITIES[p]`, so that the batches write disjoint
/// file groups. On copy-on-write, two members writing one file group (the same bucket of the same city)
/// conflict, and all but one move to a later window: only batches with disjoint file groups share an instant.
fn own_city_per_partition(msgs: Vec<Msg>) -> Vec<Msg> {
    msgs.into_iter()
        .map(|mut m| {
            let city = CITIES[m.partition as usize % CITIES.len()];
            if let Some(Value::Object(mut row)) = m
                .value
                .as_deref()
                .and_then(|v| serde_json::from_slice::<Value>(v).ok())
            {
                row.insert("city".into(), Value::from(city));
                m.value = Some(serde_json::to_vec(&row).expect("row JSON"));
            }
            m
        })
        .collect()
}

/// Waits until every writer environment the test started has loaded its configuration (its cold start is
/// over), so that the invocations reach running processes together.
fn wait_until_ready(lambdas: &mut Lambdas) {
    let started = Instant::now();
    loop {
        let ready = lambdas
            .functions
            .iter()
            .filter(|(k, _)| k.starts_with(WRITER))
            .all(|(_, p)| p.stderr().iter().any(|l| l.contains("writer ready")));
        if ready {
            return;
        }
        assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());
        assert!(
            started.elapsed() < READY_LIMIT,
            "writers not ready: {}",
            lambdas.diagnostics()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The EMF documents every writer environment printed (watch's output when watch started them).
fn writer_emf(lambdas: &Lambdas) -> Vec<Value> {
    let lines: Vec<String> = if lambdas.functions.is_empty() {
        lambdas.watch_stdout()
    } else {
        lambdas
            .functions
            .iter()
            .filter(|(k, _)| k.starts_with(WRITER))
            .flat_map(|(_, p)| p.stdout())
            .collect()
    };
    lines
        .iter()
        .filter(|l| l.contains("\"_aws\"") && l.contains("RecordsIn"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("EMF line ({e}): {l}")))
        .collect()
}
