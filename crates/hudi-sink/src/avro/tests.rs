//! Container round trips and the decoder's refusals.

use std::io::Write;

use super::write::{container, write_long};
use super::*;

const SCHEMA: &str = r#"{"type":"record","name":"All","namespace":"t","fields":[
    {"name":"n","type":"null"},
    {"name":"b","type":"boolean"},
    {"name":"i","type":"int"},
    {"name":"l","type":"long"},
    {"name":"f","type":"float"},
    {"name":"d","type":"double"},
    {"name":"s","type":"string"},
    {"name":"by","type":"bytes"},
    {"name":"a","type":{"type":"array","items":["null","long"]}},
    {"name":"m","type":{"type":"map","values":"string"}},
    {"name":"u","type":["null","string",{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}]},
    {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
    {"name":"fx","type":{"type":"fixed","name":"F","size":3}}
]}"#;

fn all_value() -> AvroValue {
    AvroValue::record([
        ("n", AvroValue::Null),
        ("b", AvroValue::Boolean(true)),
        ("i", AvroValue::Int(i32::MIN)),
        ("l", AvroValue::Long(i64::MAX)),
        ("f", AvroValue::Float(1.5)),
        ("d", AvroValue::Double(-2.25e300)),
        ("s", AvroValue::string("héllo")),
        ("by", AvroValue::Bytes(vec![0, 255, 7])),
        (
            "a",
            AvroValue::Array(vec![
                AvroValue::Union(1, Box::new(AvroValue::Long(-3))),
                AvroValue::Union(0, Box::new(AvroValue::Null)),
            ]),
        ),
        (
            "m",
            AvroValue::Map(vec![
                ("z".into(), AvroValue::string("1")),
                ("a".into(), AvroValue::string("")),
            ]),
        ),
        (
            "u",
            AvroValue::Union(2, Box::new(AvroValue::record([("x", AvroValue::Int(9))]))),
        ),
        ("e", AvroValue::Enum(2, "C".into())),
        ("fx", AvroValue::Bytes(vec![1, 2, 3])),
    ])
}

/// A header with the given metadata entries and sync marker `[9; 16]`.
fn header(meta: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"Obj\x01".to_vec();
    write_long(&mut out, meta.len() as i64);
    for (k, v) in meta {
        write_long(&mut out, k.len() as i64);
        out.extend_from_slice(k.as_bytes());
        write_long(&mut out, v.len() as i64);
        out.extend_from_slice(v);
    }
    out.push(0);
    out.extend_from_slice(&[9; 16]);
    out
}

fn block(out: &mut Vec<u8>, count: i64, data: &[u8]) {
    write_long(out, count);
    write_long(out, data.len() as i64);
    out.extend_from_slice(data);
    out.extend_from_slice(&[9; 16]);
}

fn int_file(meta_extra: &[(&str, &[u8])], blocks: &[(i64, &[u8])]) -> Vec<u8> {
    let mut meta: Vec<(&str, &[u8])> = vec![("avro.schema", b"\"int\"")];
    meta.extend_from_slice(meta_extra);
    let mut out = header(&meta);
    for (count, data) in blocks {
        block(&mut out, *count, data);
    }
    out
}

#[test]
fn every_type_round_trips_and_the_header_is_javas() {
    let bytes = encode_container(SCHEMA, &all_value()).expect("encodes");
    let (schema, value) = decode_container(&bytes).expect("decodes");
    assert_eq!(value, all_value());
    // Compact JSON, members in the given order; one metadata entry (no avro.codec), as Java writes.
    assert!(schema
        .starts_with(r#"{"type":"record","name":"All","namespace":"t","fields":[{"name":"n""#));
    assert_eq!(&bytes[..6], b"Obj\x01\x02\x16");
    assert_eq!(&bytes[6..17], b"avro.schema");
    let sync = &bytes[bytes.len() - 16..];
    let header_end = 17 + 2 + schema.len() + 1;
    assert_eq!(bytes[header_end - 1], 0);
    assert_eq!(&bytes[header_end..header_end + 16], sync);
    // Two files get different sync markers.
    let again = encode_container(SCHEMA, &all_value()).expect("encodes");
    assert_ne!(&again[again.len() - 16..], sync);
}

#[test]
fn encoding_refuses_before_producing_anything() {
    let mut bad = all_value();
    if let AvroValue::Record(fields) = &mut bad {
        fields[2].1 = AvroValue::Long(1);
    }
    assert!(matches!(
        encode_container(SCHEMA, &bad),
        Err(AvroError::Mismatch { path, .. }) if path == "$.i"
    ));
    assert!(matches!(
        encode_container("{\"type\":\"nope\"}", &AvroValue::Null),
        Err(AvroError::Schema { .. })
    ));
}

#[test]
fn fastavro_style_header_and_empty_blocks_are_accepted() {
    let file = int_file(
        &[("avro.codec", b"null"), ("user", b"x")],
        &[(0, &[]), (1, &[8])],
    );
    assert_eq!(
        decode_container(&file).expect("decodes").1,
        AvroValue::Int(4)
    );
}

#[test]
fn deflate_blocks_are_inflated() {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&[8]).expect("deflate");
    let data = enc.finish().expect("deflate");
    let file = int_file(&[("avro.codec", b"deflate")], &[(1, &data)]);
    assert_eq!(
        decode_container(&file).expect("decodes").1,
        AvroValue::Int(4)
    );

    let junk = int_file(&[("avro.codec", b"deflate")], &[(1, &[0xff, 0xff, 0xff])]);
    assert!(matches!(
        decode_container(&junk),
        Err(AvroError::Deflate { .. })
    ));
}

#[test]
fn refusals_are_typed() {
    assert!(matches!(decode_container(&[]), Err(AvroError::Empty)));
    assert!(matches!(
        decode_container(b"Ob"),
        Err(AvroError::BadMagic { .. })
    ));
    assert!(matches!(
        decode_container(b"PAR1xxxx"),
        Err(AvroError::BadMagic { .. })
    ));
    assert!(matches!(
        decode_container(&int_file(&[], &[])),
        Err(AvroError::NoRecord)
    ));
    assert!(matches!(
        decode_container(&int_file(&[], &[(0, &[])])),
        Err(AvroError::NoRecord)
    ));
    assert!(matches!(
        decode_container(&int_file(&[], &[(2, &[8, 8])])),
        Err(AvroError::TooManyRecords { count: 2 })
    ));
    assert!(matches!(
        decode_container(&int_file(&[], &[(1, &[8]), (1, &[8])])),
        Err(AvroError::TooManyRecords { count: 2 })
    ));
    assert!(matches!(
        decode_container(&int_file(&[("avro.codec", b"snappy")], &[(1, &[8])])),
        Err(AvroError::UnsupportedCodec(c)) if c == "snappy"
    ));
    let mut no_schema = header(&[("avro.codec", b"null")]);
    block(&mut no_schema, 1, &[8]);
    assert!(matches!(
        decode_container(&no_schema),
        Err(AvroError::MissingSchema)
    ));

    let mut trailing = int_file(&[], &[(1, &[8])]);
    trailing.extend_from_slice(b"\x02garbage");
    assert!(matches!(
        decode_container(&trailing),
        Err(AvroError::TrailingGarbage { .. })
    ));

    let mut bad_sync = int_file(&[], &[(1, &[8])]);
    let last = bad_sync.len() - 1;
    bad_sync[last] ^= 1;
    assert!(matches!(
        decode_container(&bad_sync),
        Err(AvroError::BadSync { .. })
    ));

    // A block longer than its record.
    assert!(matches!(
        decode_container(&int_file(&[], &[(1, &[8, 8])])),
        Err(AvroError::Corrupt { .. })
    ));
    // An int varint that never ends.
    assert!(matches!(
        decode_container(&int_file(&[], &[(1, &[0xff; 12])])),
        Err(AvroError::Corrupt { .. })
    ));
}

#[test]
fn corrupt_data_is_reported_not_panicked_on() {
    let schema = r#"{"type":"record","name":"R","fields":[
        {"name":"u","type":["null","string"]},{"name":"b","type":"boolean"},
        {"name":"a","type":{"type":"array","items":"null"}},{"name":"l","type":{"type":"array","items":"long"}}]}"#;
    let file = |datum: &[u8]| container(schema, datum, [9; 16]);
    assert!(decode_container(&file(&[2, 2, b'x', 1, 0, 0])).is_ok());
    for (datum, what) in [
        (vec![4u8, 1, 0, 0], "union branch"),
        (vec![2, 2, 0xff, 1, 0, 0], "UTF-8"),
        (vec![0, 2, 0, 0], "boolean"),
        // 2^40 nulls: more than the data could hold.
        (vec![0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0], "items"),
        // 2^40 longs.
        (
            vec![0, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0],
            "items",
        ),
    ] {
        match decode_container(&file(&datum)) {
            Err(AvroError::Corrupt { reason, .. }) => assert!(reason.contains(what), "{reason}"),
            other => panic!("{datum:?}: {other:?}"),
        }
    }
    // Every prefix of a valid file is refused with a typed error.
    let good = encode_container(SCHEMA, &all_value()).expect("encodes");
    for len in 0..good.len() {
        let err = decode_container(&good[..len]).expect_err("a prefix is not a file");
        assert!(
            matches!(
                err,
                AvroError::Empty
                    | AvroError::BadMagic { .. }
                    | AvroError::Truncated { .. }
                    | AvroError::NoRecord
                    | AvroError::Corrupt { .. }
                    | AvroError::SchemaJson(_)
            ),
            "prefix {len}: {err:?}"
        );
    }
}
