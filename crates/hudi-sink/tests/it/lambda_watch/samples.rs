//! The test itself: every sample of `events/` through both functions, and what each must leave behind
//! (rows, counts, dead letters).

use super::*;

/// A row of the trips table: uuid → (ts, rider, fare, city).
type Row = (i64, Option<String>, Option<f64>, String);

/// The table the five samples must produce, stated from the merge rules of docs/semantics.md (not computed by the
/// library): msk-basic inserts trip-001..005 (trip-006 is a `_hoodie_is_deleted` delete of an absent key);
/// msk-tombstones updates trip-001 then deletes it by tombstone, deletes trip-002, dead-letters the keyless
/// tombstone and ignores an older `_hoodie_is_deleted` version of trip-003; msk-headers inserts trip-010 and
/// trip-011; msk-bad-records inserts trip-100 and trip-114 and dead-letters the other 13; self-managed-basic
/// inserts trip-200..202 (topic `trips.v2`).
fn expected_rows() -> BTreeMap<String, Row> {
    let row = |ts: i64, rider: Option<&str>, fare: Option<f64>, city: &str| -> Row {
        (ts, rider.map(str::to_string), fare, city.to_string())
    };
    [
        ("trip-003", row(9007199254740993, None, None, "chennai")),
        (
            "trip-004",
            row(1764412800456, Some("rider-C"), Some(33.9), "san_francisco"),
        ),
        ("trip-005", row(1764412800457, None, None, "chennai")),
        (
            "trip-010",
            row(1764412802000, Some("rider-É"), Some(12.0), "montréal"),
        ),
        (
            "trip-011",
            row(1764412802001, Some("rider-Z"), Some(8.25), "zürich"),
        ),
        (
            "trip-100",
            row(1764412803000, Some("rider-A"), Some(1.0), "sf"),
        ),
        ("trip-114", row(1764412803014, None, Some(2.5), "sf")),
        (
            "trip-200",
            row(1764412804000, Some("rider-S"), Some(5.5), "berlin"),
        ),
        (
            "trip-201",
            row(1764412804001, Some("rider-T"), Some(6.5), "berlin"),
        ),
        ("trip-202", row(1764412804005, None, None, "paris")),
    ]
    .into_iter()
    .map(|(k, r)| (k.to_string(), r))
    .collect()
}

/// Per sample: records in, written (inserted + updated), deduped, deleted, ignored older, delete misses,
/// dead-lettered, and the oldest record timestamp of the batch.
const EXPECTED_COUNTS: &[(&str, [u64; 7], i64)] = &[
    ("msk-basic.json", [6, 5, 0, 0, 0, 1, 0], 1700000000001),
    ("msk-tombstones.json", [5, 0, 1, 2, 1, 0, 1], 1764412801000),
    ("msk-headers.json", [2, 2, 0, 0, 0, 0, 0], 1764412802000),
    (
        "msk-bad-records.json",
        [15, 2, 0, 0, 0, 0, 13],
        1764412803000,
    ),
    (
        "self-managed-basic.json",
        [3, 3, 0, 0, 0, 0, 0],
        1764412804000,
    ),
];

/// The dead letters the samples must produce: (topic, partition, offset, stage, reason).
fn expected_dead_letters() -> Vec<(String, i64, i64, String, String)> {
    let bad = |offset: i64, stage: &str, reason: &str| {
        (
            "trips".to_string(),
            0,
            offset,
            stage.to_string(),
            reason.to_string(),
        )
    };
    vec![
        bad(
            203,
            "keyless_tombstone",
            "tombstone (null value) without a Kafka key: no record to delete",
        ),
        bad(
            301,
            "base64",
            "value is not valid standard base64: Invalid symbol 32, offset 3.",
        ),
        bad(302, "not_json", "not JSON: invalid literal at byte 0"),
        bad(303, "not_object", "expected a JSON object, found an array"),
        bad(
            304,
            "decode",
            "field `uuid`: required field is missing (not nullable and no default)",
        ),
        bad(305, "decode", "field `ts`: expected long, found a string"),
        bad(
            306,
            "decode",
            "field `ts`: 9223372036854775808 is not a valid long: out of range \
             -9223372036854775808..=9223372036854775807",
        ),
        bad(
            307,
            "decode",
            "field `fare`: \"12.50\" is not a valid double: a string is accepted only as \"NaN\", \
             \"Infinity\" or \"-Infinity\"",
        ),
        bad(308, "decode", "duplicate key \"city\" in one object"),
        bad(
            309,
            "base64",
            "key is not valid standard base64: Invalid symbol 37, offset 0.",
        ),
        bad(310, "not_json", "not JSON: the value is empty"),
        bad(
            311,
            "not_json",
            "not UTF-8 text (invalid byte sequence at byte 9)",
        ),
        bad(
            312,
            "decode",
            "field `ts`: 1.5 is not a valid long: not an integer (fraction or exponent)",
        ),
        bad(
            313,
            "decode",
            "field `uuid`: null is not allowed: the field is a non-nullable string",
        ),
    ]
}

/// The snapshot read by hudi-rs 0.5.0, as uuid → row, checking the meta columns on the way.
fn read_table(bucket: &str) -> BTreeMap<String, Row> {
    let uri = format!("s3://{bucket}/tables/trips");
    let mut out = BTreeMap::new();
    for r in read_rows(&uri, "hudi", &["snapshot"]) {
        let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        let uuid = s("uuid").expect("uuid");
        let city = s("city").expect("city");
        assert_eq!(s("_hoodie_record_key").as_deref(), Some(uuid.as_str()));
        assert_eq!(s("_hoodie_partition_path"), Some(format!("city={city}")));
        assert!(!r["_hoodie_is_deleted"].as_bool().unwrap_or(false), "{r:?}");
        let row = (
            r["ts"].as_i64().expect("ts"),
            s("rider"),
            r["fare"].as_f64(),
            city,
        );
        assert!(out.insert(uuid.clone(), row).is_none(), "duplicate {uuid}");
    }
    out
}

/// Writes a lock item of a holder that died (Hudi's lock client attributes), so that the next
/// acquisition has to wait out its lease before stealing it.
async fn plant_dead_holder(deployment: &Deployment) {
    let ddb = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    ddb.put_item()
        .table_name(&deployment.lock_table)
        .item("key", AttributeValue::S(deployment.lock_key.clone()))
        .item("ownerName", AttributeValue::S("crashed-writer-host".into()))
        .item(
            "leaseDuration",
            AttributeValue::S(STALE_LEASE_MS.to_string()),
        )
        .item(
            "recordVersionNumber",
            AttributeValue::S("dead-holder-version".into()),
        )
        .send()
        .await
        .expect("plant lock item");
}

#[test]
fn functions_under_cargo_lambda_watch_process_every_sample_exactly_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let port = free_port();
    let deployment = rt.block_on(deploy(port));
    let mut lambdas = Lambdas::start(&deployment, port);
    let events = workspace_root().join("events");
    let started_ms = chrono::Utc::now().timestamp_millis();

    // The coordinator answers a scheduled table-services run.
    let services = lambdas.invoke_ok(COORDINATOR, Data::Ascii("{}"));
    assert_eq!(services["status"], "done", "{services}");
    assert!(services["lock_wait_ms"].is_u64(), "{services}");

    // Every sample once, in order; before the third, a dead holder sits on the table lock.
    let mut reports = Vec::new();
    for (i, sample) in SAMPLES.iter().enumerate() {
        if i == 2 {
            rt.block_on(plant_dead_holder(&deployment));
        }
        let report = lambdas.invoke_ok(WRITER, Data::File(&events.join(sample)));
        reports.push((sample.to_string(), report));
    }
    let mut instants = Vec::new();
    for ((sample, report), (name, c, _)) in reports.iter().zip(EXPECTED_COUNTS) {
        assert_eq!(sample, name);
        let n = |k: &str| {
            report[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {report}"))
        };
        let w = |k: &str| report["counts"][k].as_u64().expect("count");
        let actual = [
            n("records_in"),
            w("inserted") + w("updated"),
            w("deduped"),
            w("deleted"),
            w("ignored_older"),
            w("delete_misses"),
            n("dead_lettered"),
        ];
        assert_eq!(&actual, c, "{sample}: {report}");
        assert_eq!(n("skipped"), 0, "{sample}");
        let instant = report["instant"].as_str().expect("committed instant");
        instants.push(instant.to_string());
        if actual[1] > 0 {
            assert!(n("files") > 0 && n("bytes") > 0, "{sample}: {report}");
        }
    }
    // The planted holder was waited out: at least its lease, by the coordinator, reported by the writer.
    let lock_wait = reports[2].1["lock_wait_ms"].as_u64().expect("lock_wait_ms");
    assert!(
        lock_wait >= STALE_LEASE_MS,
        "lock wait {lock_wait} ms: {}",
        reports[2].1
    );

    // The table, read by hudi-rs 0.5.0, equals the expected rows; one commit per sample, in order.
    let expected = expected_rows();
    assert_eq!(read_table(&deployment.bucket), expected);
    let commits = rt.block_on(completed_commits(&deployment.bucket));
    let mut sorted = instants.clone();
    sorted.sort();
    assert_eq!(instants, sorted, "instants increase with every batch");
    assert_eq!(commits, instants);

    // Dead letters, read back from S3.
    let mut letters: Vec<(String, i64, i64, String, String)> = rt
        .block_on(objects(&deployment.bucket, "dead-letters/"))
        .values()
        .flat_map(|body| {
            String::from_utf8_lossy(body)
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("dead letter JSON"))
                .collect::<Vec<_>>()
        })
        .map(|d| {
            (
                d["topic"].as_str().expect("topic").to_string(),
                d["partition"].as_i64().expect("partition"),
                d["offset"].as_i64().expect("offset"),
                d["stage"].as_str().expect("stage").to_string(),
                d["reason"].as_str().expect("reason").to_string(),
            )
        })
        .collect();
    letters.sort();
    assert_eq!(letters, expected_dead_letters());

    // An invalid envelope is a function error with a clear message, and nothing dies.
    let bad = lambdas.invoke(
        WRITER,
        Data::Ascii(r#"{"eventSource":"aws:sqs","Records":[]}"#),
    );
    let said = format!("{}{}", bad.stdout, bad.stderr);
    assert!(!bad.ok, "an SQS event was accepted: {said}");
    assert!(
        said.contains("InvalidEvent")
            && said.contains("not an MSK or self-managed Kafka event-source-mapping payload"),
        "{said}"
    );
    assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());

    // Redelivering every sample changes nothing: all skipped, no commit, same rows, no new dead letter.
    let letters_before = rt.block_on(objects(&deployment.bucket, "dead-letters/"));
    for sample in SAMPLES {
        let report = lambdas.invoke_ok(WRITER, Data::File(&events.join(sample)));
        assert_eq!(
            report["skipped"], report["records_in"],
            "{sample}: {report}"
        );
        assert_eq!(report["instant"], Value::Null, "{sample}: {report}");
    }
    assert_eq!(read_table(&deployment.bucket), expected);
    assert_eq!(rt.block_on(completed_commits(&deployment.bucket)), instants);
    assert_eq!(
        rt.block_on(objects(&deployment.bucket, "dead-letters/"))
            .len(),
        letters_before.len()
    );

    // The coordinator's own requests (samples in events/coordinator-*.json, if any).
    check_coordinator_samples(&lambdas, &events);
    assert!(lambdas.all_alive(), "{}", lambdas.diagnostics());

    // One EMF line per successful writer invocation, in order, whose counts add up and match the answers.
    let writer_out = lambdas.writer().stdout();
    let emf: Vec<Value> = writer_out
        .iter()
        .filter(|l| l.contains("\"_aws\""))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("EMF line ({e}): {l}")))
        .collect();
    assert_eq!(emf.len(), 2 * SAMPLES.len(), "{writer_out:#?}");
    for (i, doc) in emf.iter().enumerate() {
        let v = check_emf(doc);
        let (_, counts, oldest) = EXPECTED_COUNTS[i % SAMPLES.len()];
        let sum: u64 = [
            "RecordsSkipped",
            "RecordsWritten",
            "RecordsDeduped",
            "RecordsDeleted",
            "RecordsIgnoredOlder",
            "DeleteMisses",
            "RecordsDeadLettered",
            "TombstonesSkipped",
        ]
        .iter()
        .map(|k| v[*k])
        .sum();
        assert_eq!(sum, v["RecordsIn"], "{doc}");
        assert_eq!(v["RecordsIn"], counts[0], "{doc}");
        assert_eq!(doc["Table"], "trips");
        if i < SAMPLES.len() {
            assert_eq!(
                [
                    v["RecordsWritten"],
                    v["RecordsDeduped"],
                    v["RecordsDeleted"],
                    v["RecordsDeadLettered"]
                ],
                [counts[1], counts[2], counts[3], counts[6]],
                "{doc}"
            );
            assert_eq!(doc["Instant"].as_str(), Some(instants[i].as_str()));
            assert!(
                v["CommitLatency"] >= 1,
                "a commit through Lambda and moto takes time: {doc}"
            );
        } else {
            assert_eq!(v["RecordsSkipped"], counts[0], "{doc}");
            assert_eq!(doc["Instant"], Value::Null);
        }
        // Lag: at least the age the oldest record had when the test started.
        let lag = v.get("MaxLag").copied().expect("MaxLag");
        assert!(lag as i64 >= started_ms - oldest, "{doc}");
    }
    assert!(check_emf(&emf[2])["LockWait"] >= STALE_LEASE_MS);
    // Logs are JSON lines (function processes started by the test only; watch's own lines are text).
    for proc in lambdas.functions.values() {
        let lines = proc.stderr();
        assert!(!lines.is_empty(), "{} logged nothing", proc.name);
        for line in lines.iter().filter(|l| !l.trim().is_empty()) {
            let v: Map<String, Value> = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: log line is not JSON ({e}): {line}", proc.name));
            assert!(
                v.contains_key("level") && v.contains_key("fields"),
                "{line}"
            );
        }
    }
}

/// Invokes the coordinator with every `events/coordinator-*.json` sample: each answers with a protocol
/// status (or, for a request about an instant that does not exist, a clean function error), and an instant
/// begun by a sample is aborted again so that nothing is left pending.
fn check_coordinator_samples(lambdas: &Lambdas, events: &Path) {
    let mut samples: Vec<PathBuf> = std::fs::read_dir(events)
        .expect("events dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("coordinator-") && n.ends_with(".json"))
        })
        .collect();
    samples.sort();
    for sample in samples {
        let out = lambdas.invoke(COORDINATOR, Data::File(&sample));
        if !out.ok {
            assert!(
                format!("{}{}", out.stdout, out.stderr).contains("CoordinatorFailed"),
                "{}: {}{}",
                sample.display(),
                out.stdout,
                out.stderr
            );
            continue;
        }
        let answer: Value = serde_json::from_str(&out.stdout).expect("JSON answer");
        let status = answer["status"].as_str().expect("status");
        assert!(
            [
                "begun",
                "committed",
                "conflict",
                "already_committed",
                "rolled_back",
                "done",
                "joined",
                "waiting",
                "window_committed",
                "excluded"
            ]
            .contains(&status),
            "{}: {answer}",
            sample.display()
        );
        let name = sample
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let expected = match name {
            "coordinator-begin.json" => Some("begun"),
            "coordinator-services.json" | "coordinator-abort.json" => Some("done"),
            // About a window that does not exist.
            "coordinator-submit.json" | "coordinator-close.json" => Some("rolled_back"),
            _ => None,
        };
        if let Some(expected) = expected {
            assert_eq!(status, expected, "{name}: {answer}");
        }
        if name == "coordinator-join.json" {
            // Joined, or told to wait for the next slot when the samples' window just used this one.
            assert!(["joined", "waiting"].contains(&status), "{name}: {answer}");
        }
        if status == "begun" {
            let instant = answer["instant"].as_str().expect("instant");
            let abort = json!({"op": "abort", "instant": instant}).to_string();
            let done = lambdas.invoke_ok(COORDINATOR, Data::Ascii(&abort));
            assert_eq!(done["status"], "done");
        }
        if status == "joined" {
            // The sample's member leaves with an empty contribution: the window, with nothing to commit, is
            // rolled back, and nothing is left pending.
            let sample: Value =
                serde_json::from_slice(&std::fs::read(&sample).expect("sample")).expect("JSON");
            let leave = json!({
                "op": "submit",
                "instant": answer["instant"],
                "end_ms": answer["end_ms"],
                "contribution": {
                    "member": sample["member"], "operation": "UPSERT", "write_stats": [],
                    "schema": "", "offsets": []
                }
            })
            .to_string();
            let left = lambdas.invoke_ok(COORDINATOR, Data::Ascii(&leave));
            assert!(
                ["rolled_back", "waiting"].contains(&left["status"].as_str().unwrap_or_default()),
                "{left}"
            );
        }
    }
}
