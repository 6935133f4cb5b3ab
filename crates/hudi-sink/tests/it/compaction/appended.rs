//! Compaction of tables other writers appended to: a Spark table with a failed log, the sink's appends to a
//! Spark table, crashes at every storage call, all-deleted groups and another engine's pending compaction.

use super::*;

/// `v6_trips_8i1u`'s file groups.
const SF: (&str, &str) = (
    "city=san_francisco",
    "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
);
const CHENNAI: (&str, &str) = ("city=chennai", "84e82649-b1ee-4a25-a316-17cc6872616b-0");
const TRIPS_BASE: &str = "20250331030642808";
const TRIPS_LAST: &str = "20250331030645735";

fn trips_schema(table: &Path) -> (String, AvroSchema) {
    let last: Value = serde_json::from_slice(
        &std::fs::read(table.join(format!(".hoodie/{TRIPS_LAST}.deltacommit"))).expect("commit"),
    )
    .expect("json");
    let text = last["extraMetadata"]["schema"]
        .as_str()
        .expect("schema")
        .to_string();
    let schema = AvroSchema::parse(&text).expect("schema");
    (text, schema)
}

/// Appends the next log file of a `v6_trips_8i1u` slice holding `rows` (uuid, ts, fare) and deletes of
/// the keys `deletes` (commit-time deletes, as Spark SQL writes them), written by `t`; returns its
/// table-relative path and size.
fn append_log(
    table: &Path,
    (partition, file_id): (&str, &str),
    t: &str,
    rows: &[(&str, i64, f64)],
    deletes: &[&str],
) -> (String, u64) {
    let (_, schema) = trips_schema(table);
    let block_schema = with_meta_fields(&schema);
    let arrow = Arc::new(avro_to_arrow(&block_schema).expect("arrow"));
    let mut writer = LogFileWriter::new(InstantTime::parse(t).expect("t"), file_id, &schema);
    if !rows.is_empty() {
        let mut decoder = RecordDecoder::try_new(arrow, &block_schema).expect("decoder");
        for (seq, (uuid, ts, fare)) in rows.iter().enumerate() {
            let row = json!({
                "_hoodie_commit_time": t, "_hoodie_commit_seqno": format!("{t}_0_{seq}"),
                "_hoodie_record_key": uuid, "_hoodie_partition_path": partition,
                "_hoodie_file_name": file_id, "ts": ts, "uuid": uuid, "rider": "r", "driver": "d",
                "fare": fare, "city": partition.trim_start_matches("city="),
            });
            decoder.append(row.to_string().as_bytes()).expect("row");
        }
        let batch = decoder.finish().expect("batch");
        writer = writer.with_records(&[batch]).expect("records");
    }
    if !deletes.is_empty() {
        let records: Vec<DeleteRecord> = deletes
            .iter()
            .map(|key| DeleteRecord::new(*key, partition))
            .collect();
        writer = writer.with_deletes(&records).expect("deletes");
    }
    let bytes = writer.finish().expect("finish");
    let dir = table.join(partition);
    let existing: Vec<LogFileName> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| LogFileName::parse(e.expect("entry").file_name().to_str()?).ok())
        .collect();
    let base = InstantTime::parse(TRIPS_BASE).expect("base");
    let name = LogFileName::next_in_slice(&existing, file_id, &base, WriteToken::new(0, 3, 9))
        .expect("name");
    std::fs::write(dir.join(name.file_name()), &bytes).expect("write");
    (
        format!("{partition}/{}", name.file_name()),
        bytes.len() as u64,
    )
}

/// A completed deltacommit `t` naming the log at `path` (as Spark's append stat does).
fn complete_deltacommit(
    table: &Path,
    t: &str,
    (partition, file_id): (&str, &str),
    log: (&str, u64),
) {
    let (schema, _) = trips_schema(table);
    let hoodie = table.join(".hoodie");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.requested")), b"").expect("requested");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.inflight")), b"").expect("inflight");
    let commit = json!({
        "partitionToWriteStats": {partition: [{
            "fileId": file_id, "path": log.0, "prevCommit": TRIPS_BASE, "numWrites": 1,
            "numUpdateWrites": 1, "partitionPath": partition, "fileSizeInBytes": log.1,
            "totalWriteBytes": log.1, "logVersion": 1, "logOffset": 0, "baseFile": "",
        }]},
        "compacted": false,
        "extraMetadata": {"schema": schema}, "operationType": "UPSERT",
    });
    std::fs::write(
        hoodie.join(format!("{t}.deltacommit")),
        serde_json::to_vec(&commit).expect("json"),
    )
    .expect("commit");
}

/// `v6_trips_8i1u` with a committed update in Chennai (two file groups with logs) and, in San Francisco,
/// a log of a write that never reached the timeline (a failed one, or a zombie's late upload).
fn trips_with_failed_log(into: &Path) {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, into);
    let committed = append_log(
        into,
        CHENNAI,
        "20250401000000001",
        &[("c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", 1695115999911, 77.0)],
        &[],
    );
    complete_deltacommit(
        into,
        "20250401000000001",
        CHENNAI,
        (&committed.0, committed.1),
    );
    append_log(
        into,
        SF,
        "20250401000000002",
        &[("1dced545-862b-4ceb-8b43-d2a568f6616b", 1999999999999, 5.0)],
        &[],
    );
}

#[tokio::test]
async fn only_committed_log_blocks_are_compacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut reader = HudiReader::start();
    for mutated in [false, true] {
        let path = dir.path().join(format!("trips-{mutated}"));
        trips_with_failed_log(&path);
        let before = without_file_name(&keyed(reader.rows(&path, &["snapshot"]), false, "before"));
        assert_eq!(
            before[&(
                SF.0.to_string(),
                "1dced545-862b-4ceb-8b43-d2a568f6616b".to_string()
            )]["fare"],
            json!(93.5),
            "the failed write is invisible"
        );
        let storage = LocalStorage::new(&path);
        #[cfg(feature = "mutations")]
        hudi_sink::mutation::set_active(
            mutated.then_some(hudi_sink::mutation::Mutation::CompactionCommittedLogsOnly),
        );
        let report = compact_table(&storage).await;
        #[cfg(feature = "mutations")]
        hudi_sink::mutation::set_active(None);
        let report = report.expect("compaction").expect("due");
        assert_eq!(report.file_groups, 2, "Chennai and San Francisco");
        assert_eq!(report.log_files, if mutated { 3 } else { 2 });
        let after = without_file_name(&keyed(reader.rows(&path, &["snapshot"]), false, "after"));
        if mutated {
            let row = &after[&(
                SF.0.to_string(),
                "1dced545-862b-4ceb-8b43-d2a568f6616b".to_string(),
            )];
            assert_eq!(row["fare"], json!(5.0), "the failed write became durable");
            assert_ne!(after, before);
        } else {
            assert_rows_eq(&after, &before, "committed logs only");
        }
    }
}

/// Base files named with `t`, anywhere in the table.
/// Every file under `dir`, as paths.
fn walkdir(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

fn files_of(table: &Path, t: &InstantTime) -> Vec<String> {
    crate::common::parquet_files(table)
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            BaseFileName::parse(&name)
                .ok()
                .filter(|b| b.instant_time == *t)
                .map(|_| name)
        })
        .collect()
}

#[tokio::test]
async fn a_crash_at_any_storage_call_leaves_the_table_as_before_and_the_rollback_and_next_compaction_finish(
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = dir.path().join("pristine");
    trips_with_failed_log(&pristine);
    let mut reader = HudiReader::start();
    let before = without_file_name(&keyed(
        reader.rows(&pristine, &["snapshot"]),
        false,
        "pristine",
    ));
    let mut n = 1u64;
    let mut pending_seen = 0;
    loop {
        let what = format!("crash after call {n}");
        let base = dir.path().join(format!("crash-{n}"));
        copy_dir(&pristine, &base);
        let inner: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
        let faulty = FaultyStorage::new(inner.clone());
        crash_after(&faulty, n);
        let outcome = compact_table(&faulty).await;
        let finished = match &outcome {
            Ok(report) => {
                assert!(report.is_some(), "{what}: {report:?}");
                true
            }
            Err(_) => false,
        };
        let read = without_file_name(&keyed(reader.rows(&base, &["snapshot"]), false, &what));
        assert_rows_eq(&read, &before, &format!("{what}: right after"));
        // An upload cut short (its abort failing too) leaves no temporary file.
        let leftovers: Vec<_> = walkdir(&base)
            .into_iter()
            .filter(|p| p.contains(".tmp-hudi-sink-"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: {leftovers:?}");

        // The rollback under the next lock, then the table reads as before and nothing is pending.
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        let pending: Vec<InstantTime> = timeline.pending().iter().map(|i| i.time.clone()).collect();
        let rolled_back = roll_back(inner.as_ref()).await;
        assert_eq!(rolled_back, pending.len() as u64, "{what}: {pending:?}");
        pending_seen += pending.len();
        for t in &pending {
            assert!(files_of(&base, t).is_empty(), "{what}: files of {t} left");
            assert!(
                base.join(format!(".hoodie/.aux/hudi-sink/rolled-back/{t}"))
                    .exists(),
                "{what}: {t} retired"
            );
        }
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        assert!(
            timeline.pending().is_empty(),
            "{what}: {:?}",
            timeline.pending()
        );
        let read = without_file_name(&keyed(reader.rows(&base, &["snapshot"]), false, &what));
        assert_rows_eq(&read, &before, &format!("{what}: after the rollback"));

        // A second compaction finishes the work (nothing is due when the first one committed).
        let second = compact_table(inner.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{what}: second compaction: {e}"));
        // The fixture has deltacommits only: a completed commit is the compaction's.
        let committed_first = timeline
            .instants()
            .iter()
            .any(|i| i.is_completed() && i.action == Action::Commit);
        assert_eq!(second.is_some(), !committed_first, "{what}: {second:?}");
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        assert!(timeline.pending().is_empty(), "{what}");
        let slices = latest_file_slices(inner.as_ref(), &timeline, None)
            .await
            .expect("slices");
        assert!(
            slices.iter().all(|s| s.log_files.is_empty()),
            "{what}: every slice compacted"
        );
        let read = keyed(reader.rows(&base, &["snapshot"]), false, &what);
        assert_rows_eq(
            &without_file_name(&read),
            &before,
            &format!("{what}: after"),
        );
        let ro = keyed(reader.rows(&base, &["read_optimized"]), false, &what);
        assert_rows_eq(&ro, &read, &format!("{what}: read-optimized"));
        std::fs::remove_dir_all(&base).expect("remove copy");
        if finished {
            break;
        }
        n += 1;
    }
    assert!(n > 10, "the compaction took only {n} storage calls");
    assert!(
        pending_seen > 3,
        "{pending_seen} crashes left a pending compaction"
    );
    eprintln!("crashed after each of the {n} storage calls of a compaction");
}

#[tokio::test]
async fn a_group_whose_rows_were_all_deleted_gets_an_empty_base_file_that_hides_the_old_slice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trips");
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, &path);
    let t = "20250401000000001";
    let log = append_log(
        &path,
        CHENNAI,
        t,
        &[],
        &[
            "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04",
            "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa",
        ],
    );
    complete_deltacommit(&path, t, CHENNAI, (&log.0, log.1));
    let mut reader = HudiReader::start();
    let before = keyed(reader.rows(&path, &["snapshot"]), false, "before");
    assert_eq!(before.len(), 6, "both Chennai rows deleted");
    assert!(before.keys().all(|(p, _)| p != CHENNAI.0));

    let report = compact_table(&LocalStorage::new(&path))
        .await
        .expect("compaction")
        .expect("due");
    assert_eq!(report.file_groups, 2, "Chennai and San Francisco");
    let empty = files_of(&path, &report.instant)
        .into_iter()
        .find(|name| name.starts_with(CHENNAI.1))
        .expect("Chennai's new base file");
    let commit = CommitMetadata::from_json(
        &std::fs::read(path.join(format!(".hoodie/{}.commit", report.instant))).expect("commit"),
    )
    .expect("json");
    let stat = commit
        .write_stats()
        .find(|s| s.file_id == CHENNAI.1)
        .expect("stat");
    assert_eq!((stat.num_writes, stat.num_deletes), (0, 2), "{empty}");
    let after = keyed(reader.rows(&path, &["snapshot"]), false, "after");
    assert_rows_eq(
        &without_file_name(&after),
        &without_file_name(&before),
        "snapshot",
    );
    // Read-optimized reads base files only: the empty one hides the two deleted rows.
    let read_optimized = keyed(reader.rows(&path, &["read_optimized"]), false, "ro");
    assert_rows_eq(&read_optimized, &after, "read-optimized");
}

/// Another engine's pending compaction blocks compaction; a deltacommit in flight does not (its append to a
/// compacted group conflicts at its own commit, `commit/conflict.rs`), and is left pending.
#[tokio::test]
async fn another_engines_compaction_blocks_compaction_and_a_write_in_flight_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in ["deltacommit", "foreign compaction"] {
        let path = dir.path().join(case.replace(' ', "-"));
        let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
        copy_dir(&golden.path, &path);
        let hoodie = path.join(".hoodie");
        let pending = "20250401000000009";
        match case {
            "deltacommit" => {
                std::fs::write(hoodie.join(format!("{pending}.deltacommit.requested")), b"")
                    .expect("requested");
            }
            _ => {
                // A plan without this sink's mark: another engine's, never rolled back.
                let plan = CompactionPlan {
                    operations: Vec::new(),
                    extra_metadata: Default::default(),
                    version: 2,
                    preserve_hoodie_metadata: true,
                };
                std::fs::write(
                    hoodie.join(format!("{pending}.compaction.requested")),
                    plan.to_avro_bytes().expect("plan"),
                )
                .expect("plan");
            }
        }
        let storage = LocalStorage::new(&path);
        let compacted = compact_table(&storage).await.expect("compaction");
        assert_eq!(compacted.is_some(), case == "deltacommit", "{case}");
        let timeline = Timeline::load(&storage).await.expect("timeline");
        assert_eq!(
            timeline
                .pending()
                .iter()
                .map(|i| i.time.to_string())
                .collect::<Vec<_>>(),
            [pending],
            "{case}: left alone"
        );
        assert_eq!(roll_back(&storage).await, 0, "{case}");
    }
}

/// A Spark-written merge-on-read table, appended to by the sink (new trips: inserts into new file groups under
/// a deltacommit; Spark's table has no bucket index, so upserts are not possible there), then compacted (Spark's
/// logs merged): hudi-rs reads Spark's rows plus the new ones, row for row, before and after the compaction,
/// and the read-optimized view equals the snapshot once every log is compacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spark_table_appended_to_by_the_sink_then_compacted_reads_row_exact() {
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trips");
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, &path);
    // Spark left the timeline timezone unset (Hudi then assumes the JVM's zone); this writer makes UTC
    // instants and refuses a table that does not say UTC, as a user whose Spark runs in UTC would set it.
    let props_path = path.join(".hoodie/hoodie.properties");
    let mut text = std::fs::read_to_string(&props_path).expect("properties");
    text.push_str("hoodie.table.timeline.timezone=UTC\n");
    std::fs::write(&props_path, text).expect("properties");
    let mut reader = HudiReader::start();
    let before = keyed(reader.rows(&path, &["snapshot"]), true, "spark snapshot");
    assert!(!before.is_empty());

    // The table's own settings (its payload merges by commit time: no precombine field for the writer).
    let props: std::collections::BTreeMap<String, String> = [
        ("hoodie.table.name", "v6_trips_8i1u"),
        ("hoodie.database.name", "default"),
        ("hoodie.table.type", "MERGE_ON_READ"),
        ("hoodie.datasource.write.operation", "insert"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        (
            "hoodie.datasource.write.keygenerator.class",
            "org.apache.hudi.keygen.SimpleKeyGenerator",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), path.display().to_string())])
    .collect();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(&path));
    let writer = TableWriter::create_or_open(
        storage.clone(),
        Arc::new(SystemClock),
        WriteConfig::from_properties(props).expect("config"),
        None,
    )
    .await
    .expect("open the Spark table");
    let new_trips = [
        json!({"ts": 1_700_000_000_001_i64, "uuid": "sink-1", "rider": "rider-S1", "driver": "driver-S1", "fare": 11.5, "city": "san_francisco"}),
        json!({"ts": 1_700_000_000_002_i64, "uuid": "sink-2", "rider": "rider-S2", "driver": "driver-S2", "fare": 22.25, "city": "chennai"}),
        json!({"ts": 1_700_000_000_003_i64, "uuid": "sink-3", "rider": "rider-S3", "driver": "driver-S3", "fare": 33.0, "city": "new_city"}),
    ];
    let schema = writer.schema();
    let mut decoder = RecordDecoder::try_new(schema.data.clone(), &schema.avro).expect("decoder");
    for trip in &new_trips {
        decoder.append(trip.to_string().as_bytes()).expect("row");
    }
    let batch = decoder.finish().expect("batch");
    let written = writer.write(&[batch]).await.expect("append");
    assert!(
        path.join(format!(".hoodie/{}.deltacommit", written.instant))
            .exists(),
        "the sink's write is a deltacommit"
    );

    let appended = keyed(reader.rows(&path, &["snapshot"]), true, "appended");
    let mut expected = before.clone();
    for trip in &new_trips {
        let city = trip["city"].as_str().expect("city");
        let uuid = trip["uuid"].as_str().expect("uuid");
        let row = appended
            .get(&(format!("city={city}"), uuid.to_string()))
            .unwrap_or_else(|| panic!("{uuid} missing after the append"));
        for field in ["ts", "uuid", "rider", "driver", "fare", "city"] {
            assert_eq!(row[field], trip[field], "{uuid}.{field}");
        }
        assert_eq!(
            row["_hoodie_commit_time"],
            json!(written.instant.to_string())
        );
        expected.insert((format!("city={city}"), uuid.to_string()), row.clone());
    }
    assert_rows_eq(
        &appended,
        &expected,
        "Spark's rows and the sink's after the append",
    );

    let report = compact_table(storage.as_ref())
        .await
        .expect("compaction")
        .expect("Spark's logs are due");
    assert!(report.file_groups > 0);
    let compacted = keyed(reader.rows(&path, &["snapshot"]), true, "compacted");
    assert_rows_eq(&compacted, &appended, "snapshot after the compaction");
    let read_optimized = keyed(reader.rows(&path, &["read_optimized"]), true, "ro");
    assert_rows_eq(
        &read_optimized,
        &compacted,
        "read-optimized after the compaction",
    );
    // Time travel to the append still reads the table as it was then.
    let as_of = keyed(
        reader.rows(&path, &["as_of", written.instant.as_str()]),
        true,
        "as of the append",
    );
    assert_rows_eq(&as_of, &appended, "as of the append");
}
