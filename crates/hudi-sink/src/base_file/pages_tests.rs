use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, Float64Array, Int32Array, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

use super::*;

/// 1,000 rows of strings (repeating, so dictionary-encoded, and unique), nullable longs, and a struct with
/// a nullable double.
fn rows() -> RecordBatch {
    let n = 1_000;
    let mut city = StringBuilder::new();
    let mut key = StringBuilder::new();
    let mut count = Int64Builder::new();
    for i in 0..n {
        city.append_value(["sf", "la", "ny"][i % 3]);
        key.append_value(format!("key-{i:05}-{}", i * 7919 % 1000));
        if i % 5 == 0 {
            count.append_null();
        } else {
            count.append_value(i as i64 * 31);
        }
    }
    let inner = Fields::from(vec![
        Field::new("width", DataType::Int32, false),
        Field::new("lat", DataType::Float64, true),
    ]);
    let device = StructArray::new(
        inner.clone(),
        vec![
            Arc::new(Int32Array::from_iter_values((0..n as i32).map(|i| i % 17))) as ArrayRef,
            Arc::new(Float64Array::from_iter(
                (0..n).map(|i| (i % 4 != 0).then_some(i as f64 / 3.0)),
            )),
        ],
        None,
    );
    let schema = Schema::new(vec![
        Field::new("city", DataType::Utf8, false),
        Field::new("key", DataType::Utf8, false),
        Field::new("count", DataType::Int64, true),
        Field::new("device", DataType::Struct(inner), false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(city.finish()),
            Arc::new(key.finish()),
            Arc::new(count.finish()),
            Arc::new(device),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// [`rows`] written with `compression` and `version`, in row groups of 300 rows and pages of 64.
fn file(compression: Compression, version: WriterVersion) -> Bytes {
    let batch = rows();
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_writer_version(version)
        .set_max_row_group_row_count(Some(300))
        .set_data_page_row_count_limit(64)
        .set_write_batch_size(64)
        .build();
    super::super::parquet_file(&batch, props)
}

/// Every row of `data` through [`read_batches`] and through the crate's reader.
fn both_readers(data: &Bytes) -> (Vec<RecordBatch>, Vec<RecordBatch>) {
    let meta = ArrowReaderMetadata::load(data, ArrowReaderOptions::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let ours = read_batches(data.clone(), &meta, 128)
        .unwrap_or_else(|e| panic!("{e}"))
        .collect::<std::result::Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    let theirs = ParquetRecordBatchReaderBuilder::try_new(data.clone())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_batch_size(128)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
        .collect::<std::result::Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    (ours, theirs)
}

#[test]
fn every_codec_and_page_version_reads_as_the_crates_reader_reads_it() {
    let expected = rows();
    for compression in [
        Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_else(|e| panic!("{e}"))),
        Compression::SNAPPY,
        Compression::UNCOMPRESSED,
    ] {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let data = file(compression, version);
            let meta = parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&data)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(meta.num_row_groups(), 4, "{compression:?} {version:?}");
            let (ours, theirs) = both_readers(&data);
            assert_eq!(ours, theirs, "{compression:?} {version:?}");
            let all = arrow_select::concat::concat_batches(&expected.schema(), &ours)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(all, expected, "{compression:?} {version:?}");
        }
    }
}

#[test]
fn frames_without_a_size_and_pages_of_several_frames_decompress() {
    let text: Vec<u8> = (0..50_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    // A streaming encoder writes no content size into the frame (as Java's zstd streams do).
    let streamed = zstd::stream::encode_all(&text[..], 3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(&streamed).ok(),
        Some(None)
    );
    assert_eq!(decompress(&streamed).ok(), Some(text.clone()));
    // Two frames, each with its size: the header names only the first.
    let half = text.len() / 2;
    let mut two = zstd::bulk::compress(&text[..half], 3).unwrap_or_else(|e| panic!("{e}"));
    two.extend(zstd::bulk::compress(&text[half..], 3).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(decompress(&two).ok(), Some(text.clone()));
    assert_eq!(decompress(&[]).ok(), Some(Vec::new()));
}

#[test]
fn a_corrupt_page_is_an_error() {
    assert!(decompress(b"not a zstd frame").is_err());
    // A zstd file with a page's bytes overwritten: an error from the reader, never a panic.
    let data = file(
        Compression::ZSTD(ZstdLevel::default()),
        WriterVersion::PARQUET_1_0,
    );
    let meta = ArrowReaderMetadata::load(&data, ArrowReaderOptions::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let column = meta.metadata().row_group(0).column(1);
    let (start, len) = column.byte_range();
    let mut bytes = data.to_vec();
    let middle = usize::try_from(start + len / 2).unwrap_or(0);
    for b in &mut bytes[middle..middle + 16] {
        *b ^= 0x5a;
    }
    let outcome = read_batches(Bytes::from(bytes), &meta, 128)
        .map(|r| r.collect::<std::result::Result<Vec<_>, _>>());
    assert!(
        !matches!(outcome, Ok(Ok(_))),
        "a corrupt page decoded without an error"
    );
}
