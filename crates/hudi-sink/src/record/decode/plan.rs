//! Building the columns from the table schema: Avro types resolved, defaults compiled, field indexes built.

use super::*;
use crate::avro::resolve::type_label;

pub(super) struct Plan<'s> {
    pub(super) names: NamedTypes<'s>,
}

pub(super) fn mismatch(path: &str, avro: &AvroSchema, data_type: &DataType) -> DecodeError {
    DecodeError::SchemaMismatch {
        reason: format!(
            "field `{path}`: Avro {} does not map to Arrow {data_type}",
            avro.describe()
        ),
    }
}

impl<'s> Plan<'s> {
    /// Follows references to the definition and the namespace its members live in.
    pub(super) fn resolve(
        &self,
        mut schema: &'s AvroSchema,
        mut ns: Option<String>,
        path: &str,
    ) -> Result<(&'s AvroSchema, Option<String>), DecodeError> {
        for _ in 0..64 {
            let AvroSchema::Reference(name) = schema else {
                return Ok((schema, ns));
            };
            let Some((full, target)) = self.names.resolve(name, ns.as_deref()) else {
                return Err(DecodeError::SchemaMismatch {
                    reason: format!("field `{path}`: {name} is not a defined type"),
                });
            };
            ns = namespace_of(&full).map(str::to_string);
            schema = target;
        }
        Err(DecodeError::SchemaMismatch {
            reason: format!("field `{path}`: references do not resolve"),
        })
    }

    pub(super) fn column(
        &self,
        schema: &'s AvroSchema,
        ns: Option<String>,
        field: &Field,
        path: &str,
    ) -> Result<Column, DecodeError> {
        let inner = match schema {
            AvroSchema::Union(branches) => {
                let mut non_null = branches.iter().filter(|b| !b.is_null());
                match (non_null.next(), non_null.next()) {
                    (Some(inner), None) => inner,
                    _ => return Err(mismatch(path, schema, field.data_type())),
                }
            }
            other => other,
        };
        let (inner, ns) = self.resolve(inner, ns, path)?;
        let data_type = field.data_type();
        let fail = || mismatch(path, inner, data_type);
        let data = match inner {
            AvroSchema::Primitive(prim) => match (prim.primitive, prim.logical_type, data_type) {
                (PrimitiveType::Boolean, None, DataType::Boolean) => {
                    Data::Boolean(BooleanBufferBuilder::new(0))
                }
                (PrimitiveType::Int, None, DataType::Int32) => {
                    Data::Int32(Vec::new(), IntKind::Int)
                }
                (PrimitiveType::Int, Some(LogicalType::Date), DataType::Date32) => {
                    Data::Int32(Vec::new(), IntKind::Date)
                }
                (
                    PrimitiveType::Int,
                    Some(LogicalType::TimeMillis),
                    DataType::Time32(TimeUnit::Millisecond),
                ) => Data::Int32(Vec::new(), IntKind::TimeMillis),
                (PrimitiveType::Long, None, DataType::Int64) => {
                    Data::Int64(Vec::new(), LongKind::Long)
                }
                (
                    PrimitiveType::Long,
                    Some(LogicalType::TimeMicros),
                    DataType::Time64(TimeUnit::Microsecond),
                ) => Data::Int64(Vec::new(), LongKind::TimeMicros),
                (
                    PrimitiveType::Long,
                    Some(
                        LogicalType::TimestampMillis
                        | LogicalType::TimestampMicros
                        | LogicalType::LocalTimestampMillis
                        | LogicalType::LocalTimestampMicros,
                    ),
                    DataType::Timestamp(
                        unit @ (TimeUnit::Millisecond | TimeUnit::Microsecond),
                        timezone,
                    ),
                ) => Data::Int64(
                    Vec::new(),
                    LongKind::Timestamp {
                        unit: *unit,
                        timezone: timezone.clone(),
                    },
                ),
                (PrimitiveType::Float, None, DataType::Float32) => Data::Float32(Vec::new()),
                (PrimitiveType::Double, None, DataType::Float64) => Data::Float64(Vec::new()),
                (PrimitiveType::String, None | Some(LogicalType::Uuid), DataType::Utf8) => {
                    Data::Utf8(VarData::new(), None)
                }
                (PrimitiveType::Bytes, None, DataType::Binary) => Data::Binary(VarData::new()),
                (
                    PrimitiveType::Bytes,
                    Some(LogicalType::Decimal { .. }),
                    DataType::Decimal128(p, s),
                ) => Data::Decimal(Vec::new(), *p, *s),
                _ => return Err(fail()),
            },
            AvroSchema::Enum(e) => match data_type {
                DataType::Utf8 => {
                    Data::Utf8(VarData::new(), Some(e.symbols.iter().cloned().collect()))
                }
                _ => return Err(fail()),
            },
            AvroSchema::Fixed(f) => match (f.logical_type, data_type) {
                (None, DataType::FixedSizeBinary(n))
                    if usize::try_from(*n).ok() == Some(f.size) =>
                {
                    Data::Fixed(Vec::new(), f.size)
                }
                (Some(LogicalType::Decimal { .. }), DataType::Decimal128(p, s)) => {
                    Data::Decimal(Vec::new(), *p, *s)
                }
                _ => return Err(fail()),
            },
            AvroSchema::Record(r) => {
                let DataType::Struct(fields) = data_type else {
                    return Err(fail());
                };
                let full = r.name.fullname(ns.as_deref());
                let child_ns = namespace_of(&full).map(str::to_string);
                Data::Struct(self.struct_data(r, child_ns, fields, path)?)
            }
            AvroSchema::Array(a) => {
                let DataType::List(item_field) = data_type else {
                    return Err(fail());
                };
                let item = self.column(&a.items, ns, item_field, &format!("{path}[]"))?;
                Data::List {
                    offsets: vec![0],
                    item: Box::new(item),
                    field: item_field.clone(),
                }
            }
            AvroSchema::Map(m) => {
                let DataType::Map(entries, _) = data_type else {
                    return Err(fail());
                };
                let DataType::Struct(entry_fields) = entries.data_type() else {
                    return Err(fail());
                };
                let (Some(key_field), Some(value_field), 2) = (
                    entry_fields.first(),
                    entry_fields.get(1),
                    entry_fields.len(),
                ) else {
                    return Err(fail());
                };
                if key_field.data_type() != &DataType::Utf8 || key_field.is_nullable() {
                    return Err(fail());
                }
                let values = self.column(&m.values, ns, value_field, &format!("{path}{{}}"))?;
                Data::Map {
                    offsets: vec![0],
                    keys: VarData::new(),
                    values: Box::new(values),
                    entries: entries.clone(),
                    entry_fields: entry_fields.clone(),
                }
            }
            AvroSchema::Union(_) | AvroSchema::Reference(_) => return Err(fail()),
        };
        Ok(Column::new(type_label(inner), field.is_nullable(), data))
    }

    pub(super) fn struct_data(
        &self,
        record: &'s crate::schema::avro::RecordSchema,
        ns: Option<String>,
        fields: &Fields,
        path: &str,
    ) -> Result<StructData, DecodeError> {
        if record.fields.len() != fields.len() {
            return Err(DecodeError::SchemaMismatch {
                reason: format!(
                    "record `{}` has {} fields in Avro and {} in Arrow",
                    if path.is_empty() { "$" } else { path },
                    record.fields.len(),
                    fields.len()
                ),
            });
        }
        let mut slots = Vec::with_capacity(fields.len());
        let mut index = HashMap::with_capacity(fields.len());
        for (i, (avro_field, arrow_field)) in record.fields.iter().zip(fields.iter()).enumerate() {
            let field_path = if path.is_empty() {
                avro_field.name.clone()
            } else {
                format!("{path}.{}", avro_field.name)
            };
            if &avro_field.name != arrow_field.name() {
                return Err(DecodeError::SchemaMismatch {
                    reason: format!(
                        "field `{field_path}` is called `{}` in the Arrow schema",
                        arrow_field.name()
                    ),
                });
            }
            let column = self.column(&avro_field.schema, ns.clone(), arrow_field, &field_path)?;
            let missing = match &avro_field.default {
                Some(json) => {
                    Missing::Default(compile_default(&column, json).map_err(|reason| {
                        DecodeError::InvalidDefault {
                            path: field_path.clone(),
                            default: json.to_string(),
                            reason,
                        }
                    })?)
                }
                None if column.nulls.is_some() => Missing::Null,
                None => Missing::Required,
            };
            index.insert(avro_field.name.clone(), i);
            slots.push(Slot {
                name: avro_field.name.clone(),
                column,
                missing,
                seen: false,
            });
        }
        Ok(StructData {
            fields: fields.clone(),
            slots,
            index,
        })
    }
}

/// Bytes of an Avro JSON default for bytes/fixed: each code point U+0000–U+00FF is one byte.
pub(super) fn latin1_bytes(json: &Value) -> Result<Vec<u8>, String> {
    let Value::String(s) = json else {
        return Err("bytes defaults are strings".to_string());
    };
    s.chars()
        .map(|c| {
            u8::try_from(u32::from(c))
                .map_err(|_| format!("character {c:?} is not a byte (U+0000–U+00FF)"))
        })
        .collect()
}

/// Converts an Avro default to the column's values, once, so that appending it cannot fail on content.
pub(super) fn compile_default(column: &Column, json: &Value) -> Result<DefaultValue, String> {
    if json.is_null() {
        return if column.nulls.is_some() {
            Ok(DefaultValue::Null)
        } else {
            Err(format!("null for a non-nullable {}", column.expected))
        };
    }
    let wrong = || format!("{json} is not a {}", column.expected);
    let as_i64 = || json.as_i64().ok_or_else(wrong);
    let as_f64 = || match json {
        Value::Number(n) => n.as_f64().ok_or_else(wrong),
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => Err(wrong()),
    };
    Ok(match &column.data {
        Data::Boolean(_) => DefaultValue::Bool(json.as_bool().ok_or_else(wrong)?),
        Data::Int32(..) => DefaultValue::I32(i32::try_from(as_i64()?).map_err(|_| wrong())?),
        Data::Int64(..) => DefaultValue::I64(as_i64()?),
        Data::Float32(_) => DefaultValue::F32(as_f64()? as f32),
        Data::Float64(_) => DefaultValue::F64(as_f64()?),
        Data::Decimal(_, precision, _) => {
            let bytes = latin1_bytes(json)?;
            if bytes.is_empty() || bytes.len() > 16 {
                return Err(format!("{} bytes cannot hold a decimal128", bytes.len()));
            }
            let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
            let mut value: i128 = if negative { -1 } else { 0 };
            for b in bytes {
                value = (value << 8) | i128::from(b);
            }
            let limit = 10_i128
                .checked_pow(u32::from(*precision))
                .unwrap_or(i128::MAX);
            if value.checked_abs().is_none_or(|v| v >= limit) {
                return Err(format!(
                    "unscaled value {value} has more than {precision} digits"
                ));
            }
            DefaultValue::I128(value)
        }
        Data::Utf8(_, symbols) => {
            let s = json.as_str().ok_or_else(wrong)?;
            if let Some(symbols) = symbols {
                if !symbols.contains(s) {
                    return Err(format!("{s:?} is not a symbol of {}", column.expected));
                }
            }
            DefaultValue::Bytes(s.as_bytes().to_vec())
        }
        Data::Binary(_) => DefaultValue::Bytes(latin1_bytes(json)?),
        Data::Fixed(_, size) => {
            let bytes = latin1_bytes(json)?;
            if bytes.len() != *size {
                return Err(format!("{} bytes for a fixed({size})", bytes.len()));
            }
            DefaultValue::Bytes(bytes)
        }
        Data::Struct(s) => {
            let Value::Object(members) = json else {
                return Err(wrong());
            };
            let values =
                s.slots
                    .iter()
                    .map(|slot| match members.get(&slot.name) {
                        Some(v) => compile_default(&slot.column, v)
                            .map_err(|e| format!("{}: {e}", slot.name)),
                        None => match &slot.missing {
                            Missing::Default(d) => Ok(d.clone()),
                            Missing::Null => Ok(DefaultValue::Null),
                            Missing::Required => {
                                Err(format!("{}: missing and without default", slot.name))
                            }
                        },
                    })
                    .collect::<Result<Vec<_>, _>>()?;
            DefaultValue::Struct(values)
        }
        Data::List { item, .. } => {
            let Value::Array(items) = json else {
                return Err(wrong());
            };
            DefaultValue::List(
                items
                    .iter()
                    .map(|v| compile_default(item, v))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
        Data::Map { values, .. } => {
            let Value::Object(members) = json else {
                return Err(wrong());
            };
            DefaultValue::Map(
                members
                    .iter()
                    .map(|(k, v)| compile_default(values, v).map(|d| (k.clone(), d)))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
    })
}
