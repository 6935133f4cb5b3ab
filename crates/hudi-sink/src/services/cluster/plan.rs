//! Planning: which small files are clustered together, and the Avro plan that records it.
//!
//! The grouping is size-tiered. Spark's size-based plan strategy takes every small file of a partition each
//! time; Spark's writers commit rarely, but this sink commits every few seconds, and merging whatever is small
//! at each inline run rewrites a partition's growing clustered file to absorb a few new kilobytes. Here a small
//! slice of `s` bytes is rewritten only in a group of at least `fan × s` input bytes (`fan` is
//! `hudi.sink.clustering.fan.out`), and only while `fan × s` is below the target file size: each rewrite
//! multiplies the size of the file holding a byte by the fan-out, so every byte is rewritten at most
//! log_fan(target / size of the file it was first written in) times (3 at the defaults, 16 and 120 MiB, for
//! batch files above 30 KB; a file of 8 KB: 8 KB → 128 KB → 2 MB → 32 MB), and what waits per partition is
//! bounded too: under `fan` files per factor `fan` of size, from the batch file to the target. A file of at
//! least target / fan is left alone even below `hoodie.parquet.small.file.limit`: rewriting it could gain
//! less than the fan-out, and since outputs are cut at the writer's estimate of the target (taken before
//! compression), outputs of one run could otherwise be rewritten into outputs of the same size at the next.
//!
//! Per partition, the candidate slices smallest first: the longest run of them whose bytes reach the bound
//! of its largest slice is planned (the smaller ones then reach it too). It is cut into groups largest
//! first, a group closed when the next slice would push it past `max.bytes.per.group`; a group that no
//! longer reaches the bound of its largest slice (one slice alone never does with a fan-out above 1) is
//! dropped, and planning stops at `max.num.groups`. So every group has at least two slices of one partition
//! and at most `max.bytes.per.group` input bytes. Fan-out 1 is Spark's rule: every small file.

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
    let fan_out = u64::from(config.clustering_fan_out.max(1));
    // The input bytes a group needs to rewrite a slice of `size` bytes.
    let needed = |size: u64| size.saturating_mul(fan_out);
    let mut by_partition: BTreeMap<&str, Vec<&FileSlice>> = BTreeMap::new();
    for slice in slices {
        let key = (slice.partition_path.clone(), slice.file_id.clone());
        if slice.size < limit && needed(slice.size) < target && !excluded.contains(&key) {
            by_partition
                .entry(slice.partition_path.as_str())
                .or_default()
                .push(slice);
        }
    }
    let mut groups = Vec::new();
    let close = |current: &mut Vec<&FileSlice>, groups: &mut Vec<PlannedGroup>| {
        let bytes: u64 = current.iter().map(|s| s.size).sum();
        // Largest first: the first slice sets the bound of the group.
        if current.len() >= 2 && current.first().is_some_and(|s| bytes >= needed(s.size)) {
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
        // Smallest first: the longest run whose bytes reach the bound of its largest (last) slice.
        small.sort_by(|a, b| a.size.cmp(&b.size).then_with(|| a.file_id.cmp(&b.file_id)));
        let mut bytes = 0u64;
        let mut take = 0;
        for (i, slice) in small.iter().enumerate() {
            bytes = bytes.saturating_add(slice.size);
            if i >= 1 && bytes >= needed(slice.size) {
                take = i + 1;
            }
        }
        let mut chosen = small[..take].to_vec();
        chosen.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.file_id.cmp(&b.file_id)));
        let mut current: Vec<&FileSlice> = Vec::new();
        let mut bytes = 0u64;
        for slice in chosen {
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
        copy_min_row_group_bytes: u64,
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
            copy_min_row_group_bytes,
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
            clustering_fan_out: 2,
            ..ServicesConfig::default()
        }
    }

    fn fan_out(config: ServicesConfig, fan_out: u32) -> ServicesConfig {
        ServicesConfig {
            clustering_fan_out: fan_out,
            ..config
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
    fn a_file_is_rewritten_only_with_fan_out_times_its_bytes() {
        // The default fan-out: a clustered file of 160 waits while new files of 10 gather, and new files
        // are rewritten only 16 at a time.
        let default = ServicesConfig {
            clustering_target_file_max_bytes: 100_000,
            ..fan_out(config(10_000, u64::MAX, 30), 16)
        };
        assert_eq!(
            default.clustering_fan_out,
            ServicesConfig::default().clustering_fan_out
        );
        let mut slices = vec![slice("p", "big", 160)];
        for i in 0..15 {
            slices.push(slice("p", &format!("n{i:02}"), 10));
        }
        assert!(plan_groups(&slices, &BTreeSet::new(), &default).is_empty());
        slices.push(slice("p", "n15", 10));
        let groups = plan_groups(&slices, &BTreeSet::new(), &default);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].input_bytes(), 160, "{groups:?}");
        assert!(groups[0].slices.iter().all(|s| s.file_id != "big"));
        // Sixteen files of 160 and one of 170: 2,730 bytes, at least 16 × 170, so all of them.
        let mut slices = vec![slice("p", "big", 170)];
        for i in 0..15 {
            slices.push(slice("p", &format!("m{i:02}"), 160));
        }
        assert!(plan_groups(&slices, &BTreeSet::new(), &default).is_empty());
        slices.push(slice("p", "m15", 160));
        let groups = plan_groups(&slices, &BTreeSet::new(), &default);
        assert_eq!(groups[0].slices.len(), 17, "{groups:?}");
        // A file of target / fan-out or more is left alone: with a target of 250, one of 16 is, one of 15
        // is not.
        let near = fan_out(config(1_000, u64::MAX, 30), 16);
        let mut slices: Vec<FileSlice> = (0..17)
            .map(|i| slice("p", &format!("f{i:02}"), 15))
            .collect();
        slices.push(slice("p", "x", 16));
        let groups = plan_groups(&slices, &BTreeSet::new(), &near);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].slices.len(), 17, "{groups:?}");
        assert!(groups[0].slices.iter().all(|s| s.file_id != "x"));
    }

    #[test]
    fn bytes_rewritten_over_a_long_run_stay_under_three_times_the_bytes_written() {
        // 40,000 commits of one 1-byte file each, clustered after every 4th, with a limit of 1,000 and a
        // target of 16,000 at the default fan-out: a byte goes 1 → 16 → 256 → 4,096, three rewrites at
        // most. Outputs are as large as their inputs, cut at the target.
        let config = ServicesConfig {
            small_file_limit: 1_000,
            clustering_target_file_max_bytes: 16_000,
            clustering_max_bytes_per_group: u64::MAX,
            ..ServicesConfig::default()
        };
        let mut files: Vec<(String, u64)> = Vec::new();
        let (mut written, mut rewritten, mut most_small) = (0u64, 0u64, 0usize);
        for commit in 0..40_000u32 {
            files.push((format!("c{commit}"), 1));
            written += 1;
            if commit % 4 != 3 {
                continue;
            }
            let slices: Vec<FileSlice> = files
                .iter()
                .map(|(id, size)| slice("p", id, *size))
                .collect();
            for (n, g) in plan_groups(&slices, &BTreeSet::new(), &config)
                .into_iter()
                .enumerate()
            {
                let ids: BTreeSet<&str> = g.slices.iter().map(|s| s.file_id.as_str()).collect();
                files.retain(|(id, _)| !ids.contains(id.as_str()));
                let bytes = g.input_bytes();
                for (k, start) in (0..bytes).step_by(16_000).enumerate() {
                    files.push((format!("x{commit}-{n}-{k}"), (bytes - start).min(16_000)));
                }
                rewritten += bytes;
            }
            most_small = most_small.max(files.iter().filter(|(_, s)| *s < 1_000).count());
        }
        assert_eq!(files.iter().map(|(_, s)| s).sum::<u64>(), written);
        // The rule this replaced (a file rewritten with half its bytes of others) came to about 8 times.
        assert!(
            rewritten <= 3 * written,
            "{rewritten} bytes rewritten for {written} written"
        );
        assert!(rewritten >= 2 * written, "{rewritten} for {written}");
        // At most 15 waiting files per tier (1, 16, 256) and the 3 commits between runs.
        assert!(most_small <= 48, "{most_small} small files at most");
    }

    #[test]
    fn group_bytes_and_group_count_are_bounded() {
        let slices: Vec<FileSlice> = [60, 50, 40, 30, 30, 30, 20, 10]
            .iter()
            .enumerate()
            .map(|(i, size)| slice("p", &format!("f{i}"), *size))
            .collect();
        // Fan-out 1 (Spark's rule: every small file). Largest first: [60] alone (dropped), [50, 40],
        // [30, 30, 30], [20, 10].
        let spark = |c: ServicesConfig| fan_out(c, 1);
        let groups = plan_groups(&slices, &BTreeSet::new(), &spark(config(100, 100, 30)));
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
        let limited = plan_groups(&slices, &BTreeSet::new(), &spark(config(100, 100, 2)));
        assert_eq!(ids(&limited), ids(&groups[..2]));
        // Fan-out 2: a group cut by the byte limit below twice its largest slice waits.
        assert_eq!(
            ids(&plan_groups(
                &slices,
                &BTreeSet::new(),
                &config(100, 100, 30)
            )),
            owned(&[("p", &["f3", "f4", "f5"])])
        );
        // The group count is bounded across partitions too.
        let mut many = slices.clone();
        many.extend(slices.iter().map(|s| FileSlice {
            partition_path: "q".into(),
            ..s.clone()
        }));
        let limited = plan_groups(&many, &BTreeSet::new(), &spark(config(100, 100, 4)));
        assert_eq!(limited.len(), 4);
        assert_eq!(limited[3].partition_path, "q");
        // Output files announced: input bytes over the target, rounded up.
        let big = plan_groups(&slices, &BTreeSet::new(), &spark(config(100, 1000, 30)));
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
            copy_min_row_group_bytes: 0,
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
        let rebuilt = ClusteringPlanned::from_requested(planned.instant.clone(), &back, 250, 0)
            .expect("plan");
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
        assert!(ClusteringPlanned::from_requested(planned.instant, &foreign, 250, 0).is_err());
    }
}
