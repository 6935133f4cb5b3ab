//! Plans compiled from two schemas alone, without columns: the field pairing, skip entries, promotions and the
//! refusals of a table schema no column form has. The record decoder's tests (`record/decode/tests_avro.rs`)
//! pin every rule through datums.

use super::*;

fn schema(text: &str) -> AvroSchema {
    AvroSchema::parse(text).unwrap_or_else(|e| panic!("schema: {e}"))
}

fn compile(writer: &str, table: &str) -> Result<AvroPlan, PlanError> {
    let writer = AvroSchema::parse_writer(writer).unwrap_or_else(|e| panic!("writer: {e}"));
    AvroPlan::compile(&writer, &schema(table))
}

const TABLE: &str = r#"{"type":"record","name":"r","fields":[
    {"name":"a","type":"string"},
    {"name":"b","type":{"type":"long","logicalType":"timestamp-micros"},"aliases":["old_b"]},
    {"name":"c","type":["null","double"],"default":null}]}"#;

#[test]
fn writer_fields_pair_with_table_fields_by_name_and_alias() {
    let plan = compile(
        r#"{"type":"record","name":"w","fields":[
            {"name":"x","type":{"type":"record","name":"x","fields":[{"name":"y","type":"x"}]}},
            {"name":"old_b","type":{"type":"long","logicalType":"timestamp-millis"}},
            {"name":"a","type":"bytes"}]}"#,
        TABLE,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.skipped_fields(), ["x"]);
    let [FieldRead::Skip(x), FieldRead::Slot(1, b), FieldRead::Slot(0, a)] = plan.fields() else {
        panic!("{:?}", plan.fields());
    };
    // Millis into a micros column: multiplied by 1000.
    assert!(matches!(b, Read::Long(NumTo::I64, 1000)), "{b:?}");
    assert!(matches!(a, Read::Bytes(BytesTo::Utf8)), "{a:?}");
    // The recursive writer record is one skip entry that names itself.
    let Some(Skip::Record(fields)) = plan.skip(*x) else {
        panic!("{:?}", plan.skip(*x));
    };
    assert_eq!(fields, &[*x]);
}

#[test]
fn unions_and_promotions_into_a_nullable_field() {
    let plan = compile(
        r#"{"type":"record","name":"w","fields":[
            {"name":"a","type":"string"},
            {"name":"b","type":"long"},
            {"name":"c","type":["int","null","boolean"]}]}"#,
        TABLE,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let [_, _, FieldRead::Slot(2, Read::Union(branches))] = plan.fields() else {
        panic!("{:?}", plan.fields());
    };
    assert!(matches!(
        branches.as_slice(),
        [Ok(Read::Int(NumTo::F64)), Ok(Read::Null), Err(reason)]
            if reason == "writer type boolean cannot be read as the table's double"
    ));
}

#[test]
fn refusals_name_the_table_field() {
    let refused = |writer: &str| {
        compile(writer, TABLE)
            .err()
            .unwrap_or_else(|| panic!("{writer}: compiled"))
            .to_string()
    };
    assert_eq!(
        refused(r#"{"type":"record","name":"w","fields":[{"name":"a","type":"string"}]}"#),
        "field `b`: the writer schema has no such field and the table field has no default and is not nullable"
    );
    assert_eq!(
        refused(
            r#"{"type":"record","name":"w","fields":[{"name":"a","type":"string"},
                {"name":"b","type":{"type":"long","logicalType":"timestamp-micros"}},
                {"name":"c","type":"string"}]}"#
        ),
        "field `c`: writer type string cannot be read as the table's double"
    );
    assert_eq!(
        refused(r#""long""#),
        "field `$`: the writer schema is long, not a record"
    );
}

#[test]
fn table_types_without_a_column_are_refused() {
    // A recursive table has no columns; compiling against it ends where the table record recurs.
    let writer =
        r#"{"type":"record","name":"node","fields":[{"name":"next","type":["null","node"]}]}"#;
    let plan = compile(writer, writer).unwrap_or_else(|e| panic!("{e}"));
    let [FieldRead::Slot(0, Read::Union(branches))] = plan.fields() else {
        panic!("{:?}", plan.fields());
    };
    assert!(matches!(
        branches.as_slice(),
        [Ok(Read::Null), Err(reason)] if reason == "the table's record node contains itself"
    ));
    let err = AvroPlan::compile(&schema(TABLE), &schema(r#""string""#))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("field `$`: the table schema is string, not a record")
    );
}

#[test]
fn type_labels() {
    for (text, label) in [
        (r#""long""#, "long"),
        (r#"{"type":"string","logicalType":"uuid"}"#, "string"),
        (r#"{"type":"int","logicalType":"date"}"#, "date"),
        (
            r#"{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}"#,
            "decimal(10,2)",
        ),
        (
            r#"{"type":"fixed","name":"f","size":8,"logicalType":"decimal","precision":10,"scale":2}"#,
            "decimal(10,2)",
        ),
        (r#"{"type":"fixed","name":"f","size":16}"#, "fixed(16)"),
        (
            r#"{"type":"enum","name":"color","symbols":["RED"]}"#,
            "enum color",
        ),
        (r#"{"type":"array","items":"long"}"#, "array"),
        (r#"{"type":"map","values":"long"}"#, "map"),
        (TABLE, "record r"),
    ] {
        assert_eq!(type_label(&schema(text)), label, "{text}");
    }
}
