//! The multi-table family: one stream of batches spanning three topics (and in some runs a topic without a
//! route) written by routers (`hudi_sink::router`) into three tables, each on its own store with its own
//! random storage faults and lock. Each Kafka partition has a poller delivering the records of that partition
//! of every topic, redelivering a failed batch (sometimes larger) until it is acknowledged; every invocation
//! is a fresh router (a fresh Lambda environment) that opens, and at first creates, the tables it needs.
//!
//! Invariants:
//! - **A batch is acknowledged only when all its tables committed**: when a poller sees a batch succeed,
//!   every table the batch routes records to already has a checkpoint past each of its topic-partitions.
//! - **Each table commits exactly the offsets routed to it, each once**: every commit's checkpoint names only
//!   the table's own topic, never moves backwards, and ends at the last routed offset; the table read through
//!   the library equals the model of its records applied commit by commit, row for row.
//! - **Nothing unrouted is lost**: every record of a topic without a route is a dead letter (stage `route`).

use super::*;

use hudi_sink::router::{RouteConfig, Router, TableOpener};

/// Topics and the tables their routes name.
const TOPICS: [(&str, &str); 3] = [
    ("pg.public.customers", "customers"),
    ("pg.public.orders", "orders"),
    ("audit-log", "audit"),
];
/// A topic no route names.
const STRAY: &str = "inventory.items";

/// The default number of routing seeds (`SIM_ROUTING_SEEDS`).
const DEFAULT_SEEDS: u64 = 120;

/// How many routing seeds the mutation check runs per mutation.
pub(super) const MUTATION_SEEDS: usize = 32;

/// The routing seeds to run: `SIM_SEED` alone, else `0..SIM_ROUTING_SEEDS`.
pub(super) fn routing_seeds() -> Vec<u64> {
    if let Some(one) = env_u64("SIM_SEED") {
        return vec![one];
    }
    (0..env_u64("SIM_ROUTING_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect()
}

/// One table's store: the recorder of its history under the faults of this run.
struct TableStore {
    recorder: Arc<Recorder>,
    faulty: Arc<FaultyStorage>,
    lock: MemoryLock,
}

/// What the routers of one run share.
struct RoutedWorld {
    config: RouteConfig,
    tables: BTreeMap<String, TableStore>,
    unrouted: Arc<dyn Storage>,
    clock: Arc<SimClock>,
    schema: AvroSchema,
    invocations: AtomicU64,
    rng: Mutex<Rng>,
}

impl RoutedWorld {
    fn roll(&self, n: u64) -> u64 {
        lock(&self.rng).below(n)
    }
}

impl std::fmt::Debug for RoutedWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutedWorld")
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Opens one table as the Lambda's `bootstrap` would, on the run's store of that table.
#[derive(Debug)]
struct SimOpener {
    world: Arc<RoutedWorld>,
    invocation: u64,
}

#[async_trait]
impl TableOpener for SimOpener {
    async fn open(&self, table: &str) -> Result<KafkaSink, WriteError> {
        let world = &self.world;
        let props = world.config.table_properties(table, None)?;
        let config = WriteConfig::from_properties(props.clone())?;
        let sink_config = SinkConfig::from_properties(&props)?;
        let store = world.tables.get(table).ok_or_else(|| WriteError::Config {
            reason: format!("the simulation has no store for table {table}"),
        })?;
        let storage: Arc<dyn Storage> = store.faulty.clone();
        let coordinator = Coordinator::new(
            storage.clone(),
            Arc::new(store.lock.contender().with_clock(world.clock.clone())),
            world.clock.clone(),
            sim_coordinator_config(&sink_config, &sim_services()),
        );
        let writer = TableWriter::create_or_open(
            storage,
            world.clock.clone(),
            config,
            Some(world.schema.clone()),
        )
        .await?;
        let dead: Arc<dyn Storage> = Arc::new(MemoryStorage::new("memory://dead"));
        Ok(KafkaSink::new(
            writer,
            Arc::new(InProcessClient::new(coordinator)),
            Arc::new(StorageDeadLetterSink::new(dead)),
            world.clock.clone(),
            sink_config,
            format!("inv-{}-{table}", self.invocation),
        )
        .with_jitter_seed(world.roll(u64::MAX)))
    }
}

/// The routed properties of the run: a pattern route and an exact one; tables on memory stores.
fn routed_props() -> BTreeMap<String, String> {
    let dir = std::path::Path::new("/nonexistent-sim");
    let mut props = local_props(
        &dir.join("tables/$table"),
        &dir.join("trips.avsc"),
        &dir.join("dead/$table"),
    );
    props.remove("hoodie.table.name");
    for (k, v) in [
        ("hoodie.parquet.compression.codec", "uncompressed"),
        ("hudi.sink.heartbeat.interval.ms", &BEAT_MS.to_string()),
        (
            "hudi.sink.heartbeat.tolerable.misses",
            &BEAT_MISSES.to_string(),
        ),
        ("hudi.sink.retry.backoff.ms", "50"),
        ("hudi.sink.commit.max.attempts", "8"),
        ("hudi.sink.commit.interval.ms", "1000"),
        ("hudi.sink.route.pg.topic.regex", r"pg\.public\.(.*)"),
        ("hudi.sink.route.pg.table", "$1"),
        ("hudi.sink.route.audit.topic", "audit-log"),
        ("hudi.sink.route.parallelism", "2"),
    ] {
        props.insert(k.to_string(), v.to_string());
    }
    props
}

/// Runs one routing seed on a fresh paused runtime.
pub(super) fn run_routing_seed(seed: u64, mutation: Option<Mutation>) -> Result<u64, Failure> {
    on_paused_runtime(mutation, simulate_routing(seed))
}

async fn simulate_routing(seed: u64) -> Result<u64, Failure> {
    let mut rng = Rng(seed ^ 0x7A7A_0B0B);
    let config = RouteConfig::from_properties(&routed_props())
        .map_err(|e| fail("setup", format!("routes: {e}")))?;
    let mut tables = BTreeMap::new();
    for (_, table) in TOPICS {
        let recorder = Arc::new(Recorder::new(Arc::new(MemoryStorage::new(format!(
            "memory://sim-{seed}-{table}"
        )))));
        let faulty = Arc::new(FaultyStorage::new(recorder.clone()));
        for _ in 0..(1 + rng.below(3)) {
            faulty.add_rule(fault_rule(&mut rng, false));
        }
        let options = LeaseOptions::hudi(Duration::from_millis(LEASE_MS))
            .with_refresh_period(Duration::from_millis(250));
        tables.insert(
            table.to_string(),
            TableStore {
                recorder,
                faulty,
                lock: MemoryLock::new(table, options),
            },
        );
    }
    let world = Arc::new(RoutedWorld {
        config,
        tables,
        unrouted: Arc::new(MemoryStorage::new("memory://unrouted")),
        clock: Arc::new(SimClock::new(0)),
        schema: AvroSchema::parse(SCHEMA).map_err(|e| fail("setup", e.to_string()))?,
        invocations: AtomicU64::new(0),
        rng: Mutex::new(Rng(rng.next())),
    });
    let partitions = 2;
    let mut msgs = Vec::new();
    for (topic, _) in TOPICS {
        let per_partition = 8 + rng.below(16) as i64;
        msgs.extend(stream_with_seed(
            topic,
            partitions,
            per_partition,
            3 + rng.below(5),
            rng.next(),
        ));
    }
    let stray = rng.chance(30);
    if stray {
        msgs.extend(stream_with_seed(STRAY, 1, 4, 3, rng.next()));
    }
    let mut pollers = Vec::new();
    for p in 0..partitions {
        let mine: Vec<Msg> = msgs.iter().filter(|m| m.partition == p).cloned().collect();
        let mut cuts = vec![0];
        while *cuts.last().unwrap_or(&0) < mine.len() {
            let next = cuts.last().unwrap_or(&0) + 4 + rng.below(12) as usize;
            cuts.push(next.min(mine.len()));
        }
        pollers.push(tokio::spawn(routed_poller(world.clone(), mine, cuts)));
    }
    for p in pollers {
        p.await.map_err(|e| fail("no panic", e.to_string()))??;
    }
    check_tables(&world, &msgs).await?;
    if stray {
        check_unrouted(&world, &msgs).await?;
    }
    Ok(world.invocations.load(Ordering::SeqCst))
}

/// One Kafka partition's poller over every topic: delivers its batches in order, and checks at every
/// acknowledgement that the tables of the batch committed their parts.
async fn routed_poller(
    world: Arc<RoutedWorld>,
    msgs: Vec<Msg>,
    cuts: Vec<usize>,
) -> Result<(), Failure> {
    let mut i = 0;
    while i + 1 < cuts.len() {
        let mut end = i + 1;
        let mut attempts = 0;
        loop {
            let batch = &msgs[cuts[i]..cuts[end]];
            let invocation = world.invocations.fetch_add(1, Ordering::SeqCst);
            let router = Router::new(
                world.config.clone(),
                Arc::new(SimOpener {
                    world: world.clone(),
                    invocation,
                }),
                Arc::new(StorageDeadLetterSink::new(world.unrouted.clone())),
            );
            let event = KafkaBatch::from_slice(&esm_payload(batch))
                .map_err(|e| fail("setup", e.to_string()))?;
            match router.process_with(event, ProcessOptions::default()).await {
                Ok(report) => {
                    let total = report.total();
                    if !total.balanced() {
                        return Err(fail("routed report balances", format!("{report:?}")));
                    }
                    check_acknowledged(&world, batch).await?;
                    break;
                }
                Err(e) => {
                    attempts += 1;
                    if attempts > 80 {
                        return Err(fail(
                            "liveness",
                            format!("batch at offset {} never succeeded: {e}", batch[0].offset),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(100 + world.roll(2_000))).await;
                    if end + 1 < cuts.len() && world.roll(100) < 15 {
                        end += 1; // the redelivered batch is larger
                    }
                }
            }
        }
        i = end;
    }
    Ok(())
}

/// The table `topic` is routed to, if any.
fn table_of(topic: &str) -> Option<&'static str> {
    TOPICS
        .iter()
        .find(|(t, _)| *t == topic)
        .map(|(_, table)| *table)
}

/// Every table of an acknowledged batch has committed its part: its latest checkpoint is past the batch's
/// offsets of each of its topic-partitions.
async fn check_acknowledged(world: &RoutedWorld, batch: &[Msg]) -> Result<(), Failure> {
    let mut wanted: BTreeMap<(&str, String, i32), i64> = BTreeMap::new();
    for m in batch {
        if let Some(table) = table_of(&m.topic) {
            let e = wanted
                .entry((table, m.topic.clone(), m.partition))
                .or_insert(0);
            *e = (*e).max(m.offset + 1);
        }
    }
    for ((table, topic, partition), next) in wanted {
        let store = world.tables[table].recorder.as_ref();
        let timeline = Timeline::load(store)
            .await
            .map_err(|e| fail("readable table", e.to_string()))?;
        let checkpoint = timeline
            .latest_checkpoint(store)
            .await
            .map_err(|e| fail("readable table", e.to_string()))?
            .map(|(_, cp)| cp);
        let committed = checkpoint.and_then(|cp| cp.get(&topic, partition));
        if committed.is_none_or(|c| c < next) {
            return Err(fail(
                "a batch is acknowledged only when all its tables committed",
                format!(
                    "batch acknowledged with {topic}/{partition} up to {next} while table {table}'s checkpoint is {committed:?}"
                ),
            ));
        }
    }
    Ok(())
}

/// Each table's commits carry exactly its routed offsets, once, and its rows equal the model applied commit
/// by commit.
async fn check_tables(world: &RoutedWorld, msgs: &[Msg]) -> Result<(), Failure> {
    for (topic, table) in TOPICS {
        let store = &world.tables[table];
        let mine: Vec<&Msg> = msgs.iter().filter(|m| m.topic == topic).collect();
        let mut previous: BTreeMap<i32, i64> = BTreeMap::new();
        let mut model = Model::default();
        for (time, _, meta) in store.recorder.commits()? {
            let Some(cp) = meta
                .commit
                .checkpoint()
                .map_err(|e| fail("readable table", e.to_string()))?
            else {
                continue;
            };
            let mut part = Vec::new();
            for (t, offsets) in cp.topics() {
                if t != topic {
                    return Err(fail(
                        "each table commits exactly the offsets routed to it",
                        format!("table {table}'s commit {time} carries offsets of topic {t}"),
                    ));
                }
                for (p, next) in offsets {
                    let from = previous.get(p).copied().unwrap_or(0);
                    if *next < from {
                        return Err(fail(
                            "each table commits exactly the offsets routed to it",
                            format!("table {table}'s checkpoint of {t}/{p} moves back from {from} to {next} at {time}"),
                        ));
                    }
                    part.extend(
                        mine.iter()
                            .filter(|m| m.partition == *p && m.offset >= from && m.offset < *next)
                            .map(|m| (*m).clone()),
                    );
                    previous.insert(*p, *next);
                }
            }
            model.apply(&part);
        }
        for p in 0..2 {
            let end = mine
                .iter()
                .filter(|m| m.partition == p)
                .map(|m| m.offset + 1)
                .max();
            if end != previous.get(&p).copied() {
                return Err(fail(
                    "each table commits exactly the offsets routed to it",
                    format!(
                        "table {table}'s last checkpoint of {topic}/{p} is {:?}, the routed records end at {end:?}",
                        previous.get(&p)
                    ),
                ));
            }
        }
        let timeline = Timeline::load(store.recorder.as_ref())
            .await
            .map_err(|e| fail("readable table", e.to_string()))?;
        let rows = invariants::table_rows(store.recorder.as_ref(), &timeline).await?;
        model
            .check_rows(rows)
            .map_err(|e| fail("each table equals its model", format!("table {table}: {e}")))?;
    }
    Ok(())
}

/// Every record of the topic without a route is a dead letter of stage `route`.
async fn check_unrouted(world: &RoutedWorld, msgs: &[Msg]) -> Result<(), Failure> {
    let mut lettered = BTreeSet::new();
    for object in world
        .unrouted
        .list("")
        .await
        .map_err(|e| fail("readable dead letters", e.to_string()))?
    {
        let body = world
            .unrouted
            .get(&object.path)
            .await
            .map_err(|e| fail("readable dead letters", e.to_string()))?;
        for line in String::from_utf8_lossy(&body).lines() {
            let letter: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| fail("readable dead letters", e.to_string()))?;
            if letter["stage"] == "route" {
                lettered.insert((
                    letter["topic"].as_str().unwrap_or_default().to_string(),
                    letter["offset"].as_i64().unwrap_or(-1),
                ));
            }
        }
    }
    for m in msgs.iter().filter(|m| m.topic == STRAY) {
        if !lettered.contains(&(m.topic.clone(), m.offset)) {
            return Err(fail(
                "nothing unrouted is lost",
                format!(
                    "{}/{} offset {} has no dead letter",
                    m.topic, m.partition, m.offset
                ),
            ));
        }
    }
    Ok(())
}

#[test]
fn routing_seeds_hold_every_invariant() {
    let seeds = routing_seeds();
    let mut failures = Vec::new();
    let mut invocations = 0;
    for seed in &seeds {
        match run_routing_seed(*seed, None) {
            Ok(n) => invocations += n,
            Err(f) => failures.push(format!(
                "routing seed {seed}: invariant \"{}\" violated: {}\n  reproduce: SIM_SEED={seed} cargo test --workspace --test it -- simulation::routing",
                f.invariant, f.detail
            )),
        }
    }
    eprintln!(
        "routing simulation: {} seeds, {invocations} invocations, {} failed seeds",
        seeds.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
