//! Deterministic test data for any Arrow schema: every type the writer supports, nulls where nullable.
//!
//! `seed` varies the values so that a later version of a row differs from an earlier one.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, TimeUnit};

fn mix(row: usize, seed: u64, salt: u64) -> u64 {
    let mut x = (row as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(seed.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
        .wrapping_add(salt.wrapping_mul(0x1656_67B1_9E37_79F9));
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

fn nulls(n: usize, nullable: bool, seed: u64, salt: u64) -> Option<NullBuffer> {
    if !nullable {
        return None;
    }
    let mut b = BooleanBufferBuilder::new(n);
    for row in 0..n {
        // about one value in seven is null
        b.append(mix(row, seed, salt ^ 0xA5) % 7 != 0);
    }
    Some(NullBuffer::new(b.finish()))
}

const WORDS: &[&str] = &[
    "alpha",
    "Bravo",
    "charlie",
    "dé",
    "ünïcode",
    "中文",
    "emoji😀",
    "",
    "a,b:c",
    "x y",
];

/// An array of `n` values of `data_type`.
pub fn gen_array(data_type: &DataType, nullable: bool, n: usize, seed: u64, salt: u64) -> ArrayRef {
    let nb = nulls(n, nullable, seed, salt);
    let v = |row: usize| mix(row, seed, salt);
    match data_type {
        DataType::Boolean => Arc::new(BooleanArray::new(
            (0..n).map(|r| v(r) % 2 == 0).collect(),
            nb,
        )),
        DataType::Int32 => Arc::new(Int32Array::new(
            (0..n)
                .map(|r| (v(r) % 2_000_001) as i32 - 1_000_000)
                .collect(),
            nb,
        )),
        DataType::Int64 => Arc::new(Int64Array::new(
            (0..n).map(|r| v(r) as i64 >> 3).collect(),
            nb,
        )),
        DataType::Float32 => Arc::new(Float32Array::new(
            (0..n)
                .map(|r| (v(r) % 100_000) as f32 * 0.25 - 1000.0)
                .collect(),
            nb,
        )),
        DataType::Float64 => Arc::new(Float64Array::new(
            (0..n)
                .map(|r| (v(r) % 10_000_000) as f64 / 1024.0 - 3.5)
                .collect(),
            nb,
        )),
        DataType::Utf8 => {
            let values: Vec<String> = (0..n)
                .map(|r| {
                    format!(
                        "{}-{}",
                        WORDS[(v(r) % WORDS.len() as u64) as usize],
                        v(r) % 1000
                    )
                })
                .collect();
            Arc::new(StringArray::new(
                OffsetBuffer::from_lengths(values.iter().map(|s| s.len())),
                values.concat().into_bytes().into(),
                nb,
            ))
        }
        DataType::Binary => {
            let values: Vec<Vec<u8>> = (0..n)
                .map(|r| v(r).to_le_bytes()[..(v(r) % 8) as usize].to_vec())
                .collect();
            Arc::new(BinaryArray::new(
                OffsetBuffer::from_lengths(values.iter().map(|s| s.len())),
                values.concat().into(),
                nb,
            ))
        }
        DataType::FixedSizeBinary(size) => {
            let size = *size as usize;
            let bytes: Vec<u8> = (0..n)
                .flat_map(|r| (0..size).map(move |i| (mix(r, seed, salt + i as u64) & 0xff) as u8))
                .collect();
            Arc::new(FixedSizeBinaryArray::new(size as i32, bytes.into(), nb))
        }
        DataType::Decimal128(p, s) => {
            let max = 10i128.pow(u32::from(*p)) - 1;
            Arc::new(
                Decimal128Array::new(
                    (0..n)
                        .map(|r| (v(r) as i128 % (2 * max + 1)) - max)
                        .collect(),
                    nb,
                )
                .with_precision_and_scale(*p, *s)
                .expect("valid decimal"),
            )
        }
        DataType::Date32 => Arc::new(Date32Array::new(
            (0..n).map(|r| (v(r) % 40_000) as i32 - 5_000).collect(),
            nb,
        )),
        DataType::Time32(TimeUnit::Millisecond) => Arc::new(Time32MillisecondArray::new(
            (0..n).map(|r| (v(r) % 86_400_000) as i32).collect(),
            nb,
        )),
        DataType::Time64(TimeUnit::Microsecond) => Arc::new(Time64MicrosecondArray::new(
            (0..n).map(|r| (v(r) % 86_400_000_000) as i64).collect(),
            nb,
        )),
        DataType::Timestamp(TimeUnit::Millisecond, tz) => Arc::new(
            TimestampMillisecondArray::new(
                (0..n).map(|r| (v(r) % 4_000_000_000_000) as i64).collect(),
                nb,
            )
            .with_timezone_opt(tz.clone()),
        ),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
            TimestampMicrosecondArray::new(
                (0..n)
                    .map(|r| (v(r) % 4_000_000_000_000_000) as i64)
                    .collect(),
                nb,
            )
            .with_timezone_opt(tz.clone()),
        ),
        DataType::Struct(fields) => {
            let children: Vec<ArrayRef> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    gen_array(
                        f.data_type(),
                        f.is_nullable(),
                        n,
                        seed,
                        salt * 31 + i as u64 + 1,
                    )
                })
                .collect();
            Arc::new(StructArray::new(fields.clone(), children, nb))
        }
        DataType::List(item) => {
            let lens: Vec<usize> = (0..n).map(|r| (v(r) % 4) as usize).collect();
            let total: usize = lens.iter().sum();
            let values = gen_array(
                item.data_type(),
                item.is_nullable(),
                total,
                seed,
                salt * 17 + 3,
            );
            Arc::new(ListArray::new(
                item.clone(),
                OffsetBuffer::from_lengths(lens),
                values,
                nb,
            ))
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                panic!("map entries must be a struct")
            };
            let lens: Vec<usize> = (0..n).map(|r| (v(r) % 3) as usize).collect();
            let total: usize = lens.iter().sum();
            // Keys unique within each map: the entry index and a per-row word.
            let mut keys = Vec::with_capacity(total);
            for (r, len) in lens.iter().enumerate() {
                for i in 0..*len {
                    keys.push(format!(
                        "k{i}-{}",
                        WORDS[(v(r) % WORDS.len() as u64) as usize]
                    ));
                }
            }
            let key_array: ArrayRef = Arc::new(StringArray::from(keys));
            let value_field = &kv[1];
            let value_array = gen_array(
                value_field.data_type(),
                value_field.is_nullable(),
                total,
                seed,
                salt * 13 + 5,
            );
            let entries_array = StructArray::new(kv.clone(), vec![key_array, value_array], None);
            Arc::new(MapArray::new(
                entries.clone(),
                OffsetBuffer::from_lengths(lens),
                entries_array,
                nb,
                *sorted,
            ))
        }
        other => panic!("gen_array: unsupported type {other}"),
    }
}

/// A batch of `n` rows for `schema`.
pub fn gen_batch(schema: &arrow_schema::SchemaRef, n: usize, seed: u64) -> RecordBatch {
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| gen_array(f.data_type(), f.is_nullable(), n, seed, i as u64 + 1))
        .collect();
    RecordBatch::try_new(schema.clone(), columns).expect("generated batch matches schema")
}

/// Replaces column `name` of `batch`.
pub fn with_column(batch: &RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let (idx, _) = schema
        .column_with_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    let mut columns = batch.columns().to_vec();
    columns[idx] = array;
    RecordBatch::try_new(schema.clone(), columns).expect("same type")
}
