//! Writes Hudi base files: Parquet with the five meta columns first and the footer keys Hudi's own writer
//! adds (`parquet.avro.schema`, the bloom filter, its type code, min/max record key).
//!
//! Invariants:
//! - the bloom filter covers every record key in the file, added in row order, so that a Spark upsert with
//!   the BLOOM index finds every key (a false negative there means a duplicate record);
//! - min/max keys use Java `String.compareTo` order (UTF-16 code units), as Hudi compares them;
//! - [`BaseFileWriter::try_new`] builds the whole file in memory and hands it back as bytes (its exact
//!   size goes into the write stat); [`BaseFileWriter::try_new_streaming`] writes into any sink instead,
//!   each row group as it closes, with a filter sized up front for an upper bound of the key count (the
//!   footer's layout and keys are the same; the filter is the one Hudi writes for that `num_entries`).

use std::cmp::Ordering;
use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::{ColumnPath, SchemaDescriptor};

use super::bloom::{BloomError, BloomFilter, BloomSizing};
use super::codec::CompressionCodec;
use super::BaseFileError;
use crate::schema::meta::{COMMIT_SEQNO_COL, RECORD_KEY_COL};

/// Footer key of the serialised bloom filter.
pub const BLOOM_FILTER_KEY: &str = "org.apache.hudi.bloomfilter";
/// Footer key naming a dynamic bloom filter's type.
pub const BLOOM_FILTER_TYPE_CODE_KEY: &str = "hoodie_bloom_filter_type_code";
/// Footer key of the smallest record key.
pub const MIN_RECORD_KEY: &str = "hoodie_min_record_key";
/// Footer key of the largest record key.
pub const MAX_RECORD_KEY: &str = "hoodie_max_record_key";
/// Footer key of the Avro schema with meta fields (written by parquet-avro in Hudi).
pub const AVRO_SCHEMA_KEY: &str = "parquet.avro.schema";
/// Footer key naming the object model (parquet-avro writes `avro`).
pub const WRITER_MODEL_KEY: &str = "writer.model.name";

/// Index of `_hoodie_record_key` among the meta columns.
const RECORD_KEY_INDEX: usize = 2;

/// How base files are encoded.
#[derive(Debug, Clone)]
pub struct BaseFileOptions {
    /// `hoodie.parquet.compression.codec`.
    pub codec: CompressionCodec,
    /// `hoodie.parquet.block.size`: target row-group size in bytes.
    pub row_group_bytes: usize,
    /// `hoodie.parquet.page.size`: target data page size in bytes.
    pub page_bytes: usize,
    /// How each file's bloom filter is sized.
    pub bloom: BloomSizing,
    /// Data columns written without a dictionary (dotted paths): the record key fields, unique in a file
    /// like `_hoodie_record_key` and `_hoodie_commit_seqno`, which never get one.
    pub plain_columns: Vec<String>,
}

impl Default for BaseFileOptions {
    fn default() -> Self {
        Self {
            codec: CompressionCodec::default(),
            row_group_bytes: 120 * 1024 * 1024,
            page_bytes: 1024 * 1024,
            bloom: BloomSizing::default(),
            plain_columns: Vec::new(),
        }
    }
}

/// A finished base file.
#[derive(Debug, Clone)]
pub struct WrittenBaseFile {
    /// The complete Parquet file.
    pub data: Bytes,
    /// Rows in the file.
    pub num_rows: u64,
    /// Smallest record key (Java order); `None` for an empty file.
    pub min_record_key: Option<String>,
    /// Largest record key (Java order); `None` for an empty file.
    pub max_record_key: Option<String>,
}

/// Java `String.compareTo`: lexicographic over UTF-16 code units.
pub fn java_string_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The Parquet writer properties of every base file (shared with clustering's column-chunk copy, whose
/// freshly written columns must be encoded as the writer would encode them).
pub(crate) fn writer_properties(options: &BaseFileOptions) -> WriterProperties {
    let mut props = WriterProperties::builder()
        .set_compression(options.codec.to_parquet())
        .set_max_row_group_bytes(Some(options.row_group_bytes.max(1)))
        .set_data_page_size_limit(options.page_bytes.max(1))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(format!("msk-hudi-sink {}", env!("CARGO_PKG_VERSION")))
        // Unique per row: a dictionary would only be built to be thrown away (or, in a small file, kept
        // and larger than the plain values).
        .set_column_dictionary_enabled(ColumnPath::from(COMMIT_SEQNO_COL), false)
        .set_column_dictionary_enabled(ColumnPath::from(RECORD_KEY_COL), false);
    for column in &options.plain_columns {
        let path = ColumnPath::new(column.split('.').map(String::from).collect());
        props = props.set_column_dictionary_enabled(path, false);
    }
    props.build()
}

/// Checks `keys` (a file's `_hoodie_record_key` values, in row order) and widens the `min`/`max` range (Java
/// order) with them; a null or empty key is an error, as Hudi cannot index it.
pub(crate) fn track_keys(
    keys: &StringArray,
    min: &mut Option<String>,
    max: &mut Option<String>,
) -> Result<(), BaseFileError> {
    for i in 0..keys.len() {
        if keys.is_null(i) {
            return Err(BaseFileError::Schema {
                reason: format!("{RECORD_KEY_COL} is null in row {i}"),
            });
        }
        let key = keys.value(i);
        if key.is_empty() {
            return Err(BaseFileError::Schema {
                reason: format!("record key {key:?}: {}", BloomError::EmptyKey),
            });
        }
        if min
            .as_deref()
            .is_none_or(|m| java_string_cmp(key, m) == Ordering::Less)
        {
            *min = Some(key.to_string());
        }
        if max
            .as_deref()
            .is_none_or(|m| java_string_cmp(key, m) == Ordering::Greater)
        {
            *max = Some(key.to_string());
        }
    }
    Ok(())
}

/// A filter sized by `sizing` for `count` keys holding every key of `columns` (record-key columns, in row
/// order): the filter of a file written whole.
pub(crate) fn bloom_for_keys(
    sizing: &BloomSizing,
    count: u64,
    columns: &[ArrayRef],
) -> Result<BloomFilter, BaseFileError> {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let mut bloom = sizing
        .filter_for(count)
        .map_err(|e| BaseFileError::Schema {
            reason: format!("bloom filter for {count} keys: {e}"),
        })?;
    for column in columns {
        let keys = column
            .as_string_opt::<i32>()
            .ok_or_else(|| BaseFileError::Schema {
                reason: format!("{RECORD_KEY_COL} must be a Utf8 column"),
            })?;
        for key in keys.iter().flatten() {
            bloom
                .add(key.as_bytes())
                .map_err(|e| BaseFileError::Schema {
                    reason: format!("record key {key:?}: {e}"),
                })?;
        }
    }
    Ok(bloom)
}

/// The Hudi footer keys of a file, in the order Hudi's writer adds them.
pub(crate) fn footer_key_values(
    avro_schema_json: String,
    bloom: &BloomFilter,
    min: Option<&str>,
    max: Option<&str>,
) -> Vec<KeyValue> {
    let mut kv = vec![
        (AVRO_SCHEMA_KEY, avro_schema_json),
        (WRITER_MODEL_KEY, "avro".to_string()),
        (BLOOM_FILTER_KEY, bloom.to_base64()),
    ];
    if let Some(code) = bloom.type_code() {
        kv.push((BLOOM_FILTER_TYPE_CODE_KEY, code.to_string()));
    }
    if let (Some(min), Some(max)) = (min, max) {
        kv.push((MIN_RECORD_KEY, min.to_string()));
        kv.push((MAX_RECORD_KEY, max.to_string()));
    }
    kv.into_iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v))
        .collect()
}

/// Where the record keys go.
enum Keys {
    /// The record-key columns written so far: the filter is built at the end, when the key count is known.
    Kept(BloomSizing, Vec<ArrayRef>),
    /// A filter sized up front; keys are added as rows are written.
    Filter(BloomFilter),
}

/// What a finished streamed file holds (its bytes went to the sink).
#[derive(Debug, Clone)]
pub struct StreamedBaseFile {
    /// Rows in the file.
    pub num_rows: u64,
    /// Smallest record key (Java order); `None` for an empty file.
    pub min_record_key: Option<String>,
    /// Largest record key (Java order); `None` for an empty file.
    pub max_record_key: Option<String>,
}

/// Streams record batches (meta columns first) into one Parquet base file, in memory (`W = Vec<u8>`) or
/// into any sink.
pub struct BaseFileWriter<W: Write + Send = Vec<u8>> {
    writer: ArrowWriter<W>,
    keys: Keys,
    min_key: Option<String>,
    max_key: Option<String>,
    num_rows: u64,
    avro_schema_json: String,
}

impl<W: Write + Send> std::fmt::Debug for BaseFileWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseFileWriter")
            .field("num_rows", &self.num_rows)
            .finish_non_exhaustive()
    }
}

impl BaseFileWriter {
    /// A writer for files of `schema` (meta columns first), encoded with `parquet_schema` (which fixes
    /// the physical types parquet-avro would use) and footed with `avro_schema_json` (with meta fields).
    pub fn try_new(
        schema: SchemaRef,
        parquet_schema: SchemaDescriptor,
        avro_schema_json: String,
        options: &BaseFileOptions,
    ) -> Result<Self, BaseFileError> {
        let keys = Keys::Kept(options.bloom.clone(), Vec::new());
        Self::build(
            Vec::new(),
            schema,
            parquet_schema,
            avro_schema_json,
            options,
            keys,
        )
    }

    /// Adds the Hudi footer keys and closes the file.
    pub fn finish(self) -> Result<WrittenBaseFile, BaseFileError> {
        let (data, file) = self.finish_into()?;
        Ok(WrittenBaseFile {
            data: Bytes::from(data),
            num_rows: file.num_rows,
            min_record_key: file.min_record_key,
            max_record_key: file.max_record_key,
        })
    }
}

impl<W: Write + Send> BaseFileWriter<W> {
    /// A writer into `sink` (row groups reach it as they close), whose bloom filter is sized for `max_keys`
    /// record keys, an upper bound of the rows to come (more keys only raise the false-positive rate; a
    /// dynamic filter grows).
    pub fn try_new_streaming(
        sink: W,
        schema: SchemaRef,
        parquet_schema: SchemaDescriptor,
        avro_schema_json: String,
        options: &BaseFileOptions,
        max_keys: u64,
    ) -> Result<Self, BaseFileError> {
        let count = usize::try_from(max_keys).unwrap_or(usize::MAX);
        let filter = options
            .bloom
            .filter_for(count)
            .map_err(|e| BaseFileError::Schema {
                reason: format!("bloom filter for {count} keys: {e}"),
            })?;
        Self::build(
            sink,
            schema,
            parquet_schema,
            avro_schema_json,
            options,
            Keys::Filter(filter),
        )
    }

    fn build(
        sink: W,
        schema: SchemaRef,
        parquet_schema: SchemaDescriptor,
        avro_schema_json: String,
        options: &BaseFileOptions,
        keys: Keys,
    ) -> Result<Self, BaseFileError> {
        match schema.fields().get(RECORD_KEY_INDEX) {
            Some(f) if f.name() == RECORD_KEY_COL => {}
            _ => {
                return Err(BaseFileError::Schema {
                    reason: format!("column {RECORD_KEY_INDEX} must be {RECORD_KEY_COL}"),
                })
            }
        }
        let props = writer_properties(options);
        let writer_options = ArrowWriterOptions::new()
            .with_properties(props)
            .with_skip_arrow_metadata(true)
            .with_parquet_schema(parquet_schema);
        let writer =
            ArrowWriter::try_new_with_options(sink, schema, writer_options).map_err(|source| {
                BaseFileError::Parquet {
                    context: "create writer".into(),
                    source,
                }
            })?;
        Ok(Self {
            writer,
            keys,
            min_key: None,
            max_key: None,
            num_rows: 0,
            avro_schema_json,
        })
    }

    /// Appends rows; every record key goes into the bloom filter and the min/max range.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), BaseFileError> {
        let keys = batch
            .column(RECORD_KEY_INDEX)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| BaseFileError::Schema {
                reason: format!("{RECORD_KEY_COL} must be a Utf8 column"),
            })?;
        track_keys(keys, &mut self.min_key, &mut self.max_key)?;
        match &mut self.keys {
            Keys::Kept(_, columns) => columns.push(batch.column(RECORD_KEY_INDEX).clone()),
            Keys::Filter(bloom) => {
                for key in keys.iter().flatten() {
                    bloom
                        .add(key.as_bytes())
                        .map_err(|e| BaseFileError::Schema {
                            reason: format!("record key {key:?}: {e}"),
                        })?;
                }
            }
        }
        self.writer
            .write(batch)
            .map_err(|source| BaseFileError::Parquet {
                context: "write batch".into(),
                source,
            })?;
        self.num_rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Bytes written so far plus the buffered row group: the file size if it were closed now (roughly).
    pub fn estimated_size(&self) -> usize {
        self.writer.bytes_written() + self.writer.in_progress_size()
    }

    /// Rows written so far.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// The file's filter: sized for its key count (or the bound given up front), every key added in row
    /// order.
    fn bloom_filter(&mut self) -> Result<BloomFilter, BaseFileError> {
        let (sizing, columns) = match &mut self.keys {
            Keys::Filter(bloom) => return Ok(bloom.clone()),
            Keys::Kept(sizing, columns) => (sizing, std::mem::take(columns)),
        };
        bloom_for_keys(sizing, self.num_rows, &columns)
    }

    /// The sink, to take the bytes of the row groups closed so far (they are only appended to it).
    pub fn sink_mut(&mut self) -> &mut W {
        self.writer.inner_mut()
    }

    /// Adds the Hudi footer keys, closes the file and hands back the sink, which then holds (or has
    /// received) the whole file.
    pub fn finish_into(mut self) -> Result<(W, StreamedBaseFile), BaseFileError> {
        let bloom = self.bloom_filter()?;
        let kv = footer_key_values(
            std::mem::take(&mut self.avro_schema_json),
            &bloom,
            self.min_key.as_deref(),
            self.max_key.as_deref(),
        );
        for kv in kv {
            self.writer.append_key_value_metadata(kv);
        }
        let sink = self
            .writer
            .into_inner()
            .map_err(|source| BaseFileError::Parquet {
                context: "close file".into(),
                source,
            })?;
        Ok((
            sink,
            StreamedBaseFile {
                num_rows: self.num_rows,
                min_record_key: self.min_key,
                max_record_key: self.max_key,
            },
        ))
    }
}

/// Shared handle type for the Arrow schema with meta columns.
pub type MetaSchemaRef = Arc<arrow_schema::Schema>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn java_order_differs_from_utf8_for_supplementary_characters() {
        // U+FF61 (3 UTF-8 bytes, one UTF-16 unit 0xFF61) vs U+1F600 (surrogates 0xD83D...).
        let bmp_high = "\u{FF61}";
        let emoji = "\u{1F600}";
        assert_eq!(bmp_high.cmp(emoji), Ordering::Less); // UTF-8 byte order
        assert_eq!(java_string_cmp(bmp_high, emoji), Ordering::Greater); // Java order
        assert_eq!(java_string_cmp("a", "b"), Ordering::Less);
        assert_eq!(java_string_cmp("é", "e"), Ordering::Greater);
    }

    fn writer_inputs() -> (crate::write::TableSchema, BaseFileOptions, Vec<RecordBatch>) {
        use arrow_array::Int64Array;
        let avro = crate::schema::avro::AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"id","type":"string"},{"name":"v","type":"long"}]}"#,
        )
        .expect("avro");
        let schema = crate::write::TableSchema::try_new(avro).expect("schema");
        let batches = (0..3)
            .map(|b| {
                let rows = 0..1000u64;
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
            })
            .collect();
        let options = BaseFileOptions {
            row_group_bytes: 8 * 1024,
            ..BaseFileOptions::default()
        };
        (schema, options, batches)
    }

    /// Streams into a sink drained after every batch; returns the drained bytes and how many were taken
    /// before the file was closed.
    fn streamed(max_keys: u64) -> (Vec<u8>, usize) {
        let (schema, options, batches) = writer_inputs();
        let mut writer = BaseFileWriter::try_new_streaming(
            Vec::new(),
            schema.file.clone(),
            schema.parquet.clone(),
            schema.avro_with_meta_json.clone(),
            &options,
            max_keys,
        )
        .expect("writer");
        let mut out = Vec::new();
        for batch in &batches {
            writer.write(batch).expect("write");
            out.append(writer.sink_mut());
        }
        let before_close = out.len();
        let (rest, file) = writer.finish_into().expect("finish");
        out.extend(rest);
        assert_eq!(file.num_rows, 3000);
        (out, before_close)
    }

    fn footer_keys(data: Vec<u8>) -> BTreeMap<String, String> {
        crate::base_file::reader::read_footer(&Bytes::from(data))
            .expect("footer")
            .key_values
    }

    #[test]
    fn a_streamed_file_is_the_in_memory_file_byte_for_byte() {
        let (schema, options, batches) = writer_inputs();
        let mut whole = BaseFileWriter::try_new(
            schema.file.clone(),
            schema.parquet.clone(),
            schema.avro_with_meta_json.clone(),
            &options,
        )
        .expect("writer");
        for batch in &batches {
            whole.write(batch).expect("write");
        }
        let whole = whole.finish().expect("finish");
        let (data, before_close) = streamed(3000);
        assert_eq!(data, whole.data.to_vec());
        // Row groups reached the sink as they closed, long before the footer.
        assert!(
            before_close > data.len() / 2,
            "{before_close} of {}",
            data.len()
        );

        // A bound above the row count: the same footer keys and key range, a filter for the bound.
        let (bounded, _) = streamed(5000);
        let (want, got) = (footer_keys(data), footer_keys(bounded));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>()
        );
        for key in [
            MIN_RECORD_KEY,
            MAX_RECORD_KEY,
            AVRO_SCHEMA_KEY,
            BLOOM_FILTER_TYPE_CODE_KEY,
        ] {
            assert_eq!(want.get(key), got.get(key), "{key}");
        }
        assert_ne!(want.get(BLOOM_FILTER_KEY), got.get(BLOOM_FILTER_KEY));
    }
}
