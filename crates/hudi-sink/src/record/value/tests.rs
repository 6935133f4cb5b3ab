//! Unit tests of value rendering.

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, StringDictionaryBuilder};
use arrow_array::types::Int32Type as DictKey;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int64Array, Int8Array, StringArray, StructArray,
    TimestampMicrosecondArray, UInt64Array,
};
use arrow_schema::{Field, Fields};

use super::*;

fn text(array: &dyn Array, row: usize) -> Option<String> {
    text_with(array, row, ValueOptions::default())
}

fn text_with(array: &dyn Array, row: usize, options: ValueOptions) -> Option<String> {
    let mut out = String::from("prefix|");
    let range = write_value(array, row, options, &mut out).expect("supported");
    range.map(|r| {
        assert_eq!(r.end, out.len());
        out[r].to_string()
    })
}

fn double(v: f64) -> String {
    let mut out = String::new();
    write_java_double(v, &mut out);
    out
}

fn float(v: f32) -> String {
    let mut out = String::new();
    write_java_float(v, &mut out);
    out
}

#[test]
fn integers_booleans_strings() {
    let ints = Int64Array::from(vec![Some(0), Some(-42), None, Some(i64::MIN)]);
    assert_eq!(text(&ints, 0).as_deref(), Some("0"));
    assert_eq!(text(&ints, 1).as_deref(), Some("-42"));
    assert_eq!(text(&ints, 2), None);
    assert_eq!(text(&ints, 3).as_deref(), Some("-9223372036854775808"));
    assert_eq!(
        text(&Int8Array::from(vec![-128i8]), 0).as_deref(),
        Some("-128")
    );
    assert_eq!(
        text(&UInt64Array::from(vec![u64::MAX]), 0).as_deref(),
        Some("18446744073709551615")
    );
    let bools = BooleanArray::from(vec![true, false]);
    assert_eq!(text(&bools, 0).as_deref(), Some("true"));
    assert_eq!(text(&bools, 1).as_deref(), Some("false"));
    let strings = StringArray::from(vec![Some("Alice"), Some(""), None, Some("中文/é")]);
    assert_eq!(text(&strings, 0).as_deref(), Some("Alice"));
    assert_eq!(text(&strings, 1).as_deref(), Some(""));
    assert_eq!(text(&strings, 2), None);
    assert_eq!(text(&strings, 3).as_deref(), Some("中文/é"));
}

#[test]
fn doubles_follow_java_double_to_string() {
    assert_eq!(double(1.0), "1.0");
    assert_eq!(double(0.1), "0.1");
    assert_eq!(double(2.468), "2.468");
    assert_eq!(double(123.456), "123.456");
    assert_eq!(double(100.0), "100.0");
    assert_eq!(double(1.0e7), "1.0E7");
    assert_eq!(double(9_999_999.0), "9999999.0");
    assert_eq!(double(1.0e10), "1.0E10");
    assert_eq!(double(0.001), "0.001");
    assert_eq!(double(0.0001), "1.0E-4");
    assert_eq!(double(1.0e-5), "1.0E-5");
    assert_eq!(double(-2.5e-8), "-2.5E-8");
    assert_eq!(double(123456.789), "123456.789");
    assert_eq!(double(f64::MAX), "1.7976931348623157E308");
    assert_eq!(double(f64::MIN_POSITIVE), "2.2250738585072014E-308");
    assert_eq!(double(5e-324), "4.9E-324");
    assert_eq!(double(f64::NAN), "NaN");
    assert_eq!(double(f64::INFINITY), "Infinity");
    assert_eq!(double(f64::NEG_INFINITY), "-Infinity");
    assert_eq!(double(0.0), "0.0");
    assert_eq!(double(-0.0), "-0.0");
    // Integer values below 2^63 keep FloatingDecimal's extra digits (JDK 8-18), checked against Java 17.
    assert_eq!(double(1.646_067_607_953_927_2e18), "1.64606760795392717E18");
    // JDK 8-18 do not print the shortest digits here (JDK-4511638); Hudi's JVMs print these.
    assert_eq!(double(2.0e23), "1.9999999999999998E23");
    assert_eq!(double(1.0e23), "9.999999999999999E22");
    assert_eq!(double(9_007_199_254_740_993.0), "9.007199254740992E15");
}

#[test]
fn floats_follow_java_float_to_string() {
    assert_eq!(float(1.0), "1.0");
    assert_eq!(float(0.1), "0.1");
    assert_eq!(float(3.0), "3.0");
    assert_eq!(float(1.0e10), "1.0E10");
    assert_eq!(float(1.1), "1.1");
    assert_eq!(float(f32::MAX), "3.4028235E38");
    assert_eq!(float(f32::MIN_POSITIVE), "1.17549435E-38");
    assert_eq!(float(1.0e-45), "1.4E-45");
    // Integer-valued floats keep FloatingDecimal's extra digits (JDK 8-18), checked against Java 17.
    assert_eq!(float(6.456_23e10), "6.4562299E10");
    assert_eq!(float(f32::NAN), "NaN");
    assert_eq!(float(-0.0), "-0.0");
    let array = Float32Array::from(vec![2.5f32]);
    assert_eq!(text(&array, 0).as_deref(), Some("2.5"));
    let array = Float64Array::from(vec![1e21]);
    assert_eq!(text(&array, 0).as_deref(), Some("1.0E21"));
}

#[test]
fn dates_follow_local_date_to_string() {
    let dates = Date32Array::from(vec![0, 19448, -1, -719_528, 2_932_897, -719_893, -719_894]);
    assert_eq!(text(&dates, 0).as_deref(), Some("1970-01-01"));
    assert_eq!(text(&dates, 1).as_deref(), Some("2023-04-01"));
    assert_eq!(text(&dates, 2).as_deref(), Some("1969-12-31"));
    assert_eq!(text(&dates, 3).as_deref(), Some("0000-01-01"));
    assert_eq!(text(&dates, 4).as_deref(), Some("+10000-01-01"));
    assert_eq!(text(&dates, 5).as_deref(), Some("-0001-01-01"));
    assert_eq!(text(&dates, 6).as_deref(), Some("-0002-12-31"));
    let too_far = Date32Array::from(vec![i32::MAX]);
    assert!(matches!(
        write_value(&too_far, 0, ValueOptions::default(), &mut String::new()),
        Err(ValueError::OutOfRange { .. })
    ));
}

#[test]
fn timestamps_are_numbers_unless_consistent_logical_timestamps() {
    let ts = TimestampMicrosecondArray::from(vec![1_680_368_460_000_000i64, 1_680_368_460_123_456])
        .with_timezone("UTC");
    assert_eq!(text(&ts, 0).as_deref(), Some("1680368460000000"));
    let consistent = ValueOptions {
        consistent_logical_timestamp: true,
    };
    assert_eq!(
        text_with(&ts, 0, consistent).as_deref(),
        Some("2023-04-01 17:01:00.0")
    );
    assert_eq!(
        text_with(&ts, 1, consistent).as_deref(),
        Some("2023-04-01 17:01:00.123")
    );
    // Without a time zone the Avro type is local-timestamp-micros, which Hudi leaves as a number.
    let local = TimestampMicrosecondArray::from(vec![1_680_368_460_000_000i64]);
    assert_eq!(
        text_with(&local, 0, consistent).as_deref(),
        Some("1680368460000000")
    );
}

#[test]
fn decimals_follow_big_decimal_to_string() {
    let dec = |unscaled: i128, scale: i8| {
        let mut out = String::new();
        write_java_big_decimal(unscaled, scale, &mut out);
        out
    };
    assert_eq!(dec(1_234_567_890, 5), "12345.67890");
    assert_eq!(dec(-1_234_567_890, 5), "-12345.67890");
    assert_eq!(dec(5, 2), "0.05");
    assert_eq!(dec(0, 2), "0.00");
    assert_eq!(dec(0, 0), "0");
    assert_eq!(dec(123, 0), "123");
    assert_eq!(dec(1, 6), "0.000001");
    assert_eq!(dec(1, 7), "1E-7");
    assert_eq!(dec(12, 8), "1.2E-7");
    assert_eq!(dec(-12, 9), "-1.2E-8");
    assert_eq!(dec(1, -3), "1E+3");
    assert_eq!(dec(123, -2), "1.23E+4");
    assert_eq!(dec(0, -2), "0E+2");
    assert_eq!(
        dec(i128::MIN, 0),
        "-170141183460469231731687303715884105728"
    );
    let array = Decimal128Array::from(vec![1_234_567_890i128])
        .with_precision_and_scale(10, 5)
        .expect("valid");
    assert_eq!(text(&array, 0).as_deref(), Some("12345.67890"));
}

#[test]
fn binary_and_fixed() {
    let binary = BinaryArray::from(vec![b"binary data".as_ref(), b"\x00\xff".as_ref()]);
    assert_eq!(text(&binary, 0).as_deref(), Some("62696e6172792064617461"));
    assert_eq!(text(&binary, 1).as_deref(), Some("00ff"));
    let fixed =
        FixedSizeBinaryArray::try_from_iter(vec![vec![1u8, 0xfe, 127]].into_iter()).expect("fixed");
    assert_eq!(text(&fixed, 0).as_deref(), Some("[1, -2, 127]"));
}

#[test]
fn dictionary_of_strings_prints_the_symbol() {
    let mut builder = StringDictionaryBuilder::<DictKey>::new();
    builder.append_value("RED");
    builder.append_null();
    builder.append_value("BLUE");
    let dict = builder.finish();
    assert_eq!(text(&dict, 0).as_deref(), Some("RED"));
    assert_eq!(text(&dict, 1), None);
    assert_eq!(text(&dict, 2).as_deref(), Some("BLUE"));
}

fn nested_batch() -> RecordBatch {
    let inner_fields = Fields::from(vec![Field::new("leaf", DataType::Int32, true)]);
    let mut leaf = Int32Builder::new();
    leaf.append_value(7);
    leaf.append_value(8);
    leaf.append_null();
    let inner = StructArray::new(
        inner_fields.clone(),
        vec![Arc::new(leaf.finish()) as ArrayRef],
        Some(vec![true, false, true].into()),
    );
    let outer_fields = Fields::from(vec![Field::new(
        "inner",
        DataType::Struct(inner_fields),
        true,
    )]);
    let outer = StructArray::new(
        outer_fields.clone(),
        vec![Arc::new(inner) as ArrayRef],
        None,
    );
    let id = Int64Array::from(vec![1, 2, 3]);
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("outer", DataType::Struct(outer_fields), true),
    ]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(id), Arc::new(outer)]).expect("batch")
}

#[test]
fn dot_paths_resolve_once_and_null_structs_give_null() {
    let batch = nested_batch();
    let path = FieldPath::resolve(&batch.schema(), "outer.inner.leaf").expect("resolves");
    assert_eq!(path.data_type(), &DataType::Int32);
    let get = |row| {
        let mut out = String::new();
        path.write(&batch, row, ValueOptions::default(), &mut out)
            .expect("ok")
            .map(|_| out)
    };
    assert_eq!(get(0).as_deref(), Some("7"));
    assert_eq!(get(1), None, "the inner struct is null at row 1");
    assert_eq!(get(2), None, "the leaf is null at row 2");
    assert!(matches!(
        path.write(&batch, 3, ValueOptions::default(), &mut String::new()),
        Err(ValueError::RowOutOfRange { row: 3, len: 3 })
    ));
}

#[test]
fn bad_paths_name_the_missing_part() {
    let batch = nested_batch();
    let schema = batch.schema();
    let err = FieldPath::resolve(&schema, "outer.nope.leaf").expect_err("missing");
    assert!(err.to_string().contains("`nope`"), "{err}");
    assert!(
        err.to_string().contains("inner"),
        "lists what exists: {err}"
    );
    let err = FieldPath::resolve(&schema, "id.x").expect_err("not a struct");
    assert!(matches!(err, ValueError::NotAStruct { .. }), "{err}");
    let err = FieldPath::resolve(&schema, "outer").expect_err("struct leaf");
    assert!(matches!(err, ValueError::UnsupportedType { .. }), "{err}");
    let err = FieldPath::resolve(&schema, "missing").expect_err("missing top level");
    assert!(err.to_string().contains("available: id, outer"), "{err}");
}

#[test]
fn unsupported_types_are_refused() {
    assert!(check_supported(&DataType::Float16).is_err());
    assert!(check_supported(&DataType::new_list(DataType::Int32, true)).is_err());
    assert!(check_supported(&DataType::Utf8View).is_ok());
}
