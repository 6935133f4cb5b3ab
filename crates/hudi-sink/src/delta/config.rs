//! The mirror's settings, and the Delta retention derived from Hudi's cleaner settings.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::DEFAULT_COMMIT_INTERVAL;
use crate::config::{parse_bool, parse_num, ConfigError};
use crate::services::config::{CleanerPolicy, ServicesConfig};

/// `hudi.sink.delta.mirror`: mirror every commit into a Delta Lake log under the table's base path.
pub const MIRROR_KEY: &str = "hudi.sink.delta.mirror";

/// The keys this module reads.
pub const KEYS: &[&str] = &[MIRROR_KEY];

/// `hudi.sink.commit.interval.ms`, read here for the retention (the sink's config owns it).
const COMMIT_INTERVAL_KEY: &str = "hudi.sink.commit.interval.ms";

/// The mirror's settings; `None` from [`DeltaConfig::from_properties`] means the mirror is off (the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaConfig {
    /// The table's base path (`hoodie.base.path`), where `_delta_log/` goes.
    pub base_path: String,
    /// How long Hudi's cleaner keeps a replaced base file at least ([`retention`]): the Delta table's
    /// `delta.deletedFileRetentionDuration` and `delta.logRetentionDuration`.
    pub retention: Duration,
}

impl DeltaConfig {
    /// The mirror settings of a properties file, or `None` when `hudi.sink.delta.mirror` is not `true`.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
        base_path: &str,
    ) -> Result<Option<Self>, ConfigError> {
        let enabled = match props.get(MIRROR_KEY) {
            Some(value) => parse_bool(MIRROR_KEY, value)?,
            None => false,
        };
        if !enabled {
            return Ok(None);
        }
        // The clustering target (the second argument) plays no part in the retention.
        let services = ServicesConfig::from_properties(props, u64::MAX)?;
        let interval = match props.get(COMMIT_INTERVAL_KEY).map(|v| v.trim()) {
            Some(v) if !v.is_empty() => Duration::from_millis(parse_num(COMMIT_INTERVAL_KEY, v)?),
            _ => DEFAULT_COMMIT_INTERVAL,
        };
        Ok(Some(Self {
            base_path: base_path.to_string(),
            retention: retention(&services, interval),
        }))
    }

    /// A mirror of the table at `base_path` with Hudi's default cleaner settings and commit interval.
    pub fn with_defaults(base_path: &str) -> Self {
        Self {
            base_path: base_path.to_string(),
            retention: retention(&ServicesConfig::default(), DEFAULT_COMMIT_INTERVAL),
        }
    }

    /// The retention as a Delta interval (`interval <n> seconds`, rounded up to whole seconds).
    pub fn retention_interval(&self) -> String {
        interval_text(self.retention)
    }
}

/// The time Hudi's cleaner keeps a base file after a later commit replaced it, at least, with one commit per
/// `interval` at most (the sink's commit interval):
/// - `KEEP_LATEST_BY_HOURS`: `hoodie.cleaner.hours.retained` hours;
/// - `KEEP_LATEST_COMMITS`: `hoodie.cleaner.commits.retained` × `interval` (the file is deleted once that
///   many commits followed the one that replaced it);
/// - `KEEP_LATEST_FILE_VERSIONS`: `hoodie.cleaner.fileversions.retained` × `interval` (as many newer
///   versions of its file group, one per commit at most).
pub fn retention(services: &ServicesConfig, interval: Duration) -> Duration {
    match services.cleaner_policy {
        CleanerPolicy::KeepLatestByHours => {
            Duration::from_secs(u64::from(services.hours_retained) * 3600)
        }
        CleanerPolicy::KeepLatestCommits => interval * services.commits_retained,
        CleanerPolicy::KeepLatestFileVersions => interval * services.file_versions_retained,
    }
}

/// `interval <n> seconds`, `n` rounded up.
pub fn interval_text(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    format!("interval {secs} seconds")
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
    fn off_by_default_on_with_true_and_bad_values_named() {
        assert_eq!(
            DeltaConfig::from_properties(&props(&[]), "/t").unwrap(),
            None
        );
        assert_eq!(
            DeltaConfig::from_properties(&props(&[(MIRROR_KEY, "false")]), "/t").unwrap(),
            None
        );
        assert_eq!(
            DeltaConfig::from_properties(&props(&[(MIRROR_KEY, "true")]), "/t").unwrap(),
            Some(DeltaConfig::with_defaults("/t"))
        );
        let err =
            DeltaConfig::from_properties(&props(&[(MIRROR_KEY, "yes please")]), "/t").unwrap_err();
        assert!(err.to_string().contains(MIRROR_KEY), "{err}");
    }

    #[test]
    fn retention_covers_each_cleaner_policy() {
        let of = |pairs: &[(&str, &str)]| {
            let mut all = vec![(MIRROR_KEY, "true")];
            all.extend_from_slice(pairs);
            DeltaConfig::from_properties(&props(&all), "/t")
                .unwrap()
                .unwrap()
                .retention_interval()
        };
        // Hudi's defaults: 10 commits at one per 5 s.
        assert_eq!(of(&[]), "interval 50 seconds");
        assert_eq!(
            of(&[
                ("hoodie.cleaner.commits.retained", "3"),
                (COMMIT_INTERVAL_KEY, "60000")
            ]),
            "interval 180 seconds"
        );
        assert_eq!(
            of(&[
                ("hoodie.cleaner.policy", "KEEP_LATEST_BY_HOURS"),
                ("hoodie.cleaner.hours.retained", "36")
            ]),
            "interval 129600 seconds"
        );
        assert_eq!(
            of(&[
                ("hoodie.cleaner.policy", "KEEP_LATEST_FILE_VERSIONS"),
                ("hoodie.cleaner.fileversions.retained", "4"),
                (COMMIT_INTERVAL_KEY, "1500")
            ]),
            "interval 6 seconds"
        );
        assert_eq!(of(&[(COMMIT_INTERVAL_KEY, "0")]), "interval 0 seconds");
        assert_eq!(
            interval_text(Duration::from_millis(1001)),
            "interval 2 seconds"
        );
    }
}
