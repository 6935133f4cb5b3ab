//! Postgres TOAST placeholders: a value Debezium could not read never replaces a stored one.
//!
//! With `REPLICA IDENTITY DEFAULT`, an update that leaves a TOASTed column (a large text or bytes value)
//! unchanged does not carry it: Debezium writes the placeholder `__debezium_unavailable_value` (its
//! `unavailable.value.placeholder`) into `after` instead. Hudi's `PostgresDebeziumAvroPayload` puts the
//! stored value back when it merges an incoming record with storage. The writer does the same earlier and
//! everywhere, so that every reader sees the real value (docs/cdc.md, "TOAST"):
//!
//! ```text
//! fold by key ─ a placeholder cell takes the value of the version it supersedes in the batch
//! copy-on-write ─ a placeholder left after the fold takes the stored row's value
//! merge-on-read ─ a placeholder left after the fold takes the latest merged value of the file slice
//! ```
//!
//! Only top-level string and bytes columns are compared (the types Debezium puts the placeholder in). A
//! placeholder with nothing before it (a key the table has not stored, or a version after a delete) stays
//! as it arrived.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema};
use arrow_select::interleave::interleave;

use super::WriteError;

/// `hudi.sink.debezium.unavailable.value.placeholder`: Debezium's `unavailable.value.placeholder`, when
/// the connector sets another one (`hex:` followed by hexadecimal octets for a binary placeholder).
pub const PLACEHOLDER_KEY: &str = "hudi.sink.debezium.unavailable.value.placeholder";

/// Debezium's default placeholder.
pub const DEFAULT_PLACEHOLDER: &str = "__debezium_unavailable_value";

/// The placeholder in its text and bytes forms (Debezium writes the bytes of the text into bytes columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    text: Option<String>,
    bytes: Vec<u8>,
}

impl Unavailable {
    /// The placeholder a connector configured with `value` writes (`hex:` = octets).
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.strip_prefix("hex:") {
            Some(hex) => {
                let bytes = decode_hex(hex)
                    .ok_or_else(|| format!("{PLACEHOLDER_KEY}={value}: not hexadecimal octets"))?;
                Ok(Self {
                    text: String::from_utf8(bytes.clone()).ok(),
                    bytes,
                })
            }
            None if value.is_empty() => Err(format!("{PLACEHOLDER_KEY} is empty")),
            None => Ok(Self {
                text: Some(value.to_string()),
                bytes: value.as_bytes().to_vec(),
            }),
        }
    }

    /// The placeholder from the table's properties (Debezium's default when unset).
    pub fn from_properties(
        props: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, WriteError> {
        let value = props
            .get(PLACEHOLDER_KEY)
            .map(|v| v.trim())
            .unwrap_or(DEFAULT_PLACEHOLDER);
        Self::parse(value).map_err(|reason| WriteError::Config { reason })
    }

    /// Whether `array[row]` is the placeholder.
    pub fn is_placeholder(&self, array: &dyn Array, row: usize) -> bool {
        if array.is_null(row) {
            return false;
        }
        match array.data_type() {
            DataType::Utf8 => self
                .text
                .as_deref()
                .is_some_and(|t| array.as_string::<i32>().value(row) == t),
            DataType::LargeUtf8 => self
                .text
                .as_deref()
                .is_some_and(|t| array.as_string::<i64>().value(row) == t),
            DataType::Binary => array.as_binary::<i32>().value(row) == self.bytes.as_slice(),
            DataType::LargeBinary => array.as_binary::<i64>().value(row) == self.bytes.as_slice(),
            _ => false,
        }
    }
}

/// The columns of `schema` that can hold the placeholder.
pub fn placeholder_columns(schema: &Schema) -> Vec<usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            matches!(
                f.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            )
        })
        .map(|(i, _)| i)
        .collect()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 || hex.is_empty() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The placeholder check of one table: the placeholder and the data columns it can appear in.
#[derive(Debug, Clone)]
pub struct Toast {
    unavailable: Unavailable,
    columns: Vec<usize>,
}

impl Toast {
    /// The check for the data schema `schema`.
    pub fn new(unavailable: Unavailable, schema: &Schema) -> Self {
        Self {
            columns: placeholder_columns(schema),
            unavailable,
        }
    }

    /// The data columns compared (indices into the table's data schema).
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Whether data column `col` of `batch` holds the placeholder at `row`.
    pub fn is_placeholder(&self, batch: &RecordBatch, col: usize, row: usize) -> bool {
        self.unavailable
            .is_placeholder(batch.column(col).as_ref(), row)
    }

    /// Whether any compared column of `batch` holds the placeholder at `row`.
    pub fn has_placeholder(&self, batch: &RecordBatch, row: usize) -> bool {
        self.columns
            .iter()
            .any(|&c| self.is_placeholder(batch, c, row))
    }

    /// Back-fills within one batch: `predecessors` are `(row, earlier)` pairs, each a version and the one
    /// it superseded when the batch was folded by key. A placeholder cell of `row` takes the (already
    /// back-filled) value of `earlier`. Returns the batch unchanged when no cell changes.
    pub fn fill_from_predecessors(
        &self,
        batch: RecordBatch,
        predecessors: &[(usize, usize)],
    ) -> Result<RecordBatch, WriteError> {
        if predecessors.is_empty() || self.columns.is_empty() {
            return Ok(batch);
        }
        let earlier: HashMap<usize, usize> = predecessors.iter().copied().collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let mut changed = false;
        for &col in &self.columns {
            let array = batch.column(col);
            // Each row's source row: itself, or the first earlier version that is not a placeholder.
            let mut sources: Option<Vec<(usize, usize)>> = None;
            let mut rows: Vec<&usize> = earlier.keys().collect();
            rows.sort_unstable();
            for &row in rows {
                if !self.unavailable.is_placeholder(array.as_ref(), row) {
                    continue;
                }
                let mut source = row;
                // Folding links each version to an earlier row: the walk ends.
                while let Some(&prev) = earlier.get(&source) {
                    source = prev;
                    if !self.unavailable.is_placeholder(array.as_ref(), source) {
                        break;
                    }
                }
                if source != row {
                    let s = sources
                        .get_or_insert_with(|| (0..batch.num_rows()).map(|r| (0, r)).collect());
                    s[row] = (0, source);
                }
            }
            if let Some(indices) = sources {
                columns[col] = interleave(&[array.as_ref()], &indices).map_err(|source| {
                    WriteError::Arrow {
                        context: "back-fill placeholders",
                        source,
                    }
                })?;
                changed = true;
            }
        }
        if !changed {
            return Ok(batch);
        }
        RecordBatch::try_new(batch.schema(), columns).map_err(|source| WriteError::Arrow {
            context: "back-fill placeholders",
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, Int64Array, StringArray};
    use arrow_schema::Field;
    use std::sync::Arc;

    fn batch(text: Vec<Option<&str>>, bytes: Vec<Option<&[u8]>>) -> RecordBatch {
        let n = text.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("doc", DataType::Utf8, true),
            Field::new("blob", DataType::Binary, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(0..n as i64)),
                Arc::new(StringArray::from(text)),
                Arc::new(BinaryArray::from(bytes)),
            ],
        )
        .expect("batch")
    }

    const P: &str = DEFAULT_PLACEHOLDER;

    #[test]
    fn placeholders_take_the_value_of_the_version_they_supersede_in_a_chain() {
        let b = batch(
            vec![Some("v0"), Some(P), Some(P), Some("v3")],
            vec![
                Some(b"b0"),
                Some(P.as_bytes()),
                Some(b"b2"),
                Some(P.as_bytes()),
            ],
        );
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        assert_eq!(toast.columns(), &[1, 2]);
        // 0 → 1 → 2 → 3: row 2 takes row 0's text through row 1; row 3 takes row 2's bytes.
        let filled = toast
            .fill_from_predecessors(b, &[(1, 0), (2, 1), (3, 2)])
            .expect("fill");
        let doc = filled.column(1).as_string::<i32>();
        assert_eq!(
            (0..4).map(|r| doc.value(r)).collect::<Vec<_>>(),
            ["v0", "v0", "v0", "v3"]
        );
        let blob = filled.column(2).as_binary::<i32>();
        assert_eq!(
            (0..4).map(|r| blob.value(r)).collect::<Vec<_>>(),
            [&b"b0"[..], b"b0", b"b2", b"b2"]
        );
    }

    #[test]
    fn a_placeholder_without_an_earlier_version_stays() {
        let b = batch(vec![Some(P), Some("x")], vec![None, None]);
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        let filled = toast.fill_from_predecessors(b.clone(), &[]).expect("fill");
        assert_eq!(filled, b);
        assert!(toast.has_placeholder(&filled, 0));
        assert!(!toast.has_placeholder(&filled, 1));
    }

    #[test]
    fn hex_placeholders_are_octets() {
        let u = Unavailable::parse("hex:6869").expect("hex");
        let b = batch(vec![Some("hi")], vec![Some(b"hi")]);
        assert!(u.is_placeholder(b.column(1).as_ref(), 0));
        assert!(u.is_placeholder(b.column(2).as_ref(), 0));
        assert!(Unavailable::parse("hex:6").is_err());
        assert!(Unavailable::parse("hex:zz").is_err());
    }
}
