//! JSON → Avro model, syntax only; `validate` does the semantic checks.

use serde_json::{Map, Value};

use super::*;

/// Attributes interpreted for named types (everything else is kept).
const NAMED_KEYS: &[&str] = &["type", "name", "namespace", "doc", "aliases"];

pub(super) fn schema(json: &Value, path: &str) -> SchemaResult<AvroSchema> {
    match json {
        Value::String(name) => Ok(match PrimitiveType::from_name(name) {
            Some(p) => AvroSchema::primitive(p),
            None => AvroSchema::Reference(name.clone()),
        }),
        Value::Array(branches) => branches
            .iter()
            .enumerate()
            .map(|(i, b)| schema(b, &format!("{path}[{i}]")))
            .collect::<SchemaResult<Vec<_>>>()
            .map(AvroSchema::Union),
        Value::Object(obj) => object(obj, path),
        other => Err(SchemaError::NotASchema {
            path: path.to_string(),
            found: other.to_string(),
        }),
    }
}

fn object(obj: &Map<String, Value>, path: &str) -> SchemaResult<AvroSchema> {
    let type_name = match obj.get("type") {
        None => {
            return Err(SchemaError::MissingAttribute {
                path: path.to_string(),
                attribute: "type",
            })
        }
        Some(Value::String(t)) => t.as_str(),
        Some(other) => return Err(invalid(path, "type", "a type name string", other)),
    };
    if let Some(primitive) = PrimitiveType::from_name(type_name) {
        let mut attributes = rest(obj, &["type"]);
        let logical_type = take_logical(&mut attributes, path)?;
        return Ok(AvroSchema::Primitive(PrimitiveSchema {
            primitive,
            logical_type,
            attributes,
        }));
    }
    match type_name {
        "record" => {
            let fields = match obj.get("fields") {
                Some(Value::Array(fields)) => fields,
                Some(other) => return Err(invalid(path, "fields", "an array", other)),
                None => {
                    return Err(SchemaError::MissingAttribute {
                        path: path.to_string(),
                        attribute: "fields",
                    })
                }
            };
            let fields = fields
                .iter()
                .enumerate()
                .map(|(i, f)| field(f, path, i))
                .collect::<SchemaResult<Vec<_>>>()?;
            Ok(AvroSchema::Record(RecordSchema {
                name: name(obj, path)?,
                doc: opt_string(obj, "doc", path)?,
                aliases: aliases(obj, path)?,
                fields,
                attributes: rest(obj, &[NAMED_KEYS, &["fields"]].concat()),
            }))
        }
        "enum" => {
            let symbols = match obj.get("symbols") {
                Some(Value::Array(symbols)) => symbols
                    .iter()
                    .map(|s| match s {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(invalid(path, "symbols", "an array of strings", other)),
                    })
                    .collect::<SchemaResult<Vec<_>>>()?,
                Some(other) => return Err(invalid(path, "symbols", "an array of strings", other)),
                None => {
                    return Err(SchemaError::MissingAttribute {
                        path: path.to_string(),
                        attribute: "symbols",
                    })
                }
            };
            Ok(AvroSchema::Enum(EnumSchema {
                name: name(obj, path)?,
                doc: opt_string(obj, "doc", path)?,
                aliases: aliases(obj, path)?,
                symbols,
                default: opt_string(obj, "default", path)?,
                attributes: rest(obj, &[NAMED_KEYS, &["symbols", "default"]].concat()),
            }))
        }
        "array" => {
            let items = obj
                .get("items")
                .ok_or_else(|| SchemaError::MissingAttribute {
                    path: path.to_string(),
                    attribute: "items",
                })?;
            Ok(AvroSchema::Array(ArraySchema {
                items: Box::new(schema(items, &format!("{path}.items"))?),
                attributes: rest(obj, &["type", "items"]),
            }))
        }
        "map" => {
            let values = obj
                .get("values")
                .ok_or_else(|| SchemaError::MissingAttribute {
                    path: path.to_string(),
                    attribute: "values",
                })?;
            Ok(AvroSchema::Map(MapSchema {
                values: Box::new(schema(values, &format!("{path}.values"))?),
                attributes: rest(obj, &["type", "values"]),
            }))
        }
        "fixed" => {
            let size = match obj.get("size") {
                Some(v) => v
                    .as_u64()
                    .filter(|s| *s <= i32::MAX as u64)
                    .ok_or_else(|| invalid(path, "size", "a non-negative 32-bit integer", v))?
                    as usize,
                None => {
                    return Err(SchemaError::MissingAttribute {
                        path: path.to_string(),
                        attribute: "size",
                    })
                }
            };
            let mut attributes = rest(obj, &[NAMED_KEYS, &["size"]].concat());
            let logical_type = take_logical(&mut attributes, path)?;
            Ok(AvroSchema::Fixed(FixedSchema {
                name: name(obj, path)?,
                doc: opt_string(obj, "doc", path)?,
                aliases: aliases(obj, path)?,
                size,
                logical_type,
                attributes,
            }))
        }
        _ => Err(SchemaError::NotASchema {
            path: path.to_string(),
            found: format!("type {type_name:?}"),
        }),
    }
}

fn field(json: &Value, record_path: &str, index: usize) -> SchemaResult<RecordField> {
    let Value::Object(obj) = json else {
        return Err(SchemaError::NotASchema {
            path: format!("{record_path}.fields[{index}]"),
            found: format!("{json} (a field must be an object)"),
        });
    };
    let path = match obj.get("name") {
        Some(Value::String(n)) => format!("{record_path}.fields[{n}]"),
        _ => format!("{record_path}.fields[{index}]"),
    };
    let name = match obj.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(other) => return Err(invalid(&path, "name", "a string", other)),
        None => {
            return Err(SchemaError::MissingAttribute {
                path,
                attribute: "name",
            })
        }
    };
    let type_json = obj
        .get("type")
        .ok_or_else(|| SchemaError::MissingAttribute {
            path: path.clone(),
            attribute: "type",
        })?;
    let order = match obj.get("order") {
        None => None,
        Some(v) => Some(v.as_str().and_then(FieldOrder::from_name).ok_or_else(|| {
            invalid(
                &path,
                "order",
                "\"ascending\", \"descending\" or \"ignore\"",
                v,
            )
        })?),
    };
    Ok(RecordField {
        name,
        schema: schema(type_json, &format!("{path}.type"))?,
        doc: opt_string(obj, "doc", &path)?,
        default: obj.get("default").cloned(),
        order,
        aliases: aliases(obj, &path)?,
        attributes: rest(obj, &["name", "type", "doc", "default", "order", "aliases"]),
    })
}

fn name(obj: &Map<String, Value>, path: &str) -> SchemaResult<Name> {
    let name = match obj.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(other) => return Err(invalid(path, "name", "a string", other)),
        None => {
            return Err(SchemaError::MissingAttribute {
                path: path.to_string(),
                attribute: "name",
            })
        }
    };
    Ok(Name {
        name,
        namespace: opt_string(obj, "namespace", path)?,
    })
}

fn opt_string(
    obj: &Map<String, Value>,
    key: &'static str,
    path: &str,
) -> SchemaResult<Option<String>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(path, key, "a string", other)),
    }
}

fn aliases(obj: &Map<String, Value>, path: &str) -> SchemaResult<Vec<String>> {
    match obj.get("aliases") {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| match a {
                Value::String(s) => Ok(s.clone()),
                other => Err(invalid(path, "aliases", "an array of strings", other)),
            })
            .collect(),
        Some(other) => Err(invalid(path, "aliases", "an array of strings", other)),
    }
}

/// Every member not in `interpreted`, in document order.
fn rest(obj: &Map<String, Value>, interpreted: &[&str]) -> Attributes {
    obj.iter()
        .filter(|(k, _)| !interpreted.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Moves a known `logicalType` (and a decimal's `precision`/`scale`) out of `attributes`. Unknown or
/// non-string logical types stay as attributes.
fn take_logical(attributes: &mut Attributes, path: &str) -> SchemaResult<Option<LogicalType>> {
    let Some(Value::String(name)) = attributes.get("logicalType") else {
        return Ok(None);
    };
    let logical_type = if name == "decimal" {
        let precision = match attributes.get("precision") {
            Some(v) => v
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| invalid(path, "precision", "a non-negative integer", v))?,
            None => {
                return Err(SchemaError::MissingAttribute {
                    path: path.to_string(),
                    attribute: "precision",
                })
            }
        };
        let scale = match attributes.get("scale") {
            Some(v) => v
                .as_u64()
                .and_then(|s| u32::try_from(s).ok())
                .ok_or_else(|| invalid(path, "scale", "a non-negative integer", v))?,
            None => 0,
        };
        attributes.shift_remove("precision");
        attributes.shift_remove("scale");
        LogicalType::Decimal { precision, scale }
    } else {
        match LogicalType::simple_from_name(name) {
            Some(lt) => lt,
            None => return Ok(None),
        }
    };
    attributes.shift_remove("logicalType");
    Ok(Some(logical_type))
}

fn invalid(
    path: &str,
    attribute: &'static str,
    expected: &'static str,
    found: &Value,
) -> SchemaError {
    SchemaError::InvalidAttribute {
        path: path.to_string(),
        attribute,
        expected,
        found: found.to_string(),
    }
}
