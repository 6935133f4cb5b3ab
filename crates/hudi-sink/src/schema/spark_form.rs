//! The table schema as Spark writes it, for the files Hudi's Java readers parse: every decimal as a `fixed`
//! named `fixed` in the namespace `<record full name>.<field>`, sized for its precision (what Spark's
//! `SchemaConverters` and so every Spark-written Hudi table declare).
//!
//! Why: Spark's merge-on-read reader turns a base-file row into Avro with Spark's own `fixed` decimals and then
//! rewrites it into the table schema of the commit metadata. Hudi 0.15 cannot rewrite a `fixed` decimal into a
//! `bytes` one (`HoodieAvroSchemaException`), so a table whose commits declared the source schema's `bytes`
//! decimals could not be read by Spark once it had logs (docs/compatibility.md). The values are the same
//! two's-complement integers either way; only the Avro encoding differs (a length prefix for `bytes`).
//!
//! The writer keeps its schema in the source's form (value decoding and evolution read it); [`spark_form`]
//! is applied where the schema is written out: commit metadata, `hoodie.properties`, Parquet footers and log
//! block headers (with the log blocks encoded to match).

use super::avro::{decimal_min_bytes, AvroSchema, FixedSchema, LogicalType, Name, PrimitiveType};

/// `schema` with every `bytes` decimal replaced by Spark's `fixed` form (see the module doc); everything else
/// as it is.
pub fn spark_form(schema: &AvroSchema) -> AvroSchema {
    convert(schema, None, "")
}

/// `schema` under the record whose full name is `record` (None at the root), as field `field`.
fn convert(schema: &AvroSchema, record: Option<&str>, field: &str) -> AvroSchema {
    match schema {
        AvroSchema::Primitive(p) => match (p.primitive, p.logical_type) {
            (PrimitiveType::Bytes, Some(LogicalType::Decimal { precision, scale })) => {
                let namespace = match record {
                    Some(r) if !r.is_empty() => format!("{r}.{field}"),
                    _ => field.to_string(),
                };
                AvroSchema::Fixed(FixedSchema {
                    name: Name::with_namespace("fixed", namespace),
                    doc: None,
                    aliases: Vec::new(),
                    size: decimal_min_bytes(precision),
                    logical_type: Some(LogicalType::Decimal { precision, scale }),
                    attributes: p.attributes.clone(),
                })
            }
            _ => schema.clone(),
        },
        AvroSchema::Record(r) => {
            let full = r.name.fullname(record.and_then(super::avro::namespace_of));
            let mut out = r.clone();
            for f in &mut out.fields {
                f.schema = convert(&f.schema, Some(&full), &f.name);
            }
            AvroSchema::Record(out)
        }
        AvroSchema::Array(a) => {
            let mut out = a.clone();
            out.items = Box::new(convert(&a.items, record, field));
            AvroSchema::Array(out)
        }
        AvroSchema::Map(m) => {
            let mut out = m.clone();
            out.values = Box::new(convert(&m.values, record, field));
            AvroSchema::Map(out)
        }
        AvroSchema::Union(branches) => {
            AvroSchema::Union(branches.iter().map(|b| convert(b, record, field)).collect())
        }
        AvroSchema::Enum(_) | AvroSchema::Fixed(_) | AvroSchema::Reference(_) => schema.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_decimals_become_sparks_fixed_and_nothing_else_changes() {
        let text = r#"{"type":"record","name":"bench_record","namespace":"hoodie.bench","fields":[
            {"name":"id","type":"string"},
            {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
            {"name":"opt","type":["null",{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}],"default":null},
            {"name":"blob","type":"bytes"},
            {"name":"inner","type":{"type":"record","name":"inner","fields":[
                {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":0}}]}},
            {"name":"list","type":{"type":"array","items":{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}}}
        ]}"#;
        let schema = AvroSchema::parse(text).expect("schema");
        let out = spark_form(&schema).to_json_string();
        assert!(out.contains(r#"{"name":"id","type":"string"}"#), "{out}");
        assert!(out.contains(r#"{"name":"blob","type":"bytes"}"#), "{out}");
        assert!(
            out.contains(r#"{"type":"fixed","name":"fixed","namespace":"hoodie.bench.bench_record.price","size":6,"logicalType":"decimal","precision":12,"scale":2}"#),
            "{out}"
        );
        assert!(
            out.contains(r#"["null",{"type":"fixed","name":"fixed","namespace":"hoodie.bench.bench_record.opt","size":16,"logicalType":"decimal","precision":38,"scale":9}]"#),
            "{out}"
        );
        assert!(
            out.contains(r#""namespace":"hoodie.bench.inner.d","size":3"#),
            "{out}"
        );
        assert!(
            out.contains(r#""namespace":"hoodie.bench.bench_record.list","size":2"#),
            "{out}"
        );
        // The result parses (names unique) and maps to the same Arrow schema.
        let again = AvroSchema::parse(&out).expect("reparses");
        assert_eq!(
            crate::schema::arrow::avro_to_arrow(&again).ok(),
            crate::schema::arrow::avro_to_arrow(&schema).ok()
        );
        assert_eq!(spark_form(&again), again, "idempotent");
    }
}
