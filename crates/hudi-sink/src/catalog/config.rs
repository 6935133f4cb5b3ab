//! Catalog-sync settings from Hudi's own keys, so that a HoodieStreamer, Spark or Kafka Connect properties file
//! that syncs the AWS Glue Data Catalog does the same here. Defaults are those of Hudi's sync tool (0.14/0.15).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::{parse_bool, ConfigError};

/// The Glue sync tool class, as Hudi spells it since 0.11.
pub const GLUE_SYNC_TOOL: &str = "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool";
/// The pre-0.11 spelling, still accepted.
const GLUE_SYNC_TOOL_OLD: &str = "org.apache.hudi.aws.sync.AWSGlueCatalogSyncTool";
/// Hudi's default sync tool (a Hive metastore, which a Lambda does not have).
const HIVE_SYNC_TOOL: &str = "org.apache.hudi.hive.HiveSyncTool";

/// `hudi.sink.catalog.sync.timeout.ms`: the deadline of one whole sync after a commit.
pub const SYNC_TIMEOUT_KEY: &str = "hudi.sink.catalog.sync.timeout.ms";
/// `hudi.sink.catalog.sync.backoff.ms`: after a failed sync, commits skip the sync for this long.
pub const SYNC_BACKOFF_KEY: &str = "hudi.sink.catalog.sync.backoff.ms";

/// `hudi.sink.catalog.delta.table`: the Glue table of the Delta mirror's view (default `<table>_delta`),
/// registered beside the Hudi table when the Delta mirror (`hudi.sink.delta.mirror`) is on.
pub const DELTA_TABLE_KEY: &str = "hudi.sink.catalog.delta.table";

/// The keys this module reads.
pub const KEYS: &[&str] = &[
    "hoodie.datasource.meta.sync.enable",
    "hoodie.meta.sync.enable",
    "hoodie.datasource.hive_sync.enable",
    "hoodie.meta.sync.client.tool.class",
    "hoodie.meta.sync.classes",
    "hoodie.datasource.hive_sync.database",
    "hoodie.datasource.hive_sync.table",
    "hoodie.datasource.meta.sync.glue.database_name",
    "hoodie.datasource.meta.sync.glue.table_name",
    "hoodie.datasource.hive_sync.partition_fields",
    "hoodie.datasource.hive_sync.partition_extractor_class",
    "hoodie.datasource.hive_sync.support_timestamp",
    "hoodie.datasource.hive_sync.auto_create_database",
    "hoodie.datasource.hive_sync.table_properties",
    "hoodie.datasource.hive_sync.serde_properties",
    "hoodie.datasource.hive_sync.sync_as_datasource",
    "hoodie.datasource.hive_sync.schema_string_length_thresh",
    "hoodie.datasource.hive_sync.omit_metadata_fields",
    "hoodie.datasource.hive_sync.create_managed_table",
    "hoodie.datasource.hive_sync.skip_ro_suffix",
    "hoodie.datasource.hive_sync.base_file_format",
    "hoodie.datasource.meta_sync.condition.sync",
    "hoodie.meta.sync.decode_partition",
    "hoodie.datasource.meta.sync.glue.skip_table_archive",
    "hoodie.datasource.meta.sync.glue.metadata_file_listing",
    "hoodie.aws.glue.endpoint",
    "hoodie.aws.glue.region",
    SYNC_TIMEOUT_KEY,
    SYNC_BACKOFF_KEY,
    DELTA_TABLE_KEY,
];

/// How partition values are read from a partition path (`hoodie.datasource.hive_sync.partition_extractor_class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionExtractor {
    /// `MultiPartKeysValueExtractor`: one value per `/`-separated part, the text after `=` when there is one.
    MultiPartKeys,
    /// `NonPartitionedExtractor`: no partitions.
    NonPartitioned,
    /// `HiveStylePartitionValueExtractor`: one `key=value` part.
    HiveStyle,
    /// `SinglePartPartitionValueExtractor`: the whole path is one value (text after `=` when there is one).
    SinglePart,
    /// `SlashEncodedDayPartitionValueExtractor`: `yyyy/mm/dd` becomes one value `yyyy-mm-dd`.
    SlashEncodedDay,
    /// `SlashEncodedHourPartitionValueExtractor`: `yyyy/mm/dd/hh` becomes one value `yyyy-mm-dd-hh`.
    SlashEncodedHour,
}

impl PartitionExtractor {
    fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        let simple = value.trim().rsplit('.').next().unwrap_or_default();
        Ok(match simple {
            "MultiPartKeysValueExtractor" => Self::MultiPartKeys,
            "NonPartitionedExtractor" => Self::NonPartitioned,
            "HiveStylePartitionValueExtractor" => Self::HiveStyle,
            "SinglePartPartitionValueExtractor" => Self::SinglePart,
            "SlashEncodedDayPartitionValueExtractor" => Self::SlashEncodedDay,
            "SlashEncodedHourPartitionValueExtractor" => Self::SlashEncodedHour,
            _ => {
                return Err(ConfigError::Invalid {
                    key: key.into(),
                    value: value.into(),
                    reason: "expected one of Hudi's extractors: MultiPartKeysValueExtractor, \
                             NonPartitionedExtractor, HiveStylePartitionValueExtractor, \
                             SinglePartPartitionValueExtractor, SlashEncodedDayPartitionValueExtractor, \
                             SlashEncodedHourPartitionValueExtractor"
                        .into(),
                })
            }
        })
    }
}

/// Every catalog-sync setting, parsed and checked once. `None` from [`CatalogConfig::from_properties`] means
/// the sync is off.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogConfig {
    /// Glue database (`hoodie.datasource.hive_sync.database`, default `default`), lower case as Glue stores it.
    pub database: String,
    /// Glue table (`hoodie.datasource.hive_sync.table`, default `hoodie.table.name`), lower case; a
    /// merge-on-read table registers `<table>_ro` and `<table>_rt`.
    pub table: String,
    /// Partition columns; `None` means the table's own partition fields.
    pub partition_fields: Option<Vec<String>>,
    /// Partition value extractor; `None` means inferred from the partition fields.
    pub extractor: Option<PartitionExtractor>,
    /// `support_timestamp` (false): timestamp columns as Glue `timestamp` instead of `bigint`.
    pub support_timestamp: bool,
    /// `auto_create_database` (true).
    pub auto_create_database: bool,
    /// `sync_as_datasource` (true): the `spark.sql.sources.*` parameters and the serde `path`.
    pub sync_as_datasource: bool,
    /// `schema_string_length_thresh` (4000): the length of each `spark.sql.sources.schema.part.N`.
    pub schema_part_length: usize,
    /// `omit_metadata_fields` (false).
    pub omit_metadata_fields: bool,
    /// `create_managed_table` (false): without it the table parameter `EXTERNAL=TRUE` is set.
    pub create_managed_table: bool,
    /// `skip_ro_suffix` (false): a merge-on-read table's read-optimized table keeps the plain name.
    pub skip_ro_suffix: bool,
    /// `hoodie.datasource.meta_sync.condition.sync` (false): update the watermark only when the table or its
    /// partitions changed.
    pub condition_sync: bool,
    /// `hoodie.meta.sync.decode_partition` (false): URL-decode partition values.
    pub decode_partition: bool,
    /// `hoodie.datasource.meta.sync.glue.skip_table_archive` (true): Glue keeps no table version per update.
    pub skip_table_archive: bool,
    /// `hoodie.datasource.hive_sync.table_properties`: `k=v` lines added to the table parameters.
    pub table_properties: BTreeMap<String, String>,
    /// `hoodie.datasource.hive_sync.serde_properties`: `k=v` lines added to the serde parameters.
    pub serde_properties: BTreeMap<String, String>,
    /// `hoodie.aws.glue.endpoint`: the Glue endpoint (otherwise the standard AWS settings decide).
    pub endpoint: Option<String>,
    /// `hoodie.aws.glue.region`.
    pub region: Option<String>,
    /// `hudi.sink.catalog.sync.timeout.ms` (10 s): the deadline of one sync.
    pub timeout: Duration,
    /// `hudi.sink.catalog.sync.backoff.ms` (60 s): how long commits skip the sync after a failure.
    pub backoff: Duration,
    /// `hudi.sink.catalog.delta.table` (`<table>_delta`), lower case: the Glue table of the Delta view.
    pub delta_table: String,
    /// Whether the Delta view is registered: set by the caller that knows the Delta mirror is on (the mirror
    /// sits above the catalog), never by [`CatalogConfig::from_properties`].
    pub delta_view: bool,
}

impl CatalogConfig {
    /// The sync settings, or `None` when no key turns the Glue sync on. A sync switched on for another tool
    /// (a Hive metastore) is an error: a Lambda has no metastore to reach, and ignoring it would leave the
    /// user's catalog silently stale.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Option<Self>, ConfigError> {
        let get = |k: &str| props.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let flag = |k: &str, default: bool| -> Result<bool, ConfigError> {
            get(k).map_or(Ok(default), |v| parse_bool(k, v))
        };
        let enabled = flag("hoodie.datasource.meta.sync.enable", false)?
            || flag("hoodie.meta.sync.enable", false)?
            || flag("hoodie.datasource.hive_sync.enable", false)?;
        let (tool_key, tools) = match (
            get("hoodie.meta.sync.client.tool.class"),
            get("hoodie.meta.sync.classes"),
        ) {
            (Some(t), _) => ("hoodie.meta.sync.client.tool.class", t),
            (None, Some(t)) => ("hoodie.meta.sync.classes", t),
            (None, None) => ("hoodie.meta.sync.client.tool.class", HIVE_SYNC_TOOL),
        };
        if !enabled {
            return Ok(None);
        }
        let tools: Vec<&str> = tools
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        if let Some(other) = tools
            .iter()
            .find(|t| **t != GLUE_SYNC_TOOL && **t != GLUE_SYNC_TOOL_OLD)
        {
            return Err(ConfigError::Invalid {
                key: tool_key.into(),
                value: other.to_string(),
                reason: format!(
                    "the sink syncs only the AWS Glue Data Catalog; set {tool_key}={GLUE_SYNC_TOOL}"
                ),
            });
        }
        let table_name = get("hoodie.table.name").ok_or(ConfigError::Missing {
            key: "hoodie.table.name",
        })?;
        let database = get("hoodie.datasource.meta.sync.glue.database_name")
            .or(get("hoodie.datasource.hive_sync.database"))
            .unwrap_or("default");
        let table = get("hoodie.datasource.meta.sync.glue.table_name")
            .or(get("hoodie.datasource.hive_sync.table"))
            .unwrap_or(table_name);
        let default_delta_table = format!("{table}_delta");
        let delta_table = get(DELTA_TABLE_KEY).unwrap_or(&default_delta_table);
        for (key, name) in [
            ("hoodie.datasource.hive_sync.database", database),
            ("hoodie.datasource.hive_sync.table", table),
            (DELTA_TABLE_KEY, delta_table),
        ] {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(ConfigError::Invalid {
                    key: key.to_string(),
                    value: name.into(),
                    reason: "Glue names are letters, digits, '_' and '-'".into(),
                });
            }
        }
        if flag(
            "hoodie.datasource.meta.sync.glue.metadata_file_listing",
            false,
        )? {
            return Err(ConfigError::Invalid {
                key: "hoodie.datasource.meta.sync.glue.metadata_file_listing".into(),
                value: "true".into(),
                reason: "the sink writes no metadata table, so readers must list files".into(),
            });
        }
        if let Some(format) = get("hoodie.datasource.hive_sync.base_file_format") {
            if !format.eq_ignore_ascii_case("PARQUET") {
                return Err(ConfigError::Invalid {
                    key: "hoodie.datasource.hive_sync.base_file_format".into(),
                    value: format.into(),
                    reason: "the sink writes Parquet base files".into(),
                });
            }
        }
        let partition_fields = get("hoodie.datasource.hive_sync.partition_fields").map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        });
        let extractor = get("hoodie.datasource.hive_sync.partition_extractor_class")
            .map(|v| {
                PartitionExtractor::parse(
                    "hoodie.datasource.hive_sync.partition_extractor_class",
                    v,
                )
            })
            .transpose()?;
        let ms = |key: &str, default: u64| -> Result<Duration, ConfigError> {
            match get(key) {
                None => Ok(Duration::from_millis(default)),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| ConfigError::Invalid {
                        key: key.into(),
                        value: v.into(),
                        reason: "expected a positive number of milliseconds".into(),
                    }),
            }
        };
        let schema_part_length =
            match get("hoodie.datasource.hive_sync.schema_string_length_thresh") {
                None => 4000,
                Some(v) => v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    ConfigError::Invalid {
                        key: "hoodie.datasource.hive_sync.schema_string_length_thresh".into(),
                        value: v.into(),
                        reason: "expected a positive length".into(),
                    }
                })?,
            };
        Ok(Some(Self {
            database: database.to_ascii_lowercase(),
            table: table.to_ascii_lowercase(),
            partition_fields,
            extractor,
            support_timestamp: flag("hoodie.datasource.hive_sync.support_timestamp", false)?,
            auto_create_database: flag("hoodie.datasource.hive_sync.auto_create_database", true)?,
            sync_as_datasource: flag("hoodie.datasource.hive_sync.sync_as_datasource", true)?,
            schema_part_length,
            omit_metadata_fields: flag("hoodie.datasource.hive_sync.omit_metadata_fields", false)?,
            create_managed_table: flag("hoodie.datasource.hive_sync.create_managed_table", false)?,
            skip_ro_suffix: flag("hoodie.datasource.hive_sync.skip_ro_suffix", false)?,
            condition_sync: flag("hoodie.datasource.meta_sync.condition.sync", false)?,
            decode_partition: flag("hoodie.meta.sync.decode_partition", false)?,
            skip_table_archive: flag("hoodie.datasource.meta.sync.glue.skip_table_archive", true)?,
            table_properties: key_values(props, "hoodie.datasource.hive_sync.table_properties")?,
            serde_properties: key_values(props, "hoodie.datasource.hive_sync.serde_properties")?,
            endpoint: get("hoodie.aws.glue.endpoint").map(String::from),
            region: get("hoodie.aws.glue.region").map(String::from),
            timeout: ms(SYNC_TIMEOUT_KEY, 10_000)?,
            backoff: ms(SYNC_BACKOFF_KEY, 60_000)?,
            delta_table: delta_table.to_ascii_lowercase(),
            delta_view: false,
        }))
    }
}

/// `k=v` lines (Hudi's format for the table and serde property keys).
fn key_values(
    props: &BTreeMap<String, String>,
    key: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    let Some(value) = props.get(key) else {
        return Ok(out);
    };
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => {
                return Err(ConfigError::Invalid {
                    key: key.into(),
                    value: line.into(),
                    reason: "expected k=v lines".into(),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut p: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        p.entry("hoodie.table.name".into())
            .or_insert("Trips".into());
        p
    }

    #[test]
    fn off_unless_a_key_turns_it_on() {
        assert_eq!(CatalogConfig::from_properties(&props(&[])).unwrap(), None);
        let p = props(&[("hoodie.meta.sync.client.tool.class", GLUE_SYNC_TOOL)]);
        assert_eq!(CatalogConfig::from_properties(&p).unwrap(), None);
    }

    #[test]
    fn every_enable_spelling_with_the_glue_tool() {
        for (enable, tool) in [
            (
                "hoodie.datasource.meta.sync.enable",
                "hoodie.meta.sync.client.tool.class",
            ),
            ("hoodie.meta.sync.enable", "hoodie.meta.sync.classes"),
            (
                "hoodie.datasource.hive_sync.enable",
                "hoodie.meta.sync.client.tool.class",
            ),
        ] {
            for class in [GLUE_SYNC_TOOL, GLUE_SYNC_TOOL_OLD] {
                let c = CatalogConfig::from_properties(&props(&[(enable, "true"), (tool, class)]))
                    .unwrap()
                    .unwrap();
                assert_eq!(c.database, "default");
                assert_eq!(c.table, "trips", "lower case, as Glue stores names");
                assert!(c.skip_table_archive && c.auto_create_database && c.sync_as_datasource);
                assert!(!c.support_timestamp && !c.condition_sync);
                assert_eq!(c.schema_part_length, 4000);
            }
        }
    }

    #[test]
    fn a_hive_metastore_sync_is_refused_with_the_fix() {
        let err = CatalogConfig::from_properties(&props(&[("hoodie.meta.sync.enable", "true")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(GLUE_SYNC_TOOL), "{err}");
        let err = CatalogConfig::from_properties(&props(&[
            ("hoodie.meta.sync.enable", "true"),
            (
                "hoodie.meta.sync.classes",
                "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool,org.apache.hudi.hive.HiveSyncTool",
            ),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("HiveSyncTool"), "{err}");
    }

    #[test]
    fn names_properties_and_overrides() {
        let c = CatalogConfig::from_properties(&props(&[
            ("hoodie.datasource.meta.sync.enable", "true"),
            ("hoodie.meta.sync.client.tool.class", GLUE_SYNC_TOOL),
            ("hoodie.datasource.hive_sync.database", "Lake"),
            ("hoodie.datasource.hive_sync.table", "t1"),
            ("hoodie.datasource.meta.sync.glue.table_name", "t2"),
            (
                "hoodie.datasource.hive_sync.table_properties",
                "a=1\n b = x=y \n",
            ),
            ("hoodie.datasource.hive_sync.serde_properties", "s=2"),
            ("hoodie.datasource.hive_sync.partition_fields", "dt, hr"),
            (
                "hoodie.datasource.hive_sync.partition_extractor_class",
                "org.apache.hudi.hive.SlashEncodedDayPartitionValueExtractor",
            ),
            ("hoodie.datasource.hive_sync.support_timestamp", "TRUE"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((c.database.as_str(), c.table.as_str()), ("lake", "t2"));
        assert_eq!(c.table_properties.get("b").map(String::as_str), Some("x=y"));
        assert_eq!(c.serde_properties.len(), 1);
        assert_eq!(
            c.partition_fields,
            Some(vec!["dt".to_string(), "hr".to_string()])
        );
        assert_eq!(c.extractor, Some(PartitionExtractor::SlashEncodedDay));
        assert!(c.support_timestamp);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (key, value) in [
            (
                "hoodie.datasource.hive_sync.partition_extractor_class",
                "x.Custom",
            ),
            ("hoodie.datasource.hive_sync.support_timestamp", "yes"),
            ("hoodie.datasource.hive_sync.table_properties", "novalue"),
            (
                "hoodie.datasource.meta.sync.glue.metadata_file_listing",
                "true",
            ),
            ("hoodie.datasource.hive_sync.base_file_format", "ORC"),
            ("hoodie.datasource.hive_sync.database", "a b"),
            (SYNC_TIMEOUT_KEY, "0"),
        ] {
            let err = CatalogConfig::from_properties(&props(&[
                ("hoodie.meta.sync.enable", "true"),
                ("hoodie.meta.sync.classes", GLUE_SYNC_TOOL),
                (key, value),
            ]))
            .unwrap_err()
            .to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
    }
}
