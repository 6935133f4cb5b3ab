//! The check that makes a commit whole: every file an instant names exists with exactly its stated size
//! (docs/architecture.md, "Exactly-once"). The coordinator runs it before a writer's commit, the table
//! services before theirs.

use crate::storage::{ObjectMeta, Storage};
use crate::table::commit::WriteStat;
use crate::table::instant::InstantTime;

use super::WriteError;

/// Checks that every file of `stats` exists with exactly its stated size (docs/architecture.md,
/// "Exactly-once": only whole files are committed).
pub async fn verify_files(
    storage: &dyn Storage,
    instant: &InstantTime,
    stats: &[WriteStat],
) -> Result<(), WriteError> {
    for stat in stats {
        match storage.head(&stat.path).await? {
            Some(ObjectMeta { size, .. }) if size as i64 == stat.file_size_in_bytes => {}
            found => {
                return Err(WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!(
                        "file {} of instant {instant} has size {:?}, expected {}",
                        stat.path,
                        found.map(|m| m.size),
                        stat.file_size_in_bytes
                    ),
                })
            }
        }
    }
    Ok(())
}
