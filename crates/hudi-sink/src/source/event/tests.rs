use super::raw::decode_base64;
use super::*;

/// A complete `aws:kafka` invocation payload, in the shape of the example event of AWS's guide to Lambda with
/// Amazon MSK.
const REFERENCE_SAMPLE: &str = r#"{
  "eventSource": "aws:kafka",
  "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/orders-cluster/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3",
  "bootstrapServers": "b-1.orderscluster.x1y2z3.c3.kafka.eu-west-1.amazonaws.com:9098,b-2.orderscluster.x1y2z3.c3.kafka.eu-west-1.amazonaws.com:9098",
  "records": {
    "orders.v1-0": [
      {
        "topic": "orders.v1", "partition": 0, "offset": 1200,
        "timestamp": 1764412800123, "timestampType": "CREATE_TIME",
        "key": "b3JkZXItNDI=",
        "value": "eyJvcmRlcl9pZCI6NDIsImFtb3VudF9jZW50cyI6MTk5OSwic3RhdHVzIjoiUEFJRCJ9",
        "headers": [
          { "content-type": [97,112,112,108,105,99,97,116,105,111,110,47,106,115,111,110] },
          { "origin": [99,97,102,-61,-87] }
        ]
      },
      {
        "topic": "orders.v1", "partition": 0, "offset": 1202,
        "timestamp": 1764412800456, "timestampType": "CREATE_TIME",
        "key": "b3JkZXItNDM=",
        "value": "eyJvcmRlcl9pZCI6NDMsImFtb3VudF9jZW50cyI6NTAwLCJzdGF0dXMiOiJORVcifQ==",
        "headers": []
      }
    ],
    "orders.v1-3": [
      {
        "topic": "orders.v1", "partition": 3, "offset": 877,
        "timestamp": 1764412799001, "timestampType": "LOG_APPEND_TIME",
        "value": "eyJvcmRlcl9pZCI6NywiYW1vdW50X2NlbnRzIjoxMjAsInN0YXR1cyI6Ik5FVyJ9",
        "headers": []
      }
    ]
  }
}"#;

fn parse(text: &str) -> KafkaBatch {
    match KafkaBatch::from_json_str(text) {
        Ok(b) => b,
        Err(e) => panic!("parse failed: {e}"),
    }
}

fn parse_err(text: &str) -> EventError {
    match KafkaBatch::from_json_str(text) {
        Ok(b) => panic!("expected an error, parsed {b:?}"),
        Err(e) => e,
    }
}

fn one_record(record: &str) -> String {
    format!(
        r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"h:9092","records":{{"t-0":[{record}]}}}}"#
    )
}

#[test]
fn reference_sample_parses_exactly() {
    let batch = parse(REFERENCE_SAMPLE);
    assert!(
        matches!(&batch.source, EventSource::Msk { event_source_arn, bootstrap_servers: Some(b) }
        if event_source_arn.ends_with("0d6e2f8b1c77-3") && b.contains(",b-2."))
    );
    assert_eq!(batch.len(), 3);
    let r = &batch.records;
    assert_eq!(
        (&*r[0].topic, r[0].partition, r[0].offset),
        ("orders.v1", 0, 1200)
    );
    assert_eq!((r[1].partition, r[1].offset), (0, 1202));
    assert_eq!((r[2].partition, r[2].offset), (3, 877));
    // aws_lambda_events would give …122 and …000 here.
    assert_eq!(r[0].timestamp_ms, 1_764_412_800_123);
    assert_eq!(r[1].timestamp_ms, 1_764_412_800_456);
    assert_eq!(r[2].timestamp_ms, 1_764_412_799_001);
    assert_eq!(r[0].timestamp_type, Some(TimestampType::CreateTime));
    assert_eq!(r[2].timestamp_type, Some(TimestampType::LogAppendTime));
    assert_eq!(r[0].key.as_deref(), Some(&b"order-42"[..]));
    assert_eq!(r[2].key, None);
    assert_eq!(
        r[0].payload(),
        Payload::Value(br#"{"order_id":42,"amount_cents":1999,"status":"PAID"}"#)
    );
    // Decoded text is not kept, yet given back exactly as delivered.
    assert_eq!(r[0].raw_value_b64, None);
    assert_eq!(
        r[0].value_b64().as_deref(),
        Some("eyJvcmRlcl9pZCI6NDIsImFtb3VudF9jZW50cyI6MTk5OSwic3RhdHVzIjoiUEFJRCJ9")
    );
    assert_eq!(r[0].key_b64().as_deref(), Some("b3JkZXItNDI="));
    assert_eq!(r[2].key_b64(), None);
    assert_eq!(
        r[0].headers,
        vec![
            ("content-type".to_string(), b"application/json".to_vec()),
            ("origin".to_string(), "café".as_bytes().to_vec()),
        ]
    );
    assert!(r[1].headers.is_empty());
}

#[test]
fn timestamps_that_f64_would_round_are_exact() {
    for ts in [
        1_700_000_000_001_i64,
        9_007_199_254_740_993, // 2^53 + 1: the first integer f64 cannot hold
        i64::MAX,
        -1, // NO_TIMESTAMP
    ] {
        let text = one_record(&format!(
            r#"{{"topic":"t","partition":0,"offset":5,"timestamp":{ts},"timestampType":"CREATE_TIME","value":"e30=","headers":[]}}"#
        ));
        assert_eq!(parse(&text).records[0].timestamp_ms, ts, "{ts}");
    }
    // A float or an out-of-range integer is refused, not rounded.
    for ts in [
        "1700000000001.0",
        "1.7e12",
        "9223372036854775808",
        "\"1700000000001\"",
    ] {
        let text = one_record(&format!(
            r#"{{"topic":"t","partition":0,"offset":5,"timestamp":{ts}}}"#
        ));
        assert!(
            matches!(parse_err(&text), EventError::Json { .. }),
            "{ts} accepted"
        );
    }
}

#[test]
fn simd_base64_decides_exactly_as_the_base64_crate() {
    // Every string of up to 5 characters over an alphabet with the edge cases (padding, a character whose
    // low bits are set, one outside the alphabet), plus random longer strings.
    let chars: Vec<u8> = b"AQgw+/=_ -".to_vec();
    let mut cases: Vec<Vec<u8>> = vec![Vec::new()];
    let mut frontier = cases.clone();
    for _ in 0..5 {
        frontier = frontier
            .iter()
            .flat_map(|p| chars.iter().map(move |c| [p.as_slice(), &[*c]].concat()))
            .collect();
        cases.extend(frontier.iter().cloned());
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for len in 0..400usize {
        let mut bytes = vec![0u8; len];
        for b in &mut bytes {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        let good = STANDARD.encode(&bytes).into_bytes();
        cases.push(good.clone());
        // The same text with one character changed, and cut short.
        for (i, c) in [(len % 7, b'='), (len % 5, b'*'), (len / 2, b'A')] {
            let mut bad = good.clone();
            if let Some(x) = bad.get_mut(i) {
                *x = c;
            }
            cases.push(bad);
        }
        cases.push(good[..good.len().saturating_sub(1)].to_vec());
    }
    for case in &cases {
        let mut arena = b"before".to_vec();
        let decoded = decode_base64(case, &mut arena).map(|range| arena[range].to_vec());
        if decoded.is_err() {
            assert_eq!(
                arena, b"before",
                "a refused text leaves the buffer as it was"
            );
        }
        assert_eq!(
            decoded.ok(),
            STANDARD.decode(case).ok(),
            "{:?}",
            String::from_utf8_lossy(case)
        );
        assert_eq!(
            base64_simd::STANDARD.decode_to_vec(case).is_ok(),
            STANDARD.decode(case).is_ok(),
            "{:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn tombstones_nulls_and_bad_base64() {
    let batch = parse(
        r#"{"eventSource":"SelfManagedKafka","bootstrapServers":"h:9092","records":{"t-0":[
            {"topic":"t","partition":0,"offset":1,"timestamp":1,"key":"YQ==","value":null,"headers":[]},
            {"topic":"t","partition":0,"offset":2,"timestamp":1,"key":"YQ=="},
            {"topic":"t","partition":0,"offset":3,"timestamp":1,"value":""},
            {"topic":"t","partition":0,"offset":4,"timestamp":1,"value":"not base64!"},
            {"topic":"t","partition":0,"offset":5,"timestamp":1,"key":"%%","value":"e30="},
            {"topic":"t","partition":0,"offset":6,"timestamp":1,"value":"e30"},
            {"topic":"t","partition":0,"offset":7,"timestamp":1,"value":"e30=","headers":null}
        ]}}"#,
    );
    let r = &batch.records;
    assert_eq!(r[0].payload(), Payload::Tombstone);
    assert_eq!(r[0].key.as_deref(), Some(&b"a"[..]));
    assert_eq!(r[1].payload(), Payload::Tombstone);
    assert_eq!(
        r[2].payload(),
        Payload::Value(b""),
        "empty is not a tombstone"
    );
    let Payload::Undecodable(e) = r[3].payload() else {
        panic!("{:?}", r[3]);
    };
    assert_eq!(e.part, RecordPart::Value);
    assert_eq!(r[3].raw_value_b64.as_deref(), Some("not base64!"));
    let Payload::Undecodable(e) = r[4].payload() else {
        panic!("{:?}", r[4]);
    };
    assert_eq!(e.part, RecordPart::Key);
    assert_eq!(r[4].raw_key_b64.as_deref(), Some("%%"));
    assert!(
        matches!(r[5].payload(), Payload::Undecodable(_)),
        "unpadded base64 is not canonical"
    );
    assert_eq!(r[6].payload(), Payload::Value(b"{}"));
    assert!(r[6].headers.is_empty());
}

#[test]
fn headers_keep_order_duplicates_and_signed_bytes() {
    let batch = parse(&one_record(
        r#"{"topic":"t","partition":0,"offset":1,"timestamp":1,"headers":[
            {"a":[-128,-1,0,127]},{"a":[]},{"b":null},{"c":[104],"d":[105]},{}]}"#,
    ));
    assert_eq!(
        batch.records[0].headers,
        vec![
            ("a".into(), vec![0x80, 0xFF, 0x00, 0x7F]),
            ("a".into(), vec![]),
            ("b".into(), vec![]),
            ("c".into(), b"h".to_vec()),
            ("d".into(), b"i".to_vec()),
        ]
    );
    for bad in ["[128]", "[-129]", "[1.5]", "\"aGk=\""] {
        let text = one_record(&format!(
            r#"{{"topic":"t","partition":0,"offset":1,"timestamp":1,"headers":[{{"h":{bad}}}]}}"#
        ));
        let err = parse_err(&text).to_string();
        assert!(err.contains("header \"h\""), "{bad}: {err}");
    }
}

#[test]
fn envelope_errors_name_the_field() {
    assert!(matches!(parse_err("not json"), EventError::Json { .. }));
    // serde reads a struct from an array too; an empty one then lacks `eventSource`.
    assert!(matches!(
        parse_err("[]"),
        EventError::MissingField {
            field: "eventSource",
            ..
        }
    ));
    assert!(matches!(parse_err("[1]"), EventError::Json { .. }));
    assert!(matches!(
        parse_err(r#"{"Records":[]}"#),
        EventError::MissingField {
            field: "eventSource",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"eventSource":"aws:kafka","records":{}}"#),
        EventError::MissingField {
            field: "eventSourceArn",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"eventSource":"SelfManagedKafka","records":{}}"#),
        EventError::MissingField {
            field: "bootstrapServers",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"eventSource":"aws:kafka","eventSourceArn":"arn"}"#),
        EventError::MissingField {
            field: "records",
            ..
        }
    ));
    assert!(matches!(
        parse_err(r#"{"eventSource":"aws:SelfManagedKafka","bootstrapServers":"h","records":{}}"#),
        EventError::NotKafka { found } if found == "aws:SelfManagedKafka"
    ));
    assert!(matches!(
        parse_err(r#"{"eventSource":"aws:sqs","records":{}}"#),
        EventError::NotKafka { .. }
    ));
    // Missing record fields name the field, the key and the index.
    let err = parse_err(&one_record(r#"{"topic":"t","partition":0,"timestamp":1}"#));
    let text = err.to_string();
    assert!(
        text.contains("records[\"t-0\"][0]") && text.contains("`offset`"),
        "{text}"
    );
    let text = parse_err(&one_record(
        r#"{"topic":"t","partition":"0","offset":1,"timestamp":1}"#,
    ))
    .to_string();
    assert!(text.contains("records[\"t-0\"][0]"), "{text}");
    // An empty batch is fine.
    assert!(parse(r#"{"eventSource":"aws:kafka","eventSourceArn":"arn","records":{}}"#).is_empty());
}

#[test]
fn keys_must_agree_with_their_records() {
    for key in [
        "t-1", "u-0", "t0", "t-00", "t-+0", "t--0", "t-", "t-0-0", "t-0 ",
    ] {
        let text = format!(
            r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{{"{key}":[{{"topic":"t","partition":0,"offset":1,"timestamp":1}}]}}}}"#
        );
        assert!(
            matches!(parse_err(&text), EventError::KeyMismatch { .. }),
            "{key}"
        );
    }
    // Topic names may contain '-' and '.'.
    let text = r#"{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{"my-topic.v2-10":[{"topic":"my-topic.v2","partition":10,"offset":1,"timestamp":1}]}}"#;
    assert_eq!(parse(text).records[0].partition, 10);
}

#[test]
fn topics_that_kafka_refuses_are_envelope_errors() {
    // They would otherwise name dead-letter objects (`<topic>/<partition>/…`) outside their prefix.
    let long = "t".repeat(250);
    for topic in [
        "..",
        ".",
        "a/b",
        "../x",
        r"a\\b",
        r"t\u0000",
        "caf\u{e9}",
        "a b",
        long.as_str(),
    ] {
        let text = format!(
            r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{{"{topic}-0":[{{"topic":"{topic}","partition":0,"offset":1,"timestamp":1}}]}}}}"#
        );
        let err = parse_err(&text);
        assert!(
            matches!(err, EventError::InvalidRecordField { field: "topic", .. }),
            "{topic}: {err}"
        );
        assert!(err.to_string().contains("not a Kafka topic name"), "{err}");
    }
    let ok = "a".repeat(249);
    for topic in ["orders.v1", "my_topic-2", "...", ok.as_str()] {
        let text = format!(
            r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{{"{topic}-0":[{{"topic":"{topic}","partition":0,"offset":1,"timestamp":1}}]}}}}"#
        );
        assert_eq!(&*parse(&text).records[0].topic, topic);
    }
}

#[test]
fn offsets_must_increase_and_keys_be_unique() {
    let text = one_record(
        r#"{"topic":"t","partition":0,"offset":5,"timestamp":1},{"topic":"t","partition":0,"offset":5,"timestamp":1}"#,
    );
    assert!(matches!(
        parse_err(&text),
        EventError::OffsetOrder {
            previous: 5,
            offset: 5,
            ..
        }
    ));
    let text = r#"{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{"t-0":[],"t-0":[]}}"#;
    assert!(matches!(parse_err(text), EventError::DuplicateKey { .. }));
    for (field, record) in [
        (
            "partition",
            r#"{"topic":"t","partition":-1,"offset":1,"timestamp":1}"#,
        ),
        (
            "offset",
            r#"{"topic":"t","partition":0,"offset":-3,"timestamp":1}"#,
        ),
        (
            "topic",
            r#"{"topic":"","partition":0,"offset":1,"timestamp":1}"#,
        ),
    ] {
        assert!(
            matches!(parse_err(&one_record(record)), EventError::InvalidRecordField { field: f, .. } if f == field),
            "{field}"
        );
    }
}

#[test]
fn delivery_order_is_kept() {
    let text = r#"{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{
        "b-1":[{"topic":"b","partition":1,"offset":9,"timestamp":1}],
        "a-0":[{"topic":"a","partition":0,"offset":3,"timestamp":1},{"topic":"a","partition":0,"offset":7,"timestamp":1}]}}"#;
    let batch = parse(text);
    let order: Vec<_> = batch
        .records
        .iter()
        .map(|r| (&*r.topic, r.offset))
        .collect();
    assert_eq!(order, [("b", 9), ("a", 3), ("a", 7)]);
}

#[test]
fn deserialize_impl_and_from_value_agree() {
    let via_serde: KafkaBatch = match serde_json::from_str(REFERENCE_SAMPLE) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    };
    let value: serde_json::Value = match serde_json::from_str(REFERENCE_SAMPLE) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    };
    let via_value = match KafkaBatch::from_value(value) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(via_serde, parse(REFERENCE_SAMPLE));
    assert_eq!(via_value, via_serde);
    let bad = r#"{"eventSource":"aws:kafka","records":{}}"#;
    let err = serde_json::from_str::<KafkaBatch>(bad)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("eventSourceArn"), "{err}");
}

#[test]
fn source_of_reads_the_source_the_full_parse_reads_in_any_field_order() {
    let records =
        r#""records":{"t-0":[{"topic":"t","partition":0,"offset":1,"timestamp":5,"value":null}]}"#;
    let payloads = [
        // The ESM's order: the records last, read no further.
        format!(
            r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn:a","bootstrapServers":"b:1",{records}}}"#
        ),
        // The records first, or before the optional brokers of an MSK event: skipped, and the fields after read.
        format!(
            r#"{{{records},"eventSource":"aws:kafka","eventSourceArn":"arn:a","bootstrapServers":"b:1"}}"#
        ),
        format!(
            r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn:a",{records},"bootstrapServers":"b:2"}}"#
        ),
        format!(r#"{{"eventSource":"aws:kafka","eventSourceArn":"arn:a",{records}}}"#),
        format!(r#"{{"bootstrapServers":"k:9092","eventSource":"SelfManagedKafka",{records}}}"#),
    ];
    for payload in &payloads {
        let full = KafkaBatch::from_slice(payload.as_bytes())
            .unwrap_or_else(|e| panic!("{payload}: {e}"))
            .source;
        let peeked =
            KafkaBatch::source_of(payload.as_bytes()).unwrap_or_else(|e| panic!("{payload}: {e}"));
        assert_eq!(peeked, full, "{payload}");
    }
    // The errors of the fields are the full parse's.
    for (payload, want) in [
        (
            format!(r#"{{{records}}}"#),
            "required field `eventSource` is missing",
        ),
        (
            format!(r#"{{"eventSource":"aws:lambda",{records}}}"#),
            "eventSource is \"aws:lambda\"",
        ),
        (
            format!(r#"{{"eventSource":"aws:kafka",{records}}}"#),
            "required field `eventSourceArn` is missing",
        ),
        ("[1,2]".to_string(), "invalid Kafka event payload"),
        (
            r#"{"eventSource": 5}"#.to_string(),
            "invalid Kafka event payload",
        ),
    ] {
        let err = KafkaBatch::source_of(payload.as_bytes())
            .map(|s| format!("{s:?}"))
            .expect_err(&payload)
            .to_string();
        assert!(err.contains(want), "{payload}: {err}");
    }
}
