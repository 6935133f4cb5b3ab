//! The routing configuration: which table each Kafka topic goes to, and each table's properties.
//!
//! One properties file holds the keys every table shares (the base) and the routes:
//!
//! ```text
//! hudi.sink.route.<name>.topic=<topic>              an exact topic; the table is <name> unless .table says
//! hudi.sink.route.<name>.topic.regex=<regex>        a pattern the whole topic must match
//! hudi.sink.route.<name>.table=<template>           the table: $1, ${name} name the pattern's groups
//! hudi.sink.table.<table>.<key>=<value>             one table's own value of any key
//! hudi.sink.table.<table>.properties.file=<uri>     one table's own properties file
//! ```
//!
//! A topic goes to the route that names it exactly; otherwise to the first pattern route, in route-name
//! order, that matches it whole. A table's properties are the base, then its file, then its own keys (a later
//! one wins), with `hoodie.table.name` set to the table and `$table` replaced by the table name in every
//! value, so that `hoodie.base.path=s3://bucket/tables/$table` gives each table its own base path.

use std::collections::BTreeMap;

use crate::config::error::{invalid, parse_num};
use crate::config::ConfigError;

/// Keys of the routes.
pub const ROUTE_PREFIX: &str = "hudi.sink.route.";
/// Keys of one table.
pub const TABLE_PREFIX: &str = "hudi.sink.table.";
/// How many tables of one batch are written at the same time.
pub const PARALLELISM_KEY: &str = "hudi.sink.route.parallelism";
/// The default of [`PARALLELISM_KEY`]: enough to overlap the tables' storage round trips, few enough that
/// a batch spread over many tables stays within a writer's memory.
pub const DEFAULT_PARALLELISM: usize = 4;
/// The placeholder for the table name in a table's property values.
pub const TABLE_VAR: &str = "$table";
/// The per-table key naming its properties file.
const PROPERTIES_FILE: &str = "properties.file";

/// The keys of the routing configuration, as `docs/configuration.md` lists them (`<name>` is a route's
/// name, `<table>` a table's, `<key>` any other key).
pub const KEYS: &[&str] = &[
    "hudi.sink.route.<name>.topic",
    "hudi.sink.route.<name>.topic.regex",
    "hudi.sink.route.<name>.table",
    PARALLELISM_KEY,
    "hudi.sink.table.<table>.<key>",
    "hudi.sink.table.<table>.properties.file",
];

/// Whether `props` routes topics to many tables (it has a route), rather than naming one table.
pub fn is_routed(props: &BTreeMap<String, String>) -> bool {
    props.keys().any(|k| {
        k.strip_prefix(ROUTE_PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(_, field)| field == "topic" || field == "topic.regex")
    })
}

/// A table name the router can make: `[A-Za-z_][A-Za-z0-9_]*`, at most 128 characters (what
/// `hoodie.table.name`, Glue and Athena all accept, and safe in a path and a property key).
pub fn is_table_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What [`is_table_name`] accepts, for error messages.
const TABLE_NAME_RULE: &str = "a table name is [A-Za-z_][A-Za-z0-9_]*, at most 128 characters";

/// One `hudi.sink.route.<name>.topic.regex` route.
#[derive(Debug, Clone)]
struct PatternRoute {
    name: String,
    /// The pattern, anchored at both ends.
    regex: regex_lite::Regex,
    /// The table template.
    table: String,
}

/// The parsed routing configuration.
#[derive(Debug, Clone)]
pub struct RouteConfig {
    /// Exact routes, by topic.
    exact: BTreeMap<String, String>,
    /// Pattern routes, in route-name order.
    patterns: Vec<PatternRoute>,
    /// Tables of one batch written at the same time.
    pub parallelism: usize,
    /// The keys every table shares.
    base: BTreeMap<String, String>,
    /// Each table's own keys.
    tables: BTreeMap<String, BTreeMap<String, String>>,
    /// Each table's properties file.
    files: BTreeMap<String, String>,
}

impl RouteConfig {
    /// Parses the routes and the tables' keys out of `props`; the rest is the base every table shares.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut fields: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut parallelism = DEFAULT_PARALLELISM;
        let mut base = BTreeMap::new();
        let mut tables: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut files = BTreeMap::new();
        for (key, value) in props {
            if key == PARALLELISM_KEY {
                parallelism = parse_num::<usize>(key, value)?;
                if parallelism == 0 {
                    return Err(invalid(key, value, "at least 1"));
                }
            } else if let Some(rest) = key.strip_prefix(ROUTE_PREFIX) {
                let Some((name, field)) = rest.split_once('.') else {
                    return Err(ConfigError::UnknownKey { key: key.clone() });
                };
                if !matches!(field, "topic" | "topic.regex" | "table") {
                    return Err(ConfigError::UnknownKey { key: key.clone() });
                }
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                {
                    return Err(invalid(
                        key,
                        value,
                        "a route name is ASCII letters, digits, `_` and `-`",
                    ));
                }
                fields
                    .entry(name.to_string())
                    .or_default()
                    .insert(field.to_string(), value.trim().to_string());
            } else if let Some(rest) = key.strip_prefix(TABLE_PREFIX) {
                let Some((table, table_key)) = rest.split_once('.') else {
                    return Err(ConfigError::UnknownKey { key: key.clone() });
                };
                if !is_table_name(table) {
                    return Err(invalid(key, value, TABLE_NAME_RULE));
                }
                if table_key == PROPERTIES_FILE {
                    files.insert(table.to_string(), value.trim().to_string());
                } else {
                    tables
                        .entry(table.to_string())
                        .or_default()
                        .insert(table_key.to_string(), value.clone());
                }
            } else {
                base.insert(key.clone(), value.clone());
            }
        }
        if let Some(name) = base.get("hoodie.table.name") {
            return Err(ConfigError::Conflict {
                reason: format!(
                    "hoodie.table.name={name} in a routed configuration: each table's name comes from its \
                     route (hudi.sink.route.<name>.table); remove hoodie.table.name"
                ),
            });
        }
        if let Some(function) = base.get("hudi.sink.coordinator.function") {
            return Err(not_with_coordinator_function(function));
        }
        match base.get("hoodie.base.path") {
            Some(path) if !path.contains(TABLE_VAR) => {
                return Err(invalid(
                    "hoodie.base.path",
                    path,
                    "in a routed configuration the shared base path names each table with $table \
                     (e.g. s3://bucket/tables/$table); a table's own path is hudi.sink.table.<table>.hoodie.base.path",
                ))
            }
            _ => {}
        }
        let mut exact = BTreeMap::new();
        let mut patterns = Vec::new();
        for (name, f) in fields {
            let key = |field: &str| format!("{ROUTE_PREFIX}{name}.{field}");
            match (f.get("topic"), f.get("topic.regex")) {
                (Some(topic), None) => {
                    let table = f.get("table").cloned().unwrap_or_else(|| name.clone());
                    if !is_table_name(&table) {
                        return Err(invalid(&key("table"), &table, TABLE_NAME_RULE));
                    }
                    if let Some(other) = exact.insert(topic.clone(), table.clone()) {
                        return Err(ConfigError::Conflict {
                            reason: format!(
                                "topic {topic} has two exact routes (to tables {other} and {table})"
                            ),
                        });
                    }
                }
                (None, Some(pattern)) => {
                    let table = f.get("table").cloned().ok_or(ConfigError::Invalid {
                        key: key("topic.regex"),
                        value: pattern.clone(),
                        reason: format!(
                            "a pattern route needs its table template {} (e.g. $1)",
                            key("table")
                        ),
                    })?;
                    let regex = regex_lite::Regex::new(&format!("^(?:{pattern})$"))
                        .map_err(|e| invalid(&key("topic.regex"), pattern, e.to_string()))?;
                    patterns.push(PatternRoute {
                        name: name.clone(),
                        regex,
                        table,
                    });
                }
                (Some(_), Some(_)) => {
                    return Err(ConfigError::Conflict {
                        reason: format!(
                            "route {name} has both {} and {}: give one",
                            key("topic"),
                            key("topic.regex")
                        ),
                    })
                }
                (None, None) => {
                    return Err(ConfigError::Invalid {
                        key: key("table"),
                        value: f.get("table").cloned().unwrap_or_default(),
                        reason: format!(
                            "route {name} has no {} nor {}",
                            key("topic"),
                            key("topic.regex")
                        ),
                    })
                }
            }
        }
        Ok(Self {
            exact,
            patterns,
            parallelism,
            base,
            tables,
            files,
        })
    }

    /// The table `topic` goes to, or why it has none (the reason a dead letter carries).
    pub fn table_of(&self, topic: &str) -> Result<String, String> {
        if let Some(table) = self.exact.get(topic) {
            return Ok(table.clone());
        }
        for route in &self.patterns {
            if let Some(captures) = route.regex.captures(topic) {
                let mut table = String::new();
                captures.expand(&route.table, &mut table);
                return if is_table_name(&table) {
                    Ok(table)
                } else {
                    Err(format!(
                        "route {} maps topic {topic} to {table:?}, which is not a table name ({TABLE_NAME_RULE})",
                        route.name
                    ))
                };
            }
        }
        Err(format!(
            "no route for topic {topic} (routes name {} exact topics and {} patterns)",
            self.exact.len(),
            self.patterns.len()
        ))
    }

    /// The properties file of `table`, if it has one.
    pub fn properties_file(&self, table: &str) -> Option<&str> {
        self.files.get(table).map(String::as_str)
    }

    /// The properties of `table`: the base, then `file` (its properties file, read by the caller), then its
    /// own keys; `hoodie.table.name` is the table, and `$table` in any value is replaced by it.
    pub fn table_properties(
        &self,
        table: &str,
        file: Option<BTreeMap<String, String>>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut props = self.base.clone();
        props.extend(file.unwrap_or_default());
        props.extend(self.tables.get(table).cloned().unwrap_or_default());
        if let Some(name) = props.get("hoodie.table.name").filter(|n| n.trim() != table) {
            return Err(ConfigError::Conflict {
                reason: format!(
                    "table {table} is given hoodie.table.name={name}: a routed table's name is its route's"
                ),
            });
        }
        if let Some(function) = props.get("hudi.sink.coordinator.function") {
            return Err(not_with_coordinator_function(function));
        }
        if !props.contains_key("hoodie.base.path") {
            return Err(ConfigError::Invalid {
                key: "hoodie.base.path".into(),
                value: String::new(),
                reason: format!(
                    "table {table} has no base path: set hoodie.base.path=<prefix>/$table for every table, or \
                     hudi.sink.table.{table}.hoodie.base.path"
                ),
            });
        }
        props.insert("hoodie.table.name".into(), table.to_string());
        for value in props.values_mut() {
            if value.contains(TABLE_VAR) {
                *value = value.replace(TABLE_VAR, table);
            }
        }
        Ok(props)
    }

    /// The base with `$table` replaced by `name`: where records of no table (unrouted) find their
    /// dead-letter location, as if they belonged to a table of that name.
    pub fn base_for(&self, name: &str) -> BTreeMap<String, String> {
        self.base
            .iter()
            .map(|(k, v)| (k.clone(), v.replace(TABLE_VAR, name)))
            .collect()
    }
}

/// The coordinator Lambda serves the one table of its own properties file, so a routed writer commits
/// in process (under the tables' DynamoDB or file locks).
fn not_with_coordinator_function(function: &str) -> ConfigError {
    ConfigError::Conflict {
        reason: format!(
            "hudi.sink.coordinator.function={function} in a routed configuration: the coordinator function \
             serves one table, so a writer of many tables commits in process; remove the key"
        ),
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

    fn debezium() -> BTreeMap<String, String> {
        props(&[
            ("hoodie.base.path", "s3://b/tables/$table"),
            ("hudi.sink.dead.letter.path", "s3://b/dead/$table"),
            ("hoodie.datasource.write.recordkey.field", "id"),
            ("hudi.sink.route.pg.topic.regex", r"pg\.public\.(.*)"),
            ("hudi.sink.route.pg.table", "$1"),
            ("hudi.sink.route.audit.topic", "audit-log"),
            ("hudi.sink.route.legacy.topic", "pg.public.old_orders"),
            ("hudi.sink.route.legacy.table", "orders_v1"),
            (
                "hudi.sink.table.orders.hoodie.datasource.write.recordkey.field",
                "order_id",
            ),
        ])
    }

    #[test]
    fn topics_go_to_exact_routes_then_patterns() {
        let c = RouteConfig::from_properties(&debezium()).expect("valid");
        assert_eq!(
            c.table_of("pg.public.customers").as_deref(),
            Ok("customers")
        );
        assert_eq!(c.table_of("pg.public.orders").as_deref(), Ok("orders"));
        assert_eq!(c.table_of("audit-log").as_deref(), Ok("audit"));
        // The exact route wins over the pattern.
        assert_eq!(
            c.table_of("pg.public.old_orders").as_deref(),
            Ok("orders_v1")
        );
        // The pattern must match the whole topic.
        let e = c.table_of("xpg.public.orders").expect_err("unrouted");
        assert!(e.contains("no route for topic xpg.public.orders"), "{e}");
        // A group that does not make a table name.
        let e = c
            .table_of("pg.public.bad-name")
            .expect_err("not a table name");
        assert!(e.contains("not a table name"), "{e}");
        assert_eq!(c.parallelism, DEFAULT_PARALLELISM);
    }

    #[test]
    fn each_table_has_its_own_properties_over_the_base() {
        let c = RouteConfig::from_properties(&debezium()).expect("valid");
        let orders = c.table_properties("orders", None).expect("orders");
        assert_eq!(orders["hoodie.table.name"], "orders");
        assert_eq!(orders["hoodie.base.path"], "s3://b/tables/orders");
        assert_eq!(orders["hudi.sink.dead.letter.path"], "s3://b/dead/orders");
        assert_eq!(
            orders["hoodie.datasource.write.recordkey.field"],
            "order_id"
        );
        assert!(orders.keys().all(|k| !k.starts_with("hudi.sink.route.")));
        let customers = c
            .table_properties(
                "customers",
                Some(props(&[("hoodie.datasource.write.recordkey.field", "cid")])),
            )
            .expect("customers");
        assert_eq!(customers["hoodie.base.path"], "s3://b/tables/customers");
        assert_eq!(customers["hoodie.datasource.write.recordkey.field"], "cid");
        assert_eq!(
            c.base_for("_unrouted")["hudi.sink.dead.letter.path"],
            "s3://b/dead/_unrouted"
        );
    }

    #[test]
    fn bad_routing_configurations_are_refused_naming_the_key() {
        let refused = |extra: &[(&str, &str)], removed: &[&str], needle: &str| {
            let mut p = debezium();
            for k in removed {
                p.remove(*k);
            }
            p.extend(props(extra));
            let e = RouteConfig::from_properties(&p)
                .expect_err(needle)
                .to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        };
        refused(&[("hoodie.base.path", "s3://b/one")], &[], "$table");
        refused(&[("hoodie.table.name", "x")], &[], "hoodie.table.name");
        refused(
            &[("hudi.sink.coordinator.function", "f")],
            &[],
            "coordinator",
        );
        refused(
            &[("hudi.sink.route.pg.topic.regex", "(")],
            &[],
            "hudi.sink.route.pg.topic.regex",
        );
        refused(
            &[],
            &["hudi.sink.route.pg.table"],
            "hudi.sink.route.pg.table",
        );
        refused(
            &[("hudi.sink.route.x.topic", "audit-log")],
            &[],
            "two exact routes",
        );
        refused(&[("hudi.sink.route.audit.topic.regex", "a")], &[], "both");
        refused(
            &[("hudi.sink.route.pg.tabel", "$1")],
            &[],
            "hudi.sink.route.pg.tabel",
        );
        refused(&[("hudi.sink.route.parallelism", "0")], &[], "at least 1");
        refused(&[("hudi.sink.table.bad-name.k", "v")], &[], "table name");
        refused(
            &[("hudi.sink.route.legacy.table", "9lives")],
            &[],
            "hudi.sink.route.legacy.table",
        );
        refused(
            &[("hudi.sink.route.legacy.table", "no.dots")],
            &[],
            "hudi.sink.route.legacy.table",
        );
    }

    #[test]
    fn a_configuration_is_routed_when_it_has_a_route() {
        assert!(is_routed(&debezium()));
        assert!(!is_routed(&props(&[
            ("hoodie.table.name", "t"),
            (PARALLELISM_KEY, "2")
        ])));
    }
}
