//! AVRO_DATA_BLOCK content: int32 block version 3, int32 record count, then per record an int32 length and
//! the raw Avro binary datum (no container, no codec) under the header's SCHEMA.
//!
//! The schema is the table schema with the five `_hoodie_*` meta fields first (what the base files' footer
//! holds), with the table's record name and namespace, because Java resolves a block's writer schema
//! against the table schema by name. Encoding takes the record batches the base-file path builds (meta
//! columns, then data columns, Arrow types as [`crate::avro::arrow`] maps them) and writes each row as a
//! datum with [`DatumEncoder`]; decoding ([`DatumDecoder`]) gives the same Arrow schema back, so a
//! compaction can merge log records with base-file rows column by column. This module adds Hudi's framing
//! around the datums.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;

use super::datum::Cursor;
use super::error::ContentError;
use crate::avro::arrow::{avro_to_arrow, DatumDecoder, DatumEncoder};
use crate::avro::schema::{AvroSchema, RecordSchema};

/// The content version Hudi 0.14/0.15 write and hudi-rs requires.
pub const AVRO_BLOCK_VERSION: i32 = 3;

fn record_of(schema: &AvroSchema) -> Result<&RecordSchema, ContentError> {
    schema.as_record().ok_or_else(|| ContentError::Mismatch {
        path: "$".into(),
        reason: format!(
            "a data block schema is a record, found {}",
            schema.describe()
        ),
    })
}

/// Encodes the rows of `batches` as AVRO_DATA_BLOCK content under `schema` (the header SCHEMA: the table
/// schema with the meta fields). Each batch's columns must be the record's fields, by name and in order.
pub fn encode_avro_content(
    schema: &AvroSchema,
    batches: &[RecordBatch],
) -> Result<Vec<u8>, ContentError> {
    let names = schema.validate()?;
    let record = record_of(schema)?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let count = i32::try_from(rows).map_err(|_| ContentError::Mismatch {
        path: "$".into(),
        reason: format!("{rows} records do not fit one block's int32 count"),
    })?;
    let mut out = Vec::new();
    out.extend_from_slice(&AVRO_BLOCK_VERSION.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    let enc = DatumEncoder::new(names, record);
    let mut datum = Vec::new();
    for batch in batches {
        let columns = enc.columns(batch)?;
        for row in 0..batch.num_rows() {
            datum.clear();
            enc.encode(&columns, row, &mut datum)?;
            let len = i32::try_from(datum.len()).map_err(|_| ContentError::Mismatch {
                path: "$".into(),
                reason: format!("a record of {} bytes exceeds an int32 length", datum.len()),
            })?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&datum);
        }
    }
    Ok(out)
}

/// Decodes AVRO_DATA_BLOCK content written under `schema` (the header SCHEMA) into one record batch whose
/// Arrow schema is [`avro_to_arrow`] of it.
pub fn decode_avro_content(
    schema: &AvroSchema,
    content: &[u8],
) -> Result<RecordBatch, ContentError> {
    let names = schema.validate()?;
    let record = record_of(schema)?;
    let arrow_schema = Arc::new(avro_to_arrow(schema)?);
    let mut c = Cursor::new(content);
    let version = c.be_i32("the block version")?;
    if version != AVRO_BLOCK_VERSION {
        return Err(ContentError::UnsupportedVersion {
            found: version,
            expected: AVRO_BLOCK_VERSION,
        });
    }
    let count = c.be_len("the record count")?;
    if count > c.remaining() / 4 {
        return Err(c.truncated("the records (count exceeds what the content holds)"));
    }
    let mut dec = DatumDecoder::new(names, record, arrow_schema, count);
    for _ in 0..count {
        let len = c.be_len("a record length")?;
        let base = c.offset();
        let bytes = c.take(len, "a record")?;
        dec.append(bytes, base)?;
    }
    if c.remaining() > 0 {
        return Err(c.corrupt(format!("{} bytes after the last record", c.remaining())));
    }
    Ok(dec.finish()?)
}

/// The Arrow schema of a data block written under `schema`.
pub fn block_arrow_schema(schema: &AvroSchema) -> Result<Schema, ContentError> {
    Ok(avro_to_arrow(schema)?)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::record::decode::RecordDecoder;
    use crate::schema::meta::with_meta_fields;

    /// Every Avro type the base-file path maps, including a named-type reference and `[T, "null"]` unions.
    pub(crate) const ALL_TYPES: &str = r#"{"type":"record","name":"all_record","namespace":"hoodie.all","fields":[
      {"name":"id","type":"int"},
      {"name":"name","type":["null","string"],"default":null},
      {"name":"rev","type":["string","null"]},
      {"name":"flag","type":["null","boolean"],"default":null},
      {"name":"l","type":"long"},
      {"name":"f","type":"float"},
      {"name":"d","type":["null","double"],"default":null},
      {"name":"bin","type":["null","bytes"],"default":null},
      {"name":"fx","type":{"type":"fixed","name":"fx","size":4}},
      {"name":"fx2","type":["null","fx"],"default":null},
      {"name":"en","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
      {"name":"dec","type":["null",{"type":"fixed","name":"dec","size":5,"logicalType":"decimal","precision":10,"scale":5}],"default":null},
      {"name":"bdec","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":2}},
      {"name":"date","type":["null",{"type":"int","logicalType":"date"}],"default":null},
      {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
      {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
      {"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
      {"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},
      {"name":"ltsms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
      {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
      {"name":"uuid","type":{"type":"string","logicalType":"uuid"}},
      {"name":"st","type":["null",{"type":"record","name":"st","fields":[
        {"name":"a","type":["null","string"],"default":null},
        {"name":"child","type":["null",{"type":"record","name":"child","fields":[{"name":"x","type":["null","double"],"default":null}]}],"default":null}]}],"default":null},
      {"name":"arr","type":["null",{"type":"array","items":["null",{"type":"record","name":"arr","fields":[{"name":"f1","type":["null","string"],"default":null},{"name":"f2","type":["null","int"],"default":null}]}]}],"default":null},
      {"name":"longs","type":{"type":"array","items":"long"}},
      {"name":"m","type":["null",{"type":"map","values":["null",{"type":"record","name":"m","fields":[{"name":"v","type":["null","double"],"default":null}]}]}],"default":null},
      {"name":"mi","type":{"type":"map","values":["null","int"]}}
    ]}"#;

    /// Rows of [`ALL_TYPES`] with the meta fields, as JSON values for the record decoder.
    pub(crate) const ALL_TYPES_ROWS: [&str; 3] = [
        r#"{"_hoodie_commit_time":"20250101000000000","_hoodie_commit_seqno":"20250101000000000_0_1","_hoodie_record_key":"1","_hoodie_partition_path":"","_hoodie_file_name":"f-0",
           "id":1,"name":"dé","rev":"r","flag":true,"l":-9007199254740993,"f":1.5,"d":-2.25,"bin":"AAH/","fx":"AQIDBA==","fx2":"/////w==","en":"B",
           "dec":"-12345.67891","bdec":"-0.01","date":19000,"tms":86399999,"tus":1,"tsms":1700000000123,"ts":-1,"ltsms":5,"lts":1700000000123456,
           "uuid":"0b3c4d5e-0000-4000-8000-000000000001","st":{"a":"x","child":{"x":0.5}},"arr":[{"f1":"a","f2":1},null,{"f1":null,"f2":null}],
           "longs":[1,-1,9223372036854775807],"m":{"k1":{"v":1.0},"k2":null},"mi":{"a":1,"b":null}}"#,
        r#"{"_hoodie_commit_time":"20250101000000000","_hoodie_commit_seqno":"20250101000000000_0_2","_hoodie_record_key":"2","_hoodie_partition_path":"","_hoodie_file_name":"f-0",
           "id":-2147483648,"name":null,"rev":null,"flag":null,"l":0,"f":-0.0,"d":null,"bin":null,"fx":"AAAAAA==","fx2":null,"en":"A",
           "dec":null,"bdec":"99999999999999999.99","date":null,"tms":0,"tus":86399999999,"tsms":-1,"ts":null,"ltsms":0,"lts":0,
           "uuid":"","st":null,"arr":null,"longs":[],"m":null,"mi":{}}"#,
        r#"{"_hoodie_commit_time":"20250101000000000","_hoodie_commit_seqno":"20250101000000000_0_3","_hoodie_record_key":"3","_hoodie_partition_path":"","_hoodie_file_name":"f-0",
           "id":7,"name":"","rev":"","flag":false,"l":1,"f":3.0e38,"d":1e-300,"bin":"","fx":"f39/fw==","fx2":"AAAAAA==","en":"C",
           "dec":"0.00001","bdec":"0","date":-1,"tms":1,"tus":0,"tsms":0,"ts":1700000000000000,"ltsms":-5,"lts":-1,
           "uuid":"u","st":{"a":null,"child":null},"arr":[],"longs":[0],"m":{},"mi":{"z":-1}}"#,
    ];

    pub(crate) fn all_types_schema() -> AvroSchema {
        with_meta_fields(&AvroSchema::parse(ALL_TYPES).expect("schema"))
    }

    /// A batch of [`ALL_TYPES_ROWS`] under [`all_types_schema`].
    pub(crate) fn all_types_batch() -> RecordBatch {
        let schema = all_types_schema();
        let arrow = Arc::new(avro_to_arrow(&schema).expect("arrow"));
        let mut d = RecordDecoder::try_new(arrow, &schema).expect("decoder");
        for row in ALL_TYPES_ROWS {
            d.append(row.as_bytes())
                .unwrap_or_else(|e| panic!("{row}: {e}"));
        }
        d.finish().expect("batch")
    }

    #[test]
    fn every_type_round_trips() {
        let schema = all_types_schema();
        let batch = all_types_batch();
        let content =
            encode_avro_content(&schema, &[batch.clone(), batch.slice(1, 2)]).expect("encode");
        assert_eq!(&content[..8], &[0, 0, 0, 3, 0, 0, 0, 5]);
        let back = decode_avro_content(&schema, &content).expect("decode");
        let expected = arrow_select::concat::concat_batches(
            &batch.schema(),
            &[batch.clone(), batch.slice(1, 2)],
        )
        .expect("concat");
        assert_eq!(back, expected);
    }

    #[test]
    fn datum_bytes_follow_the_avro_specification() {
        let schema = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"a","type":["long","null"]},{"name":"b","type":["null","string"]},
            {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}},
            {"name":"x","type":{"type":"fixed","name":"x","size":3,"logicalType":"decimal","precision":5,"scale":2}},
            {"name":"e","type":{"type":"enum","name":"e","symbols":["P","Q"]}},{"name":"l","type":{"type":"array","items":"int"}}]}"#,
        )
        .expect("schema");
        let arrow = Arc::new(avro_to_arrow(&schema).expect("arrow"));
        let mut d = RecordDecoder::try_new(arrow, &schema).expect("decoder");
        d.append(br#"{"a":-3,"b":null,"d":"1.28","x":"-1.27","e":"Q","l":[1,2]}"#)
            .expect("row");
        let batch = d.finish().expect("batch");
        let content = encode_avro_content(&schema, &[batch]).expect("encode");
        // [long,null] branch 0 then zigzag -3 = 5; [null,string] null = branch 0; bytes decimal 128 = 00 80
        // (minimal two's complement keeps the sign byte); fixed(3) -127 = ff ff 81 (sign-extended); enum Q = 1
        // -> 02; array: count 2, 1, 2, end.
        let datum = [
            0x00, 0x05, 0x00, 0x04, 0x00, 0x80, 0xff, 0xff, 0x81, 0x02, 0x04, 0x02, 0x04, 0x00,
        ];
        let mut expected = vec![0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, datum.len() as u8];
        expected.extend_from_slice(&datum);
        assert_eq!(content, expected);
    }

    #[test]
    fn mismatches_are_typed_errors() {
        let schema = all_types_schema();
        let batch = all_types_batch();
        // Columns out of order.
        let reordered = batch.project(&[1, 0, 2, 3, 4]).expect("project");
        assert!(matches!(
            encode_avro_content(&schema, &[reordered]),
            Err(ContentError::Mismatch { .. })
        ));
        // A null in a non-nullable column of the schema.
        let strict = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"s","type":"string"}]}"#,
        )
        .expect("schema");
        let nullable = RecordBatch::try_from_iter([(
            "s",
            Arc::new(arrow_array::StringArray::from(vec![Some("a"), None]))
                as arrow_array::ArrayRef,
        )])
        .expect("batch");
        match encode_avro_content(&strict, &[nullable]) {
            Err(ContentError::Mismatch { path, .. }) => assert_eq!(path, "$.s"),
            other => panic!("{other:?}"),
        }
        // A column of the wrong type.
        let ints = RecordBatch::try_from_iter([(
            "s",
            Arc::new(arrow_array::Int32Array::from(vec![1])) as arrow_array::ArrayRef,
        )])
        .expect("batch");
        assert!(matches!(
            encode_avro_content(&strict, &[ints]),
            Err(ContentError::Mismatch { .. })
        ));
        // Block versions other than 3.
        let mut content = encode_avro_content(&schema, &[batch]).expect("encode");
        content[3] = 2;
        assert!(matches!(
            decode_avro_content(&schema, &content),
            Err(ContentError::UnsupportedVersion { found: 2, .. })
        ));
    }

    #[test]
    fn damaged_content_is_an_error_not_a_panic() {
        let schema = all_types_schema();
        let content = encode_avro_content(&schema, &[all_types_batch()]).expect("encode");
        for cut in 0..content.len() {
            assert!(
                decode_avro_content(&schema, &content[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..3000 {
            let mut m = content.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % m.len();
                m[at] = (seed >> 40) as u8;
            }
            let _ = decode_avro_content(&schema, &m);
        }
    }
}
