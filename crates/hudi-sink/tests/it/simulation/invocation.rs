//! One writer invocation as the Lambda runtime runs it (on a simulated machine, with crashes and fault rules),
//! and the event-source-mapping poller that cuts the stream into batches and redelivers failed ones.

use super::*;

/// How an invocation ended.
pub(super) enum Outcome {
    Ok(hudi_sink::sink::SinkReport),
    Failed(String),
    Crashed,
}

pub(super) async fn invoke(ctx: &Arc<Ctx>, msgs: &[Msg], clean: bool) -> Outcome {
    let world = &ctx.world;
    let id = ctx.invocations.fetch_add(1, Ordering::SeqCst);
    let machine = world.roll(ctx.clocks.len() as u64) as usize;
    let clock = ctx.clocks[machine].clone();
    let faults = !clean && world.faults_on.load(Ordering::SeqCst);
    let plan = Arc::new(Plan {
        calls: AtomicU64::new(0),
        crash_at: (faults && world.chance(12)).then(|| 1 + world.roll(80)),
        crash_after_effect: world.roll(2) == 0,
        freeze_at: (faults && world.chance(5)).then(|| 1 + world.roll(80)),
        freeze_ms: LEASE_MS + 1 + world.roll(3 * LEASE_MS),
        pause_before_fence: faults && world.chance(6),
        checks_until_pause: AtomicU64::new(0),
        crashed: AtomicBool::new(false),
        crash: tokio::sync::Notify::new(),
        frozen: AtomicBool::new(false),
        clock: clock.clone(),
        open_uploads: AtomicU64::new(0),
    });
    let storage: Arc<dyn Storage> = Arc::new(InvStorage {
        inner: ctx.faulty.clone(),
        plan: plan.clone(),
        world: world.clone(),
    });
    let lock = SimLock {
        inner: ctx.lock.contender().with_clock(clock.clone()),
        world: world.clone(),
    };
    let coordinator = Coordinator::new(
        storage.clone(),
        Arc::new(lock),
        clock.clone(),
        sim_coordinator_config(&ctx.sink_config, &ctx.services),
    )
    .with_catalog(sim_catalog_sync(ctx))
    .with_compaction(&ctx.config)
    .with_clustering(ctx.config.clone());
    let coordinator = match sim_mirror(ctx, Some(plan.clone())) {
        Some(mirror) => coordinator.with_mirror(mirror),
        None => coordinator,
    };
    let jitter_seed = world.roll(u64::MAX);
    {
        let mut delivered = self::lock(&world.delivered);
        let mut by_partition: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
        for m in msgs {
            let e = by_partition
                .entry(m.partition)
                .or_insert((m.offset, m.offset));
            e.0 = e.0.min(m.offset);
            e.1 = e.1.max(m.offset);
        }
        for (p, (first, last)) in by_partition {
            delivered.insert((p, first, last));
        }
    }
    if std::env::var_os("SIM_TRACE").is_some() {
        eprintln!(
            "sim: inv {id} starts on machine {machine}: {:?} {:?}",
            msgs.first().map(|m| (m.partition, m.offset)),
            plan
        );
    }
    let work = async {
        let writer = TableWriter::create_or_open(
            storage.clone(),
            clock.clone(),
            ctx.config.clone(),
            Some(ctx.schema.clone()),
        )
        .await?;
        let sink = KafkaSink::new(
            writer,
            Arc::new(SimTransport {
                inner: InProcessClient::new(coordinator),
                world: world.clone(),
                plan: plan.clone(),
            }),
            Arc::new(StorageDeadLetterSink::new(ctx.dead_letters.clone())),
            clock.clone(),
            ctx.sink_config.clone(),
            format!("inv-{id}"),
        )
        .with_jitter_seed(jitter_seed);
        // A third of the batches are read in parts, as the CLI reads event files (`sink/parts.rs`): each
        // part is a payload of its own.
        let cuts = match msgs.len() > 1 && jitter_seed % 3 == 1 {
            true => 1 + (jitter_seed >> 8) as usize % 3.min(msgs.len() - 1),
            false => 0,
        };
        let mut bounds = vec![0, msgs.len()];
        for k in 0..cuts {
            bounds.push(1 + (jitter_seed >> (16 + 8 * k)) as usize % (msgs.len() - 1));
        }
        bounds.sort_unstable();
        bounds.dedup();
        let parts = bounds
            .windows(2)
            .map(|w| {
                KafkaBatch::from_slice(&esm_payload(&msgs[w[0]..w[1]])).map_err(|e| {
                    WriteError::Data {
                        reason: e.to_string(),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if parts.len() > 1 {
            world.count("batch read in parts");
        }
        // A quarter of the batches say that more records wait behind them: their windows may share a slot.
        // Not in the seeds that merge compactions under the lock, which run as they did before backlogs.
        let options = ProcessOptions {
            backlog: jitter_seed % 4 == 0 && !ctx.services.compaction_merge_locked,
            ..ProcessOptions::default()
        };
        if options.backlog {
            world.count("batch with a backlog");
        }
        sink.process_parts(&parts, options).await
    };
    let outcome = tokio::select! {
        biased;
        _ = plan.crash.notified() => Outcome::Crashed,
        r = work => match r {
            Ok(report) => Outcome::Ok(report),
            Err(e) => Outcome::Failed(e.to_string()),
        },
    };
    let open = plan.open_uploads.load(Ordering::SeqCst);
    if open > 0 && !matches!(outcome, Outcome::Crashed) {
        ctx.truth.note_violation(
            "no upload is left half-way",
            format!("invocation {id} returned with {open} multipart uploads neither completed nor aborted"),
        );
    }
    let first = msgs.first().map(|m| (m.partition, m.offset));
    let what = match &outcome {
        Outcome::Ok(r) => format!("ok {:?} skipped {}", r.instant, r.skipped),
        Outcome::Failed(_) => "failed".to_string(),
        Outcome::Crashed => "crashed".to_string(),
    };
    world.trace(format!(
        "inv {id} machine {machine} batch {first:?}+{} {what}",
        msgs.len()
    ));
    outcome
}

/// One Kafka partition's poller: delivers batches in order, redelivers after failures.
pub(super) async fn poller(
    ctx: Arc<Ctx>,
    msgs: Vec<Msg>,
    cuts: Vec<usize>,
) -> Result<Vec<Vec<Msg>>, String> {
    let world = ctx.world.clone();
    let mut acked = Vec::new();
    let mut i = 0;
    while i + 1 < cuts.len() {
        let mut end = i + 1;
        let mut attempts = 0;
        let mut last_failure = String::new();
        loop {
            let batch = msgs[cuts[i]..cuts[end]].to_vec();
            if world.chance(10) {
                // A rebalance: the same records go to a second invocation too, now or late.
                world.count("rebalance duplicate delivery");
                let ctx2 = ctx.clone();
                let dup = batch.clone();
                let wait = world.roll(4) * world.roll(5_000);
                ctx.late
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                        if let Outcome::Ok(r) = invoke(&ctx2, &dup, false).await {
                            if !r.balanced() {
                                ctx2.world.trace(format!("UNBALANCED {r:?}"));
                            }
                        }
                    }));
            }
            match invoke(&ctx, &batch, false).await {
                Outcome::Ok(report) => {
                    if !report.balanced() {
                        return Err(format!("report does not balance: {report:?}"));
                    }
                    acked.push(batch);
                    break;
                }
                outcome @ (Outcome::Failed(_) | Outcome::Crashed) => {
                    if let Outcome::Failed(e) = outcome {
                        last_failure = e.to_string();
                    }
                    world.count("batch redelivered");
                    attempts += 1;
                    if attempts > 80 {
                        return Err(format!(
                            "liveness: batch at offset {} never succeeded (last failure: {last_failure})",
                            msgs[cuts[i]].offset
                        ));
                    }
                    let backoff = 100 + world.roll(2_000);
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                    if end + 1 < cuts.len() && world.roll(100) < 15 {
                        end += 1; // the redelivered batch is larger
                    }
                }
            }
        }
        i = end;
    }
    Ok(acked)
}
