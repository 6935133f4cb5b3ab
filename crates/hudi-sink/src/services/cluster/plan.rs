//! Planning: which small files are clustered together, and the Avro plan that records it.
//!
//! The grouping follows Spark's size-based plan strategy: per partition, the small slices largest first,
//! a group closed when the next slice would push it past `max.bytes.per.group`; groups of a single slice
//! are dropped (rewriting one file alone gains nothing), and planning stops at `max.num.groups`. So every
//! group has at least two slices of one partition and at most `max.bytes.per.group` input bytes.
//!
//! One rule more than Spark's: a small slice larger than twice all the smaller ones of its partition
//! together is left as it is. Spark's writers commit rarely; this sink commits every few seconds, and without the rule
//! every inline run would rewrite the partition's whole clustered file to absorb a few new kilobytes, so the
//! bytes rewritten per commit would grow with the table until its files reach the limit. With it a file is
//! rewritten only together with at least half as many other bytes, so each byte is rewritten at most about
//! log1.5(limit / smallest file) times, whatever the table's age.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    ClusteringPlanned, PlannedGroup, EXECUTION_STRATEGY_CLASS, OPERATION_CLUSTER, PLAN_VERSION,
    WRITER_KEY, WRITER_NAME,
};
use crate::services::ServicesConfig;
use crate::table::file_name::BaseFileName;
use crate::table::instant::InstantTime;
use crate::table::records::{
    ClusteringGroup, ClusteringPlan, ClusteringStrategy, RequestedReplaceMetadata, SliceInfo,
};
use crate::table::timeline::FileSlice;
use crate::write::WriteError;

/// Spark's metric names (`FileSliceMetricUtils`): MiB figures are whole MiB, rounded down, as Spark's.
const TOTAL_IO_READ_MB: &str = "TOTAL_IO_READ_MB";
const TOTAL_IO_WRITE_MB: &str = "TOTAL_IO_WRITE_MB";
const TOTAL_IO_MB: &str = "TOTAL_IO_MB";
const TOTAL_LOG_FILES_SIZE: &str = "TOTAL_LOG_FILES_SIZE";
const TOTAL_LOG_FILES: &str = "TOTAL_LOG_FILES";
/// Newer Spark releases add the exact base-file figures, which are the informative ones for small files.
const TOTAL_BASE_FILES: &str = "TOTAL_BASE_FILES";
const TOTAL_BASE_FILE_SIZE: &str = "TOTAL_BASE_FILE_SIZE";

const MIB: u64 = 1024 * 1024;

/// The clustering groups for `slices` (latest committed slices), skipping the file groups in `excluded`
/// (partition, file id: those under a pending plan). Empty when small-file handling is off. See the module
/// doc for the rules.
pub fn plan_groups(
    slices: &[FileSlice],
    excluded: &BTreeSet<(String, String)>,
    config: &ServicesConfig,
) -> Vec<PlannedGroup> {
    let limit = config.small_file_limit;
    if limit == 0 {
        return Vec::new();
    }
    let max_groups = config.clustering_max_num_groups as usize;
    let max_bytes = config.clustering_max_bytes_per_group;
    let target = config.clustering_target_file_max_bytes.max(1);
    let mut by_partition: BTreeMap<&str, Vec<&FileSlice>> = BTreeMap::new();
    for slice in slices {
        let key = (slice.partition_path.clone(), slice.file_id.clone());
        if slice.size < limit && !excluded.contains(&key) {
            by_partition
                .entry(slice.partition_path.as_str())
                .or_default()
                .push(slice);
        }
    }
    let mut groups = Vec::new();
    let close = |current: &mut Vec<&FileSlice>, groups: &mut Vec<PlannedGroup>| {
        if current.len() >= 2 {
            let bytes: u64 = current.iter().map(|s| s.size).sum();
            groups.push(PlannedGroup {
                partition_path: current[0].partition_path.clone(),
                slices: current.iter().map(|s| (*s).clone()).collect(),
                num_output_file_groups: u32::try_from(bytes.div_ceil(target).max(1))
                    .unwrap_or(u32::MAX),
            });
        }
        current.clear();
    };
    for (_, mut small) in by_partition {
        if groups.len() >= max_groups {
            break;
        }
        small.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.file_id.cmp(&b.file_id)));
        // Bounded write amplification (module doc): the largest slices that outweigh the rest stay.
        let mut rest: u64 = small.iter().map(|s| s.size).sum();
        let keep = small
            .iter()
            .position(|s| {
                rest -= s.size;
                s.size <= rest.saturating_mul(2)
            })
            .unwrap_or(small.len());
        let small = &small[keep..];
        let mut current: Vec<&FileSlice> = Vec::new();
        let mut bytes = 0u64;
        for &slice in small {
            if !current.is_empty() && bytes.saturating_add(slice.size) > max_bytes {
                close(&mut current, &mut groups);
                bytes = 0;
            }
            current.push(slice);
            bytes = bytes.saturating_add(slice.size);
        }
        close(&mut current, &mut groups);
    }
    groups.truncate(max_groups);
    groups
}

/// Spark's plan metrics of a group of base files (no log files in copy-on-write tables):
/// `default_base_file_size` stands in for the write size of an empty file, as in Spark.
pub fn group_metrics(slices: &[FileSlice], default_base_file_size: u64) -> BTreeMap<String, f64> {
    let read: u64 = slices.iter().map(|s| s.size).sum();
    let write: u64 = slices
        .iter()
        .map(|s| {
            if s.size > 0 {
                s.size
            } else {
                default_base_file_size
            }
        })
        .sum();
    let (read_mb, write_mb) = (read / MIB, write / MIB);
    [
        (TOTAL_IO_READ_MB, read_mb as f64),
        (TOTAL_IO_WRITE_MB, write_mb as f64),
        (TOTAL_IO_MB, (read_mb + write_mb) as f64),
        (TOTAL_LOG_FILES_SIZE, 0.0),
        (TOTAL_LOG_FILES, 0.0),
        (TOTAL_BASE_FILES, slices.len() as f64),
        (TOTAL_BASE_FILE_SIZE, read as f64),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The full path of a table file, as Spark writes `dataFilePath` (base URI, then the relative path).
fn full_path(base_uri: &str, relative: &str) -> String {
    format!("{}/{relative}", base_uri.trim_end_matches('/'))
}

/// The `.replacecommit.requested` record of `planned` (Spark's layout, marked as this sink's).
pub(super) fn to_requested(
    planned: &ClusteringPlanned,
    base_uri: &str,
) -> RequestedReplaceMetadata {
    let input_groups = planned
        .groups
        .iter()
        .map(|group| ClusteringGroup {
            slices: group
                .slices
                .iter()
                .map(|slice| SliceInfo {
                    data_file_path: full_path(base_uri, &slice.path()),
                    delta_file_paths: Vec::new(),
                    file_id: slice.file_id.clone(),
                    partition_path: slice.partition_path.clone(),
                    bootstrap_file_path: String::new(),
                    version: PLAN_VERSION,
                })
                .collect(),
            metrics: group_metrics(&group.slices, planned.target_file_max_bytes),
            num_output_file_groups: i32::try_from(group.num_output_file_groups).unwrap_or(i32::MAX),
            extra_metadata: BTreeMap::new(),
            version: PLAN_VERSION,
        })
        .collect();
    RequestedReplaceMetadata {
        operation_type: OPERATION_CLUSTER.to_string(),
        clustering_plan: Some(ClusteringPlan {
            input_groups,
            strategy: Some(ClusteringStrategy {
                strategy_class_name: EXECUTION_STRATEGY_CLASS.to_string(),
                strategy_params: BTreeMap::new(),
                version: PLAN_VERSION,
            }),
            extra_metadata: BTreeMap::new(),
            version: PLAN_VERSION,
            preserve_hoodie_metadata: true,
            missing_schedule_partitions: Vec::new(),
        }),
        extra_metadata: BTreeMap::from([(WRITER_KEY.to_string(), WRITER_NAME.to_string())]),
        version: PLAN_VERSION,
    }
}

/// Whether a requested record is a clustering plan scheduled by this sink.
pub(super) fn is_this_sinks(meta: &RequestedReplaceMetadata) -> bool {
    meta.operation_type == OPERATION_CLUSTER
        && meta.extra_metadata.get(WRITER_KEY).map(String::as_str) == Some(WRITER_NAME)
}

/// (partition, file id) of every input slice of a clustering plan.
pub(super) fn plan_file_groups(meta: &RequestedReplaceMetadata) -> Vec<(String, String)> {
    meta.clustering_plan
        .iter()
        .flat_map(|plan| &plan.input_groups)
        .flat_map(|group| &group.slices)
        .map(|slice| (slice.partition_path.clone(), slice.file_id.clone()))
        .collect()
}

impl ClusteringPlanned {
    /// Rebuilds a plan from its stored `.replacecommit.requested` record (to execute it elsewhere). Slice
    /// sizes are not in the plan and read as 0.
    pub fn from_requested(
        instant: InstantTime,
        meta: &RequestedReplaceMetadata,
        target_file_max_bytes: u64,
    ) -> Result<Self, WriteError> {
        let bad = |reason: String| WriteError::Data {
            reason: format!("clustering plan {instant}: {reason}"),
        };
        let plan = match (&meta.operation_type, &meta.clustering_plan) {
            (op, Some(plan)) if op == OPERATION_CLUSTER => plan,
            (op, _) => return Err(bad(format!("not a clustering plan (operation {op:?})"))),
        };
        let mut groups = Vec::new();
        for group in &plan.input_groups {
            let mut slices = Vec::new();
            for info in &group.slices {
                let file_name = info
                    .data_file_path
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let parsed = BaseFileName::parse(&file_name)
                    .map_err(|e| bad(format!("data file {}: {e}", info.data_file_path)))?;
                if parsed.file_id != info.file_id {
                    return Err(bad(format!(
                        "data file {} is not of file group {}",
                        info.data_file_path, info.file_id
                    )));
                }
                slices.push(FileSlice {
                    partition_path: info.partition_path.clone(),
                    file_id: info.file_id.clone(),
                    base_instant: parsed.instant_time,
                    file_name,
                    size: 0,
                    log_files: Vec::new(),
                });
            }
            let Some(first) = slices.first() else {
                continue;
            };
            if slices
                .iter()
                .any(|s| s.partition_path != first.partition_path)
            {
                return Err(bad("a group spans partitions".into()));
            }
            groups.push(PlannedGroup {
                partition_path: first.partition_path.clone(),
                num_output_file_groups: u32::try_from(group.num_output_file_groups.max(1))
                    .unwrap_or(1),
                slices,
            });
        }
        Ok(Self {
            instant,
            groups,
            target_file_max_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(partition: &str, id: &str, size: u64) -> FileSlice {
        FileSlice {
            partition_path: partition.into(),
            file_id: id.into(),
            base_instant: InstantTime::parse("20240101000000001").expect("t"),
            file_name: format!("{id}_0-0-0_20240101000000001.parquet"),
            size,
            log_files: Vec::new(),
        }
    }

    fn config(limit: u64, max_group: u64, max_groups: u32) -> ServicesConfig {
        ServicesConfig {
            small_file_limit: limit,
            clustering_max_bytes_per_group: max_group,
            clustering_max_num_groups: max_groups,
            clustering_target_file_max_bytes: 250,
            ..ServicesConfig::default()
        }
    }

    fn ids(groups: &[PlannedGroup]) -> Vec<(String, Vec<String>)> {
        groups
            .iter()
            .map(|g| {
                (
                    g.partition_path.clone(),
                    g.slices.iter().map(|s| s.file_id.clone()).collect(),
                )
            })
            .collect()
    }

    fn owned(groups: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        groups
            .iter()
            .map(|(p, ids)| (p.to_string(), ids.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn only_small_files_of_one_partition_in_groups_of_two_or_more() {
        let slices = vec![
            slice("a", "a1", 30),
            slice("a", "a2", 59),
            slice("a", "a3", 100), // at the limit: not small
            slice("a", "a4", 40),
            slice("b", "b1", 5), // alone in its partition: no group
            slice("c", "c1", 20),
            slice("c", "c2", 20),
        ];
        let groups = plan_groups(&slices, &BTreeSet::new(), &config(100, 1000, 30));
        assert_eq!(
            ids(&groups),
            owned(&[("a", &["a2", "a4", "a1"]), ("c", &["c1", "c2"])])
        );
        assert_eq!(groups[0].input_bytes(), 129);
        assert_eq!(groups[0].num_output_file_groups, 1);
        // Off.
        assert!(plan_groups(&slices, &BTreeSet::new(), &config(0, 1000, 30)).is_empty());
        // Pending plans' file groups are skipped.
        let excluded = BTreeSet::from([("c".to_string(), "c2".to_string())]);
        assert_eq!(
            ids(&plan_groups(&slices, &excluded, &config(100, 1000, 30))),
            owned(&[("a", &["a2", "a4", "a1"])])
        );
    }

    #[test]
    fn a_file_is_rewritten_only_with_at_least_half_as_many_other_bytes() {
        // A clustered file of 64 and new files of 10: left alone until the new ones add up to half of it.
        let mut slices = vec![slice("p", "big", 64)];
        for i in 0..3 {
            slices.push(slice("p", &format!("n{i}"), 10));
        }
        let groups = plan_groups(&slices, &BTreeSet::new(), &config(100, 1000, 30));
        assert_eq!(ids(&groups), owned(&[("p", &["n0", "n1", "n2"])]));
        slices.push(slice("p", "n3", 10));
        let groups = plan_groups(&slices, &BTreeSet::new(), &config(100, 1000, 30));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].input_bytes(), 104, "{groups:?}");
        // Bytes rewritten over a long run of small commits stay a bounded multiple of the bytes written:
        // 400 commits of one 1-byte file each, clustered after every 4th, with a limit of 1,000.
        let mut files: Vec<(String, u64)> = Vec::new();
        let (mut written, mut rewritten) = (0u64, 0u64);
        for commit in 0..400u32 {
            files.push((format!("c{commit}"), 1));
            written += 1;
            if commit % 4 != 3 {
                continue;
            }
            let slices: Vec<FileSlice> = files
                .iter()
                .map(|(id, size)| slice("p", id, *size))
                .collect();
            for g in plan_groups(&slices, &BTreeSet::new(), &config(1_000, u64::MAX, 30)) {
                let ids: BTreeSet<&str> = g.slices.iter().map(|s| s.file_id.as_str()).collect();
                files.retain(|(id, _)| !ids.contains(id.as_str()));
                files.push((format!("x{commit}"), g.input_bytes()));
                rewritten += g.input_bytes();
            }
        }
        assert_eq!(files.iter().map(|(_, s)| s).sum::<u64>(), written);
        // Without the rule every run rewrites the whole partition: about 50 times the bytes written.
        assert!(
            rewritten <= 12 * written,
            "{rewritten} bytes rewritten for {written} written"
        );
        assert!(files.len() <= 12, "{} files: {files:?}", files.len());
    }

    #[test]
    fn group_bytes_and_group_count_are_bounded() {
        let slices: Vec<FileSlice> = [60, 50, 40, 30, 30, 30, 20, 10]
            .iter()
            .enumerate()
            .map(|(i, size)| slice("p", &format!("f{i}"), *size))
            .collect();
        let groups = plan_groups(&slices, &BTreeSet::new(), &config(100, 100, 30));
        // Largest first: [60] alone (dropped), [50, 40], [30, 30, 30], [20, 10].
        assert_eq!(
            ids(&groups),
            owned(&[
                ("p", &["f1", "f2"]),
                ("p", &["f3", "f4", "f5"]),
                ("p", &["f6", "f7"])
            ])
        );
        for g in &groups {
            assert!(g.slices.len() >= 2 && g.input_bytes() <= 100, "{g:?}");
        }
        let limited = plan_groups(&slices, &BTreeSet::new(), &config(100, 100, 2));
        assert_eq!(ids(&limited), ids(&groups[..2]));
        // The group count is bounded across partitions too.
        let mut many = slices.clone();
        many.extend(slices.iter().map(|s| FileSlice {
            partition_path: "q".into(),
            ..s.clone()
        }));
        let limited = plan_groups(&many, &BTreeSet::new(), &config(100, 100, 4));
        assert_eq!(limited.len(), 4);
        assert_eq!(limited[3].partition_path, "q");
        // Output files announced: input bytes over the target, rounded up.
        let big = plan_groups(&slices, &BTreeSet::new(), &config(100, 1000, 30));
        assert_eq!(big.len(), 1);
        assert_eq!(big[0].input_bytes(), 270);
        assert_eq!(big[0].num_output_file_groups, 2);
    }

    #[test]
    fn metrics_are_sparks() {
        let slices = vec![slice("p", "a", 3 * MIB + 5), slice("p", "b", MIB / 2)];
        let m = group_metrics(&slices, 120 * MIB);
        assert_eq!(m[TOTAL_IO_READ_MB], 3.0);
        assert_eq!(m[TOTAL_IO_WRITE_MB], 3.0);
        assert_eq!(m[TOTAL_IO_MB], 6.0);
        assert_eq!(m[TOTAL_LOG_FILES], 0.0);
        assert_eq!(m[TOTAL_LOG_FILES_SIZE], 0.0);
        assert_eq!(m[TOTAL_BASE_FILES], 2.0);
        assert_eq!(m[TOTAL_BASE_FILE_SIZE], (3 * MIB + 5 + MIB / 2) as f64);
    }

    #[test]
    fn the_plan_round_trips_and_is_marked() {
        let slices = vec![slice("p/q", "a", 30), slice("p/q", "b", 30)];
        let planned = ClusteringPlanned {
            instant: InstantTime::parse("20240101000000009").expect("t"),
            groups: plan_groups(&slices, &BTreeSet::new(), &config(100, 1000, 30)),
            target_file_max_bytes: 250,
        };
        let meta = to_requested(&planned, "s3://bucket/table/");
        assert!(is_this_sinks(&meta));
        let plan = meta.clustering_plan.as_ref().expect("plan");
        assert!(plan.preserve_hoodie_metadata);
        assert_eq!(
            plan.input_groups[0].slices[0].data_file_path,
            "s3://bucket/table/p/q/a_0-0-0_20240101000000001.parquet"
        );
        assert_eq!(
            plan_file_groups(&meta),
            vec![("p/q".into(), "a".into()), ("p/q".into(), "b".into())]
        );
        let bytes = meta.to_avro_bytes().expect("encode");
        let back = RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("decode");
        assert_eq!(back, meta);
        let rebuilt =
            ClusteringPlanned::from_requested(planned.instant.clone(), &back, 250).expect("plan");
        let sizeless: Vec<PlannedGroup> = planned
            .groups
            .iter()
            .map(|g| PlannedGroup {
                slices: g
                    .slices
                    .iter()
                    .map(|s| FileSlice {
                        size: 0,
                        ..s.clone()
                    })
                    .collect(),
                ..g.clone()
            })
            .collect();
        assert_eq!(rebuilt.groups, sizeless);
        let mut foreign = meta.clone();
        foreign.extra_metadata.clear();
        assert!(!is_this_sinks(&foreign));
        foreign.operation_type = "INSERT_OVERWRITE".into();
        assert!(ClusteringPlanned::from_requested(planned.instant, &foreign, 250).is_err());
    }
}
