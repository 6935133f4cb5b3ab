//! Unit tests of the schema model: parsing, validation and the lossless round trip.
use serde_json::json;

use super::*;

/// Every construct the model knows, written the way Java Avro prints it.
const EVERYTHING: &str = concat!(
    r#"{"type":"record","name":"top","namespace":"com.example","doc":"the top","fields":["#,
    r#"{"name":"b","type":"boolean"},"#,
    r#"{"name":"i","type":"int","doc":"an int","default":7,"order":"descending","aliases":["i_old"],"x-prop":{"k":[1,2]}},"#,
    r#"{"name":"l","type":"long","order":"ignore"},"#,
    r#"{"name":"f","type":"float","default":1.5},"#,
    r#"{"name":"d","type":"double","default":"NaN"},"#,
    r#"{"name":"by","type":"bytes","default":"ÿ"},"#,
    r#"{"name":"s","type":{"type":"string","avro.java.string":"String"}},"#,
    r#"{"name":"n","type":"null","default":null},"#,
    r#"{"name":"e","type":{"type":"enum","name":"Color","doc":"colours","symbols":["RED","GREEN"],"default":"RED","x":1,"aliases":["Colour"]}},"#,
    r#"{"name":"a","type":{"type":"array","items":["null","Color"],"x":"y"},"default":[]},"#,
    r#"{"name":"m","type":{"type":"map","values":"long"},"default":{"k":1}},"#,
    r#"{"name":"fx","type":{"type":"fixed","name":"md5","namespace":"org.other","size":16,"x":true}},"#,
    r#"{"name":"fx2","type":"org.other.md5"},"#,
    r#"{"name":"dec","type":{"type":"fixed","name":"fixed","namespace":"com.example.top.dec","size":5,"logicalType":"decimal","precision":10,"scale":5}},"#,
    r#"{"name":"bdec","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}},"#,
    r#"{"name":"date","type":{"type":"int","logicalType":"date"}},"#,
    r#"{"name":"tms","type":{"type":"int","logicalType":"time-millis"}},"#,
    r#"{"name":"tus","type":{"type":"long","logicalType":"time-micros"}},"#,
    r#"{"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},"#,
    r#"{"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},"#,
    r#"{"name":"ltsms","type":{"type":"long","logicalType":"local-timestamp-millis"}},"#,
    r#"{"name":"ltsus","type":{"type":"long","logicalType":"local-timestamp-micros"}},"#,
    r#"{"name":"uuid","type":{"type":"string","logicalType":"uuid"}},"#,
    r#"{"name":"nanos","type":{"type":"long","logicalType":"timestamp-nanos"}},"#,
    r#"{"name":"u1","type":["null",{"type":"record","name":"inner","fields":[{"name":"x","type":"int"}]}],"default":null},"#,
    r#"{"name":"u2","type":["inner","null"]},"#,
    r#"{"name":"u3","type":["com.example.inner","null"]},"#,
    r#"{"name":"self","type":["null","top"],"default":null}"#,
    r#"],"x-top":"kept","aliases":["old_top"]}"#
);

#[test]
fn every_construct_round_trips_to_the_same_text_and_value() {
    let schema = AvroSchema::parse(EVERYTHING).expect("parses");
    assert_eq!(schema.to_json_string(), EVERYTHING);
    let original: Value = serde_json::from_str(EVERYTHING).expect("json");
    assert_eq!(schema.to_json_value(), original);
    // And once more through the model.
    assert_eq!(
        AvroSchema::parse(&schema.to_string()).expect("reparses"),
        schema
    );
}

#[test]
fn parse_builds_the_expected_model() {
    let schema = AvroSchema::parse(EVERYTHING).expect("parses");
    let record = schema.as_record().expect("record");
    assert_eq!(record.name, Name::with_namespace("top", "com.example"));
    assert_eq!(record.doc.as_deref(), Some("the top"));
    assert_eq!(record.aliases, vec!["old_top".to_string()]);
    assert_eq!(record.attributes.get("x-top"), Some(&json!("kept")));
    let i = record.field("i").expect("i");
    assert_eq!(i.default, Some(json!(7)));
    assert_eq!(i.order, Some(FieldOrder::Descending));
    assert_eq!(i.attributes.get("x-prop"), Some(&json!({"k": [1, 2]})));
    assert_eq!(
        record.field("dec").expect("dec").schema.logical_type(),
        Some(LogicalType::Decimal {
            precision: 10,
            scale: 5
        })
    );
    assert_eq!(
        record.field("bdec").expect("bdec").schema.logical_type(),
        Some(LogicalType::Decimal {
            precision: 40,
            scale: 2
        })
    );
    for (name, lt) in [
        ("date", LogicalType::Date),
        ("tms", LogicalType::TimeMillis),
        ("tus", LogicalType::TimeMicros),
        ("tsms", LogicalType::TimestampMillis),
        ("tsus", LogicalType::TimestampMicros),
        ("ltsms", LogicalType::LocalTimestampMillis),
        ("ltsus", LogicalType::LocalTimestampMicros),
        ("uuid", LogicalType::Uuid),
    ] {
        assert_eq!(
            record.field(name).expect(name).schema.logical_type(),
            Some(lt),
            "{name}"
        );
    }
    // Unknown logical types are attributes on the underlying type.
    let AvroSchema::Primitive(nanos) = &record.field("nanos").expect("nanos").schema else {
        panic!("nanos is a primitive");
    };
    assert_eq!(nanos.primitive, PrimitiveType::Long);
    assert_eq!(nanos.logical_type, None);
    assert_eq!(
        nanos.attributes.get("logicalType"),
        Some(&json!("timestamp-nanos"))
    );
    assert_eq!(
        record.field("u2").expect("u2").schema,
        AvroSchema::Union(vec![
            AvroSchema::Reference("inner".into()),
            AvroSchema::primitive(PrimitiveType::Null),
        ])
    );
}

#[test]
fn named_types_resolve_per_the_namespace_rules() {
    let schema = AvroSchema::parse(EVERYTHING).expect("parses");
    let names = schema.validate().expect("valid");
    let mut all: Vec<_> = names.types.keys().cloned().collect();
    all.sort();
    assert_eq!(
        all,
        [
            "com.example.Color",
            "com.example.inner",
            "com.example.top",
            "com.example.top.dec.fixed",
            "org.other.md5"
        ]
    );
    // Short name: enclosing namespace first.
    assert_eq!(
        names.resolve("inner", Some("com.example")).map(|r| r.0),
        Some("com.example.inner".into())
    );
    // Then the null namespace.
    let null_ns = AvroSchema::parse(
        r#"{"type":"record","name":"R","fields":[
            {"name":"a","type":{"type":"fixed","name":"F","size":1}},
            {"name":"b","type":{"type":"record","name":"S","namespace":"x.y","fields":[{"name":"c","type":"F"}]}}]}"#,
    )
    .expect("a short name falls back to the null namespace");
    let names = null_ns.validate().expect("valid");
    assert_eq!(
        names.resolve("F", Some("x.y")).map(|r| r.0),
        Some("F".into())
    );
    // A dotted name field ignores namespace.
    assert_eq!(
        Name {
            name: "a.b.C".into(),
            namespace: Some("z".into())
        }
        .fullname(Some("q")),
        "a.b.C"
    );
    assert_eq!(Name::with_namespace("C", "").fullname(Some("q")), "C");
    assert_eq!(Name::new("C").fullname(Some("q")), "q.C");
    assert_eq!(Name::new("C").fullname(None), "C");
}

#[test]
fn spark_schema_text_round_trips_exactly() {
    let spark = r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":["null","int"],"default":null},{"name":"decimalField","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.decimalField","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},{"name":"arrayField","type":["null",{"type":"array","items":["null",{"type":"record","name":"arrayField","namespace":"hoodie.t.t_record","fields":[{"name":"f1","type":["null","string"],"default":null}]}]}],"default":null}]}"#;
    assert_eq!(
        AvroSchema::parse(spark).expect("parses").to_json_string(),
        spark
    );
    // The create-schema form: [T, "null"] without defaults.
    let create = r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":["int","null"]},{"name":"d","type":[{"type":"int","logicalType":"date"},"null"]}]}"#;
    assert_eq!(
        AvroSchema::parse(create).expect("parses").to_json_string(),
        create
    );
}

#[test]
fn normalisations_keep_the_value_meaning() {
    let schema = AvroSchema::parse(
        r#"{"type":"record","name":"r","aliases":[],"fields":[
            {"name":"a","type":{"type":"int"}},
            {"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4}}]}"#,
    )
    .expect("parses");
    assert_eq!(
        schema.to_json_string(),
        r#"{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":0}}]}"#
    );
}

#[test]
fn nullable_helpers() {
    let int = AvroSchema::primitive(PrimitiveType::Int);
    let null = AvroSchema::primitive(PrimitiveType::Null);
    let null_first = AvroSchema::Union(vec![null.clone(), int.clone()]);
    let null_last = AvroSchema::Union(vec![int.clone(), null.clone()]);
    assert!(null_first.is_nullable() && null_last.is_nullable() && null.is_nullable());
    assert!(!int.is_nullable());
    assert_eq!(null_first.nullable_inner(), Some(&int));
    assert_eq!(null_last.nullable_inner(), Some(&int));
    assert_eq!(int.nullable_inner(), None);
    assert_eq!(AvroSchema::Union(vec![int.clone()]).nullable_inner(), None);
    assert_eq!(null_last.non_null(), &int);
    assert_eq!(int.non_null(), &int);
    assert_eq!(AvroSchema::nullable(int.clone()), null_first);
    let field = RecordField::nullable("x", int);
    assert_eq!(field.default, Some(Value::Null));
    assert_eq!(field.schema, null_first);
}

#[test]
fn field_lookup_by_dot_path() {
    let schema = AvroSchema::parse(
        r#"{"type":"record","name":"r","namespace":"n","fields":[
            {"name":"id","type":"int"},
            {"name":"s","type":["null",{"type":"record","name":"S","fields":[
                {"name":"c","type":[{"type":"record","name":"C","fields":[{"name":"leaf","type":"string"}]},"null"]}]}],"default":null},
            {"name":"again","type":["null","S"],"default":null},
            {"name":"arr","type":{"type":"array","items":"S"}}]}"#,
    )
    .expect("parses");
    assert_eq!(schema.field("id").map(|f| f.name.as_str()), Some("id"));
    assert_eq!(
        schema.field("s.c.leaf").map(|f| f.name.as_str()),
        Some("leaf")
    );
    // Through a reference.
    assert_eq!(
        schema.field("again.c.leaf").map(|f| f.name.as_str()),
        Some("leaf")
    );
    assert!(schema.field("s.missing").is_none());
    assert!(schema.field("id.x").is_none());
    // Arrays are not traversed.
    assert!(schema.field("arr.c").is_none());
    assert!(schema.field("").is_none());
}

#[test]
fn decimal_sizes_match_spark() {
    for (precision, bytes) in [
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 2),
        (9, 4),
        (10, 5),
        (18, 8),
        (19, 9),
        (38, 16),
    ] {
        assert_eq!(decimal_min_bytes(precision), bytes, "precision {precision}");
    }
    for p in 1..=38 {
        let n = decimal_min_bytes(p);
        assert!(decimal_max_precision(n) >= p, "fixed({n}) holds {p} digits");
        assert!(
            decimal_max_precision(n - 1) < p,
            "fixed({}) does not hold {p} digits",
            n - 1
        );
    }
    assert_eq!(decimal_max_precision(5), 11);
    assert_eq!(decimal_max_precision(16), 38);
    assert_eq!(decimal_max_precision(0), 0);
    assert_eq!(decimal_min_bytes(76), 32);
}

fn parse_err(text: &str) -> SchemaError {
    match AvroSchema::parse(text) {
        Ok(s) => panic!("expected an error, parsed {s}"),
        Err(e) => e,
    }
}

fn record_with(field_type: &str) -> String {
    format!(r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type}}}]}}"#)
}

#[test]
fn syntax_errors_name_the_place() {
    assert!(matches!(parse_err("{"), SchemaError::Json { .. }));
    assert!(matches!(parse_err("42"), SchemaError::NotASchema { path, .. } if path == "$"));
    assert!(matches!(
        parse_err(r#"{"name":"x"}"#),
        SchemaError::MissingAttribute {
            attribute: "type",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"type":"record","name":"r"}"#),
        SchemaError::MissingAttribute {
            attribute: "fields",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"type":"record","fields":[]}"#),
        SchemaError::MissingAttribute {
            attribute: "name",
            ..
        }
    ));
    assert!(
        matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"type":"int"}]}"#),
        SchemaError::MissingAttribute { path, attribute: "name" } if path == "$.fields[0]")
    );
    assert!(
        matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"name":"f"}]}"#),
        SchemaError::MissingAttribute { path, attribute: "type" } if path == "$.fields[f]")
    );
    assert!(matches!(parse_err(&record_with(r#"{"type":"error"}"#)),
        SchemaError::NotASchema { path, .. } if path == "$.fields[f].type"));
    assert!(matches!(
        parse_err(&record_with(r#"{"type":"fixed","name":"x","size":-1}"#)),
        SchemaError::InvalidAttribute {
            attribute: "size",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(r#"{"type":"array"}"#)),
        SchemaError::MissingAttribute {
            attribute: "items",
            ..
        }
    ));
    assert!(
        matches!(parse_err(&record_with(r#"{"type":"map","values":7}"#)),
        SchemaError::NotASchema { path, .. } if path == "$.fields[f].type.values")
    );
    assert!(matches!(
        parse_err(&record_with(r#"{"type":"enum","name":"E","symbols":[1]}"#)),
        SchemaError::InvalidAttribute {
            attribute: "symbols",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(r#"{"type":"bytes","logicalType":"decimal"}"#)),
        SchemaError::MissingAttribute {
            attribute: "precision",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(
            r#"{"type":"bytes","logicalType":"decimal","precision":"9"}"#
        )),
        SchemaError::InvalidAttribute {
            attribute: "precision",
            ..
        }
    ));
    assert!(matches!(
        parse_err(
            r#"{"type":"record","name":"r","fields":[{"name":"f","type":"int","order":"up"}]}"#
        ),
        SchemaError::InvalidAttribute {
            attribute: "order",
            ..
        }
    ));
}

#[test]
fn semantic_errors_name_the_place() {
    assert!(matches!(parse_err(&record_with(r#""Missing""#)),
        SchemaError::UndefinedName { path, name, .. } if path == "$.fields[f].type" && name == "Missing"));
    AvroSchema::parse(
        r#"{"type":"record","name":"r","fields":[{"name":"f","type":["null","r"]}]}"#,
    )
    .expect("a record may refer to itself");
    assert!(matches!(
        parse_err(r#"{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"fixed","name":"r","size":1}}]}"#),
        SchemaError::DuplicateName { fullname, reason: "is defined twice", .. } if fullname == "r"
    ));
    assert!(matches!(
        parse_err(r#"{"type":"fixed","name":"int","size":1}"#),
        SchemaError::DuplicateName { .. }
    ));
    assert!(
        matches!(parse_err(r#"{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}"#),
        SchemaError::DuplicateField { name, .. } if name == "a")
    );
    assert!(matches!(
        parse_err(r#"{"type":"record","name":"1r","fields":[]}"#),
        SchemaError::InvalidName { kind: "name", .. }
    ));
    assert!(matches!(
        parse_err(r#"{"type":"record","name":"r","namespace":"a..b","fields":[]}"#),
        SchemaError::InvalidName {
            kind: "namespace",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(r#"{"type":"int"}"#).replace(r#""name":"f""#, r#""name":"f-x""#)),
        SchemaError::InvalidName {
            kind: "field name",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(
            r#"{"type":"enum","name":"E","symbols":["A","A"]}"#
        )),
        SchemaError::InvalidSymbol {
            reason: "is listed twice",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with(
            r#"{"type":"enum","name":"E","symbols":["A"],"default":"B"}"#
        )),
        SchemaError::InvalidSymbol {
            reason: "is the default but not a symbol",
            ..
        }
    ));
    assert!(matches!(
        parse_err(&record_with("[]")),
        SchemaError::InvalidUnion { .. }
    ));
    assert!(matches!(parse_err(&record_with(r#"["null",["int"]]"#)),
        SchemaError::InvalidUnion { path, .. } if path == "$.fields[f].type[1]"));
    assert!(matches!(
        parse_err(&record_with(r#"["null","null"]"#)),
        SchemaError::InvalidUnion { .. }
    ));
}

#[test]
fn unions_with_two_types_are_refused_clearly() {
    let err = parse_err(&record_with(
        r#"["null","int",{"type":"string","logicalType":"uuid"}]"#,
    ));
    let SchemaError::UnsupportedUnion { path, branches } = &err else {
        panic!("expected UnsupportedUnion, got {err:?}");
    };
    assert_eq!(path, "$.fields[f].type");
    assert_eq!(branches, &["int".to_string(), "string (uuid)".to_string()]);
    assert_eq!(
        err.to_string(),
        "unsupported union at $.fields[f].type: 2 non-null branches (int, string (uuid)); \
         only unions of \"null\" and one type can be written"
    );
    // One branch, with or without null, is fine.
    AvroSchema::parse(&record_with(r#"["int"]"#)).expect("single-branch union");
    AvroSchema::parse(&record_with(r#"["null"]"#)).expect("null-only union parses");
}

#[test]
fn logical_type_errors() {
    let cases = [
        (
            r#"{"type":"bytes","logicalType":"decimal","precision":4,"scale":5}"#,
            "scale 5 exceeds precision 4",
        ),
        (
            r#"{"type":"bytes","logicalType":"decimal","precision":0}"#,
            "precision must be at least 1",
        ),
        (
            r#"{"type":"fixed","name":"x","size":5,"logicalType":"decimal","precision":12,"scale":0}"#,
            "precision 12 does not fit fixed(5) (at most 11 digits)",
        ),
        (
            r#"{"type":"int","logicalType":"decimal","precision":4}"#,
            "must annotate bytes or fixed, not int",
        ),
        (
            r#"{"type":"long","logicalType":"date"}"#,
            "must annotate int, not long",
        ),
        (
            r#"{"type":"int","logicalType":"timestamp-micros"}"#,
            "must annotate long, not int",
        ),
        (
            r#"{"type":"bytes","logicalType":"uuid"}"#,
            "must annotate string, not bytes",
        ),
        (
            r#"{"type":"fixed","name":"x","size":16,"logicalType":"uuid"}"#,
            "must annotate a primitive, not fixed(16)",
        ),
    ];
    for (json, reason) in cases {
        match parse_err(&record_with(json)) {
            SchemaError::InvalidLogicalType {
                path, reason: got, ..
            } => {
                assert_eq!(path, "$.fields[f].type", "{json}");
                assert_eq!(got, reason, "{json}");
            }
            other => panic!("{json}: expected InvalidLogicalType, got {other:?}"),
        }
    }
    AvroSchema::parse(&record_with(
        r#"{"type":"fixed","name":"x","size":5,"logicalType":"decimal","precision":11,"scale":11}"#,
    ))
    .expect("11 digits fit fixed(5)");
}

#[test]
fn defaults_are_checked_against_the_first_branch() {
    let cases = [
        (r#"["null","string"]"#, r#""x""#),
        (r#"["string","null"]"#, "null"),
        (r#""int""#, "2147483648"),
        (r#""int""#, "1.5"),
        (r#""long""#, r#""1""#),
        (r#""boolean""#, "0"),
        (r#"{"type":"array","items":"int"}"#, r#"["a"]"#),
        (r#"{"type":"map","values":"int"}"#, "[]"),
        (r#"{"type":"enum","name":"E","symbols":["A"]}"#, r#""B""#),
        (
            r#"{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}"#,
            "{}",
        ),
    ];
    for (field_type, default) in cases {
        let text = format!(
            r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type},"default":{default}}}]}}"#
        );
        assert!(
            matches!(parse_err(&text), SchemaError::InvalidDefault { .. }),
            "{field_type} with default {default} must be refused"
        );
    }
    let ok = [
        (r#"["null","string"]"#, "null"),
        (r#"["string","null"]"#, r#""x""#),
        (r#""double""#, r#""-Infinity""#),
        (
            r#"{"type":"record","name":"S","fields":[{"name":"x","type":"int","default":1}]}"#,
            "{}",
        ),
        (r#"{"type":"fixed","name":"F","size":2}"#, r#""ab""#),
    ];
    for (field_type, default) in ok {
        let text = format!(
            r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type},"default":{default}}}]}}"#
        );
        AvroSchema::parse(&text)
            .unwrap_or_else(|e| panic!("{field_type} with default {default}: {e}"));
    }
}

#[test]
fn built_schemas_are_validated_too() {
    let bad = AvroSchema::Record(RecordSchema::new(
        Name::new("r"),
        vec![RecordField::new(
            "d",
            AvroSchema::logical(PrimitiveType::String, LogicalType::Date),
        )],
    ));
    assert!(matches!(
        bad.validate(),
        Err(SchemaError::InvalidLogicalType { .. })
    ));
    assert_eq!(
        "\"int\"".parse::<AvroSchema>().expect("FromStr"),
        AvroSchema::primitive(PrimitiveType::Int)
    );
}
