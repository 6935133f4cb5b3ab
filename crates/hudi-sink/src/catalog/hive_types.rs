//! Column types as Hudi's sync derives them: from the table's Parquet schema (the one its base files have)
//! to Hive type names for Glue, and to Spark's `StructType` JSON for the `spark.sql.sources.schema.*`
//! parameters. Going through Parquet, as Hudi does (Avro → Parquet → Hive), keeps its quirks: timestamps are
//! `bigint` unless `support_timestamp`, enums are strings, lists follow Parquet's element rules.

use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::schema::types::Type;
use serde_json::{json, Value};

use super::CatalogError;

/// The Hive type of one top-level column, lower case as Glue is sent it (`decimal(10,2)`, `struct<a:int>`).
pub fn hive_type(field: &Type, support_timestamp: bool) -> Result<String, CatalogError> {
    let t = if field.get_basic_info().has_repetition()
        && field.get_basic_info().repetition() == Repetition::REPEATED
    {
        format!("array<{}>", convert(field, support_timestamp)?)
    } else {
        convert(field, support_timestamp)?
    };
    Ok(t.to_ascii_lowercase())
}

fn unsupported(field: &Type, why: &str) -> CatalogError {
    CatalogError::Schema {
        reason: format!("column {:?}: {why}", field.name()),
    }
}

fn logical(field: &Type) -> Option<&LogicalType> {
    field.get_basic_info().logical_type_ref()
}

fn converted(field: &Type) -> ConvertedType {
    field.get_basic_info().converted_type()
}

fn is_list(field: &Type) -> bool {
    matches!(logical(field), Some(LogicalType::List)) || converted(field) == ConvertedType::LIST
}

fn is_map(field: &Type) -> bool {
    matches!(logical(field), Some(LogicalType::Map))
        || matches!(
            converted(field),
            ConvertedType::MAP | ConvertedType::MAP_KEY_VALUE
        )
}

fn is_optional(field: &Type) -> bool {
    field.get_basic_info().has_repetition()
        && field.get_basic_info().repetition() == Repetition::OPTIONAL
}

/// Parquet's list rule (shared by Hive and Spark): the repeated field itself is the element when it is
/// primitive, has several fields, or is named `array` / `<list>_tuple`; otherwise its one field is.
fn list_element(list: &Type) -> Result<(&Type, bool), CatalogError> {
    let fields = list.get_fields();
    let [repeated] = fields else {
        return Err(unsupported(list, "a list group must have one field"));
    };
    let repeated = repeated.as_ref();
    if repeated.is_primitive()
        || repeated.get_fields().len() > 1
        || repeated.name() == "array"
        || repeated.name() == format!("{}_tuple", list.name())
    {
        return Ok((repeated, true));
    }
    match repeated.get_fields() {
        [element] => Ok((element.as_ref(), false)),
        _ => Err(unsupported(list, "an empty list element")),
    }
}

fn map_key_value(map: &Type) -> Result<(&Type, &Type), CatalogError> {
    let fields = map.get_fields();
    let [kv] = fields else {
        return Err(unsupported(map, "a map group must have one field"));
    };
    match kv.get_fields() {
        [k, v] => Ok((k.as_ref(), v.as_ref())),
        _ => Err(unsupported(map, "a map entry must have a key and a value")),
    }
}

/// `(precision, scale)` when the primitive is a decimal (logical or converted annotation).
fn decimal_of(field: &Type, precision: i32, scale: i32) -> Option<(i32, i32)> {
    (matches!(logical(field), Some(LogicalType::Decimal(_)))
        || converted(field) == ConvertedType::DECIMAL)
        .then_some((precision, scale))
}

fn is_date(field: &Type) -> bool {
    matches!(logical(field), Some(LogicalType::Date)) || converted(field) == ConvertedType::DATE
}

/// Whether the byte array holds text (`STRING`/`ENUM`, and `JSON` when `json`).
fn is_text(field: &Type, json: bool) -> bool {
    matches!(
        logical(field),
        Some(LogicalType::String | LogicalType::Enum)
    ) || (json && matches!(logical(field), Some(LogicalType::Json)))
        || matches!(converted(field), ConvertedType::UTF8 | ConvertedType::ENUM)
}

fn convert(field: &Type, support_timestamp: bool) -> Result<String, CatalogError> {
    if field.is_primitive() {
        let Type::PrimitiveType {
            physical_type,
            scale,
            precision,
            ..
        } = field
        else {
            return Err(unsupported(field, "not a primitive"));
        };
        if let Some((p, s)) = decimal_of(field, *precision, *scale) {
            return Ok(format!("DECIMAL({p},{s})"));
        }
        if is_date(field) {
            return Ok("DATE".into());
        }
        let timestamp = matches!(logical(field), Some(LogicalType::Timestamp { .. }))
            || matches!(
                converted(field),
                ConvertedType::TIMESTAMP_MILLIS | ConvertedType::TIMESTAMP_MICROS
            );
        if support_timestamp && timestamp {
            return Ok("TIMESTAMP".into());
        }
        let stringish = is_text(field, false);
        return Ok(match physical_type {
            Physical::BOOLEAN => "BOOLEAN",
            Physical::INT32 => "INT",
            Physical::INT64 => "BIGINT",
            // What Hudi's sync writes for INT96 (never produced from Avro).
            Physical::INT96 => "timestamp-millis",
            Physical::FLOAT => "FLOAT",
            Physical::DOUBLE => "DOUBLE",
            Physical::FIXED_LEN_BYTE_ARRAY => "BINARY",
            Physical::BYTE_ARRAY if stringish => "STRING",
            Physical::BYTE_ARRAY => "BINARY",
        }
        .into());
    }
    if is_list(field) {
        let (element, _) = list_element(field)?;
        return Ok(format!("ARRAY<{}>", convert(element, support_timestamp)?));
    }
    if is_map(field) {
        let (k, v) = map_key_value(field)?;
        return Ok(format!(
            "MAP<{},{}>",
            convert(k, support_timestamp)?,
            convert(v, support_timestamp)?
        ));
    }
    let mut parts = Vec::new();
    for f in field.get_fields() {
        parts.push(format!("{}:{}", f.name(), convert(f, support_timestamp)?));
    }
    if parts.is_empty() {
        return Err(unsupported(field, "an empty record"));
    }
    // Hive struct types cannot hold '-', so Hudi replaces it.
    Ok(format!("STRUCT<{}>", parts.join(",")).replace('-', "_"))
}

/// Spark's type JSON of one field (`ParquetToSparkSchemaConverter`'s rules).
fn spark_type(field: &Type) -> Result<Value, CatalogError> {
    if field.is_primitive() {
        let Type::PrimitiveType {
            physical_type,
            scale,
            precision,
            ..
        } = field
        else {
            return Err(unsupported(field, "not a primitive"));
        };
        if let Some((p, s)) = decimal_of(field, *precision, *scale) {
            return Ok(json!(format!("decimal({p},{s})")));
        }
        if is_date(field) {
            return Ok(json!("date"));
        }
        if matches!(logical(field), Some(LogicalType::Timestamp { .. })) {
            return Ok(json!("timestamp"));
        }
        let stringish = is_text(field, true);
        return Ok(json!(match physical_type {
            Physical::BOOLEAN => "boolean",
            Physical::INT32 => "integer",
            Physical::INT64 => "long",
            Physical::INT96 => "timestamp",
            Physical::FLOAT => "float",
            Physical::DOUBLE => "double",
            Physical::BYTE_ARRAY if stringish => "string",
            Physical::BYTE_ARRAY | Physical::FIXED_LEN_BYTE_ARRAY => "binary",
        }));
    }
    if is_list(field) {
        let (element, repeated) = list_element(field)?;
        let contains_null = !repeated && is_optional(element);
        return Ok(json!({
            "type": "array",
            "elementType": spark_type(element)?,
            "containsNull": contains_null,
        }));
    }
    if is_map(field) {
        let (k, v) = map_key_value(field)?;
        return Ok(json!({
            "type": "map",
            "keyType": spark_type(k)?,
            "valueType": spark_type(v)?,
            "valueContainsNull": is_optional(v),
        }));
    }
    spark_struct(field.get_fields().iter().map(|f| f.as_ref()))
}

/// Spark's `StructType` JSON of `fields`, in order.
pub fn spark_struct<'a>(fields: impl Iterator<Item = &'a Type>) -> Result<Value, CatalogError> {
    let mut out = Vec::new();
    for f in fields {
        out.push(spark_field(f)?);
    }
    Ok(json!({"type": "struct", "fields": out}))
}

/// One `StructField` JSON.
pub fn spark_field(field: &Type) -> Result<Value, CatalogError> {
    Ok(json!({
        "name": field.name(),
        "type": spark_type(field)?,
        "nullable": is_optional(field),
        "metadata": {},
    }))
}

/// The field Hudi adds for a partition column missing from the schema: a required string.
pub fn spark_string_field(name: &str) -> Value {
    json!({"name": name, "type": "string", "nullable": false, "metadata": {}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::avro::AvroSchema;
    use crate::write::TableSchema;

    fn schema() -> TableSchema {
        let avro = AvroSchema::parse(
            r#"{"type":"record","name":"r","namespace":"hoodie.t","fields":[
            {"name":"b","type":"boolean"},
            {"name":"i","type":["null","int"],"default":null},
            {"name":"l","type":"long"},
            {"name":"f","type":"float"},
            {"name":"d","type":"double"},
            {"name":"s","type":"string"},
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
            {"name":"by","type":"bytes"},
            {"name":"fx","type":{"type":"fixed","name":"F","size":4}},
            {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
            {"name":"dt","type":{"type":"int","logicalType":"date"}},
            {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
            {"name":"tm","type":{"type":"long","logicalType":"timestamp-millis"}},
            {"name":"rec","type":{"type":"record","name":"Inner","fields":[
                {"name":"x","type":"int"},{"name":"y","type":["null","string"],"default":null}]}},
            {"name":"arr","type":{"type":"array","items":"long"}},
            {"name":"arr_rec","type":{"type":"array","items":"Inner"}},
            {"name":"m","type":{"type":"map","values":["null","double"]}}
            ]}"#,
        )
        .unwrap();
        TableSchema::try_new(avro).unwrap()
    }

    fn hive(support_timestamp: bool) -> Vec<(String, String)> {
        let s = schema();
        s.parquet
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| {
                (
                    f.name().to_string(),
                    hive_type(f, support_timestamp).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn hive_types_follow_hudis_mapping() {
        let got = hive(false);
        let want = [
            ("_hoodie_commit_time", "string"),
            ("_hoodie_commit_seqno", "string"),
            ("_hoodie_record_key", "string"),
            ("_hoodie_partition_path", "string"),
            ("_hoodie_file_name", "string"),
            ("b", "boolean"),
            ("i", "int"),
            ("l", "bigint"),
            ("f", "float"),
            ("d", "double"),
            ("s", "string"),
            ("e", "string"),
            ("by", "binary"),
            ("fx", "binary"),
            ("dec", "decimal(10,2)"),
            ("dt", "date"),
            ("ts", "bigint"),
            ("tm", "bigint"),
            ("rec", "struct<x:int,y:string>"),
            ("arr", "array<bigint>"),
            ("arr_rec", "array<struct<x:int,y:string>>"),
            ("m", "map<string,double>"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
        let with_ts = hive(true);
        let ts: Vec<&str> = with_ts
            .iter()
            .filter(|(n, _)| n == "ts" || n == "tm")
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(ts, ["timestamp", "timestamp"]);
    }

    #[test]
    fn spark_json_of_every_kind() {
        let s = schema();
        let field = |name: &str| {
            let f = s
                .parquet
                .root_schema()
                .get_fields()
                .iter()
                .find(|f| f.name() == name)
                .unwrap()
                .clone();
            spark_field(&f).unwrap()
        };
        assert_eq!(
            field("i"),
            json!({"name":"i","type":"integer","nullable":true,"metadata":{}})
        );
        assert_eq!(
            field("l"),
            json!({"name":"l","type":"long","nullable":false,"metadata":{}})
        );
        assert_eq!(field("ts")["type"], json!("timestamp"));
        assert_eq!(field("dec")["type"], json!("decimal(10,2)"));
        assert_eq!(field("e")["type"], json!("string"));
        assert_eq!(field("fx")["type"], json!("binary"));
        assert_eq!(
            field("arr")["type"],
            json!({"type":"array","elementType":"long","containsNull":false})
        );
        assert_eq!(
            field("m")["type"],
            json!({"type":"map","keyType":"string","valueType":"double","valueContainsNull":true})
        );
        assert_eq!(
            field("rec")["type"],
            json!({"type":"struct","fields":[
                {"name":"x","type":"integer","nullable":false,"metadata":{}},
                {"name":"y","type":"string","nullable":true,"metadata":{}}]})
        );
        // Spark renders the JSON compactly with the keys in this order.
        assert_eq!(
            serde_json::to_string(&field("b")).unwrap(),
            r#"{"name":"b","type":"boolean","nullable":false,"metadata":{}}"#
        );
    }
}
