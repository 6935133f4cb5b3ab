//! PARQUET_DATA_BLOCK content: a complete Parquet file (`PAR1 … PAR1`) with no prefix, written by Spark when
//! `hoodie.logfile.data.block.format=parquet`. Read only: this writer emits Avro blocks, the one data block
//! every engine reads.

use arrow_array::RecordBatch;
use bytes::Bytes;

use super::error::ContentError;
use crate::base_file::reader::read_base_file;

/// Decodes the Parquet file in `content` into one record batch (its own Arrow schema; the header SCHEMA
/// names the same columns in Avro).
pub fn decode_parquet_content(content: &[u8]) -> Result<RecordBatch, ContentError> {
    let (schema, batches) = read_base_file(Bytes::copy_from_slice(content))?;
    Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;

    #[test]
    fn a_parquet_file_reads_back_and_garbage_is_an_error() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("a"), None])),
            ],
        )
        .expect("batch");
        let mut file = Vec::new();
        let mut w = ArrowWriter::try_new(&mut file, schema, None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        assert_eq!(decode_parquet_content(&file).expect("decode"), batch);
        assert!(matches!(
            decode_parquet_content(&file[..file.len() - 3]),
            Err(ContentError::Parquet(_))
        ));
        assert!(decode_parquet_content(b"PAR1").is_err());
    }
}
