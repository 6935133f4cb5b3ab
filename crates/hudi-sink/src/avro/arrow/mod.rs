//! Avro ⇄ Arrow: the schema mapping, and the datum codec between Avro binary datums and Arrow columns.
//!
//! The schema mapping gives the Arrow schema of the record batches we build and write, derived from the
//! table's Avro schema, and the Avro schema of a table created from an Arrow schema.
//!
//! Avro → Arrow ([`avro_to_arrow`]), the record's own fields only (Hudi's meta columns are added by the
//! table schema, not here):
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
//!
//! The datum codec works on bare datums of one record schema (no container, no codec; the caller frames
//! them): [`DatumEncoder`] writes a row of a record batch whose columns are the record's fields, walking each
//! value under its Avro schema; [`DatumDecoder`] decodes datums under the writer schema into
//! [`AvroValue`](super::AvroValue)s (unions resolved to their branch's value) and builds each column into the
//! Arrow array [`avro_to_arrow`] maps its field to, so a decoded batch has the schema of the encoded one.
//! Values follow the Avro specification: unions as branch index + value (the branch is the schema's null
//! branch for a null, its one other branch otherwise), decimals as two's-complement big-endian unscaled
//! integers (minimal length on `bytes`, sign-extended to the size on `fixed`), enums as symbol index.
//!
//! Invariants of the codec: a datum never panics the decoder, whatever its bytes: every length is checked
//! against what remains, nesting stops at [`MAX_DEPTH`], and zero-size items are bounded; a failure is a
//! [`DatumError`] locating the value (`$.field`, `[i]`, `{"key"}`) or the byte offset.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

use super::schema::{
    decimal_min_bytes, namespace_of, AvroSchema, FixedSchema, LogicalType, Name, NamedTypes,
    PrimitiveType, RecordField, RecordSchema, SchemaError, SchemaResult,
};

mod datum;
mod decode;
mod encode;

pub use datum::{DatumError, MAX_DEPTH};
pub use decode::DatumDecoder;
pub use encode::DatumEncoder;

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
mod tests;
