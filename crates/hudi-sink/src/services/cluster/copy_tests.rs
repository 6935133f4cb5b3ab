//! The column-chunk copy against `BaseFileWriter` writing the same rows.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use bytes::Bytes;
use parquet::file::metadata::ParquetMetaDataReader;

use super::*;
use crate::base_file::codec::CompressionCodec;
use crate::base_file::reader::{read_base_file, read_footer};
use crate::base_file::writer::BaseFileWriter;
use crate::schema::avro::AvroSchema;

const NEW_NAME: &str = "new-file_0-0-0_20260101000000000.parquet";

fn schema() -> TableSchema {
    let avro = AvroSchema::parse(
        r#"{"type":"record","name":"r","fields":[{"name":"id","type":"string"},{"name":"v","type":"long"}]}"#,
    )
    .expect("avro");
    TableSchema::try_new(avro).expect("schema")
}

fn options() -> BaseFileOptions {
    BaseFileOptions {
        row_group_bytes: 8 * 1024,
        ..BaseFileOptions::default()
    }
}

/// Rows `rows` of batch `b`: every string column (meta columns included) `<column>-<b>-<row>`, so that
/// record keys are unique and each input file has its own `_hoodie_file_name`.
fn batch(schema: &TableSchema, b: usize, rows: std::ops::Range<u64>) -> RecordBatch {
    let columns: Vec<ArrayRef> = schema
        .file
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            if f.data_type() == &arrow_schema::DataType::Int64 {
                Arc::new(Int64Array::from_iter_values(rows.clone().map(|i| i as i64)))
            } else {
                Arc::new(StringArray::from_iter_values(
                    rows.clone().map(|i| format!("{}-{b}-{i:04}", f.name())),
                ))
            }
        })
        .collect();
    RecordBatch::try_new(schema.file.clone(), columns).expect("batch")
}

fn write(schema: &TableSchema, options: &BaseFileOptions, batches: &[RecordBatch]) -> Bytes {
    let mut writer = BaseFileWriter::try_new(
        schema.file.clone(),
        schema.parquet.clone(),
        schema.avro_with_meta_json.clone(),
        options,
    )
    .expect("writer");
    for batch in batches {
        writer.write(batch).expect("write");
    }
    writer.finish().expect("finish").data
}

/// `batch` with every `_hoodie_file_name` = `name`.
fn renamed(batch: &RecordBatch, name: &str) -> RecordBatch {
    let mut columns = batch.columns().to_vec();
    columns[4] = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        name,
        batch.num_rows(),
    )));
    RecordBatch::try_new(batch.schema(), columns).expect("renamed")
}

fn rows(data: Bytes) -> Vec<RecordBatch> {
    let (_, batches) = read_base_file(data).expect("read");
    vec![arrow_select::concat::concat_batches(&batches[0].schema(), &batches).expect("concat")]
}

/// The encoded bytes of every column chunk, by row group.
fn chunks(data: &Bytes) -> Vec<Vec<Bytes>> {
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(data)
        .expect("metadata");
    meta.row_groups()
        .iter()
        .map(|rg| {
            rg.columns()
                .iter()
                .map(|c| {
                    let (start, len) = c.byte_range();
                    data.slice(start as usize..(start + len) as usize)
                })
                .collect()
        })
        .collect()
}

#[test]
fn copied_row_groups_carry_the_footer_base_file_writer_writes_for_the_same_rows() {
    let (schema, options) = (schema(), options());
    let inputs = [
        vec![batch(&schema, 0, 0..1500), batch(&schema, 1, 0..700)],
        vec![batch(&schema, 2, 0..900)],
    ];
    let files: Vec<Bytes> = inputs.iter().map(|b| write(&schema, &options, b)).collect();

    let mut out = CopyFile::try_new(&schema, &options, NEW_NAME).expect("copy file");
    let mut input_chunks = Vec::new();
    for (i, data) in files.iter().enumerate() {
        let input = CopyInput::open(data.clone(), &format!("in-{i}"), &schema, &options, 0)
            .expect("open")
            .expect("same schema and codec: copied");
        for rg in 0..input.row_groups() {
            out.append_row_group(&input, rg).expect("append");
        }
        input_chunks.extend(chunks(data));
    }
    assert!(
        input_chunks.len() > files.len(),
        "several row groups per input"
    );
    let copied = out.finish().expect("finish");
    assert_eq!(copied.num_rows, 3100);

    // The same rows through BaseFileWriter, renamed as clustering renames them.
    let all: Vec<RecordBatch> = inputs
        .iter()
        .flatten()
        .map(|b| renamed(b, NEW_NAME))
        .collect();
    let decoded = write(&schema, &options, &all);

    // Row-exact, `_hoodie_file_name` included (every row names the new file).
    assert_eq!(rows(copied.data.clone()), rows(decoded.clone()));
    let names = rows(copied.data.clone());
    assert!(names[0]
        .column(4)
        .as_string::<i32>()
        .iter()
        .all(|n| n == Some(NEW_NAME)));

    // Every Hudi footer key as BaseFileWriter writes it: bloom filter, its type, min/max key, schemas.
    let copied_footer = read_footer(&copied.data).expect("footer");
    let decoded_footer = read_footer(&decoded).expect("footer");
    assert_eq!(copied_footer.key_values, decoded_footer.key_values);
    let bloom = copied_footer
        .bloom_filter()
        .expect("bloom")
        .expect("a filter");
    for b in inputs.iter().flatten() {
        for key in b.column(2).as_string::<i32>().iter().flatten() {
            assert!(bloom.might_contain(key.as_bytes()), "{key}");
        }
    }
    assert_eq!(
        copied.min_record_key.as_deref(),
        Some("_hoodie_record_key-0-0000")
    );
    assert_eq!(
        copied.max_record_key.as_deref(),
        Some("_hoodie_record_key-2-0899")
    );

    // The row groups were copied: each input row group is one output row group whose column chunks are
    // the input's bytes, but for the rewritten file name.
    let output_chunks = chunks(&copied.data);
    assert_eq!(output_chunks.len(), input_chunks.len());
    for (rg, (got, want)) in output_chunks.iter().zip(&input_chunks).enumerate() {
        assert_eq!(got.len(), want.len());
        for (c, (got, want)) in got.iter().zip(want).enumerate() {
            if c == 4 {
                assert_ne!(got, want, "row group {rg}: _hoodie_file_name rewritten");
            } else {
                assert_eq!(got, want, "row group {rg} column {c} copied");
            }
        }
    }
}

#[test]
fn another_codec_or_schema_is_not_copied() {
    let (schema, options) = (schema(), options());
    let rows = [batch(&schema, 0, 0..10)];
    let snappy = BaseFileOptions {
        codec: CompressionCodec::Snappy,
        ..options.clone()
    };
    let data = write(&schema, &snappy, &rows);
    assert!(CopyInput::open(data.clone(), "a", &schema, &options, 0)
        .expect("open")
        .is_none());
    assert!(CopyInput::open(data, "a", &schema, &snappy, 0)
        .expect("open")
        .is_some());

    let wider = TableSchema::try_new(
        AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"id","type":"string"},{"name":"v","type":"long"},
                {"name":"w","type":["null","long"],"default":null}]}"#,
        )
        .expect("avro"),
    )
    .expect("schema");
    let data = write(&schema, &options, &rows);
    assert!(CopyInput::open(data.clone(), "b", &wider, &options, 0)
        .expect("open")
        .is_none());
    assert!(CopyInput::open(data, "b", &schema, &options, 0)
        .expect("open")
        .is_some());
}
