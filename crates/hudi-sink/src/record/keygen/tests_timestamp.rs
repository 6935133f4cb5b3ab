//! Unit tests of the timestamp-based key generator and the Joda-Time patterns.

use arrow_array::{ArrayRef, Int64Array, TimestampMillisecondArray};

use super::tests::{batch, ints, props, strings};
use super::*;
use std::sync::Arc;

fn timestamp_generator(
    extra: &[(&str, &str)],
    batch: &RecordBatch,
) -> Result<KeyGenerator, KeyGenError> {
    let mut pairs = vec![
        (TABLE_RECORD_KEY, "id"),
        (TABLE_PARTITION, "ts"),
        (
            TABLE_KEYGEN_CLASS,
            "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        ),
    ];
    pairs.extend_from_slice(extra);
    let config = KeyGenConfig::from_properties(&props(&pairs))?;
    KeyGenerator::try_new(config, &batch.schema())
}

fn paths(keygen: &KeyGenerator, batch: &RecordBatch) -> Vec<Result<String, String>> {
    keygen
        .keys(batch)
        .into_iter()
        .map(|r| r.map(|(_, p)| p).map_err(|e| e.to_string()))
        .collect()
}

#[test]
fn date_strings_as_the_golden_table() {
    let batch = batch(vec![
        ("id", ints(&[Some(1), Some(2), Some(3), Some(4), Some(5)])),
        (
            "ts",
            strings(&[
                Some("2023-04-01T12:01:00.123Z"),
                Some("2023-04-04T13:01:00.123Z"),
                Some("2023-04-01T23:30:00.000-0200"),
                None,
                Some("not a date"),
            ]),
        ),
    ]);
    let keygen = timestamp_generator(
        &[
            (TS_TYPE, "DATE_STRING"),
            (TS_INPUT_FORMAT, "yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
            (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
        ],
        &batch,
    )
    .expect("generator");
    let got = paths(&keygen, &batch);
    assert_eq!(got[0].as_deref(), Ok("2023/04/01/12"));
    assert_eq!(got[1].as_deref(), Ok("2023/04/04/13"));
    assert_eq!(
        got[2].as_deref(),
        Ok("2023/04/01/23"),
        "no output zone: the parsed offset's wall clock"
    );
    assert_eq!(
        got[3].as_deref(),
        Ok("1970/01/01/00"),
        "null: Hudi's default of epoch + 1 ms"
    );
    assert!(
        got[4].as_ref().is_err_and(|e| e.contains("not a date")),
        "{:?}",
        got[4]
    );

    let utc_out = timestamp_generator(
        &[
            (TS_TYPE, "DATE_STRING"),
            (TS_INPUT_FORMAT, "yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
            (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
            (TS_OUTPUT_TIMEZONE, "UTC"),
            (HIVE_STYLE, "true"),
        ],
        &batch,
    )
    .expect("generator");
    assert_eq!(
        paths(&utc_out, &batch)[2].as_deref(),
        Ok("ts=2023/04/02/01")
    );
}

#[test]
fn epoch_inputs_and_zones() {
    let millis = Arc::new(Int64Array::from(vec![
        Some(1_578_283_932_000),
        None,
        Some(-1),
        Some(i64::MAX),
    ])) as ArrayRef;
    let batch = batch(vec![
        ("id", ints(&[Some(1), Some(2), Some(3), Some(4)])),
        ("ts", millis),
    ]);
    // Hudi's own test: 1578283932000 ms in GMT+8 with "yyyy-MM-dd hh" is "2020-01-06 12".
    let keygen = timestamp_generator(
        &[
            (TS_TYPE, "EPOCHMILLISECONDS"),
            (TS_OUTPUT_FORMAT, "yyyy-MM-dd hh"),
            (TS_TIMEZONE, "GMT+8:00"),
        ],
        &batch,
    )
    .expect("generator");
    let got = paths(&keygen, &batch);
    assert_eq!(got[0].as_deref(), Ok("2020-01-06 12"));
    assert_eq!(
        got[1].as_deref(),
        Ok("1970-01-01 08"),
        "null: 1 ms after the epoch"
    );
    assert_eq!(got[2].as_deref(), Ok("1970-01-01 07"));

    let seconds = timestamp_generator(
        &[
            (TS_TYPE, "UNIX_TIMESTAMP"),
            (TS_OUTPUT_FORMAT, "yyyyMMddHHmmss"),
        ],
        &batch,
    )
    .expect("generator");
    let got = paths(&seconds, &batch);
    assert_eq!(got[0].as_deref(), Ok("519831030032000"), "year 51983");
    assert!(
        got[3].as_ref().is_err_and(|e| e.contains("outside")),
        "year 292 million: {:?}",
        got[3]
    );
    assert_eq!(
        got[1].as_deref(),
        Ok("19700101000001"),
        "null: 1 second after the epoch"
    );
    assert_eq!(got[2].as_deref(), Ok("19691231235959"));
    let micros = timestamp_generator(
        &[(TS_TYPE, "EPOCHMICROSECONDS"), (TS_OUTPUT_FORMAT, "yyyy")],
        &batch,
    )
    .expect("generator");
    assert_eq!(paths(&micros, &batch)[0].as_deref(), Ok("1970"));
    let scalar = timestamp_generator(
        &[
            (TS_TYPE, "SCALAR"),
            (TS_SCALAR_UNIT, "days"),
            (TS_OUTPUT_FORMAT, "yyyy-MM-dd"),
        ],
        &batch,
    )
    .expect("generator");
    assert_eq!(paths(&scalar, &batch)[1].as_deref(), Ok("1970-01-02"));
}

#[test]
fn timestamp_configuration_errors() {
    let batch = batch(vec![
        ("id", ints(&[Some(1)])),
        ("ts", strings(&[Some("x")])),
    ]);
    assert!(matches!(
        timestamp_generator(&[(TS_OUTPUT_FORMAT, "yyyy")], &batch),
        Err(KeyGenError::MissingProperty { key: TS_TYPE, .. })
    ));
    assert!(matches!(
        timestamp_generator(
            &[(TS_TYPE, "DATE_STRING"), (TS_OUTPUT_FORMAT, "yyyy")],
            &batch
        ),
        Err(KeyGenError::MissingProperty {
            key: TS_INPUT_FORMAT,
            ..
        })
    ));
    assert!(matches!(
        timestamp_generator(
            &[(TS_TYPE, "EPOCHMILLISECONDS"), (TS_OUTPUT_FORMAT, "yyyy")],
            &batch
        ),
        Err(KeyGenError::TimestampFieldType { .. })
    ));
    for bad in [
        "yyyy-ww",
        "YYYY",
        "yyyy zzz",
        "yyyy 'open",
        "yyyy ZZZ",
        "yyyy G",
    ] {
        let err = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy"),
                (TS_OUTPUT_FORMAT, bad),
            ],
            &batch,
        )
        .expect_err(bad);
        assert!(
            matches!(err, KeyGenError::UnsupportedDatePattern { .. }),
            "{bad}: {err}"
        );
    }
    for bad_input in ["yy-MM", "yyyy-DDD", "EEE yyyy"] {
        assert!(
            timestamp_generator(
                &[
                    (TS_TYPE, "DATE_STRING"),
                    (TS_INPUT_FORMAT, bad_input),
                    (TS_OUTPUT_FORMAT, "yyyy")
                ],
                &batch
            )
            .is_err(),
            "{bad_input}"
        );
    }
    for zone in ["Europe/Paris", "UTC+01:00", "GMT+25", "GMT+1:5"] {
        let err = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy"),
                (TS_OUTPUT_FORMAT, "yyyy"),
                (TS_TIMEZONE, zone),
            ],
            &batch,
        )
        .expect_err(zone);
        assert!(err.to_string().contains(TS_TIMEZONE), "{err}");
    }
    // The deprecated spelling is read too.
    assert!(timestamp_generator(
        &[
            (
                "hoodie.deltastreamer.keygen.timebased.timestamp.type",
                "DATE_STRING"
            ),
            (TS_INPUT_FORMAT, "yyyy"),
            (TS_OUTPUT_FORMAT, "yyyy"),
        ],
        &batch
    )
    .is_ok());
}

#[test]
fn timezone_ids() {
    let offset = |id| {
        parse_java_timezone(TS_TIMEZONE, id)
            .expect(id)
            .map(|o| o.local_minus_utc())
    };
    assert_eq!(offset("UTC"), Some(0));
    assert_eq!(offset("GMT"), Some(0));
    assert_eq!(offset("Etc/UTC"), Some(0));
    assert_eq!(offset("GMT+8"), Some(8 * 3600));
    assert_eq!(offset("GMT+8:00"), Some(8 * 3600));
    assert_eq!(offset("GMT-05:30"), Some(-(5 * 3600 + 1800)));
    assert_eq!(offset("GMT+0530"), Some(5 * 3600 + 1800));
    assert_eq!(offset(""), None);
}

fn pattern(p: &str) -> DatePattern {
    DatePattern::compile(TS_OUTPUT_FORMAT, p, false).expect(p)
}

fn format(p: &str, millis: i64, offset_seconds: i32) -> String {
    let mut out = String::new();
    pattern(p)
        .format(
            millis,
            FixedOffset::east_opt(offset_seconds).expect("offset"),
            &mut out,
        )
        .expect("format");
    out
}

#[test]
fn joda_formatting() {
    // 2023-04-01T12:01:02.034Z, a Saturday.
    let t = 1_680_350_462_034;
    assert_eq!(format("yyyy/MM/dd/HH", t, 0), "2023/04/01/12");
    assert_eq!(
        format("yyyy-MM-dd'T'HH:mm:ss.SSSZ", t, 0),
        "2023-04-01T12:01:02.034+0000"
    );
    assert_eq!(
        format("yyyy-MM-dd'T'HH:mm:ss.SSSZZ", t, -(5 * 3600 + 1800)),
        "2023-04-01T06:31:02.034-05:30"
    );
    assert_eq!(format("y-M-d H:m:s.S", t, 0), "2023-4-1 12:1:2.0");
    assert_eq!(
        format("yy MMM MMMM EEE EEEE D DDD", t, 0),
        "23 Apr April Sat Saturday 91 091"
    );
    assert_eq!(format("hh:mm a K k", t, 0), "12:01 PM 0 12");
    assert_eq!(format("hh a k", 0, 0), "12 AM 24");
    assert_eq!(format("SSSSS", t, 0), "03400");
    assert_eq!(format("'quoted ''x''' yyyy''", t, 0), "quoted 'x' 2023'");
    assert_eq!(format("yyyy", -62_198_755_200_000, 0), "-0001");
    assert_eq!(format("yyyyMMdd", 253_402_300_800_000, 0), "100000101");
}

fn parse(p: &str, text: &str) -> Result<(i64, i32), String> {
    let compiled = DatePattern::compile(TS_INPUT_FORMAT, p, true).expect(p);
    let (end, fields) = compiled
        .parse(text)
        .map_err(|at| format!("failed at {at}"))?;
    if end != text.len() {
        return Err(format!("stopped at {end}"));
    }
    fields
        .resolve(None)
        .map(|(ms, zone)| (ms, zone.local_minus_utc()))
}

#[test]
fn joda_parsing() {
    assert_eq!(
        parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-04-01T12:01:00.123Z"),
        Ok((1_680_350_460_123, 0))
    );
    assert_eq!(
        parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-04-01T12:01:00.123+0530"),
        Ok((1_680_350_460_123 - 19_800_000, 19_800))
    );
    assert_eq!(
        parse(
            "yyyy-MM-dd'T'HH:mm:ss.SSSZZ",
            "2023-04-01T12:01:00.123-02:00"
        ),
        Ok((1_680_350_460_123 + 7_200_000, -7_200))
    );
    assert_eq!(parse("yyyyMMdd", "20230401"), Ok((1_680_307_200_000, 0)));
    assert_eq!(parse("yyyy-M-d", "2023-4-1"), Ok((1_680_307_200_000, 0)));
    assert_eq!(
        parse("dd MMM yyyy hh:mm a", "01 apr 2023 01:30 pm"),
        Ok((1_680_355_800_000, 0))
    );
    assert_eq!(
        parse("dd MMMM yyyy", "01 April 2023"),
        Ok((1_680_307_200_000, 0))
    );
    assert_eq!(
        parse("yyyy-MM-dd't'HH", "2023-04-01T12"),
        Ok((1_680_350_400_000, 0)),
        "literals ignore case"
    );
    assert_eq!(
        parse("yyyy.SSS", "2023.5"),
        Ok((1_672_531_200_500, 0)),
        "one fraction digit is tenths"
    );
    // Extra fraction digits are truncated to milliseconds; long fractions do not overflow.
    let nines = format!("yyyy.{}", "S".repeat(18));
    assert_eq!(
        parse(&nines, &format!("2023.{}", "9".repeat(18))).map(|r| r.0),
        Ok(1_672_531_200_999)
    );
    let zeros = format!("yyyy.{}", "S".repeat(25));
    assert_eq!(
        parse(&zeros, &format!("2023.{}", "0".repeat(25))).map(|r| r.0),
        Ok(1_672_531_200_000)
    );
    assert!(parse("yyyy-MM-dd", "2023-02-30").is_err_and(|e| e.contains("not a date")));
    assert!(parse("yyyy-MM-dd", "2023-13-01").is_err());
    assert!(parse("yyyy-MM-dd", "2023-04-01x").is_err_and(|e| e.contains("stopped")));
    assert!(parse("yyyy-MM-dd", "2023/04/01").is_err());
    assert!(parse("HH", "24").is_err());
}

#[test]
fn several_input_formats_longest_match_wins() {
    let batch = batch(vec![
        ("id", ints(&[Some(1), Some(2)])),
        ("ts", strings(&[Some("2023-04-01"), Some("2023-04-01 13")])),
    ]);
    let keygen = timestamp_generator(
        &[
            (TS_TYPE, "DATE_STRING"),
            (TS_INPUT_FORMAT, "yyyy-MM-dd, yyyy-MM-dd HH"),
            (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
        ],
        &batch,
    )
    .expect("generator");
    let got = paths(&keygen, &batch);
    assert_eq!(got[0].as_deref(), Ok("2023/04/01/00"));
    assert_eq!(got[1].as_deref(), Ok("2023/04/01/13"));
}

#[test]
fn consistent_logical_timestamps_read_instants() {
    let ts = TimestampMillisecondArray::from(vec![1_680_350_460_123i64]).with_timezone("UTC");
    let batch = batch(vec![
        ("id", ints(&[Some(1)])),
        ("ts", Arc::new(ts) as ArrayRef),
    ]);
    // Without the option the stored number is read in the configured unit (here seconds, as Hudi would).
    let raw = timestamp_generator(
        &[
            (TS_TYPE, "EPOCHMILLISECONDS"),
            (TS_OUTPUT_FORMAT, "yyyy-MM-dd"),
        ],
        &batch,
    )
    .expect("generator");
    assert_eq!(paths(&raw, &batch)[0].as_deref(), Ok("2023-04-01"));
    let instant = timestamp_generator(
        &[
            (TS_TYPE, "DATE_STRING"),
            (TS_INPUT_FORMAT, "yyyy"),
            (TS_OUTPUT_FORMAT, "yyyy-MM-dd HH"),
            (CONSISTENT_LOGICAL_TIMESTAMP, "true"),
        ],
        &batch,
    )
    .expect("a Timestamp needs no unit");
    assert_eq!(paths(&instant, &batch)[0].as_deref(), Ok("2023-04-01 12"));
}
