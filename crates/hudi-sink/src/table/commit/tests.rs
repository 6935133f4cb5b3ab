use super::*;

const SPARK_COMMIT: &str = r#"{
  "partitionToWriteStats" : {
"10" : [ {
  "fileId" : "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0",
  "path" : "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet",
  "cdcStats" : null,
  "prevCommit" : "20240418172802262",
  "numWrites" : 2,
  "numDeletes" : 0,
  "numUpdateWrites" : 1,
  "numInserts" : 0,
  "totalWriteBytes" : 441352,
  "totalWriteErrors" : 0,
  "tempPath" : null,
  "partitionPath" : "10",
  "totalLogRecords" : 0,
  "totalLogFilesCompacted" : 0,
  "totalLogSizeCompacted" : 0,
  "totalUpdatedRecordsCompacted" : 0,
  "totalLogBlocks" : 0,
  "totalCorruptLogBlock" : 0,
  "totalRollbackBlocks" : 0,
  "fileSizeInBytes" : 441352,
  "minEventTime" : null,
  "maxEventTime" : null,
  "runtimeStats" : {
    "totalScanTime" : 0,
    "totalUpsertTime" : 103,
    "totalCreateTime" : 0
  }
} ]
  },
  "compacted" : false,
  "extraMetadata" : {
"schema" : "{\"type\":\"record\",\"name\":\"r\",\"fields\":[]}"
  },
  "operationType" : "UPSERT"
}"#;

#[test]
fn spark_commit_round_trips_as_json_value() {
    let meta = CommitMetadata::from_json(SPARK_COMMIT.as_bytes()).expect("parse");
    assert_eq!(meta.operation_type, OperationType::Upsert);
    assert_eq!(
        meta.schema(),
        Some(r#"{"type":"record","name":"r","fields":[]}"#)
    );
    let stat = meta.write_stats().next().expect("one stat");
    assert_eq!(
        stat.prev_commit_instant().map(String::from).as_deref(),
        Some("20240418172802262")
    );
    assert_eq!(
        stat.file_name(),
        "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet"
    );
    assert_eq!(
        stat.runtime_stats.as_ref().map(|r| r.total_upsert_time),
        Some(103)
    );
    let ours: Value = serde_json::from_slice(&meta.to_json_pretty().expect("json")).expect("value");
    let theirs: Value = serde_json::from_str(SPARK_COMMIT).expect("value");
    assert_eq!(ours, theirs);
}

#[test]
fn new_stats_write_every_field_in_hudi_order() {
    let mut meta = CommitMetadata::new(OperationType::Insert);
    meta.add_write_stat(WriteStat::new(
        "f-0",
        "",
        "f-0_0-1-0_20250301110000456.parquet",
    ));
    meta.set_schema("{}");
    let text = String::from_utf8(meta.to_json_pretty().expect("json")).expect("utf8");
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"'))
        .filter_map(|l| l.split_once('"').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        vec![
            "partitionToWriteStats",
            "",
            "fileId",
            "path",
            "cdcStats",
            "prevCommit",
            "numWrites",
            "numDeletes",
            "numUpdateWrites",
            "numInserts",
            "totalWriteBytes",
            "totalWriteErrors",
            "tempPath",
            "partitionPath",
            "totalLogRecords",
            "totalLogFilesCompacted",
            "totalLogSizeCompacted",
            "totalUpdatedRecordsCompacted",
            "totalLogBlocks",
            "totalCorruptLogBlock",
            "totalRollbackBlocks",
            "fileSizeInBytes",
            "minEventTime",
            "maxEventTime",
            "runtimeStats",
            "totalScanTime",
            "totalUpsertTime",
            "totalCreateTime",
            "compacted",
            "extraMetadata",
            "schema",
            "operationType",
        ]
    );
    assert!(text.contains(r#""prevCommit": "null""#));
    assert!(text.contains(r#""cdcStats": null"#));
    assert!(text.contains(r#""operationType": "INSERT""#));
}

#[test]
fn lenient_like_jackson_strict_on_operation() {
    let meta = CommitMetadata::from_json(
        br#"{"partitionToWriteStats":{"p":[{"fileId":"a-0","newField":7}]},"futureKey":[1]}"#,
    )
    .expect("parse");
    assert_eq!(meta.operation_type, OperationType::Unknown);
    assert!(!meta.compacted);
    let stat = meta.write_stats().next().expect("stat");
    assert_eq!(stat.prev_commit, NULL_COMMIT);
    assert_eq!(stat.num_writes, 0);
    assert_eq!(stat.other.get("newField"), Some(&Value::from(7)));
    assert_eq!(meta.other.get("futureKey"), Some(&serde_json::json!([1])));
    let again: Value =
        serde_json::from_slice(&meta.to_json_pretty().expect("json")).expect("value");
    assert_eq!(again["futureKey"], serde_json::json!([1]));
    assert_eq!(
        again["partitionToWriteStats"]["p"][0]["newField"],
        Value::from(7)
    );

    assert_eq!(
        CommitMetadata::from_json(b"").expect("empty"),
        CommitMetadata::default()
    );
    for bad in [
        r#"{"operationType":"upsert"}"#,
        r#"{"operationType":"MERGE"}"#,
        r#"{"partitionToWriteStats":{"p":[{"numWrites":"two"}]}}"#,
        r#"{"compacted":"no"}"#,
        "[]",
        "{",
    ] {
        let err = CommitMetadata::from_json(bad.as_bytes()).expect_err(bad);
        assert!(matches!(err, CommitError::Json { .. }), "{bad}");
    }
    let err = CommitMetadata::from_json(br#"{"operationType":"MERGE"}"#).expect_err("unknown");
    assert!(err.to_string().contains("MERGE"), "{err}");
    assert!(OperationType::Cluster
        .as_str()
        .parse::<OperationType>()
        .is_ok());
    assert!("Upsert".parse::<OperationType>().is_err());
    for op in OperationType::ALL {
        assert_eq!(
            op.as_str().parse::<OperationType>().expect("round trip"),
            op
        );
    }
    assert!(!OperationType::Cluster.can_update_schema());
    assert!(!OperationType::Compact.can_update_schema());
    assert!(OperationType::Upsert.can_update_schema());
    assert!(OperationType::InsertOverwriteTable.can_update_schema());
}

#[test]
fn replace_commit_round_trip() {
    let text = r#"{"partitionToWriteStats":{},"compacted":false,"extraMetadata":{},"operationType":"INSERT_OVERWRITE_TABLE",
        "partitionToReplaceFileIds":{"30":["d-0"],"10":["a-0","b-0"]}}"#;
    let meta = ReplaceCommitMetadata::from_json(text.as_bytes()).expect("parse");
    assert_eq!(
        meta.commit.operation_type,
        OperationType::InsertOverwriteTable
    );
    assert_eq!(
        meta.replaced_file_groups().collect::<Vec<_>>(),
        vec![("10", "a-0"), ("10", "b-0"), ("30", "d-0")]
    );
    assert!(meta.commit.other.is_empty(), "{:?}", meta.commit.other);
    let ours: Value = serde_json::from_slice(&meta.to_json_pretty().expect("json")).expect("value");
    assert_eq!(ours, serde_json::from_str::<Value>(text).expect("value"));
    // A replacecommit read as plain commit metadata keeps the replaced ids as an unknown key.
    let plain = CommitMetadata::from_json(text.as_bytes()).expect("parse");
    assert!(plain.other.contains_key("partitionToReplaceFileIds"));
}

#[test]
fn checkpoint_formats() {
    let mut cp = Checkpoint::new();
    cp.set("orders", 1, 456);
    cp.set("orders", 0, 123);
    cp.set("orders", 10, 7);
    assert_eq!(
        cp.to_deltastreamer().as_deref(),
        Some("orders,0:123,1:456,10:7")
    );
    assert_eq!(cp.to_kafka_connect().as_deref(), Some("0=123,1=456,10=7"));
    assert_eq!(cp.to_sink_json(), r#"{"orders":{"0":123,"1":456,"10":7}}"#);

    let mut extra = BTreeMap::new();
    extra.insert(SCHEMA_KEY.to_string(), "{}".to_string());
    cp.write_to(&mut extra).expect("write");
    assert_eq!(extra.len(), 4);
    assert_eq!(
        Checkpoint::from_extra_metadata(&extra, None).expect("read"),
        Some(cp.clone())
    );
    assert_eq!(
        Checkpoint::parse_deltastreamer("orders,0:123,1:456,10:7").expect("ds"),
        cp
    );
    assert_eq!(
        Checkpoint::parse_kafka_connect("orders", "0=123,1=456,10=7").expect("kc"),
        cp
    );
    assert_eq!(
        Checkpoint::parse_sink_json(&cp.to_sink_json()).expect("json"),
        cp
    );

    // Two topics: only the JSON form, and stale single-topic keys are dropped.
    let mut two = cp.clone();
    two.set("payments", 0, 9);
    two.write_to(&mut extra).expect("write");
    assert!(!extra.contains_key(DELTASTREAMER_CHECKPOINT_KEY));
    assert!(!extra.contains_key(KAFKA_COMMIT_OFFSETS_KEY));
    assert_eq!(
        Checkpoint::from_extra_metadata(&extra, None).expect("read"),
        Some(two.clone())
    );
    assert_eq!(two.get("payments", 0), Some(9));
    assert_eq!(two.get("payments", 1), None);

    // Reading prefers the sink JSON over the others.
    let mut mixed = BTreeMap::new();
    mixed.insert(
        DELTASTREAMER_CHECKPOINT_KEY.to_string(),
        "orders,0:1".to_string(),
    );
    mixed.insert(
        SINK_CHECKPOINT_KEY.to_string(),
        r#"{"orders":{"0":2}}"#.to_string(),
    );
    let read = Checkpoint::from_extra_metadata(&mixed, None)
        .expect("read")
        .expect("some");
    assert_eq!(read.get("orders", 0), Some(2));
    mixed.remove(SINK_CHECKPOINT_KEY);
    let read = Checkpoint::from_extra_metadata(&mixed, None)
        .expect("read")
        .expect("some");
    assert_eq!(read.get("orders", 0), Some(1));

    // Kafka Connect offsets name no topic.
    let connect: BTreeMap<String, String> =
        [(KAFKA_COMMIT_OFFSETS_KEY.to_string(), "0=5".to_string())].into();
    assert!(matches!(
        Checkpoint::from_extra_metadata(&connect, None),
        Err(CommitError::TopicUnknown { .. })
    ));
    let read = Checkpoint::from_extra_metadata(&connect, Some("orders"))
        .expect("read")
        .expect("some");
    assert_eq!(read.get("orders", 0), Some(5));
    assert_eq!(
        Checkpoint::from_extra_metadata(&BTreeMap::new(), None).expect("none"),
        None
    );
}

#[test]
fn bad_checkpoints() {
    for bad in ["", ",0:1", "t,0", "t,0:x", "t,-1:5", "t,0:-5", "t,a:1"] {
        assert!(Checkpoint::parse_deltastreamer(bad).is_err(), "{bad:?}");
    }
    for bad in ["0", "0=x", "x=0", "0:1", "-1=2"] {
        assert!(
            Checkpoint::parse_kafka_connect("t", bad).is_err(),
            "{bad:?}"
        );
    }
    for bad in [
        "",
        "[]",
        r#"{"t":{"x":1}}"#,
        r#"{"t":{"0":-1}}"#,
        r#"{"t":{"0":"1"}}"#,
        r#"{"t":5}"#,
    ] {
        assert!(Checkpoint::parse_sink_json(bad).is_err(), "{bad:?}");
    }
    for (topic, p, o) in [
        ("bad topic", 0, 1),
        ("t,x", 0, 1),
        ("", 0, 1),
        ("t", -1, 1),
        ("t", 0, -1),
    ] {
        let mut cp = Checkpoint::new();
        cp.set(topic, p, o);
        assert!(
            cp.write_to(&mut BTreeMap::new()).is_err(),
            "{topic:?} {p} {o}"
        );
    }
    // A topic with no partitions yet is still a topic.
    let cp = Checkpoint::parse_deltastreamer("t").expect("bare topic");
    assert_eq!(cp.topics().len(), 1);
    assert_eq!(cp.to_deltastreamer().as_deref(), Some("t"));
}

/// A Spark deltacommit append stat (`HoodieDeltaWriteStat`): the delta fields are typed, and the stat writes
/// back every key, in Spark's order, with nothing left over in `other`.
#[test]
fn delta_write_stats_round_trip_losslessly() {
    let json = r#"{"partitionToWriteStats":{"":[{"fileId":"g-0","path":".g-0_20250126040823628.log.3_0-13-9",
        "cdcStats":null,"prevCommit":"20250126040823628","numWrites":1,"numDeletes":0,"numUpdateWrites":1,
        "numInserts":0,"totalWriteBytes":11835,"totalWriteErrors":0,"tempPath":null,"partitionPath":"",
        "totalLogRecords":0,"totalLogFilesCompacted":0,"totalLogSizeCompacted":0,
        "totalUpdatedRecordsCompacted":0,"totalLogBlocks":0,"totalCorruptLogBlock":0,"totalRollbackBlocks":0,
        "fileSizeInBytes":11835,"minEventTime":null,"maxEventTime":null,
        "runtimeStats":{"totalScanTime":0,"totalUpsertTime":462,"totalCreateTime":0},
        "logVersion":3,"logOffset":0,"baseFile":"g-0_0-13-23_20250126040823628.parquet",
        "logFiles":[".g-0_20250126040823628.log.2_1-0-1",".g-0_20250126040823628.log.3_0-13-9"],
        "recordsStats":{"val":null}}]},"compacted":false,"extraMetadata":{"schema":"{}"},
        "operationType":"UPSERT"}"#;
    let meta = CommitMetadata::from_json(json.as_bytes()).expect("parse");
    let stat = meta.write_stats().next().expect("stat");
    assert_eq!(stat.log_version, Some(3));
    assert_eq!(stat.log_offset, Some(0));
    assert_eq!(
        stat.base_file.as_deref(),
        Some("g-0_0-13-23_20250126040823628.parquet")
    );
    assert_eq!(stat.log_files.as_ref().map(Vec::len), Some(2));
    assert_eq!(stat.records_stats, Some(serde_json::json!({"val": null})));
    assert!(stat.other.is_empty(), "{:?}", stat.other);
    let back = meta.to_json_pretty().expect("json");
    let original: Value = serde_json::from_str(json).expect("value");
    let written: Value = serde_json::from_slice(&back).expect("value");
    assert_eq!(written, original);
    // Key order, too: the stat's keys as Spark writes them.
    let keys = |v: &Value| -> Vec<String> {
        v["partitionToWriteStats"][""][0]
            .as_object()
            .expect("stat")
            .keys()
            .cloned()
            .collect()
    };
    let ordered: serde_json::Map<String, Value> = serde_json::from_slice(&back).expect("ordered");
    let original_ordered: serde_json::Map<String, Value> =
        serde_json::from_str(json).expect("ordered");
    assert_eq!(
        keys(&Value::Object(ordered)),
        keys(&Value::Object(original_ordered))
    );
    // A base file stat has none of the delta keys.
    let plain = serde_json::to_value(WriteStat::new(
        "g-0",
        "",
        "g-0_0-1-0_20250126040823628.parquet",
    ))
    .expect("value");
    for key in [
        "logVersion",
        "logOffset",
        "baseFile",
        "logFiles",
        "recordsStats",
    ] {
        assert!(plain.get(key).is_none(), "{key}");
    }
}
