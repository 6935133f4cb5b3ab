//! Schema evolution under Hudi's schema-on-write rules: the table schema a newer writer schema evolves the
//! table to, or why it cannot.
//!
//! | writer schema, against the table's | result |
//! |---|---|
//! | a new nullable field (root or nested record) | appended at the end of its record as `["null", T]`, default null |
//! | a new field that is not nullable | refused (Hudi adds nullable columns only) |
//! | `int` where the table has `long`, `float` or `double`; `long` where it has `float` or `double`; `float` where it has `double`; a number where it has `string`; `bytes` ↔ `string` | the table type stays (the writer's values widen on read) |
//! | `long` where the table has `int`; `float` or `double` where it has `int` or `long`; `double` where it has `float`; `string` where it has a number | the table type widens to the writer's |
//! | a decimal of greater precision at the same scale | the table decimal widens |
//! | a nullable field where the table's is not | the table field becomes nullable |
//! | an enum with more symbols, the table's first in their order | the table enum gains them |
//! | a table field the writer lacks | the table keeps it (the writer's records read it as its default or null) |
//! | anything else: a narrowing, another type, a removed enum symbol, a decimal of another scale | refused |
//!
//! Files written under the older schema stay as they are: readers (hudi-rs 0.5.0 included) read them with the
//! new columns null and the narrower types widened (`docs/architecture.md`, "Values").

use std::collections::BTreeMap;

use serde_json::Value;
use thiserror::Error;

use super::avro::{
    namespace_of, AvroSchema, EnumSchema, LogicalType, NamedTypes, PrimitiveType, RecordField,
    RecordSchema,
};

/// A table schema after a writer schema was applied to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Evolved {
    /// The new table schema (equal to the old one when `changes` is empty).
    pub schema: AvroSchema,
    /// What changed, one line per change (`added nullable field trip.note`), for logs and commit metadata.
    pub changes: Vec<String>,
}

/// A writer schema Hudi would refuse for this table: nothing may be written with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("schema change refused at field `{path}`: {reason} (table schema: {table}; writer schema: {writer})")]
pub struct EvolutionError {
    /// The field, as a dotted path (`$` for the record itself).
    pub path: String,
    /// Why.
    pub reason: String,
    /// The table schema, as JSON.
    pub table: String,
    /// The writer schema, as JSON.
    pub writer: String,
}

/// Applies `writer` to `table` (both validated schemas of records): see the module doc.
pub fn evolve(table: &AvroSchema, writer: &AvroSchema) -> Result<Evolved, EvolutionError> {
    let refuse = |path: String, reason: String| EvolutionError {
        path,
        reason,
        table: table.to_json_string(),
        writer: writer.to_json_string(),
    };
    let table_names = table
        .validate()
        .map_err(|e| refuse("$".into(), format!("the table schema is invalid: {e}")))?;
    let writer_names = writer
        .validate_writer()
        .map_err(|e| refuse("$".into(), format!("the writer schema is invalid: {e}")))?;
    let mut m = Merger {
        table_names,
        writer_names,
        changes: Vec::new(),
    };
    let schema = m
        .merge(table, None, writer, None, "")
        .map_err(|(path, reason)| refuse(path, reason))?;
    Ok(Evolved {
        schema,
        changes: m.changes,
    })
}

/// A refusal: the path and the reason.
type Refusal = (String, String);

struct Merger<'t, 'w> {
    table_names: NamedTypes<'t>,
    writer_names: NamedTypes<'w>,
    changes: Vec<String>,
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "$".to_string()
    } else {
        path.to_string()
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The non-null branch of a nullable union, and whether there was a null branch.
fn split_null(schema: &AvroSchema) -> Result<(&AvroSchema, bool), String> {
    match schema {
        AvroSchema::Union(branches) => {
            let mut non_null = branches.iter().filter(|b| !b.is_null());
            match (non_null.next(), non_null.next()) {
                (Some(inner), None) => Ok((inner, branches.len() > 1)),
                (None, _) => Err("a union of null only".to_string()),
                (Some(_), Some(_)) => {
                    Err("a union of several types cannot be a table column".into())
                }
            }
        }
        other => Ok((other, false)),
    }
}

/// The definition behind a reference among `names` and the namespace its members live in (the schema itself
/// when it is not a reference or does not resolve: `evolve` validated both schemas).
fn resolve<'a>(
    names: &NamedTypes<'a>,
    schema: &'a AvroSchema,
    ns: Option<String>,
) -> (&'a AvroSchema, Option<String>) {
    if let AvroSchema::Reference(name) = schema {
        if let Some((full, target)) = names.resolve(name, ns.as_deref()) {
            return (target, namespace_of(&full).map(str::to_string));
        }
    }
    (schema, ns)
}

/// A primitive's rank in Hudi's numeric promotions (`int` < `long` < `float` < `double`).
fn numeric_rank(p: PrimitiveType) -> Option<u8> {
    match p {
        PrimitiveType::Int => Some(0),
        PrimitiveType::Long => Some(1),
        PrimitiveType::Float => Some(2),
        PrimitiveType::Double => Some(3),
        _ => None,
    }
}

impl<'t, 'w> Merger<'t, 'w> {
    /// The table's `table` (as written, possibly a reference) after the writer's `writer`.
    fn merge(
        &mut self,
        table: &'t AvroSchema,
        t_ns: Option<String>,
        writer: &'w AvroSchema,
        w_ns: Option<String>,
        path: &str,
    ) -> Result<AvroSchema, Refusal> {
        let (t_inner, t_null) = split_null(table).map_err(|r| (shown(path), r))?;
        let (w_inner, w_null) = split_null(writer).map_err(|r| (shown(path), r))?;
        let merged = self.merge_inner(t_inner, t_ns, w_inner, w_ns, path)?;
        Ok(match (t_null, w_null) {
            (true, _) => match table {
                // Keep the table's branch order (and so its default's branch).
                AvroSchema::Union(branches) => AvroSchema::Union(
                    branches
                        .iter()
                        .map(|b| {
                            if b.is_null() {
                                b.clone()
                            } else {
                                merged.clone()
                            }
                        })
                        .collect(),
                ),
                _ => AvroSchema::nullable(merged),
            },
            (false, true) => {
                self.changes.push(format!("made {} nullable", shown(path)));
                AvroSchema::nullable(merged)
            }
            (false, false) => merged,
        })
    }

    fn merge_inner(
        &mut self,
        table: &'t AvroSchema,
        t_ns: Option<String>,
        writer: &'w AvroSchema,
        w_ns: Option<String>,
        path: &str,
    ) -> Result<AvroSchema, Refusal> {
        let (t, t_ns) = resolve(&self.table_names, table, t_ns);
        let (w, w_ns) = resolve(&self.writer_names, writer, w_ns);
        let differs = || {
            (
                shown(path),
                format!("the type changes from {} to {}", type_text(t), type_text(w)),
            )
        };
        let decimals = decimal_of(t).zip(decimal_of(w));
        match (t, w) {
            (AvroSchema::Primitive(tp), AvroSchema::Primitive(wp)) => {
                match (tp.logical_type, wp.logical_type) {
                    (None, None) => {}
                    (
                        Some(LogicalType::Decimal {
                            precision: tp_p,
                            scale: tp_s,
                        }),
                        Some(LogicalType::Decimal {
                            precision: wp_p,
                            scale: wp_s,
                        }),
                    ) if tp.primitive == wp.primitive && tp_s == wp_s => {
                        return self
                            .widen_decimal((tp_p, tp_s), (wp_p, wp_s), path, table, w)
                            .ok_or_else(differs);
                    }
                    (a, b) if a == b && tp.primitive == wp.primitive => return Ok(table.clone()),
                    // One side plain: the writer's values are read in the column's unit (as the JSON path
                    // reads them), and the table keeps its type.
                    (Some(_), None) | (None, Some(_)) if tp.primitive == wp.primitive => {
                        return Ok(table.clone())
                    }
                    _ => return Err(differs()),
                }
                if tp.primitive == wp.primitive {
                    return Ok(table.clone());
                }
                match (numeric_rank(tp.primitive), numeric_rank(wp.primitive)) {
                    (Some(a), Some(b)) if b < a => Ok(table.clone()),
                    (Some(a), Some(b)) if b > a => {
                        self.changes.push(format!(
                            "widened {} from {} to {}",
                            shown(path),
                            tp.primitive.name(),
                            wp.primitive.name()
                        ));
                        Ok(w.clone())
                    }
                    // Numbers may widen to strings (Hudi's promotion chart; readers print the old values).
                    (Some(_), None) if wp.primitive == PrimitiveType::String => {
                        self.changes.push(format!(
                            "widened {} from {} to string",
                            shown(path),
                            tp.primitive.name()
                        ));
                        Ok(w.clone())
                    }
                    (None, Some(_)) if tp.primitive == PrimitiveType::String => Ok(table.clone()),
                    _ => match (tp.primitive, wp.primitive) {
                        (PrimitiveType::String, PrimitiveType::Bytes)
                        | (PrimitiveType::Bytes, PrimitiveType::String) => Ok(table.clone()),
                        _ => Err(differs()),
                    },
                }
            }
            (AvroSchema::Record(tr), AvroSchema::Record(wr)) => {
                let t_full = tr.name.fullname(t_ns.as_deref());
                let w_full = wr.name.fullname(w_ns.as_deref());
                let rec = self.record(
                    tr,
                    namespace_of(&t_full).map(str::to_string),
                    wr,
                    namespace_of(&w_full).map(str::to_string),
                    path,
                )?;
                Ok(if &rec == tr {
                    table.clone()
                } else {
                    AvroSchema::Record(rec)
                })
            }
            (AvroSchema::Enum(te), AvroSchema::Enum(we)) => {
                if we.symbols.len() < te.symbols.len()
                    || we.symbols.iter().zip(&te.symbols).any(|(a, b)| a != b)
                {
                    return Err((
                        shown(path),
                        format!(
                            "enum symbols {:?} do not keep the table's {:?} first and in order",
                            we.symbols, te.symbols
                        ),
                    ));
                }
                if we.symbols.len() == te.symbols.len() {
                    return Ok(table.clone());
                }
                self.changes
                    .push(format!("added enum symbols to {}", shown(path)));
                Ok(AvroSchema::Enum(EnumSchema {
                    symbols: we.symbols.clone(),
                    ..te.clone()
                }))
            }
            (AvroSchema::Fixed(tf), AvroSchema::Fixed(wf))
                if tf.size == wf.size && tf.logical_type == wf.logical_type =>
            {
                Ok(table.clone())
            }
            // A decimal as `bytes` on one side and `fixed` on the other (the table's commits hold Spark's
            // `fixed` form, `schema::spark_form`, of a source schema's `bytes` decimals), or two `fixed` ones
            // of different sizes: the same rule as two `bytes` decimals.
            _ if decimals.is_some() => decimals
                .and_then(|(td, wd)| self.widen_decimal(td, wd, path, table, w))
                .ok_or_else(differs),
            (AvroSchema::Array(ta), AvroSchema::Array(wa)) => {
                let items = self.merge(&ta.items, t_ns, &wa.items, w_ns, &format!("{path}[]"))?;
                Ok(if items == *ta.items {
                    table.clone()
                } else {
                    AvroSchema::array(items)
                })
            }
            (AvroSchema::Map(tm), AvroSchema::Map(wm)) => {
                let values =
                    self.merge(&tm.values, t_ns, &wm.values, w_ns, &format!("{path}{{}}"))?;
                Ok(if values == *tm.values {
                    table.clone()
                } else {
                    AvroSchema::map(values)
                })
            }
            _ => Err(differs()),
        }
    }

    /// A writer decimal `(precision, scale)` against the table's: the same scale and a precision no greater
    /// keeps the table's type, a greater one widens it to the writer's; another scale is refused (`None`).
    fn widen_decimal(
        &mut self,
        (tp, ts): (u32, u32),
        (wp, ws): (u32, u32),
        path: &str,
        table: &AvroSchema,
        writer: &AvroSchema,
    ) -> Option<AvroSchema> {
        if ts != ws {
            return None;
        }
        if wp <= tp {
            return Some(table.clone());
        }
        self.changes.push(format!(
            "widened {} from decimal({tp},{ts}) to decimal({wp},{ws})",
            shown(path)
        ));
        Some(writer.clone())
    }

    fn record(
        &mut self,
        table: &'t RecordSchema,
        t_ns: Option<String>,
        writer: &'w RecordSchema,
        w_ns: Option<String>,
        path: &str,
    ) -> Result<RecordSchema, Refusal> {
        let by_name: BTreeMap<&str, &RecordField> =
            writer.fields.iter().map(|f| (f.name.as_str(), f)).collect();
        let mut out = table.clone();
        for (i, tf) in table.fields.iter().enumerate() {
            let Some(wf) = by_name.get(tf.name.as_str()) else {
                continue;
            };
            let fpath = join(path, &tf.name);
            let merged = self.merge(&tf.schema, t_ns.clone(), &wf.schema, w_ns.clone(), &fpath)?;
            if merged != tf.schema {
                let became_nullable = !tf.schema.is_nullable() && merged.is_nullable();
                if let Some(field) = out.fields.get_mut(i) {
                    field.schema = merged;
                    if became_nullable {
                        field.default = Some(Value::Null);
                    }
                }
            }
        }
        for wf in &writer.fields {
            if table.field(&wf.name).is_some() {
                continue;
            }
            let fpath = join(path, &wf.name);
            if !wf.schema.is_nullable() {
                return Err((
                    fpath,
                    format!(
                        "the new field is a non-nullable {}: Hudi adds nullable fields only",
                        wf.schema.describe()
                    ),
                ));
            }
            if uses_references(&wf.schema) {
                return Err((
                    fpath,
                    "the new field refers to a named type defined elsewhere in the writer schema; \
                     define it inline"
                        .to_string(),
                ));
            }
            let (inner, _) = split_null(&wf.schema).map_err(|r| (fpath.clone(), r))?;
            self.changes.push(format!("added nullable field {fpath}"));
            out.fields
                .push(RecordField::nullable(wf.name.clone(), inner.clone()));
        }
        Ok(out)
    }
}

/// A type for messages, decimals with their precision and scale.
fn type_text(schema: &AvroSchema) -> String {
    match schema.logical_type() {
        Some(LogicalType::Decimal { precision, scale }) => format!("decimal({precision},{scale})"),
        _ => schema.describe(),
    }
}

/// Whether a schema names a type it does not define itself.
fn uses_references(schema: &AvroSchema) -> bool {
    match schema {
        AvroSchema::Reference(_) => true,
        AvroSchema::Union(branches) => branches.iter().any(uses_references),
        AvroSchema::Record(r) => r.fields.iter().any(|f| uses_references(&f.schema)),
        AvroSchema::Array(a) => uses_references(&a.items),
        AvroSchema::Map(m) => uses_references(&m.values),
        AvroSchema::Primitive(_) | AvroSchema::Enum(_) | AvroSchema::Fixed(_) => false,
    }
}

/// The precision and scale of a decimal schema, `bytes` or `fixed`.
fn decimal_of(schema: &AvroSchema) -> Option<(u32, u32)> {
    let logical = match schema {
        AvroSchema::Primitive(p) if p.primitive == PrimitiveType::Bytes => p.logical_type,
        AvroSchema::Fixed(f) => f.logical_type,
        _ => None,
    };
    match logical {
        Some(LogicalType::Decimal { precision, scale }) => Some((precision, scale)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::arrow::avro_to_arrow;

    fn schema(fields: &str) -> AvroSchema {
        AvroSchema::parse(&format!(
            r#"{{"type":"record","name":"trips","namespace":"hoodie","fields":[{fields}]}}"#
        ))
        .unwrap_or_else(|e| panic!("{e}: {fields}"))
    }

    fn writer(fields: &str) -> AvroSchema {
        AvroSchema::parse_writer(&format!(
            r#"{{"type":"record","name":"trips","namespace":"hoodie","fields":[{fields}]}}"#
        ))
        .unwrap_or_else(|e| panic!("{e}: {fields}"))
    }

    const BASE: &str = r#"{"name":"id","type":"string"},{"name":"n","type":"int"},
        {"name":"fare","type":["null","float"],"default":null},
        {"name":"trip","type":{"type":"record","name":"Trip","fields":[{"name":"km","type":"double"}]}},
        {"name":"tags","type":{"type":"map","values":"long"}},
        {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},
        {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}"#;

    #[test]
    fn a_bytes_and_a_fixed_decimal_of_the_same_type_are_one_type() {
        // The table's commits hold Spark's fixed form of the source schema's bytes decimal.
        let source = schema(BASE);
        let stored = crate::schema::spark_form::spark_form(&source);
        assert_ne!(stored, source);
        for (table, given) in [(&stored, &source), (&source, &stored)] {
            let e = evolve(table, given).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(e.schema, *table);
            assert!(e.changes.is_empty(), "{:?}", e.changes);
        }
        let wider = writer(&BASE.replace(r#""precision":10"#, r#""precision":14"#));
        let e = evolve(&stored, &wider).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            e.changes,
            ["widened amount from decimal(10,2) to decimal(14,2)"]
        );
        let other_scale = writer(&BASE.replace(r#""scale":2"#, r#""scale":3"#));
        assert!(evolve(&stored, &other_scale).is_err());
    }

    #[test]
    fn the_same_schema_changes_nothing() {
        let t = schema(BASE);
        let e = evolve(&t, &t).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.schema, t);
        assert!(e.changes.is_empty(), "{:?}", e.changes);
    }

    #[test]
    fn new_nullable_fields_widenings_and_symbols_evolve_the_table() {
        let t = schema(BASE);
        let w = writer(
            r#"{"name":"n","type":"long"},{"name":"id","type":"string"},
            {"name":"fare","type":["null","double"],"default":null},
            {"name":"trip","type":{"type":"record","name":"Trip","fields":[{"name":"km","type":"double"},
                {"name":"stops","type":["null","int"],"default":null}]}},
            {"name":"tags","type":{"type":"map","values":"int"}},
            {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
            {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
            {"name":"note","type":["null","string"],"default":null}"#,
        );
        let e = evolve(&t, &w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            e.changes,
            [
                "widened n from int to long",
                "widened fare from float to double",
                "added nullable field trip.stops",
                "added enum symbols to kind",
                "widened amount from decimal(10,2) to decimal(12,2)",
                "added nullable field note",
            ]
        );
        let want = schema(
            r#"{"name":"id","type":"string"},{"name":"n","type":"long"},
            {"name":"fare","type":["null","double"],"default":null},
            {"name":"trip","type":{"type":"record","name":"Trip","fields":[{"name":"km","type":"double"},
                {"name":"stops","type":["null","int"],"default":null}]}},
            {"name":"tags","type":{"type":"map","values":"long"}},
            {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
            {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
            {"name":"note","type":["null","string"],"default":null}"#,
        );
        assert_eq!(e.schema, want, "{}", e.schema.to_json_string());
        // The evolved schema is a table schema: it maps to Arrow, and reading the writer's datums into it plans.
        assert!(avro_to_arrow(&e.schema).is_ok());
        let d = crate::record::decode::RecordDecoder::try_new(
            std::sync::Arc::new(avro_to_arrow(&e.schema).unwrap_or_else(|e| panic!("{e}"))),
            &e.schema,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        d.compile_avro(&w).unwrap_or_else(|e| panic!("{e}"));
        d.compile_avro(&t).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn narrower_writers_and_missing_fields_keep_the_table_as_it_is() {
        let t = schema(
            r#"{"name":"id","type":"string"},{"name":"n","type":"long"},{"name":"x","type":["null","int"],"default":null}"#,
        );
        let w = writer(r#"{"name":"id","type":"bytes"},{"name":"n","type":"int"}"#);
        let e = evolve(&t, &w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.schema, t);
        assert!(e.changes.is_empty());
        let text = evolve(&t, &writer(r#"{"name":"n","type":"string"}"#))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text.changes, ["widened n from long to string"]);
        let nullable = writer(
            r#"{"name":"id","type":["null","string"],"default":null},{"name":"n","type":"long"}"#,
        );
        let e = evolve(&t, &nullable).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.changes, ["made id nullable"]);
        assert!(e
            .schema
            .field("id")
            .is_some_and(|f| f.schema.is_nullable() && f.default == Some(Value::Null)));
    }

    #[test]
    fn changes_hudi_refuses_name_the_field_and_both_schemas() {
        let t = schema(BASE);
        let cases = [
            (
                r#"{"name":"id","type":"string"},{"name":"n","type":"int"},{"name":"extra","type":"int","default":1}"#,
                "extra",
                "non-nullable int",
            ),
            (
                r#"{"name":"n","type":"boolean"}"#,
                "n",
                "from int to boolean",
            ),
            (
                r#"{"name":"trip","type":{"type":"record","name":"Trip","fields":[{"name":"km","type":"boolean"}]}}"#,
                "trip.km",
                "from double to boolean",
            ),
            (
                r#"{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["B","A"]}}"#,
                "kind",
                "enum symbols",
            ),
            (
                r#"{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}}"#,
                "amount",
                "from decimal(10,2) to decimal(12,3)",
            ),
            (
                r#"{"name":"fare","type":["null","float","string"]}"#,
                "fare",
                "several types",
            ),
        ];
        for (fields, path, reason) in cases {
            let w = writer(fields);
            let e = evolve(&t, &w)
                .err()
                .unwrap_or_else(|| panic!("accepted {fields}"));
            assert_eq!(e.path, path, "{e}");
            assert!(e.reason.contains(reason), "{reason}: {e}");
            let text = e.to_string();
            assert!(
                text.contains(&t.to_json_string()) && text.contains(&w.to_json_string()),
                "{text}"
            );
        }
    }
}
