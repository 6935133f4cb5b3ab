//! The complete example of docs/cdc.md, as written: its properties block, taken from the document, routes
//! Connect-schema JSON change events of `pg.public.customers` (keyed by `id`, partitioned by `region`) and
//! `pg.public.orders` (keyed by `order_id`, not partitioned) into two merge-on-read tables; only the base
//! path (and the dead letters) are set for a laptop. The customers table gains a column mid-stream. Both
//! tables are read back with hudi-rs row for row against a model, and the same event files again change
//! nothing.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::common::*;
use crate::debezium_meta::{assert_meta_columns, read_rows_by};

/// The first ```properties block after the heading "## A complete example" of docs/cdc.md.
fn documented_properties() -> String {
    let doc = std::fs::read_to_string(workspace_root().join("docs/cdc.md")).expect("docs/cdc.md");
    let section = doc
        .split_once("\n## A complete example\n")
        .expect("the heading \"## A complete example\"")
        .1;
    let block = section
        .split_once("```properties\n")
        .expect("a properties block in the example")
        .1;
    block
        .split_once("\n```")
        .expect("the properties block closes")
        .0
        .to_string()
}

/// Per key, the LSN of the version the table keeps and its row (None: deleted).
type Versions = BTreeMap<String, (i64, Option<Map<String, Value>>)>;

fn field(name: &str, ty: &str, optional: bool) -> Value {
    json!({"field": name, "type": ty, "optional": optional})
}

/// A table of the example: its topic, its row's Connect fields and its key column.
struct Source {
    table: &'static str,
    key: &'static str,
    fields: Vec<Value>,
}

impl Source {
    /// The source table after `ALTER TABLE … ADD COLUMN phone text`.
    fn with_phone(&self) -> Source {
        let mut fields = self.fields.clone();
        fields.push(field("phone", "string", true));
        Source {
            table: self.table,
            key: self.key,
            fields,
        }
    }
}

fn sources() -> [Source; 2] {
    [
        Source {
            table: "customers",
            key: "id",
            fields: vec![
                field("id", "int32", false),
                field("region", "string", false),
                field("name", "string", true),
                field("email", "string", true),
            ],
        },
        Source {
            table: "orders",
            key: "order_id",
            fields: vec![
                field("order_id", "int64", false),
                field("customer_id", "int32", false),
                field("status", "string", true),
                field("total_cents", "int64", true),
            ],
        },
    ]
}

/// One Postgres change event of `source` with the JsonConverter's Connect schema, and the row (meta columns
/// first) the table holds after it.
fn change(
    source: &Source,
    op: &str,
    image: &Value,
    lsn: i64,
    ts: i64,
) -> (Value, Map<String, Value>) {
    let prefix = format!("pg.public.{}", source.table);
    let value_schema = |name: &str| {
        json!({"field": name, "type": "struct", "optional": true, "name": format!("{prefix}.Value"),
               "fields": source.fields})
    };
    let schema = json!({"type": "struct", "optional": false, "name": format!("{prefix}.Envelope"),
        "version": 2, "fields": [
        value_schema("before"), value_schema("after"),
        {"field": "source", "type": "struct", "optional": false,
         "name": "io.debezium.connector.postgresql.Source", "fields": [
            field("version", "string", false), field("connector", "string", false),
            field("name", "string", false), field("ts_ms", "int64", false),
            {"field": "snapshot", "type": "string", "optional": true, "name": "io.debezium.data.Enum",
             "version": 1, "parameters": {"allowed": "true,last,false,incremental"}, "default": "false"},
            field("db", "string", false), field("sequence", "string", true),
            field("schema", "string", false), field("table", "string", false),
            field("txId", "int64", true), field("lsn", "int64", true), field("xmin", "int64", true)]},
        {"field": "transaction", "type": "struct", "optional": true, "name": "event.block", "version": 1,
         "fields": [field("id", "string", false), field("total_order", "int64", false),
                    field("data_collection_order", "int64", false)]},
        field("op", "string", false), field("ts_ms", "int64", true)]});
    let (before, after) = match op {
        "d" => (image.clone(), Value::Null),
        _ => (Value::Null, image.clone()),
    };
    let tx = lsn / 100;
    let payload = json!({"before": before, "after": after,
        "source": {"version": "2.7.3.Final", "connector": "postgresql", "name": "pg", "ts_ms": ts - 5,
            "snapshot": if op == "r" { "true" } else { "false" }, "db": "shop",
            "sequence": format!("[null,\"{lsn}\"]"), "schema": "public", "table": source.table,
            "txId": tx, "lsn": lsn, "xmin": null},
        "transaction": null, "op": op, "ts_ms": ts});
    let mut row = Map::new();
    for (k, v) in [
        ("_change_operation_type", json!(op)),
        ("_upstream_event_processed_ts_ms", json!(ts)),
        ("db_shard_source_partition", json!("pg")),
        ("db_schema_source_partition", json!("public")),
        ("_event_origin_ts_ms", json!(ts - 5)),
        ("_event_tx_id", json!(tx)),
        ("_event_lsn", json!(lsn)),
        ("_event_xmin", Value::Null),
    ] {
        row.insert(k.into(), v);
    }
    row.extend(image.as_object().cloned().unwrap_or_default());
    (json!({"schema": schema, "payload": payload}), row)
}

/// A customers row.
fn c(id: i64, region: &str, name: &str) -> Value {
    let email = format!("c{id}@example.org");
    json!({"id": id, "region": region, "name": name, "email": email})
}

/// An orders row.
fn o(id: i64, customer: i64, status: &str, total: i64) -> Value {
    json!({"order_id": id, "customer_id": customer, "status": status, "total_cents": total})
}

/// An event file of the event source mapping holding `records` per topic (`None` values: tombstones).
fn esm_event(
    records: &BTreeMap<String, Vec<(Value, Option<Value>)>>,
    first_offsets: &BTreeMap<String, usize>,
) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut by_partition = Map::new();
    for (topic, list) in records {
        let rows: Vec<Value> = list
            .iter()
            .enumerate()
            .map(|(i, (key, value))| {
                let offset = first_offsets.get(topic).copied().unwrap_or(0) + i;
                let mut r = json!({"topic": topic, "partition": 0, "offset": offset,
                    "timestamp": 1_718_000_000_000i64 + offset as i64, "timestampType": "CREATE_TIME",
                    "key": b64.encode(key.to_string()), "headers": []});
                if let Some(v) = value {
                    r["value"] = b64.encode(v.to_string()).into();
                }
                r
            })
            .collect();
        by_partition.insert(format!("{topic}-0"), rows.into());
    }
    json!({"eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/shop/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
        "records": by_partition})
}

#[test]
fn the_documented_complete_example_ingests_two_routed_tables() {
    // The block found is the example's (the rest is what the ingest and the reads below prove).
    let properties = documented_properties();
    assert!(
        properties
            .lines()
            .any(|l| l == "hudi.sink.value.format=debezium"),
        "{properties}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("shop.properties");
    std::fs::write(&config, &properties).expect("config");

    // Two batches per topic: snapshot reads, creates, updates, deletes with their tombstones, and an event
    // re-sent after newer ones. A row keeps its partition (`region`): the bucket index is per partition.
    let [customers, orders] = sources();
    // The second batch's customers come from the table with the new column.
    let customers_v2 = customers.with_phone();
    let with_phone = |mut row: Value, phone: &str| {
        row["phone"] = phone.into();
        row
    };
    type Plan<'a> = Vec<(&'a Source, &'a str, Value, i64)>;
    let batches: [Plan; 2] = [
        vec![
            (&customers, "r", c(1, "eu", "Ana"), 100),
            (&customers, "r", c(2, "us", "Bo"), 110),
            (&customers, "r", c(3, "ap", "Cy"), 120),
            (&orders, "r", o(500, 1, "open", 1999), 130),
            (&orders, "r", o(501, 2, "open", 250), 140),
            (&customers, "c", c(4, "eu", "Di"), 200),
            (&orders, "c", o(502, 3, "open", 9900), 210),
            (&orders, "u", o(500, 1, "paid", 1999), 220),
        ],
        vec![
            (
                &customers_v2,
                "u",
                with_phone(c(2, "us", "Bo Li"), "+1 555 0102"),
                300,
            ),
            (&customers, "d", c(3, "ap", "Cy"), 310),
            (&orders, "d", o(501, 2, "open", 250), 320),
            (&orders, "u", o(502, 3, "shipped", 9900), 330),
            (
                &customers_v2,
                "u",
                with_phone(c(1, "eu", "Ana Maria"), "+351 21 000"),
                340,
            ),
            (
                &customers_v2,
                "c",
                with_phone(c(5, "ap", "Eve"), "+65 6000"),
                345,
            ),
            // Re-sent after newer events: older than the stored version, ignored.
            (&customers, "r", c(1, "eu", "Ana"), 100),
            (&orders, "c", o(503, 1, "open", 12), 350),
        ],
    ];
    let mut expected: BTreeMap<&str, Versions> = BTreeMap::new();
    let mut offsets: BTreeMap<String, usize> = BTreeMap::new();
    let events = dir.path().join("events");
    std::fs::create_dir_all(&events).expect("mkdir");
    for (n, batch) in batches.iter().enumerate() {
        let mut records: BTreeMap<String, Vec<(Value, Option<Value>)>> = BTreeMap::new();
        for (source, op, image, lsn) in batch {
            let topic = format!("pg.public.{}", source.table);
            let key = json!({source.key: image[source.key]});
            let (value, row) = change(source, op, image, *lsn, 1_718_000_000_000 + lsn);
            let list = records.entry(topic).or_default();
            list.push((key.clone(), Some(value)));
            if *op == "d" {
                list.push((key, None));
            }
            let id = image[source.key].to_string();
            let state = expected.entry(source.table).or_default();
            if state.get(&id).is_none_or(|(stored, _)| lsn >= stored) {
                state.insert(id, (*lsn, (*op != "d").then_some(row)));
            }
        }
        // Offsets count on per topic across the files.
        let event = esm_event(&records, &offsets);
        for (topic, list) in &records {
            *offsets.entry(topic.clone()).or_default() += list.len();
        }
        std::fs::write(
            events.join(format!("events-{n:03}.json")),
            event.to_string(),
        )
        .expect("write");
    }

    let base = format!("hoodie.base.path={}/$table", dir.path().display());
    let dead_letters = format!(
        "hudi.sink.dead.letter.path={}/dead-letters/$table",
        dir.path().display()
    );
    let config_arg = config.display().to_string();
    let events_arg = events.display().to_string();
    let args = [
        "ingest",
        "--config",
        &config_arg,
        "--set",
        &base,
        "--set",
        &dead_letters,
        "--commit-interval-ms",
        "0",
        &events_arg,
    ];
    let out = ok(&args);
    assert_eq!(number_after(&out, "dead-lettered "), 0, "{out}");
    assert_eq!(number_after(&out, "Debezium tombstones "), 2, "{out}");
    // The model: the latest version per key; customers written before `phone` read it as null.
    let model = |source: &Source| -> BTreeMap<String, Map<String, Value>> {
        expected[source.table]
            .iter()
            .filter_map(|(k, (_, row))| row.clone().map(|r| (k.clone(), r)))
            .map(|(k, mut r)| {
                if source.table == "customers" {
                    r.entry("phone").or_insert(Value::Null);
                }
                (k, r)
            })
            .collect()
    };
    for source in [&customers, &orders] {
        let table = dir.path().join(source.table);
        let model = model(source);
        assert!(model.len() >= 3, "{}: a model with rows", source.table);
        if source.table == "customers" {
            // hudi-rs reads a merge-on-read file slice in its base file's columns: `phone`, added in log
            // blocks, shows once the slices are compacted. Everything else is compared before.
            let without_phone = |rows: BTreeMap<String, Map<String, Value>>| {
                rows.into_iter()
                    .map(|(k, mut r)| {
                        r.remove("phone");
                        (k, r)
                    })
                    .collect::<BTreeMap<_, _>>()
            };
            assert_eq!(
                without_phone(read_rows_by(&table, source.key)),
                without_phone(model.clone()),
                "customers before compaction"
            );
            ok(&[
                "services",
                "--table",
                &table.display().to_string(),
                "--set",
                "hoodie.compact.inline.max.delta.commits=1",
                "--set",
                "hudi.sink.compaction.max.file.groups=100",
            ]);
        }
        let actual = read_rows_by(&table, source.key);
        assert_eq!(actual, model, "{}", source.table);
        assert_meta_columns(&table, "postgres", source.table);
        let props = std::fs::read_to_string(table.join(".hoodie/hoodie.properties"))
            .expect("hoodie.properties");
        for line in [
            "hoodie.table.type=MERGE_ON_READ",
            "hoodie.table.precombine.field=_event_lsn",
            "hoodie.compaction.payload.class=org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload",
        ] {
            assert!(props.lines().any(|l| l == line), "{}: {line} in {props}", source.table);
        }
        // Customers' partitions are the regions; orders has none.
        let partitions: Vec<String> = std::fs::read_dir(&table)
            .expect("table")
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".hoodie")
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let expected_partitions: &[&str] = match source.table {
            "customers" => &["ap", "eu", "us"],
            _ => &[],
        };
        assert_eq!(partitions, expected_partitions, "{}: layout", source.table);
    }
    // The same event files again: both tables skip them by their checkpoints.
    let again = ok(&args);
    assert_eq!(number_after(&again, "dead-lettered "), 0, "{again}");
    assert_eq!(
        number_after(&again, "already committed "),
        number_after(&out, "records in "),
        "{again}"
    );
    for source in [&customers, &orders] {
        let table = dir.path().join(source.table);
        assert_eq!(
            read_rows_by(&table, source.key),
            model(source),
            "{}: redelivered",
            source.table
        );
    }
}
