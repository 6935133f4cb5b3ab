//! DELETE_BLOCK content (version 3): int32 `3`, int32 N, then N bytes holding the Avro binary datum of a
//! `HoodieDeleteRecordList`:
//!
//! ```text
//! HoodieDeleteRecordList { deleteRecordList: array<HoodieDeleteRecord> }
//! HoodieDeleteRecord {
//!   recordKey:     ["null", "string"],
//!   partitionPath: ["null", "string"],
//!   orderingVal:   ["null", BooleanWrapper, IntWrapper, LongWrapper, FloatWrapper, DoubleWrapper,
//!                   BytesWrapper, StringWrapper, DateWrapper, DecimalWrapper, TimeMicrosWrapper,
//!                   TimestampMicrosWrapper]          -- each wrapper is a record { value: T }
//! }
//! ```
//!
//! The schema is fixed, so this is encoded by hand. Spark SQL's DELETE writes `IntWrapper(0)`, which
//! readers take as "no ordering value": the delete wins over older records by commit time. That is the
//! default here. Versions 1 and 2 (Kryo-serialised Java objects) are refused.

use super::datum::{write_bytes, write_long, Cursor};
use super::error::ContentError;
use crate::avro::binary::{write_double, write_float};

/// The delete block content version Hudi 0.14/0.15 write.
pub const DELETE_BLOCK_VERSION: i32 = 3;

/// An ordering (precombine) value of a deleted record, by wrapper record. Decimal, date and time values
/// keep their Avro encoding (unscaled bytes, days, microseconds), as the wrapper stores them.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderingValue {
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(Vec<u8>),
    String(String),
    /// Days since the epoch.
    Date(i32),
    /// Unscaled two's-complement big-endian bytes.
    Decimal(Vec<u8>),
    /// Microseconds after midnight.
    TimeMicros(i64),
    /// Microseconds since the epoch.
    TimestampMicros(i64),
}

impl OrderingValue {
    /// The union branch index of the wrapper in `orderingVal` (0 is null).
    fn branch(&self) -> i64 {
        match self {
            OrderingValue::Boolean(_) => 1,
            OrderingValue::Int(_) => 2,
            OrderingValue::Long(_) => 3,
            OrderingValue::Float(_) => 4,
            OrderingValue::Double(_) => 5,
            OrderingValue::Bytes(_) => 6,
            OrderingValue::String(_) => 7,
            OrderingValue::Date(_) => 8,
            OrderingValue::Decimal(_) => 9,
            OrderingValue::TimeMicros(_) => 10,
            OrderingValue::TimestampMicros(_) => 11,
        }
    }
}

/// One deleted key.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteRecord {
    /// The record key (`_hoodie_record_key`).
    pub record_key: Option<String>,
    /// The partition path (`_hoodie_partition_path`).
    pub partition_path: Option<String>,
    /// The ordering value, `None` for a null.
    pub ordering_value: Option<OrderingValue>,
}

impl DeleteRecord {
    /// A delete of `record_key` in `partition_path` with Spark's `IntWrapper(0)` ordering value.
    pub fn new(record_key: impl Into<String>, partition_path: impl Into<String>) -> Self {
        Self {
            record_key: Some(record_key.into()),
            partition_path: Some(partition_path.into()),
            ordering_value: Some(OrderingValue::Int(0)),
        }
    }
}

fn write_optional_string(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        None => write_long(out, 0),
        Some(s) => {
            write_long(out, 1);
            write_bytes(out, s.as_bytes());
        }
    }
}

/// Encodes DELETE_BLOCK content for `records` (in order).
pub fn encode_delete_content(records: &[DeleteRecord]) -> Result<Vec<u8>, ContentError> {
    let mut datum = Vec::new();
    if !records.is_empty() {
        write_long(&mut datum, i64::try_from(records.len()).unwrap_or(i64::MAX));
        for r in records {
            write_optional_string(&mut datum, r.record_key.as_deref());
            write_optional_string(&mut datum, r.partition_path.as_deref());
            match &r.ordering_value {
                None => write_long(&mut datum, 0),
                Some(v) => {
                    write_long(&mut datum, v.branch());
                    match v {
                        OrderingValue::Boolean(b) => datum.push(u8::from(*b)),
                        OrderingValue::Int(i) | OrderingValue::Date(i) => {
                            write_long(&mut datum, i64::from(*i))
                        }
                        OrderingValue::Long(i)
                        | OrderingValue::TimeMicros(i)
                        | OrderingValue::TimestampMicros(i) => write_long(&mut datum, *i),
                        OrderingValue::Float(f) => write_float(&mut datum, *f),
                        OrderingValue::Double(f) => write_double(&mut datum, *f),
                        OrderingValue::Bytes(b) | OrderingValue::Decimal(b) => {
                            write_bytes(&mut datum, b)
                        }
                        OrderingValue::String(s) => write_bytes(&mut datum, s.as_bytes()),
                    }
                }
            }
        }
    }
    write_long(&mut datum, 0);
    let len = i32::try_from(datum.len()).map_err(|_| ContentError::Mismatch {
        path: "$.deleteRecordList".into(),
        reason: format!("{} bytes of deletes exceed an int32 length", datum.len()),
    })?;
    let mut out = Vec::with_capacity(8 + datum.len());
    out.extend_from_slice(&DELETE_BLOCK_VERSION.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&datum);
    Ok(out)
}

fn read_optional_string(c: &mut Cursor<'_>, what: &str) -> Result<Option<String>, ContentError> {
    match c.long(what)? {
        0 => Ok(None),
        1 => Ok(Some(c.string(what)?)),
        b => Err(c.corrupt(format!("{what}: union branch {b} of [null, string]"))),
    }
}

/// Decodes DELETE_BLOCK content (version 3).
pub fn decode_delete_content(content: &[u8]) -> Result<Vec<DeleteRecord>, ContentError> {
    let mut c = Cursor::new(content);
    let version = c.be_i32("the block version")?;
    if version != DELETE_BLOCK_VERSION {
        return Err(ContentError::UnsupportedVersion {
            found: version,
            expected: DELETE_BLOCK_VERSION,
        });
    }
    let len = c.be_len("the delete list length")?;
    let base = c.offset();
    let datum = c.take(len, "the delete list")?;
    if c.remaining() > 0 {
        return Err(c.corrupt(format!("{} bytes after the delete list", c.remaining())));
    }
    let mut d = Cursor::at(datum, base);
    let mut records = Vec::new();
    let mut no_budget = 0;
    loop {
        // A record takes at least three bytes (three union indexes).
        let n = d.block_count("the delete list block count", 3, &mut no_budget)?;
        if n == 0 {
            break;
        }
        for _ in 0..n {
            let record_key = read_optional_string(&mut d, "recordKey")?;
            let partition_path = read_optional_string(&mut d, "partitionPath")?;
            let branch = d.long("orderingVal branch")?;
            let ordering_value = match branch {
                0 => None,
                1 => Some(OrderingValue::Boolean(d.boolean("BooleanWrapper")?)),
                2 => Some(OrderingValue::Int(d.int("IntWrapper")?)),
                3 => Some(OrderingValue::Long(d.long("LongWrapper")?)),
                4 => Some(OrderingValue::Float(d.float("FloatWrapper")?)),
                5 => Some(OrderingValue::Double(d.double("DoubleWrapper")?)),
                6 => Some(OrderingValue::Bytes(d.bytes("BytesWrapper")?.to_vec())),
                7 => Some(OrderingValue::String(d.string("StringWrapper")?)),
                8 => Some(OrderingValue::Date(d.int("DateWrapper")?)),
                9 => Some(OrderingValue::Decimal(d.bytes("DecimalWrapper")?.to_vec())),
                10 => Some(OrderingValue::TimeMicros(d.long("TimeMicrosWrapper")?)),
                11 => Some(OrderingValue::TimestampMicros(
                    d.long("TimestampMicrosWrapper")?,
                )),
                other => {
                    return Err(d.corrupt(format!(
                        "orderingVal branch {other} is not a wrapper this reader knows"
                    )))
                }
            };
            records.push(DeleteRecord {
                record_key,
                partition_path,
                ordering_value,
            });
        }
    }
    if d.remaining() > 0 {
        return Err(d.corrupt(format!("{} bytes after the delete list", d.remaining())));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_delete_record_bytes() {
        // One record as Spark SQL DELETE writes it: 02 <len><key> 02 <len><partition> 04 00.
        let content = encode_delete_content(&[DeleteRecord::new("k1", "p")]).expect("encode");
        let expected = [
            0, 0, 0, 3, 0, 0, 0, 11, 2, 2, 4, b'k', b'1', 2, 2, b'p', 4, 0, 0,
        ];
        assert_eq!(content, expected);
        assert_eq!(
            decode_delete_content(&content).expect("decode"),
            [DeleteRecord::new("k1", "p")]
        );
    }

    #[test]
    fn every_wrapper_round_trips() {
        let values = [
            None,
            Some(OrderingValue::Boolean(true)),
            Some(OrderingValue::Int(-7)),
            Some(OrderingValue::Long(1 << 40)),
            Some(OrderingValue::Float(1.5)),
            Some(OrderingValue::Double(-2.25)),
            Some(OrderingValue::Bytes(vec![0, 255])),
            Some(OrderingValue::String("é".into())),
            Some(OrderingValue::Date(19_000)),
            Some(OrderingValue::Decimal(vec![0xff, 0x38])),
            Some(OrderingValue::TimeMicros(3_600_000_000)),
            Some(OrderingValue::TimestampMicros(1_700_000_000_000_000)),
        ];
        let records: Vec<DeleteRecord> = values
            .into_iter()
            .enumerate()
            .map(|(i, ordering_value)| DeleteRecord {
                record_key: (i != 3).then(|| format!("key{i}")),
                partition_path: (i != 4).then(|| format!("p={i}")),
                ordering_value,
            })
            .collect();
        let content = encode_delete_content(&records).expect("encode");
        assert_eq!(decode_delete_content(&content).expect("decode"), records);
        let empty = encode_delete_content(&[]).expect("encode");
        assert_eq!(empty, [0, 0, 0, 3, 0, 0, 0, 1, 0]);
        assert!(decode_delete_content(&empty).expect("decode").is_empty());
    }

    #[test]
    fn damage_and_old_versions_are_errors() {
        let content = encode_delete_content(&[DeleteRecord::new("k1", "p")]).expect("encode");
        let mut v2 = content.clone();
        v2[3] = 2;
        assert!(matches!(
            decode_delete_content(&v2),
            Err(ContentError::UnsupportedVersion { found: 2, .. })
        ));
        for cut in 0..content.len() {
            assert!(decode_delete_content(&content[..cut]).is_err(), "cut {cut}");
        }
        let mut branch = content.clone();
        branch[16] = 24; // orderingVal branch 12 (ArrayWrapper in newer Hudi)
        assert!(matches!(
            decode_delete_content(&branch),
            Err(ContentError::Corrupt { .. })
        ));
        for i in 0..content.len() {
            for v in [0x00, 0x7f, 0x80, 0xff] {
                let mut m = content.clone();
                m[i] = v;
                let _ = decode_delete_content(&m);
            }
        }
    }
}
