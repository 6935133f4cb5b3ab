//! Which keys a properties file may hold. A HoodieStreamer or Kafka Connect properties file works unchanged:
//! every key is either read by one of the sink's parsers, recognised as meaningful only to those engines
//! (reported, then ignored), or rejected. An unknown `hoodie.*`/`hudi.sink.*` key is a start-up error naming
//! the key, never a silent default: a typo in `hoodie.bucket.index.num.buckets` would otherwise corrupt the
//! table.

use std::collections::BTreeMap;

use super::ConfigError;

/// Keys meaningful only to HoodieStreamer, Kafka Connect or Spark: accepted so that their properties files
/// work unchanged, and reported by [`check`].
pub const IGNORED_PREFIXES: &[&str] = &[
    "hoodie.deltastreamer.source.",
    "hoodie.streamer.source.",
    // Catalog-sync keys the Glue sync does not act on (`crate::catalog::config` reads the others).
    "hoodie.datasource.hive_sync.",
    "hoodie.datasource.meta.sync.",
    "hoodie.datasource.meta_sync.",
    "hoodie.meta.sync.",
    "hoodie.meta_sync.",
    "hoodie.kafka.",
    "hoodie.cleaner.",
    "hoodie.clean.",
    "hoodie.keep.",
    "hoodie.archive.",
    "hoodie.clustering.",
    "hoodie.compact.",
    "hoodie.embed.timeline.server",
    "hoodie.upsert.shuffle.parallelism",
    "hoodie.insert.shuffle.parallelism",
    "hoodie.bulkinsert.shuffle.parallelism",
    "hoodie.delete.shuffle.parallelism",
    "hoodie.combine.before.",
    "hoodie.schema.on.read.",
    "hoodie.deltastreamer.keygen.timebased.",
    "hoodie.write.lock.zookeeper.",
    // HoodieStreamer's error table: only its base path is read (`crate::dead_letter`).
    "hoodie.errortable.",
    "bootstrap.servers",
    "auto.offset.reset",
    "group.id",
    "key.deserializer",
    "value.deserializer",
    "schema.registry.url",
    "security.protocol",
    "sasl.",
    "ssl.",
    "topics",
    "key.converter",
    "value.converter",
    "name",
    "connector.class",
    "tasks.max",
];

/// Prefixes this project owns: a key under them must be known.
pub const STRICT_PREFIXES: &[&str] = &["hoodie.", "hudi.sink."];

/// Checks every key of `properties` against the key lists of the parsers (`known`): returns the keys that
/// are accepted but ignored (other engines' keys), or the first unknown key of a namespace this sink owns
/// (`hoodie.*`, `hudi.sink.*`, or a key without a dot) as [`ConfigError::UnknownKey`].
pub fn check(
    properties: &BTreeMap<String, String>,
    known: &[&[&str]],
) -> Result<Vec<String>, ConfigError> {
    let mut ignored = Vec::new();
    for key in properties.keys() {
        if known.iter().any(|list| list.contains(&key.as_str())) {
            continue;
        }
        if IGNORED_PREFIXES.iter().any(|p| key.starts_with(p)) {
            ignored.push(key.clone());
            continue;
        }
        if STRICT_PREFIXES.iter().any(|p| key.starts_with(p)) || !key.contains('.') {
            return Err(ConfigError::UnknownKey { key: key.clone() });
        }
        // Other engines' namespaced keys (e.g. `spark.*`) are not ours to judge.
        ignored.push(key.clone());
    }
    Ok(ignored)
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

    const KNOWN: &[&str] = &["hoodie.table.name", "hudi.sink.commit.interval.ms"];

    #[test]
    fn known_keys_pass_and_other_engines_keys_are_reported() {
        let p = props(&[
            ("hoodie.table.name", "t"),
            ("hudi.sink.commit.interval.ms", "0"),
            ("bootstrap.servers", "b-1:9092"),
            ("hoodie.deltastreamer.source.kafka.topic", "t"),
            ("spark.executor.memory", "4g"),
        ]);
        assert_eq!(
            check(&p, &[KNOWN]).expect("known"),
            [
                "bootstrap.servers",
                "hoodie.deltastreamer.source.kafka.topic",
                "spark.executor.memory"
            ]
        );
    }

    #[test]
    fn an_unknown_key_of_an_owned_namespace_is_an_error() {
        for key in ["hoodie.bucket.index.num.bucket", "hudi.sink.nope", "nodot"] {
            let p = props(&[("hoodie.table.name", "t"), (key, "1")]);
            assert_eq!(
                check(&p, &[KNOWN]),
                Err(ConfigError::UnknownKey { key: key.into() }),
                "{key}"
            );
        }
    }
}
