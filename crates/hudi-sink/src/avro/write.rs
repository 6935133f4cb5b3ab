//! Writing: a datum checked against its schema while it is encoded, and the one-block container around it.
//!
//! Invariants:
//! * Nothing is returned unless the whole value fits the schema; the error names the field path.
//! * A record value must give only fields the schema has; a field it omits takes the schema default (and is
//!   an error without one). A union value is either `Union(branch, value)` or a bare value, for which the
//!   first branch that fits is chosen (as Java's `GenericData.resolveUnion` does).
//! * The bytes are deterministic apart from the random sync marker: map entries keep the value's order.

use serde_json::Value;

use super::graph::{Node, NodeId, SchemaGraph};
use super::value::AvroValue;
use super::AvroError;
pub(crate) use crate::avro::binary::{write_bytes, write_long};
use crate::avro::binary::{write_double, write_float, write_len};

/// The four magic bytes every Avro container file starts with.
pub(crate) const MAGIC: &[u8; 4] = b"Obj\x01";

/// Deepest nesting of values accepted (timeline records nest five levels).
pub(crate) const MAX_DEPTH: usize = 64;

/// Encodes `value` as the single record of a new Avro container file written with `schema_json`.
///
/// The header carries `avro.schema` only (Java omits `avro.codec` for codec null); the schema text is
/// stored in compact JSON with its members in the order given. The result is the complete file: write it
/// in one put, so that a reader never sees an empty or partial timeline file.
pub fn encode_container(schema_json: &str, value: &AvroValue) -> Result<Vec<u8>, AvroError> {
    let schema = SchemaGraph::parse(schema_json)?;
    let compact = serde_json::from_str::<Value>(schema_json)?.to_string();
    let datum = encode_datum(&schema, value)?;
    Ok(container(
        &compact,
        &datum,
        *uuid::Uuid::new_v4().as_bytes(),
    ))
}

/// The datum bytes of `value` under `schema` (no container).
pub(crate) fn encode_datum(schema: &SchemaGraph, value: &AvroValue) -> Result<Vec<u8>, AvroError> {
    let mut out = Vec::new();
    let mut path = String::from("$");
    Encoder { schema }.value(schema.root(), value, &mut out, &mut path, 0)?;
    Ok(out)
}

/// A container file: header with `schema_json`, one block holding the one record `datum`, `sync` marker.
pub(crate) fn container(schema_json: &str, datum: &[u8], sync: [u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(schema_json.len() + datum.len() + 64);
    out.extend_from_slice(MAGIC);
    write_long(&mut out, 1);
    write_bytes(&mut out, b"avro.schema");
    write_bytes(&mut out, schema_json.as_bytes());
    write_long(&mut out, 0);
    out.extend_from_slice(&sync);
    write_long(&mut out, 1);
    write_len(&mut out, datum.len());
    out.extend_from_slice(datum);
    out.extend_from_slice(&sync);
    out
}

fn mismatch(path: &str, expected: impl Into<String>, found: &AvroValue) -> AvroError {
    AvroError::Mismatch {
        path: path.to_string(),
        expected: expected.into(),
        found: found.kind().to_string(),
    }
}

fn bad_default(path: &str, reason: impl Into<String>) -> AvroError {
    AvroError::BadDefault {
        path: path.to_string(),
        reason: reason.into(),
    }
}

struct Encoder<'a> {
    schema: &'a SchemaGraph,
}

impl Encoder<'_> {
    fn value(
        &self,
        id: NodeId,
        value: &AvroValue,
        out: &mut Vec<u8>,
        path: &mut String,
        depth: usize,
    ) -> Result<(), AvroError> {
        if depth > MAX_DEPTH {
            return Err(AvroError::TooDeep {
                path: path.clone(),
                limit: MAX_DEPTH,
            });
        }
        let node = self.schema.node(id);
        if let Node::Union(branches) = node {
            return self.union(branches, value, out, path, depth);
        }
        match (node, value) {
            (Node::Null, AvroValue::Null) => {}
            (Node::Boolean, AvroValue::Boolean(b)) => out.push(u8::from(*b)),
            (Node::Int, AvroValue::Int(i)) => write_long(out, i64::from(*i)),
            (Node::Long, AvroValue::Long(l)) => write_long(out, *l),
            (Node::Long, AvroValue::Int(i)) => write_long(out, i64::from(*i)),
            (Node::Float, AvroValue::Float(f)) => write_float(out, *f),
            (Node::Double, AvroValue::Double(d)) => write_double(out, *d),
            (Node::Double, AvroValue::Float(f)) => write_double(out, f64::from(*f)),
            (Node::Bytes, AvroValue::Bytes(b)) => write_bytes(out, b),
            (Node::String, AvroValue::String(s)) => write_bytes(out, s.as_bytes()),
            (Node::Fixed { size, .. }, AvroValue::Bytes(b)) => {
                if b.len() != *size {
                    return Err(AvroError::Mismatch {
                        path: path.clone(),
                        expected: format!("fixed of {size} bytes"),
                        found: format!("{} bytes", b.len()),
                    });
                }
                out.extend_from_slice(b);
            }
            (Node::Enum { symbols, name }, AvroValue::Enum(index, symbol)) => {
                let at = symbols.iter().position(|s| s == symbol);
                match at {
                    Some(at) if at == *index as usize => write_len(out, at),
                    _ => {
                        return Err(AvroError::Mismatch {
                            path: path.clone(),
                            expected: format!("a symbol of enum {name} {symbols:?}"),
                            found: format!("symbol {symbol:?} at index {index}"),
                        })
                    }
                }
            }
            (Node::Array(items), AvroValue::Array(values)) => {
                if !values.is_empty() {
                    write_len(out, values.len());
                    let base = path.len();
                    for (i, item) in values.iter().enumerate() {
                        path.push_str(&format!("[{i}]"));
                        self.value(*items, item, out, path, depth + 1)?;
                        path.truncate(base);
                    }
                }
                write_long(out, 0);
            }
            (Node::Map(values_id), AvroValue::Map(entries)) => {
                if !entries.is_empty() {
                    write_len(out, entries.len());
                    let base = path.len();
                    for (i, (key, entry)) in entries.iter().enumerate() {
                        if entries[..i].iter().any(|(k, _)| k == key) {
                            return Err(AvroError::Duplicate {
                                path: path.clone(),
                                key: key.clone(),
                            });
                        }
                        write_bytes(out, key.as_bytes());
                        path.push_str(&format!("[{key:?}]"));
                        self.value(*values_id, entry, out, path, depth + 1)?;
                        path.truncate(base);
                    }
                }
                write_long(out, 0);
            }
            (Node::Record { fields, .. }, AvroValue::Record(given)) => {
                for (i, (name, _)) in given.iter().enumerate() {
                    if !fields.iter().any(|f| &f.name == name) {
                        return Err(AvroError::UnknownField {
                            path: path.clone(),
                            field: name.clone(),
                        });
                    }
                    if given[..i].iter().any(|(n, _)| n == name) {
                        return Err(AvroError::Duplicate {
                            path: path.clone(),
                            key: name.clone(),
                        });
                    }
                }
                let base = path.len();
                for field in fields {
                    path.push('.');
                    path.push_str(&field.name);
                    match given.iter().find(|(n, _)| n == &field.name) {
                        Some((_, v)) => self.value(field.schema, v, out, path, depth + 1)?,
                        None => {
                            let default = field
                                .default
                                .as_ref()
                                .ok_or_else(|| AvroError::MissingField { path: path.clone() })?;
                            let v = self.default_value(field.schema, default, path, depth + 1)?;
                            self.value(field.schema, &v, out, path, depth + 1)?;
                        }
                    }
                    path.truncate(base);
                }
            }
            _ => return Err(mismatch(path, describe(node), value)),
        }
        Ok(())
    }

    fn union(
        &self,
        branches: &[NodeId],
        value: &AvroValue,
        out: &mut Vec<u8>,
        path: &mut String,
        depth: usize,
    ) -> Result<(), AvroError> {
        if let AvroValue::Union(index, inner) = value {
            let branch = branches
                .get(*index as usize)
                .ok_or_else(|| AvroError::Mismatch {
                    path: path.clone(),
                    expected: format!("a union branch below {}", branches.len()),
                    found: format!("branch {index}"),
                })?;
            write_long(out, i64::from(*index));
            return self.value(*branch, inner, out, path, depth + 1);
        }
        // Exact kinds first, then Avro's promotions (int → long, float → double).
        let mut candidates: Vec<usize> = (0..branches.len())
            .filter(|&i| self.fits(branches[i], value, true))
            .collect();
        if candidates.is_empty() {
            candidates = (0..branches.len())
                .filter(|&i| self.fits(branches[i], value, false))
                .collect();
        }
        let mut first_error = None;
        let base = path.len();
        for i in candidates {
            let mut scratch = Vec::new();
            write_len(&mut scratch, i);
            match self.value(branches[i], value, &mut scratch, path, depth + 1) {
                Ok(()) => {
                    out.extend_from_slice(&scratch);
                    return Ok(());
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                    path.truncate(base);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| {
            let kinds: Vec<&str> = branches
                .iter()
                .map(|b| describe(self.schema.node(*b)))
                .collect();
            mismatch(path, format!("one of {kinds:?}"), value)
        }))
    }

    /// Whether `value` is of the kind of `id` (shallow; records are checked fully by encoding).
    fn fits(&self, id: NodeId, value: &AvroValue, exact: bool) -> bool {
        match (self.schema.node(id), value) {
            (Node::Null, AvroValue::Null)
            | (Node::Boolean, AvroValue::Boolean(_))
            | (Node::Int, AvroValue::Int(_))
            | (Node::Long, AvroValue::Long(_))
            | (Node::Float, AvroValue::Float(_))
            | (Node::Double, AvroValue::Double(_))
            | (Node::Bytes, AvroValue::Bytes(_))
            | (Node::String, AvroValue::String(_))
            | (Node::Array(_), AvroValue::Array(_))
            | (Node::Map(_), AvroValue::Map(_))
            | (Node::Record { .. }, AvroValue::Record(_)) => true,
            (Node::Fixed { size, .. }, AvroValue::Bytes(b)) => b.len() == *size,
            (Node::Enum { symbols, .. }, AvroValue::Enum(_, s)) => symbols.contains(s),
            (Node::Long, AvroValue::Int(_)) | (Node::Double, AvroValue::Float(_)) => !exact,
            _ => false,
        }
    }

    /// The value a JSON field default stands for (a union default is of the union's first branch).
    fn default_value(
        &self,
        id: NodeId,
        json: &Value,
        path: &str,
        depth: usize,
    ) -> Result<AvroValue, AvroError> {
        if depth > MAX_DEPTH {
            return Err(AvroError::TooDeep {
                path: path.to_string(),
                limit: MAX_DEPTH,
            });
        }
        let node = self.schema.node(id);
        let wrong = || bad_default(path, format!("{json} is not a {}", describe(node)));
        Ok(match node {
            Node::Null if json.is_null() => AvroValue::Null,
            Node::Boolean => AvroValue::Boolean(json.as_bool().ok_or_else(wrong)?),
            Node::Int => AvroValue::Int(
                json.as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(wrong)?,
            ),
            Node::Long => AvroValue::Long(json.as_i64().ok_or_else(wrong)?),
            Node::Float => AvroValue::Float(json.as_f64().ok_or_else(wrong)? as f32),
            Node::Double => AvroValue::Double(json.as_f64().ok_or_else(wrong)?),
            Node::String => AvroValue::String(json.as_str().ok_or_else(wrong)?.to_string()),
            // Avro writes bytes defaults as a string of code points 0-255, one per byte.
            Node::Bytes | Node::Fixed { .. } => {
                let s = json.as_str().ok_or_else(wrong)?;
                AvroValue::Bytes(
                    s.chars()
                        .map(|c| u8::try_from(u32::from(c)).map_err(|_| wrong()))
                        .collect::<Result<_, _>>()?,
                )
            }
            Node::Enum { symbols, .. } => {
                let s = json.as_str().ok_or_else(wrong)?;
                let at = symbols.iter().position(|x| x == s).ok_or_else(wrong)?;
                AvroValue::Enum(u32::try_from(at).map_err(|_| wrong())?, s.to_string())
            }
            Node::Array(items) => AvroValue::Array(
                json.as_array()
                    .ok_or_else(wrong)?
                    .iter()
                    .map(|item| self.default_value(*items, item, path, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Map(values) => AvroValue::Map(
                json.as_object()
                    .ok_or_else(wrong)?
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), self.default_value(*values, v, path, depth + 1)?)))
                    .collect::<Result<_, AvroError>>()?,
            ),
            Node::Record { fields, .. } => {
                let obj = json.as_object().ok_or_else(wrong)?;
                let mut out = Vec::with_capacity(fields.len());
                for field in fields {
                    let json =
                        obj.get(&field.name)
                            .or(field.default.as_ref())
                            .ok_or_else(|| {
                                bad_default(path, format!("no value for field {}", field.name))
                            })?;
                    out.push((
                        field.name.clone(),
                        self.default_value(field.schema, json, path, depth + 1)?,
                    ));
                }
                AvroValue::Record(out)
            }
            Node::Union(branches) => {
                let first = *branches
                    .first()
                    .ok_or_else(|| bad_default(path, "an empty union has no default"))?;
                AvroValue::Union(
                    0,
                    Box::new(self.default_value(first, json, path, depth + 1)?),
                )
            }
            Node::Null => return Err(wrong()),
        })
    }
}

/// The schema kind, for error messages.
fn describe(node: &Node) -> &'static str {
    match node {
        Node::Null => "null",
        Node::Boolean => "boolean",
        Node::Int => "int",
        Node::Long => "long",
        Node::Float => "float",
        Node::Double => "double",
        Node::Bytes => "bytes",
        Node::String => "string",
        Node::Array(_) => "array",
        Node::Map(_) => "map",
        Node::Union(_) => "union",
        Node::Record { .. } => "record",
        Node::Enum { .. } => "enum",
        Node::Fixed { .. } => "fixed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"type":"record","name":"R","namespace":"t","fields":[
        {"name":"s","type":["null","string"],"default":null},
        {"name":"v","type":["int","null"],"default":1},
        {"name":"l","type":"long","default":5},
        {"name":"m","type":["null",{"type":"map","values":"double"}],"default":null},
        {"name":"a","type":{"type":"array","items":"string"},"default":["x"]},
        {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]},"default":"B"},
        {"name":"f","type":{"type":"fixed","name":"F","size":2},"default":"\u00ff\u0001"},
        {"name":"b","type":"bytes","default":""}
    ]}"#;

    fn datum(value: &AvroValue) -> Result<Vec<u8>, AvroError> {
        encode_datum(&SchemaGraph::parse(SCHEMA).expect("schema"), value)
    }

    #[test]
    fn zigzag() {
        for (value, bytes) in [
            (0i64, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 0x01]),
            (
                i64::MAX,
                vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
            (
                i64::MIN,
                vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            write_long(&mut out, value);
            assert_eq!(out, bytes, "{value}");
        }
    }

    #[test]
    fn defaults_and_bare_union_values() {
        let bytes = datum(&AvroValue::record([("s", AvroValue::string("hi"))])).expect("encodes");
        assert_eq!(
            bytes,
            vec![
                2, 4, b'h', b'i', // s: branch 1, "hi"
                0, 2,  // v: branch 0, int 1
                10, // l: 5
                0,  // m: null branch
                2, 2, b'x', 0, // a: one block of one item, end
                2, // e: B
                0xff, 1, // f
                0, // b: empty
            ]
        );
        let explicit = datum(&AvroValue::record([
            ("s", AvroValue::Union(1, Box::new(AvroValue::string("hi")))),
            ("v", AvroValue::Union(0, Box::new(AvroValue::Int(1)))),
            ("l", AvroValue::Int(5)),
            ("m", AvroValue::Null),
            ("a", AvroValue::string_array(&["x"])),
            ("e", AvroValue::Enum(1, "B".into())),
            ("f", AvroValue::Bytes(vec![0xff, 1])),
            ("b", AvroValue::Bytes(vec![])),
        ]))
        .expect("encodes");
        assert_eq!(explicit, bytes);
    }

    #[test]
    fn mismatches_name_the_field_path() {
        let cases = [
            (AvroValue::record([("l", AvroValue::string("x"))]), "$.l"),
            (AvroValue::record([("s", AvroValue::Int(1))]), "$.s"),
            (
                AvroValue::record([(
                    "m",
                    AvroValue::Map(vec![("k".into(), AvroValue::string("x"))]),
                )]),
                "$.m[\"k\"]",
            ),
            (
                AvroValue::record([(
                    "a",
                    AvroValue::Array(vec![AvroValue::string("ok"), AvroValue::Null]),
                )]),
                "$.a[1]",
            ),
            (AvroValue::record([("f", AvroValue::Bytes(vec![1]))]), "$.f"),
            (
                AvroValue::record([("e", AvroValue::Enum(0, "B".into()))]),
                "$.e",
            ),
            (
                AvroValue::record([("v", AvroValue::Union(2, Box::new(AvroValue::Null)))]),
                "$.v",
            ),
            (AvroValue::string("not a record"), "$"),
        ];
        for (value, want) in cases {
            match datum(&value) {
                Err(AvroError::Mismatch { path, .. }) => assert_eq!(path, want, "{value:?}"),
                other => panic!("{value:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_duplicate_and_missing_fields() {
        assert!(matches!(
            datum(&AvroValue::record([("nope", AvroValue::Null)])),
            Err(AvroError::UnknownField { field, .. }) if field == "nope"
        ));
        assert!(matches!(
            datum(&AvroValue::record([("l", AvroValue::Long(1)), ("l", AvroValue::Long(2))])),
            Err(AvroError::Duplicate { key, .. }) if key == "l"
        ));
        assert!(matches!(
            datum(&AvroValue::record([(
                "m",
                AvroValue::Map(vec![
                    ("k".into(), AvroValue::Double(1.0)),
                    ("k".into(), AvroValue::Double(2.0))
                ])
            )])),
            Err(AvroError::Duplicate { key, .. }) if key == "k"
        ));
        let strict = SchemaGraph::parse(
            r#"{"type":"record","name":"S","fields":[{"name":"inner","type":{"type":"record","name":"I",
                "fields":[{"name":"x","type":"string"}]}}]}"#,
        )
        .expect("schema");
        let missing = encode_datum(
            &strict,
            &AvroValue::record([("inner", AvroValue::record(Vec::<(String, _)>::new()))]),
        );
        assert!(matches!(missing, Err(AvroError::MissingField { path }) if path == "$.inner.x"));
    }

    #[test]
    fn bad_default_is_reported_when_used() {
        let schema = SchemaGraph::parse(
            r#"{"type":"record","name":"S","fields":[{"name":"x","type":"int","default":"one"}]}"#,
        )
        .expect("schema");
        assert!(matches!(
            encode_datum(&schema, &AvroValue::record(Vec::<(String, _)>::new())),
            Err(AvroError::BadDefault { path, .. }) if path == "$.x"
        ));
        assert!(encode_datum(&schema, &AvroValue::record([("x", AvroValue::Int(3))])).is_ok());
    }

    #[test]
    fn container_layout() {
        let file = container("\"int\"", &[4], [7; 16]);
        let mut want = b"Obj\x01".to_vec();
        want.extend_from_slice(&[2, 22]);
        want.extend_from_slice(b"avro.schema");
        want.extend_from_slice(&[10]);
        want.extend_from_slice(b"\"int\"");
        want.push(0);
        want.extend_from_slice(&[7; 16]);
        want.extend_from_slice(&[2, 2, 4]);
        want.extend_from_slice(&[7; 16]);
        assert_eq!(file, want);
    }

    #[test]
    fn deep_values_are_refused() {
        let schema = SchemaGraph::parse(
            r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#,
        )
        .expect("schema");
        let mut value = AvroValue::record([("next", AvroValue::Null)]);
        for _ in 0..100 {
            value = AvroValue::record([("next", value)]);
        }
        assert!(matches!(
            encode_datum(&schema, &value),
            Err(AvroError::TooDeep { .. })
        ));
    }
}
