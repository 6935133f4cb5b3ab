//! Which partitions the catalog must hold: values from partition paths (Hudi's extractors), the partitions
//! written since the sync watermark (from commit metadata), and the full listing for a first sync.

use std::collections::BTreeSet;

use super::config::PartitionExtractor;
use super::CatalogError;
use crate::record::partition::unescape_path_name;
use crate::storage::Storage;
use crate::table::instant::{Action, InstantTime, State};
use crate::table::partition_metadata::PARTITION_METAFILE;
use crate::table::timeline::Timeline;

/// The extractor Hudi infers when none is configured: none for an unpartitioned table, else one value per
/// path part.
pub fn default_extractor(partition_fields: &[String]) -> PartitionExtractor {
    if partition_fields.is_empty() {
        PartitionExtractor::NonPartitioned
    } else {
        PartitionExtractor::MultiPartKeys
    }
}

/// The partition values of `path` (relative, as stored), one per partition field; `None` for the
/// unpartitioned root. URL-decoded only when `decode` (`hoodie.meta.sync.decode_partition`).
pub fn partition_values(
    extractor: PartitionExtractor,
    path: &str,
    fields: usize,
    decode: bool,
) -> Result<Option<Vec<String>>, CatalogError> {
    let bad = |reason: &str| CatalogError::Partition {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let after_eq = |s: &str| match s.split_once('=') {
        Some((_, v)) => v.to_string(),
        None => s.to_string(),
    };
    let values = match extractor {
        PartitionExtractor::NonPartitioned => return Ok(None),
        _ if path.is_empty() => return Ok(None),
        PartitionExtractor::MultiPartKeys => path.split('/').map(after_eq).collect::<Vec<_>>(),
        PartitionExtractor::HiveStyle => match path.split_once('=') {
            Some((_, v)) if !path.contains('/') => vec![v.to_string()],
            _ => {
                return Err(bad(
                    "HiveStylePartitionValueExtractor expects one key=value part",
                ))
            }
        },
        PartitionExtractor::SinglePart => vec![after_eq(path)],
        PartitionExtractor::SlashEncodedDay | PartitionExtractor::SlashEncodedHour => {
            let want = if extractor == PartitionExtractor::SlashEncodedDay {
                3
            } else {
                4
            };
            let parts: Vec<String> = path.split('/').map(after_eq).collect();
            if parts.len() != want {
                return Err(bad(&format!("expected {want} '/'-separated date parts")));
            }
            vec![parts.join("-")]
        }
    };
    if values.len() != fields {
        return Err(bad(&format!(
            "{} partition values for {fields} partition fields (set hoodie.datasource.hive_sync.partition_extractor_class)",
            values.len()
        )));
    }
    Ok(Some(if decode {
        values.iter().map(|v| unescape_path_name(v)).collect()
    } else {
        values
    }))
}

/// What changed in the table's partitions after the watermark.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionChanges {
    /// Partitions written by completed commits after the watermark (`""` excluded).
    pub written: BTreeSet<String>,
    /// Partitions a clean removed entirely after the watermark and no later commit wrote again.
    pub dropped: BTreeSet<String>,
    /// The latest completed commit-like instant: the new watermark.
    pub latest: Option<InstantTime>,
}

/// Whether a sync from `watermark` must list the whole table: no watermark yet, or one older than the
/// active timeline (the commits in between may have been archived, so their partitions are unknown).
pub fn needs_full_sync(timeline: &Timeline, watermark: Option<&InstantTime>) -> bool {
    match (watermark, timeline.instants().first()) {
        (None, _) => true,
        (Some(w), Some(first)) => *w < first.time,
        (Some(_), None) => false,
    }
}

/// The partitions written and dropped after `watermark`, from the commit and clean metadata on `timeline`.
/// `known` gives the written partitions of instants the caller has in hand (the commit it just made), which
/// are then not read again.
pub async fn changes_since(
    storage: &dyn Storage,
    timeline: &Timeline,
    watermark: Option<&InstantTime>,
    known: &[(InstantTime, BTreeSet<String>)],
) -> Result<PartitionChanges, CatalogError> {
    let mut changes = PartitionChanges {
        latest: timeline.latest_completed().map(|i| i.time.clone()),
        ..PartitionChanges::default()
    };
    // Per partition, the last instant that wrote it and the last clean that removed it.
    let mut last_write: std::collections::BTreeMap<String, InstantTime> = Default::default();
    let mut last_drop: std::collections::BTreeMap<String, InstantTime> = Default::default();
    for instant in timeline.instants() {
        if instant.state != State::Completed || watermark.is_some_and(|w| instant.time <= *w) {
            continue;
        }
        if instant.action.is_commit_like() {
            let partitions: BTreeSet<String> = match known.iter().find(|(t, _)| *t == instant.time)
            {
                Some((_, p)) => p.clone(),
                None => {
                    let mut p: BTreeSet<String> = timeline
                        .commit_metadata(storage, instant)
                        .await?
                        .partition_to_write_stats
                        .into_keys()
                        .collect();
                    if instant.action == Action::ReplaceCommit {
                        let replace = timeline.replace_commit_metadata(storage, instant).await?;
                        p.extend(
                            replace
                                .replaced_file_groups()
                                .map(|(part, _)| part.to_string()),
                        );
                    }
                    p
                }
            };
            for p in partitions.into_iter().filter(|p| !p.is_empty()) {
                last_write.insert(p, instant.time.clone());
            }
        } else if instant.action == Action::Clean {
            let path = format!(".hoodie/{}", instant.file_name());
            let bytes = storage.get(&path).await?;
            let meta = crate::table::records::clean::CleanMetadata::from_avro_bytes(&bytes)
                .map_err(|e| CatalogError::Partition {
                    path,
                    reason: format!("unreadable clean metadata: {e}"),
                })?;
            for (partition, pm) in &meta.partition_metadata {
                if pm.is_partition_deleted && !partition.is_empty() {
                    last_drop.insert(partition.clone(), instant.time.clone());
                }
            }
        }
    }
    for (p, t) in last_drop {
        if last_write.get(&p).is_none_or(|w| *w < t) {
            changes.dropped.insert(p);
        }
    }
    changes.written = last_write.into_keys().collect();
    changes.written.retain(|p| !changes.dropped.contains(p));
    Ok(changes)
}

/// Every partition on storage: the directories holding a `.hoodie_partition_metadata` (one listing of the whole
/// table: only for a first sync or a watermark older than the active timeline).
pub async fn all_partitions(storage: &dyn Storage) -> Result<BTreeSet<String>, CatalogError> {
    let mut out = BTreeSet::new();
    for object in storage.list("").await? {
        if crate::table::fs_view::is_non_data_path(&object.path) {
            continue;
        }
        let (dir, name) = match object.path.rsplit_once('/') {
            Some((d, n)) => (d, n),
            None => ("", object.path.as_str()),
        };
        if name.starts_with(PARTITION_METAFILE) && !name.ends_with(".tmp") {
            out.insert(dir.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(e: PartitionExtractor, path: &str, n: usize) -> Result<Option<Vec<String>>, CatalogError> {
        partition_values(e, path, n, false)
    }

    #[test]
    fn extractors_read_values_as_hudi_does() {
        use PartitionExtractor::*;
        assert_eq!(
            v(MultiPartKeys, "city=sf/dt=2024-01-01", 2)
                .unwrap()
                .unwrap(),
            ["sf", "2024-01-01"]
        );
        assert_eq!(
            v(MultiPartKeys, "sf/2024", 2).unwrap().unwrap(),
            ["sf", "2024"]
        );
        assert_eq!(v(MultiPartKeys, "", 0).unwrap(), None);
        assert_eq!(v(NonPartitioned, "anything", 1).unwrap(), None);
        assert_eq!(v(HiveStyle, "city=a=b", 1).unwrap().unwrap(), ["a=b"]);
        assert!(v(HiveStyle, "city", 1).is_err());
        assert_eq!(
            v(SinglePart, "2024/01/02", 1).unwrap().unwrap(),
            ["2024/01/02"]
        );
        assert_eq!(
            v(SlashEncodedDay, "2024/01/02", 1).unwrap().unwrap(),
            ["2024-01-02"]
        );
        assert_eq!(
            v(SlashEncodedHour, "2024/01/02/03", 1).unwrap().unwrap(),
            ["2024-01-02-03"]
        );
        assert!(v(SlashEncodedDay, "2024/01", 1).is_err());
        let err = v(MultiPartKeys, "2024/01/02", 1).unwrap_err().to_string();
        assert!(err.contains("partition_extractor_class"), "{err}");
    }

    #[test]
    fn url_encoded_values_stay_encoded_unless_decoding_is_asked() {
        let path = "city=S%2FF%20x/dt=2024%3A01";
        let raw = partition_values(PartitionExtractor::MultiPartKeys, path, 2, false).unwrap();
        assert_eq!(raw.unwrap(), ["S%2FF%20x", "2024%3A01"]);
        let decoded = partition_values(PartitionExtractor::MultiPartKeys, path, 2, true).unwrap();
        assert_eq!(decoded.unwrap(), ["S/F x", "2024:01"]);
        assert_eq!(unescape_path_name("100%"), "100%");
        assert_eq!(unescape_path_name("%zz%4"), "%zz%4");
        assert_eq!(unescape_path_name("%C3%A9"), "é");
    }

    #[test]
    fn full_sync_when_the_watermark_is_missing_or_archived() {
        use crate::table::instant::Instant;
        let t = |s: &str| InstantTime::parse(s).unwrap();
        let timeline = Timeline::from_instants([
            Instant::new(t("20240101000000100"), Action::Commit, State::Completed),
            Instant::new(t("20240101000000200"), Action::Commit, State::Completed),
        ]);
        assert!(needs_full_sync(&timeline, None));
        assert!(needs_full_sync(&timeline, Some(&t("20240101000000050"))));
        assert!(!needs_full_sync(&timeline, Some(&t("20240101000000100"))));
        assert!(!needs_full_sync(&timeline, Some(&t("20240101000000200"))));
    }
}
