//! The Parquet schema of a base file: what arrow-rs derives from the Arrow schema, patched where parquet-avro
//! (the writer behind Spark-Hudi) would choose a different physical type or annotation for the table's Avro
//! schema. Hand the result to `ArrowWriterOptions::with_parquet_schema`.
//!
//! Patches (everything else is `ArrowSchemaConverter`'s output: 3-level `LIST` with `element`, `MAP` with
//! `key_value`, STRING for string and enum columns):
//! * `fixed(n)` + decimal(p,s) → `FIXED_LEN_BYTE_ARRAY(n) DECIMAL(p,s)` (arrow-rs would use INT32/INT64 for
//!   p ≤ 18). arrow-rs writes Decimal128 values into FIXED_LEN_BYTE_ARRAY with exactly
//!   [`decimal_min_bytes`]`(p)` bytes, whatever the column's declared length, so `n` must be that minimum (it is
//!   for every Spark-written schema); another `n` is refused rather than written corrupt.
//! * `bytes` + decimal(p,s) → `FIXED_LEN_BYTE_ARRAY(decimal_min_bytes(p)) DECIMAL(p,s)`, not parquet-avro's
//!   `BINARY DECIMAL`: arrow-rs 59 cannot write a Decimal128 array into a BYTE_ARRAY column (its byte-array
//!   path accepts only string/binary arrays and the generic path has no decimal case for it). Readers resolve
//!   by the DECIMAL annotation, and parquet-avro reads a fixed-length column into an Avro `bytes` field.
//! * `timestamp-*` → `TIMESTAMP(unit, isAdjustedToUTC=true)`, `local-timestamp-*` → `isAdjustedToUTC=false`
//!   (already so when the Arrow type is [`super::arrow::avro_to_arrow`]'s; enforced here).
//! * `time-millis` / `time-micros` → `TIME(unit, isAdjustedToUTC=true)` as parquet-avro writes (arrow-rs writes
//!   `false` unless told otherwise).
//!
//! Deliberate differences from parquet-avro that remain: lists are 3-level (`list`/`element`) instead of the
//! legacy 2-level `array` form, enum columns are `BINARY (STRING)` instead of `BINARY (ENUM)` (the same bytes;
//! STRING keeps arrow-based readers returning strings), and the map entries group carries no
//! `MAP_KEY_VALUE` converted type. The message name is the Avro record's full name, as parquet-avro's.
//!
//! Invariant: the Arrow schema must be [`super::arrow::avro_to_arrow`] of the Avro record (same columns, same
//! order, same types and nullability), optionally preceded by the five meta columns when the Avro record does
//! not contain them; anything else is refused, because the patches would then describe the wrong columns.

use std::sync::Arc;

use arrow_schema::{DataType, Schema};
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{
    LogicalType as ParquetLogicalType, Repetition, TimeUnit as ParquetTimeUnit,
    Type as PhysicalType,
};
use parquet::schema::types::{SchemaDescriptor, Type, TypePtr};

use super::arrow::avro_to_arrow;
use super::avro::{
    decimal_min_bytes, namespace_of, AvroSchema, LogicalType, NamedTypes, PrimitiveType,
};
use super::meta::is_meta_column;
use super::{SchemaError, SchemaResult};

/// The Parquet schema for writing `arrow` (the batch schema) as a file whose Avro schema is `avro`.
pub fn parquet_schema_for(arrow: &Schema, avro: &AvroSchema) -> SchemaResult<SchemaDescriptor> {
    let names = avro.validate()?;
    let AvroSchema::Record(record) = avro else {
        return Err(SchemaError::NotARecord {
            context: "parquet_schema_for",
            found: avro.describe(),
        });
    };
    check_arrow_matches(arrow, avro)?;

    let root_name = record.name.fullname(None);
    let converted = ArrowSchemaConverter::new()
        .schema_root(&root_name)
        .convert(arrow)
        .map_err(|source| SchemaError::Parquet {
            path: root_name.clone(),
            source,
        })?;
    let patcher = Patcher { names };
    let child_ns = namespace_of(&root_name);
    let fields = converted
        .root_schema()
        .get_fields()
        .iter()
        .map(|column| match record.field(column.name()) {
            Some(field) => patcher.patch(column, &field.schema, child_ns, column.name()),
            None => Ok(column.clone()),
        })
        .collect::<SchemaResult<Vec<_>>>()?;
    let root = Type::group_type_builder(&root_name)
        .with_fields(fields)
        .build()
        .map_err(|source| SchemaError::Parquet {
            path: root_name.clone(),
            source,
        })?;
    Ok(SchemaDescriptor::new(Arc::new(root)))
}

/// Refuses an Arrow schema that is not the Avro record's mapping (plus leading meta columns).
fn check_arrow_matches(arrow: &Schema, avro: &AvroSchema) -> SchemaResult<()> {
    let expected = avro_to_arrow(avro)?;
    let record_has = |name: &str| expected.fields().iter().any(|f| f.name() == name);
    let mut actual = arrow.fields().iter().peekable();
    // Meta columns the Avro record does not list: nullable strings, before the data columns.
    while let Some(f) = actual.next_if(|f| is_meta_column(f.name()) && !record_has(f.name())) {
        if f.data_type() != &DataType::Utf8 || !f.is_nullable() {
            return Err(SchemaError::ArrowMismatch {
                path: f.name().clone(),
                reason: format!(
                    "a meta column must be nullable Utf8, found {}",
                    f.data_type()
                ),
            });
        }
    }
    let actual: Vec<_> = actual.collect();
    for (i, want) in expected.fields().iter().enumerate() {
        let Some(got) = actual.get(i) else {
            return Err(SchemaError::ArrowMismatch {
                path: want.name().clone(),
                reason: "missing from the Arrow schema (columns must follow the Avro field order)"
                    .to_string(),
            });
        };
        if got.name() != want.name() {
            return Err(SchemaError::ArrowMismatch {
                path: got.name().clone(),
                reason: format!(
                    "found where Avro field {:?} belongs (same order required)",
                    want.name()
                ),
            });
        }
        if got.data_type() != want.data_type() || got.is_nullable() != want.is_nullable() {
            return Err(SchemaError::ArrowMismatch {
                path: got.name().clone(),
                reason: format!(
                    "type {} (nullable {}) but the Avro schema maps to {} (nullable {})",
                    got.data_type(),
                    got.is_nullable(),
                    want.data_type(),
                    want.is_nullable()
                ),
            });
        }
    }
    if let Some(extra) = actual.get(expected.fields().len()) {
        return Err(SchemaError::ArrowMismatch {
            path: extra.name().clone(),
            reason: "not in the Avro schema".to_string(),
        });
    }
    Ok(())
}

struct Patcher<'a> {
    names: NamedTypes<'a>,
}

impl<'a> Patcher<'a> {
    /// `column` (ArrowSchemaConverter's type for a value of Avro type `avro`) with the module's patches.
    fn patch(
        &self,
        column: &TypePtr,
        avro: &'a AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> SchemaResult<TypePtr> {
        match avro.non_null() {
            AvroSchema::Reference(name) => match self.names.resolve(name, ns) {
                Some((full, target)) => self.patch(column, target, namespace_of(&full), path),
                None => Err(mismatch(path, format!("{name} is not a defined type"))),
            },
            AvroSchema::Record(record) => {
                let full = record.name.fullname(ns);
                let child_ns = namespace_of(&full);
                let children = group_fields(column, path)?
                    .iter()
                    .map(|child| {
                        let cpath = format!("{path}.{}", child.name());
                        match record.field(child.name()) {
                            Some(field) => self.patch(child, &field.schema, child_ns, &cpath),
                            None => Err(mismatch(&cpath, "not in the Avro record".to_string())),
                        }
                    })
                    .collect::<SchemaResult<Vec<_>>>()?;
                regroup(column, children, path)
            }
            AvroSchema::Array(array) => {
                // group (LIST) { repeated group list { element } }
                let [list] = group_fields(column, path)? else {
                    return Err(mismatch(
                        path,
                        "a LIST group must have one repeated child".to_string(),
                    ));
                };
                let [element] = group_fields(list, path)? else {
                    return Err(mismatch(
                        path,
                        "a LIST's repeated group must have one element".to_string(),
                    ));
                };
                let element = self.patch(element, &array.items, ns, &format!("{path}[]"))?;
                let list = regroup(list, vec![element], path)?;
                regroup(column, vec![list], path)
            }
            AvroSchema::Map(map) => {
                // group (MAP) { repeated group key_value { key; value } }
                let [entries] = group_fields(column, path)? else {
                    return Err(mismatch(
                        path,
                        "a MAP group must have one repeated child".to_string(),
                    ));
                };
                let [key, value] = group_fields(entries, path)? else {
                    return Err(mismatch(
                        path,
                        "map entries must have a key and a value".to_string(),
                    ));
                };
                let value = self.patch(value, &map.values, ns, &format!("{path}{{}}"))?;
                let entries = regroup(entries, vec![key.clone(), value], path)?;
                regroup(column, vec![entries], path)
            }
            AvroSchema::Fixed(fixed) => match fixed.logical_type {
                Some(LogicalType::Decimal { precision, scale }) => {
                    let written = decimal_min_bytes(precision);
                    if fixed.size != written {
                        return Err(mismatch(
                            path,
                            format!(
                                "decimal({precision},{scale}) on fixed({}) cannot be written: arrow-rs writes \
                                 {written}-byte values for that precision; declare fixed({written})",
                                fixed.size
                            ),
                        ));
                    }
                    decimal_leaf(column, fixed.size, precision, scale, path)
                }
                _ => Ok(column.clone()),
            },
            AvroSchema::Primitive(p) => match (p.primitive, p.logical_type) {
                (PrimitiveType::Bytes, Some(LogicalType::Decimal { precision, scale })) => {
                    decimal_leaf(column, decimal_min_bytes(precision), precision, scale, path)
                }
                (_, Some(LogicalType::TimestampMillis)) => annotate(
                    column,
                    ParquetLogicalType::timestamp(true, ParquetTimeUnit::MILLIS),
                    path,
                ),
                (_, Some(LogicalType::TimestampMicros)) => annotate(
                    column,
                    ParquetLogicalType::timestamp(true, ParquetTimeUnit::MICROS),
                    path,
                ),
                (_, Some(LogicalType::LocalTimestampMillis)) => annotate(
                    column,
                    ParquetLogicalType::timestamp(false, ParquetTimeUnit::MILLIS),
                    path,
                ),
                (_, Some(LogicalType::LocalTimestampMicros)) => annotate(
                    column,
                    ParquetLogicalType::timestamp(false, ParquetTimeUnit::MICROS),
                    path,
                ),
                (_, Some(LogicalType::TimeMillis)) => annotate(
                    column,
                    ParquetLogicalType::time(true, ParquetTimeUnit::MILLIS),
                    path,
                ),
                (_, Some(LogicalType::TimeMicros)) => annotate(
                    column,
                    ParquetLogicalType::time(true, ParquetTimeUnit::MICROS),
                    path,
                ),
                _ => Ok(column.clone()),
            },
            AvroSchema::Enum(_) | AvroSchema::Union(_) => Ok(column.clone()),
        }
    }
}

fn mismatch(path: &str, reason: String) -> SchemaError {
    SchemaError::ArrowMismatch {
        path: path.to_string(),
        reason,
    }
}

fn parquet_err(path: &str) -> impl FnOnce(parquet::errors::ParquetError) -> SchemaError + '_ {
    move |source| SchemaError::Parquet {
        path: path.to_string(),
        source,
    }
}

fn group_fields<'t>(column: &'t Type, path: &str) -> SchemaResult<&'t [TypePtr]> {
    match column {
        Type::GroupType { fields, .. } => Ok(fields),
        Type::PrimitiveType { .. } => Err(mismatch(
            path,
            "expected a group, found a primitive column".to_string(),
        )),
    }
}

fn repetition(column: &Type) -> Option<Repetition> {
    let info = column.get_basic_info();
    info.has_repetition().then(|| info.repetition())
}

fn id(column: &Type) -> Option<i32> {
    let info = column.get_basic_info();
    info.has_id().then(|| info.id())
}

/// `column` with new children, everything else kept.
fn regroup(column: &Type, fields: Vec<TypePtr>, path: &str) -> SchemaResult<TypePtr> {
    let info = column.get_basic_info();
    let mut builder = Type::group_type_builder(info.name())
        .with_fields(fields)
        .with_converted_type(info.converted_type())
        .with_logical_type(info.logical_type_ref().cloned())
        .with_id(id(column));
    if let Some(r) = repetition(column) {
        builder = builder.with_repetition(r);
    }
    builder.build().map(Arc::new).map_err(parquet_err(path))
}

/// A FIXED_LEN_BYTE_ARRAY(size) DECIMAL(precision, scale) leaf in place of `column`.
fn decimal_leaf(
    column: &Type,
    size: usize,
    precision: u32,
    scale: u32,
    path: &str,
) -> SchemaResult<TypePtr> {
    let (Ok(size), Ok(precision), Ok(scale)) = (
        i32::try_from(size),
        i32::try_from(precision),
        i32::try_from(scale),
    ) else {
        return Err(mismatch(
            path,
            "decimal parameters out of range".to_string(),
        ));
    };
    Type::primitive_type_builder(column.name(), PhysicalType::FIXED_LEN_BYTE_ARRAY)
        .with_repetition(repetition(column).unwrap_or(Repetition::OPTIONAL))
        .with_length(size)
        .with_logical_type(Some(ParquetLogicalType::decimal(scale, precision)))
        .with_precision(precision)
        .with_scale(scale)
        .with_id(id(column))
        .build()
        .map(Arc::new)
        .map_err(parquet_err(path))
}

/// `column` (a primitive) with another logical type on the same physical type.
fn annotate(column: &Type, logical_type: ParquetLogicalType, path: &str) -> SchemaResult<TypePtr> {
    let Type::PrimitiveType { physical_type, .. } = column else {
        return Err(mismatch(
            path,
            "expected a primitive column, found a group".to_string(),
        ));
    };
    Type::primitive_type_builder(column.name(), *physical_type)
        .with_repetition(repetition(column).unwrap_or(Repetition::OPTIONAL))
        .with_logical_type(Some(logical_type))
        .with_id(id(column))
        .build()
        .map(Arc::new)
        .map_err(parquet_err(path))
}

#[cfg(test)]
mod tests {
    use arrow_schema::Field;
    use parquet::basic::ConvertedType;
    use parquet::schema::types::ColumnDescPtr;

    use super::*;
    use crate::schema::meta::{arrow_fields, with_meta_fields};

    const AVRO: &str = concat!(
        r#"{"type":"record","name":"t_record","namespace":"hoodie.t","fields":["#,
        r#"{"name":"id","type":"int"},"#,
        r#"{"name":"dec","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.dec","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},"#,
        r#"{"name":"bdec","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":2}},"#,
        r#"{"name":"small","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}},"#,
        r#"{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},"#,
        r#"{"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},"#,
        r#"{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},"#,
        r#"{"name":"tms","type":{"type":"int","logicalType":"time-millis"}},"#,
        r#"{"name":"tus","type":{"type":"long","logicalType":"time-micros"}},"#,
        r#"{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},"#,
        r#"{"name":"arr","type":{"type":"array","items":["null",{"type":"record","name":"arr","fields":[{"name":"d","type":{"type":"fixed","name":"fixed","size":5,"logicalType":"decimal","precision":10,"scale":5}}]}]}},"#,
        r#"{"name":"m","type":{"type":"map","values":["null","hoodie.t.fixed"]}},"#,
        r#"{"name":"s","type":{"type":"record","name":"s","fields":[{"name":"t","type":{"type":"long","logicalType":"time-micros"}}]}}"#,
        r#"]}"#
    );

    fn descriptor(avro: &AvroSchema, with_meta_columns: bool) -> SchemaDescriptor {
        let mut fields = if with_meta_columns {
            arrow_fields()
        } else {
            Vec::new()
        };
        fields.extend(
            avro_to_arrow(avro)
                .expect("arrow")
                .fields()
                .iter()
                .map(|f| f.as_ref().clone()),
        );
        parquet_schema_for(&Schema::new(fields), avro).expect("parquet schema")
    }

    fn column<'d>(descr: &'d SchemaDescriptor, path: &str) -> &'d ColumnDescPtr {
        descr
            .columns()
            .iter()
            .find(|c| c.path().string() == path)
            .unwrap_or_else(|| panic!("no column {path}"))
    }

    #[test]
    fn decimals_timestamps_and_times_are_patched() {
        let avro = AvroSchema::parse(AVRO).expect("parses");
        let descr = descriptor(&avro, false);
        assert_eq!(descr.root_schema().name(), "hoodie.t.t_record");
        let flba = |path: &str, len: i32, p: i32, s: i32| {
            let c = column(&descr, path);
            assert_eq!(
                c.physical_type(),
                PhysicalType::FIXED_LEN_BYTE_ARRAY,
                "{path}"
            );
            assert_eq!(c.type_length(), len, "{path}");
            assert_eq!(
                c.logical_type_ref(),
                Some(&ParquetLogicalType::decimal(s, p)),
                "{path}"
            );
            assert_eq!((c.type_precision(), c.type_scale()), (p, s), "{path}");
            assert_eq!(c.converted_type(), ConvertedType::DECIMAL, "{path}");
        };
        flba("dec", 5, 10, 5);
        flba("bdec", 9, 20, 2);
        flba("small", 2, 4, 1);
        flba("arr.list.element.d", 5, 10, 5);
        flba("m.key_value.value", 5, 10, 5);
        assert_eq!(
            column(&descr, "dec")
                .self_type()
                .get_basic_info()
                .repetition(),
            Repetition::OPTIONAL
        );
        assert_eq!(
            column(&descr, "bdec")
                .self_type()
                .get_basic_info()
                .repetition(),
            Repetition::REQUIRED
        );

        let logical = |path: &str| column(&descr, path).logical_type_ref().cloned();
        assert_eq!(
            logical("ts"),
            Some(ParquetLogicalType::timestamp(true, ParquetTimeUnit::MICROS))
        );
        assert_eq!(
            logical("tsms"),
            Some(ParquetLogicalType::timestamp(true, ParquetTimeUnit::MILLIS))
        );
        assert_eq!(
            logical("lts"),
            Some(ParquetLogicalType::timestamp(
                false,
                ParquetTimeUnit::MICROS
            ))
        );
        assert_eq!(
            logical("tms"),
            Some(ParquetLogicalType::time(true, ParquetTimeUnit::MILLIS))
        );
        assert_eq!(
            logical("tus"),
            Some(ParquetLogicalType::time(true, ParquetTimeUnit::MICROS))
        );
        assert_eq!(
            logical("s.t"),
            Some(ParquetLogicalType::time(true, ParquetTimeUnit::MICROS))
        );
        assert_eq!(column(&descr, "tms").physical_type(), PhysicalType::INT32);
        assert_eq!(logical("e"), Some(ParquetLogicalType::String));
        assert_eq!(column(&descr, "id").physical_type(), PhysicalType::INT32);
        assert_eq!(
            column(&descr, "m.key_value.key").logical_type_ref(),
            Some(&ParquetLogicalType::String)
        );
        // The LIST / MAP groups keep their annotations.
        let root = descr.root_schema();
        let arr = root
            .get_fields()
            .iter()
            .find(|f| f.name() == "arr")
            .expect("arr");
        assert_eq!(
            arr.get_basic_info().logical_type_ref(),
            Some(&ParquetLogicalType::List)
        );
        let m = root
            .get_fields()
            .iter()
            .find(|f| f.name() == "m")
            .expect("m");
        assert_eq!(
            m.get_basic_info().logical_type_ref(),
            Some(&ParquetLogicalType::Map)
        );
    }

    #[test]
    fn without_the_patch_arrow_rs_would_write_int64() {
        let avro = AvroSchema::parse(AVRO).expect("parses");
        let plain = ArrowSchemaConverter::new()
            .convert(&avro_to_arrow(&avro).expect("arrow"))
            .expect("converts");
        assert_eq!(column(&plain, "dec").physical_type(), PhysicalType::INT64);
        assert_eq!(column(&plain, "small").physical_type(), PhysicalType::INT32);
        assert_eq!(
            column(&plain, "tms").logical_type_ref(),
            Some(&ParquetLogicalType::time(false, ParquetTimeUnit::MILLIS))
        );
    }

    #[test]
    fn meta_columns_pass_through() {
        let avro = AvroSchema::parse(AVRO).expect("parses");
        let data_only = descriptor(&avro, false);
        // Arrow has the meta columns, Avro does not.
        let with_columns = descriptor(&avro, true);
        // The Avro has them too (the footer schema), so its Arrow mapping starts with them.
        let footer = descriptor(&with_meta_fields(&avro), false);
        for descr in [&with_columns, &footer] {
            assert_eq!(descr.num_columns(), data_only.num_columns() + 5);
            for (i, name) in crate::schema::meta::META_COLUMNS.iter().enumerate() {
                let c = descr.column(i);
                assert_eq!(c.name(), *name);
                assert_eq!(c.physical_type(), PhysicalType::BYTE_ARRAY);
                assert_eq!(c.logical_type_ref(), Some(&ParquetLogicalType::String));
                assert_eq!(
                    c.self_type().get_basic_info().repetition(),
                    Repetition::OPTIONAL
                );
            }
            for i in 0..data_only.num_columns() {
                assert_eq!(
                    descr.column(i + 5).self_type(),
                    data_only.column(i).self_type()
                );
            }
        }
    }

    #[test]
    fn mismatched_arrow_schemas_are_refused() {
        let avro = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"]}]}"#,
        )
        .expect("parses");
        let a = Field::new("a", DataType::Int32, false);
        let b = Field::new("b", DataType::Utf8, true);
        let refuse = |fields: Vec<Field>, path: &str| match parquet_schema_for(
            &Schema::new(fields),
            &avro,
        ) {
            Err(SchemaError::ArrowMismatch { path: got, .. }) => assert_eq!(got, path),
            other => panic!("expected a mismatch at {path}, got {other:?}"),
        };
        refuse(vec![b.clone(), a.clone()], "b");
        refuse(vec![a.clone()], "b");
        refuse(
            vec![a.clone(), b.clone(), Field::new("c", DataType::Int32, true)],
            "c",
        );
        refuse(vec![a.clone(), Field::new("b", DataType::Utf8, false)], "b");
        refuse(
            vec![Field::new("a", DataType::Int64, false), b.clone()],
            "a",
        );
        refuse(
            vec![
                Field::new(crate::schema::meta::COMMIT_TIME_COL, DataType::Int32, true),
                a.clone(),
                b.clone(),
            ],
            crate::schema::meta::COMMIT_TIME_COL,
        );
        parquet_schema_for(&Schema::new(vec![a, b]), &avro).expect("matching schema");
    }

    #[test]
    fn oversized_fixed_decimals_are_refused() {
        let avro = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"d","type":{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":10,"scale":2}}]}"#,
        )
        .expect("a valid Avro schema");
        let arrow = avro_to_arrow(&avro).expect("arrow");
        match parquet_schema_for(&arrow, &avro) {
            Err(SchemaError::ArrowMismatch { path, reason }) => {
                assert_eq!(path, "d");
                assert!(reason.contains("declare fixed(5)"), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
