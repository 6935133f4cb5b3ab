//! Logs a compaction carries into the slices it makes (`extraMetadata["hudi.sink.compaction.carried"]` of a
//! compaction commit; docs/architecture.md, "Compaction").
//!
//! A compaction merges its file groups outside the table lock, so deltacommits keep appending logs to the
//! slices it replaces. On table version 6 a log belongs to the slice its name says, and the compaction's new
//! base file supersedes the old slice: such a log would vanish. The compaction therefore copies each of them
//! (byte for byte: the block headers keep the deltacommit's instant) into its own new slice before it
//! completes, and its commit names the copies here, because no deltacommit's write stat names them.
//! Readers that list (Spark, hudi-rs) find the copies by name and read their blocks as committed; this
//! sink's file-system view finds them here.

use serde::{Deserialize, Serialize};

use super::commit::CommitMetadata;
use super::instant::InstantTime;

/// The `extraMetadata` key of a compaction commit that lists its carried logs (JSON array).
pub const CARRIED_KEY: &str = "hudi.sink.compaction.carried";

/// One log a compaction copied into its new slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedLog {
    /// Table-relative path of the copy (a log of the compaction's slice).
    pub path: String,
    /// Table-relative path of the log it copies (a log of the replaced slice).
    pub from: String,
    /// Size in bytes (both files).
    pub size: u64,
    /// The deltacommit whose blocks it holds.
    pub instant: String,
}

/// Stores `carried` in `meta` (nothing when empty).
pub fn set_carried(
    meta: &mut CommitMetadata,
    carried: &[CarriedLog],
) -> Result<(), serde_json::Error> {
    if !carried.is_empty() {
        meta.extra_metadata
            .insert(CARRIED_KEY.to_string(), serde_json::to_string(carried)?);
    }
    Ok(())
}

/// The logs a compaction commit carried: none when it carries none (or another engine wrote it). A list
/// that does not parse is an error: it names committed data.
pub fn carried_logs(meta: &CommitMetadata) -> Result<Vec<CarriedLog>, serde_json::Error> {
    match meta.extra_metadata.get(CARRIED_KEY) {
        Some(text) => serde_json::from_str(text),
        None => Ok(Vec::new()),
    }
}

/// The time as of which a carried log holds committed data: the later of the compaction (its slice) and
/// the deltacommit that wrote its blocks.
pub fn visible_from(compaction: &InstantTime, log: &CarriedLog) -> InstantTime {
    match InstantTime::parse(&log.instant) {
        Ok(t) if t > *compaction => t,
        _ => compaction.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::commit::OperationType;

    #[test]
    fn carried_logs_round_trip_through_the_commit_metadata() {
        let mut meta = CommitMetadata::new(OperationType::Compact);
        assert_eq!(carried_logs(&meta).ok(), Some(Vec::new()));
        let log = CarriedLog {
            path: "p/.g_20250101000002000.log.1_0-7-0".into(),
            from: "p/.g_20250101000000000.log.3_0-7-0".into(),
            size: 120,
            instant: "20250101000003000".into(),
        };
        assert!(set_carried(&mut meta, std::slice::from_ref(&log)).is_ok());
        let parsed = CommitMetadata::from_json(&meta.to_json_pretty().unwrap_or_default());
        assert_eq!(
            parsed.ok().and_then(|m| carried_logs(&m).ok()),
            Some(vec![log.clone()])
        );
        let c = InstantTime::parse("20250101000002000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(visible_from(&c, &log).to_string(), "20250101000003000");
        let older = CarriedLog {
            instant: "20250101000001000".into(),
            ..log
        };
        assert_eq!(visible_from(&c, &older), c);
    }
}
