//! The Kafka Connect schema a JSON value carries (`{"schema":…,"payload":…}`, the JsonConverter with
//! `schemas.enable=true`): the row's Avro schema as Debezium's AvroConverter writes it and HoodieStreamer reads it,
//! and the columns whose strings are Connect decimals.
//!
//! ```text
//! Connect                                   Avro
//! int8, int16, int32                      → int
//! int64                                   → long
//! float32 / float64                       → float / double
//! boolean, string, bytes                  → the same
//! struct / array / map (string keys)      → record / array / map
//! org.apache.kafka.connect.data.Decimal   → bytes, decimal(connect.decimal.precision or 38, scale)
//! org.apache.kafka.connect.data.Date      → int, date
//! org.apache.kafka.connect.data.Time      → int, time-millis
//! org.apache.kafka.connect.data.Timestamp → long, timestamp-millis
//! io.debezium.* (time, Json, Uuid, Enum…) → their Connect type, no logical type (MicroTimestamp a long,
//!                                           Date an int, ZonedTimestamp a string, VariableScaleDecimal a
//!                                           record {scale: int, value: bytes}), as HoodieStreamer keeps them
//! optional                                → ["null", T] with default null
//! ```
//!
//! The schema of an envelope is its `after` (else `before`) struct; the schema of an `ExtractNewRecordState` row
//! is the struct without its `__` fields, which become the meta columns.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::schema::avro::{
    AvroSchema, LogicalType, Name, PrimitiveType, RecordField, RecordSchema,
};

/// The Connect logical type of decimals: bytes of the unscaled value, big-endian two's complement.
pub const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";
/// The precision given to a Connect decimal without `connect.decimal.precision`: the largest Spark and the
/// table's Parquet decimals hold (the AvroConverter would write 64, which no Spark reader accepts).
pub const DEFAULT_DECIMAL_PRECISION: u32 = 38;

/// Why a Connect schema cannot give the table's columns (the values that carry it become dead letters).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConnectError {
    /// The schema is not JSON, or not a Connect struct schema.
    #[error("the value's Connect schema is not a struct schema: {0}")]
    NotStruct(String),
    /// A field whose Connect type has no Avro counterpart here.
    #[error("the Connect schema's field {field}: {reason}")]
    Field {
        /// The field's path.
        field: String,
        /// Why.
        reason: String,
    },
}

/// A value's Connect schema, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectSchema {
    /// The row record, without the meta columns.
    pub row: AvroSchema,
    /// The top-level columns that are Connect decimals, with their scale.
    pub decimals: BTreeMap<String, u32>,
}

/// The raw text of the `schema` member of a `{"schema":…,"payload":…}` value, if the value has that form and
/// its schema is not null.
pub fn schema_text(value: &[u8]) -> Option<&str> {
    #[derive(serde::Deserialize)]
    struct Wrapped<'a> {
        #[serde(borrow)]
        schema: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        #[allow(dead_code)]
        payload: Option<&'a serde_json::value::RawValue>,
    }
    let text = std::str::from_utf8(value).ok()?;
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let wrapped: Wrapped<'_> = serde_json::from_str(text).ok()?;
    wrapped.payload?;
    wrapped
        .schema
        .map(|s| s.get())
        .filter(|s| s.trim() != "null")
}

/// Reads a Connect schema (the envelope's, or an `ExtractNewRecordState` row's) into the row's Avro record.
pub fn parse(text: &str) -> Result<ConnectSchema, ConnectError> {
    let json: Value =
        serde_json::from_str(text).map_err(|e| ConnectError::NotStruct(e.to_string()))?;
    let top = struct_fields(&json, "")?;
    let is_envelope = ["op", "source"]
        .iter()
        .all(|f| field_named(top, f).is_some());
    let (row_name, fields): (Option<&str>, Vec<&Value>) = if is_envelope {
        let image = ["after", "before"]
            .iter()
            .filter_map(|f| field_named(top, f))
            .find(|f| f.get("type").and_then(Value::as_str) == Some("struct"))
            .ok_or_else(|| {
                ConnectError::NotStruct(
                    "the envelope schema has no struct in `after` or `before`".into(),
                )
            })?;
        let fields = image
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| ConnectError::NotStruct("the row struct has no `fields`".into()))?;
        (
            image.get("name").and_then(Value::as_str),
            fields.iter().collect(),
        )
    } else {
        (
            json.get("name").and_then(Value::as_str),
            top.iter()
                .filter(|f| !field_name(f).starts_with("__"))
                .collect(),
        )
    };
    let name = record_name(row_name.unwrap_or("Value"));
    let mut decimals = BTreeMap::new();
    let mut out = Vec::with_capacity(fields.len());
    for field in fields {
        let name = field_name(field).to_string();
        if let Some(scale) = decimal_scale(field, &name)? {
            decimals.insert(name.clone(), scale);
        }
        out.push(record_field(field, &name, &name)?);
    }
    Ok(ConnectSchema {
        row: AvroSchema::Record(RecordSchema::new(name, out)),
        decimals,
    })
}

/// The fields of a struct schema.
fn struct_fields<'a>(json: &'a Value, path: &str) -> Result<&'a Vec<Value>, ConnectError> {
    let not_struct = |what: &str| match path {
        "" => ConnectError::NotStruct(what.to_string()),
        _ => ConnectError::Field {
            field: path.to_string(),
            reason: what.to_string(),
        },
    };
    match json.get("type").and_then(Value::as_str) {
        Some("struct") => {}
        Some(other) => return Err(not_struct(&format!("type {other:?}, not struct"))),
        None => return Err(not_struct("no `type`")),
    }
    json.get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| not_struct("a struct without `fields`"))
}

fn field_named<'a>(fields: &'a [Value], name: &str) -> Option<&'a Map<String, Value>> {
    fields
        .iter()
        .filter_map(Value::as_object)
        .find(|f| f.get("field").and_then(Value::as_str) == Some(name))
}

fn field_name(field: &Value) -> &str {
    field.get("field").and_then(Value::as_str).unwrap_or("")
}

/// An Avro name from a Connect schema name (`pg.public.customers.Value` → `Value` in `pg.public.customers`),
/// its characters made Avro-valid.
fn record_name(full: &str) -> Name {
    let clean = |part: &str| -> String {
        let mut s: String = part
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
            s.insert(0, '_');
        }
        s
    };
    match full.rsplit_once('.') {
        Some((ns, name)) => {
            let ns: Vec<String> = ns.split('.').map(clean).collect();
            Name::with_namespace(clean(name), ns.join("."))
        }
        None => Name::new(clean(full)),
    }
}

/// The scale of a Connect decimal field, `None` when the field is not one.
fn decimal_scale(field: &Value, path: &str) -> Result<Option<u32>, ConnectError> {
    if field.get("name").and_then(Value::as_str) != Some(DECIMAL) {
        return Ok(None);
    }
    let params = field.get("parameters");
    let scale = parameter(params, "scale", path)?.ok_or_else(|| ConnectError::Field {
        field: path.to_string(),
        reason: "a Connect Decimal without the `scale` parameter".into(),
    })?;
    Ok(Some(scale))
}

/// A numeric Connect schema parameter (given as a string, or a number).
fn parameter(params: Option<&Value>, key: &str, path: &str) -> Result<Option<u32>, ConnectError> {
    let Some(value) = params.and_then(|p| p.get(key)) else {
        return Ok(None);
    };
    let parsed = match value {
        Value::String(s) => s.trim().parse::<u32>().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    };
    parsed.map(Some).ok_or_else(|| ConnectError::Field {
        field: path.to_string(),
        reason: format!("parameter {key} is {value}, not a non-negative integer"),
    })
}

/// One Connect field as an Avro record field: optional ones nullable with default null, required ones with
/// the Connect default when it has one.
fn record_field(field: &Value, name: &str, path: &str) -> Result<RecordField, ConnectError> {
    let schema = avro_type(field, path)?;
    let optional = field
        .get("optional")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if optional {
        return Ok(RecordField::nullable(name, schema));
    }
    let mut out = RecordField::new(name, schema);
    out.default = match (field.get("default"), &out.schema) {
        (
            Some(d @ (Value::Number(_) | Value::String(_) | Value::Bool(_))),
            AvroSchema::Primitive(p),
        ) if p.logical_type.is_none() && p.primitive != PrimitiveType::Bytes => Some(d.clone()),
        _ => None,
    };
    Ok(out)
}

/// The Avro type of a Connect schema node (without its optionality).
fn avro_type(node: &Value, path: &str) -> Result<AvroSchema, ConnectError> {
    let err = |reason: String| ConnectError::Field {
        field: path.to_string(),
        reason,
    };
    let kind = node
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| err("no `type`".into()))?;
    let name = node.get("name").and_then(Value::as_str);
    let primitive = |p| Ok(AvroSchema::primitive(p));
    match (kind, name) {
        ("bytes", Some(DECIMAL)) => {
            let params = node.get("parameters");
            let scale = parameter(params, "scale", path)?
                .ok_or_else(|| err("a Connect Decimal without the `scale` parameter".into()))?;
            let precision = parameter(params, "connect.decimal.precision", path)?
                .unwrap_or(DEFAULT_DECIMAL_PRECISION);
            if precision == 0 || precision > DEFAULT_DECIMAL_PRECISION || scale > precision {
                return Err(err(format!(
                    "decimal({precision},{scale}) does not fit a table decimal (precision 1 to \
                     {DEFAULT_DECIMAL_PRECISION}, scale at most the precision)"
                )));
            }
            Ok(AvroSchema::logical(
                PrimitiveType::Bytes,
                LogicalType::Decimal { precision, scale },
            ))
        }
        ("int32", Some("org.apache.kafka.connect.data.Date")) => {
            Ok(AvroSchema::logical(PrimitiveType::Int, LogicalType::Date))
        }
        ("int32", Some("org.apache.kafka.connect.data.Time")) => Ok(AvroSchema::logical(
            PrimitiveType::Int,
            LogicalType::TimeMillis,
        )),
        ("int64", Some("org.apache.kafka.connect.data.Timestamp")) => Ok(AvroSchema::logical(
            PrimitiveType::Long,
            LogicalType::TimestampMillis,
        )),
        ("int8" | "int16" | "int32", _) => primitive(PrimitiveType::Int),
        ("int64", _) => primitive(PrimitiveType::Long),
        ("float32", _) => primitive(PrimitiveType::Float),
        ("float64", _) => primitive(PrimitiveType::Double),
        ("boolean", _) => primitive(PrimitiveType::Boolean),
        ("string", _) => primitive(PrimitiveType::String),
        ("bytes", _) => primitive(PrimitiveType::Bytes),
        ("struct", _) => {
            let fields = struct_fields(node, path)?;
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                let n = field_name(f);
                out.push(record_field(f, n, &format!("{path}.{n}"))?);
            }
            // Named by its path: two columns of one Connect type (two VariableScaleDecimals) stay two
            // distinct Avro records.
            let name = record_name(&path.replace(['.', '[', ']', '{', '}'], "_"));
            Ok(AvroSchema::Record(RecordSchema::new(name, out)))
        }
        ("array", _) => {
            let items = node
                .get("items")
                .ok_or_else(|| err("an array without `items`".into()))?;
            Ok(AvroSchema::array(nullable_if(
                items,
                avro_type(items, &format!("{path}[]"))?,
            )))
        }
        ("map", _) => {
            let keys = node
                .get("keys")
                .and_then(|k| k.get("type"))
                .and_then(Value::as_str);
            if keys != Some("string") {
                return Err(err(format!(
                    "a map with {} keys (only string keys map to an Avro map)",
                    keys.unwrap_or("unknown")
                )));
            }
            let values = node
                .get("values")
                .ok_or_else(|| err("a map without `values`".into()))?;
            Ok(AvroSchema::map(nullable_if(
                values,
                avro_type(values, &format!("{path}{{}}"))?,
            )))
        }
        (other, _) => Err(err(format!("Connect type {other:?} is not supported"))),
    }
}

fn nullable_if(node: &Value, schema: AvroSchema) -> AvroSchema {
    match node.get("optional").and_then(Value::as_bool) {
        Some(true) => AvroSchema::nullable(schema),
        _ => schema,
    }
}

/// Why a Connect decimal string does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecimalError {
    /// Not standard padded base64.
    #[error("not base64 (Debezium's decimal encoding): {0}")]
    NotBase64(String),
    /// No bytes at all.
    #[error("base64 of no bytes is not a decimal")]
    Empty,
    /// More digits than a table decimal holds.
    #[error(
        "the unscaled value has {0} bytes, more than the 16 a decimal of up to 38 digits holds"
    )]
    TooLong(usize),
}

/// The exact decimal text (`-12.50`) of a Connect decimal: base64 of the unscaled value's big-endian two's
/// complement bytes, times 10^-`scale`.
pub fn decode_decimal(base64: &str, scale: u32) -> Result<String, DecimalError> {
    let bytes = STANDARD
        .decode(base64.trim())
        .map_err(|e| DecimalError::NotBase64(e.to_string()))?;
    let first = *bytes.first().ok_or(DecimalError::Empty)?;
    let negative = first & 0x80 != 0;
    // Sign-extension bytes carry no value: drop them while the next byte keeps the sign.
    let fill = if negative { 0xff } else { 0x00 };
    let mut start = 0;
    while start + 1 < bytes.len()
        && bytes[start] == fill
        && (bytes[start + 1] & 0x80 != 0) == negative
    {
        start += 1;
    }
    let digits = &bytes[start..];
    if digits.len() > 16 {
        return Err(DecimalError::TooLong(digits.len()));
    }
    let mut buf = [fill; 16];
    buf[16 - digits.len()..].copy_from_slice(digits);
    let unscaled = i128::from_be_bytes(buf);
    Ok(scaled_text(unscaled, scale))
}

/// `unscaled` × 10^-`scale` as plain decimal text.
fn scaled_text(unscaled: i128, scale: u32) -> String {
    let magnitude = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{magnitude}");
    }
    let padded = format!("{magnitude:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// The top-level decimal columns of a table's row schema (bytes or fixed with the decimal logical type,
/// nullable or not), with their scale: how a Connect decimal without its schema is read.
pub fn table_decimals(schema: &AvroSchema) -> BTreeMap<String, u32> {
    let AvroSchema::Record(record) = schema else {
        return BTreeMap::new();
    };
    record
        .fields
        .iter()
        .filter_map(|f| {
            let inner = f.schema.nullable_inner().unwrap_or(&f.schema);
            let logical = match inner {
                AvroSchema::Primitive(p) => p.logical_type.as_ref(),
                AvroSchema::Fixed(x) => x.logical_type.as_ref(),
                _ => None,
            };
            match logical {
                Some(LogicalType::Decimal { scale, .. }) => Some((f.name.clone(), *scale)),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn connect_decimals_decode_exactly() {
        // 1.56 and 19.99 at scale 2 (Debezium's documentation), and the edges of two's complement.
        let cases: &[(&str, u32, &str)] = &[
            ("AJw=", 2, "1.56"),
            ("B88=", 2, "19.99"),
            ("AA==", 2, "0.00"),
            ("/w==", 2, "-0.01"),
            ("gA==", 0, "-128"),
            ("AIA=", 0, "128"),
            ("//8=", 3, "-0.001"),
            ("/////w==", 0, "-1"),
            ("Bw==", 5, "0.00007"),
            // 10^38 - 1, the largest decimal(38,0), in 16 bytes; then with a redundant sign byte.
            (
                "SztMqFqGxHoJiiI//////w==",
                0,
                "99999999999999999999999999999999999999",
            ),
            (
                "AEs7TKhahsR6CYoiP/////8=",
                4,
                "9999999999999999999999999999999999.9999",
            ),
            (
                "tMSzV6V5O4X2dd3AAAAAAQ==",
                0,
                "-99999999999999999999999999999999999999",
            ),
        ];
        for (encoded, scale, want) in cases {
            assert_eq!(
                decode_decimal(encoded, *scale).as_deref(),
                Ok(*want),
                "{encoded}"
            );
        }
        assert!(matches!(
            decode_decimal("1.56", 2),
            Err(DecimalError::NotBase64(_))
        ));
        assert_eq!(decode_decimal("", 2), Err(DecimalError::Empty));
        // 2^127 needs a 17th byte for its sign.
        assert_eq!(
            decode_decimal("AIAAAAAAAAAAAAAAAAAAAAA=", 0),
            Err(DecimalError::TooLong(17))
        );
    }

    fn field(name: &str, ty: &str, optional: bool) -> Value {
        json!({"field": name, "type": ty, "optional": optional})
    }

    #[test]
    fn an_envelope_schema_maps_as_the_avro_converter_and_hoodiestreamer_keep_it() {
        let row = json!({"type":"struct","optional":true,"name":"pg.public.customers.Value","fields":[
            field("id","int32",false), field("small","int16",true), field("tiny","int8",true),
            field("big","int64",true), field("f","float32",true), field("d","float64",true),
            field("ok","boolean",true), field("name","string",true), field("raw","bytes",true),
            {"field":"price","type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",
             "version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"}},
            {"field":"total","type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",
             "version":1,"parameters":{"scale":"4"}},
            {"field":"at","type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1},
            {"field":"day","type":"int32","optional":true,"name":"io.debezium.time.Date","version":1},
            {"field":"zoned","type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1},
            {"field":"cday","type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date","version":1},
            {"field":"cts","type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1},
            {"field":"vsd","type":"struct","optional":true,"name":"io.debezium.data.VariableScaleDecimal",
             "version":1,"fields":[field("scale","int32",false), field("value","bytes",false)]},
            {"field":"count","type":"int32","optional":false,"default":0},
            {"field":"tags","type":"array","optional":true,"items":{"type":"string","optional":true}}]});
        let envelope = json!({"type":"struct","optional":false,"name":"pg.public.customers.Envelope",
            "fields":[{"field":"before","type":"struct","optional":true,"name":"x","fields":[]},
                      row, {"field":"source","type":"struct","optional":false,"fields":[]},
                      field("op","string",false), field("ts_ms","int64",true)]});
        // `row` has no `field` member yet: put it in as `after`.
        let mut envelope = envelope;
        envelope["fields"][1]["field"] = "after".into();
        let schema = parse(&envelope.to_string()).expect("maps");
        assert_eq!(
            schema.row.to_json_value(),
            json!({"type":"record","name":"Value","namespace":"pg.public.customers","fields":[
                {"name":"id","type":"int"},
                {"name":"small","type":["null","int"],"default":null},
                {"name":"tiny","type":["null","int"],"default":null},
                {"name":"big","type":["null","long"],"default":null},
                {"name":"f","type":["null","float"],"default":null},
                {"name":"d","type":["null","double"],"default":null},
                {"name":"ok","type":["null","boolean"],"default":null},
                {"name":"name","type":["null","string"],"default":null},
                {"name":"raw","type":["null","bytes"],"default":null},
                {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
                {"name":"total","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":4}},
                {"name":"at","type":["null","long"],"default":null},
                {"name":"day","type":["null","int"],"default":null},
                {"name":"zoned","type":["null","string"],"default":null},
                {"name":"cday","type":["null",{"type":"int","logicalType":"date"}],"default":null},
                {"name":"cts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
                {"name":"vsd","type":["null",{"type":"record","name":"vsd","fields":[
                    {"name":"scale","type":"int"},{"name":"value","type":"bytes"}]}],"default":null},
                {"name":"count","type":"int","default":0},
                {"name":"tags","type":["null",{"type":"array","items":["null","string"]}],"default":null}]})
        );
        assert_eq!(
            schema.decimals,
            BTreeMap::from([("price".to_string(), 2), ("total".to_string(), 4)])
        );
    }

    #[test]
    fn an_extracted_row_schema_leaves_its_double_underscore_fields_to_the_meta_columns() {
        let schema = json!({"type":"struct","optional":false,"name":"pg.public.customers.Value","fields":[
            field("id","int32",false), field("__op","string",true), field("__lsn","int64",true),
            field("__deleted","string",true)]});
        let schema = parse(&schema.to_string()).expect("maps");
        assert_eq!(
            schema.row.to_json_value(),
            json!({"type":"record","name":"Value","namespace":"pg.public.customers","fields":[
                {"name":"id","type":"int"}]})
        );
    }

    #[test]
    fn connect_schemas_without_an_avro_form_are_refused_with_the_field() {
        for (bad, needle) in [
            (
                json!({"type":"struct","fields":[{"field":"m","type":"map","optional":true,
                    "keys":{"type":"int32"},"values":{"type":"string"}}]}),
                "field m: a map with int32 keys",
            ),
            (
                json!({"type":"struct","fields":[{"field":"p","type":"bytes",
                    "name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2",
                    "connect.decimal.precision":"40"}}]}),
                "field p: decimal(40,2)",
            ),
            (
                json!({"type":"struct","fields":[{"field":"p","type":"bytes",
                    "name":"org.apache.kafka.connect.data.Decimal"}]}),
                "field p: a Connect Decimal without the `scale` parameter",
            ),
            (json!({"type":"string"}), "not a struct schema"),
        ] {
            let err = parse(&bad.to_string()).expect_err("refused").to_string();
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn schema_text_finds_the_schema_of_the_wrapped_form_only() {
        assert_eq!(
            schema_text(br#"{"schema":{"type":"struct"},"payload":{"op":"c"}}"#),
            Some(r#"{"type":"struct"}"#)
        );
        assert_eq!(schema_text(br#"{"schema":null,"payload":{}}"#), None);
        assert_eq!(schema_text(br#"{"op":"c","source":{}}"#), None);
        assert_eq!(schema_text(b"null"), None);
    }
}
