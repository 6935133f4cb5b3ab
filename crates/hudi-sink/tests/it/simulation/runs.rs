//! The simulation's tests: the seeds, the mutation check, the file-system and moto runs read back with
//! hudi-rs, and their helpers.

use super::*;

pub(super) fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The seeds to run: `SIM_SEED` alone, else `0..SIM_SEEDS` (default 500).
pub(super) fn seeds() -> Vec<u64> {
    if let Some(one) = env_u64("SIM_SEED") {
        return vec![one];
    }
    (0..env_u64("SIM_SEEDS").unwrap_or(500)).collect()
}

/// Runs `seeds` on all cores; returns per-seed results in seed order.
pub(super) fn run_many(
    seeds: &[u64],
    backend: &Backend,
    mutation: Option<Mutation>,
    stop_at_first_failure: bool,
) -> Vec<(u64, Result<RunStats, Failure>)> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(seeds.len().max(1));
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                let Some(&seed) = seeds.get(i) else { return };
                let r = run_seed(seed, backend, mutation);
                if r.is_err() && stop_at_first_failure {
                    stop.store(true, Ordering::SeqCst);
                }
                lock(&results).push((seed, r));
            });
        }
    });
    let mut out = results.into_inner().unwrap_or_else(|e| e.into_inner());
    out.sort_by_key(|(s, _)| *s);
    out
}

pub(super) fn repro(seed: u64, mutation: Option<Mutation>) -> String {
    let m = mutation
        .map(|m| format!("SIM_MUTATION={} ", m.name()))
        .unwrap_or_default();
    format!("{m}SIM_SEED={seed} cargo test -p hudi-sink --test it simulation::")
}

#[test]
pub(super) fn seeds_hold_every_invariant() {
    let seeds = seeds();
    let results = run_many(&seeds, &Backend::Memory, None, false);
    let mut failures = Vec::new();
    let mut faults: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut services: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut invocations, mut commits) = (0, 0);
    for (seed, r) in &results {
        match r {
            Ok(stats) => {
                invocations += stats.invocations;
                commits += stats.commits;
                for (k, v) in &stats.faults {
                    *faults.entry(k).or_default() += v;
                }
                for (k, v) in &stats.services {
                    *services.entry(k).or_default() += v;
                }
            }
            Err(f) => failures.push(format!(
                "seed {seed}: invariant \"{}\" violated: {}\n  reproduce: {}",
                f.invariant,
                f.detail,
                repro(*seed, None)
            )),
        }
    }
    eprintln!(
        "simulation: {} seeds, {invocations} invocations, {commits} commits, {} failed seeds",
        results.len(),
        failures.len()
    );
    for (name, scenario) in scenarios::SCENARIOS {
        match scenarios::run_scenario(*scenario, None) {
            Ok(()) => eprintln!("  scenario {name}: every invariant holds"),
            Err(f) => failures.push(format!(
                "scenario {name}: invariant \"{}\" violated: {}\n  reproduce: cargo test -p hudi-sink --test it simulation::runs::seeds_hold",
                f.invariant, f.detail
            )),
        }
    }
    for (k, v) in &faults {
        eprintln!("  fault {k}: {v}");
    }
    for (k, v) in &services {
        eprintln!("  services {k}: {v}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(results.len(), seeds.len());
}

#[test]
pub(super) fn same_seed_same_run() {
    for seed in [3u64, 17] {
        let a = run_seed(seed, &Backend::Memory, None).map_err(|f| format!("{f:?}"));
        let b = run_seed(seed, &Backend::Memory, None).map_err(|f| format!("{f:?}"));
        let (a, b) = (a.expect("first run"), b.expect("second run"));
        assert!(a.trace.len() > 3, "a run with some events");
        assert_eq!(a.trace, b.trace, "seed {seed}: event traces differ");
        assert_eq!(a.snapshot, b.snapshot, "seed {seed}: timelines differ");
        assert_eq!(a.faults, b.faults, "seed {seed}: faults differ");
    }
}

/// Each mutation (one safety mechanism off) must be caught by a scripted scenario or by some seed of the
/// default count (`make mutants` runs the same). Atomic commit-file creation is only caught by the scripted
/// scenario: the random seeds cannot hold a commit file's creation in flight past the lease without also
/// opening the window that no mechanism closes (see [`scenarios`]).
#[cfg(feature = "mutations")]
#[test]
pub(super) fn every_mutation_is_caught() {
    mutations_are_caught(&Mutation::ALL);
}

#[cfg(feature = "mutations")]
pub(super) fn mutations_are_caught(mutations: &[Mutation]) {
    let only = std::env::var("SIM_MUTATION")
        .ok()
        .and_then(|m| Mutation::from_name(&m));
    let seeds: Vec<u64> = match env_u64("SIM_SEED") {
        Some(s) => vec![s],
        None => (0..env_u64("SIM_SEEDS").unwrap_or(500)).collect(),
    };
    let mut missed = Vec::new();
    for m in mutations
        .iter()
        .copied()
        .filter(|m| only.is_none_or(|o| o == *m))
    {
        let mut caught = None;
        for (name, scenario) in scenarios::SCENARIOS {
            if let Err(f) = scenarios::run_scenario(*scenario, Some(m)) {
                eprintln!(
                    "mutation {}: caught by scenario {name}, invariant \"{}\": {}",
                    m.name(),
                    f.invariant,
                    f.detail.chars().take(200).collect::<String>()
                );
                caught = Some((u64::MAX, f));
                break;
            }
        }
        if caught.is_some() {
            continue;
        }
        // The multi-table family (about a tenth of a second a seed) before the single-table seeds: its first
        // seeds, which hold the batches a table fails while the others commit.
        for seed in super::routing::routing_seeds()
            .into_iter()
            .take(super::routing::MUTATION_SEEDS)
        {
            if let Err(f) = super::routing::run_routing_seed(seed, Some(m)) {
                eprintln!(
                    "mutation {}: caught by routing seed {seed}, invariant \"{}\": {}\n  reproduce: SIM_MUTATION={} SIM_SEED={seed} cargo test --workspace --test it -- simulation::routing",
                    m.name(),
                    f.invariant,
                    f.detail.chars().take(200).collect::<String>(),
                    m.name()
                );
                caught = Some((seed, f));
                break;
            }
        }
        if caught.is_some() {
            continue;
        }
        // Small chunks, so that a mutation caught early costs little.
        for chunk in seeds.chunks(16) {
            let results = run_many(chunk, &Backend::Memory, Some(m), true);
            if let Some((seed, Err(f))) = results.into_iter().find(|(_, r)| r.is_err()) {
                caught = Some((seed, f));
                break;
            }
        }
        match caught {
            Some((seed, f)) => eprintln!(
                "mutation {}: caught by seed {seed}, invariant \"{}\": {}\n  reproduce: {}",
                m.name(),
                f.invariant,
                f.detail.chars().take(200).collect::<String>(),
                repro(seed, Some(m))
            ),
            None => missed.push(m.name()),
        }
    }
    assert!(
        missed.is_empty(),
        "mutations not caught by any seed: {missed:?}"
    );
}

/// A sample of seeds on the local file system, read back with hudi-rs (Python `hudi`) too.
#[test]
pub(super) fn local_file_system_seeds_read_back_with_hudi_rs() {
    let n = env_u64("SIM_LOCAL_SEEDS").unwrap_or(3);
    for seed in 0..n {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("trips");
        let backend = Backend::Local(base.clone());
        let stats = match run_seed(seed, &backend, None) {
            Ok(s) => s,
            Err(f) => panic!(
                "local seed {seed}: invariant \"{}\": {}\n  reproduce: SIM_LOCAL_SEEDS={} cargo test -p hudi-sink --test it simulation::runs::local",
                f.invariant,
                f.detail,
                seed + 1
            ),
        };
        assert!(stats.commits > 0);
        // The same model, rebuilt independently of the run, is what hudi-rs must read.
        let rows = hudi_rs_trips(&base.display().to_string());
        let storage = LocalStorage::new(&base);
        let library_rows = futures_rows(&storage);
        assert_eq!(
            sorted(rows),
            sorted(library_rows),
            "seed {seed}: hudi-rs and the library read different tables"
        );
    }
}

/// A smaller seed set on S3 (moto, through the AWS SDK), every table also read back with hudi-rs from S3.
/// The lock stays in memory: the DynamoDB lock's protocol is tested on moto by `lock_dynamodb` and
/// `exactly_once_aws`.
#[test]
pub(super) fn moto_seeds_hold_every_invariant_and_read_back_with_hudi_rs() {
    let n = env_u64("SIM_MOTO_SEEDS").unwrap_or(8);
    let endpoint = crate::common::moto::moto().endpoint.clone();
    std::env::set_var("AWS_ENDPOINT_URL_S3", &endpoint);
    let bucket = on_real_time(crate::common::moto::new_bucket("sim"));
    let seeds: Vec<u64> = (0..n).collect();
    let results = run_many(&seeds, &Backend::Moto(bucket.clone()), None, false);
    let mut failures = Vec::new();
    let (mut invocations, mut commits) = (0, 0);
    for (seed, r) in &results {
        match r {
            Ok(stats) => {
                invocations += stats.invocations;
                commits += stats.commits;
                let base = format!("s3://{bucket}/sim-{seed}");
                let rows = hudi_rs_trips(&base);
                let storage = BlockingS3::new(&bucket, &format!("sim-{seed}"));
                if sorted(rows) != sorted(futures_rows(&storage)) {
                    failures.push(format!(
                        "moto seed {seed}: hudi-rs and the library read different tables"
                    ));
                }
            }
            Err(f) => failures.push(format!(
                "moto seed {seed}: invariant \"{}\" violated: {}\n  reproduce: SIM_MOTO_SEEDS={} cargo test -p hudi-sink --test it simulation::runs::moto",
                f.invariant,
                f.detail,
                seed + 1
            )),
        }
    }
    eprintln!(
        "simulation on moto S3: {} seeds, {invocations} invocations, {commits} commits, {} failed",
        results.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(results.len() as u64, n);
}

/// The table at `base` (a directory or `s3://…`) as hudi-rs (Python `hudi`) reads it.
pub(super) fn hudi_rs_trips(base: &str) -> Vec<Trip> {
    crate::common::python::read_rows(base, "hudi", &["snapshot"])
        .iter()
        .map(|r| Trip {
            uuid: r["uuid"].as_str().unwrap_or_default().to_string(),
            ts: r["ts"].as_i64().unwrap_or_default(),
            rider: r["rider"].as_str().unwrap_or_default().to_string(),
            fare: r["fare"].as_f64().unwrap_or_default(),
            city: r["city"].as_str().unwrap_or_default().to_string(),
            deleted: r["_hoodie_is_deleted"].as_bool().unwrap_or(false),
        })
        .collect()
}

/// A completed write's timeline file (`<t>.commit`, `<t>.deltacommit`): the create the lease proof guards,
/// where no freeze is injected (the window lease fencing cannot close; see docs/limits.md).
pub(super) fn is_commit_file(path: &str) -> bool {
    path.ends_with(".commit") || path.ends_with(".deltacommit")
}

/// A base or log file: a window member checks its lease right before uploading one, and a freeze between
/// that check and the upload's arrival is the window lease fencing cannot close (docs/limits.md, "Interval
/// commit"); it is left out, like the freeze before a commit file.
pub(super) fn is_data_file(path: &str) -> bool {
    !path.starts_with(".hoodie/") && (path.ends_with(".parquet") || path.contains(".log."))
}

pub(super) fn sorted(mut rows: Vec<Trip>) -> Vec<Trip> {
    rows.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    rows
}

/// Raises every record's `ts` to at least the previous `ts` of its key (keys stay in one Kafka partition, so
/// offset order per partition is the key's order).
pub(super) fn monotonic_ordering(msgs: &mut [Msg]) {
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    let mut order: Vec<usize> = (0..msgs.len()).collect();
    order.sort_by_key(|i| (msgs[*i].partition, msgs[*i].offset));
    for i in order {
        let m = &mut msgs[i];
        let (Some(key), Some(value)) = (&m.key, &m.value) else {
            continue;
        };
        let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(value) else {
            continue;
        };
        let Some(ts) = json["ts"].as_i64() else {
            continue;
        };
        let raised = last.get(key).map_or(ts, |l| ts.max(*l));
        last.insert(key.clone(), raised);
        if raised != ts {
            json["ts"] = raised.into();
            m.value = serde_json::to_vec(&json).ok();
        }
    }
}

/// The library's snapshot read of a local table (checked against the model by the run itself).
pub(super) fn futures_rows(storage: &dyn Storage) -> Vec<Trip> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let timeline = Timeline::load(storage).await.expect("timeline");
        invariants::table_rows(storage, &timeline)
            .await
            .unwrap_or_else(|f| panic!("{f:?}"))
    })
}
