//! Which columns a decoded clustering output writes without a dictionary.
//!
//! The Parquet writer tries a dictionary for every column it is not told to write plain, interning each value
//! (a hash and, for a new value, an insert) until the dictionary outgrows its page; a column of mostly
//! distinct values (timestamps, amounts, session ids) pays that on every row for a dictionary that is about
//! as large as the values. Java's Parquet writer drops a dictionary that does not make the column smaller than
//! its plain values. Clustering rewrites files that were written with dictionaries, and their column chunks
//! show which paid; a column whose dictionary did not is written plain in the output:
//! - its dictionary pages hold at least [`UNPROFITABLE_SHARE`] of its compressed bytes: the indices that select
//!   from the dictionary are a small part, so values repeat little;
//! - or, for a fixed-width column (numbers, decimals), its encoded bytes before compression (dictionary,
//!   indices, levels) were at least its plain values' (values × width): Java's rule.
//!
//! Chunks of fewer than [`MIN_JUDGED_VALUES`] values are not judged.

use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

/// A column's chunks are judged only from this many values (over all row groups of the input).
pub(super) const MIN_JUDGED_VALUES: i64 = 256;
/// Share of a column's compressed bytes in its dictionary pages from which the dictionary does not pay.
pub(super) const UNPROFITABLE_SHARE: f64 = 0.8;

/// A column's chunks summed over an input's row groups.
#[derive(Default)]
struct Sums {
    dictionary: i64,
    compressed: i64,
    uncompressed: i64,
    values: i64,
}

impl Sums {
    fn add(&mut self, chunk: &ColumnChunkMetaData) {
        if let Some(start) = chunk.dictionary_page_offset() {
            self.dictionary += (chunk.data_page_offset() - start).max(0);
        }
        self.compressed += chunk.compressed_size();
        self.uncompressed += chunk.uncompressed_size();
        self.values += chunk.num_values();
    }
}

/// The leaf columns (dotted paths) of `input` written with a dictionary that did not pay. A column written
/// without a dictionary in the input is left to the writer's settings.
pub(super) fn plain_in(input: &ParquetMetaData) -> Vec<String> {
    let schema = input.file_metadata().schema_descr();
    (0..schema.num_columns())
        .filter(|&leaf| {
            let mut sums = Sums::default();
            for rg in input.row_groups() {
                match rg.columns().get(leaf) {
                    Some(chunk) => sums.add(chunk),
                    None => return false,
                }
            }
            if sums.dictionary == 0 || sums.values < MIN_JUDGED_VALUES {
                return false;
            }
            if sums.dictionary as f64 >= UNPROFITABLE_SHARE * sums.compressed as f64 {
                return true;
            }
            let column = schema.column(leaf);
            let width = match column.physical_type() {
                PhysicalType::INT32 | PhysicalType::FLOAT => 4,
                PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
                PhysicalType::INT96 => 12,
                PhysicalType::FIXED_LEN_BYTE_ARRAY => i64::from(column.type_length().max(0)),
                PhysicalType::BOOLEAN | PhysicalType::BYTE_ARRAY => 0,
            };
            width > 0 && sums.uncompressed >= sums.values.saturating_mul(width)
        })
        .map(|leaf| schema.column(leaf).path().string())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnPath;

    use super::plain_in;

    /// `rows` rows: unique numbers and strings, a constant, few distinct values, strings that repeat
    /// eightfold, and unique strings written without a dictionary; with dictionaries where allowed.
    fn file(rows: usize) -> ParquetMetaData {
        let text = |f: &dyn Fn(usize) -> String| -> ArrayRef {
            Arc::new(StringArray::from((0..rows).map(f).collect::<Vec<_>>()))
        };
        let batch = RecordBatch::try_from_iter([
            (
                "unique_long",
                Arc::new(Int64Array::from(
                    (0..rows as i64).map(|i| i * 7919).collect::<Vec<_>>(),
                )) as ArrayRef,
            ),
            (
                "amount",
                Arc::new(Float64Array::from(
                    (0..rows).map(|i| i as f64 * 1.37).collect::<Vec<_>>(),
                )),
            ),
            (
                "unique_text",
                text(&|i| {
                    format!(
                        "session-{:016x}",
                        (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    )
                }),
            ),
            ("constant", text(&|_| "eu-west-1".to_string())),
            (
                "few",
                text(&|i| ["linux", "macos", "windows"][i % 3].to_string()),
            ),
            (
                "few_ints",
                Arc::new(Int32Array::from(
                    (0..rows as i32).map(|i| i % 5).collect::<Vec<_>>(),
                )),
            ),
            (
                "repeated_text",
                text(&|i| format!("a repeated value number {:08}", i / 8)),
            ),
            ("written_plain", text(&|i| format!("no dictionary {i:012}"))),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_column_dictionary_enabled(ColumnPath::from("written_plain"), false)
            .build();
        ParquetMetaDataReader::new()
            .parse_and_finish(&crate::base_file::parquet_file(&batch, props))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_columns_whose_dictionary_did_not_pay_are_written_plain() {
        assert_eq!(
            plain_in(&file(1000)),
            ["unique_long", "amount", "unique_text"]
        );
    }

    #[test]
    fn a_small_input_is_not_judged() {
        assert!(plain_in(&file(200)).is_empty());
    }
}
