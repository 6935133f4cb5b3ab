//! Table-service settings, from Hudi's own keys (`hoodie.clean.*`, `hoodie.cleaner.*`, `hoodie.keep.*`,
//! `hoodie.archive.*`, `hoodie.clustering.*`, `hoodie.parquet.small.file.limit`, `hoodie.compact.*`), so that a HoodieStreamer or
//! Spark properties file means the same here. Defaults are Hudi 0.14's, except where the doc of a field says
//! otherwise and why.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::config::{invalid, parse_bool, parse_num, ConfigError};

/// `hoodie.cleaner.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanerPolicy {
    /// Keep every slice a query of the last `commits.retained` commits may read.
    #[default]
    KeepLatestCommits,
    /// Keep every slice a query of the last `hours.retained` hours may read.
    KeepLatestByHours,
    /// Keep the newest `fileversions.retained` slices of each file group.
    KeepLatestFileVersions,
}

impl CleanerPolicy {
    /// Hudi's spelling, as written into clean plans and metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            CleanerPolicy::KeepLatestCommits => "KEEP_LATEST_COMMITS",
            CleanerPolicy::KeepLatestByHours => "KEEP_LATEST_BY_HOURS",
            CleanerPolicy::KeepLatestFileVersions => "KEEP_LATEST_FILE_VERSIONS",
        }
    }
}

impl fmt::Display for CleanerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CleanerPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "KEEP_LATEST_COMMITS" => Ok(CleanerPolicy::KeepLatestCommits),
            "KEEP_LATEST_BY_HOURS" => Ok(CleanerPolicy::KeepLatestByHours),
            "KEEP_LATEST_FILE_VERSIONS" => Ok(CleanerPolicy::KeepLatestFileVersions),
            _ => Err(
                "expected KEEP_LATEST_COMMITS, KEEP_LATEST_BY_HOURS or KEEP_LATEST_FILE_VERSIONS"
                    .into(),
            ),
        }
    }
}

/// Every table-service setting, parsed and checked once.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicesConfig {
    /// `hoodie.clean.automatic` (true): clean after commits, inline.
    pub clean_automatic: bool,
    /// `hoodie.clean.async` (false): when true, clean only in the scheduled services run, never inline.
    pub clean_async: bool,
    /// `hoodie.clean.max.commits` (1): completed commits since the last clean before an inline clean is due.
    pub clean_max_commits: u32,
    /// `hoodie.cleaner.policy`.
    pub cleaner_policy: CleanerPolicy,
    /// `hoodie.cleaner.commits.retained` (10).
    pub commits_retained: u32,
    /// `hoodie.cleaner.hours.retained` (24).
    pub hours_retained: u32,
    /// `hoodie.cleaner.fileversions.retained` (3).
    pub file_versions_retained: u32,
    /// `hoodie.cleaner.incremental.mode` (true): plan from the partitions written since the last clean.
    pub clean_incremental: bool,
    /// `hoodie.archive.automatic` (true): archive after a clean, inline.
    pub archive_automatic: bool,
    /// `hoodie.archive.async` (false): when true, archive only in the scheduled services run.
    pub archive_async: bool,
    /// `hoodie.keep.min.commits` (20).
    pub keep_min_commits: u32,
    /// `hoodie.keep.max.commits` (30).
    pub keep_max_commits: u32,
    /// `hoodie.parquet.small.file.limit` (100 MiB; 0 turns small-file handling off): base files below this
    /// size are candidates for clustering.
    pub small_file_limit: u64,
    /// `hoodie.clustering.inline` (true here, false in Hudi: a Lambda sink's batches make small files, and
    /// without clustering the files per partition grow without bound): cluster insert tables inline every
    /// `clustering_max_commits` commits. The scheduled services run clusters whenever small files exist.
    pub clustering_inline: bool,
    /// `hoodie.clustering.inline.max.commits` (4).
    pub clustering_max_commits: u32,
    /// `hoodie.clustering.plan.strategy.target.file.max.bytes` (default: `hoodie.parquet.max.file.size`).
    pub clustering_target_file_max_bytes: u64,
    /// `hoodie.clustering.plan.strategy.max.bytes.per.group` (2 GiB): input bytes of one clustering group.
    pub clustering_max_bytes_per_group: u64,
    /// `hoodie.clustering.plan.strategy.max.num.groups` (30): groups in one clustering plan.
    pub clustering_max_num_groups: u32,
    /// `hudi.sink.clustering.fan.out` (16): a small file is rewritten only in a group of at least this many
    /// times its size (or of the target size), so that each rewrite multiplies the size of the file that
    /// holds a byte by the fan-out and every byte is rewritten about log_fan.out(target / batch file) times.
    pub clustering_fan_out: u32,
    /// `hudi.sink.clustering.copy.min.row.group.bytes` (1 MiB): clustering copies an input file's row groups
    /// as they are encoded only when every one holds at least this many bytes; smaller ones are decoded and
    /// re-encoded into one large row group, so that copying never leaves the output as many tiny row groups
    /// as it had inputs (readers pay per row group). `0` copies every file it can.
    pub clustering_copy_min_row_group_bytes: u64,
    /// `hoodie.compact.inline` (true here, false in Hudi, where Spark streaming jobs run an async compactor
    /// beside the writer): compact merge-on-read tables inline, after a commit's lock is released (the merge
    /// holds no lock), once `compact_max_delta_commits` deltacommits appended to a file slice. A Lambda sink has no long-lived
    /// process for an async compactor, and without compaction every snapshot read merges an ever longer list
    /// of log files.
    pub compact_inline: bool,
    /// `hoodie.compact.inline.max.delta.commits` (5): deltacommits that append to a file slice before it is
    /// compacted (one log file each per batch, one per member under the interval commit).
    pub compact_max_delta_commits: u32,
    /// `hudi.sink.compaction.max.file.groups` (8): file groups one compaction merges, so that one merge (and
    /// its memory) stays bounded.
    pub compaction_max_file_groups: u32,
    /// `hudi.sink.compaction.merge.locked` (false): merge under the table lock, from plan to commit, as the sink
    /// did before its compactions left the lock. Only for tables that another engine's writers append to at the
    /// same time: a Java writer appends to the slice of a pending compaction, which this sink's carried logs
    /// would then follow (docs/limits.md).
    pub compaction_merge_locked: bool,
    /// `hudi.sink.services.retired.grace.ms` (1 hour): how long after a rollback a zombie writer of the
    /// rolled-back instant may still upload a file (a Lambda invocation lives at most 15 minutes). Until a
    /// sweep after this grace has removed its files, archival stays below the instant: an orphan file older
    /// than the first active instant would look committed to every reader.
    pub retired_grace: Duration,
}

impl Default for ServicesConfig {
    fn default() -> Self {
        Self {
            clean_automatic: true,
            clean_async: false,
            clean_max_commits: 1,
            cleaner_policy: CleanerPolicy::KeepLatestCommits,
            commits_retained: 10,
            hours_retained: 24,
            file_versions_retained: 3,
            clean_incremental: true,
            archive_automatic: true,
            archive_async: false,
            keep_min_commits: 20,
            keep_max_commits: 30,
            small_file_limit: 100 * 1024 * 1024,
            clustering_inline: true,
            clustering_max_commits: 4,
            clustering_target_file_max_bytes: 120 * 1024 * 1024,
            clustering_max_bytes_per_group: 2 * 1024 * 1024 * 1024,
            clustering_max_num_groups: 30,
            clustering_fan_out: 16,
            clustering_copy_min_row_group_bytes: 1024 * 1024,
            compact_inline: true,
            compact_max_delta_commits: 5,
            compaction_max_file_groups: 8,
            compaction_merge_locked: false,
            retired_grace: Duration::from_secs(3600),
        }
    }
}

/// The keys [`ServicesConfig::from_properties`] reads.
pub const KEYS: &[&str] = &[
    "hoodie.clean.automatic",
    "hoodie.clean.async",
    "hoodie.clean.async.enabled",
    "hoodie.clean.trigger.strategy",
    "hoodie.clean.max.commits",
    "hoodie.cleaner.policy",
    "hoodie.cleaner.commits.retained",
    "hoodie.cleaner.hours.retained",
    "hoodie.cleaner.fileversions.retained",
    "hoodie.cleaner.incremental.mode",
    "hoodie.cleaner.policy.failed.writes",
    "hoodie.archive.automatic",
    "hoodie.archive.async",
    "hoodie.keep.min.commits",
    "hoodie.keep.max.commits",
    "hoodie.archivelog.folder",
    "hoodie.parquet.small.file.limit",
    "hoodie.clustering.inline",
    "hoodie.clustering.inline.max.commits",
    "hoodie.clustering.plan.strategy.target.file.max.bytes",
    "hoodie.clustering.plan.strategy.max.bytes.per.group",
    "hoodie.clustering.plan.strategy.max.num.groups",
    "hoodie.clustering.plan.strategy.small.file.limit",
    "hudi.sink.clustering.fan.out",
    "hudi.sink.clustering.copy.min.row.group.bytes",
    "hoodie.compact.inline",
    "hoodie.compact.inline.max.delta.commits",
    "hudi.sink.compaction.max.file.groups",
    "hudi.sink.compaction.merge.locked",
    "hudi.sink.services.retired.grace.ms",
];

impl ServicesConfig {
    /// Reads the service keys of `properties` (other keys are ignored here); `max_file_size` is
    /// `hoodie.parquet.max.file.size`, the default clustering target.
    pub fn from_properties(
        properties: &BTreeMap<String, String>,
        max_file_size: u64,
    ) -> Result<Self, ConfigError> {
        let mut c = ServicesConfig {
            clustering_target_file_max_bytes: max_file_size,
            ..ServicesConfig::default()
        };
        let get = |k: &str| {
            properties
                .get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
        };
        if let Some(v) = get("hoodie.clean.automatic") {
            c.clean_automatic = parse_bool("hoodie.clean.automatic", v)?;
        }
        for key in ["hoodie.clean.async", "hoodie.clean.async.enabled"] {
            if let Some(v) = get(key) {
                c.clean_async = parse_bool(key, v)?;
            }
        }
        if let Some(v) = get("hoodie.clean.trigger.strategy") {
            if !v.eq_ignore_ascii_case("NUM_COMMITS") {
                return Err(invalid(
                    "hoodie.clean.trigger.strategy",
                    v,
                    "only NUM_COMMITS exists",
                ));
            }
        }
        if let Some(v) = get("hoodie.clean.max.commits") {
            c.clean_max_commits = parse_num("hoodie.clean.max.commits", v)?;
        }
        if let Some(v) = get("hoodie.cleaner.policy") {
            c.cleaner_policy = v
                .parse()
                .map_err(|reason: String| invalid("hoodie.cleaner.policy", v, reason))?;
        }
        if let Some(v) = get("hoodie.cleaner.commits.retained") {
            c.commits_retained = parse_num("hoodie.cleaner.commits.retained", v)?;
        }
        if let Some(v) = get("hoodie.cleaner.hours.retained") {
            c.hours_retained = parse_num("hoodie.cleaner.hours.retained", v)?;
        }
        if let Some(v) = get("hoodie.cleaner.fileversions.retained") {
            c.file_versions_retained = parse_num("hoodie.cleaner.fileversions.retained", v)?;
        }
        if let Some(v) = get("hoodie.cleaner.incremental.mode") {
            c.clean_incremental = parse_bool("hoodie.cleaner.incremental.mode", v)?;
        }
        if let Some(v) = get("hoodie.cleaner.policy.failed.writes") {
            // Failed writes are rolled back by heartbeat before every begin and commit (EAGER); LAZY (Hudi's
            // choice under optimistic concurrency) means the same thing here, since every writer beats.
            if !(v.eq_ignore_ascii_case("EAGER") || v.eq_ignore_ascii_case("LAZY")) {
                return Err(invalid(
                    "hoodie.cleaner.policy.failed.writes",
                    v,
                    "expected EAGER or LAZY",
                ));
            }
        }
        if let Some(v) = get("hoodie.archive.automatic") {
            c.archive_automatic = parse_bool("hoodie.archive.automatic", v)?;
        }
        if let Some(v) = get("hoodie.archive.async") {
            c.archive_async = parse_bool("hoodie.archive.async", v)?;
        }
        if let Some(v) = get("hoodie.keep.min.commits") {
            c.keep_min_commits = parse_num("hoodie.keep.min.commits", v)?;
        }
        if let Some(v) = get("hoodie.keep.max.commits") {
            c.keep_max_commits = parse_num("hoodie.keep.max.commits", v)?;
        }
        if let Some(v) = get("hoodie.parquet.small.file.limit") {
            // Hudi: a value ≤ 0 turns small-file handling off.
            let limit: i64 = parse_num("hoodie.parquet.small.file.limit", v)?;
            c.small_file_limit = limit.max(0) as u64;
        }
        if let Some(v) = get("hoodie.clustering.plan.strategy.small.file.limit") {
            let limit: i64 = parse_num("hoodie.clustering.plan.strategy.small.file.limit", v)?;
            c.small_file_limit = limit.max(0) as u64;
        }
        if let Some(v) = get("hoodie.clustering.inline") {
            c.clustering_inline = parse_bool("hoodie.clustering.inline", v)?;
        }
        if let Some(v) = get("hoodie.clustering.inline.max.commits") {
            c.clustering_max_commits = parse_num("hoodie.clustering.inline.max.commits", v)?;
        }
        if let Some(v) = get("hoodie.clustering.plan.strategy.target.file.max.bytes") {
            c.clustering_target_file_max_bytes =
                parse_num("hoodie.clustering.plan.strategy.target.file.max.bytes", v)?;
        }
        if let Some(v) = get("hoodie.clustering.plan.strategy.max.bytes.per.group") {
            c.clustering_max_bytes_per_group =
                parse_num("hoodie.clustering.plan.strategy.max.bytes.per.group", v)?;
        }
        if let Some(v) = get("hoodie.clustering.plan.strategy.max.num.groups") {
            c.clustering_max_num_groups =
                parse_num("hoodie.clustering.plan.strategy.max.num.groups", v)?;
        }
        if let Some(v) = get("hudi.sink.clustering.fan.out") {
            c.clustering_fan_out = parse_num("hudi.sink.clustering.fan.out", v)?;
        }
        if let Some(v) = get("hudi.sink.clustering.copy.min.row.group.bytes") {
            c.clustering_copy_min_row_group_bytes =
                parse_num("hudi.sink.clustering.copy.min.row.group.bytes", v)?;
        }
        if let Some(v) = get("hoodie.compact.inline") {
            c.compact_inline = parse_bool("hoodie.compact.inline", v)?;
        }
        if let Some(v) = get("hoodie.compact.inline.max.delta.commits") {
            c.compact_max_delta_commits = parse_num("hoodie.compact.inline.max.delta.commits", v)?;
        }
        if let Some(v) = get("hudi.sink.compaction.max.file.groups") {
            c.compaction_max_file_groups = parse_num("hudi.sink.compaction.max.file.groups", v)?;
        }
        if let Some(v) = get("hudi.sink.compaction.merge.locked") {
            c.compaction_merge_locked = parse_bool("hudi.sink.compaction.merge.locked", v)?;
        }
        if let Some(v) = get("hudi.sink.services.retired.grace.ms") {
            c.retired_grace =
                Duration::from_millis(parse_num("hudi.sink.services.retired.grace.ms", v)?);
        }
        c.validate()?;
        Ok(c)
    }

    /// Cross-key rules, as Hudi checks them at start-up.
    fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("hoodie.clean.max.commits", self.clean_max_commits),
            ("hoodie.cleaner.commits.retained", self.commits_retained),
            (
                "hoodie.cleaner.fileversions.retained",
                self.file_versions_retained,
            ),
            ("hoodie.keep.min.commits", self.keep_min_commits),
            (
                "hoodie.clustering.inline.max.commits",
                self.clustering_max_commits,
            ),
            (
                "hoodie.clustering.plan.strategy.max.num.groups",
                self.clustering_max_num_groups,
            ),
            (
                "hoodie.compact.inline.max.delta.commits",
                self.compact_max_delta_commits,
            ),
            ("hudi.sink.clustering.fan.out", self.clustering_fan_out),
            (
                "hudi.sink.compaction.max.file.groups",
                self.compaction_max_file_groups,
            ),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(invalid(key, "0", "must be at least 1"));
            }
        }
        if self.keep_max_commits <= self.keep_min_commits {
            return Err(ConfigError::Conflict {
                reason: format!(
                    "hoodie.keep.max.commits ({}) must be greater than hoodie.keep.min.commits ({})",
                    self.keep_max_commits, self.keep_min_commits
                ),
            });
        }
        if self.clustering_target_file_max_bytes == 0 {
            return Err(invalid(
                "hoodie.clustering.plan.strategy.target.file.max.bytes",
                "0",
                "must be positive",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_hudis() {
        let c = ServicesConfig::from_properties(&props(&[]), 120 * 1024 * 1024).expect("defaults");
        assert_eq!(c, ServicesConfig::default());
        assert_eq!(c.cleaner_policy.as_str(), "KEEP_LATEST_COMMITS");
    }

    #[test]
    fn keys_are_read_and_checked() {
        let c = ServicesConfig::from_properties(
            &props(&[
                ("hoodie.cleaner.policy", "keep_latest_file_versions"),
                ("hoodie.cleaner.fileversions.retained", "2"),
                ("hoodie.keep.min.commits", "3"),
                ("hoodie.keep.max.commits", "5"),
                ("hoodie.clean.async", "true"),
                ("hoodie.parquet.small.file.limit", "-1"),
                ("hoodie.compact.inline", "false"),
                ("hoodie.compact.inline.max.delta.commits", "2"),
                ("hudi.sink.compaction.max.file.groups", "3"),
                ("hudi.sink.compaction.merge.locked", "true"),
                ("hudi.sink.clustering.fan.out", "4"),
            ]),
            1000,
        )
        .expect("parse");
        assert!(c.compaction_merge_locked);
        assert_eq!(c.clustering_fan_out, 4);
        assert!(!ServicesConfig::default().compaction_merge_locked);
        assert_eq!(c.cleaner_policy, CleanerPolicy::KeepLatestFileVersions);
        assert_eq!(c.file_versions_retained, 2);
        assert_eq!((c.keep_min_commits, c.keep_max_commits), (3, 5));
        assert!(c.clean_async);
        assert_eq!(c.small_file_limit, 0);
        assert_eq!(c.clustering_target_file_max_bytes, 1000);
        assert!(!c.compact_inline);
        assert_eq!(
            (c.compact_max_delta_commits, c.compaction_max_file_groups),
            (2, 3)
        );
        for bad in [
            ("hoodie.cleaner.policy", "KEEP_ALL"),
            ("hoodie.keep.max.commits", "20"),
            ("hoodie.clean.automatic", "yes"),
            ("hoodie.cleaner.commits.retained", "0"),
            ("hoodie.clean.trigger.strategy", "BY_TIME"),
            ("hoodie.compact.inline.max.delta.commits", "0"),
            ("hudi.sink.compaction.max.file.groups", "0"),
            ("hudi.sink.compaction.merge.locked", "sometimes"),
            ("hudi.sink.clustering.fan.out", "0"),
        ] {
            assert!(
                ServicesConfig::from_properties(&props(&[bad]), 1000).is_err(),
                "{bad:?}"
            );
        }
    }
}
