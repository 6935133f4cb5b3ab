//! The retention invariant: every file a query inside the cleaner's retention reads exists.

use super::*;

/// Every file a query as of a commit inside the retention reads exists: as of each completed commit at or
/// after the last clean's earliest commit to retain, the newest slice of every file group (over all commits
/// ever made, archived ones included) that no replacecommit up to it replaced.
pub(super) async fn check_retention(
    store: &Recorder,
    timeline: &Timeline,
    commits: &[(String, String, ReplaceCommitMetadata)],
    services: &ServicesConfig,
) -> Result<(), Failure> {
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    if services.cleaner_policy == hudi_sink::services::CleanerPolicy::KeepLatestFileVersions {
        // The newest `fileversions.retained` slices of every live group exist.
        let mut versions: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        // Per group, the newest slice's base instant: a log written to an older slice (while a compaction
        // merged) is superseded; the compaction's copy of it is the version queries read.
        let mut newest: BTreeMap<(String, String), String> = BTreeMap::new();
        for (_, _, meta) in commits {
            for (p, id) in meta.replaced_file_groups() {
                versions.remove(&(p.to_string(), id.to_string()));
            }
            let carried = hudi_sink::table::carried::carried_logs(&meta.commit).unwrap_or_default();
            let written = meta
                .commit
                .write_stats()
                .map(|s| (s.partition_path.clone(), s.file_id.clone(), s.path.clone()))
                .chain(carried.into_iter().filter_map(|c| {
                    log_name_of(&c.path).map(|(p, l)| (p.to_string(), l.file_id, c.path.clone()))
                }));
            for (partition, file_id, path) in written {
                let key = (partition, file_id);
                let base = match log_name_of(&path) {
                    Some((_, log)) => log.base_instant.to_string(),
                    None => base_file_instant(&path).unwrap_or_default().to_string(),
                };
                if newest.get(&key).is_some_and(|b| base < *b) {
                    continue;
                }
                newest.insert(key.clone(), base);
                versions.entry(key).or_default().push(path);
            }
        }
        let keep = services.file_versions_retained as usize;
        for paths in versions.values() {
            for path in paths.iter().rev().take(keep) {
                if store.head(path).await.map_err(|e| io(&e))?.is_none() {
                    return Err(fail(
                        "every file of a slice inside the retention exists",
                        format!("{path}, one of its group's newest {keep} versions"),
                    ));
                }
            }
        }
        return Ok(());
    }
    let ecr = match last_completed_clean(store, timeline)
        .await
        .map_err(|e| io(&e))?
    {
        Some((_, meta)) if !meta.earliest_commit_to_retain.is_empty() => {
            meta.earliest_commit_to_retain
        }
        _ => String::new(),
    };
    let completed: BTreeSet<String> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.to_string())
        .collect();
    // Per file group: the base instant of its newest slice and the newest file written to it. A log written
    // to an older slice than the group's newest (a deltacommit that completed while a compaction merged, after
    // it in time order) is the compaction's to carry: its copy, named by the compaction, is what queries read.
    let mut slices: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    let offer = |slices: &mut BTreeMap<(String, String), (String, String)>,
                 partition: &str,
                 file_id: &str,
                 path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        let base = match log_name_of(path) {
            Some((_, log)) => log.base_instant.to_string(),
            None => base_file_instant(path).unwrap_or_default().to_string(),
        };
        let key = (partition.to_string(), file_id.to_string());
        if slices.get(&key).is_none_or(|(b, _)| base >= *b) || !name.starts_with('.') {
            slices.insert(key, (base, path.to_string()));
        }
    };
    for (time, _, meta) in commits {
        for (p, id) in meta.replaced_file_groups() {
            slices.remove(&(p.to_string(), id.to_string()));
        }
        for stat in meta.commit.write_stats() {
            offer(&mut slices, &stat.partition_path, &stat.file_id, &stat.path);
        }
        for carried in hudi_sink::table::carried::carried_logs(&meta.commit).unwrap_or_default() {
            if let Some((partition, log)) = log_name_of(&carried.path) {
                offer(&mut slices, partition, &log.file_id, &carried.path);
            }
        }
        if *time < ecr || !completed.contains(time) {
            continue;
        }
        for (_, path) in slices.values() {
            if store.head(path).await.map_err(|e| io(&e))?.is_none() {
                return Err(fail(
                    "every file of a slice inside the retention exists",
                    format!("{path}, read by a query as of {time} (retention from {ecr:?})"),
                ));
            }
        }
    }
    Ok(())
}
