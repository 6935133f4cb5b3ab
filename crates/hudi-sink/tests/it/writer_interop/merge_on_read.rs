//! Merge-on-read checks of the interop layouts: the log files' shape, and a compaction read back row-exact.

use super::*;

/// Compacts every file group with logs, then checks with hudi-rs: the snapshot is unchanged, the
/// read-optimized view (base files only) equals it, time travel to every earlier instant still reads what it
/// read; then one more upsert batch lands on the compacted slices and reads back, as of it and before it.
pub(super) async fn compact_and_check(
    writer: &TableWriter,
    layout: &Layout,
    base: &std::path::Path,
    model: &mut Model,
    history: &mut Vec<(String, Model)>,
) {
    use hudi_sink::lock::{LeaseOptions, Lock, MemoryLock};
    use hudi_sink::services::{ServiceContext, ServicesConfig};
    let storage = LocalStorage::new(base);
    let lock = MemoryLock::new("t", LeaseOptions::hudi(std::time::Duration::from_secs(60)));
    let guard = lock
        .acquire(std::time::Duration::from_secs(5))
        .await
        .expect("lock");
    let config = ServicesConfig {
        compact_max_delta_commits: 1,
        compaction_max_file_groups: 1_000,
        ..ServicesConfig::default()
    };
    let ctx = ServiceContext {
        storage: &storage,
        guard: &guard,
        clock: &SystemClock,
        config: &config,
    };
    let timeline = hudi_sink::table::timeline::Timeline::load(&storage)
        .await
        .expect("timeline");
    let report = hudi_sink::services::compact::compact(
        &ctx,
        &timeline,
        None,
        &hudi_sink::base_file::writer::BaseFileOptions::default(),
    )
    .await
    .expect("compaction")
    .expect("logs to compact");
    guard.release().await.expect("release");
    let what = |s: &str| format!("{} {s} after compaction {}", layout.name, report.instant);
    let read = read_rows(base, "hudi", &["snapshot"]);
    model.assert_matches_in(&read, None, layout.mor, &what("snapshot"));
    let read = read_rows(base, "hudi", &["read_optimized"]);
    model.assert_matches_in(&read, None, false, &what("read-optimized"));
    for (t, m) in history.iter() {
        let read = read_rows(base, "hudi", &["as_of", t]);
        m.assert_matches_in(&read, None, layout.mor, &what(&format!("as of {t}")));
    }
    // One more batch: appends to the compacted slices (updates of every stored key and new ones).
    let specs: Vec<Spec> = (0..260)
        .map(|id| Spec {
            id,
            seq: 50,
            deleted: id % 7 == 0,
        })
        .collect();
    let batch = batch_for(writer, layout, &specs, 99);
    let result = writer
        .write_with(
            WriteOperation::Upsert,
            std::slice::from_ref(&batch),
            BTreeMap::new(),
        )
        .await
        .expect("write after compaction");
    let t = result.instant.to_string();
    model.apply(layout, WriteOperation::Upsert, &batch, &specs, &t);
    let read = read_rows(base, "hudi", &["snapshot"]);
    model.assert_matches_in(
        &read,
        None,
        layout.mor,
        &what("snapshot after the next write"),
    );
    let before = history.last().map(|(t, _)| t.clone()).unwrap_or_default();
    let read = read_rows(base, "hudi", &["incremental", &before, &t]);
    model.assert_matches_in(
        &read,
        Some(&before),
        layout.mor,
        &what("incremental over the compaction"),
    );
    history.push((t, model.clone()));
    for (t, m) in history.iter() {
        let read = read_rows(base, "hudi", &["as_of", t]);
        m.assert_matches_in(
            &read,
            None,
            layout.mor,
            &what(&format!("as of {t} after the next write")),
        );
    }
}

/// A merge-on-read table's timeline holds deltacommits only, and every log file the writer appended decodes
/// with the independent reader (`tests/python/log_read.py`, fastavro) to blocks whose header instant is a
/// completed deltacommit that lists the file, whose records carry that instant and their file group id, and
/// whose record and delete counts are the ones the deltacommit's write stat states.
pub(super) fn check_log_files(base: &std::path::Path, what: &str) {
    use hudi_sink::table::commit::CommitMetadata;
    let hoodie = base.join(".hoodie");
    let mut stats = BTreeMap::new();
    for entry in std::fs::read_dir(&hoodie).expect("timeline") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        assert!(
            !name.ends_with(".commit"),
            "{what}: a commit on a merge-on-read table: {name}"
        );
        if let Some(t) = name.strip_suffix(".deltacommit") {
            let meta = CommitMetadata::from_json(&std::fs::read(hoodie.join(&name)).expect("read"))
                .expect("deltacommit metadata");
            for stat in meta.write_stats() {
                stats.insert(stat.path.clone(), (t.to_string(), stat.clone()));
            }
        }
    }
    let logs: Vec<std::path::PathBuf> = crate::common::all_files(base)
        .into_iter()
        .filter(|p| {
            !p.starts_with(&hoodie)
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".log."))
        })
        .collect();
    assert!(!logs.is_empty(), "{what}: no log files");
    let script = crate::common::workspace_root().join("tests/python/log_read.py");
    let out = std::process::Command::new(crate::common::python::python())
        .arg(&script)
        .args(&logs)
        .output()
        .expect("run log_read.py");
    assert!(
        out.status.success(),
        "{what}: log_read.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoded: Value = serde_json::from_slice(&out.stdout).expect("json");
    for file in decoded["files"].as_array().expect("files") {
        let path = std::path::PathBuf::from(file["file"].as_str().expect("file"));
        let rel = path
            .strip_prefix(base)
            .expect("in table")
            .to_string_lossy()
            .to_string();
        let (t, stat) = stats
            .get(&rel)
            .unwrap_or_else(|| panic!("{what}: log {rel} is in no deltacommit"));
        let (mut records, mut deletes) = (0, 0);
        for block in file["blocks"].as_array().expect("blocks") {
            assert_eq!(
                block["header"]["0"].as_str(),
                Some(t.as_str()),
                "{what}: {rel}"
            );
            for r in block["records"].as_array().into_iter().flatten() {
                assert_eq!(
                    r["_hoodie_commit_time"].as_str(),
                    Some(t.as_str()),
                    "{what}: {rel}"
                );
                assert_eq!(
                    r["_hoodie_file_name"].as_str(),
                    Some(stat.file_id.as_str()),
                    "{what}: {rel}"
                );
                assert_eq!(
                    r["_hoodie_partition_path"].as_str(),
                    Some(stat.partition_path.as_str()),
                    "{what}: {rel}"
                );
                records += 1;
            }
            deletes += block["deletes"].as_array().map_or(0, |d| d.len());
        }
        assert_eq!(
            (records, deletes as i64),
            (stat.num_writes, stat.num_deletes),
            "{what}: {rel}"
        );
        assert_eq!(
            stat.file_size_in_bytes as u64,
            std::fs::metadata(&path).expect("size").len()
        );
    }
}
