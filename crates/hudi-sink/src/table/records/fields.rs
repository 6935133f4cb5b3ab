//! Typed reads of a decoded record by field name, for the Hudi records: Avro's resolution by name, with a
//! field the writer did not have, or stored as null, read as absent (the caller applies Hudi's default).
//! Errors name the field path (`HoodieCleanerPlan.earliestInstantToRetain.timestamp`).

use std::collections::BTreeMap;

use crate::avro::AvroError;
use crate::avro::AvroValue;

/// A record of a decoded value, with its path for errors.
pub(crate) struct Fields<'a> {
    fields: &'a [(String, AvroValue)],
    path: String,
}

fn wrong(path: String, expected: &str, found: &AvroValue) -> AvroError {
    AvroError::Mismatch {
        path,
        expected: expected.to_string(),
        found: found.unwrap_union().kind().to_string(),
    }
}

/// The non-null value, looking through unions; `None` for null.
fn present(value: &AvroValue) -> Option<&AvroValue> {
    let value = value.unwrap_union();
    (!matches!(value, AvroValue::Null)).then_some(value)
}

impl<'a> Fields<'a> {
    /// The record `value` (through unions) at `path`.
    pub fn of(value: &'a AvroValue, path: impl Into<String>) -> Result<Self, AvroError> {
        let path = path.into();
        match value.as_record() {
            Some(fields) => Ok(Fields { fields, path }),
            None => Err(wrong(path, "record", value)),
        }
    }

    fn path_of(&self, name: &str) -> String {
        format!("{}.{name}", self.path)
    }

    /// The non-null value of field `name`; `None` if the writer had no such field or stored null.
    pub fn get(&self, name: &str) -> Option<&'a AvroValue> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .and_then(|(_, value)| present(value))
    }

    fn typed<T>(
        &self,
        name: &str,
        expected: &str,
        read: impl Fn(&'a AvroValue) -> Option<T>,
    ) -> Result<Option<T>, AvroError> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => read(value)
                .map(Some)
                .ok_or_else(|| wrong(self.path_of(name), expected, value)),
        }
    }

    /// A string field.
    pub fn string(&self, name: &str) -> Result<Option<String>, AvroError> {
        self.typed(name, "string", |v| v.as_str().map(str::to_string))
    }

    /// A string field Hudi requires (no default in any schema revision).
    pub fn required_string(&self, name: &str) -> Result<String, AvroError> {
        self.required(name, self.string(name)?)
    }

    fn required<T>(&self, name: &str, value: Option<T>) -> Result<T, AvroError> {
        value.ok_or_else(|| AvroError::MissingField {
            path: self.path_of(name),
        })
    }

    /// An int field.
    pub fn int(&self, name: &str) -> Result<Option<i32>, AvroError> {
        self.typed(name, "int", AvroValue::as_int)
    }

    /// An int field Hudi requires.
    pub fn required_int(&self, name: &str) -> Result<i32, AvroError> {
        self.required(name, self.int(name)?)
    }

    /// A long field Hudi requires (an int writer value is promoted).
    pub fn required_long(&self, name: &str) -> Result<i64, AvroError> {
        self.required(name, self.typed(name, "long", AvroValue::as_long)?)
    }

    /// A boolean field.
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, AvroError> {
        self.typed(name, "boolean", AvroValue::as_bool)
    }

    /// A nested record field.
    pub fn record(&self, name: &str) -> Result<Option<Fields<'a>>, AvroError> {
        self.get(name)
            .map(|value| Fields::of(value, self.path_of(name)))
            .transpose()
    }

    /// An array field, each non-null item read by `read` with its path; absent or null reads as empty.
    pub fn array<T>(
        &self,
        name: &str,
        read: impl Fn(&'a AvroValue, String) -> Result<T, AvroError>,
    ) -> Result<Vec<T>, AvroError> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(value) => read_array(value, self.path_of(name), read),
        }
    }

    /// A map field, each non-null value read by `read` with its path; absent or null reads as empty.
    pub fn map<T>(
        &self,
        name: &str,
        read: impl Fn(&'a AvroValue, String) -> Result<T, AvroError>,
    ) -> Result<BTreeMap<String, T>, AvroError> {
        let Some(value) = self.get(name) else {
            return Ok(BTreeMap::new());
        };
        let entries = value
            .as_map()
            .ok_or_else(|| wrong(self.path_of(name), "map", value))?;
        entries
            .iter()
            .filter_map(|(k, v)| present(v).map(|v| (k, v)))
            .map(|(k, v)| {
                Ok((
                    k.clone(),
                    read(v, format!("{}[{k:?}]", self.path_of(name)))?,
                ))
            })
            .collect()
    }

    /// An `array<string>` field (absent or null: empty).
    pub fn strings(&self, name: &str) -> Result<Vec<String>, AvroError> {
        self.array(name, read_string)
    }

    /// A `map<string>` field (absent or null: empty).
    pub fn string_map(&self, name: &str) -> Result<BTreeMap<String, String>, AvroError> {
        self.map(name, read_string)
    }
}

/// The non-null items of an array value, each read by `read` with its path.
pub(crate) fn read_array<'a, T>(
    value: &'a AvroValue,
    path: String,
    read: impl Fn(&'a AvroValue, String) -> Result<T, AvroError>,
) -> Result<Vec<T>, AvroError> {
    let items = value
        .as_array()
        .ok_or_else(|| wrong(path.clone(), "array", value))?;
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| present(item).map(|item| (i, item)))
        .map(|(i, item)| read(item, format!("{path}[{i}]")))
        .collect()
}

/// An `array<string>` value.
pub(crate) fn read_strings(value: &AvroValue, path: String) -> Result<Vec<String>, AvroError> {
    read_array(value, path, read_string)
}

/// A string item or map value.
pub(crate) fn read_string(value: &AvroValue, path: String) -> Result<String, AvroError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| wrong(path, "string", value))
}

/// A double item or map value (int, long and float promoted).
pub(crate) fn read_double(value: &AvroValue, path: String) -> Result<f64, AvroError> {
    value
        .as_double()
        .ok_or_else(|| wrong(path, "double", value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_null_read_as_none_wrong_types_name_the_path() {
        let value = AvroValue::record([
            ("s", AvroValue::Union(1, Box::new(AvroValue::string("x")))),
            ("n", AvroValue::Union(0, Box::new(AvroValue::Null))),
            ("i", AvroValue::Int(3)),
            (
                "m",
                AvroValue::Map(vec![
                    ("a".into(), AvroValue::string("1")),
                    ("z".into(), AvroValue::Null),
                ]),
            ),
            (
                "l",
                AvroValue::Array(vec![AvroValue::string("p"), AvroValue::Int(1)]),
            ),
        ]);
        let f = Fields::of(&value, "R").expect("record");
        assert_eq!(f.string("s").expect("ok"), Some("x".into()));
        assert_eq!(f.string("n").expect("ok"), None);
        assert_eq!(f.string("gone").expect("ok"), None);
        assert_eq!(f.required_long("i").expect("ok"), 3);
        assert!(
            matches!(f.required_int("gone"), Err(AvroError::MissingField { path }) if path == "R.gone")
        );
        assert_eq!(f.string_map("m").expect("ok").len(), 1);
        assert!(f.strings("n").expect("ok").is_empty());
        assert!(matches!(f.int("s"), Err(AvroError::Mismatch { path, .. }) if path == "R.s"));
        assert!(
            matches!(f.strings("l"), Err(AvroError::Mismatch { path, .. }) if path == "R.l[1]")
        );
        assert!(
            matches!(f.required_string("n"), Err(AvroError::MissingField { path }) if path == "R.n")
        );
        assert!(matches!(f.record("i"), Err(AvroError::Mismatch { path, .. }) if path == "R.i"));
        assert!(Fields::of(&AvroValue::Null, "R").is_err());
    }
}
