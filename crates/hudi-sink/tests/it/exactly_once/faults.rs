//! A fault at any storage step of a batch, recovered by redelivery without leftovers.

use super::*;

/// Fault injection at each step of an instant: the failed invocation is redelivered (as the ESM does) and
/// the final table must be exact, with no file or pending instant of a failed write left after the next
/// commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_at_any_step_is_recovered_by_redelivery_without_leftovers() {
    fault_at_any_step(false).await;
}

/// The same on merge-on-read, with faults on the log files the later batches append: a failed
/// deltacommit's log files are rolled back (also one stored whose answer was lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_a_fault_at_any_step_is_recovered_by_redelivery_without_leftovers() {
    fault_at_any_step(true).await;
}

/// With the rollback of log files switched off, the mutation is seen: a failed deltacommit's stored log
/// file is left in a file group.
#[cfg(feature = "mutations")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_on_read_rollback_that_skips_log_files_is_caught() {
    use hudi_sink::mutation::{set_active, Mutation};
    let caught = tokio::task::spawn_blocking(|| {
        set_active(Some(Mutation::RollbackDeletesLogFiles));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(fault_at_any_step(true))
        }))
        .is_err();
        set_active(None);
        caught
    })
    .await
    .expect("join");
    assert!(
        caught,
        "a rollback that leaves log files behind went unnoticed"
    );
}

/// A fault at every step of both protocols: the interval commit (the tables' default) and one instant per
/// batch.
async fn fault_at_any_step(mor: bool) {
    for windowed in [true, false] {
        fault_at_any_step_of(mor, windowed).await;
    }
}

async fn fault_at_any_step_of(mor: bool, windowed: bool) {
    use hudi_sink::clock::SystemClock;
    use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
    use hudi_sink::dead_letter::StorageDeadLetterSink;
    use hudi_sink::lock::memory::MemoryLock;
    use hudi_sink::lock::LeaseOptions;
    use hudi_sink::schema::avro::AvroSchema;
    use hudi_sink::sink::SinkConfig;
    use hudi_sink::storage::faulty::{FaultRule, Operation};
    use hudi_sink::storage::local::LocalStorage;
    use hudi_sink::storage::FaultyStorage;
    use hudi_sink::transport::InProcessClient;
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;
    use std::time::Duration;

    let commit_suffix = if mor { ".deltacommit" } else { ".commit" };
    let mut faults: Vec<(&str, FaultRule)> = vec![
        (
            "requested file",
            FaultRule::fail(Operation::PutIfAbsent)
                .path_suffix(format!("{commit_suffix}.requested")),
        ),
        (
            "inflight file",
            FaultRule::fail(Operation::PutIfAbsent).path_suffix(".inflight"),
        ),
        (
            "first marker",
            FaultRule::fail(Operation::Put).path_prefix(".hoodie/.temp/"),
        ),
        (
            "second base file",
            // A window member creates its base files with create-if-absent (no name is ever reused).
            FaultRule::fail(if windowed {
                Operation::PutIfAbsent
            } else {
                Operation::Put
            })
            .path_suffix(".parquet")
            .on_call(2),
        ),
        (
            "dead letters",
            FaultRule::fail(Operation::PutIfAbsent).path_suffix(".jsonl"),
        ),
        (
            "commit file, before",
            FaultRule::fail(Operation::PutIfAbsent).path_suffix(commit_suffix),
        ),
        (
            "commit file, effect then error",
            FaultRule::effect_then_fail(Operation::PutIfAbsent).path_suffix(commit_suffix),
        ),
        // The commit deletes its markers and heartbeat in one `delete_many` (one S3 DeleteObjects).
        (
            "marker and heartbeat clean-up after commit",
            FaultRule::fail(Operation::DeleteMany).path_prefix(".hoodie/.temp/"),
        ),
        (
            "clean-up after commit, effect then error",
            FaultRule::effect_then_fail(Operation::DeleteMany).path_prefix(".hoodie/.temp/"),
        ),
    ];
    if mor {
        faults.extend([
            (
                "second log file",
                FaultRule::fail(Operation::PutIfAbsent)
                    .path_contains(".log.")
                    .on_call(2),
            ),
            (
                "second log file, effect then error",
                FaultRule::effect_then_fail(Operation::PutIfAbsent)
                    .path_contains(".log.")
                    .on_call(2),
            ),
        ]);
    }
    if windowed {
        faults.extend([
            (
                "window object",
                FaultRule::fail(Operation::Put).path_suffix("window.json"),
            ),
            (
                "member object",
                FaultRule::fail(Operation::Put).path_contains("/member."),
            ),
            (
                "contribution",
                FaultRule::fail(Operation::Put).path_contains("/contribution."),
            ),
            (
                "contribution, effect then error",
                FaultRule::effect_then_fail(Operation::Put).path_contains("/contribution."),
            ),
            (
                "closing mark",
                FaultRule::fail(Operation::Put)
                    .path_suffix("window.json")
                    .on_call(2),
            ),
        ]);
    }
    let msgs = stream("trips", 2, 150, 10);
    let batches: Vec<Vec<Msg>> = msgs.chunks(50).map(|c| c.to_vec()).collect();
    // The fault hits a later batch that has bad records (so that dead letters are written too).
    let is_bad = |m: &Msg| {
        m.value
            .as_ref()
            .is_some_and(|v| serde_json::from_slice::<Value>(v).map_or(true, |j| !j["ts"].is_i64()))
    };
    let fault_at = (1..batches.len())
        .find(|i| batches[*i].iter().any(is_bad))
        .expect("a later batch with bad records");
    for (name, rule) in faults {
        let s = setup_typed(mor);
        let local: Arc<dyn hudi_sink::storage::Storage> = Arc::new(LocalStorage::new(&s.base));
        let faulty = Arc::new(FaultyStorage::new(local));
        let storage: Arc<dyn hudi_sink::storage::Storage> = faulty.clone();
        let clock = Arc::new(SystemClock);
        let lock = Arc::new(MemoryLock::new(
            "trips",
            LeaseOptions::hudi(Duration::from_secs(20)),
        ));
        let mut props = s.props.clone();
        if !windowed {
            props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
        }
        props.insert("hudi.sink.heartbeat.interval.ms".into(), "100".into());
        // Five missed beats (500 ms) before a write counts as failed: a loaded machine stalls live writes
        // for a few hundred milliseconds.
        props.insert("hudi.sink.heartbeat.tolerable.misses".into(), "5".into());
        let sink_config = SinkConfig::from_properties(&props).expect("sink config");
        let coordinator = Coordinator::new(
            storage.clone(),
            lock,
            clock.clone(),
            CoordinatorConfig {
                lock_wait: Duration::from_secs(20),
                heartbeat_tolerance: sink_config.heartbeat_tolerance(),
                ..CoordinatorConfig::default()
            },
        );
        let writer = TableWriter::create_or_open(
            storage.clone(),
            clock.clone(),
            WriteConfig::from_properties(props.clone()).expect("config"),
            Some(AvroSchema::parse(SCHEMA).expect("schema")),
        )
        .await
        .expect("writer");
        let dead_storage = Arc::new(FaultyStorage::new(Arc::new(LocalStorage::new(
            &s.dead_letters,
        ))));
        let sink = KafkaSink::new(
            writer,
            Arc::new(InProcessClient::new(coordinator)),
            Arc::new(StorageDeadLetterSink::new(dead_storage.clone())),
            clock,
            sink_config,
            "faulty",
        );
        let mut model = Model::default();
        for (i, batch) in batches.iter().enumerate() {
            if i == fault_at {
                if name == "dead letters" {
                    dead_storage.add_rule(rule.clone());
                } else {
                    faulty.add_rule(rule.clone());
                }
                let first = sink
                    .process(KafkaBatch::from_slice(&esm_payload(batch)).expect("event"))
                    .await;
                // A window's clean-up after its commit is best effort: the next window's open finishes it.
                let must_fail = !(windowed && name.contains("clean-up"));
                assert_eq!(
                    first.is_err(),
                    must_fail,
                    "{name} (windowed: {windowed}): the injected fault must fail the invocation: {first:?}"
                );
                // Redelivery after the failed write's heartbeat has expired: no beat for 700 ms (a fixed
                // sleep is not enough on a loaded machine, where the failed write's last beats come late).
                tokio::time::sleep(Duration::from_millis(700)).await;
                heartbeats_quiet(&s.base, Duration::from_millis(700)).await;
            }
            process(&sink, batch).await;
            model.apply(batch);
        }
        let read = read_rows(&s.base, "hudi", &["snapshot"]);
        model.assert_table(&read, name);
        let hoodie = s.base.join(".hoodie");
        let names: Vec<String> = std::fs::read_dir(&hoodie)
            .expect("timeline")
            .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
            .collect();
        let completed: std::collections::BTreeSet<&str> = names
            .iter()
            .filter_map(|n| n.strip_suffix(commit_suffix))
            .collect();
        if mor {
            // Every log file is one a completed deltacommit lists.
            let mut committed_logs = std::collections::BTreeSet::new();
            for t in &completed {
                let meta = hudi_sink::table::commit::CommitMetadata::from_json(
                    &std::fs::read(hoodie.join(format!("{t}{commit_suffix}"))).expect("read"),
                )
                .expect("metadata");
                committed_logs.extend(meta.write_stats().map(|s| s.path.clone()));
            }
            let logs: Vec<String> = crate::common::all_files(&s.base)
                .into_iter()
                .filter(|p| !p.starts_with(&hoodie))
                .map(|p| {
                    p.strip_prefix(&s.base)
                        .expect("in table")
                        .to_string_lossy()
                        .to_string()
                })
                .filter(|p| p.contains(".log."))
                .collect();
            assert!(!logs.is_empty(), "{name}: no log files");
            for l in logs {
                assert!(
                    committed_logs.contains(&l),
                    "{name}: log file of a failed instant left: {l}"
                );
            }
        }
        for n in &names {
            if n.ends_with(".inflight") || n.ends_with(".requested") {
                let t = n.split('.').next().unwrap_or_default();
                assert!(completed.contains(t), "{name}: pending instant left: {n}");
            }
        }
        for f in crate::common::parquet_files(&s.base) {
            let file = f.file_name().expect("name").to_string_lossy().to_string();
            let t = file
                .trim_end_matches(".parquet")
                .rsplit('_')
                .next()
                .unwrap_or_default()
                .to_string();
            assert!(
                completed.contains(t.as_str()),
                "{name}: file of a failed instant left: {file}"
            );
        }
        let markers = crate::common::all_files(&hoodie.join(".temp"));
        assert!(markers.is_empty(), "{name}: markers left: {markers:?}");
    }
}

/// Waits until no heartbeat under `.hoodie/.heartbeat/` was written for `quiet` (at most a minute).
async fn heartbeats_quiet(base: &std::path::Path, quiet: std::time::Duration) {
    let dir = base.join(".hoodie/.heartbeat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let newest = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
                    .max()
            })
            .unwrap_or(None);
        let age = newest.map_or(quiet, |t| t.elapsed().unwrap_or_default());
        if age >= quiet {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a heartbeat was still written a minute after the failed invocation returned"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
