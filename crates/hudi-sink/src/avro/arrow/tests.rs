use super::*;

fn record(fields: &str) -> AvroSchema {
    let text = format!(r#"{{"type":"record","name":"r","namespace":"n","fields":[{fields}]}}"#);
    AvroSchema::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn one(field_type: &str) -> Field {
    let schema = avro_to_arrow(&record(&format!(r#"{{"name":"c","type":{field_type}}}"#)))
        .unwrap_or_else(|e| panic!("{field_type}: {e}"));
    schema.field(0).clone()
}

#[test]
fn mapping_table_for_every_type() {
    let utc = || Some(UTC.into());
    let cases: Vec<(&str, DataType)> = vec![
        (r#""boolean""#, DataType::Boolean),
        (r#""int""#, DataType::Int32),
        (r#""long""#, DataType::Int64),
        (r#""float""#, DataType::Float32),
        (r#""double""#, DataType::Float64),
        (r#""string""#, DataType::Utf8),
        (r#""bytes""#, DataType::Binary),
        (r#"{"type":"string","logicalType":"uuid"}"#, DataType::Utf8),
        (
            r#"{"type":"enum","name":"E","symbols":["A","B"]}"#,
            DataType::Utf8,
        ),
        (
            r#"{"type":"fixed","name":"F","size":7}"#,
            DataType::FixedSizeBinary(7),
        ),
        (
            r#"{"type":"fixed","name":"F","size":5,"logicalType":"decimal","precision":10,"scale":5}"#,
            DataType::Decimal128(10, 5),
        ),
        (
            r#"{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}"#,
            DataType::Decimal128(38, 0),
        ),
        (r#"{"type":"int","logicalType":"date"}"#, DataType::Date32),
        (
            r#"{"type":"int","logicalType":"time-millis"}"#,
            DataType::Time32(TimeUnit::Millisecond),
        ),
        (
            r#"{"type":"long","logicalType":"time-micros"}"#,
            DataType::Time64(TimeUnit::Microsecond),
        ),
        (
            r#"{"type":"long","logicalType":"timestamp-millis"}"#,
            DataType::Timestamp(TimeUnit::Millisecond, utc()),
        ),
        (
            r#"{"type":"long","logicalType":"timestamp-micros"}"#,
            DataType::Timestamp(TimeUnit::Microsecond, utc()),
        ),
        (
            r#"{"type":"long","logicalType":"local-timestamp-millis"}"#,
            DataType::Timestamp(TimeUnit::Millisecond, None),
        ),
        (
            r#"{"type":"long","logicalType":"local-timestamp-micros"}"#,
            DataType::Timestamp(TimeUnit::Microsecond, None),
        ),
        // Unknown logical types map as their underlying type.
        (
            r#"{"type":"long","logicalType":"timestamp-nanos"}"#,
            DataType::Int64,
        ),
        (
            r#"{"type":"record","name":"S","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"]}]}"#,
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Int32, false),
                Field::new("b", DataType::Utf8, true),
            ])),
        ),
        (
            r#"{"type":"array","items":["null","long"]}"#,
            DataType::List(Arc::new(Field::new(LIST_ITEM_NAME, DataType::Int64, true))),
        ),
        (
            r#"{"type":"array","items":"long"}"#,
            DataType::List(Arc::new(Field::new(LIST_ITEM_NAME, DataType::Int64, false))),
        ),
        (
            r#"{"type":"map","values":["null","double"]}"#,
            DataType::Map(
                Arc::new(Field::new(
                    MAP_ENTRIES_NAME,
                    DataType::Struct(Fields::from(vec![
                        Field::new(MAP_KEY_NAME, DataType::Utf8, false),
                        Field::new(MAP_VALUE_NAME, DataType::Float64, true),
                    ])),
                    false,
                )),
                false,
            ),
        ),
    ];
    for (avro, arrow) in cases {
        let field = one(avro);
        assert_eq!(field.data_type(), &arrow, "{avro}");
        assert!(!field.is_nullable(), "{avro} is not nullable");
        assert!(field.metadata().is_empty(), "{avro} carries no metadata");
        for nullable in [format!(r#"["null",{avro}]"#), format!(r#"[{avro},"null"]"#)] {
            let field = one(&nullable);
            assert_eq!(field.data_type(), &arrow, "{nullable}");
            assert!(field.is_nullable(), "{nullable} is nullable");
        }
    }
}

#[test]
fn references_map_to_their_definition() {
    let schema = record(concat!(
        r#"{"name":"a","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}},"#,
        r#"{"name":"b","type":["null","S"],"default":null},"#,
        r#"{"name":"c","type":{"type":"array","items":"n.S"}}"#
    ));
    let arrow = avro_to_arrow(&schema).expect("maps");
    let s = DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int32, false)]));
    assert_eq!(arrow.field(0).data_type(), &s);
    assert_eq!(arrow.field(1).data_type(), &s);
    assert!(arrow.field(1).is_nullable());
    assert_eq!(
        arrow.field(2).data_type(),
        &DataType::List(Arc::new(Field::new(LIST_ITEM_NAME, s, false)))
    );
}

#[test]
fn unmappable_types_are_errors() {
    let recursive = record(r#"{"name":"self","type":["null","r"],"default":null}"#);
    assert!(
        matches!(avro_to_arrow(&recursive), Err(SchemaError::AvroToArrow { reason, .. }) if reason.contains("recursive"))
    );
    let null = record(r#"{"name":"n","type":"null"}"#);
    assert!(
        matches!(avro_to_arrow(&null), Err(SchemaError::AvroToArrow { path, .. }) if path == "n")
    );
    let only_null = record(r#"{"name":"n","type":["null"]}"#);
    assert!(matches!(
        avro_to_arrow(&only_null),
        Err(SchemaError::AvroToArrow { .. })
    ));
    let wide = record(
        r#"{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":39,"scale":0}}"#,
    );
    assert!(
        matches!(avro_to_arrow(&wide), Err(SchemaError::AvroToArrow { reason, .. }) if reason.contains("38"))
    );
    let nested = record(
        r#"{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"bad","type":"null"}]}}"#,
    );
    assert!(
        matches!(avro_to_arrow(&nested), Err(SchemaError::AvroToArrow { path, .. }) if path == "s.bad")
    );
    let not_record = AvroSchema::primitive(PrimitiveType::Int);
    assert!(matches!(
        avro_to_arrow(&not_record),
        Err(SchemaError::NotARecord { .. })
    ));
    // A built schema with a two-type union is refused by validation before mapping.
    let union = AvroSchema::Record(RecordSchema::new(
        Name::new("r"),
        vec![RecordField::new(
            "u",
            AvroSchema::Union(vec![
                AvroSchema::primitive(PrimitiveType::Int),
                AvroSchema::primitive(PrimitiveType::String),
            ]),
        )],
    ));
    assert!(matches!(
        avro_to_arrow(&union),
        Err(SchemaError::UnsupportedUnion { .. })
    ));
}

/// The Arrow form of a Spark-Hudi table and the Avro Spark-Hudi wrote for it (from the golden tables).
fn spark_arrow() -> Schema {
    let s = |f: Vec<Field>| DataType::Struct(Fields::from(f));
    Schema::new(vec![
        Field::new("id", DataType::Int32, true),
        Field::new("shortField", DataType::Int16, true),
        Field::new("decimalField", DataType::Decimal128(10, 5), true),
        Field::new("dateField", DataType::Date32, true),
        Field::new(
            "timestampField",
            DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
            true,
        ),
        Field::new("binaryField", DataType::Binary, true),
        Field::new(
            "arrayField",
            DataType::List(Arc::new(Field::new(
                LIST_ITEM_NAME,
                s(vec![Field::new("f1", DataType::Utf8, true)]),
                true,
            ))),
            true,
        ),
        Field::new(
            "mapField",
            DataType::Map(
                Arc::new(Field::new(
                    MAP_ENTRIES_NAME,
                    s(vec![
                        Field::new(MAP_KEY_NAME, DataType::Utf8, false),
                        Field::new(
                            MAP_VALUE_NAME,
                            s(vec![Field::new("v", DataType::Float64, true)]),
                            true,
                        ),
                    ]),
                    false,
                )),
                false,
            ),
            true,
        ),
        Field::new(
            "structField",
            s(vec![Field::new(
                "child",
                s(vec![Field::new("c", DataType::Boolean, true)]),
                true,
            )]),
            true,
        ),
    ])
}

const SPARK_AVRO: &str = concat!(
    r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":["#,
    r#"{"name":"id","type":["null","int"],"default":null},"#,
    r#"{"name":"shortField","type":["null","int"],"default":null},"#,
    r#"{"name":"decimalField","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.decimalField","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},"#,
    r#"{"name":"dateField","type":["null",{"type":"int","logicalType":"date"}],"default":null},"#,
    r#"{"name":"timestampField","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},"#,
    r#"{"name":"binaryField","type":["null","bytes"],"default":null},"#,
    r#"{"name":"arrayField","type":["null",{"type":"array","items":["null",{"type":"record","name":"arrayField","namespace":"hoodie.t.t_record","fields":[{"name":"f1","type":["null","string"],"default":null}]}]}],"default":null},"#,
    r#"{"name":"mapField","type":["null",{"type":"map","values":["null",{"type":"record","name":"mapField","namespace":"hoodie.t.t_record","fields":[{"name":"v","type":["null","double"],"default":null}]}]}],"default":null},"#,
    r#"{"name":"structField","type":["null",{"type":"record","name":"structField","namespace":"hoodie.t.t_record","fields":[{"name":"child","type":["null",{"type":"record","name":"child","namespace":"hoodie.t.t_record.structField","fields":[{"name":"c","type":["null","boolean"],"default":null}]}],"default":null}]}],"default":null}"#,
    r#"]}"#
);

#[test]
fn arrow_to_avro_writes_spark_hudi_names() {
    let avro = arrow_to_avro(&spark_arrow(), "t_record", Some("hoodie.t")).expect("maps");
    assert_eq!(avro.to_json_string(), SPARK_AVRO);
}

#[test]
fn arrow_avro_arrow_round_trip() {
    let arrow = spark_arrow();
    let back =
        avro_to_arrow(&arrow_to_avro(&arrow, "t_record", Some("hoodie.t")).expect("to avro"))
            .expect("back");
    for (a, b) in arrow.fields().iter().zip(back.fields()) {
        // Int16 is stored as Avro int (Spark's short), so it comes back as Int32.
        let want = if a.data_type() == &DataType::Int16 {
            DataType::Int32
        } else {
            a.data_type().clone()
        };
        assert_eq!(b.data_type(), &want, "{}", a.name());
        assert_eq!(b.is_nullable(), a.is_nullable(), "{}", a.name());
    }
    // Non-nullable columns, every remaining type, no namespace.
    let others = Schema::new(vec![
        Field::new("b", DataType::Boolean, false),
        Field::new("l", DataType::Int64, false),
        Field::new("f", DataType::Float32, false),
        Field::new("d", DataType::Float64, false),
        Field::new("s", DataType::Utf8, false),
        Field::new("fx", DataType::FixedSizeBinary(3), false),
        Field::new("dec", DataType::Decimal128(38, 10), false),
        Field::new("tms", DataType::Time32(TimeUnit::Millisecond), false),
        Field::new("tus", DataType::Time64(TimeUnit::Microsecond), false),
        Field::new(
            "tsms",
            DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into())),
            false,
        ),
        Field::new(
            "ltsms",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new(
            "ltsus",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            false,
        ),
        Field::new(
            "li",
            DataType::List(Arc::new(Field::new(LIST_ITEM_NAME, DataType::Int32, false))),
            false,
        ),
    ]);
    let avro = arrow_to_avro(&others, "r", None).expect("to avro");
    assert_eq!(avro_to_arrow(&avro).expect("back"), others);
    let fixed = avro.field("dec").expect("dec");
    assert_eq!(
        fixed.schema.to_json_string(),
        r#"{"type":"fixed","name":"fixed","namespace":"r.dec","size":16,"logicalType":"decimal","precision":38,"scale":10}"#
    );
    assert_eq!(fixed.default, None);
}

#[test]
fn arrow_types_without_avro_form_are_errors() {
    for dt in [
        DataType::UInt32,
        DataType::Null,
        DataType::Timestamp(TimeUnit::Nanosecond, None),
        DataType::Decimal128(10, -2),
        DataType::Struct(Fields::empty()),
        DataType::Map(
            Arc::new(Field::new(
                MAP_ENTRIES_NAME,
                DataType::Struct(Fields::from(vec![
                    Field::new(MAP_KEY_NAME, DataType::Int32, false),
                    Field::new(MAP_VALUE_NAME, DataType::Int32, true),
                ])),
                false,
            )),
            false,
        ),
    ] {
        let schema = Schema::new(vec![Field::new("c", dt.clone(), true)]);
        assert!(
            matches!(arrow_to_avro(&schema, "r", None), Err(SchemaError::ArrowToAvro { path, .. }) if path == "c"),
            "{dt}"
        );
    }
    let bad_name = Schema::new(vec![Field::new("a-b", DataType::Int32, true)]);
    assert!(matches!(
        arrow_to_avro(&bad_name, "r", None),
        Err(SchemaError::InvalidName { .. })
    ));
}

#[test]
fn datums_round_trip_and_a_refused_datum_leaves_no_trace() {
    use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};

    let schema = record(r#"{"name":"id","type":"long"},{"name":"s","type":["null","string"]}"#);
    let rec = schema.as_record().expect("record");
    let arrow = Arc::new(avro_to_arrow(&schema).expect("arrow"));
    let batch = RecordBatch::try_new(
        arrow.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1, -2])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("a"), None])) as ArrayRef,
        ],
    )
    .expect("batch");
    let enc = DatumEncoder::new(schema.validate().expect("valid"), rec);
    let columns = enc.columns(&batch).expect("columns");
    let mut datums = Vec::new();
    for row in 0..batch.num_rows() {
        let mut out = Vec::new();
        enc.encode(&columns, row, &mut out).expect("encode");
        datums.push(out);
    }
    // long 1 = 02, union branch 1 (string) = 02, "a" = 02 61; long -2 = 03, union branch 0 (null) = 00.
    assert_eq!(datums, vec![vec![0x02, 0x02, 0x02, 0x61], vec![0x03, 0x00]]);
    assert!(matches!(
        enc.encode(&columns[..1], 0, &mut Vec::new()),
        Err(DatumError::Mismatch { .. })
    ));

    let mut dec = DatumDecoder::new(schema.validate().expect("valid"), rec, arrow, 2);
    dec.append(&datums[0], 0).expect("first");
    // The id decodes, the string is cut short (offsets count from the datum's base, 10): nothing of this
    // datum reaches the columns, nor of one with a byte left over.
    assert!(matches!(
        dec.append(&datums[0][..3], 10),
        Err(DatumError::Truncated { offset: 13, .. })
    ));
    assert!(matches!(
        dec.append(&[0x03, 0x00, 0x00], 0),
        Err(DatumError::Corrupt { .. })
    ));
    dec.append(&datums[1], 0).expect("second");
    let back = dec.finish().expect("batch");
    assert_eq!(back, batch);
    assert_eq!(back.column(1).null_count(), 1);
}
