//! The sink's own Kafka envelope parser (`source/event.rs`) against `aws_lambda_events` (the Rust runtime's
//! event types, `kafka` feature only): on every sample event of `events/` and every event-decode corpus entry
//! the sink accepts, both must see the same records with the same topics, partitions, offsets, timestamp
//! types, keys, values and headers. The two known differences of `aws_lambda_events` 1.x are asserted as
//! such: it reads some millisecond timestamps one millisecond early (through `f64` seconds), and it refuses a
//! whole event for a record with Kafka's `-1` "no timestamp" (or without `headers`). They are why the sink
//! parses the envelope itself (docs/limits.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use aws_lambda_events::event::kafka::KafkaEvent;
use hudi_sink::source::event::KafkaBatch;

use crate::common::workspace_root;

/// One record as both parsers must agree on it; the timestamp is compared apart.
type Seen = (
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Vec<(String, Vec<u8>)>,
);

fn ours(batch: &KafkaBatch) -> BTreeMap<(String, i64, i64), (Seen, i64)> {
    batch
        .records
        .iter()
        .map(|r| {
            let seen = (
                r.topic.to_string(),
                i64::from(r.partition),
                r.offset,
                r.timestamp_type.as_ref().map(|t| t.as_str().to_string()),
                r.key_b64(),
                r.value_b64(),
                r.headers.clone(),
            );
            (
                (r.topic.to_string(), i64::from(r.partition), r.offset),
                (seen, r.timestamp_ms),
            )
        })
        .collect()
}

fn theirs(event: &KafkaEvent) -> BTreeMap<(String, i64, i64), (Seen, i64)> {
    let mut out = BTreeMap::new();
    for records in event.records.values() {
        for r in records {
            let topic = r.topic.clone().unwrap_or_default();
            let headers = r
                .headers
                .iter()
                .flat_map(|h| {
                    h.iter()
                        .map(|(k, v)| (k.clone(), v.iter().map(|b| *b as u8).collect()))
                })
                .collect();
            let seen = (
                topic.clone(),
                r.partition,
                r.offset,
                r.timestamp_type.clone(),
                r.key.clone(),
                r.value.clone(),
                headers,
            );
            out.insert(
                (topic, r.partition, r.offset),
                (seen, r.timestamp.0.timestamp_millis()),
            );
        }
    }
    out
}

/// The samples and the corpus entries the sink accepts.
fn accepted_inputs() -> Vec<(PathBuf, Vec<u8>, KafkaBatch)> {
    let root = workspace_root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("events"))
        .expect("events/")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                (n.starts_with("msk-") || n.starts_with("self-managed-")) && n.ends_with(".json")
            })
        })
        .collect();
    files.extend(crate::common::all_files(
        &root.join("fuzz/corpus/event_decode"),
    ));
    files.sort();
    files
        .into_iter()
        .filter_map(|f| {
            let data = std::fs::read(&f).expect("input");
            KafkaBatch::from_slice(&data).ok().map(|b| (f, data, b))
        })
        .collect()
}

#[test]
fn both_parsers_see_the_same_records_on_every_accepted_input() {
    let inputs = accepted_inputs();
    assert!(inputs.len() >= 8, "{} accepted inputs", inputs.len());
    let mut compared = 0;
    let mut one_ms_early = 0;
    let mut refused_for_known_reasons = 0;
    for (file, data, batch) in &inputs {
        // A header object with two names is a HashMap there (its order lost): headers are compared as sets.
        let event: KafkaEvent = match serde_json::from_slice(data) {
            Ok(e) => e,
            Err(e) => {
                let text = String::from_utf8_lossy(data);
                assert!(
                    batch.records.iter().any(|r| r.timestamp_ms < 0) || !text.contains("\"headers\""),
                    "{}: aws_lambda_events refuses an event the sink reads, for no known reason: {e}",
                    file.display()
                );
                refused_for_known_reasons += 1;
                continue;
            }
        };
        let (a, b) = (ours(batch), theirs(&event));
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{}: different records",
            file.display()
        );
        for (k, (seen, ts)) in &a {
            let (their_seen, their_ts) = &b[k];
            let mut mine = seen.clone();
            let mut other = their_seen.clone();
            mine.6.sort();
            other.6.sort();
            assert_eq!(&mine, &other, "{}: record {k:?}", file.display());
            assert!(
                *ts - *their_ts == 0 || *ts - *their_ts == 1,
                "{}: {ts} vs {their_ts}",
                file.display()
            );
            one_ms_early += usize::from(*ts != *their_ts);
        }
        compared += 1;
    }
    assert!(compared >= 8, "{compared} inputs compared");
    // The rounding shows up on real timestamps (see the next test): counted, never silently accepted as equal.
    println!(
        "{compared} inputs compared; {one_ms_early} timestamps read 1 ms early by aws_lambda_events; \
         {refused_for_known_reasons} refused by it for a known reason"
    );
}

fn event_with_timestamp(ts: &str) -> String {
    format!(
        r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"b:9092","records":{{"t-0":[
            {{"topic":"t","partition":0,"offset":1,"timestamp":{ts},"timestampType":"CREATE_TIME",
              "key":null,"value":"e30=","headers":[]}}]}}}}"#
    )
}

#[test]
fn the_known_differences_of_aws_lambda_events_are_what_they_are_said_to_be() {
    // Millisecond timestamps through f64 seconds: some read 1 ms early; the sink keeps them exact.
    let mut early = 0;
    for ms in 1_764_412_800_000i64..1_764_412_800_200 {
        let text = event_with_timestamp(&ms.to_string());
        let ours = KafkaBatch::from_slice(text.as_bytes()).expect("sink parses");
        assert_eq!(ours.records[0].timestamp_ms, ms);
        let theirs: KafkaEvent = serde_json::from_str(&text).expect("aws_lambda_events parses");
        let got = theirs.records["t-0"][0].timestamp.0.timestamp_millis();
        assert!(got == ms || got == ms - 1, "{ms}: {got}");
        early += usize::from(got != ms);
    }
    assert!(
        early > 0,
        "no timestamp rounded: the difference is gone, update docs/limits.md"
    );
    // Kafka's -1 "no timestamp": the sink keeps the record, aws_lambda_events refuses the whole event.
    let text = event_with_timestamp("-1");
    let ours = KafkaBatch::from_slice(text.as_bytes()).expect("sink parses -1");
    assert_eq!(ours.records[0].timestamp_ms, -1);
    assert!(serde_json::from_str::<KafkaEvent>(&text).is_err());
}
