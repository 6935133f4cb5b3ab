//! Unit tests of the JSON decoder: every type, every refusal, rollback and bounds.

#[test]
fn string_stop_finds_exactly_the_first_special_byte() {
    let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    // Every byte value at every position of a 20-byte run of plain text, then random mixes.
    for special in 0..=255u8 {
        for at in 0..20 {
            let mut text = vec![b'a'; 20];
            text[at] = special;
            assert_eq!(
                super::string_stop(&text),
                naive(&text),
                "{special:#x} at {at}"
            );
        }
    }
    for len in 0..300usize {
        let text: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly high and printable bytes, sometimes a special one.
                match state % 50 {
                    0 => b'"',
                    1 => b'\\',
                    2 => (state >> 8) as u8 % 0x20,
                    _ => 0x20 + (state >> 8) as u8 % 0xE0,
                }
            })
            .collect();
        assert_eq!(super::string_stop(&text), naive(&text), "{text:?}");
    }
}

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::Schema;

const TRIPS: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
    {"name":"uuid","type":"string"},
    {"name":"ts","type":"long"},
    {"name":"rider","type":["null","string"],"default":null},
    {"name":"fare","type":["null","double"],"default":null},
    {"name":"city","type":"string"},
    {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

fn decoder(avsc: &str) -> RecordDecoder {
    let avro = AvroSchema::parse(avsc).unwrap_or_else(|e| panic!("schema: {e}"));
    let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("arrow: {e}"));
    RecordDecoder::try_new(Arc::new(arrow), &avro).unwrap_or_else(|e| panic!("decoder: {e}"))
}

/// A one-field record `{"f": <type>}` (nullable when `nullable`).
fn one(field_type: &str) -> RecordDecoder {
    decoder(&format!(
        r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type}}}]}}"#
    ))
}

fn ok(d: &mut RecordDecoder, json: &str) {
    if let Err(e) = d.append(json.as_bytes()) {
        panic!("{json}: {e}");
    }
}

fn err(d: &mut RecordDecoder, json: &str) -> RecordDecodeError {
    let before = d.len();
    match d.append(json.as_bytes()) {
        Ok(()) => panic!("{json}: accepted"),
        Err(e) => {
            assert_eq!(d.len(), before, "{json}: length changed");
            e
        }
    }
}

fn batch(d: &mut RecordDecoder) -> RecordBatch {
    d.finish().unwrap_or_else(|e| panic!("finish: {e}"))
}

/// Column 0 after decoding each value of `f`, or the error text.
fn field_i64(field_type: &str, values: &[&str]) -> Vec<Result<i64, String>> {
    values
        .iter()
        .map(|v| {
            let mut d = one(field_type);
            d.append(format!(r#"{{"f":{v}}}"#).as_bytes())
                .map_err(|e| e.to_string())?;
            let b = batch(&mut d);
            let col = b.column(0);
            Ok(match col.data_type() {
                DataType::Int32 => i64::from(col.as_primitive::<Int32Type>().value(0)),
                DataType::Date32 => i64::from(col.as_primitive::<Date32Type>().value(0)),
                DataType::Time32(_) => {
                    i64::from(col.as_primitive::<Time32MillisecondType>().value(0))
                }
                DataType::Time64(_) => col.as_primitive::<Time64MicrosecondType>().value(0),
                DataType::Int64 => col.as_primitive::<Int64Type>().value(0),
                DataType::Timestamp(TimeUnit::Millisecond, _) => {
                    col.as_primitive::<TimestampMillisecondType>().value(0)
                }
                DataType::Timestamp(TimeUnit::Microsecond, _) => {
                    col.as_primitive::<TimestampMicrosecondType>().value(0)
                }
                other => panic!("{other}"),
            })
        })
        .collect()
}

#[test]
fn trips_records_decode_with_nulls_missing_and_unknown_fields() {
    let mut d = decoder(TRIPS);
    ok(
        &mut d,
        r#"{"uuid":"a","ts":1,"rider":"r1","fare":12.5,"city":"sf","_hoodie_is_deleted":false}"#,
    );
    ok(
        &mut d,
        r#"{"city":"nyc","ts":9007199254740993,"uuid":"b","rider":null}"#,
    );
    ok(
        &mut d,
        r#" {"uuid":"c\u00e9\ud83d\ude00","ts":-3,"city":"x","extra":{"deep":[1,{"a":null}]},"more":1} "#,
    );
    assert_eq!(d.len(), 3);
    assert_eq!(d.ignored_fields(), 2);
    let b = batch(&mut d);
    assert!(d.is_empty());
    assert_eq!(b.num_rows(), 3);
    let uuid = b.column(0).as_string::<i32>();
    assert_eq!(uuid.value(2), "cé😀");
    let ts = b.column(1).as_primitive::<Int64Type>();
    assert_eq!(ts.values().to_vec(), vec![1, 9_007_199_254_740_993, -3]);
    let rider = b.column(2).as_string::<i32>();
    assert_eq!(
        (rider.value(0), rider.is_null(1), rider.is_null(2)),
        ("r1", true, true)
    );
    let fare = b.column(3).as_primitive::<Float64Type>();
    assert_eq!((fare.value(0), fare.is_null(1)), (12.5, true));
    let deleted = b.column(5).as_boolean();
    assert_eq!((deleted.value(0), deleted.is_null(1)), (false, true));
    assert_eq!(b.schema(), *d.schema());
}

#[test]
fn refused_records_leave_nothing_behind() {
    let mut d = decoder(
        r#"{"type":"record","name":"r","fields":[
            {"name":"id","type":"string"},
            {"name":"tags","type":{"type":"map","values":{"type":"array","items":"string"}}},
            {"name":"stops","type":{"type":"array","items":{"type":"record","name":"stop","fields":[
                {"name":"name","type":"string"},{"name":"bin","type":"bytes"}]}}}]}"#,
    );
    ok(
        &mut d,
        r#"{"id":"1","tags":{"a":["x","y"]},"stops":[{"name":"s","bin":"AAE="}]}"#,
    );
    // Fails deep inside, after strings, map entries, list items and bytes were appended.
    let e = err(
        &mut d,
        r#"{"id":"2","tags":{"a":["p"],"b":["q"]},"stops":[{"name":"t","bin":"AAE="},{"name":"u","bin":7}]}"#,
    );
    assert_eq!(e.path(), "stops[1].bin");
    assert_eq!(
        e.to_string(),
        "field `stops[1].bin`: expected bytes, found a number"
    );
    let e = err(&mut d, r#"{"id":"3","tags":{"k":["a",null]},"stops":[]}"#);
    assert_eq!(e.path(), r#"tags["k"][1]"#);
    assert!(matches!(
        e.reason(),
        RecordDecodeReason::NullNotAllowed { .. }
    ));
    ok(
        &mut d,
        r#"{"id":"4","tags":{},"stops":[{"name":"v","bin":""}]}"#,
    );
    let b = batch(&mut d);
    assert_eq!(b.num_rows(), 2);
    assert_eq!(
        b.column(0).as_string::<i32>().iter().collect::<Vec<_>>(),
        [Some("1"), Some("4")]
    );
    let tags = b.column(1).as_map();
    assert_eq!(tags.value_offsets(), &[0, 1, 1]);
    assert_eq!(tags.keys().as_string::<i32>().value(0), "a");
    let stops = b.column(2).as_list::<i32>();
    assert_eq!(stops.value_offsets(), &[0, 1, 2]);
    let stop = stops.values().as_struct();
    assert_eq!(stop.column(0).as_string::<i32>().value(1), "v");
    assert_eq!(stop.column(1).as_binary::<i32>().value(0), &[0u8, 1]);
    // The decoder is reusable after finish.
    ok(&mut d, r#"{"id":"5","tags":{},"stops":[]}"#);
    assert_eq!(batch(&mut d).num_rows(), 1);
    assert_eq!(batch(&mut d).num_rows(), 0);
}

#[test]
fn classification_not_json_not_object_invalid() {
    let mut d = decoder(TRIPS);
    let cases: &[(&[u8], RecordErrorKind)] = &[
        (b"", RecordErrorKind::NotJson),
        (b"   ", RecordErrorKind::NotJson),
        (b"\xff{}", RecordErrorKind::NotJson),
        (b"{\"uuid\":\"a\"", RecordErrorKind::NotJson),
        (b"{} {}", RecordErrorKind::NotJson),
        (b"{\"uuid\":1,", RecordErrorKind::NotJson), // a type error first, then broken JSON
        (b"{'uuid':1}", RecordErrorKind::NotJson),
        (b"{\"a\":01}", RecordErrorKind::NotJson),
        (b"{\"a\":1,}", RecordErrorKind::NotJson),
        (b"[1,]", RecordErrorKind::NotJson),
        (b"{\"a\":\"\\ud800\"}", RecordErrorKind::NotJson),
        (b"{\"a\":\"tab\there\"}", RecordErrorKind::NotJson),
        (b"nul", RecordErrorKind::NotJson),
        (b"[1,2]", RecordErrorKind::NotObject),
        (b"\"text\"", RecordErrorKind::NotObject),
        (b"null", RecordErrorKind::NotObject),
        (b"42", RecordErrorKind::NotObject),
        (b"{\"uuid\":1}", RecordErrorKind::Invalid),
    ];
    for (input, kind) in cases {
        match d.append(input) {
            Ok(()) => panic!("{:?} accepted", String::from_utf8_lossy(input)),
            Err(e) => assert_eq!(e.kind(), *kind, "{:?}: {e}", String::from_utf8_lossy(input)),
        }
    }
    assert!(d.is_empty());
    assert_eq!(
        err(&mut d, "[1,2]").to_string(),
        "expected a JSON object, found an array"
    );
    assert_eq!(err(&mut d, "").to_string(), "not JSON: the value is empty");
    assert_eq!(
        err(&mut d, r#"{"uuid":"a"} x"#).to_string(),
        "not JSON: unexpected characters after the JSON value at byte 13"
    );
}

#[test]
fn missing_wrong_and_duplicate_fields() {
    let mut d = decoder(TRIPS);
    let e = err(&mut d, r#"{"uuid":"a","ts":1}"#);
    assert_eq!(
        e.to_string(),
        "field `city`: required field is missing (not nullable and no default)"
    );
    let e = err(&mut d, r#"{"uuid":"a","ts":"1","city":"c"}"#);
    assert_eq!(e.to_string(), "field `ts`: expected long, found a string");
    let e = err(&mut d, r#"{"uuid":null,"ts":1,"city":"c"}"#);
    assert_eq!(
        e.to_string(),
        "field `uuid`: null is not allowed: the field is a non-nullable string"
    );
    let e = err(&mut d, r#"{"uuid":"a","uuid":"b","ts":1,"city":"c"}"#);
    assert_eq!(e.to_string(), "duplicate key \"uuid\" in one object");
    let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":1,"x":2}"#);
    assert!(matches!(e.reason(), RecordDecodeReason::DuplicateKey { key } if key == "x"));
    let e = err(
        &mut d,
        r#"{"uuid":"a","ts":1,"city":"c","x":{"y":1,"y":2}}"#,
    );
    assert_eq!(e.path(), "x");
    assert!(matches!(e.reason(), RecordDecodeReason::DuplicateKey { key } if key == "y"));
    let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","fare":"12.5"}"#);
    assert_eq!(e.to_string(), "field `fare`: \"12.5\" is not a valid double: a string is accepted only as \"NaN\", \"Infinity\" or \"-Infinity\"");
    // Maps refuse duplicate keys too.
    let mut m = one(r#"{"type":"map","values":"int"}"#);
    let e = err(&mut m, r#"{"f":{"a":1,"a":2}}"#);
    assert_eq!(
        e.to_string(),
        "field `f`: duplicate key \"a\" in one object"
    );
    ok(&mut m, r#"{"f":{"a":1,"b":2}}"#);
}

#[test]
fn nesting_is_bounded() {
    let mut d = decoder(TRIPS).with_max_depth(4);
    ok(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":[[[]]]}"#);
    let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":[[[[]]]]}"#);
    assert_eq!(e.reason(), &RecordDecodeReason::TooDeep { max_depth: 4 });
    let mut d = decoder(TRIPS);
    let deep = format!(
        r#"{{"uuid":"a","ts":1,"city":"c","x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = err(&mut d, &deep);
    assert_eq!(
        e.reason(),
        &RecordDecodeReason::TooDeep {
            max_depth: DEFAULT_MAX_DEPTH
        }
    );
    // Unbalanced and deep: still reported without recursing past the limit.
    let e = err(&mut d, &"[".repeat(100_000));
    assert_eq!(e.kind(), RecordErrorKind::Invalid);
}

#[test]
fn integers_are_range_checked() {
    assert_eq!(
        field_i64(r#""int""#, &["2147483647", "-2147483648", "0", "-0"]),
        vec![Ok(2147483647), Ok(-2147483648), Ok(0), Ok(0)]
    );
    let errors = field_i64(
        r#""int""#,
        &[
            "2147483648",
            "-2147483649",
            "1.0",
            "1e3",
            "99999999999999999999999",
        ],
    );
    assert_eq!(
        errors[0],
        Err(
            "field `f`: 2147483648 is not a valid int: out of range -2147483648..=2147483647"
                .into()
        )
    );
    assert!(errors[1].is_err());
    assert_eq!(
        errors[2],
        Err("field `f`: 1.0 is not a valid int: not an integer (fraction or exponent)".into())
    );
    assert!(errors[3].is_err() && errors[4].is_err());
    assert_eq!(
        field_i64(r#""long""#, &["9223372036854775807", "-9223372036854775808", "9223372036854775808"]),
        vec![
            Ok(i64::MAX),
            Ok(i64::MIN),
            Err("field `f`: 9223372036854775808 is not a valid long: out of range -9223372036854775808..=9223372036854775807".into())
        ]
    );
}

#[test]
fn floats_and_specials() {
    let mut d = decoder(
        r#"{"type":"record","name":"r","fields":[{"name":"f","type":"float"},{"name":"d","type":"double"}]}"#,
    );
    ok(&mut d, r#"{"f":0.1,"d":0.1}"#);
    ok(&mut d, r#"{"f":"NaN","d":"-Infinity"}"#);
    ok(&mut d, r#"{"f":1e-50,"d":5e-324}"#);
    assert!(err(&mut d, r#"{"f":1e39,"d":1}"#)
        .to_string()
        .contains("overflows to infinity"));
    assert!(err(&mut d, r#"{"f":1,"d":1e309}"#)
        .to_string()
        .contains("overflows to infinity"));
    let b = batch(&mut d);
    let f = b.column(0).as_primitive::<Float32Type>();
    let g = b.column(1).as_primitive::<Float64Type>();
    assert_eq!(f.value(0), 0.1_f32);
    assert!(f.value(1).is_nan());
    assert_eq!(g.value(1), f64::NEG_INFINITY);
    assert_eq!(g.value(2), 5e-324);
}

#[test]
fn decimals_are_exact() {
    let fixed =
        r#"{"type":"fixed","name":"d","size":8,"logicalType":"decimal","precision":6,"scale":2}"#;
    let bytes = r#"{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}"#;
    for schema in [fixed, bytes] {
        let cases: &[(&str, Result<i128, &str>)] = &[
            ("1234.56", Ok(123456)),
            ("\"1234.56\"", Ok(123456)),
            ("-0.01", Ok(-1)),
            ("1.5", Ok(150)),
            ("1.500", Ok(150)),
            ("12", Ok(1200)),
            ("0", Ok(0)),
            ("-0.000", Ok(0)),
            ("1.5e2", Ok(15000)),
            ("\"1.5E-1\"", Ok(15)),
            (
                "\"1.5E-2\"",
                Err("has more than 2 digits after the decimal point"),
            ),
            ("0e999999999999999999", Ok(0)),
            (
                "0.1234567890123456789",
                Err("has more than 2 digits after the decimal point"),
            ),
            (
                "1.005",
                Err("has more than 2 digits after the decimal point"),
            ),
            ("12345.6", Err("needs 7 digits; decimal(6,2) holds 6")),
            ("1e4", Err("needs 7 digits")),
            ("\"1.2.3\"", Err("not a decimal number")),
            ("\" 1\"", Err("not a decimal number")),
            ("\"+1\"", Err("not a decimal number")),
            ("\"01\"", Err("not a decimal number")),
            ("\"\"", Err("not a decimal number")),
            ("1e999999999999999999", Err("exponent out of range")),
            ("true", Err("expected decimal(6,2), found a boolean")),
        ];
        for (json, want) in cases {
            let mut d = one(schema);
            let got = d.append(format!(r#"{{"f":{json}}}"#).as_bytes());
            match (got, want) {
                (Ok(()), Ok(v)) => {
                    let b = batch(&mut d);
                    let col = b.column(0).as_primitive::<Decimal128Type>();
                    assert_eq!(col.value(0), *v, "{json}");
                    assert_eq!(col.data_type(), &DataType::Decimal128(6, 2));
                }
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{json}: {e}"),
                (got, want) => panic!("{json}: got {got:?}, want {want:?}"),
            }
        }
    }
    // 38 digits fit, 39 do not.
    let mut d = one(r#"{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}"#);
    ok(&mut d, &format!(r#"{{"f":{}}}"#, "9".repeat(38)));
    assert!(d
        .append(format!(r#"{{"f":{}}}"#, "9".repeat(39)).as_bytes())
        .is_err());
    let b = batch(&mut d);
    assert_eq!(
        b.column(0).as_primitive::<Decimal128Type>().value(0),
        10_i128.pow(38) - 1
    );
}

#[test]
fn dates_times_and_timestamps() {
    assert_eq!(
        field_i64(
            r#"{"type":"int","logicalType":"date"}"#,
            &[
                "\"1970-01-01\"",
                "\"2024-02-29\"",
                "\"1969-12-31\"",
                "19782",
                "\"2023-02-29\"",
                "\"2024-1-01\"",
                "\"2024-01-01T00:00:00Z\""
            ]
        ),
        vec![
            Ok(0),
            Ok(19782),
            Ok(-1),
            Ok(19782),
            Err("field `f`: \"2023-02-29\" is not a valid date: no such calendar date".into()),
            Err("field `f`: \"2024-1-01\" is not a valid date: expected YYYY-MM-DD".into()),
            Err(
                "field `f`: \"2024-01-01T00:00:00Z\" is not a valid date: expected YYYY-MM-DD"
                    .into()
            ),
        ]
    );
    let ms = r#"{"type":"long","logicalType":"timestamp-millis"}"#;
    let got = field_i64(
        ms,
        &[
            "1764412800123",
            "\"2025-11-29T10:40:00.123Z\"",
            "\"2025-11-29T12:40:00.123+02:00\"",
            "\"2025-11-29T10:40:00.1234Z\"",
            "\"2025-11-29 10:40\"",
        ],
    );
    assert_eq!(got[0], Ok(1_764_412_800_123));
    assert_eq!(got[1], Ok(1_764_412_800_123));
    assert_eq!(got[2], Ok(1_764_412_800_123));
    assert!(
        got[3]
            .as_ref()
            .is_err_and(|e| e.contains("more sub-second digits")),
        "{:?}",
        got[3]
    );
    assert!(got[4].is_err());
    let us = r#"{"type":"long","logicalType":"timestamp-micros"}"#;
    assert_eq!(
        field_i64(us, &["\"1970-01-01T00:00:00.000001Z\"", "-1"]),
        vec![Ok(1), Ok(-1)]
    );
    let local = r#"{"type":"long","logicalType":"local-timestamp-millis"}"#;
    let got = field_i64(
        local,
        &["\"2025-11-29T10:40:00.123\"", "\"2025-11-29T10:40:00Z\""],
    );
    assert_eq!(got[0], Ok(1_764_412_800_123));
    assert!(got[1].is_err());
    let tm = r#"{"type":"int","logicalType":"time-millis"}"#;
    let got = field_i64(tm, &["0", "86399999", "86400000", "-1", "\"10:00\""]);
    assert_eq!(&got[..2], &[Ok(0), Ok(86_399_999)]);
    assert!(got[2..].iter().all(Result::is_err), "{got:?}");
    let tu = r#"{"type":"long","logicalType":"time-micros"}"#;
    let got = field_i64(tu, &["86399999999", "86400000000"]);
    assert_eq!(got[0], Ok(86_399_999_999));
    assert!(got[1].is_err());
}

#[test]
fn bytes_fixed_enum_and_strings() {
    let mut d = decoder(
        r#"{"type":"record","name":"r","fields":[
            {"name":"b","type":"bytes"},
            {"name":"x","type":{"type":"fixed","name":"F","size":2}},
            {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
            {"name":"u","type":{"type":"string","logicalType":"uuid"}}]}"#,
    );
    ok(
        &mut d,
        r#"{"b":"w6k=","x":"AAE=","e":"GREEN","u":"x\/y\n"}"#,
    );
    assert!(err(&mut d, r#"{"b":"w6k","x":"AAE=","e":"RED","u":""}"#)
        .to_string()
        .contains("not standard base64"));
    assert_eq!(
        err(&mut d, r#"{"b":"","x":"AAEC","e":"RED","u":""}"#).to_string(),
        "field `x`: \"AAEC\" is not a valid fixed(2): decodes to 3 bytes, the type holds exactly 2"
    );
    assert_eq!(
        err(&mut d, r#"{"b":"","x":"AAE=","e":"BLUE","u":""}"#).to_string(),
        "field `e`: \"BLUE\" is not a valid enum Color: not one of the enum's symbols"
    );
    let b = batch(&mut d);
    assert_eq!(b.num_rows(), 1);
    assert_eq!(b.column(0).as_binary::<i32>().value(0), "é".as_bytes());
    assert_eq!(b.column(1).as_fixed_size_binary().value(0), &[0, 1]);
    assert_eq!(b.column(2).as_string::<i32>().value(0), "GREEN");
    assert_eq!(b.column(3).as_string::<i32>().value(0), "x/y\n");
}

#[test]
fn defaults_fill_missing_fields() {
    let mut d = decoder(
        r#"{"type":"record","name":"r","namespace":"ns","fields":[
            {"name":"id","type":"int"},
            {"name":"i","type":"int","default":7},
            {"name":"s","type":["string","null"],"default":"dflt"},
            {"name":"n","type":["null","string"],"default":null},
            {"name":"b","type":"bytes","default":"\u00ff\u0000"},
            {"name":"f","type":"float","default":"NaN"},
            {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2},"default":"\u00ff\u0085"},
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]},"default":"B"},
            {"name":"rec","type":{"type":"record","name":"Inner","fields":[
                {"name":"x","type":"long","default":5},{"name":"y","type":["null","long"],"default":null}]},
             "default":{"x":1}},
            {"name":"arr","type":{"type":"array","items":"Inner"},"default":[{"x":2},{}]},
            {"name":"m","type":{"type":"map","values":"int"},"default":{"k":3}}]}"#,
    );
    ok(&mut d, r#"{"id":1}"#);
    ok(
        &mut d,
        r#"{"id":2,"i":8,"s":null,"n":"given","rec":{"x":9,"y":10},"arr":[],"m":{}}"#,
    );
    let b = batch(&mut d);
    let col = |name: &str| {
        b.column_by_name(name)
            .unwrap_or_else(|| panic!("{name}"))
            .clone()
    };
    assert_eq!(
        col("i").as_primitive::<Int32Type>().values().to_vec(),
        vec![7, 8]
    );
    let s = col("s");
    assert_eq!(
        (s.as_string::<i32>().value(0), s.is_null(1)),
        ("dflt", true)
    );
    let n = col("n");
    assert_eq!(
        (n.is_null(0), n.as_string::<i32>().value(1)),
        (true, "given")
    );
    assert_eq!(col("b").as_binary::<i32>().value(0), &[0xFF, 0x00]);
    assert!(col("f").as_primitive::<Float32Type>().value(0).is_nan());
    assert_eq!(col("dec").as_primitive::<Decimal128Type>().value(0), -123);
    assert_eq!(col("e").as_string::<i32>().value(0), "B");
    let rec = col("rec");
    let rec = rec.as_struct();
    assert_eq!(
        rec.column(0).as_primitive::<Int64Type>().values().to_vec(),
        vec![1, 9]
    );
    assert!(rec.column(1).is_null(0));
    let arr = col("arr");
    let arr = arr.as_list::<i32>();
    assert_eq!(arr.value_offsets(), &[0, 2, 2]);
    let inner = arr.values().as_struct();
    assert_eq!(
        inner
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec(),
        vec![2, 5]
    );
    let m = col("m");
    let m = m.as_map();
    assert_eq!(m.value_offsets(), &[0, 1, 1]);
    assert_eq!(m.values().as_primitive::<Int32Type>().value(0), 3);
}

#[test]
fn null_structs_mask_their_children() {
    let mut d = one(
        r#"["null",{"type":"record","name":"S","fields":[{"name":"a","type":"int"},{"name":"l","type":{"type":"array","items":"int"}}]}]"#,
    );
    ok(&mut d, r#"{"f":null}"#);
    ok(&mut d, r#"{}"#);
    ok(&mut d, r#"{"f":{"a":1,"l":[1,2]}}"#);
    let b = batch(&mut d);
    let s = b.column(0).as_struct();
    assert_eq!(
        (s.is_null(0), s.is_null(1), s.is_valid(2)),
        (true, true, true)
    );
    assert_eq!(s.column(0).as_primitive::<Int32Type>().value(2), 1);
    assert_eq!(s.column(1).as_list::<i32>().value_offsets(), &[0, 0, 0, 2]);
}

#[test]
fn schema_mismatch_and_bad_defaults_fail_at_construction() {
    let avro = AvroSchema::parse(TRIPS).unwrap_or_else(|e| panic!("{e}"));
    let other = Schema::new(vec![Field::new("uuid", DataType::Utf8, false)]);
    assert!(matches!(
        RecordDecoder::try_new(Arc::new(other), &avro),
        Err(DecodeError::SchemaMismatch { .. })
    ));
    let bad = AvroSchema::parse(
        r#"{"type":"record","name":"r","fields":[{"name":"b","type":{"type":"fixed","name":"F","size":2},"default":"\u00ff"}]}"#,
    );
    // The Avro validator checks only that a fixed default is a string; the size is checked here.
    let avro = bad.unwrap_or_else(|e| panic!("{e}"));
    let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("{e}"));
    match RecordDecoder::try_new(Arc::new(arrow), &avro) {
        Err(DecodeError::InvalidDefault { path, reason, .. }) => {
            assert_eq!(
                (path.as_str(), reason.as_str()),
                ("b", "1 bytes for a fixed(2)")
            );
        }
        other => panic!("{other:?}"),
    }
}
