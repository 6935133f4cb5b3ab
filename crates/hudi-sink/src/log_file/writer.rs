//! Writing one new log file: what a deltacommit appends to one file slice. Every write opens a new version
//! (object stores cannot append), so a file holds the instant's blocks only: one AVRO_DATA block with the
//! upserts and/or one DELETE block, both with header {INSTANT_TIME, SCHEMA}, as Spark's append handle writes
//! them. A batch that deletes keys and then re-creates them puts a DELETE block of those keys first, so that
//! readers, which apply blocks in order, drop the slice's log versions before the re-created ones. The bytes
//! are built whole in memory, to be stored with one conditional put.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};

use super::avro_block::encode_avro_content;
use super::block::{encode_block, BlockType, HeaderKey};
use super::command_block::encode_rollback_block;
use super::delete_block::{encode_delete_content, DeleteRecord};
use super::error::{ContentError, LogFileError};
use crate::schema::avro::AvroSchema;
use crate::schema::meta::{with_meta_fields, COMMIT_TIME_COL, FILE_NAME_COL};
use crate::table::instant::InstantTime;

/// Builds the bytes of one log file written by one instant.
#[derive(Debug)]
pub struct LogFileWriter {
    instant_time: InstantTime,
    file_id: String,
    /// The header SCHEMA: table schema with the meta fields.
    schema: AvroSchema,
    schema_json: String,
    /// Deletes applied before the data block (keys the batch deletes and then re-creates).
    leading_deletes: Option<Vec<u8>>,
    data: Option<Vec<u8>>,
    deletes: Option<Vec<u8>>,
}

impl LogFileWriter {
    /// A writer for file group `file_id` at `instant_time`; `table_schema` is the table's Avro schema (with or
    /// without the meta fields; they are put first either way).
    pub fn new(instant_time: InstantTime, file_id: &str, table_schema: &AvroSchema) -> Self {
        // Decimals as Spark declares them (`schema::spark_form`), so that Hudi's Java merge can rewrite base
        // rows and log records into one schema.
        let schema = crate::schema::spark_form::spark_form(&with_meta_fields(table_schema));
        let schema_json = schema.to_json_string();
        Self {
            instant_time,
            file_id: file_id.to_string(),
            schema,
            schema_json,
            leading_deletes: None,
            data: None,
            deletes: None,
        }
    }

    /// The upserted rows: batches with the meta columns then the data columns (the base-file layout), whose
    /// `_hoodie_commit_time` is this instant and `_hoodie_file_name` the file id (logs store the id, not a
    /// file name). Replaces an earlier call's rows.
    pub fn with_records(mut self, batches: &[RecordBatch]) -> Result<Self, LogFileError> {
        let encode = |source| LogFileError::Encode {
            block_type: BlockType::AvroData,
            source,
        };
        for batch in batches {
            check_meta(batch, COMMIT_TIME_COL, self.instant_time.as_str()).map_err(encode)?;
            check_meta(batch, FILE_NAME_COL, &self.file_id).map_err(encode)?;
        }
        self.data = Some(encode_avro_content(&self.schema, batches).map_err(encode)?);
        Ok(self)
    }

    /// The deleted keys. Replaces an earlier call's deletes.
    pub fn with_deletes(mut self, records: &[DeleteRecord]) -> Result<Self, LogFileError> {
        self.deletes = Some(encode_deletes(records)?);
        Ok(self)
    }

    /// Keys deleted before the data block is applied: those the batch deletes and then re-creates, whose
    /// earlier log versions the delete removes. Replaces an earlier call's leading deletes.
    pub fn with_leading_deletes(mut self, records: &[DeleteRecord]) -> Result<Self, LogFileError> {
        self.leading_deletes = Some(encode_deletes(records)?);
        Ok(self)
    }

    /// The file: the leading delete block, the data block, then the delete block.
    pub fn finish(self) -> Result<Vec<u8>, LogFileError> {
        if self.data.is_none() && self.deletes.is_none() && self.leading_deletes.is_none() {
            return Err(LogFileError::Empty);
        }
        let header = [
            (HeaderKey::InstantTime, self.instant_time.as_str()),
            (HeaderKey::Schema, self.schema_json.as_str()),
        ];
        let mut out = Vec::new();
        if let Some(content) = &self.leading_deletes {
            out.extend(encode_block(BlockType::Delete, &header, content));
        }
        if let Some(content) = &self.data {
            out.extend(encode_block(BlockType::AvroData, &header, content));
        }
        if let Some(content) = &self.deletes {
            out.extend(encode_block(BlockType::Delete, &header, content));
        }
        Ok(out)
    }
}

fn encode_deletes(records: &[DeleteRecord]) -> Result<Vec<u8>, LogFileError> {
    encode_delete_content(records).map_err(|source| LogFileError::Encode {
        block_type: BlockType::Delete,
        source,
    })
}

/// Every value of meta column `column` (when the batch has it) equals `expected`.
fn check_meta(batch: &RecordBatch, column: &str, expected: &str) -> Result<(), ContentError> {
    let Some(array) = batch.column_by_name(column) else {
        return Ok(());
    };
    let mismatch = |reason: String| ContentError::Mismatch {
        path: format!("$.{column}"),
        reason,
    };
    let values = array
        .as_string_opt::<i32>()
        .ok_or_else(|| mismatch(format!("a {} column, expected Utf8", array.data_type())))?;
    for row in 0..values.len() {
        if values.is_null(row) || values.value(row) != expected {
            let found = if values.is_null(row) {
                "null"
            } else {
                values.value(row)
            };
            return Err(mismatch(format!(
                "row {row} holds {found:?}, expected {expected:?}"
            )));
        }
    }
    Ok(())
}

/// A log file holding one rollback command block: `rollback_instant` neutralises the blocks that
/// `target_instant` appended to the slice (name it with [`super::name::UNKNOWN_WRITE_TOKEN`], as Hudi does).
pub fn rollback_log_file(rollback_instant: &InstantTime, target_instant: &InstantTime) -> Vec<u8> {
    encode_rollback_block(rollback_instant, target_instant)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_file::avro_block::tests::{all_types_batch, ALL_TYPES};
    use crate::log_file::block::read_blocks;
    use crate::log_file::reader::{read_log_file, DataBlockFormat, LogBlock};

    fn instant(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("instant")
    }

    #[test]
    fn data_and_delete_blocks_read_back() {
        let table = AvroSchema::parse(ALL_TYPES).expect("schema");
        let batch = all_types_batch();
        let deletes = [DeleteRecord::new("9", ""), DeleteRecord::new("8", "")];
        let bytes = LogFileWriter::new(instant("20250101000000000"), "f-0", &table)
            .with_records(std::slice::from_ref(&batch))
            .expect("records")
            .with_deletes(&deletes)
            .expect("deletes")
            .finish()
            .expect("finish");
        let raw = read_blocks("f", &bytes).expect("frame");
        for block in &raw {
            let keys: Vec<HeaderKey> = block.header.keys().copied().collect();
            assert_eq!(keys, [HeaderKey::InstantTime, HeaderKey::Schema]);
            assert!(block.footer.is_empty());
        }
        let blocks = read_log_file("f", &bytes).expect("read");
        assert_eq!(blocks.len(), 2);
        match &blocks[0] {
            LogBlock::Data {
                instant_time,
                format,
                schema,
                records,
            } => {
                assert_eq!(instant_time.as_str(), "20250101000000000");
                assert_eq!(*format, DataBlockFormat::Avro);
                // The header declares decimals in Spark's `fixed` form; the values read back the same.
                let spark = crate::schema::spark_form::spark_form(&with_meta_fields(&table));
                assert_eq!(**schema, spark);
                assert_eq!(records, &batch);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            blocks[1],
            LogBlock::Delete {
                instant_time: instant("20250101000000000"),
                records: deletes.to_vec(),
            }
        );
    }

    #[test]
    fn leading_deletes_come_before_the_data_block() {
        let table = AvroSchema::parse(ALL_TYPES).expect("schema");
        let batch = all_types_batch();
        let leading = [DeleteRecord::new("7", "")];
        let deletes = [DeleteRecord::new("9", "")];
        let bytes = LogFileWriter::new(instant("20250101000000000"), "f-0", &table)
            .with_records(std::slice::from_ref(&batch))
            .expect("records")
            .with_deletes(&deletes)
            .expect("deletes")
            .with_leading_deletes(&leading)
            .expect("leading deletes")
            .finish()
            .expect("finish");
        let blocks = read_log_file("f", &bytes).expect("read");
        let delete = |records: &[DeleteRecord]| LogBlock::Delete {
            instant_time: instant("20250101000000000"),
            records: records.to_vec(),
        };
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0], delete(&leading));
        assert!(matches!(&blocks[1], LogBlock::Data { records, .. } if records == &batch));
        assert_eq!(blocks[2], delete(&deletes));
        // Leading deletes alone make a file too.
        let only = LogFileWriter::new(instant("20250101000000000"), "f-0", &table)
            .with_leading_deletes(&leading)
            .expect("leading deletes")
            .finish()
            .expect("finish");
        assert_eq!(read_log_file("f", &only).expect("read"), [delete(&leading)]);
    }

    #[test]
    fn meta_columns_must_name_the_instant_and_the_file_id() {
        let table = AvroSchema::parse(ALL_TYPES).expect("schema");
        let batch = all_types_batch();
        let wrong_id = LogFileWriter::new(instant("20250101000000000"), "g-0", &table)
            .with_records(std::slice::from_ref(&batch));
        assert!(matches!(wrong_id, Err(LogFileError::Encode { .. })));
        let wrong_instant = LogFileWriter::new(instant("20250101000000001"), "f-0", &table)
            .with_records(std::slice::from_ref(&batch));
        assert!(matches!(wrong_instant, Err(LogFileError::Encode { .. })));
        let empty = LogFileWriter::new(instant("20250101000000000"), "f-0", &table).finish();
        assert!(matches!(empty, Err(LogFileError::Empty)));
    }

    #[test]
    fn a_rollback_file_reads_back_as_its_command() {
        let bytes = rollback_log_file(&instant("20250126040936578"), &instant("20250126040826878"));
        assert_eq!(
            read_log_file("f", &bytes).expect("read"),
            [LogBlock::Rollback {
                instant_time: instant("20250126040936578"),
                target_instant_time: instant("20250126040826878"),
            }]
        );
    }
}
