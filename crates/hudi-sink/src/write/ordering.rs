//! Ordering (precombine) values: which of two versions of a record wins.
//!
//! Hudi's `EVENT_TIME_ORDERING`: the larger ordering value wins; this writer breaks ties in favour of the
//! later record (later Kafka offset, or the incoming record against the stored one). A null ordering value
//! is smaller than every non-null value. Without an ordering field the later record always wins
//! (`COMMIT_TIME_ORDERING`).

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
}

impl OrderingComparator {
    /// A comparator for the ordering field `field` of type `data_type`.
    pub fn try_new(field: &str, data_type: &DataType) -> Result<Self, WriteError> {
        Ok(Self {
            kind: kind_of(field, data_type)?,
        })
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
        }
    }

    /// Whether a later version `(b, j)` replaces an earlier `(a, i)`: ties go to the later one.
    pub fn later_wins(&self, earlier: &ArrayRef, i: usize, later: &ArrayRef, j: usize) -> bool {
        self.compare(later, j, earlier, i) != Ordering::Less
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
