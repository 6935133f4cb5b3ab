//! A scripted scenario of the Delta mirror failing while the cleaner is due, with its invariant: **the cleaner
//! waits for the mirror**. A copy-on-write table with the mirror on commits once (Delta version 0 lists its
//! base file `F1`); then the Delta log's commits fail (the mirror's storage refuses them) for three commits that
//! each rewrite `F1`'s file group. By the third the clean is due and `F1` is past the retention, but the
//! latest Delta version still lists it: the clean is skipped and `F1` stays. Once the Delta log accepts
//! commits again, the next commit's mirror step catches up (one version per instant it lacked) and the clean
//! proceeds, deleting `F1`. With the wait left out (`delta-clean-waits-for-mirror`) the clean deletes `F1`
//! while Delta readers still read it.

use hudi_sink::commit::CommitMirror as _;
use hudi_sink::storage::faulty::Operation as FaultOp;

use super::delta::{check_caught_up, delta_config, SimMirror, DELTA_LOG};
use super::recreate_scenarios::trip_in;
use super::scenarios::scenario_props;
use super::window_scenarios::batch_of;
use super::*;

const WAITS: &str = "the cleaner waits for the mirror";

/// See the module doc.
async fn a_failed_mirror_holds_the_cleaner() -> Result<(), Failure> {
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let recorder = Arc::new(Recorder::new(Arc::new(MemoryStorage::new(
        "memory://delta-scenario",
    ))));
    let faulty = Arc::new(FaultyStorage::new(recorder.clone()));
    let mut props = scenario_props();
    props.insert("hudi.sink.commit.interval.ms".into(), "0".into());
    props.insert(hudi_sink::delta::config::MIRROR_KEY.into(), "true".into());
    let delta = delta_config(&props)?.ok_or_else(|| setup(&"the mirror is off"))?;
    let config = WriteConfig::from_properties(props.clone()).map_err(|e| setup(&e))?;
    let sink_config = SinkConfig::from_properties(&props).map_err(|e| setup(&e))?;
    let schema = AvroSchema::parse(SCHEMA).map_err(|e| setup(&e))?;
    let clock = Arc::new(SimClock::new(0));
    let world = Arc::new(World {
        rng: Mutex::new(Rng(7)),
        faults_on: AtomicBool::new(false),
        counts: Mutex::new(BTreeMap::new()),
        trace: Mutex::new(Vec::new()),
        delivered: Mutex::new(BTreeSet::new()),
    });
    let failure = Arc::new(Mutex::new(None));
    let mirror = Arc::new(SimMirror::new(
        &delta,
        faulty.clone(),
        recorder.clone(),
        None,
        world,
        failure.clone(),
    ));
    let coordinator = Coordinator::new(
        faulty.clone(),
        Arc::new(
            MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_millis(LEASE_MS)))
                .with_clock(clock.clone()),
        ),
        clock.clone(),
        sim_coordinator_config(&sink_config, &sim_services()),
    )
    .with_mirror(mirror.clone());
    let writer = TableWriter::create_or_open(faulty.clone(), clock.clone(), config, Some(schema))
        .await
        .map_err(|e| setup(&e))?;
    let sink = KafkaSink::new(
        writer,
        Arc::new(InProcessClient::new(coordinator)),
        Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
            "memory://dead-letters",
        )))),
        clock,
        sink_config,
        "w",
    );
    let mut offset = 0;
    let mut commit = |label: &'static str| {
        offset += 1;
        let batch = vec![trip_in("sf", offset, "trip-1", 100 + offset, label)];
        let sink = &sink;
        async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sink.process(batch_of(&batch)?)
                .await
                .map_err(|e| fail("batches commit", e.to_string()))
        }
    };
    let base_files = |recorder: Arc<Recorder>| async move {
        let files: BTreeSet<String> = recorder
            .list("")
            .await
            .map_err(|e| fail("readable table", e.to_string()))?
            .into_iter()
            .map(|o| o.path)
            .filter(|p| p.ends_with(".parquet") && !p.starts_with(DELTA_LOG))
            .collect();
        Ok::<_, Failure>(files)
    };
    commit("v1").await?;
    let first = base_files(recorder.clone()).await?;
    // The Delta log refuses commits: every mirror step fails.
    let refuse = faulty.add_rule(
        FaultRule::fail(FaultOp::PutIfAbsent)
            .with_path(PathFilter::Prefix(DELTA_LOG.into()))
            .on_call(1)
            .times(1_000),
    );
    for label in ["v2", "v3", "v4"] {
        commit(label).await?;
    }
    if faulty.fired(refuse) < 3 {
        return Err(setup(&"the Delta log's commits did not fail"));
    }
    if let Some(f) = lock(&failure).clone() {
        return Err(f);
    }
    let now = base_files(recorder.clone()).await?;
    let gone: Vec<&String> = first.iter().filter(|f| !now.contains(*f)).collect();
    if !gone.is_empty() {
        return Err(fail(
            WAITS,
            format!(
                "{gone:?}, listed by the latest Delta version, deleted while the mirror failed"
            ),
        ));
    }
    faulty.remove_rule(refuse);
    // The failed steps' reports go; the next step's must be clean.
    let _ = mirror.take_report();
    commit("v5").await?;
    if let Some(f) = lock(&failure).clone() {
        return Err(f);
    }
    let now = base_files(recorder.clone()).await?;
    if let Some(kept) = first.iter().find(|f| now.contains(*f)) {
        return Err(fail(
            WAITS,
            format!("{kept} still on storage once the mirror caught up: the clean did not proceed"),
        ));
    }
    check_caught_up(recorder, &delta, mirror.take_report()).await
}

pub(super) fn a_failed_mirror_holds_the_cleaner_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_failed_mirror_holds_the_cleaner())
}
