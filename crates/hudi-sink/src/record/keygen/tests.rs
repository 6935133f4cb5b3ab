//! Unit tests of the key generators.

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, StringBuilder};
use arrow_array::{ArrayRef, StructArray};
use arrow_schema::{Field, Fields, Schema};

use super::*;

pub(super) fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(super) fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

pub(super) fn ints(values: &[Option<i32>]) -> ArrayRef {
    let mut b = Int32Builder::new();
    for v in values {
        b.append_option(*v);
    }
    Arc::new(b.finish())
}

pub(super) fn strings(values: &[Option<&str>]) -> ArrayRef {
    let mut b = StringBuilder::new();
    for v in values {
        b.append_option(*v);
    }
    Arc::new(b.finish())
}

fn generator(pairs: &[(&str, &str)], batch: &RecordBatch) -> KeyGenerator {
    let config = KeyGenConfig::from_properties(&props(pairs)).expect("config");
    KeyGenerator::try_new(config, &batch.schema()).expect("generator")
}

#[test]
fn kinds_parse_from_classes_and_types() {
    use KeyGeneratorKind::*;
    for (name, kind) in [
        ("org.apache.hudi.keygen.SimpleKeyGenerator", Simple),
        ("org.apache.hudi.keygen.SimpleAvroKeyGenerator", Simple),
        ("org.apache.hudi.keygen.ComplexKeyGenerator", Complex),
        ("org.apache.hudi.keygen.ComplexAvroKeyGenerator", Complex),
        (
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            NonPartitioned,
        ),
        (
            "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator",
            NonPartitioned,
        ),
        (
            "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            TimestampBased,
        ),
        (
            "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator",
            TimestampBased,
        ),
    ] {
        assert_eq!(
            KeyGeneratorKind::from_class_name(name),
            Some(kind),
            "{name}"
        );
    }
    assert_eq!(
        KeyGeneratorKind::from_class_name("org.apache.hudi.keygen.CustomKeyGenerator"),
        None
    );
    assert_eq!(
        KeyGeneratorKind::from_class_name("SimpleKeyGenerator"),
        None
    );
    for (name, kind) in [
        ("SIMPLE", Simple),
        ("simple", Simple),
        ("COMPLEX_AVRO", Complex),
        ("NON_PARTITION", NonPartitioned),
        ("TIMESTAMP", TimestampBased),
    ] {
        assert_eq!(KeyGeneratorKind::from_type_name(name), Some(kind), "{name}");
    }
    assert_eq!(KeyGeneratorKind::from_type_name("CUSTOM"), None);
    for kind in [Simple, Complex, NonPartitioned, TimestampBased] {
        assert_eq!(
            KeyGeneratorKind::from_class_name(kind.class_name()),
            Some(kind)
        );
        assert_eq!(
            KeyGeneratorKind::from_type_name(kind.type_name()),
            Some(kind)
        );
    }
}

#[test]
fn kind_is_inferred_as_hudi_does() {
    let f = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        KeyGeneratorKind::infer(&f(&["id"]), &f(&[])),
        KeyGeneratorKind::NonPartitioned
    );
    assert_eq!(
        KeyGeneratorKind::infer(&f(&["a", "b"]), &f(&[])),
        KeyGeneratorKind::NonPartitioned
    );
    assert_eq!(
        KeyGeneratorKind::infer(&f(&["id"]), &f(&["p"])),
        KeyGeneratorKind::Simple
    );
    assert_eq!(
        KeyGeneratorKind::infer(&f(&["a", "b"]), &f(&["p"])),
        KeyGeneratorKind::Complex
    );
    assert_eq!(
        KeyGeneratorKind::infer(&f(&["id"]), &f(&["p", "q"])),
        KeyGeneratorKind::Complex
    );
    let config =
        KeyGenConfig::from_properties(&props(&[(WRITE_RECORD_KEY, "id"), (WRITE_PARTITION, "p")]))
            .expect("config");
    assert_eq!(config.kind, KeyGeneratorKind::Simple);
}

#[test]
fn table_and_write_keys_must_agree() {
    let config = KeyGenConfig::from_properties(&props(&[
        (TABLE_RECORD_KEY, "id,name"),
        (WRITE_RECORD_KEY, " id , name "),
        (TABLE_PARTITION, "p"),
        (
            TABLE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.ComplexKeyGenerator",
        ),
        (WRITE_KEYGEN_TYPE, "COMPLEX"),
        (HIVE_STYLE, "true"),
    ]))
    .expect("agreeing spellings");
    assert_eq!(config.record_key_fields, vec!["id", "name"]);
    assert_eq!(config.kind, KeyGeneratorKind::Complex);
    assert!(config.hive_style && !config.url_encode);

    let err = KeyGenConfig::from_properties(&props(&[
        (TABLE_RECORD_KEY, "id"),
        (WRITE_RECORD_KEY, "uuid"),
    ]))
    .expect_err("disagree");
    let text = err.to_string();
    assert!(
        text.contains(TABLE_RECORD_KEY) && text.contains(WRITE_RECORD_KEY) && text.contains("uuid"),
        "{text}"
    );

    let err = KeyGenConfig::from_properties(&props(&[
        (TABLE_RECORD_KEY, "id"),
        (
            TABLE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.SimpleKeyGenerator",
        ),
        (
            WRITE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.ComplexKeyGenerator",
        ),
        (TABLE_PARTITION, "p"),
    ]))
    .expect_err("disagree");
    assert!(err.to_string().contains(WRITE_KEYGEN_CLASS), "{err}");

    let err = KeyGenConfig::from_properties(&props(&[
        (TABLE_RECORD_KEY, "id"),
        (
            TABLE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.CustomKeyGenerator",
        ),
    ]))
    .expect_err("unsupported");
    assert!(
        matches!(err, KeyGenError::UnsupportedKeyGenerator { .. }),
        "{err}"
    );
    assert_eq!(
        KeyGenConfig::from_properties(&props(&[(TABLE_PARTITION, "p")])),
        Err(KeyGenError::MissingRecordKeyFields)
    );
    assert!(matches!(
        KeyGenConfig::from_properties(&props(&[(TABLE_RECORD_KEY, "id"), (HIVE_STYLE, "yes")])),
        Err(KeyGenError::InvalidValue {
            key: HIVE_STYLE,
            ..
        })
    ));
}

#[test]
fn field_counts_fit_the_kind() {
    let simple = |keys: &str, parts: &str| {
        KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, keys),
            (TABLE_PARTITION, parts),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.SimpleKeyGenerator",
            ),
        ]))
    };
    assert!(simple("id", "p").is_ok());
    assert!(simple("id", "").is_ok());
    assert!(matches!(
        simple("a,b", "p"),
        Err(KeyGenError::InvalidFields { .. })
    ));
    assert!(matches!(
        simple("id", "p,q"),
        Err(KeyGenError::InvalidFields { .. })
    ));
    let hive_bad_name = KeyGenConfig {
        kind: KeyGeneratorKind::Complex,
        record_key_fields: vec!["id".to_string()],
        partition_fields: vec!["a=b".to_string()],
        hive_style: true,
        url_encode: false,
        consistent_logical_timestamp: false,
        timestamp: None,
        complex_single_field_with_name: false,
    };
    assert!(matches!(
        hive_bad_name.validate(),
        Err(KeyGenError::InvalidFields { .. })
    ));
}

#[test]
fn missing_fields_are_named_at_start_up() {
    let batch = batch(vec![("id", ints(&[Some(1)]))]);
    let config = KeyGenConfig::from_properties(&props(&[
        (TABLE_RECORD_KEY, "id"),
        (TABLE_PARTITION, "region"),
    ]))
    .expect("config");
    let err = KeyGenerator::try_new(config, &batch.schema()).expect_err("region missing");
    let text = err.to_string();
    assert!(
        text.contains("partition field") && text.contains("`region`"),
        "{text}"
    );
}

#[test]
fn simple_keys_and_paths() {
    let batch = batch(vec![
        ("id", ints(&[Some(1), None, Some(3), Some(4)])),
        ("byteField", ints(&[Some(10), Some(20), None, Some(30)])),
        (
            "name",
            strings(&[Some("a"), Some("b"), Some("c"), Some("")]),
        ),
    ]);
    let keygen = generator(
        &[
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "byteField"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.SimpleKeyGenerator",
            ),
            (HIVE_STYLE, "true"),
        ],
        &batch,
    );
    let keys = keygen.keys(&batch);
    assert_eq!(keys[0], Ok(("1".to_string(), "byteField=10".to_string())));
    assert_eq!(
        keys[1],
        Err(KeyError::NullRecordKey {
            field: "id".to_string()
        })
    );
    assert_eq!(
        keys[2],
        Ok((
            "3".to_string(),
            "byteField=__HIVE_DEFAULT_PARTITION__".to_string()
        ))
    );
    let by_name = generator(
        &[(TABLE_RECORD_KEY, "name"), (TABLE_PARTITION, "byteField")],
        &batch,
    );
    let mut out = String::from("stale");
    assert_eq!(
        by_name.record_key(&batch, 3, &mut out),
        Err(KeyError::EmptyRecordKey {
            field: "name".to_string()
        })
    );
    by_name.record_key(&batch, 0, &mut out).expect("key");
    assert_eq!(out, "a", "the buffer is cleared first");
    let mut path = String::new();
    by_name.partition_path(&batch, 0, &mut path).expect("path");
    assert_eq!(path, "10");
    assert!(matches!(
        by_name.record_key(&batch, 4, &mut out),
        Err(KeyError::Value {
            error: ValueError::RowOutOfRange { .. },
            ..
        })
    ));
}

#[test]
fn complex_keys_name_their_fields() {
    let batch = batch(vec![
        ("id", ints(&[Some(1), None, None, Some(4)])),
        (
            "name",
            strings(&[Some("Alice"), Some(""), None, Some("x:y,z")]),
        ),
        ("byteField", ints(&[Some(10), Some(20), Some(30), Some(40)])),
        ("shortField", ints(&[Some(300), Some(100), None, Some(1)])),
    ]);
    let keygen = generator(
        &[
            (TABLE_RECORD_KEY, "id,name"),
            (TABLE_PARTITION, "byteField,shortField"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.ComplexKeyGenerator",
            ),
            (HIVE_STYLE, "true"),
        ],
        &batch,
    );
    let keys = keygen.keys(&batch);
    assert_eq!(
        keys[0],
        Ok((
            "id:1,name:Alice".to_string(),
            "byteField=10/shortField=300".to_string()
        ))
    );
    assert_eq!(
        keys[1],
        Err(KeyError::AllRecordKeyFieldsNullOrEmpty {
            fields: "id,name".to_string()
        })
    );
    assert!(matches!(
        keys[2],
        Err(KeyError::AllRecordKeyFieldsNullOrEmpty { .. })
    ));
    assert_eq!(
        keys[3],
        Ok((
            "id:4,name:x:y,z".to_string(),
            "byteField=40/shortField=1".to_string()
        ))
    );
    let mut key = String::new();
    let partial = batch.slice(1, 1);
    let half = generator(
        &[
            (TABLE_RECORD_KEY, "id,byteField"),
            (TABLE_PARTITION, "name"),
        ],
        &partial,
    );
    half.record_key(&partial, 0, &mut key)
        .expect("one value present");
    assert_eq!(key, "id:__null__,byteField:20");
    let empty = generator(
        &[
            (TABLE_RECORD_KEY, "name,byteField"),
            (TABLE_PARTITION, "name"),
        ],
        &partial,
    );
    empty
        .record_key(&partial, 0, &mut key)
        .expect("one value present");
    assert_eq!(key, "name:__empty__,byteField:20");
}

#[test]
fn single_field_complex_keys_follow_the_table_version() {
    let batch = batch(vec![("id", ints(&[Some(7)])), ("p", ints(&[Some(1)]))]);
    let base = [
        (TABLE_RECORD_KEY, "id"),
        (TABLE_PARTITION, "p"),
        (
            TABLE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.ComplexKeyGenerator",
        ),
    ];
    let key_of = |extra: &[(&str, &str)]| {
        let mut pairs = base.to_vec();
        pairs.extend_from_slice(extra);
        let keygen = generator(&pairs, &batch);
        let mut key = String::new();
        keygen.record_key(&batch, 0, &mut key).expect("key");
        key
    };
    assert_eq!(key_of(&[]), "7", "Hudi 0.14.1-1.0.2 (HUDI-7001)");
    assert_eq!(key_of(&[(TABLE_VERSION, "6")]), "7");
    assert_eq!(key_of(&[(COMPLEX_NEW_ENCODING, "true")]), "7");
    assert_eq!(key_of(&[(COMPLEX_NEW_ENCODING, "false")]), "id:7");
    assert_eq!(key_of(&[(TABLE_VERSION, "9")]), "id:7");
}

#[test]
fn nonpartitioned_keys() {
    let batch = batch(vec![
        ("id", ints(&[Some(1)])),
        ("name", strings(&[Some("n")])),
    ]);
    let one = generator(
        &[
            (TABLE_RECORD_KEY, "id"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            ),
        ],
        &batch,
    );
    assert_eq!(one.keys(&batch), vec![Ok(("1".to_string(), String::new()))]);
    let two = generator(&[(TABLE_RECORD_KEY, "id,name")], &batch);
    assert_eq!(two.config().kind, KeyGeneratorKind::NonPartitioned);
    assert_eq!(
        two.keys(&batch),
        vec![Ok(("id:1,name:n".to_string(), String::new()))]
    );
}

#[test]
fn nested_fields_by_dot_path() {
    let inner = Fields::from(vec![Field::new("city", DataType::Utf8, true)]);
    let address = StructArray::new(
        inner.clone(),
        vec![strings(&[Some("Paris"), None])],
        Some(vec![true, true].into()),
    );
    let batch = batch(vec![
        ("id", ints(&[Some(1), Some(2)])),
        ("address", Arc::new(address) as ArrayRef),
    ]);
    let keygen = generator(
        &[
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "address.city"),
            (HIVE_STYLE, "true"),
        ],
        &batch,
    );
    let keys = keygen.keys(&batch);
    assert_eq!(
        keys[0],
        Ok(("1".to_string(), "address.city=Paris".to_string()))
    );
    assert_eq!(
        keys[1],
        Ok((
            "2".to_string(),
            "address.city=__HIVE_DEFAULT_PARTITION__".to_string()
        ))
    );
}

#[test]
fn hostile_partition_values_become_key_errors() {
    let batch = batch(vec![
        ("id", ints(&[Some(1), Some(2), Some(3)])),
        ("p", strings(&[Some("../etc"), Some(".."), Some("a/b")])),
    ]);
    let plain = generator(&[(TABLE_RECORD_KEY, "id"), (TABLE_PARTITION, "p")], &batch);
    for result in plain.keys(&batch) {
        assert!(matches!(result, Err(KeyError::Partition(_))), "{result:?}");
    }
    let encoded = generator(
        &[
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "p"),
            (URL_ENCODE, "true"),
        ],
        &batch,
    );
    let keys = encoded.keys(&batch);
    assert_eq!(keys[0], Ok(("1".to_string(), "..%2Fetc".to_string())));
    assert!(matches!(keys[1], Err(KeyError::Partition(_))));
    assert_eq!(keys[2], Ok(("3".to_string(), "a%2Fb".to_string())));
}
