//! Avro ⇄ Arrow: the Arrow schema of the record batches we build and write, derived from the table's Avro
//! schema, and the Avro schema of a table created from an Arrow schema.
//!
//! Avro → Arrow ([`avro_to_arrow`]), the data columns only (the meta columns are [`super::meta::arrow_fields`]):
//!
//! | Avro | Arrow |
//! |---|---|
//! | boolean, int, long, float, double | Boolean, Int32, Int64, Float32, Float64 |
//! | string (also uuid), enum | Utf8 |
//! | bytes | Binary |
//! | fixed(n) | FixedSizeBinary(n) |
//! | bytes/fixed + decimal(p,s), p ≤ 38 | Decimal128(p,s) (p > 38 is an error) |
//! | int + date | Date32 |
//! | int + time-millis / long + time-micros | Time32(ms) / Time64(µs) |
//! | long + timestamp-millis/-micros | Timestamp(ms/µs, "UTC") |
//! | long + local-timestamp-millis/-micros | Timestamp(ms/µs, none) |
//! | record | Struct |
//! | array | List, item field `element` |
//! | map | Map, entries `key_value` (non-null) of non-null Utf8 `key` and `value` |
//!
//! Invariants: a `["null", T]` / `[T, "null"]` union gives a nullable field of T's type, every other type a
//! non-nullable field; names are field names only (Avro record names, namespaces and docs go nowhere; no Arrow
//! metadata is set), so the output compares equal to what arrow-rs reads back from our Parquet files.
//! Recursive records and the bare `null` type have no column form and are errors.
//!
//! Arrow → Avro ([`arrow_to_avro`]) writes what Spark-Hudi would: nullable columns as `["null", T]` with
//! `"default": null`, nested records named after their field in namespace `<parent namespace>.<parent name>`,
//! decimals as `fixed` named `fixed` in namespace `<record namespace>.<field>` with Spark's minimal size
//! (§4.4 of the format notes). Int8/Int16 become `int` (Spark's byte/short), so they map back as Int32.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

use super::avro::{
    decimal_min_bytes, namespace_of, AvroSchema, FixedSchema, LogicalType, Name, NamedTypes,
    PrimitiveType, RecordField, RecordSchema,
};
use super::{SchemaError, SchemaResult};

/// Name of a list's item field (arrow-rs and the Parquet LIST spec).
pub const LIST_ITEM_NAME: &str = "element";
/// Name of a map's entries struct (the Parquet MAP spec).
pub const MAP_ENTRIES_NAME: &str = "key_value";
/// Name of a map's key field.
pub const MAP_KEY_NAME: &str = "key";
/// Name of a map's value field.
pub const MAP_VALUE_NAME: &str = "value";
/// Time zone of Avro `timestamp-*` columns.
pub const UTC: &str = "UTC";

/// The Arrow schema of the data columns of a table whose Avro schema is `schema` (a record).
pub fn avro_to_arrow(schema: &AvroSchema) -> SchemaResult<Schema> {
    let names = schema.validate()?;
    let AvroSchema::Record(record) = schema else {
        return Err(SchemaError::NotARecord {
            context: "table schema",
            found: schema.describe(),
        });
    };
    let mut mapper = ToArrow {
        names,
        stack: Vec::new(),
    };
    let fields = mapper.record_fields(record, None, "")?;
    Ok(Schema::new(fields))
}

/// The Arrow field for one Avro type (`schema` must be self-contained: references resolve within it).
pub fn avro_to_arrow_field(name: &str, schema: &AvroSchema) -> SchemaResult<Field> {
    let names = schema.validate()?;
    let mut mapper = ToArrow {
        names,
        stack: Vec::new(),
    };
    mapper.field(name, schema, None, name)
}

struct ToArrow<'a> {
    names: NamedTypes<'a>,
    /// Full names of the records being mapped, to refuse recursion.
    stack: Vec<String>,
}

impl<'a> ToArrow<'a> {
    fn record_fields(
        &mut self,
        record: &'a RecordSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<Fields> {
        let full = record.name.fullname(ns);
        if self.stack.contains(&full) {
            return Err(SchemaError::AvroToArrow {
                path: path_or_top(path),
                reason: format!(
                    "record {full} contains itself; recursive types have no column form"
                ),
            });
        }
        self.stack.push(full.clone());
        let child_ns = namespace_of(&full);
        let fields = record
            .fields
            .iter()
            .map(|f| {
                let fpath = if path.is_empty() {
                    f.name.clone()
                } else {
                    format!("{path}.{}", f.name)
                };
                self.field(&f.name, &f.schema, child_ns, &fpath)
            })
            .collect::<SchemaResult<Vec<_>>>()?;
        self.stack.pop();
        Ok(Fields::from(fields))
    }

    fn field(
        &mut self,
        name: &str,
        schema: &'a AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<Field> {
        let (inner, nullable) = match schema {
            AvroSchema::Union(branches) => {
                let mut non_null = branches.iter().filter(|b| !b.is_null());
                match (non_null.next(), non_null.next()) {
                    (Some(inner), None) => (inner, branches.len() > 1),
                    (None, _) => {
                        return Err(SchemaError::AvroToArrow {
                            path: path.to_string(),
                            reason: "a union of only \"null\" has no column type".to_string(),
                        })
                    }
                    (Some(_), Some(_)) => {
                        return Err(SchemaError::UnsupportedUnion {
                            path: path.to_string(),
                            branches: branches
                                .iter()
                                .filter(|b| !b.is_null())
                                .map(AvroSchema::describe)
                                .collect(),
                        })
                    }
                }
            }
            other => (other, false),
        };
        let data_type = self.data_type(inner, ns, path)?;
        Ok(Field::new(name, data_type, nullable))
    }

    fn data_type(
        &mut self,
        schema: &'a AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<DataType> {
        let fail = |reason: String| {
            Err(SchemaError::AvroToArrow {
                path: path.to_string(),
                reason,
            })
        };
        Ok(match schema {
            AvroSchema::Primitive(p) => match (p.primitive, p.logical_type) {
                (PrimitiveType::Null, _) => {
                    return fail("the null type has no column type outside a union".into())
                }
                (PrimitiveType::Boolean, None) => DataType::Boolean,
                (PrimitiveType::Int, None) => DataType::Int32,
                (PrimitiveType::Int, Some(LogicalType::Date)) => DataType::Date32,
                (PrimitiveType::Int, Some(LogicalType::TimeMillis)) => {
                    DataType::Time32(TimeUnit::Millisecond)
                }
                (PrimitiveType::Long, None) => DataType::Int64,
                (PrimitiveType::Long, Some(LogicalType::TimeMicros)) => {
                    DataType::Time64(TimeUnit::Microsecond)
                }
                (PrimitiveType::Long, Some(LogicalType::TimestampMillis)) => {
                    DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into()))
                }
                (PrimitiveType::Long, Some(LogicalType::TimestampMicros)) => {
                    DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
                }
                (PrimitiveType::Long, Some(LogicalType::LocalTimestampMillis)) => {
                    DataType::Timestamp(TimeUnit::Millisecond, None)
                }
                (PrimitiveType::Long, Some(LogicalType::LocalTimestampMicros)) => {
                    DataType::Timestamp(TimeUnit::Microsecond, None)
                }
                (PrimitiveType::Float, None) => DataType::Float32,
                (PrimitiveType::Double, None) => DataType::Float64,
                (PrimitiveType::Bytes, None) => DataType::Binary,
                (PrimitiveType::Bytes, Some(LogicalType::Decimal { precision, scale })) => {
                    decimal(precision, scale, path)?
                }
                (PrimitiveType::String, None | Some(LogicalType::Uuid)) => DataType::Utf8,
                (primitive, Some(lt)) => {
                    return fail(format!(
                        "logical type {} cannot annotate {}",
                        lt.name(),
                        primitive.name()
                    ))
                }
            },
            AvroSchema::Record(r) => DataType::Struct(self.record_fields(r, ns, path)?),
            AvroSchema::Enum(_) => DataType::Utf8,
            AvroSchema::Array(a) => {
                let item = self.field(LIST_ITEM_NAME, &a.items, ns, &format!("{path}[]"))?;
                DataType::List(Arc::new(item))
            }
            AvroSchema::Map(m) => {
                let key = Field::new(MAP_KEY_NAME, DataType::Utf8, false);
                let value = self.field(MAP_VALUE_NAME, &m.values, ns, &format!("{path}{{}}"))?;
                let entries = DataType::Struct(Fields::from(vec![key, value]));
                DataType::Map(
                    Arc::new(Field::new(MAP_ENTRIES_NAME, entries, false)),
                    false,
                )
            }
            AvroSchema::Fixed(f) => match f.logical_type {
                Some(LogicalType::Decimal { precision, scale }) => decimal(precision, scale, path)?,
                None => match i32::try_from(f.size) {
                    Ok(size) => DataType::FixedSizeBinary(size),
                    Err(_) => return fail(format!("fixed size {} is too large", f.size)),
                },
                Some(lt) => {
                    return fail(format!("logical type {} cannot annotate fixed", lt.name()))
                }
            },
            AvroSchema::Union(_) => return fail("a union directly inside a union".into()),
            AvroSchema::Reference(name) => {
                let Some((full, target)) = self.names.resolve(name, ns) else {
                    return fail(format!("{name} is not a defined type"));
                };
                let target_ns = namespace_of(&full).map(str::to_string);
                return self.data_type(target, target_ns.as_deref(), path);
            }
        })
    }
}

fn decimal(precision: u32, scale: u32, path: &str) -> SchemaResult<DataType> {
    match (u8::try_from(precision), i8::try_from(scale)) {
        (Ok(p), Ok(s)) if p <= arrow_schema::DECIMAL128_MAX_PRECISION => {
            Ok(DataType::Decimal128(p, s))
        }
        _ => Err(SchemaError::AvroToArrow {
            path: path.to_string(),
            reason: format!(
                "decimal({precision},{scale}) exceeds Decimal128's {} digits",
                arrow_schema::DECIMAL128_MAX_PRECISION
            ),
        }),
    }
}

fn path_or_top(path: &str) -> String {
    if path.is_empty() {
        "$".to_string()
    } else {
        path.to_string()
    }
}

/// The Avro schema (a record named `record_name` in `namespace`) for a table whose data columns are `schema`,
/// in Spark-Hudi's style (see the module doc). Use `<table>_record` / `hoodie.<table>` for Spark's names.
pub fn arrow_to_avro(
    schema: &Schema,
    record_name: &str,
    namespace: Option<&str>,
) -> SchemaResult<AvroSchema> {
    let record = struct_to_record(schema.fields(), record_name, namespace, "")?;
    let avro = AvroSchema::Record(record);
    avro.validate()?;
    Ok(avro)
}

fn struct_to_record(
    fields: &Fields,
    record_name: &str,
    namespace: Option<&str>,
    path: &str,
) -> SchemaResult<RecordSchema> {
    let child_ns = match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}.{record_name}"),
        _ => record_name.to_string(),
    };
    let fields = fields
        .iter()
        .map(|f| {
            let fpath = if path.is_empty() {
                f.name().clone()
            } else {
                format!("{path}.{}", f.name())
            };
            let t = arrow_type_to_avro(f.data_type(), f.name(), &child_ns, &fpath)?;
            Ok(if f.is_nullable() {
                RecordField::nullable(f.name().clone(), t)
            } else {
                RecordField::new(f.name().clone(), t)
            })
        })
        .collect::<SchemaResult<Vec<_>>>()?;
    let name = match namespace {
        Some(ns) => Name::with_namespace(record_name, ns),
        None => Name::new(record_name),
    };
    Ok(RecordSchema::new(name, fields))
}

/// One column's Avro type; `field_name` names nested records and `ns` is the namespace they live in.
fn arrow_type_to_avro(
    data_type: &DataType,
    field_name: &str,
    ns: &str,
    path: &str,
) -> SchemaResult<AvroSchema> {
    let fail = |reason: &'static str| {
        Err(SchemaError::ArrowToAvro {
            path: path.to_string(),
            data_type: data_type.to_string(),
            reason,
        })
    };
    let fixed_ns = if ns.is_empty() {
        field_name.to_string()
    } else {
        format!("{ns}.{field_name}")
    };
    let wrap = |inner: AvroSchema, nullable: bool| {
        if nullable {
            AvroSchema::nullable(inner)
        } else {
            inner
        }
    };
    Ok(match data_type {
        DataType::Boolean => AvroSchema::primitive(PrimitiveType::Boolean),
        DataType::Int8 | DataType::Int16 | DataType::Int32 => {
            AvroSchema::primitive(PrimitiveType::Int)
        }
        DataType::Int64 => AvroSchema::primitive(PrimitiveType::Long),
        DataType::Float32 => AvroSchema::primitive(PrimitiveType::Float),
        DataType::Float64 => AvroSchema::primitive(PrimitiveType::Double),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            AvroSchema::primitive(PrimitiveType::String)
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            AvroSchema::primitive(PrimitiveType::Bytes)
        }
        DataType::FixedSizeBinary(size) => match usize::try_from(*size) {
            Ok(size) => fixed(&fixed_ns, size, None),
            Err(_) => return fail("negative size"),
        },
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            let Ok(scale) = u32::try_from(*s) else {
                return fail("negative decimal scale has no Avro form");
            };
            let precision = u32::from(*p);
            fixed(
                &fixed_ns,
                decimal_min_bytes(precision),
                Some(LogicalType::Decimal { precision, scale }),
            )
        }
        DataType::Date32 => AvroSchema::logical(PrimitiveType::Int, LogicalType::Date),
        DataType::Time32(TimeUnit::Millisecond) => {
            AvroSchema::logical(PrimitiveType::Int, LogicalType::TimeMillis)
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            AvroSchema::logical(PrimitiveType::Long, LogicalType::TimeMicros)
        }
        DataType::Timestamp(unit, tz) => {
            let logical = match (unit, tz.is_some()) {
                (TimeUnit::Millisecond, true) => LogicalType::TimestampMillis,
                (TimeUnit::Microsecond, true) => LogicalType::TimestampMicros,
                (TimeUnit::Millisecond, false) => LogicalType::LocalTimestampMillis,
                (TimeUnit::Microsecond, false) => LogicalType::LocalTimestampMicros,
                _ => {
                    return fail(
                        "only millisecond and microsecond timestamps have an Avro logical type",
                    )
                }
            };
            AvroSchema::logical(PrimitiveType::Long, logical)
        }
        DataType::Struct(fields) => {
            if fields.is_empty() {
                return fail("an empty struct has no Parquet form");
            }
            AvroSchema::Record(struct_to_record(fields, field_name, Some(ns), path)?)
        }
        DataType::List(item) | DataType::LargeList(item) => {
            let inner = arrow_type_to_avro(item.data_type(), field_name, ns, &format!("{path}[]"))?;
            AvroSchema::array(wrap(inner, item.is_nullable()))
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return fail("map entries must be a struct");
            };
            let [key, value] = kv.iter().collect::<Vec<_>>()[..] else {
                return fail("map entries must have a key and a value");
            };
            if !matches!(
                key.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) {
                return fail("Avro map keys are strings");
            }
            let inner =
                arrow_type_to_avro(value.data_type(), field_name, ns, &format!("{path}{{}}"))?;
            AvroSchema::map(wrap(inner, value.is_nullable()))
        }
        _ => return fail("no Avro type maps to it"),
    })
}

fn fixed(namespace: &str, size: usize, logical_type: Option<LogicalType>) -> AvroSchema {
    AvroSchema::Fixed(FixedSchema {
        name: Name::with_namespace("fixed", namespace),
        doc: None,
        aliases: Vec::new(),
        size,
        logical_type,
        attributes: Default::default(),
    })
}

#[cfg(test)]
mod tests {
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
}
