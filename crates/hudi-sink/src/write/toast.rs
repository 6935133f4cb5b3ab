//! Postgres TOAST placeholders: a value Debezium could not read never replaces a stored one.
//!
//! With `REPLICA IDENTITY DEFAULT`, an update that leaves a TOASTed column (a large text or bytes value)
//! unchanged does not carry it: Debezium writes the placeholder `__debezium_unavailable_value` (its
//! `unavailable.value.placeholder`) into `after` instead. Hudi's `PostgresDebeziumAvroPayload` puts the
//! stored value back when it merges an incoming record with storage. The writer does the same earlier and
//! everywhere, so that every reader sees the real value (docs/cdc.md, "TOAST"):
//!
//! ```text
//! fold by key ─ a placeholder cell takes the value of the key's latest earlier version in the batch, by
//!               ordering value (a moved row's before image first; a delete in between leaves it)
//! copy-on-write ─ a placeholder left after the fold, or filled from a version older than the stored row,
//!                 takes the stored row's value
//! merge-on-read ─ the same with the latest merged version of the file slice
//! ```
//!
//! So the value taken is the latest one by ordering value, whatever order the key's events arrived in
//! (docs/cdc.md, "TOAST placeholders"). Only top-level string and bytes columns are compared (the types
//! Debezium puts the placeholder in). A placeholder with nothing before it (a key the table has not stored,
//! or a version after a delete) stays as it arrived.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema};
use arrow_select::interleave::interleave;

use super::ordering::OrderingComparator;
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

    /// Back-fills within one batch (the ordering rule of docs/cdc.md, "TOAST placeholders"). `moved` are
    /// `(row, before image)` pairs of rows that changed partition: a placeholder of `row` takes its before
    /// image's value first. `versions` are `(row, earlier)`: a written row and the other versions of its key
    /// in the batch that it supersedes, latest first by ordering value, each with whether it deletes the
    /// key. A placeholder cell of `row` takes the value of the latest earlier version that holds one; a
    /// delete in between, or no such version, leaves it. Returns the batch and, per row, where each
    /// placeholder cell of it was decided in the batch: a stored version later than that source is the
    /// value to take instead ([`Toast::stored_value_wins`]).
    pub fn fill_in_batch(
        &self,
        batch: RecordBatch,
        moved: &[(usize, usize)],
        versions: &[(usize, Vec<(usize, bool)>)],
    ) -> Result<(RecordBatch, BatchFills), WriteError> {
        let mut fills = BatchFills::new();
        if self.columns.is_empty() || (moved.is_empty() && versions.is_empty()) {
            return Ok((batch, fills));
        }
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let mut changed = false;
        let n = batch.num_rows();
        for &col in &self.columns {
            let mut sources: Option<Vec<(usize, usize)>> = None;
            let mut take = |row: usize, source: usize| {
                let s = sources.get_or_insert_with(|| (0..n).map(|r| (0, r)).collect());
                s[row] = (0, source);
            };
            let array = batch.column(col).as_ref();
            // A moved row's before image is the version right before it: row → image, where it filled one.
            let mut from_image = HashMap::new();
            for &(row, image) in moved {
                if self.unavailable.is_placeholder(array, row)
                    && !self.unavailable.is_placeholder(array, image)
                {
                    take(row, image);
                    from_image.insert(row, image);
                }
            }
            let is_placeholder = |r: usize| {
                !from_image.contains_key(&r) && self.unavailable.is_placeholder(array, r)
            };
            for (row, earlier) in versions {
                if !is_placeholder(*row) {
                    continue;
                }
                let source = earlier.iter().find_map(|&(r, delete)| {
                    if delete {
                        Some(BatchSource::Deleted(r))
                    } else if is_placeholder(r) {
                        None
                    } else {
                        // A moved row's value is its before image's.
                        Some(BatchSource::Row(from_image.get(&r).copied().unwrap_or(r)))
                    }
                });
                if let Some(source) = source {
                    if let BatchSource::Row(r) = source {
                        take(*row, r);
                    }
                    fills.entry(*row).or_default().push((col, source));
                }
            }
            if let Some(indices) = sources {
                columns[col] =
                    interleave(&[array], &indices).map_err(|source| WriteError::Arrow {
                        context: "back-fill placeholders",
                        source,
                    })?;
                changed = true;
            }
        }
        if !changed {
            return Ok((batch, fills));
        }
        let batch =
            RecordBatch::try_new(batch.schema(), columns).map_err(|source| WriteError::Arrow {
                context: "back-fill placeholders",
                source,
            })?;
        Ok((batch, fills))
    }

    /// Whether the cell `col` of incoming row `row`, which replaces the stored version `(stored, at)`,
    /// takes the stored value: the cell is still a placeholder and the batch decided nothing for it, or
    /// the version the batch decided on (a value or a delete) is older than the stored one. `ordering`:
    /// the incoming and stored ordering columns and their comparator (none: every incoming version is
    /// later).
    pub fn stored_value_wins(
        &self,
        incoming: &RecordBatch,
        row: usize,
        col: usize,
        fills: &BatchFills,
        ordering: Option<(&ArrayRef, &ArrayRef, OrderingComparator)>,
        at: usize,
    ) -> bool {
        let decided = fills
            .get(&row)
            .and_then(|cells| cells.iter().find(|(c, _)| *c == col))
            .map(|(_, source)| *source)
            .filter(|_| !crate::mutation::is_disabled(crate::mutation::Mutation::ToastOrdering));
        let older_than_stored = |r: usize| {
            ordering.is_some_and(|(batch_col, stored_col, cmp)| {
                !cmp.replaces_stored(stored_col, at, batch_col, r)
            })
        };
        match decided {
            None => self.is_placeholder(incoming, col, row),
            Some(BatchSource::Deleted(d)) => older_than_stored(d),
            Some(BatchSource::Row(r)) => older_than_stored(r),
        }
    }
}

/// Where a placeholder cell of a written row was decided within its batch ([`Toast::fill_in_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchSource {
    /// It took the value of this row, an earlier version of its key.
    Row(usize),
    /// This delete of the key comes between: the placeholder stays (nothing before it survives).
    Deleted(usize),
}

/// Per written row, `(column, source)` of each placeholder cell the batch decided.
pub type BatchFills = HashMap<usize, Vec<(usize, BatchSource)>>;

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
    fn a_placeholder_takes_the_latest_earlier_value_by_ordering_not_by_arrival() {
        // Arrival 0, 1, 2; by ordering 0 < 2 < 1: the winner 1 supersedes 2 (latest first), then 0.
        let b = batch(
            vec![Some("v0"), Some(P), Some("v2")],
            vec![Some(b"b0"), Some(P.as_bytes()), Some(P.as_bytes())],
        );
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        assert_eq!(toast.columns(), &[1, 2]);
        let (filled, fills) = toast
            .fill_in_batch(b, &[], &[(1, vec![(2, false), (0, false)])])
            .expect("fill");
        let doc = filled.column(1).as_string::<i32>();
        assert_eq!(doc.value(1), "v2");
        // Row 2's bytes are a placeholder too: the value before it is row 0's.
        assert_eq!(filled.column(2).as_binary::<i32>().value(1), b"b0");
        assert_eq!(
            fills.get(&1),
            Some(&vec![(1, BatchSource::Row(2)), (2, BatchSource::Row(0))])
        );
    }

    #[test]
    fn a_delete_between_leaves_the_placeholder_and_a_before_image_comes_first() {
        let b = batch(
            vec![Some("v0"), None, Some(P), Some(P), Some("image")],
            vec![None; 5],
        );
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        // Row 2 follows a delete (row 1) of its key; row 3 moved here, its before image is row 4.
        let (filled, fills) = toast
            .fill_in_batch(
                b,
                &[(3, 4)],
                &[(2, vec![(1, true), (0, false)]), (3, vec![(0, false)])],
            )
            .expect("fill");
        let doc = filled.column(1).as_string::<i32>();
        assert_eq!(doc.value(2), P);
        assert_eq!(doc.value(3), "image");
        assert_eq!(fills.get(&2), Some(&vec![(1, BatchSource::Deleted(1))]));
        assert_eq!(fills.get(&3), None);
    }

    #[test]
    fn a_stored_version_later_than_the_batch_source_is_the_value_taken() {
        let b = batch(vec![Some("old"), Some("old"), Some(P)], vec![None; 3]);
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        let incoming: ArrayRef = Arc::new(Int64Array::from(vec![26, 26, 80]));
        let stored: ArrayRef = Arc::new(Int64Array::from(vec![75]));
        let cmp = OrderingComparator::try_new("ts", incoming.data_type()).expect("orderable");
        let ordering = Some((&incoming, &stored, cmp));
        let fills: BatchFills = [
            (1, vec![(1, BatchSource::Row(0))]),
            (2, vec![(1, BatchSource::Deleted(0))]),
        ]
        .into_iter()
        .collect();
        // Row 1 took row 0's value (26) but the stored version (75) is later: the stored one wins.
        assert!(toast.stored_value_wins(&b, 1, 1, &fills, ordering, 0));
        // Row 2 follows a delete at 26, older than the stored version: it takes the stored value.
        assert!(toast.stored_value_wins(&b, 2, 1, &fills, ordering, 0));
        // A stored version older than the source keeps the batch's value; no ordering: the batch's.
        let stored_old: ArrayRef = Arc::new(Int64Array::from(vec![10]));
        assert!(!toast.stored_value_wins(&b, 1, 1, &fills, Some((&incoming, &stored_old, cmp)), 0));
        assert!(!toast.stored_value_wins(&b, 2, 1, &fills, Some((&incoming, &stored_old, cmp)), 0));
        assert!(!toast.stored_value_wins(&b, 1, 1, &fills, None, 0));
        // A placeholder the batch decided nothing for takes the stored value; a real value does not.
        let none = BatchFills::new();
        assert!(toast.stored_value_wins(&b, 2, 1, &none, None, 0));
        assert!(!toast.stored_value_wins(&b, 0, 1, &none, ordering, 0));
    }

    #[test]
    fn a_placeholder_without_an_earlier_version_stays() {
        let b = batch(vec![Some(P), Some("x")], vec![None, None]);
        let toast = Toast::new(Unavailable::parse(P).expect("parse"), &b.schema());
        let (filled, fills) = toast
            .fill_in_batch(b.clone(), &[], &[(0, vec![])])
            .expect("fill");
        assert_eq!(filled, b);
        assert!(fills.is_empty());
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
