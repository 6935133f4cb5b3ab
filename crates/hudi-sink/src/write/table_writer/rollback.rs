//! Rolling back what a failed instant wrote: its data files (named by its markers, or found by one listing
//! in the scheduled sweep of retired times), its markers and its pending timeline files
//! (docs/architecture.md, "Failures, rollback and retired instants").

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::storage::Storage;
use crate::table::file_name::BaseFileName;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::write::WriteError;

/// Rolls back a failed commit: its data files first (named by its markers: a writer writes the marker before
/// the file), then its markers, then its `.inflight` and `.commit.requested`, so that a crash half-way leaves
/// a pending instant that the next writer rolls back again. The time is retired first; a file uploaded
/// after the marker listing (a zombie writer) is removed by the scheduled sweep of retired times, and until
/// then archival stays below the time. No listing of the table: the cost follows the failed write.
pub(crate) async fn rollback_failed(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<(), WriteError> {
    // Retire the time first, so that even a rollback that stops half-way never sees its time reused.
    let retired = format!("{}{instant}", crate::table::timeline::RETIRED_DIR);
    storage.put(&retired, Bytes::new()).await?;
    let dir = format!("{}/", crate::table::file_name::marker_dir(instant));
    let markers = storage.list(&dir).await?;
    let files = files_named_by_markers(storage, instant, &markers, &BTreeSet::new()).await?;
    storage.delete_many(&files).await?;
    let mut rest: Vec<String> = markers.into_iter().map(|m| m.path).collect();
    let window = storage
        .list(&crate::table::file_name::window_dir(instant))
        .await?;
    rest.extend(window.into_iter().map(|o| o.path));
    // Both actions' pending files: the instant is a commit on copy-on-write tables, a deltacommit on
    // merge-on-read ones (absent keys cost nothing in the one request).
    for action in [Action::Commit, Action::DeltaCommit] {
        for state in [State::Inflight, State::Requested] {
            let file = Instant::new(instant.clone(), action, state).file_name();
            rest.push(format!(".hoodie/{file}"));
        }
    }
    rest.push(crate::table::file_name::heartbeat_path(instant));
    // Markers before the instant files (one request on S3; absent keys are fine).
    storage.delete_many(&rest).await?;
    tracing::info!(instant = %instant, files = files.len(), "rolled back failed instant");
    Ok(())
}

/// The data files written by `instant` that its markers among `markers` name, except those in `keep`: a base
/// file by the instant in its name, a log file by the instant in its first block's header (a marker may name
/// a log version another instant took first; see `append.rs`), whatever a damaged marker may name.
pub(crate) async fn files_named_by_markers(
    storage: &dyn Storage,
    instant: &InstantTime,
    markers: &[crate::storage::ObjectMeta],
    keep: &BTreeSet<String>,
) -> Result<Vec<String>, WriteError> {
    let mut files = Vec::new();
    for marker in markers {
        let Ok(parsed) = crate::table::file_name::Marker::parse(&marker.path) else {
            continue;
        };
        let path = parsed.data_file_path();
        if parsed.instant_time != *instant || keep.contains(&path) || files.contains(&path) {
            continue;
        }
        let ours = BaseFileName::parse(&parsed.data_file_name)
            .is_ok_and(|name| name.instant_time == *instant)
            || (crate::log_file::LogFileName::parse(&parsed.data_file_name).is_ok()
                && !crate::mutation::is_disabled(
                    crate::mutation::Mutation::RollbackDeletesLogFiles,
                )
                && log_file_written_by(storage, &path, instant).await?);
        if ours {
            files.push(path);
        }
    }
    Ok(files)
}

/// Whether the log file at `path` holds blocks of `instant` (its first block's INSTANT_TIME header). A log
/// file is named after its slice, not its writer, and a marker may name a version another writer took
/// first (see `append.rs`): only the header proves whose it is. An absent or unreadable file is not ours.
async fn log_file_written_by(
    storage: &dyn Storage,
    path: &str,
    instant: &InstantTime,
) -> Result<bool, WriteError> {
    Ok(log_file_instant(storage, path).await?.as_ref() == Some(instant))
}

/// Deletes every data file of the table written by an instant `doomed` picks, found by one listing of the
/// whole table (which also covers files whose marker was never written): base files by the instant in their
/// name, merge-on-read log files by the base instant in their name (a compaction's carried copies) or else by
/// the instant in their first block's header (a log is named after its slice, so each one is read: this runs
/// only in the scheduled sweep, while some time is retired).
pub(crate) async fn delete_data_files(
    storage: &dyn Storage,
    doomed: impl Fn(&InstantTime) -> bool,
) -> Result<(), WriteError> {
    for obj in storage.list("").await? {
        if obj.path.starts_with(".hoodie/") {
            continue;
        }
        let name = obj.path.rsplit('/').next().unwrap_or(&obj.path);
        if let Ok(parsed) = BaseFileName::parse(name) {
            if doomed(&parsed.instant_time) {
                storage.delete(&obj.path).await?;
            }
        } else if let Ok(log) = crate::log_file::LogFileName::parse(name) {
            // A log of a slice whose base instant is doomed (a compaction's carried copy) belongs to a slice
            // that never became visible; it goes without reading its header.
            if doomed(&log.base_instant) {
                storage.delete(&obj.path).await?;
            } else if let Some(instant) = log_file_instant(storage, &obj.path).await? {
                if doomed(&instant) {
                    storage.delete(&obj.path).await?;
                }
            }
        }
    }
    Ok(())
}

/// The INSTANT_TIME header of the first block of the log file at `path` (`None`: absent or unreadable).
async fn log_file_instant(
    storage: &dyn Storage,
    path: &str,
) -> Result<Option<InstantTime>, WriteError> {
    let bytes = match storage.get(path).await {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Ok(blocks) = crate::log_file::block::read_blocks(path, &bytes) else {
        tracing::warn!(path, "unreadable log file left in place");
        return Ok(None);
    };
    Ok(blocks
        .first()
        .and_then(|b| b.header.get(&crate::log_file::HeaderKey::InstantTime))
        .and_then(|t| InstantTime::parse(t).ok()))
}

pub(crate) async fn delete_markers(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<(), WriteError> {
    let prefix = format!(".hoodie/.temp/{instant}/");
    for obj in storage.list(&prefix).await? {
        storage.delete(&obj.path).await?;
    }
    Ok(())
}
