//! Unit tests of the Avro reader: resolution rules, refusals and bounds. Each accepted datum is checked
//! against the JSON reader decoding the same record (its own tests pin every conversion); the end-to-end
//! tests decode datums that `fastavro` wrote (`tests/it/avro_registry.rs`).

use super::*;

fn decoder(avsc: &str) -> RecordDecoder {
    let avro = AvroSchema::parse(avsc).unwrap_or_else(|e| panic!("schema: {e}"));
    let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("arrow: {e}"));
    RecordDecoder::try_new(Arc::new(arrow), &avro).unwrap_or_else(|e| panic!("decoder: {e}"))
}

fn plan(d: &RecordDecoder, writer: &str) -> Result<AvroPlan, PlanError> {
    d.compile_avro(&AvroSchema::parse_writer(writer).unwrap_or_else(|e| panic!("writer: {e}")))
}

/// Avro binary of a test datum, written by hand.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn long(mut self, v: i64) -> Self {
        crate::avro::binary::write_long(&mut self.0, v);
        self
    }
    fn str(self, s: &str) -> Self {
        self.long(s.len() as i64).raw(s.as_bytes())
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn double(self, x: f64) -> Self {
        self.raw(&x.to_le_bytes())
    }
}

/// Decodes `datum` with `writer` and `json` with the JSON reader: the batches must be equal.
fn same_as_json(table: &str, writer: &str, datum: &[u8], json: &str) {
    let mut avro = decoder(table);
    let p = plan(&avro, writer).unwrap_or_else(|e| panic!("plan: {e}"));
    avro.append_avro(&p, datum)
        .unwrap_or_else(|e| panic!("avro: {e}"));
    let mut reference = decoder(table);
    reference
        .append(json.as_bytes())
        .unwrap_or_else(|e| panic!("json: {e}"));
    assert_eq!(
        avro.finish().unwrap_or_else(|e| panic!("{e}")),
        reference.finish().unwrap_or_else(|e| panic!("{e}")),
        "{json}"
    );
}

/// Refuses `datum`, leaving the decoder as it was.
fn refused(d: &mut RecordDecoder, p: &AvroPlan, datum: &[u8]) -> RecordDecodeError {
    let before = d.len();
    match d.append_avro(p, datum) {
        Ok(()) => panic!("{datum:?}: accepted"),
        Err(e) => {
            assert_eq!(d.len(), before, "{datum:?}: length changed");
            e
        }
    }
}

const TABLE: &str = r#"{"type":"record","name":"r","fields":[
    {"name":"a","type":"string"},
    {"name":"b","type":"long"},
    {"name":"c","type":["null","int"],"default":null},
    {"name":"d","type":"int","default":7},
    {"name":"e","type":"double"}]}"#;

#[test]
fn writer_fields_are_matched_by_name_skipped_defaulted_and_widened() {
    let writer = r#"{"type":"record","name":"r","fields":[
        {"name":"e","type":"float"},
        {"name":"gone","type":{"type":"record","name":"G","fields":[
            {"name":"xs","type":{"type":"array","items":["null","string"]}},
            {"name":"m","type":{"type":"map","values":"long"}},
            {"name":"f","type":{"type":"fixed","name":"F","size":3}}]}},
        {"name":"b","type":"int"},
        {"name":"a","type":"string"}]}"#;
    let datum = Bytes::default()
        .raw(&1.5f32.to_le_bytes())
        // gone.xs: one block of two items (null, "x"), gone.m: a block with a byte size, gone.f
        .long(2)
        .long(0)
        .long(1)
        .str("x")
        .long(0)
        .long(-1)
        .long(3)
        .str("k")
        .long(5)
        .long(0)
        .raw(b"fff")
        .long(-42)
        .str("hello");
    same_as_json(
        TABLE,
        writer,
        &datum.0,
        r#"{"a":"hello","b":-42,"c":null,"d":7,"e":1.5}"#,
    );
    // The skipped writer field is named by the plan and counted per accepted datum.
    let mut d = decoder(TABLE);
    let p = plan(&d, writer).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.skipped_fields(), ["gone"]);
    d.append_avro(&p, &datum.0)
        .unwrap_or_else(|e| panic!("{e}"));
    d.append_avro(&p, &datum.0)
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = refused(&mut d, &p, &datum.0[..3]);
    assert_eq!(d.ignored_fields(), 2);
}

#[test]
fn unions_pick_their_branch_per_value_and_an_unreadable_branch_refuses_only_its_values() {
    let table = r#"{"type":"record","name":"r","fields":[{"name":"v","type":["null","string"]}]}"#;
    let writer =
        r#"{"type":"record","name":"r","fields":[{"name":"v","type":["string","null","int"]}]}"#;
    let mut d = decoder(table);
    let p = plan(&d, writer).unwrap_or_else(|e| panic!("{e}"));
    d.append_avro(&p, &Bytes::default().long(0).str("s").0)
        .unwrap_or_else(|e| panic!("{e}"));
    d.append_avro(&p, &Bytes::default().long(1).0)
        .unwrap_or_else(|e| panic!("{e}"));
    let e = refused(&mut d, &p, &Bytes::default().long(2).long(5).0);
    assert_eq!(e.kind(), RecordErrorKind::Invalid);
    assert!(
        e.to_string().contains("field `v`") && e.to_string().contains("int"),
        "{e}"
    );
    let e = refused(&mut d, &p, &Bytes::default().long(3).0);
    assert_eq!(e.kind(), RecordErrorKind::NotAvro, "{e}");
    let mut reference = decoder(table);
    reference
        .append(br#"{"v":"s"}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    reference
        .append(br#"{"v":null}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.finish().ok(), reference.finish().ok());
}

#[test]
fn writer_schemas_the_table_cannot_read_fail_the_plan_naming_the_field() {
    let d = decoder(TABLE);
    let missing = r#"{"type":"record","name":"r","fields":[{"name":"a","type":"string"},{"name":"e","type":"double"}]}"#;
    let e = plan(&d, missing)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("field `b`") && e.contains("no default"), "{e}");
    let narrowed = r#"{"type":"record","name":"r","fields":[{"name":"a","type":"string"},{"name":"b","type":"double"},{"name":"e","type":"double"}]}"#;
    let e = plan(&d, narrowed)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("field `b`") && e.contains("double") && e.contains("long"),
        "{e}"
    );
    let not_record = r#"{"type":"array","items":"int"}"#;
    assert!(plan(&d, not_record).is_err());
    let null_into_required = r#"{"type":"record","name":"r","fields":[{"name":"a","type":"null"},{"name":"b","type":"long"},{"name":"e","type":"double"}]}"#;
    let e = plan(&d, null_into_required)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("field `a`") && e.contains("non-nullable"), "{e}");
}

#[test]
fn malformed_datums_are_refused_as_not_avro_and_leave_nothing_behind() {
    let mut d = decoder(TABLE);
    let p = plan(&d, TABLE).unwrap_or_else(|e| panic!("{e}"));
    let good = Bytes::default()
        .str("a")
        .long(1)
        .long(0)
        .long(2)
        .double(0.5);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good.0[..good.0.len() - 1].to_vec(), "needs 8 more bytes"),
        ([good.0.clone(), vec![0]].concat(), "1 bytes are left"),
        (Bytes::default().long(-3).0, "negative length"),
        (Bytes::default().long(1 << 40).0, "needs"),
        (vec![0xFF; 11], "longer than 64 bits"),
        (vec![], "ends inside a number"),
        (
            Bytes::default().str("a").long(1).long(7).0,
            "union branch 7 does not exist",
        ),
    ];
    for (datum, want) in cases {
        let e = refused(&mut d, &p, &datum);
        assert_eq!(e.kind(), RecordErrorKind::NotAvro, "{datum:?}: {e}");
        assert!(e.to_string().contains(want), "{datum:?}: {e}");
    }
    d.append_avro(&p, &good.0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.len(), 1);
}

#[test]
fn block_counts_nesting_and_zero_byte_items_are_bounded() {
    let table = r#"{"type":"record","name":"r","fields":[{"name":"xs","type":{"type":"array","items":["null","int"]}}]}"#;
    let nulls = r#"{"type":"record","name":"r","fields":[{"name":"xs","type":{"type":"array","items":"null"}}]}"#;
    let mut d = decoder(table);
    let p = plan(&d, nulls).unwrap_or_else(|e| panic!("{e}"));
    // A billion nulls in four bytes.
    let e = refused(&mut d, &p, &Bytes::default().long(1 << 30).long(0).0);
    assert!(
        e.to_string().contains("more than the datum can hold"),
        "{e}"
    );
    d.append_avro(&p, &Bytes::default().long(1000).long(0).0)
        .unwrap_or_else(|e| panic!("{e}"));
    // A recursive writer type the table does not keep is skipped, within the depth limit.
    let writer = r#"{"type":"record","name":"r","fields":[
        {"name":"xs","type":{"type":"array","items":"null"}},
        {"name":"next","type":["null",{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}]}]}"#;
    let p = plan(&d, writer).unwrap_or_else(|e| panic!("{e}"));
    let mut chain = Bytes::default().long(0);
    for _ in 0..3 {
        chain = chain.long(1);
    }
    d.append_avro(&p, &chain.long(0).0)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut deep = Bytes::default().long(0);
    for _ in 0..100 {
        deep = deep.long(1);
    }
    let e = refused(&mut d, &p, &deep.long(0).0);
    assert!(
        matches!(e.reason(), RecordDecodeReason::TooDeep { .. }),
        "{e}"
    );
}

#[test]
fn values_are_checked_as_the_json_reader_checks_them() {
    let table = r#"{"type":"record","name":"r","fields":[
        {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
        {"name":"st","type":{"type":"enum","name":"S","symbols":["A","B"]}},
        {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
        {"name":"m","type":{"type":"map","values":"int"}},
        {"name":"s","type":"string"}]}"#;
    let writer = r#"{"type":"record","name":"r","fields":[
        {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":3,"scale":2}},
        {"name":"st","type":{"type":"enum","name":"S","symbols":["A","B","C"]}},
        {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
        {"name":"m","type":{"type":"map","values":"int"}},
        {"name":"s","type":"string"}]}"#;
    let mut d = decoder(table);
    let p = plan(&d, writer).unwrap_or_else(|e| panic!("{e}"));
    let datum = |dec: &[u8], st: i64, tod: i64, keys: &[&str], s: &[u8]| {
        let mut b = Bytes::default()
            .long(dec.len() as i64)
            .raw(dec)
            .long(st)
            .long(tod);
        if !keys.is_empty() {
            b = b.long(keys.len() as i64);
        }
        for k in keys {
            b = b.str(k).long(1);
        }
        b.long(0).long(s.len() as i64).raw(s).0
    };
    same_as_json(
        table,
        writer,
        &datum(&[0xFF, 0x85], 1, 5, &["k"], b"x"),
        r#"{"dec":"-1.23","st":"B","tod":5,"m":{"k":1},"s":"x"}"#,
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (datum(&[0x27, 0x10], 0, 0, &[], b""), "more than 4 digits"),
        (
            datum(&[1], 2, 0, &[], b""),
            "not one of the table enum's symbols",
        ),
        (datum(&[1], 0, 86_400_000, &[], b""), "less than 86400000"),
        (datum(&[1], 0, 0, &["k", "k"], b""), "duplicate key"),
        (datum(&[1], 0, 0, &[], b"\xff"), "not UTF-8"),
    ];
    for (bytes, want) in cases {
        let e = refused(&mut d, &p, &bytes);
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
}

#[test]
fn timestamps_widen_from_millis_to_micros_and_never_narrow() {
    let table = r#"{"type":"record","name":"r","fields":[{"name":"t","type":{"type":"long","logicalType":"timestamp-micros"}}]}"#;
    let millis = r#"{"type":"record","name":"r","fields":[{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#;
    same_as_json(
        table,
        millis,
        &Bytes::default().long(1234).0,
        r#"{"t":1234000}"#,
    );
    let d = decoder(millis);
    assert!(plan(&d, table).is_err(), "micros into a millis column");
    let local = r#"{"type":"record","name":"r","fields":[{"name":"t","type":{"type":"long","logicalType":"local-timestamp-micros"}}]}"#;
    assert!(plan(&decoder(table), local).is_err(), "local into UTC");
}

#[test]
fn twos_complement_takes_any_length_that_fits() {
    use super::avro::twos_complement;
    assert_eq!(twos_complement(&[]), Some(0));
    assert_eq!(twos_complement(&[0xFF]), Some(-1));
    assert_eq!(twos_complement(&[0x00, 0x80]), Some(128));
    let mut long = vec![0xFF; 4];
    long.extend_from_slice(&(-5i128).to_be_bytes());
    assert_eq!(twos_complement(&long), Some(-5));
    let mut too_long = vec![0x01];
    too_long.extend_from_slice(&[0; 16]);
    assert_eq!(twos_complement(&too_long), None);
    let mut sign_lost = vec![0x00];
    sign_lost.extend_from_slice(&(-5i128).to_be_bytes());
    assert_eq!(twos_complement(&sign_lost), None);
}
