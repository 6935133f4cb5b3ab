//! Avro schemas as the container codec needs them: parsed from JSON into a graph of nodes with every named
//! reference resolved.
//!
//! This is deliberately not the schema model of [`super::schema`]: that one keeps every JSON
//! attribute for a lossless round trip and refuses unions it cannot map to Arrow, whereas a container reader
//! must accept any writer schema Java Avro accepts (any union, recursive records) and needs only the shape.
//!
//! Invariants:
//! * Names follow the Avro namespace rules: a dotted name is full; otherwise the type's `namespace`, else the
//!   enclosing named type's namespace, qualifies it. References resolve the same way (falling back to the
//!   null namespace, as Java does), and every named type is defined once.
//! * Logical types, docs, aliases, `order` and custom attributes (`avro.java.string`) do not change the
//!   encoding and are ignored; field defaults are kept as JSON and checked when a default is used.
//! * A union does not directly contain a union (Avro's rule).

use std::collections::HashMap;

use serde_json::{Map, Value};

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
        let value: Value = serde_json::from_str(json)?;
        let mut parser = Parser::default();
        let root = parser.schema(&value, None, "$")?;
        Ok(SchemaGraph {
            nodes: parser.nodes,
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
        // Every index stored in a node was handed out by the parser for this vector.
        &self.nodes[id]
    }
}

#[derive(Default)]
struct Parser {
    nodes: Vec<Node>,
    names: HashMap<String, NodeId>,
}

fn invalid(path: &str, reason: impl Into<String>) -> AvroError {
    AvroError::Schema {
        path: path.to_string(),
        reason: reason.into(),
    }
}

fn primitive(name: &str) -> Option<Node> {
    Some(match name {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "bytes" => Node::Bytes,
        "string" => Node::String,
        _ => return None,
    })
}

/// The namespace part of a full name (`None` for the null namespace).
fn namespace_of(full: &str) -> Option<&str> {
    full.rsplit_once('.').map(|(ns, _)| ns)
}

fn valid_name_part(part: &str) -> bool {
    let mut chars = part.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

impl Parser {
    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn schema(&mut self, json: &Value, ns: Option<&str>, path: &str) -> Result<NodeId, AvroError> {
        match json {
            Value::String(name) => match primitive(name) {
                Some(node) => Ok(self.push(node)),
                None => self.reference(name, ns, path),
            },
            Value::Array(branches) => {
                let mut ids = Vec::with_capacity(branches.len());
                for (i, branch) in branches.iter().enumerate() {
                    let branch_path = format!("{path}[{i}]");
                    let id = self.schema(branch, ns, &branch_path)?;
                    if matches!(self.nodes[id], Node::Union(_)) {
                        return Err(invalid(&branch_path, "a union may not contain a union"));
                    }
                    ids.push(id);
                }
                Ok(self.push(Node::Union(ids)))
            }
            Value::Object(obj) => self.object(obj, ns, path),
            other => Err(invalid(path, format!("{other} is not a schema"))),
        }
    }

    fn reference(&mut self, name: &str, ns: Option<&str>, path: &str) -> Result<NodeId, AvroError> {
        let qualified = match ns {
            Some(ns) if !name.contains('.') => Some(format!("{ns}.{name}")),
            _ => None,
        };
        qualified
            .as_deref()
            .and_then(|q| self.names.get(q))
            .or_else(|| self.names.get(name))
            .copied()
            .ok_or_else(|| invalid(path, format!("{name:?} is not a defined type")))
    }

    fn object(
        &mut self,
        obj: &Map<String, Value>,
        ns: Option<&str>,
        path: &str,
    ) -> Result<NodeId, AvroError> {
        let type_name = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            // `{"type": {...}}` or `{"type": [...]}`: the wrapped schema.
            Some(nested @ (Value::Object(_) | Value::Array(_))) => {
                return self.schema(nested, ns, &format!("{path}.type"))
            }
            Some(other) => return Err(invalid(path, format!("\"type\" is {other}"))),
            None => return Err(invalid(path, "missing \"type\"")),
        };
        if let Some(node) = primitive(type_name) {
            // A logical type annotates its underlying type; the encoding is the underlying one.
            return Ok(self.push(node));
        }
        match type_name {
            "array" => {
                let items = obj
                    .get("items")
                    .ok_or_else(|| invalid(path, "array without \"items\""))?;
                let items = self.schema(items, ns, &format!("{path}.items"))?;
                Ok(self.push(Node::Array(items)))
            }
            "map" => {
                let values = obj
                    .get("values")
                    .ok_or_else(|| invalid(path, "map without \"values\""))?;
                let values = self.schema(values, ns, &format!("{path}.values"))?;
                Ok(self.push(Node::Map(values)))
            }
            "record" | "error" => self.record(obj, ns, path),
            "enum" => {
                let name = self.define_name(obj, ns, path)?;
                let symbols = match obj.get("symbols") {
                    Some(Value::Array(symbols)) => symbols
                        .iter()
                        .map(|s| match s {
                            Value::String(s) if valid_name_part(s) => Ok(s.clone()),
                            other => Err(invalid(path, format!("enum symbol {other} is invalid"))),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => return Err(invalid(path, "enum without a \"symbols\" array")),
                };
                let id = self.push(Node::Enum {
                    name: name.clone(),
                    symbols,
                });
                self.names.insert(name, id);
                Ok(id)
            }
            "fixed" => {
                let name = self.define_name(obj, ns, path)?;
                let size = obj
                    .get("size")
                    .and_then(Value::as_u64)
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| invalid(path, "fixed without a non-negative \"size\""))?;
                let id = self.push(Node::Fixed {
                    name: name.clone(),
                    size,
                });
                self.names.insert(name, id);
                Ok(id)
            }
            // `{"type": "SomeRecord"}`: a reference in object form.
            other => self.reference(other, ns, path),
        }
    }

    /// The full name of the named type `obj` defines; errors if invalid or already defined.
    fn define_name(
        &self,
        obj: &Map<String, Value>,
        ns: Option<&str>,
        path: &str,
    ) -> Result<String, AvroError> {
        let name = match obj.get("name") {
            Some(Value::String(name)) => name.as_str(),
            _ => return Err(invalid(path, "named type without a \"name\" string")),
        };
        let explicit_ns = match obj.get("namespace") {
            Some(Value::String(ns)) => Some(ns.as_str()),
            Some(Value::Null) | None => None,
            Some(other) => return Err(invalid(path, format!("\"namespace\" is {other}"))),
        };
        let full = if name.contains('.') {
            name.to_string()
        } else {
            match explicit_ns.or(ns) {
                Some(ns) if !ns.is_empty() => format!("{ns}.{name}"),
                _ => name.to_string(),
            }
        };
        if !full.split('.').all(valid_name_part) {
            return Err(invalid(path, format!("{full:?} is not a valid Avro name")));
        }
        if self.names.contains_key(&full) || primitive(&full).is_some() {
            return Err(invalid(path, format!("type {full:?} is defined twice")));
        }
        Ok(full)
    }

    fn record(
        &mut self,
        obj: &Map<String, Value>,
        ns: Option<&str>,
        path: &str,
    ) -> Result<NodeId, AvroError> {
        let name = self.define_name(obj, ns, path)?;
        // Registered before the fields are parsed, so that a field may refer to the record itself.
        let id = self.push(Node::Null);
        self.names.insert(name.clone(), id);
        let child_ns = namespace_of(&name).map(str::to_string);
        let Some(Value::Array(json_fields)) = obj.get("fields") else {
            return Err(invalid(path, "record without a \"fields\" array"));
        };
        let mut fields: Vec<Field> = Vec::with_capacity(json_fields.len());
        for (i, json_field) in json_fields.iter().enumerate() {
            let Value::Object(field) = json_field else {
                return Err(invalid(
                    &format!("{path}.fields[{i}]"),
                    "field is not an object",
                ));
            };
            let Some(Value::String(field_name)) = field.get("name") else {
                return Err(invalid(
                    &format!("{path}.fields[{i}]"),
                    "field without a name",
                ));
            };
            let field_path = format!("{path}.fields[{field_name}]");
            if !valid_name_part(field_name) {
                return Err(invalid(&field_path, "invalid field name"));
            }
            if fields.iter().any(|f| &f.name == field_name) {
                return Err(invalid(&field_path, "field defined twice"));
            }
            let field_type = field
                .get("type")
                .ok_or_else(|| invalid(&field_path, "field without a \"type\""))?;
            let schema = self.schema(
                field_type,
                child_ns.as_deref(),
                &format!("{field_path}.type"),
            )?;
            fields.push(Field {
                name: field_name.clone(),
                schema,
                default: field.get("default").cloned(),
            });
        }
        self.nodes[id] = Node::Record { name, fields };
        Ok(id)
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
