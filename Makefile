# msk-hudi-sink — the two commands a user needs:
#   make demo   run the sink on the embedded default (local table, in-process coordinator, no AWS)
#   make test   build everything and run every test (creates .venv with the pinned independent readers)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
CARGO ?= cargo
DEMO_DIR ?= $(CURDIR)/target/demo
# The demo's command is built without the AWS clients (the embedded default calls none): a short first build.
HUDI_SINK = $(CARGO) run --quiet -p hudi-sink-cli --no-default-features --bin hudi-sink --

# The demo's last step: the rows hudi-rs reads equal the generator's model (minus the meta columns).
define DEMO_CHECK
import json, sys
rows = json.load(sys.stdin)["rows"]
got = sorted(({k: v for k, v in r.items() if k == "_hoodie_is_deleted" or not k.startswith("_hoodie_")} for r in rows), key=lambda r: r["uuid"])
want = [json.loads(line) for line in open(sys.argv[1])]
print(f"hudi-rs reads {len(got)} rows; the generator's model has {len(want)}:", "identical" if got == want else "DIFFERENT")
sys.exit(0 if got == want else 1)
endef
export DEMO_CHECK

.PHONY: demo test test-interop jvm-jars venv lint fmt bench bench-spark bench-instants bench-avro bench-micro bench-longrun bench-mor bench-writers bench-clustering bench-cdc clean-demo mutants sim test-deploy

$(VENV)/.stamp: tests/python/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

venv: $(VENV)/.stamp

# generate a small stream (inserts, updates, late events, _hoodie_is_deleted, tombstones) -> ingest it as the writer
# Lambda would -> show the table -> read it with the independent hudi-rs reader and compare with the model.
demo: venv
	rm -rf $(DEMO_DIR)
	$(HUDI_SINK) generate --out $(DEMO_DIR)/events --records 5000 --partitions 4 --keys 2000 \
	    --records-per-file 500 --seed 42 --model $(DEMO_DIR)/expected.jsonl
	$(HUDI_SINK) ingest --config examples/local.properties \
	    --set hoodie.base.path=$(DEMO_DIR)/trips --set hudi.sink.dead.letter.path=$(DEMO_DIR)/dead-letters \
	    $(DEMO_DIR)/events
	$(HUDI_SINK) show --table $(DEMO_DIR)/trips
	$(VENV_PY) tests/python/hudi_read.py --pretty $(DEMO_DIR)/trips snapshot | sed -n '1,12p'
	@$(VENV_PY) tests/python/hudi_read.py $(DEMO_DIR)/trips snapshot | $(VENV_PY) -c "$$DEMO_CHECK" $(DEMO_DIR)/expected.jsonl

test: venv
	HUDI_SINK_PYTHON=$(VENV_PY) $(CARGO) test --workspace --all-targets
	HUDI_SINK_PYTHON=$(VENV_PY) $(CARGO) test --workspace --doc
	$(MAKE) test-interop
	$(MAKE) test-deploy

# The JVM interop suite (tests/interop, docs/compatibility.md): Spark 3.5 with Hudi 0.15.0's bundle reads, and
# Hudi's Java timeline code parses, the tables the sink writes, row for row against the model and hudi-rs. One
# Spark session (local mode) for the whole run. Its venv pins pyspark; the jars come from Maven Central through
# jvm/pom.xml into target/jvm (a cache this Makefile owns).
VENV_INTEROP := .venv-interop
JVM_DIR := $(CURDIR)/target/jvm
MVN ?= mvn

$(VENV_INTEROP)/.stamp: tests/python/requirements-interop.txt
	rm -rf $(VENV_INTEROP)
	$(PYTHON) -m venv $(VENV_INTEROP)
	$(VENV_INTEROP)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements-interop.txt
	touch $@

$(JVM_DIR)/jars/.stamp: jvm/pom.xml
	rm -rf $(JVM_DIR)/jars
	$(MVN) -q -B -f jvm/pom.xml -Dmaven.repo.local=$(JVM_DIR)/m2 dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=$(JVM_DIR)/jars
	touch $@

$(JVM_DIR)/jars-hudi1/.stamp: jvm/pom-hudi1.xml
	rm -rf $(JVM_DIR)/jars-hudi1
	$(MVN) -q -B -f jvm/pom-hudi1.xml -Dmaven.repo.local=$(JVM_DIR)/m2 dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=$(JVM_DIR)/jars-hudi1
	touch $@

# Trino (jvm/pom-trino.xml; the directory names its version) for tests/interop/test_trino.py and test_delta.py: the
# server tarball from Maven Central, of which tar unpacks lib/ and plugin/, then every plugin but the Hudi and Delta
# Lake connectors is removed
# (the tarball stores a jar once and hard-links it from the other plugins, so the whole of plugin/ is unpacked).
TRINO_DIR := $(JVM_DIR)/trino-476
# The connectors kept; the stamp names them, so that a cache unpacked with another set is unpacked again.
TRINO_PLUGINS := hudi delta-lake
TRINO_STAMP := $(TRINO_DIR)/.stamp-$(subst $(eval) ,+,$(strip $(TRINO_PLUGINS)))

$(TRINO_STAMP): jvm/pom-trino.xml jvm/settings-central.xml
	rm -rf $(TRINO_DIR)
	$(MVN) -q -B -f jvm/pom-trino.xml -s jvm/settings-central.xml -Dmaven.repo.local=$(TRINO_DIR)/m2 \
		-Dtrino.dir=$(TRINO_DIR) dependency:copy@trino
	tar -xzf $(TRINO_DIR)/trino-server-*.tar.gz -C $(TRINO_DIR) --wildcards 'trino-server-*/lib' \
		'trino-server-*/plugin'
	find $(TRINO_DIR)/trino-server-*/plugin -mindepth 1 -maxdepth 1 $(foreach p,$(TRINO_PLUGINS),! -name $(p)) \
		-exec rm -rf {} +
	rm -rf $(TRINO_DIR)/m2 $(TRINO_DIR)/markers $(TRINO_DIR)/trino-server-*.tar.gz
	touch $@

jvm-jars: $(JVM_DIR)/jars/.stamp $(JVM_DIR)/jars-hudi1/.stamp $(TRINO_STAMP)

# The build step is `cargo test --workspace --no-run`, not `cargo build -p …`: the same feature set as `make test`'s
# cargo run, so after it nothing is compiled again (a `-p` build unifies other features and rebuilds the AWS SDK).
test-interop: $(VENV_INTEROP)/.stamp $(JVM_DIR)/jars/.stamp $(JVM_DIR)/jars-hudi1/.stamp $(TRINO_STAMP)
	$(CARGO) test --workspace --no-run --quiet
	HUDI_SINK_BIN=$(CURDIR)/target/debug/hudi-sink $(VENV_INTEROP)/bin/python -m pytest tests/interop -q -rsx -p no:cacheprovider
	# The read suite again with Hudi 1.0's bundle: a second JVM, since one Spark session holds one Hudi.
	HUDI_SINK_BIN=$(CURDIR)/target/debug/hudi-sink HUDI_SINK_INTEROP_JARS=$(JVM_DIR)/jars-hudi1 \
		$(VENV_INTEROP)/bin/python -m pytest tests/interop/test_reads.py -q -rsx -p no:cacheprovider

# Deployment packaging checks (template.yaml, infra/): cfn-lint, sam validate --lint, checkov and the
# least-privilege / SAM-Terraform parity tests of tests/deploy. Own venv: aws-sam-cli and checkov pin many
# packages. python-hcl2 goes into its own directory because checkov's bc-python-hcl2 uses the same module name.
VENV_DEPLOY := .venv-deploy

$(VENV_DEPLOY)/.stamp: tests/python/requirements-deploy.txt tests/python/requirements-deploy-hcl2.txt
	rm -rf $(VENV_DEPLOY)
	$(PYTHON) -m venv $(VENV_DEPLOY)
	$(VENV_DEPLOY)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements-deploy.txt
	$(VENV_DEPLOY)/bin/pip install --quiet --disable-pip-version-check --no-deps --target $(VENV_DEPLOY)/hcl2 \
		-r tests/python/requirements-deploy-hcl2.txt
	touch $@

test-deploy: $(VENV_DEPLOY)/.stamp
	HUDI_SINK_HCL2_PATH=$(CURDIR)/$(VENV_DEPLOY)/hcl2 $(VENV_DEPLOY)/bin/python -m unittest discover \
		-s tests/deploy -p 'test_*.py' -v

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Side-by-side benchmark (bench/run.py -> bench/results.json, bench/chart.svg): this writer's core and whole
# process against pyarrow and delta-rs on one generated workload, and `hudi-sink ingest` against Spark 3.5 with
# Hudi 0.15.0 (bench/spark_hudi.py: the interop venv and jars) on BENCH_SPARK_RECORDS of the same kind, each
# contender pinned to one CPU, then inline clustering with the release CLI (bench/clustering.py: its CPU share,
# and its long run of CLUSTERING_BATCHES one-file batches, 0 to skip), in one run. Not in CI. BENCH_RECORDS=100000 for a quick run; `make bench-spark`
# runs the Spark comparison alone. `make bench-micro` runs the criterion micro-benchmarks.
VENV_BENCH := .venv-bench
BENCH_RECORDS ?= 1000000
BENCH_SPARK_RECORDS ?= 200000

$(VENV_BENCH)/.stamp: tests/python/requirements-bench.txt
	rm -rf $(VENV_BENCH)
	$(PYTHON) -m venv $(VENV_BENCH)
	$(VENV_BENCH)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements-bench.txt
	touch $@

bench: $(VENV_BENCH)/.stamp $(VENV_INTEROP)/.stamp $(JVM_DIR)/jars/.stamp
	$(CARGO) build --release -p hudi-sink --no-default-features --example bench_writer
	$(CARGO) build --release -p hudi-sink-cli -p hudi-sink-writer
	$(VENV_BENCH)/bin/python bench/run.py --records $(BENCH_RECORDS) --spark-records $(BENCH_SPARK_RECORDS) --clustering-batches $(CLUSTERING_BATCHES)

bench-spark: $(VENV_BENCH)/.stamp $(VENV_INTEROP)/.stamp $(JVM_DIR)/jars/.stamp
	$(CARGO) build --release -p hudi-sink-cli
	$(VENV_BENCH)/bin/python bench/run.py --spark-only --spark-records $(BENCH_SPARK_RECORDS)

# The Avro comparison alone (bench/run.py --avro-only -> bench/results.json "avro"): the same records as
# Confluent-framed Avro values through the writer core and through fastavro + pyarrow.
bench-avro: $(VENV_BENCH)/.stamp
	$(CARGO) build --release -p hudi-sink --no-default-features --example bench_writer
	$(CARGO) build --release -p hudi-sink-cli
	$(VENV_BENCH)/bin/python bench/run.py --avro-only --records $(BENCH_RECORDS)

bench-micro:
	$(CARGO) bench -p hudi-sink --bench format

# Long-run benchmark (bench/longrun.py -> bench/results.json "longrun" and "longrun_growth", bench/longrun.svg):
# LONGRUN_BATCHES small upsert batches (20 records, 2,000 keys) on the embedded default, LONGRUN_S3_BATCHES on
# moto S3 + DynamoDB, per-batch wall time from `hudi-sink ingest --report-jsonl`; growth = median of the last
# tenth / first tenth. Hours at the defaults; e.g. `make bench-longrun LONGRUN_BATCHES=600 LONGRUN_S3_BATCHES=100`
# for a quick check. The CLI is built with thin LTO (faster to build; the ratio is within one binary). Not in CI.
LONGRUN_BATCHES ?= 20000
LONGRUN_S3_BATCHES ?= 1000

bench-longrun: venv
	CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 $(CARGO) build --release -p hudi-sink-cli
	LONGRUN_BATCHES=$(LONGRUN_BATCHES) LONGRUN_S3_BATCHES=$(LONGRUN_S3_BATCHES) $(VENV_PY) bench/longrun.py

# Inline clustering over a long run (bench/clustering.py -> bench/results.json "clustering_curve", the table in
# docs/performance.md): CLUSTERING_BATCHES one-file insert batches of 500 records through `hudi-sink ingest
# --commit-interval-ms 0`, sampled every 500: bytes rewritten against bytes written, files per partition, CPU.
# The debug CLI of `cargo test --workspace --no-run`; the work directory on /dev/shm (no disk flushes). Not in CI.
CLUSTERING_BATCHES ?= 10000

bench-clustering:
	$(CARGO) test --workspace --no-run --quiet
	$(PYTHON) bench/clustering.py --batches $(CLUSTERING_BATCHES) --bin target/debug/hudi-sink --out /dev/shm/hudi-sink-bench-clustering

# Debezium before rows (bench/cdc.py -> bench/results.json "cdc_before_rows"): the CPU of `hudi-sink ingest` on a
# MySQL change stream whose updates carry whole before rows (a quarter of them moving their row to another
# partition) against the same stream without them. About two minutes; not in CI.
bench-cdc:
	$(CARGO) build --profile profiling -p hudi-sink-cli --no-default-features --bin hudi-sink
	$(PYTHON) bench/cdc.py --bin target/profiling/hudi-sink

# Per-instant overhead (bench/instants.py -> bench/results.json "per_instant"): wall and CPU time of
# `hudi-sink ingest --commit-interval-ms 0` over 10, 40 and 160 one-file instants on the embedded default, with
# strace's system-call counts per instant where strace is installed. A minute or two; not in CI.
bench-instants:
	$(CARGO) build --profile profiling -p hudi-sink-cli --no-default-features --bin hudi-sink
	$(PYTHON) bench/instants.py --bin-dir target/profiling

# Merge-on-read against copy-on-write (bench/mor_growth.py -> bench/results.json "mor_vs_cow" and "compaction",
# bench/mor_growth.svg): the cost of one upsert batch as the table grows to MOR_LEVELS x MOR_LOAD_ROWS rows, and
# compaction of one file group of MOR_GROUP_MB sizes. About ten minutes at the defaults; not in CI.
bench-mor: venv
	$(CARGO) build --profile profiling -p hudi-sink --no-default-features --example bench_growth
	$(VENV_PY) bench/mor_growth.py

# Concurrent writers under the interval commit (bench/writers.py -> bench/results.json "writers", bench/writers.svg):
# K = WRITERS_K writers (one Kafka partition, sink, in-process coordinator and DynamoDB lock client each) upsert
# 1,000-record batches into one table on moto S3 (+ WRITERS_LATENCY_MS per S3 call) for WRITERS_DURATION_S
# seconds per configuration, copy-on-write and merge-on-read, plus K=1 on the per-batch protocol (interval 0).
# About 15 minutes at the defaults; e.g. `make bench-writers WRITERS_DURATION_S=30`. Not in CI.
WRITERS_DURATION_S ?= 60

bench-writers: venv
	$(CARGO) build --profile profiling -p hudi-sink --example bench_writers
	WRITERS_DURATION_S=$(WRITERS_DURATION_S) $(VENV_PY) bench/writers.py

# The deterministic simulation with one safety mechanism switched off at a time: each must be caught
# (first failing seed and invariant printed). `make test` runs the same check; this shows the report.
mutants:
	$(CARGO) test -p hudi-sink --features mutations --test it simulation::runs::every_mutation_is_caught -- --nocapture

# More simulation seeds than `make test` runs, e.g. `make sim SIM_SEEDS=10000`.
SIM_SEEDS ?= 5000
sim:
	SIM_SEEDS=$(SIM_SEEDS) $(CARGO) test -p hudi-sink --test it simulation::runs::seeds_hold_every_invariant -- --nocapture

# Fuzzing (docs/reliability.md, "Fuzzing and bad input"): builds the cargo-fuzz targets of fuzz/ and runs each for
# FUZZ_SECONDS from the committed corpus (new inputs go to fuzz/target/corpus, crashes to fuzz/artifacts).
# Needs `cargo install --locked cargo-fuzz --version 0.13.2`. RUSTC_BOOTSTRAP=1 lets the stable toolchain take
# cargo-fuzz's nightly-only flags (no nightly can be downloaded here); no sanitizer: the code is safe Rust.
.PHONY: fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := event_decode json_to_arrow avro_to_arrow java_properties commit_metadata
FUZZ := RUSTC_BOOTSTRAP=1 $(CARGO) fuzz
FUZZ_FLAGS := -O -a -s none --fuzz-dir fuzz
fuzz:
	$(FUZZ) build $(FUZZ_FLAGS)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/target/corpus/$$t; log=fuzz/target/$$t.log; \
	  echo "== fuzz $$t: $(FUZZ_SECONDS) s from fuzz/corpus/$$t (log: $$log)"; \
	  if $(FUZZ) run $(FUZZ_FLAGS) $$t $(CURDIR)/fuzz/target/corpus/$$t $(CURDIR)/fuzz/corpus/$$t -- \
	      -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >$$log 2>&1; then \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' $$log; \
	  else \
	    tail -n 80 $$log; echo "fuzz $$t FAILED: the input is in fuzz/artifacts/$$t/"; exit 1; \
	  fi; \
	done
