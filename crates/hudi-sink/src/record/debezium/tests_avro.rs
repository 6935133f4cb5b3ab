//! Registry-Avro change events: datums written with the crate's own encoder under Debezium-shaped writer
//! schemas, flattened, and the flat datum read back under the flat schema.

use serde_json::{json, Value};

use super::*;
use crate::avro::graph::SchemaGraph;
use crate::avro::read::decode_datum;
use crate::avro::write::encode_datum;
use crate::avro::AvroValue;
use crate::schema::avro::AvroSchema;

fn value_record() -> Value {
    json!({"type":"record","name":"Value","fields":[
        {"name":"id","type":"int"},
        {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":30,"scale":2}],
         "default":null},
        {"name":"created_at","type":[{"type":"long","connect.name":"io.debezium.time.MicroTimestamp"},
         "null"],"default":0}]})
}

fn envelope(null_first: bool, source: Value) -> AvroSchema {
    let (before, after) = match null_first {
        true => (json!(["null", value_record()]), json!(["null", "Value"])),
        false => (json!([value_record(), "null"]), json!(["Value", "null"])),
    };
    let schema = json!({"type":"record","name":"Envelope","namespace":"pg.public.items","fields":[
        {"name":"before","type":before},{"name":"after","type":after},
        {"name":"source","type":source},{"name":"op","type":"string"},
        {"name":"ts_ms","type":["null","long"],"default":null}]});
    AvroSchema::parse(&schema.to_string()).expect("envelope schema")
}

fn pg_source() -> Value {
    json!({"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
        {"name":"name","type":"string"},{"name":"ts_ms","type":"long"},{"name":"schema","type":"string"},
        {"name":"txId","type":["null","long"],"default":null},
        {"name":"lsn","type":["null","long"],"default":null}]})
}

fn mysql_source() -> Value {
    json!({"type":"record","name":"Source","namespace":"io.debezium.connector.mysql","fields":[
        {"name":"name","type":"string"},{"name":"ts_ms","type":"long"},{"name":"file","type":"string"},
        {"name":"pos","type":"long"},{"name":"row","type":"int"}]})
}

fn datum(schema: &AvroSchema, value: &AvroValue) -> Vec<u8> {
    let graph = SchemaGraph::parse(&schema.to_json_string()).expect("graph");
    encode_datum(&graph, value).expect("datum")
}

fn rec(fields: Vec<(&str, AvroValue)>) -> AvroValue {
    AvroValue::Record(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// A row of the Value record: price 12345678901234567890.12 (beyond a double) as unscaled bytes.
fn item(id: i32) -> AvroValue {
    let unscaled: i128 = 1_234_567_890_123_456_789_012 + i128::from(id);
    let bytes = unscaled.to_be_bytes();
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(15).min(6);
    rec(vec![
        ("id", AvroValue::Int(id)),
        ("price", AvroValue::Bytes(bytes[first..].to_vec())),
        ("created_at", AvroValue::Long(1_718_000_000_000_000)),
    ])
}

/// The flattened datum read back under the flat schema, as (column, value) pairs looking through unions.
fn flat(envelope: &AvroEnvelope, datum: &[u8]) -> Result<Vec<(String, AvroValue)>, DebeziumError> {
    let out = envelope.flatten(datum)?;
    let graph = SchemaGraph::parse(&envelope.flat_schema().to_json_string()).expect("flat graph");
    match decode_datum(&graph, &out).expect("flat datum") {
        AvroValue::Record(fields) => Ok(fields
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_union().clone()))
            .collect()),
        other => panic!("not a record: {other:?}"),
    }
}

fn names(fields: &[(String, AvroValue)]) -> Vec<&str> {
    fields.iter().map(|(k, _)| k.as_str()).collect()
}

fn get<'a>(fields: &'a [(String, AvroValue)], name: &str) -> &'a AvroValue {
    &fields
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

#[test]
fn envelopes_in_either_union_order_flatten_to_the_meta_columns_and_the_image() {
    for null_first in [true, false] {
        let schema = envelope(null_first, pg_source());
        let compiled = AvroEnvelope::compile(Connector::Postgres, &schema).expect("compile");
        let mut columns: Vec<&str> = Connector::Postgres.meta_columns().to_vec();
        columns.extend(["id", "price", "created_at"]);
        let source = rec(vec![
            ("name", AvroValue::String("pg".into())),
            ("ts_ms", AvroValue::Long(17)),
            ("schema", AvroValue::String("public".into())),
            ("txId", AvroValue::Long(556)),
            ("lsn", AvroValue::Long(24_023_128)),
        ]);
        for (op, before, after, image) in [
            ("c", AvroValue::Null, item(1), 1),
            ("u", item(1), item(2), 2),
            ("d", item(3), AvroValue::Null, 3),
        ] {
            let value = rec(vec![
                ("before", before),
                ("after", after),
                ("source", source.clone()),
                ("op", AvroValue::String(op.into())),
                ("ts_ms", AvroValue::Long(99)),
            ]);
            let fields = flat(&compiled, &datum(&schema, &value)).expect("flattened");
            assert_eq!(names(&fields), columns, "{op}");
            assert_eq!(get(&fields, OP_COLUMN), &AvroValue::String(op.into()));
            assert_eq!(get(&fields, PROCESSED_TS_COLUMN), &AvroValue::Long(99));
            assert_eq!(get(&fields, SHARD_COLUMN), &AvroValue::String("pg".into()));
            assert_eq!(get(&fields, ORIGIN_TS_COLUMN), &AvroValue::Long(17));
            assert_eq!(get(&fields, TX_ID_COLUMN), &AvroValue::Long(556));
            assert_eq!(get(&fields, LSN_COLUMN), &AvroValue::Long(24_023_128));
            assert_eq!(get(&fields, XMIN_COLUMN), &AvroValue::Null);
            let AvroValue::Record(expected) = item(image) else {
                unreachable!()
            };
            for (k, v) in expected {
                assert_eq!(get(&fields, &k), &v, "{op} {k}");
            }
        }
    }
}

#[test]
fn mysql_events_carry_the_binlog_sequence() {
    let schema = envelope(true, mysql_source());
    let compiled = AvroEnvelope::compile(Connector::MySql, &schema).expect("compile");
    let value = rec(vec![
        ("before", AvroValue::Null),
        ("after", item(1)),
        (
            "source",
            rec(vec![
                ("name", AvroValue::String("mysql1".into())),
                ("ts_ms", AvroValue::Long(17)),
                ("file", AvroValue::String("mysql-bin.000003".into())),
                ("pos", AvroValue::Long(484)),
                ("row", AvroValue::Int(2)),
            ]),
        ),
        ("op", AvroValue::String("r".into())),
        ("ts_ms", AvroValue::Null),
    ]);
    let fields = flat(&compiled, &datum(&schema, &value)).expect("flattened");
    assert_eq!(
        get(&fields, SEQ_COLUMN),
        &AvroValue::String("000003.484".into())
    );
    assert_eq!(get(&fields, ROW_COLUMN), &AvroValue::Int(2));
    assert_eq!(get(&fields, POS_COLUMN), &AvroValue::Long(484));
    assert_eq!(get(&fields, PROCESSED_TS_COLUMN), &AvroValue::Null);
}

#[test]
fn events_that_are_no_applicable_change_are_refused_with_their_reason() {
    let schema = envelope(false, pg_source());
    let compiled = AvroEnvelope::compile(Connector::Postgres, &schema).expect("compile");
    let source = rec(vec![
        ("name", AvroValue::String("pg".into())),
        ("ts_ms", AvroValue::Long(17)),
        ("schema", AvroValue::String("public".into())),
        ("txId", AvroValue::Null),
        ("lsn", AvroValue::Null),
    ]);
    let event = |op: &str, before: AvroValue, after: AvroValue| {
        datum(
            &schema,
            &rec(vec![
                ("before", before),
                ("after", after),
                ("source", source.clone()),
                ("op", AvroValue::String(op.into())),
                ("ts_ms", AvroValue::Null),
            ]),
        )
    };
    assert_eq!(
        flat(&compiled, &event("t", AvroValue::Null, AvroValue::Null)),
        Err(DebeziumError::UnknownOp("t".into()))
    );
    assert_eq!(
        flat(&compiled, &event("d", AvroValue::Null, item(1))),
        Err(DebeziumError::MissingImage {
            op: "d".into(),
            field: "before",
            found: "null".into()
        })
    );
    let whole = event("c", AvroValue::Null, item(1));
    for cut in [&whole[..whole.len() - 1], &whole[..3]] {
        assert!(
            matches!(compiled.flatten(cut), Err(DebeziumError::NotAvro(_))),
            "{cut:?}"
        );
    }
    let mut longer = whole.clone();
    longer.push(0);
    assert!(matches!(
        compiled.flatten(&longer),
        Err(DebeziumError::NotAvro(_))
    ));
    // A writer schema that is no Debezium record refuses every value naming it.
    let plain = AvroSchema::parse(&value_record().to_string()).expect("schema");
    assert!(matches!(
        AvroEnvelope::compile(Connector::Postgres, &plain),
        Err(DebeziumError::NotEnvelope(_))
    ));
}

#[test]
fn extracted_records_become_rows_and_rewritten_deletes() {
    let mut schema = value_record();
    let fields = schema["fields"].as_array_mut().expect("fields");
    fields.insert(
        1,
        json!({"name":"__op","type":["null","string"],"default":null}),
    );
    fields.push(json!({"name":"__source_lsn","type":["null","long"],"default":null}));
    fields.push(json!({"name":"__deleted","type":["null","string"],"default":null}));
    let schema = AvroSchema::parse(&schema.to_string()).expect("schema");
    let compiled = AvroEnvelope::compile(Connector::Postgres, &schema).expect("compile");
    let AvroValue::Record(row) = item(5) else {
        unreachable!()
    };
    let value = |op: AvroValue, deleted: &str| {
        let mut fields = row.clone();
        fields.insert(1, ("__op".into(), op));
        fields.push(("__source_lsn".into(), AvroValue::Long(77)));
        fields.push(("__deleted".into(), AvroValue::String(deleted.into())));
        datum(&schema, &AvroValue::Record(fields))
    };
    let mut columns: Vec<&str> = Connector::Postgres.meta_columns().to_vec();
    columns.extend(["id", "price", "created_at"]);
    for (op, deleted, expected) in [
        (
            AvroValue::String("u".into()),
            "false",
            AvroValue::String("u".into()),
        ),
        (AvroValue::Null, "true", AvroValue::String("d".into())),
        (AvroValue::Null, "false", AvroValue::Null),
    ] {
        let fields = flat(&compiled, &value(op, deleted)).expect("flattened");
        assert_eq!(names(&fields), columns);
        assert_eq!(get(&fields, OP_COLUMN), &expected, "{deleted}");
        assert_eq!(get(&fields, LSN_COLUMN), &AvroValue::Long(77));
        assert_eq!(get(&fields, SHARD_COLUMN), &AvroValue::Null);
        assert_eq!(get(&fields, "id"), &AvroValue::Int(5));
    }
    assert_eq!(
        flat(&compiled, &value(AvroValue::String("m".into()), "false")),
        Err(DebeziumError::UnknownOp("m".into()))
    );
}
