//! The mirror's settings.

use std::collections::BTreeMap;

use crate::config::{parse_bool, ConfigError};

/// `hudi.sink.delta.mirror`: mirror every commit into a Delta Lake log under the table's base path.
pub const MIRROR_KEY: &str = "hudi.sink.delta.mirror";

/// The keys this module reads.
pub const KEYS: &[&str] = &[MIRROR_KEY];

/// The mirror's settings; `None` from [`DeltaConfig::from_properties`] means the mirror is off (the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaConfig {
    /// The table's base path (`hoodie.base.path`), where `_delta_log/` goes.
    pub base_path: String,
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
        Ok(enabled.then(|| Self {
            base_path: base_path.to_string(),
        }))
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
            Some(DeltaConfig {
                base_path: "/t".into()
            })
        );
        let err =
            DeltaConfig::from_properties(&props(&[(MIRROR_KEY, "yes please")]), "/t").unwrap_err();
        assert!(err.to_string().contains(MIRROR_KEY), "{err}");
    }
}
