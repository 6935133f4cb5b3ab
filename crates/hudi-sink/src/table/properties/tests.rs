use super::*;
use crate::clock::ManualClock;
use crate::storage::memory::MemoryStorage;

const SPARK_V6: &str = r#"#Properties saved on 2024-04-18T22:27:38.493Z
#Thu Apr 18 17:27:38 CDT 2024
hoodie.table.precombine.field=longField
hoodie.datasource.write.drop.partition.columns=false
hoodie.table.partition.fields=byteField
hoodie.table.type=COPY_ON_WRITE
hoodie.archivelog.folder=archived
hoodie.timeline.layout.version=1
hoodie.table.version=6
hoodie.table.recordkey.fields=id
hoodie.datasource.write.partitionpath.urlencode=false
hoodie.database.name=default
hoodie.table.name=v6_simplekeygen_nonhivestyle
hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator
hoodie.datasource.write.hive_style_partitioning=false
hoodie.keygen.timebased.input.dateformat=yyyy-MM-dd'T'HH\:mm\:ss.SSSZ
hoodie.table.create.schema={"type"\:"record","name"\:"r","fields"\:[]}
hoodie.table.checksum=616688896
"#;

fn clock() -> ManualClock {
    // 2025-03-01T10:29:59.000Z
    ManualClock::new(1_740_824_999_000)
}

fn trips() -> TableProperties {
    let mut p = TableProperties::new_v6_cow("trips").expect("name");
    p.database = Some("default".into());
    p.record_key_fields = vec!["uuid".into()];
    p.partition_fields = vec!["city".into()];
    p.precombine_field = Some("ts".into());
    p.key_generator_class = Some(key_generator_class::SIMPLE.into());
    p.hive_style_partitioning = Some(true);
    p
}

#[test]
fn checksums_match_the_spec() {
    assert_eq!(
        table_checksum(Some("default"), "v6_simplekeygen_nonhivestyle"),
        616_688_896
    );
    assert_eq!(table_checksum(Some("default"), "trips"), 2_200_697_520);
    assert_eq!(table_checksum(None, "trips"), 3_761_586_722);
}

#[test]
fn parses_spark_file() {
    let p = TableProperties::from_bytes(SPARK_V6.as_bytes()).expect("parse");
    assert_eq!(p.name, "v6_simplekeygen_nonhivestyle");
    assert_eq!(p.database.as_deref(), Some("default"));
    assert_eq!(p.table_type, TableType::CopyOnWrite);
    assert_eq!(p.table_version, Some(6));
    assert_eq!(p.timeline_layout_version, Some(1));
    assert_eq!(p.partition_fields, vec!["byteField"]);
    assert_eq!(p.record_key_fields, vec!["id"]);
    assert_eq!(p.precombine_field.as_deref(), Some("longField"));
    assert_eq!(
        p.create_schema.as_deref(),
        Some(r#"{"type":"record","name":"r","fields":[]}"#)
    );
    assert_eq!(p.stored_checksum(), Some(616_688_896));
    assert_eq!(
        p.other().get("hoodie.keygen.timebased.input.dateformat"),
        Some("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    );
    assert_eq!(p.timeline_timezone, None);
    assert_eq!(p.timeline_timezone_or_default(), TimelineTimezone::Local);
    assert!(p.is_partitioned());
    // Absent timezone means LOCAL to Java: not writable until set.
    assert!(matches!(
        p.validate_writable(),
        Err(PropertiesError::NotWritable {
            key: "hoodie.table.timeline.timezone",
            ..
        })
    ));
    let map = p.as_map();
    assert_eq!(
        map.get("hoodie.table.checksum").map(String::as_str),
        Some("616688896")
    );
    assert_eq!(
        map.get("hoodie.table.keygenerator.class")
            .map(String::as_str),
        Some(key_generator_class::SIMPLE)
    );
    assert_eq!(
        map.get("hoodie.keygen.timebased.input.dateformat")
            .map(String::as_str),
        Some("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    );
}

#[test]
fn writes_the_spec_example_byte_for_byte() {
    let mut p = trips();
    p.create_schema = Some(r#"{"type":"record","name":"trips_record","fields":[]}"#.into());
    let text = String::from_utf8(p.to_bytes(&clock()).expect("write")).expect("ascii");
    assert_eq!(
        text,
        "#Properties saved on 2025-03-01T10:29:59.000Z\n\
         hoodie.table.name=trips\n\
         hoodie.database.name=default\n\
         hoodie.table.type=COPY_ON_WRITE\n\
         hoodie.table.version=6\n\
         hoodie.timeline.layout.version=1\n\
         hoodie.table.timeline.timezone=UTC\n\
         hoodie.table.recordkey.fields=uuid\n\
         hoodie.table.partition.fields=city\n\
         hoodie.table.precombine.field=ts\n\
         hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator\n\
         hoodie.table.base.file.format=PARQUET\n\
         hoodie.populate.meta.fields=true\n\
         hoodie.datasource.write.hive_style_partitioning=true\n\
         hoodie.datasource.write.partitionpath.urlencode=false\n\
         hoodie.datasource.write.drop.partition.columns=false\n\
         hoodie.partition.metafile.use.base.format=false\n\
         hoodie.archivelog.folder=archived\n\
         hoodie.table.create.schema={\"type\":\"record\",\"name\":\"trips_record\",\"fields\":[]}\n\
         hoodie.table.checksum=2200697520\n"
    );
    let back = TableProperties::from_bytes(text.as_bytes()).expect("reparse");
    assert_eq!(back, p.clone().with_stored_checksum());
    back.validate_writable().expect("writable");
}

#[test]
fn round_trip_keeps_unknown_keys() {
    let p = TableProperties::from_bytes(SPARK_V6.as_bytes()).expect("parse");
    let bytes = p.to_bytes(&clock()).expect("write");
    let text = String::from_utf8(bytes.clone()).expect("ascii");
    assert!(!text.contains('\\'), "{text}");
    assert!(text.ends_with("hoodie.table.checksum=616688896\n"));
    assert!(
        text.contains("\nhoodie.keygen.timebased.input.dateformat=yyyy-MM-dd'T'HH:mm:ss.SSSZ\n")
    );
    assert_eq!(TableProperties::from_bytes(&bytes).expect("reparse"), p);
}

#[test]
fn rejected_spellings() {
    let with = |key: &str, value: &str| {
        let mut props = JavaProperties::parse(SPARK_V6.as_bytes()).expect("parse");
        props.insert(key, value);
        TableProperties::from_java_properties(&props)
    };
    for (key, value) in [
        ("hoodie.table.type", "copy_on_write"),
        ("hoodie.table.type", "COW"),
        ("hoodie.table.base.file.format", "parquet"),
        ("hoodie.table.timeline.timezone", "utc"),
        ("hoodie.table.timeline.timezone", "Europe/Paris"),
        ("hoodie.table.keygenerator.type", "simple"),
        ("hoodie.table.version", "six"),
        ("hoodie.table.version", "-6"),
        ("hoodie.timeline.layout.version", "1.0"),
        ("hoodie.populate.meta.fields", "yes"),
        ("hoodie.datasource.write.drop.partition.columns", "1"),
        ("hoodie.table.checksum", "abc"),
    ] {
        match with(key, value) {
            Err(PropertiesError::InvalidValue {
                key: k, value: v, ..
            }) => {
                assert_eq!((k, v.as_str()), (key, value));
            }
            other => panic!("{key}={value}: {other:?}"),
        }
    }
    assert!(with("hoodie.populate.meta.fields", "TRUE").is_ok());
    for ok in ["COPY_ON_WRITE", "MERGE_ON_READ"] {
        assert_eq!(ok.parse::<TableType>().expect("ok").as_str(), ok);
    }
    for ok in KeyGeneratorType::ALL {
        assert_eq!(ok.as_str().parse::<KeyGeneratorType>().expect("ok"), *ok);
    }
}

#[test]
fn required_keys_and_checksum() {
    let mut props = JavaProperties::parse(SPARK_V6.as_bytes()).expect("parse");
    props.insert("hoodie.table.checksum", "12345");
    assert!(matches!(
        TableProperties::from_java_properties(&props),
        Err(PropertiesError::ChecksumMismatch {
            stored: 12345,
            computed: 616_688_896,
            ..
        })
    ));
    props.remove("hoodie.table.checksum");
    assert!(
        TableProperties::from_java_properties(&props).is_ok(),
        "absent checksum is accepted"
    );
    props.remove("hoodie.table.type");
    assert!(matches!(
        TableProperties::from_java_properties(&props),
        Err(PropertiesError::MissingKey {
            key: "hoodie.table.type"
        })
    ));
    props.remove("hoodie.table.name");
    assert!(matches!(
        TableProperties::from_java_properties(&props),
        Err(PropertiesError::MissingKey {
            key: "hoodie.table.name"
        })
    ));
}

#[test]
fn validation_refuses_what_the_writer_cannot_write() {
    trips().validate_writable().expect("ours is writable");
    let mut mor = trips();
    mor.table_type = TableType::MergeOnRead;
    mor.validate_writable().expect("merge-on-read is writable");
    assert_eq!(
        mor.write_action(),
        crate::table::instant::Action::DeltaCommit
    );
    type Change = Box<dyn Fn(&mut TableProperties)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|p| p.table_version = Some(5)),
            "hoodie.table.version",
        ),
        (Box::new(|p| p.table_version = None), "hoodie.table.version"),
        (
            Box::new(|p| p.timeline_layout_version = Some(0)),
            "hoodie.timeline.layout.version",
        ),
        (
            Box::new(|p| p.timeline_layout_version = None),
            "hoodie.timeline.layout.version",
        ),
        (
            Box::new(|p| p.base_file_format = Some(BaseFileFormat::Orc)),
            "hoodie.table.base.file.format",
        ),
        (
            Box::new(|p| p.metadata_partitions = vec!["files".into()]),
            "hoodie.table.metadata.partitions",
        ),
        (
            Box::new(|p| p.metadata_partitions_inflight = vec!["files".into()]),
            "hoodie.table.metadata.partitions.inflight",
        ),
        (
            Box::new(|p| p.drop_partition_columns = Some(true)),
            "hoodie.datasource.write.drop.partition.columns",
        ),
        (
            Box::new(|p| p.populate_meta_fields = Some(false)),
            "hoodie.populate.meta.fields",
        ),
        (
            Box::new(|p| p.timeline_timezone = Some(TimelineTimezone::Local)),
            "hoodie.table.timeline.timezone",
        ),
        (
            Box::new(|p| p.timeline_timezone = None),
            "hoodie.table.timeline.timezone",
        ),
    ];
    for (change, key) in cases {
        let mut p = trips();
        change(&mut p);
        match p.validate_writable() {
            Err(PropertiesError::NotWritable { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    for (version, layout) in [(Some(8), Some(2)), (Some(9), Some(2)), (Some(6), Some(2))] {
        let mut p = trips();
        p.table_version = version;
        p.timeline_layout_version = layout;
        let err = p.validate_writable().expect_err("1.x");
        assert!(matches!(err, PropertiesError::Hudi1xTable { .. }));
        assert!(err.to_string().contains("Hudi 1.x table"), "{err}");
    }
}

#[test]
fn hostile_values_are_not_written() {
    let mut p = trips();
    p.create_schema = Some(r#"{"doc":"a \"quoted\" word"}"#.into());
    assert!(matches!(
        p.to_bytes(&clock()),
        Err(PropertiesError::Unwritable(_))
    ));
    let mut p = trips();
    p.precombine_field = Some("ts\nhoodie.table.type=MERGE_ON_READ".into());
    assert!(p.to_bytes(&clock()).is_err());
    let mut p = trips();
    p.name = "caf\u{e9}".into();
    assert!(p.to_bytes(&clock()).is_err());
    let mut p = trips();
    assert!(matches!(
        p.set_other("hoodie.table.type", "X"),
        Err(PropertiesError::TypedKey { .. })
    ));
    assert!(p.set_other("x.y", " lead").is_err());
    assert!(p.set_other("x=y", "v").is_err());
    p.set_other("hoodie.keygen.timebased.output.dateformat", "yyyy/MM/dd")
        .expect("ok");
    assert_eq!(
        p.remove_other("hoodie.keygen.timebased.output.dateformat")
            .as_deref(),
        Some("yyyy/MM/dd")
    );
    assert!(TableProperties::new_v6_cow("1abc").is_err());
    assert!(TableProperties::new_v6_cow("a-b").is_err());
    assert!(TableProperties::new_v6_cow("").is_err());
}

#[tokio::test]
async fn create_load_store_with_backup() {
    let storage = MemoryStorage::new("mem://t");
    assert!(matches!(
        TableProperties::load(&storage).await,
        Err(PropertiesError::NotFound { .. })
    ));
    let p = trips();
    assert_eq!(
        p.create(&storage, &clock()).await.expect("create"),
        PutOutcome::Created
    );
    assert_eq!(
        p.create(&storage, &clock()).await.expect("again"),
        PutOutcome::AlreadyExists
    );
    let loaded = TableProperties::load_writable(&storage)
        .await
        .expect("load");
    assert_eq!(loaded, p.clone().with_stored_checksum());

    let mut changed = loaded.clone();
    changed
        .set_other("hoodie.table.cdc.enabled", "false")
        .expect("set");
    changed.store(&storage, &clock()).await.expect("store");
    assert!(storage
        .head(PROPERTIES_BACKUP_PATH)
        .await
        .expect("head")
        .is_none());
    assert_eq!(
        TableProperties::load(&storage).await.expect("load"),
        changed
    );

    // Interrupted rewrite: main deleted, backup present → readers use the backup.
    storage
        .put(
            PROPERTIES_BACKUP_PATH,
            storage.get(PROPERTIES_PATH).await.expect("get"),
        )
        .await
        .expect("put");
    storage.delete(PROPERTIES_PATH).await.expect("delete");
    assert_eq!(
        TableProperties::load(&storage).await.expect("backup"),
        changed
    );
    // A store then restores the main file and removes the backup.
    changed.store(&storage, &clock()).await.expect("store");
    assert!(storage.head(PROPERTIES_PATH).await.expect("head").is_some());
    assert!(storage
        .head(PROPERTIES_BACKUP_PATH)
        .await
        .expect("head")
        .is_none());

    // A corrupt main file falls back to a valid backup.
    storage
        .put(
            PROPERTIES_BACKUP_PATH,
            storage.get(PROPERTIES_PATH).await.expect("get"),
        )
        .await
        .expect("put");
    let corrupt = String::from_utf8(storage.get(PROPERTIES_PATH).await.expect("get").to_vec())
        .expect("ascii")
        .replace("hoodie.table.name=trips", "hoodie.table.name=trip");
    storage
        .put(PROPERTIES_PATH, Bytes::from(corrupt))
        .await
        .expect("put");
    assert_eq!(
        TableProperties::load(&storage).await.expect("backup"),
        changed
    );
    storage
        .delete(PROPERTIES_BACKUP_PATH)
        .await
        .expect("delete");
    assert!(matches!(
        TableProperties::load(&storage).await,
        Err(PropertiesError::ChecksumMismatch { .. })
    ));
}

#[tokio::test]
async fn timeline_directory_means_hudi_1x() {
    let storage = MemoryStorage::new("mem://t");
    trips().create(&storage, &clock()).await.expect("create");
    storage
        .put(
            ".hoodie/timeline/20250713010139392.commit.requested",
            Bytes::new(),
        )
        .await
        .expect("put");
    let err = TableProperties::load_writable(&storage)
        .await
        .expect_err("v8");
    assert!(matches!(err, PropertiesError::Hudi1xTable { .. }), "{err}");
}
