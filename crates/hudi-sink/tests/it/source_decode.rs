//! Every sample event under `events/` through the source and decode stages, as the writer will run them: parse
//! the ESM payload, then per record decode the value with the trips schema (`events/schema/trips.avsc`), treat
//! a keyed tombstone as a delete, and turn everything else into a dead letter built where it failed. The exact
//! outcome of every record is asserted (row values, or stage and reason), and so is the accounting of
//! docs/architecture.md, "Dead letters": records in = rows decoded + deletes + dead letters.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use hudi_sink::dead_letter::{DeadLetter, DeadLetterSink, DeadLetterStage, StorageDeadLetterSink};
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::source::{EventSource, KafkaBatch, Offset, Payload, TimestampType, TopicPartition};
use hudi_sink::storage::memory::MemoryStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::commit::Checkpoint;

use crate::common::workspace_root;

const SAMPLES: &[&str] = &[
    "msk-basic.json",
    "msk-tombstones.json",
    "msk-headers.json",
    "msk-bad-records.json",
    "self-managed-basic.json",
];

/// One row of the trips table.
#[derive(Debug, Clone, PartialEq)]
struct Trip {
    uuid: String,
    ts: i64,
    rider: Option<String>,
    fare: Option<f64>,
    city: String,
    deleted: Option<bool>,
}

fn trip(
    uuid: &str,
    ts: i64,
    rider: Option<&str>,
    fare: Option<f64>,
    city: &str,
    deleted: Option<bool>,
) -> Trip {
    Trip {
        uuid: uuid.into(),
        ts,
        rider: rider.map(str::to_string),
        fare,
        city: city.into(),
        deleted,
    }
}

/// What became of one Kafka record.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Row(Trip),
    Delete {
        key: String,
    },
    Dead {
        stage: DeadLetterStage,
        reason: String,
    },
}

fn row(t: Trip) -> Outcome {
    Outcome::Row(t)
}

fn dead(stage: DeadLetterStage, reason: &str) -> Outcome {
    Outcome::Dead {
        stage,
        reason: reason.to_string(),
    }
}

struct Run {
    batch: KafkaBatch,
    /// (offset, outcome) in delivery order.
    outcomes: Vec<(i64, Outcome)>,
    letters: Vec<DeadLetter>,
    rows: usize,
    deletes: usize,
    ignored_fields: u64,
}

fn events_dir() -> PathBuf {
    workspace_root().join("events")
}

fn trips_decoder() -> RecordDecoder {
    let text = std::fs::read_to_string(events_dir().join("schema/trips.avsc"))
        .unwrap_or_else(|e| panic!("trips.avsc: {e}"));
    let avro = AvroSchema::parse(&text).unwrap_or_else(|e| panic!("trips.avsc: {e}"));
    let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("arrow schema: {e}"));
    RecordDecoder::try_new(Arc::new(arrow), &avro).unwrap_or_else(|e| panic!("decoder: {e}"))
}

fn load(name: &str) -> KafkaBatch {
    let bytes = std::fs::read(events_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    KafkaBatch::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn trips_of(batch: &RecordBatch) -> Vec<Trip> {
    let uuid = batch.column(0).as_string::<i32>();
    let ts = batch.column(1).as_primitive::<Int64Type>();
    let rider = batch.column(2).as_string::<i32>();
    let fare = batch.column(3).as_primitive::<Float64Type>();
    let city = batch.column(4).as_string::<i32>();
    let deleted = batch.column(5).as_boolean();
    (0..batch.num_rows())
        .map(|i| Trip {
            uuid: uuid.value(i).to_string(),
            ts: ts.value(i),
            rider: rider.is_valid(i).then(|| rider.value(i).to_string()),
            fare: fare.is_valid(i).then(|| fare.value(i)),
            city: city.value(i).to_string(),
            deleted: deleted.is_valid(i).then(|| deleted.value(i)),
        })
        .collect()
}

/// Runs one sample through parse → decode / delete / dead letter, the way the writer will.
fn run(name: &str) -> Run {
    let batch = load(name);
    let mut decoder = trips_decoder();
    let mut outcomes: Vec<(i64, Option<Outcome>)> = Vec::new();
    let mut letters = Vec::new();
    let mut deletes = 0;
    for record in &batch.records {
        let outcome = match record.payload() {
            Payload::Undecodable(error) => Some(DeadLetter::base64(record, error)),
            Payload::Tombstone => match &record.key {
                Some(key) => {
                    deletes += 1;
                    outcomes.push((
                        record.offset,
                        Some(Outcome::Delete {
                            key: String::from_utf8_lossy(key).into_owned(),
                        }),
                    ));
                    continue;
                }
                None => Some(DeadLetter::keyless_tombstone(record)),
            },
            Payload::Value(bytes) => match decoder.append(bytes) {
                Ok(()) => None, // filled in from the batch below
                Err(error) => Some(DeadLetter::from_decode_error(record, &error)),
            },
        };
        if let Some(letter) = &outcome {
            // Built where the record failed: coordinates and raw content as delivered.
            assert_eq!(
                (
                    letter.topic.as_str(),
                    letter.partition,
                    letter.offset,
                    letter.timestamp_ms
                ),
                (
                    &*record.topic,
                    record.partition,
                    record.offset,
                    record.timestamp_ms
                )
            );
            assert_eq!(letter.key_b64, record.key_b64());
            assert_eq!(letter.value_b64, record.value_b64());
        }
        outcomes.push((
            record.offset,
            outcome.as_ref().map(|l| Outcome::Dead {
                stage: l.stage,
                reason: l.reason.clone(),
            }),
        ));
        letters.extend(outcome);
    }
    let rows = decoder.len();
    let ignored_fields = decoder.ignored_fields();
    let decoded = decoder
        .finish()
        .unwrap_or_else(|e| panic!("{name}: finish: {e}"));
    assert_eq!(decoded.num_rows(), rows);
    let mut trips = trips_of(&decoded).into_iter();
    let outcomes = outcomes
        .into_iter()
        .map(|(offset, o)| {
            let o = o.unwrap_or_else(|| {
                Outcome::Row(
                    trips
                        .next()
                        .unwrap_or_else(|| panic!("{name}: too few rows")),
                )
            });
            (offset, o)
        })
        .collect();
    assert!(trips.next().is_none(), "{name}: rows left over");
    // Nothing lost: every record is a row, a delete or a dead letter.
    assert_eq!(
        batch.records.len(),
        rows + deletes + letters.len(),
        "{name}: records in != rows + deletes + dead letters"
    );
    Run {
        batch,
        outcomes,
        letters,
        rows,
        deletes,
        ignored_fields,
    }
}

fn assert_outcomes(name: &str, got: &[(i64, Outcome)], want: &[(i64, Outcome)]) {
    assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
    for ((go, g), (wo, w)) in got.iter().zip(want) {
        assert_eq!(go, wo, "{name}: offsets");
        match (g, w) {
            (
                Outcome::Dead {
                    stage: gs,
                    reason: gr,
                },
                Outcome::Dead {
                    stage: ws,
                    reason: wr,
                },
            ) => {
                assert_eq!(gs, ws, "{name} offset {go}: stage ({gr})");
                assert!(
                    gr.starts_with(wr.as_str()),
                    "{name} offset {go}: reason {gr:?}, want {wr:?}…"
                );
            }
            _ => assert_eq!(g, w, "{name} offset {go}"),
        }
    }
}

#[test]
fn msk_basic() {
    let r = run("msk-basic.json");
    let EventSource::Msk {
        event_source_arn,
        bootstrap_servers,
    } = &r.batch.source
    else {
        panic!("{:?}", r.batch.source);
    };
    assert!(
        event_source_arn.starts_with("arn:aws:kafka:eu-west-1:111122223333:cluster/trips-cluster/")
    );
    assert_eq!(
        bootstrap_servers.as_deref().map(|s| s.split(',').count()),
        Some(2)
    );
    // Milliseconds exactly as delivered (aws_lambda_events would lose 1 ms on …123, …001, …457).
    let timestamps: Vec<i64> = r.batch.records.iter().map(|x| x.timestamp_ms).collect();
    assert_eq!(
        timestamps,
        [
            1764412800123,
            1700000000001,
            1764412799001,
            1764412800456,
            1764412800457,
            1764412800458
        ]
    );
    assert_eq!(
        r.batch.records[0].timestamp_type,
        Some(TimestampType::CreateTime)
    );
    assert_eq!(
        r.batch.records[3].timestamp_type,
        Some(TimestampType::LogAppendTime)
    );
    assert_eq!(r.batch.records[0].key.as_deref(), Some(&b"trip-001"[..]));
    assert_eq!(
        r.batch.records[0].headers,
        vec![("content-type".to_string(), b"application/json".to_vec())]
    );
    assert_outcomes(
        "msk-basic",
        &r.outcomes,
        &[
            (
                100,
                row(trip(
                    "trip-001",
                    1764412800123,
                    Some("rider-A"),
                    Some(19.1),
                    "san_francisco",
                    None,
                )),
            ),
            (
                101,
                row(trip(
                    "trip-002",
                    1700000000001,
                    Some("rider-B"),
                    Some(27.7),
                    "sao_paulo",
                    None,
                )),
            ),
            // 2^53 + 1 survives: the value is never a float on the way.
            (
                103,
                row(trip(
                    "trip-003",
                    9007199254740993,
                    None,
                    None,
                    "chennai",
                    Some(false),
                )),
            ),
            (
                7,
                row(trip(
                    "trip-004",
                    1764412800456,
                    Some("rider-C"),
                    Some(33.9),
                    "san_francisco",
                    None,
                )),
            ),
            (
                8,
                row(trip("trip-005", 1764412800457, None, None, "chennai", None)),
            ),
            (
                9,
                row(trip(
                    "trip-006",
                    1764412800458,
                    Some("rider-E"),
                    Some(0.0),
                    "sao_paulo",
                    Some(true),
                )),
            ),
        ],
    );
    assert_eq!((r.rows, r.deletes, r.letters.len()), (6, 0, 0));
    assert_eq!(r.ignored_fields, 1, "trip-006 carries one unknown field");
    // Two topic-partitions; the gap 101 → 103 is allowed.
    let ranges = r.batch.offset_ranges();
    assert_eq!(ranges.len(), 2);
    assert_eq!(ranges[0].topic_partition, TopicPartition::new("trips", 0));
    assert_eq!(
        (ranges[0].first, ranges[0].last, ranges[0].count),
        (Offset(100), Offset(103), 3)
    );
    assert_eq!(ranges[0].next_offset(), Some(Offset(104)));
    assert_eq!(ranges[1].topic_partition, TopicPartition::new("trips", 1));
    assert_eq!(
        (ranges[1].first, ranges[1].last, ranges[1].count),
        (Offset(7), Offset(9), 3)
    );
    // Redelivery after a commit that covered trips-0 up to 101 and trips-1 up to 8.
    let mut batch = r.batch.clone();
    let mut checkpoint = Checkpoint::new();
    checkpoint.set("trips", 0, 102);
    checkpoint.set("trips", 1, 9);
    assert_eq!(batch.drop_committed(&checkpoint), 4);
    let left: Vec<(i32, i64)> = batch
        .records
        .iter()
        .map(|x| (x.partition, x.offset))
        .collect();
    assert_eq!(left, [(0, 103), (1, 9)]);
}

#[test]
fn msk_tombstones() {
    let r = run("msk-tombstones.json");
    assert_outcomes(
        "msk-tombstones",
        &r.outcomes,
        &[
            (
                200,
                row(trip(
                    "trip-001",
                    1764412801000,
                    Some("rider-A"),
                    Some(21.5),
                    "san_francisco",
                    None,
                )),
            ),
            (
                201,
                Outcome::Delete {
                    key: "trip-001".into(),
                },
            ),
            (
                202,
                Outcome::Delete {
                    key: "trip-002".into(),
                },
            ),
            (
                203,
                dead(
                    DeadLetterStage::KeylessTombstone,
                    "tombstone (null value) without a Kafka key: no record to delete",
                ),
            ),
            // A delete expressed in the value: decoded like any row.
            (
                204,
                row(trip(
                    "trip-003",
                    1764412801004,
                    None,
                    None,
                    "chennai",
                    Some(true),
                )),
            ),
        ],
    );
    assert_eq!((r.rows, r.deletes, r.letters.len()), (2, 2, 1));
    assert_eq!(r.letters[0].value_b64, None);
    assert_eq!(r.letters[0].key_b64, None);
}

#[test]
fn msk_headers() {
    let r = run("msk-headers.json");
    let h = &r.batch.records[0].headers;
    assert_eq!(
        h,
        &vec![
            ("origin".to_string(), "café".as_bytes().to_vec()),
            ("accent".to_string(), "é".as_bytes().to_vec()),
            ("trace".to_string(), b"a".to_vec()),
            ("trace".to_string(), b"b".to_vec()),
            ("empty".to_string(), Vec::new()),
        ]
    );
    assert_eq!(
        h[1].1,
        vec![0xC3, 0xA9],
        "[-61,-87] are the UTF-8 bytes of é"
    );
    assert_eq!(
        r.batch.records[1].headers,
        vec![
            ("bytes".to_string(), vec![0x80, 0xFF, 0x00, 0x7F]),
            ("emoji".to_string(), "😀".as_bytes().to_vec()),
        ]
    );
    assert_outcomes(
        "msk-headers",
        &r.outcomes,
        &[
            // Escaped (\u00c9) and raw UTF-8 text both arrive as the same characters.
            (
                50,
                row(trip(
                    "trip-010",
                    1764412802000,
                    Some("rider-É"),
                    Some(12.0),
                    "montréal",
                    None,
                )),
            ),
            (
                51,
                row(trip(
                    "trip-011",
                    1764412802001,
                    Some("rider-Z"),
                    Some(8.25),
                    "zürich",
                    None,
                )),
            ),
        ],
    );
}

#[tokio::test]
async fn msk_bad_records() {
    let r = run("msk-bad-records.json");
    use DeadLetterStage::*;
    assert_outcomes(
        "msk-bad-records",
        &r.outcomes,
        &[
            (300, row(trip("trip-100", 1764412803000, Some("rider-A"), Some(1.0), "sf", None))),
            (301, dead(Base64, "value is not valid standard base64: Invalid symbol 32, offset 3.")),
            (302, dead(NotJson, "not JSON: invalid literal at byte 0")),
            (303, dead(NotObject, "expected a JSON object, found an array")),
            (304, dead(Decode, "field `uuid`: required field is missing (not nullable and no default)")),
            (305, dead(Decode, "field `ts`: expected long, found a string")),
            (
                306,
                dead(
                    Decode,
                    "field `ts`: 9223372036854775808 is not a valid long: out of range \
                     -9223372036854775808..=9223372036854775807",
                ),
            ),
            (
                307,
                dead(
                    Decode,
                    "field `fare`: \"12.50\" is not a valid double: a string is accepted only as \"NaN\", \
                     \"Infinity\" or \"-Infinity\"",
                ),
            ),
            (308, dead(Decode, "duplicate key \"city\" in one object")),
            (309, dead(Base64, "key is not valid standard base64: Invalid symbol 37, offset 0.")),
            (310, dead(NotJson, "not JSON: the value is empty")),
            (311, dead(NotJson, "not UTF-8 text (invalid byte sequence at byte 9)")),
            (312, dead(Decode, "field `ts`: 1.5 is not a valid long: not an integer (fraction or exponent)")),
            (313, dead(Decode, "field `uuid`: null is not allowed: the field is a non-nullable string")),
            (314, row(trip("trip-114", 1764412803014, None, Some(2.5), "sf", None))),
        ],
    );
    assert_eq!((r.rows, r.deletes, r.letters.len()), (2, 0, 13));
    // The raw text survives even when it is not base64.
    assert_eq!(r.letters[0].value_b64.as_deref(), Some("not base64!"));
    assert_eq!(r.letters[8].key_b64.as_deref(), Some("%%%"));
    // The letters go to storage: one object for the one partition, one line per letter, nothing overwritten.
    let storage = Arc::new(MemoryStorage::new("mem://dead-letters"));
    let sink = StorageDeadLetterSink::new(storage.clone());
    let receipt = sink
        .write(&r.letters)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(receipt.letters, 13);
    assert_eq!(receipt.objects.len(), 1);
    assert!(
        receipt.objects[0].starts_with("trips/0/301-313-"),
        "{:?}",
        receipt.objects
    );
    assert_eq!(receipt.by_stage.get(&Decode), Some(&7));
    assert_eq!(receipt.by_stage.get(&NotJson), Some(&3));
    let body = storage
        .get(&receipt.objects[0])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stored: Vec<DeadLetter> = std::str::from_utf8(&body)
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(stored, r.letters);
}

#[test]
fn self_managed_basic() {
    let r = run("self-managed-basic.json");
    assert_eq!(
        r.batch.source,
        EventSource::SelfManaged {
            bootstrap_servers: "kafka-1.internal.example:9092,kafka-2.internal.example:9092".into()
        }
    );
    assert_outcomes(
        "self-managed-basic",
        &r.outcomes,
        &[
            (
                0,
                row(trip(
                    "trip-200",
                    1764412804000,
                    Some("rider-S"),
                    Some(5.5),
                    "berlin",
                    None,
                )),
            ),
            (
                1,
                row(trip(
                    "trip-201",
                    1764412804001,
                    Some("rider-T"),
                    Some(6.5),
                    "berlin",
                    None,
                )),
            ),
            (
                5,
                row(trip("trip-202", 1764412804005, None, None, "paris", None)),
            ),
        ],
    );
    let ranges = r.batch.offset_ranges();
    assert_eq!(ranges.len(), 1);
    assert_eq!(ranges[0].to_string(), "trips.v2-0 [0..=5] (3 records)");
}

#[test]
fn every_sample_is_accounted_for() {
    let mut total = (0, 0, 0, 0);
    for name in SAMPLES {
        let r = run(name);
        total.0 += r.batch.records.len();
        total.1 += r.rows;
        total.2 += r.deletes;
        total.3 += r.letters.len();
    }
    assert_eq!(total, (31, 15, 2, 14));
    // Every JSON file in events/ (except coordinator requests others may add) is one of the samples above.
    let mut kafka_events: Vec<String> = std::fs::read_dir(events_dir())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".json") && (n.starts_with("msk-") || n.starts_with("self-managed-"))
        })
        .collect();
    kafka_events.sort();
    let mut expected: Vec<String> = SAMPLES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(kafka_events, expected);
}
