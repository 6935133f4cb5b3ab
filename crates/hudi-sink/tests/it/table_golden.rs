//! The table metadata layer against the Spark-written golden tables (hudi-rs test data): properties, timeline,
//! commit JSON, file slices (also compared with the hudi-rs Python reader), Hudi 1.x refusal, checkpoints.

use std::collections::BTreeMap;
use std::process::Command;

use bytes::Bytes;
use hudi_sink::clock::ManualClock;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::commit::{
    Checkpoint, CommitMetadata, OperationType, ReplaceCommitMetadata, WriteStat,
    DELTASTREAMER_CHECKPOINT_KEY, KAFKA_COMMIT_OFFSETS_KEY, SINK_CHECKPOINT_KEY,
};
use hudi_sink::table::instant::{Action, Instant, InstantTime, State};
use hudi_sink::table::properties::{PropertiesError, TableProperties, TimelineTimezone};
use hudi_sink::table::timeline::{latest_file_slices, Timeline, TimelineError};
use serde_json::Value;

use crate::common;

/// Stored checksum of every v6 golden table (= CRC32("default.<name>")).
const CHECKSUMS: &[(&str, u64)] = &[
    ("v6_complexkeygen_hivestyle", 281_415_413),
    ("v6_empty", 1_980_710_965),
    ("v6_nonpartitioned", 1_363_530_505),
    ("v6_simplekeygen_hivestyle_no_metafields", 3_965_929_480),
    ("v6_simplekeygen_nonhivestyle", 616_688_896),
    ("v6_simplekeygen_nonhivestyle_overwritetable", 3_443_920_226),
    ("v6_timebasedkeygen_nonhivestyle", 2_070_650_842),
];

/// The timeline of every v6 golden table after the layout-1 reduction (requested/inflight files fold into the
/// completed instant), as on disk.
fn expected_timeline(table: &str) -> Vec<&'static str> {
    match table {
        "v6_complexkeygen_hivestyle" => {
            vec!["20240418173213674.commit", "20240418173235694.commit"]
        }
        "v6_empty" => vec![],
        "v6_nonpartitioned" => vec!["20240418173550988.commit", "20240418173551906.commit"],
        "v6_simplekeygen_hivestyle_no_metafields" => vec!["20240426205419518.commit"],
        "v6_simplekeygen_nonhivestyle" => {
            vec!["20240418172802262.commit", "20240418172804498.commit"]
        }
        "v6_simplekeygen_nonhivestyle_overwritetable" => vec![
            "20240707001301554.commit",
            "20240707001302376.commit",
            "20240707001303088.replacecommit",
        ],
        "v6_timebasedkeygen_nonhivestyle" => {
            vec!["20240418181355771.commit", "20240418181357522.commit"]
        }
        other => panic!("no expectation for {other}"),
    }
}

/// Visible base files (relative paths, sorted) per snapshot: key `None` = latest, `Some(t)` = as of `t`.
/// Read off the directory listings and commit files of each zip.
fn expected_slices(table: &str) -> Vec<(Option<&'static str>, Vec<&'static str>)> {
    match table {
        "v6_complexkeygen_hivestyle" => {
            let at1 = vec![
                "byteField=10/shortField=300/a22e8257-e249-45e9-ba46-115bc85adcba-0_1-140-199_20240418173213674.parquet",
                "byteField=20/shortField=100/bb7c3a45-387f-490d-aab2-981c3f1a8ada-0_0-140-198_20240418173213674.parquet",
            ];
            let at2 = vec![
                "byteField=10/shortField=300/a22e8257-e249-45e9-ba46-115bc85adcba-0_0-161-223_20240418173235694.parquet",
                "byteField=20/shortField=100/bb7c3a45-387f-490d-aab2-981c3f1a8ada-0_0-140-198_20240418173213674.parquet",
                "byteField=30/shortField=100/4668e35e-bff8-4be9-9ff2-e7fb17ecb1a7-0_1-161-224_20240418173235694.parquet",
            ];
            vec![
                (None, at2.clone()),
                (Some("20240418173213674"), at1),
                (Some("20240418173235694"), at2),
            ]
        }
        "v6_empty" => vec![(None, vec![])],
        "v6_nonpartitioned" => {
            let at1 =
                vec!["a079bdb3-731c-4894-b855-abfcd6921007-0_0-182-253_20240418173550988.parquet"];
            let at2 =
                vec!["a079bdb3-731c-4894-b855-abfcd6921007-0_0-203-274_20240418173551906.parquet"];
            vec![
                (None, at2.clone()),
                (Some("20240418173550988"), at1),
                (Some("20240418173551906"), at2),
            ]
        }
        "v6_simplekeygen_hivestyle_no_metafields" => {
            let at1 = vec![
                "byteField=10/1ebfc908-fcc7-4229-b368-664440f7663c-0_0-35-78_20240426205419518.parquet",
                "byteField=20/3345afaa-7014-49b3-bfd7-8b89385e6c87-0_1-35-79_20240426205419518.parquet",
                "byteField=30/6b107d08-e901-4d2c-96e0-d0ae9d2cbd94-0_2-35-80_20240426205419518.parquet",
            ];
            vec![(None, at1.clone()), (Some("20240426205419518"), at1)]
        }
        "v6_simplekeygen_nonhivestyle" => {
            // The first slice of 97de74b1-…-0 is superseded by the upsert's slice …_20240418172804498.
            let at1 = vec![
                "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet",
                "20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-98-141_20240418172802262.parquet",
            ];
            let at2 = vec![
                "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet",
                "20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-98-141_20240418172802262.parquet",
                "30/6db57019-98ee-480e-8eb1-fb3de48e1c24-0_1-119-167_20240418172804498.parquet",
            ];
            vec![
                (None, at2.clone()),
                (Some("20240418172802262"), at1),
                (Some("20240418172804498"), at2),
            ]
        }
        "v6_simplekeygen_nonhivestyle_overwritetable" => {
            let at1 = vec![
                "10/4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_1-74-111_20240707001301554.parquet",
                "20/88163884-fef0-4aab-865d-c72327a8a1d5-0_0-74-110_20240707001301554.parquet",
            ];
            let at2 = vec![
                "10/4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_0-95-135_20240707001302376.parquet",
                "20/88163884-fef0-4aab-865d-c72327a8a1d5-0_0-74-110_20240707001301554.parquet",
                "30/d398fae1-c0e6-4098-8124-f55f7098bdba-0_1-95-136_20240707001302376.parquet",
            ];
            // INSERT_OVERWRITE_TABLE replaced the three groups above; only its new group remains.
            let at3 = vec![
                "30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet",
            ];
            vec![
                (None, at3.clone()),
                (Some("20240707001301554"), at1),
                (Some("20240707001302376"), at2),
                (Some("20240707001303088"), at3),
            ]
        }
        "v6_timebasedkeygen_nonhivestyle" => {
            let at1 = vec![
                "2023/04/01/12/588ea1e6-aee4-45d1-8303-007f25bb56af-0_0-249-342_20240418181355771.parquet",
                "2023/04/02/12/8975fc0c-2535-44aa-9e1f-78d3956364ac-0_1-249-343_20240418181355771.parquet",
                "2023/04/03/12/9c5da42f-b8ed-42c4-9bf2-339b946768db-0_2-249-344_20240418181355771.parquet",
            ];
            let at2 = vec![
                "2023/04/01/12/588ea1e6-aee4-45d1-8303-007f25bb56af-0_0-270-369_20240418181357522.parquet",
                "2023/04/02/12/8975fc0c-2535-44aa-9e1f-78d3956364ac-0_1-249-343_20240418181355771.parquet",
                "2023/04/03/12/9c5da42f-b8ed-42c4-9bf2-339b946768db-0_2-249-344_20240418181355771.parquet",
                "2023/04/04/13/556f4fe8-2358-4746-81c7-ac0449d09bbf-0_1-270-370_20240418181357522.parquet",
            ];
            vec![
                (None, at2.clone()),
                (Some("20240418181355771"), at1),
                (Some("20240418181357522"), at2),
            ]
        }
        other => panic!("no expectation for {other}"),
    }
}

fn clock() -> ManualClock {
    // 2025-03-01T10:29:59.000Z
    ManualClock::new(1_740_824_999_000)
}

async fn slice_paths(
    storage: &dyn Storage,
    timeline: &Timeline,
    as_of: Option<&str>,
) -> Vec<String> {
    let as_of = as_of.map(|t| InstantTime::parse(t).expect("instant"));
    latest_file_slices(storage, timeline, as_of.as_ref())
        .await
        .unwrap_or_else(|e| panic!("file slices as of {as_of:?}: {e}"))
        .into_iter()
        .map(|s| s.path())
        .collect()
}

#[tokio::test]
async fn v6_properties_parse_verify_and_round_trip() {
    for &name in common::V6_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        let props = TableProperties::load(&storage)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(props.name, name);
        assert_eq!(props.database.as_deref(), Some("default"), "{name}");
        let expected = CHECKSUMS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
        assert_eq!(props.stored_checksum(), expected, "{name}");
        assert_eq!(Some(u64::from(props.checksum())), expected, "{name}");
        assert_eq!(props.table_version, Some(6), "{name}");
        assert_eq!(props.timeline_layout_version, Some(1), "{name}");
        assert!(
            props
                .create_schema
                .as_deref()
                .is_some_and(|s| s.starts_with(r#"{"type":"record""#)),
            "{name}"
        );

        // Re-serialise (raw, unescaped) and re-parse: same typed properties, unknown keys included.
        let bytes = props
            .to_bytes(&clock())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = String::from_utf8(bytes.clone()).expect("ascii");
        assert!(!text.contains('\\'), "{name}: escaped output\n{text}");
        assert!(
            text.starts_with("#Properties saved on 2025-03-01T10:29:59.000Z\n"),
            "{name}"
        );
        assert!(
            text.ends_with(&format!("hoodie.table.checksum={}\n", props.checksum())),
            "{name}"
        );
        let again = TableProperties::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again, props, "{name}");
        assert_eq!(again.as_map(), props.as_map(), "{name}");

        // Spark wrote no hoodie.table.timeline.timezone (Java then assumes LOCAL) and these instants are indeed
        // local (CDT) times; the writer refuses until the table declares UTC. The no-meta-fields table is refused
        // for its meta fields first.
        let refused_key = if name == "v6_simplekeygen_hivestyle_no_metafields" {
            "hoodie.populate.meta.fields"
        } else {
            "hoodie.table.timeline.timezone"
        };
        match props.validate_writable() {
            Err(PropertiesError::NotWritable { key, .. }) => assert_eq!(key, refused_key, "{name}"),
            other => panic!("{name}: expected refusal on {refused_key}, got {other:?}"),
        }
        let mut fixed = props.clone();
        fixed.timeline_timezone = Some(TimelineTimezone::Utc);
        fixed.populate_meta_fields = None;
        fixed
            .validate_writable()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[tokio::test]
async fn v6_properties_keep_unknown_keys_on_store() {
    let golden = common::golden_table("v6_timebasedkeygen_nonhivestyle");
    let storage = LocalStorage::new(&golden.path);
    let props = TableProperties::load(&storage).await.expect("load");
    assert_eq!(
        props
            .other()
            .get("hoodie.keygen.timebased.input.dateformat"),
        Some("yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
        "Java unescapes \\: in the stored value"
    );
    props.store(&storage, &clock()).await.expect("store");
    assert!(storage
        .head(".hoodie/hoodie.properties.backup")
        .await
        .expect("head")
        .is_none());
    let raw = String::from_utf8(
        storage
            .get(".hoodie/hoodie.properties")
            .await
            .expect("get")
            .to_vec(),
    )
    .expect("ascii");
    assert!(
        raw.contains("\nhoodie.keygen.timebased.input.dateformat=yyyy-MM-dd'T'HH:mm:ss.SSSZ\n"),
        "{raw}"
    );
    assert!(
        raw.contains("\nhoodie.keygen.timebased.output.dateformat=yyyy/MM/dd/HH\n"),
        "{raw}"
    );
    assert_eq!(
        TableProperties::load(&storage).await.expect("reload"),
        props
    );
}

#[tokio::test]
async fn v6_timelines_parse() {
    for &name in common::V6_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        let timeline = Timeline::load(&storage)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let names: Vec<String> = timeline.instants().iter().map(Instant::file_name).collect();
        assert_eq!(names, expected_timeline(name), "{name}");
        assert!(timeline.pending().is_empty(), "{name}");
        assert_eq!(
            timeline.completed_commits().len(),
            expected_timeline(name).len(),
            "{name}: every instant is a completed commit-like one"
        );
        assert_eq!(
            timeline.last_instant_time().map(|t| t.as_str().to_string()),
            expected_timeline(name).last().map(|n| n[..17].to_string()),
            "{name}"
        );
        // Every instant has its three files on disk (requested, inflight, completed).
        let raw = storage.list(".hoodie/").await.expect("list");
        let instant_files = raw
            .iter()
            .filter(|o| !o.path[8..].contains('/') && !o.path.contains("hoodie.properties"))
            .count();
        assert_eq!(instant_files, 3 * expected_timeline(name).len(), "{name}");
    }
}

#[tokio::test]
async fn v6_commit_json_round_trips() {
    let mut checked = 0;
    for &name in common::V6_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        let timeline = Timeline::load(&storage).await.expect("timeline");
        for instant in timeline.completed_commits() {
            let original_bytes = storage.get(&instant.path()).await.expect("read commit");
            let original: Value = serde_json::from_slice(&original_bytes).expect("json");
            // Spark 0.14 writes every field of HoodieCommitMetadata/HoodieWriteStat (checked: all 23 write-stat
            // fields, including the nulls), so no default needs filling in: the values must be equal as they are.
            let ours: Value = match instant.action {
                Action::ReplaceCommit => {
                    let meta = ReplaceCommitMetadata::from_json(&original_bytes).expect("parse");
                    assert!(
                        !meta.partition_to_replace_file_ids.is_empty(),
                        "{name} {instant}"
                    );
                    serde_json::from_slice(&meta.to_json_pretty().expect("write")).expect("json")
                }
                _ => {
                    let meta = CommitMetadata::from_json(&original_bytes).expect("parse");
                    assert!(
                        meta.other.is_empty(),
                        "{name} {instant}: unexpected keys {:?}",
                        meta.other
                    );
                    serde_json::from_slice(&meta.to_json_pretty().expect("write")).expect("json")
                }
            };
            assert_eq!(ours, original, "{name} {instant}");
            // Plain commit metadata also round-trips a replacecommit (partitionToReplaceFileIds kept as unknown).
            let plain = timeline
                .commit_metadata(&storage, instant)
                .await
                .expect("parse");
            let plain_json: Value =
                serde_json::from_slice(&plain.to_json_pretty().expect("write")).expect("json");
            assert_eq!(
                plain_json, original,
                "{name} {instant} as plain commit metadata"
            );
            assert!(plain.schema().is_some(), "{name} {instant}");
            // Each stat's size is the file's size on disk.
            for stat in plain.write_stats() {
                let meta = storage.head(&stat.path).await.expect("head");
                assert_eq!(
                    meta.map(|m| m.size as i64),
                    Some(stat.file_size_in_bytes),
                    "{name} {}",
                    stat.path
                );
            }
            checked += 1;
        }
        // The schema readers use is the latest commit's.
        let latest_schema = timeline.latest_schema(&storage).await.expect("schema");
        match timeline.latest_completed() {
            Some(latest) => {
                let meta = timeline
                    .commit_metadata(&storage, latest)
                    .await
                    .expect("parse");
                assert_eq!(latest_schema.as_deref(), meta.schema(), "{name}");
            }
            None => assert_eq!(latest_schema, None, "{name}"),
        }
        assert_eq!(
            timeline
                .latest_checkpoint(&storage)
                .await
                .expect("checkpoint"),
            None,
            "{name}"
        );
    }
    assert_eq!(checked, 12, "completed commit files across the v6 tables");

    // The operation types Spark recorded.
    let golden = common::golden_table("v6_simplekeygen_nonhivestyle_overwritetable");
    let storage = LocalStorage::new(&golden.path);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let replace = timeline.find(
        &InstantTime::parse("20240707001303088").expect("t"),
        Action::ReplaceCommit,
    );
    let replace = replace.expect("replacecommit");
    let meta = timeline
        .replace_commit_metadata(&storage, replace)
        .await
        .expect("parse");
    assert_eq!(
        meta.commit.operation_type,
        OperationType::InsertOverwriteTable
    );
    assert_eq!(
        meta.replaced_file_groups().collect::<Vec<_>>(),
        vec![
            ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"),
            ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0"),
            ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0"),
        ]
    );
}

#[tokio::test]
async fn v6_latest_file_slices_and_time_travel() {
    for &name in common::V6_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        let timeline = Timeline::load(&storage).await.expect("timeline");
        let expected = expected_slices(name);
        // One expectation per completed instant, plus the latest.
        assert_eq!(
            expected.len(),
            timeline.completed_commits().len() + 1,
            "{name}"
        );
        for (as_of, files) in expected {
            assert_eq!(
                slice_paths(&storage, &timeline, as_of).await,
                files,
                "{name} as of {as_of:?}"
            );
        }
        // Sizes are the files' sizes.
        for slice in latest_file_slices(&storage, &timeline, None)
            .await
            .expect("slices")
        {
            let size = storage
                .head(&slice.path())
                .await
                .expect("head")
                .map(|m| m.size);
            assert_eq!(size, Some(slice.size), "{name} {}", slice.path());
            assert!(timeline.is_completed_commit(&slice.base_instant), "{name}");
        }
    }
}

#[tokio::test]
async fn v6_slices_ignore_failed_writes() {
    // Files of an instant that never completed are invisible, even below a later completed commit: neither a new
    // file group nor a newer slice of a committed group may show up.
    let golden = common::golden_table("v6_simplekeygen_nonhivestyle");
    let storage = LocalStorage::new(&golden.path);
    let failed_slice = "20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-0_20240418172803000.parquet";
    let failed_group = "20/0f0f0f0f-0000-4000-8000-000000000000-0_1-1-0_20240418172803000.parquet";
    for path in [failed_slice, failed_group] {
        storage
            .put(path, Bytes::from_static(b"partial"))
            .await
            .expect("put");
    }
    storage
        .put(".hoodie/20240418172803000.inflight", Bytes::new())
        .await
        .expect("put");
    let timeline = Timeline::load(&storage).await.expect("timeline");
    assert_eq!(timeline.pending().len(), 1);
    assert_eq!(
        slice_paths(&storage, &timeline, None).await,
        expected_slices("v6_simplekeygen_nonhivestyle")[0].1
    );
    // A data file of the pending instant after the latest commit is invisible too.
    storage
        .put(
            "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-1-0_20240418172809999.parquet",
            Bytes::from_static(b"partial"),
        )
        .await
        .expect("put");
    storage
        .put(".hoodie/20240418172809999.commit.requested", Bytes::new())
        .await
        .expect("put");
    let timeline = Timeline::load(&storage).await.expect("timeline");
    assert_eq!(
        slice_paths(&storage, &timeline, None).await,
        expected_slices("v6_simplekeygen_nonhivestyle")[0].1
    );
    assert_eq!(
        timeline.last_instant_time().map(InstantTime::as_str),
        Some("20240418172809999")
    );
}

#[tokio::test]
async fn v8_tables_are_refused_as_hudi_1x() {
    for &name in common::V8_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        // The file itself is valid (and its checksum right) ...
        let props = TableProperties::load(&storage)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(props.table_version, Some(8), "{name}");
        // ... but neither validation nor loading for writing accepts it, with the Hudi 1.x message.
        for err in [
            props.validate_writable().expect_err("v8 is not writable"),
            TableProperties::load_writable(&storage)
                .await
                .expect_err("v8 is not writable"),
        ] {
            assert!(
                matches!(err, PropertiesError::Hudi1xTable { .. }),
                "{name}: {err:?}"
            );
            let msg = err.to_string();
            assert!(
                msg.contains("Hudi 1.x table") && msg.contains("table version 6"),
                "{name}: {msg}"
            );
        }
        // The timeline loader refuses the layout-2 directory on its own. v8_empty has no instant files (its empty
        // `.hoodie/timeline/` directory is not an object), so only the properties tell there.
        match Timeline::load(&storage).await {
            Err(TimelineError::Hudi1xLayout { path }) => {
                assert!(path.starts_with(".hoodie/timeline/"), "{name}: {path}");
                assert_ne!(name, "v8_empty");
            }
            Ok(timeline) => {
                assert_eq!(name, "v8_empty", "{name}: v8 timeline accepted");
                assert!(timeline.is_empty());
            }
            Err(other) => panic!("{name}: {other}"),
        }
    }
}

#[tokio::test]
async fn checkpoint_round_trips_through_extra_metadata() {
    let golden = common::golden_table("v6_simplekeygen_nonhivestyle");
    let storage = LocalStorage::new(&golden.path);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let clock = ManualClock::new(0); // far behind the table's instants: generation must still move forward
    let t1 = InstantTime::next_after(&clock, timeline.last_instant_time());
    assert_eq!(t1.as_str(), "20240418172804499");

    let schema = timeline
        .latest_schema(&storage)
        .await
        .expect("schema")
        .expect("some");
    let mut checkpoint = Checkpoint::new();
    checkpoint.set("orders", 0, 123);
    checkpoint.set("orders", 1, 456);
    let mut meta = CommitMetadata::new(OperationType::Insert);
    meta.set_schema(&schema);
    let mut stat = WriteStat::new("abc-0", "40", &format!("40/abc-0_0-1-0_{t1}.parquet"));
    stat.num_writes = 1;
    stat.num_inserts = 1;
    meta.add_write_stat(stat);
    checkpoint
        .write_to(&mut meta.extra_metadata)
        .expect("checkpoint");
    storage
        .put_if_absent(
            &Instant::new(t1.clone(), Action::Commit, State::Completed).path(),
            Bytes::from(meta.to_json_pretty().expect("json")),
        )
        .await
        .expect("commit");

    // The JSON carries the three formats.
    let raw: Value = serde_json::from_slice(
        &storage
            .get(&format!(".hoodie/{t1}.commit"))
            .await
            .expect("get"),
    )
    .expect("json");
    assert_eq!(
        raw["extraMetadata"][DELTASTREAMER_CHECKPOINT_KEY],
        "orders,0:123,1:456"
    );
    assert_eq!(
        raw["extraMetadata"][KAFKA_COMMIT_OFFSETS_KEY],
        "0=123,1=456"
    );
    assert_eq!(
        raw["extraMetadata"][SINK_CHECKPOINT_KEY],
        r#"{"orders":{"0":123,"1":456}}"#
    );
    assert_eq!(raw["partitionToWriteStats"]["40"][0]["prevCommit"], "null");

    // A later clustering commit has no checkpoint and no schema change: readers walk back past it.
    let t2 = InstantTime::next_after(&clock, Some(&t1));
    let mut cluster = ReplaceCommitMetadata::default();
    cluster.commit.operation_type = OperationType::Cluster;
    cluster
        .commit
        .set_schema(r#"{"type":"record","name":"ignored","fields":[]}"#);
    storage
        .put(
            &Instant::new(t2.clone(), Action::ReplaceCommit, State::Completed).path(),
            Bytes::from(cluster.to_json_pretty().expect("json")),
        )
        .await
        .expect("replacecommit");

    let timeline = Timeline::load(&storage).await.expect("timeline");
    assert_eq!(timeline.latest_completed().map(|i| &i.time), Some(&t2));
    let (instant, read) = timeline
        .latest_checkpoint(&storage)
        .await
        .expect("read")
        .expect("present");
    assert_eq!(instant.time, t1);
    assert_eq!(read, checkpoint);
    assert_eq!(
        timeline.latest_schema(&storage).await.expect("schema"),
        Some(schema)
    );

    // Two topics: only hudi.sink.checkpoint is written, and it is what is read back.
    let mut two = checkpoint.clone();
    two.set("payments", 3, 9);
    let mut extra = BTreeMap::new();
    two.write_to(&mut extra).expect("checkpoint");
    assert_eq!(extra.keys().collect::<Vec<_>>(), vec![SINK_CHECKPOINT_KEY]);
    assert_eq!(
        Checkpoint::from_extra_metadata(&extra, None).expect("read"),
        Some(two)
    );
}

/// Lists file slices with the hudi-rs Python reader (`hudi` 0.5.0): the latest, then as of every completed
/// commit-like instant, as JSON `{"latest": [...], "as_of": {"<t>": [...]}}`.
const PY_SLICES: &str = r#"
import json, sys
from hudi import HudiTableBuilder, HudiReadOptions

def paths(slices):
    out = []
    for s in slices:
        p = s.base_file_relative_path
        out.append(p() if callable(p) else p)
    return sorted(out)

table = HudiTableBuilder.from_base_uri(sys.argv[1]).build()
result = {"latest": paths(table.get_file_slices()), "as_of": {}}
for t in sys.argv[2:]:
    result["as_of"][t] = paths(table.get_file_slices(HudiReadOptions().with_as_of_timestamp(t)))
print(json.dumps(result))
"#;

/// `$HUDI_SINK_PYTHON`, else `<workspace>/.venv/bin/python`; a missing interpreter fails the test.
fn hudi_python() -> std::path::PathBuf {
    let python = std::env::var_os("HUDI_SINK_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| common::workspace_root().join(".venv/bin/python"));
    assert!(
        python.exists(),
        "no Python with hudi==0.5.0 at {} (create the venv: python -m venv .venv && .venv/bin/pip install \
         hudi==0.5.0, or set HUDI_SINK_PYTHON)",
        python.display()
    );
    python
}

#[tokio::test]
async fn v6_file_slices_match_hudi_rs_python() {
    let python = hudi_python();
    for &name in common::V6_TABLES {
        let golden = common::golden_table(name);
        let storage = LocalStorage::new(&golden.path);
        let timeline = Timeline::load(&storage).await.expect("timeline");
        let instants: Vec<String> = timeline
            .completed_commits()
            .iter()
            .map(|i| i.time.to_string())
            .collect();
        let out = Command::new(&python)
            .arg("-c")
            .arg(PY_SLICES)
            .arg(&golden.path)
            .args(&instants)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", python.display()));
        assert!(
            out.status.success(),
            "hudi-rs Python reader failed on {name} (is `hudi==0.5.0` installed in {}?):\n{}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: Value = serde_json::from_slice(&out.stdout).expect("reader prints JSON");
        let list = |v: &Value| -> Vec<String> {
            v.as_array()
                .expect("array")
                .iter()
                .map(|p| p.as_str().expect("path").to_string())
                .collect()
        };
        assert_eq!(
            slice_paths(&storage, &timeline, None).await,
            list(&theirs["latest"]),
            "{name} latest"
        );
        for t in &instants {
            assert_eq!(
                slice_paths(&storage, &timeline, Some(t)).await,
                list(&theirs["as_of"][t.as_str()]),
                "{name} as of {t}"
            );
        }
    }
}
