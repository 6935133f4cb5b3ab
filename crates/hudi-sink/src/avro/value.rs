//! The generic Avro datum: what [`decode_container`](super::decode_container) returns and
//! [`encode_container`](super::encode_container) takes.
//!
//! A decoded value mirrors the writer schema exactly: every union is a [`AvroValue::Union`] with the branch
//! the writer chose, and a record's fields are in the writer's order. The getters look through unions, so
//! that a reader can ask for `value.field("version")?.as_int()` whatever the union layout is.

use std::collections::BTreeMap;

/// One Avro datum.
#[derive(Debug, Clone, PartialEq)]
pub enum AvroValue {
    /// `null`.
    Null,
    /// `boolean`.
    Boolean(bool),
    /// `int`.
    Int(i32),
    /// `long`.
    Long(i64),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `string`.
    String(String),
    /// `bytes`, or a `fixed` of the schema's size.
    Bytes(Vec<u8>),
    /// `array`.
    Array(Vec<AvroValue>),
    /// `map`: keys in the order written (decoding keeps the file's order).
    Map(Vec<(String, AvroValue)>),
    /// `record`: fields by name (decoding gives the writer schema's order).
    Record(Vec<(String, AvroValue)>),
    /// A union: the branch index in the schema and the value. When encoding, a value of a union field may
    /// also be given bare; the encoder then picks the first branch that fits it.
    Union(u32, Box<AvroValue>),
    /// `enum`: the symbol's index in the schema and the symbol.
    Enum(u32, String),
}

impl AvroValue {
    /// The value inside any union layers (a non-union value is returned as is).
    pub fn unwrap_union(&self) -> &AvroValue {
        let mut value = self;
        while let AvroValue::Union(_, inner) = value {
            value = inner;
        }
        value
    }

    /// Whether the value is null, looking through unions (an optional field holding nothing).
    pub fn is_null(&self) -> bool {
        matches!(self.unwrap_union(), AvroValue::Null)
    }

    /// The record field called `name`, looking through a union to the record. `None` when this is not a
    /// record or has no such field (a writer schema older than the field).
    pub fn field(&self, name: &str) -> Option<&AvroValue> {
        self.as_record()?
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value)
    }

    /// The record's fields, looking through unions.
    pub fn as_record(&self) -> Option<&[(String, AvroValue)]> {
        match self.unwrap_union() {
            AvroValue::Record(fields) => Some(fields),
            _ => None,
        }
    }

    /// The string, looking through unions.
    pub fn as_str(&self) -> Option<&str> {
        match self.unwrap_union() {
            AvroValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, looking through unions.
    pub fn as_bool(&self) -> Option<bool> {
        match self.unwrap_union() {
            AvroValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// The int, looking through unions.
    pub fn as_int(&self) -> Option<i32> {
        match self.unwrap_union() {
            AvroValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The long, looking through unions; an int is promoted (Avro's int → long resolution).
    pub fn as_long(&self) -> Option<i64> {
        match self.unwrap_union() {
            AvroValue::Long(l) => Some(*l),
            AvroValue::Int(i) => Some(i64::from(*i)),
            _ => None,
        }
    }

    /// The double, looking through unions; int, long and float are promoted (Avro's resolution rules).
    pub fn as_double(&self) -> Option<f64> {
        match self.unwrap_union() {
            AvroValue::Double(d) => Some(*d),
            AvroValue::Float(f) => Some(f64::from(*f)),
            AvroValue::Int(i) => Some(f64::from(*i)),
            // Avro promotes long to double with the same rounding.
            #[allow(clippy::cast_precision_loss)]
            AvroValue::Long(l) => Some(*l as f64),
            _ => None,
        }
    }

    /// The bytes (of a `bytes` or `fixed`), looking through unions.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self.unwrap_union() {
            AvroValue::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The array items, looking through unions.
    pub fn as_array(&self) -> Option<&[AvroValue]> {
        match self.unwrap_union() {
            AvroValue::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The map entries, looking through unions.
    pub fn as_map(&self) -> Option<&[(String, AvroValue)]> {
        match self.unwrap_union() {
            AvroValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The enum symbol, looking through unions.
    pub fn as_enum_symbol(&self) -> Option<&str> {
        match self.unwrap_union() {
            AvroValue::Enum(_, symbol) => Some(symbol),
            _ => None,
        }
    }

    /// The kind of value, for error messages (`"string"`, `"union"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            AvroValue::Null => "null",
            AvroValue::Boolean(_) => "boolean",
            AvroValue::Int(_) => "int",
            AvroValue::Long(_) => "long",
            AvroValue::Float(_) => "float",
            AvroValue::Double(_) => "double",
            AvroValue::String(_) => "string",
            AvroValue::Bytes(_) => "bytes",
            AvroValue::Array(_) => "array",
            AvroValue::Map(_) => "map",
            AvroValue::Record(_) => "record",
            AvroValue::Union(..) => "union",
            AvroValue::Enum(..) => "enum",
        }
    }

    /// A record from `(field, value)` pairs (a shorthand for building values to encode).
    pub fn record<I, K>(fields: I) -> AvroValue
    where
        I: IntoIterator<Item = (K, AvroValue)>,
        K: Into<String>,
    {
        AvroValue::Record(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A string.
    pub fn string(s: impl Into<String>) -> AvroValue {
        AvroValue::String(s.into())
    }

    /// A `map<string>` from a sorted map (keys in sorted order, so the bytes are deterministic).
    pub fn string_map(map: &BTreeMap<String, String>) -> AvroValue {
        AvroValue::Map(
            map.iter()
                .map(|(k, v)| (k.clone(), AvroValue::String(v.clone())))
                .collect(),
        )
    }

    /// An `array<string>`.
    pub fn string_array<S: AsRef<str>>(items: &[S]) -> AvroValue {
        AvroValue::Array(
            items
                .iter()
                .map(|s| AvroValue::String(s.as_ref().to_string()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getters_look_through_unions() {
        let rec = AvroValue::Union(
            1,
            Box::new(AvroValue::record([
                ("a", AvroValue::Union(1, Box::new(AvroValue::Int(7)))),
                ("b", AvroValue::Union(0, Box::new(AvroValue::Null))),
                ("c", AvroValue::string("x")),
            ])),
        );
        assert_eq!(rec.field("a").and_then(AvroValue::as_int), Some(7));
        assert_eq!(rec.field("a").and_then(AvroValue::as_long), Some(7));
        assert_eq!(rec.field("a").and_then(AvroValue::as_double), Some(7.0));
        assert!(rec.field("b").is_some_and(AvroValue::is_null));
        assert_eq!(rec.field("c").and_then(AvroValue::as_str), Some("x"));
        assert_eq!(rec.field("c").and_then(AvroValue::as_int), None);
        assert!(rec.field("d").is_none());
        assert!(AvroValue::Int(1).field("a").is_none());
        assert_eq!(rec.kind(), "union");
        assert_eq!(rec.unwrap_union().kind(), "record");
    }

    #[test]
    fn builders() {
        let mut map = BTreeMap::new();
        map.insert("z".to_string(), "1".to_string());
        map.insert("a".to_string(), "2".to_string());
        assert_eq!(
            AvroValue::string_map(&map),
            AvroValue::Map(vec![
                ("a".into(), AvroValue::string("2")),
                ("z".into(), AvroValue::string("1")),
            ])
        );
        assert_eq!(
            AvroValue::string_array(&["p", "q"])
                .as_array()
                .map(<[_]>::len),
            Some(2)
        );
    }
}
