//! Ordering (precombine) values: which of two versions of a record wins.
//!
//! Hudi's `EVENT_TIME_ORDERING`: the larger ordering value wins; this writer breaks ties in favour of the
//! later record (later Kafka offset, or the incoming record against the stored one). A null ordering value
//! is smaller than every non-null value. Without an ordering field the later record always wins
//! (`COMMIT_TIME_ORDERING`).
//!
//! Hudi's Debezium payloads: `PostgresDebeziumAvroPayload` orders by the long `_event_lsn` as above (the
//! incoming record wins ties); `MySqlDebeziumAvroPayload` orders by `_event_seq` (`"<file>.<pos>"`) with
//! the binlog file number and the position compared as numbers, and keeps the stored record on a tie.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use super::WriteError;

/// A comparator over one ordering column of two arrays of the same type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    I32,
    I64,
    F32,
    F64,
    Utf8,
    Date32,
    TsMillis,
    TsMicros,
    Decimal,
    Bool,
    /// `"<binlog file number>.<position>"`, both parts compared as numbers.
    BinlogSeq,
}

/// The numeric parts of a MySQL `_event_seq`; text that is not two numbers orders before every seq.
fn binlog_seq(text: &str) -> Option<(u128, u128)> {
    let (file, pos) = text.split_once('.')?;
    Some((file.trim().parse().ok()?, pos.trim().parse().ok()?))
}

/// Checks that `data_type` can order records and returns its comparator kind.
fn kind_of(field: &str, data_type: &DataType) -> Result<Kind, WriteError> {
    Ok(match data_type {
        DataType::Int32 => Kind::I32,
        DataType::Int64 => Kind::I64,
        DataType::Float32 => Kind::F32,
        DataType::Float64 => Kind::F64,
        DataType::Utf8 => Kind::Utf8,
        DataType::Date32 => Kind::Date32,
        DataType::Timestamp(TimeUnit::Millisecond, _) => Kind::TsMillis,
        DataType::Timestamp(TimeUnit::Microsecond, _) => Kind::TsMicros,
        DataType::Decimal128(_, _) => Kind::Decimal,
        DataType::Boolean => Kind::Bool,
        other => {
            return Err(WriteError::Config {
                reason: format!(
                    "ordering field {field} has type {other}, which cannot order records"
                ),
            })
        }
    })
}

/// Compares ordering values of rows in columns of one type.
#[derive(Debug, Clone, Copy)]
pub struct OrderingComparator {
    kind: Kind,
    /// Whether the stored record wins a tie against the incoming one (`MySqlDebeziumAvroPayload`).
    stored_wins_ties: bool,
}

impl OrderingComparator {
    /// A comparator for the ordering field `field` of type `data_type`.
    pub fn try_new(field: &str, data_type: &DataType) -> Result<Self, WriteError> {
        Ok(Self {
            kind: kind_of(field, data_type)?,
            stored_wins_ties: false,
        })
    }

    /// The comparator of the table's payload class: Hudi's MySQL Debezium payload compares `_event_seq`
    /// as binlog file and position numbers and keeps the stored record on a tie; any other payload
    /// compares by type.
    pub fn for_payload(
        field: &str,
        data_type: &DataType,
        payload: Option<&str>,
    ) -> Result<Self, WriteError> {
        let mysql = payload.is_some_and(|p| p.ends_with(".MySqlDebeziumAvroPayload"));
        match (mysql, data_type) {
            (true, DataType::Utf8) => Ok(Self {
                kind: Kind::BinlogSeq,
                stored_wins_ties: true,
            }),
            _ => Self::try_new(field, data_type),
        }
    }

    /// Compares `a[i]` with `b[j]`; null is smallest; NaN is larger than every number (Java
    /// `Double.compareTo`).
    pub fn compare(&self, a: &ArrayRef, i: usize, b: &ArrayRef, j: usize) -> Ordering {
        match (a.is_null(i), b.is_null(j)) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        match self.kind {
            Kind::I32 => a
                .as_primitive::<Int32Type>()
                .value(i)
                .cmp(&b.as_primitive::<Int32Type>().value(j)),
            Kind::I64 => a
                .as_primitive::<Int64Type>()
                .value(i)
                .cmp(&b.as_primitive::<Int64Type>().value(j)),
            Kind::F32 => a
                .as_primitive::<Float32Type>()
                .value(i)
                .total_cmp(&b.as_primitive::<Float32Type>().value(j)),
            Kind::F64 => a
                .as_primitive::<Float64Type>()
                .value(i)
                .total_cmp(&b.as_primitive::<Float64Type>().value(j)),
            Kind::Utf8 => crate::base_file::writer::java_string_cmp(
                a.as_string::<i32>().value(i),
                b.as_string::<i32>().value(j),
            ),
            Kind::Date32 => a
                .as_primitive::<Date32Type>()
                .value(i)
                .cmp(&b.as_primitive::<Date32Type>().value(j)),
            Kind::TsMillis => a
                .as_primitive::<TimestampMillisecondType>()
                .value(i)
                .cmp(&b.as_primitive::<TimestampMillisecondType>().value(j)),
            Kind::TsMicros => a
                .as_primitive::<TimestampMicrosecondType>()
                .value(i)
                .cmp(&b.as_primitive::<TimestampMicrosecondType>().value(j)),
            Kind::Decimal => a
                .as_primitive::<Decimal128Type>()
                .value(i)
                .cmp(&b.as_primitive::<Decimal128Type>().value(j)),
            Kind::Bool => a.as_boolean().value(i).cmp(&b.as_boolean().value(j)),
            Kind::BinlogSeq => binlog_seq(a.as_string::<i32>().value(i))
                .cmp(&binlog_seq(b.as_string::<i32>().value(j))),
        }
    }

    /// Whether a later version `(b, j)` replaces an earlier `(a, i)`: ties go to the later one.
    pub fn later_wins(&self, earlier: &ArrayRef, i: usize, later: &ArrayRef, j: usize) -> bool {
        self.compare(later, j, earlier, i) != Ordering::Less
    }

    /// Whether an incoming version `(incoming, j)` replaces the stored `(stored, i)`: ties go to the
    /// incoming one, except under the MySQL Debezium payload, which keeps the stored record.
    pub fn replaces_stored(
        &self,
        stored: &ArrayRef,
        i: usize,
        incoming: &ArrayRef,
        j: usize,
    ) -> bool {
        match self.compare(incoming, j, stored, i) {
            Ordering::Greater => true,
            Ordering::Equal => !self.stored_wins_ties,
            Ordering::Less => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn larger_wins_ties_go_to_the_later_record_nulls_lose() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None, Some(7)]));
        let c = OrderingComparator::try_new("ts", a.data_type()).expect("orderable");
        assert!(c.later_wins(&a, 0, &a, 2)); // 7 > 5
        assert!(!c.later_wins(&a, 2, &a, 0)); // 5 < 7
        assert!(c.later_wins(&a, 0, &a, 0)); // tie
        assert!(c.later_wins(&a, 1, &a, 0)); // non-null beats null
        assert!(!c.later_wins(&a, 0, &a, 1)); // null loses
        let s: ArrayRef = Arc::new(StringArray::from(vec!["b", "a"]));
        let c = OrderingComparator::try_new("v", s.data_type()).expect("orderable");
        assert!(!c.later_wins(&s, 0, &s, 1));
        let seq: ArrayRef = Arc::new(StringArray::from(vec![
            "000003.484",
            "000003.1000",
            "000004.7",
            "000003.484",
        ]));
        let mysql = Some("org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload");
        let c = OrderingComparator::for_payload("_event_seq", seq.data_type(), mysql).expect("seq");
        assert!(c.later_wins(&seq, 0, &seq, 1)); // position 1000 > 484, though "1000" < "484" as text
        assert!(c.later_wins(&seq, 1, &seq, 2)); // a later binlog file
        assert!(!c.later_wins(&seq, 2, &seq, 0));
        assert!(c.later_wins(&seq, 0, &seq, 3)); // within a batch the later record wins a tie
        assert!(!c.replaces_stored(&seq, 0, &seq, 3)); // against storage the stored one does
        assert!(c.replaces_stored(&seq, 0, &seq, 1));
        let lsn: ArrayRef = Arc::new(Int64Array::from(vec![Some(10), Some(10), None]));
        let postgres = Some("org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload");
        let c =
            OrderingComparator::for_payload("_event_lsn", lsn.data_type(), postgres).expect("lsn");
        assert!(c.replaces_stored(&lsn, 0, &lsn, 1)); // Postgres: the incoming record wins a tie
        assert!(!c.replaces_stored(&lsn, 0, &lsn, 2)); // an event without an LSN never replaces one
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.5, f64::NAN]));
        let c = OrderingComparator::try_new("f", f.data_type()).expect("orderable");
        assert!(c.later_wins(&f, 0, &f, 1));
    }

    #[test]
    fn nested_types_cannot_order() {
        let dt = DataType::List(Arc::new(arrow_schema::Field::new(
            "element",
            DataType::Int32,
            true,
        )));
        assert!(OrderingComparator::try_new("x", &dt).is_err());
    }
}
