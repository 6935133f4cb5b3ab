//! Avro schemas as the container's datum codec walks them: the schema model parsed with
//! [`AvroSchema::parse_container`], laid out as a graph of nodes with every named reference resolved.
//!
//! The model keeps every JSON attribute for a lossless round trip; the codec needs only the shape, and a
//! recursive record must point back at itself, so each type becomes one node and a reference becomes the
//! index of the node its definition made.
//!
//! Invariants:
//! * The model's parser and validator decide what is a schema: names follow the Avro namespace rules,
//!   references resolve as Java resolves them (the enclosing namespace, then the null one), every named type
//!   is defined once, and a union does not directly contain a union. Any union and recursive records are
//!   accepted, as Java's reader accepts them.
//! * Logical types, docs, aliases, `order` and custom attributes (`avro.java.string`) do not change the
//!   encoding and are dropped; field defaults are kept as JSON and checked when a default is used.
//! * Schema errors are [`AvroError::Schema`] with the model's path (a malformed JSON text is
//!   [`AvroError::SchemaJson`]).

use std::collections::HashMap;

use serde_json::Value;

use super::schema::{namespace_of, reference_candidates, AvroSchema, PrimitiveType, SchemaError};
use super::AvroError;

/// Index of a node inside its [`SchemaGraph`].
pub(crate) type NodeId = usize;

/// One type of a parsed schema; children are node indices, so that recursive records are representable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    Record { name: String, fields: Vec<Field> },
    Enum { name: String, symbols: Vec<String> },
    Fixed { name: String, size: usize },
}

/// A record field: its name, type and JSON default (`Some(Value::Null)` is an explicit `null` default).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub name: String,
    pub schema: NodeId,
    pub default: Option<Value>,
}

/// A parsed, resolved Avro schema.
#[derive(Debug, Clone)]
pub struct SchemaGraph {
    nodes: Vec<Node>,
    root: NodeId,
}

impl SchemaGraph {
    /// Parses schema JSON (as stored in a container's `avro.schema` or an `.avsc` file).
    pub fn parse(json: &str) -> Result<Self, AvroError> {
        let model = AvroSchema::parse_container(json).map_err(schema_error)?;
        let mut builder = Builder::default();
        let root = builder.schema(&model, None, "$")?;
        Ok(SchemaGraph {
            nodes: builder.nodes,
            root,
        })
    }

    /// The full name of the top-level type if it is named (`org.apache.hudi.avro.model.HoodieCleanerPlan`).
    pub fn full_name(&self) -> Option<&str> {
        match self.node(self.root) {
            Node::Record { name, .. } | Node::Enum { name, .. } | Node::Fixed { name, .. } => {
                Some(name)
            }
            _ => None,
        }
    }

    pub(crate) fn root(&self) -> NodeId {
        self.root
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        // Every index stored in a node was handed out by the builder for this vector.
        &self.nodes[id]
    }
}

/// A model error in the codec's terms: the path it names and the reason without the path repeated.
fn schema_error(e: SchemaError) -> AvroError {
    match e {
        SchemaError::Json { source } => AvroError::SchemaJson(source),
        // The model names the record; the codec's paths name the field.
        SchemaError::DuplicateField { path, name } => AvroError::Schema {
            path: format!("{path}.fields[{name}]"),
            reason: "field defined twice".to_string(),
        },
        other => {
            let path = other.path().unwrap_or("$").to_string();
            let text = other.to_string();
            let reason = text
                .strip_prefix(&format!("invalid Avro schema at {path}: "))
                .map_or_else(|| text.clone(), str::to_string);
            AvroError::Schema { path, reason }
        }
    }
}

/// Lays a validated model out as nodes; named types are registered as they are met, in the validator's order.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    names: HashMap<String, NodeId>,
}

impl Builder {
    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn schema(
        &mut self,
        s: &AvroSchema,
        ns: Option<&str>,
        path: &str,
    ) -> Result<NodeId, AvroError> {
        Ok(match s {
            AvroSchema::Primitive(p) => self.push(match p.primitive {
                PrimitiveType::Null => Node::Null,
                PrimitiveType::Boolean => Node::Boolean,
                PrimitiveType::Int => Node::Int,
                PrimitiveType::Long => Node::Long,
                PrimitiveType::Float => Node::Float,
                PrimitiveType::Double => Node::Double,
                PrimitiveType::Bytes => Node::Bytes,
                PrimitiveType::String => Node::String,
            }),
            AvroSchema::Array(a) => {
                let items = self.schema(&a.items, ns, &format!("{path}.items"))?;
                self.push(Node::Array(items))
            }
            AvroSchema::Map(m) => {
                let values = self.schema(&m.values, ns, &format!("{path}.values"))?;
                self.push(Node::Map(values))
            }
            AvroSchema::Union(branches) => {
                let mut ids = Vec::with_capacity(branches.len());
                for (i, branch) in branches.iter().enumerate() {
                    ids.push(self.schema(branch, ns, &format!("{path}[{i}]"))?);
                }
                self.push(Node::Union(ids))
            }
            AvroSchema::Record(r) => {
                let name = r.name.fullname(ns);
                // Registered before the fields, so that a field may refer to the record itself.
                let id = self.push(Node::Null);
                self.names.insert(name.clone(), id);
                let child_ns = namespace_of(&name).map(str::to_string);
                let mut fields = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    let type_path = format!("{path}.fields[{}].type", f.name);
                    fields.push(Field {
                        name: f.name.clone(),
                        schema: self.schema(&f.schema, child_ns.as_deref(), &type_path)?,
                        default: f.default.clone(),
                    });
                }
                self.nodes[id] = Node::Record { name, fields };
                id
            }
            AvroSchema::Enum(e) => {
                let name = e.name.fullname(ns);
                let id = self.push(Node::Enum {
                    name: name.clone(),
                    symbols: e.symbols.clone(),
                });
                self.names.insert(name, id);
                id
            }
            AvroSchema::Fixed(f) => {
                let name = f.name.fullname(ns);
                let id = self.push(Node::Fixed {
                    name: name.clone(),
                    size: f.size,
                });
                self.names.insert(name, id);
                id
            }
            AvroSchema::Reference(reference) => reference_candidates(reference, ns)
                .iter()
                .find_map(|full| self.names.get(full).copied())
                // The validator resolved every reference already; this is the same lookup.
                .ok_or_else(|| AvroError::Schema {
                    path: path.to_string(),
                    reason: format!("{reference:?} is not a defined type"),
                })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_fields(schema: &SchemaGraph, id: NodeId) -> &[Field] {
        match schema.node(id) {
            Node::Record { fields, .. } => fields,
            other => panic!("not a record: {other:?}"),
        }
    }

    #[test]
    fn nested_records_inherit_the_namespace_and_references_resolve() {
        let schema = SchemaGraph::parse(
            r#"{"type":"record","name":"Outer","namespace":"a.b","fields":[
                {"name":"inner","type":["null",{"type":"record","name":"Inner","fields":[
                    {"name":"x","type":{"type":"string","avro.java.string":"String"}}]}],"default":null},
                {"name":"again","type":"Inner"},
                {"name":"full","type":"a.b.Inner"},
                {"name":"other","type":{"type":"record","name":"c.D","fields":[
                    {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}},
                {"name":"e2","type":"c.E"},
                {"name":"f","type":{"type":"fixed","name":"F","size":4}},
                {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
                {"name":"m","type":{"type":"map","values":{"type":"array","items":"F"}}}
            ]}"#,
        )
        .expect("parses");
        assert_eq!(schema.full_name(), Some("a.b.Outer"));
        let fields = record_fields(&schema, schema.root());
        assert_eq!(fields.len(), 8);
        assert_eq!(fields[0].default, Some(Value::Null));
        assert_eq!(fields[1].default, None);
        let Node::Union(branches) = schema.node(fields[0].schema) else {
            panic!("union")
        };
        let inner = branches[1];
        assert!(matches!(schema.node(inner), Node::Record { name, .. } if name == "a.b.Inner"));
        assert_eq!(fields[1].schema, inner);
        assert_eq!(fields[2].schema, inner);
        assert!(matches!(schema.node(fields[4].schema), Node::Enum { name, .. } if name == "c.E"));
        assert!(matches!(
            schema.node(fields[5].schema),
            Node::Fixed { size: 4, .. }
        ));
        assert_eq!(schema.node(fields[6].schema), &Node::Long);
    }

    #[test]
    fn recursive_record() {
        let schema = SchemaGraph::parse(
            r#"{"type":"record","name":"List","fields":[
                {"name":"next","type":["null","List"]}]}"#,
        )
        .expect("parses");
        let fields = record_fields(&schema, schema.root());
        let Node::Union(branches) = schema.node(fields[0].schema) else {
            panic!("union")
        };
        assert_eq!(branches[1], schema.root());
    }

    #[test]
    fn invalid_schemas_name_the_place() {
        let cases = [
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"Nope"}]}"#,
                "$.fields[a].type",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":["null",["int"]]}]}"#,
                "$.fields[a].type[1]",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}"#,
                "$.fields[a]",
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"record","name":"R","fields":[]}}]}"#,
                "$.fields[a].type",
            ),
            (r#"{"type":"record","name":"1R","fields":[]}"#, "$"),
            (
                r#"{"type":"enum","name":"E","symbols":["ok","not ok"]}"#,
                "$",
            ),
            (r#"{"type":"fixed","name":"F"}"#, "$"),
            (r#"{"type":"array"}"#, "$"),
            (r#"{"type":"record","name":"R"}"#, "$"),
            (r#"42"#, "$"),
        ];
        for (json, want) in cases {
            match SchemaGraph::parse(json) {
                Err(AvroError::Schema { path, .. }) => assert_eq!(path, want, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
        assert!(matches!(
            SchemaGraph::parse("{"),
            Err(AvroError::SchemaJson(_))
        ));
    }
}
