"""`make bench`: one workload, every contender single-threaded (pinned to one CPU) in one run, side by side.

Writes bench/results.json and bench/chart.svg. Ratios are taken within this run only (the machine is noisy:
other builds may be running), so compare ratios, not absolute figures, across runs. No figure is asserted; the
tables of the Spark Hudi comparison must hold the same rows (a difference stops the run).

    python bench/run.py [--records N] [--spark-records N] [--bin-dir DIR] [--spark-only|--process-only|--avro-only]

Needs the release binaries (`make bench` builds them): target/release/hudi-sink, target/release/hudi-sink-writer,
target/release/examples/bench_writer; for the Spark Hudi comparison (spark_section, bench/spark_hudi.py), the
interop venv .venv-interop (pyspark) and the Hudi jars in target/jvm/jars (`make jvm-jars`).
"""

import argparse
import http.server
import json
import os
import re
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
REL = os.path.join(ROOT, "target", "release")
PROPS = os.path.join(ROOT, "examples", "bench.properties")
PY = sys.executable
INTEROP_PY = os.path.join(ROOT, ".venv-interop", "bin", "python")
SPARK_HUDI = os.path.join(ROOT, "bench", "spark_hudi.py")
# HoodieStreamer (org.apache.hudi.utilities.streamer.HoodieStreamer) ships only in hudi-utilities(-slim)-bundle,
# which Maven Central does not serve to this project's machines (tried once with `mvn dependency:get`).
HOODIESTREAMER_BLOCKED = (
    "org.apache.hudi:hudi-utilities-slim-bundle_2.12:0.15.0 (HoodieStreamer's bundle) cannot be resolved on this "
    "project's machines: `mvn dependency:get -Dartifact=org.apache.hudi:hudi-utilities-slim-bundle_2.12:0.15.0` "
    "fails with \"Could not find artifact org.apache.hudi:hudi-utilities-slim-bundle_2.12:jar:0.15.0 in central "
    "(https://repo.maven.apache.org/maven2)\"; without it there is no HoodieStreamer to run")
# Arm64 Lambda: price per GB-second and the memory size that gives one full vCPU.
PRICE_GB_S = 0.0000133334
LAMBDA_MB = 1769


def cpu():
    """One CPU to pin every contender to (the same one for all, so they compete alike with other load)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1]


def run_usage(cmd, env=None):
    """Runs `cmd` pinned to one CPU and returns its stdout and stderr with the rusage of wait4: the child's CPU
    time and peak RSS, with those of the descendants it waited for (a JVM the child started and waited for
    counts; the peak RSS is then the largest single process's), not this process's."""
    started = time.perf_counter()
    p = subprocess.Popen(["taskset", "-c", str(cpu())] + cmd, cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # One reader thread per pipe: a child that fills stderr while stdout is read would block.
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    reader.start()
    stdout = p.stdout.read()
    reader.join()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if p.returncode != 0:
        sys.stderr.write(err[0].decode(errors="replace")[-4000:])
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    return {"stdout": stdout.decode(), "stderr": err[0].decode(errors="replace"), "wall_s": wall,
            "user_s": usage.ru_utime, "sys_s": usage.ru_stime, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024.0}


def run_measured(cmd, env=None):
    """Like run_usage: (stdout, wall seconds, peak RSS MB)."""
    u = run_usage(cmd, env)
    return u["stdout"], u["wall_s"], u["peak_rss_mb"]


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON in output: {text[-500:]}")


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    return path


def machine():
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "arch": platform.machine(),
            "kernel": platform.release(), "python": platform.python_version()}


class RuntimeApi:
    """A tiny Lambda Runtime API: records when the first `GET .../invocation/next` arrives, hands out the
    given events one by one, records the responses, and then keeps the writer waiting."""

    def __init__(self, events):
        self.events = list(events)
        self.first_next = None
        self.responses = []
        self.done = threading.Event()
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if api.first_next is None:
                    api.first_next = time.perf_counter()
                if not api.events:
                    api.done.set()
                    time.sleep(3600)  # a waiting writer; the harness kills it
                    return
                body = api.events.pop(0)
                n = len(api.responses) + len(api.events)
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", f"req-{n}")
                self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 900_000))
                self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:us-east-1:123456789012:function:bench-writer")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                api.responses.append((self.path, body))
                self.send_response(202)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                if not api.events:
                    api.done.set()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def address(self):
        return f"127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()


def writer_env(config, api):
    env = dict(os.environ)
    env.update({"AWS_LAMBDA_RUNTIME_API": api.address, "HUDI_SINK_CONFIG": config,
                "AWS_LAMBDA_FUNCTION_NAME": "bench-writer", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(LAMBDA_MB),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
                "AWS_REGION": "us-east-1", "RUST_LOG": "warn"})
    return env


def vm_hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def writer_run(config, events, timeout=600):
    """Starts the release writer against the fake Runtime API; returns (init ms, peak RSS MB, responses)."""
    api = RuntimeApi(events)
    started = time.perf_counter()
    p = subprocess.Popen(["taskset", "-c", str(cpu()), os.path.join(REL, "hudi-sink-writer")],
                         env=writer_env(config, api), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        api.done.wait(timeout)
        # Wait for the writer to ask for the next event (it is then idle), then read its peak RSS.
        deadline = time.time() + 30
        while time.time() < deadline and api.events == [] and len(api.responses) < len(events):
            time.sleep(0.01)
        time.sleep(0.2)
        rss = vm_hwm_mb(p.pid)
    finally:
        p.kill()
        _, err = p.communicate()
        api.close()
    if api.first_next is None:
        raise SystemExit("writer never called the Runtime API: " + err.decode(errors="replace")[-2000:])
    return (api.first_next - started) * 1000.0, rss, api.responses


def write_props(path, base, extra=(), drop=()):
    lines = open(PROPS).read().splitlines()
    keep = [l for l in lines if not l.startswith(("hoodie.base.path", "hudi.sink.dead.letter.path",
                                                  "hoodie.streamer.schemaprovider") + tuple(drop))]
    keep += [f"hoodie.base.path={base}", f"hudi.sink.dead.letter.path={base}-dead-letters",
             f"hoodie.streamer.schemaprovider.source.schema.file={ROOT}/events/schema/bench.avsc"]
    keep += list(extra)
    with open(path, "w") as f:
        f.write("\n".join(keep) + "\n")
    return path


def request_counts():
    """S3 and DynamoDB requests of one begin + commit of a warm writer, from the request_counts test."""
    p = subprocess.run(["cargo", "test", "-q", "-p", "hudi-sink", "--test", "it", "request_counts", "--",
                        "--nocapture"], cwd=ROOT, capture_output=True, text=True)
    found = {}
    for line in p.stderr.splitlines() + p.stdout.splitlines():
        if line.startswith("begin: "):
            found["begin_s3"] = int(line.split()[1])
        elif line.startswith("commit ("):
            found["commit_files"] = int(line.split("(")[1].split()[0])
            found["commit_s3"] = int(line.split("):")[1].split()[0])
        elif line.startswith("S3 ") and "DynamoDB" in line:
            parts = line.split()
            found["s3"], found["dynamodb"] = int(parts[1]), int(parts[4])
        elif line.startswith("one-file batch: "):
            # one-file batch: S3 <n> + DynamoDB <m> = <total>; per extra file: S3 <k>
            parts = line.replace(";", "").split()
            found["one_file_s3"], found["one_file_dynamodb"] = int(parts[3]), int(parts[6])
            found["one_file_total"] = int(parts[8])
            found["s3_per_extra_file"] = int(parts[-1])
    found["test_passed"] = p.returncode == 0
    if "s3" in found:
        found["total"] = found["s3"] + found["dynamodb"]
    return found


def chart(results, path):
    """A small hand-written SVG bar chart of records/s, two groups: writer core and whole process."""
    rows = [("hudi-sink writer core (insert)", results["records_per_s"], "#1f77b4"),
            ("pyarrow read_json + write_table", results["pyarrow"]["records_per_s"], "#ff7f0e"),
            ("delta-rs write_deltalake", results["deltalake"]["records_per_s"], "#2ca02c"),
            ("hudi-sink ingest (whole process)", results["process"]["ours_records_per_s"], "#1f77b4"),
            ("python + pyarrow (whole process)", results["process"]["pyarrow_records_per_s"], "#ff7f0e")]
    top = max(r[1] for r in rows)
    w, bar_h, gap, left, label_w = 760, 26, 12, 250, 120
    h = 60 + len(rows) * (bar_h + gap) + 30
    scale = (w - left - label_w) / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="13">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="10" y="24" font-size="15" font-weight="bold">Records per second, one CPU, same '
           f'{results["records"]:,} records ({results["json_mb"]:.0f} MB JSON)</text>',
           f'<text x="10" y="44" fill="#555">{results["machine"]["cpu"]}; higher is better</text>']
    y = 60
    for i, (label, value, color) in enumerate(rows):
        if i == 3:
            y += 8
        out.append(f'<text x="{left - 8}" y="{y + bar_h * 0.68:.0f}" text-anchor="end">{label}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{value * scale:.1f}" height="{bar_h}" fill="{color}"/>')
        out.append(f'<text x="{left + value * scale + 6:.1f}" y="{y + bar_h * 0.68:.0f}">{value:,.0f}/s</text>')
        y += bar_h + gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def avro_section(files, records):
    """The same records as Confluent-framed Avro values: the writer core against fastavro + pyarrow."""
    schema = os.path.join(ROOT, "events", "schema", "bench.avsc")
    avro_dir = os.path.join(OUT, f"events-avro-{records}")
    if not os.path.isdir(avro_dir):
        subprocess.run([PY, os.path.join(ROOT, "bench", "avro_events.py"), schema, avro_dir] + files, check=True)
    avro_files = sorted(os.path.join(avro_dir, os.path.basename(f)) for f in files)
    bench_writer = os.path.join(REL, "examples", "bench_writer")
    out, _, rss = run_measured([bench_writer, "insert-avro", PROPS, fresh(os.path.join(OUT, "t-insert-avro"))]
                               + avro_files)
    ours = last_json(out)
    ours["peak_rss_mb"] = rss
    print("ours insert (Avro):", ours, flush=True)
    out, _, rss = run_measured([PY, os.path.join(ROOT, "bench", "peers.py"), "fastavro",
                                fresh(os.path.join(OUT, "fastavro")), schema] + avro_files)
    peer = last_json(out)
    peer["peak_rss_mb"] = rss
    print("fastavro + pyarrow:", peer, flush=True)
    return {
        "records": ours["records"],
        "avro_mb": ours["json_bytes"] / 1e6,
        "records_per_s": ours["records_per_s"],
        "avro_mb_per_s": ours["json_bytes"] / 1e6 / ours["seconds"],
        "fastavro_records_per_s": peer["records_per_s"],
        "vs_fastavro_pyarrow": ours["records_per_s"] / peer["records_per_s"],
        "ours_insert": ours,
        "fastavro": peer,
    }


def process_section(files, events_dir, records):
    """Whole processes: `hudi-sink ingest` (envelope, base64, decode, commits through the in-process
    coordinator and the file lock) against a Python script writing one parquet file. Ingest runs twice: with
    `--commit-interval-ms 0` (one commit per event file, as fast as it goes: the throughput figure) and at the
    default interval (at most one instant per interval, so a backfill is paced by the interval)."""
    def ingest(extra):
        base = fresh(os.path.join(OUT, "t-ingest"))
        props = write_props(os.path.join(OUT, "ingest.properties"), base,
                            ["hoodie.datasource.write.operation=insert"],
                            drop=("hoodie.datasource.write.operation", "hoodie.index.type", "hoodie.bucket.index"))
        out, wall, rss = run_measured([os.path.join(REL, "hudi-sink"), "ingest", "--config", props] + extra
                                      + [events_dir])
        # Archival keeps only the active commits; the ingest's own summary line counts them all.
        commits = re.search(r"(\d+) commits", out.decode() if isinstance(out, bytes) else out)
        return wall, rss, int(commits.group(1)) if commits else None
    ours_wall, ours_rss, commits = ingest(["--commit-interval-ms", "0"])
    out, py_wall, py_rss = run_measured([PY, os.path.join(ROOT, "bench", "peers.py"), "process",
                                         os.path.join(fresh(os.path.join(OUT, "py-process")) + ".parquet")] + files)
    paced_wall, paced_rss, paced_commits = ingest([])
    process = {"ours_seconds": ours_wall, "ours_records_per_s": records / ours_wall, "ours_peak_rss_mb": ours_rss,
               "pyarrow_seconds": py_wall, "pyarrow_records_per_s": records / py_wall,
               "pyarrow_peak_rss_mb": py_rss, "commits": commits,
               "default_interval_seconds": paced_wall, "default_interval_records_per_s": records / paced_wall,
               "default_interval_peak_rss_mb": paced_rss, "default_interval_commits": paced_commits}
    print("process:", process, flush=True)
    return process


def vs_process(process):
    """Whole-process ratios against the pyarrow script: at the default settings (`vs_pyarrow_process`, the
    commit interval pacing instants) and at one instant per event file."""
    return {"vs_pyarrow_process": process["pyarrow_seconds"] / process["default_interval_seconds"],
            "vs_pyarrow_process_interval_0": process["pyarrow_seconds"] / process["ours_seconds"]}


def workload(records, partitions):
    """The bench workload of `records` generated records (ESM payloads of at most 6 MB): its directory and files,
    generated once and kept in bench/out."""
    events_dir = os.path.join(OUT, f"events-{records}")
    if not os.path.isdir(events_dir):
        subprocess.run([os.path.join(REL, "hudi-sink"), "generate", "--schema", "bench", "--records",
                        str(records), "--partitions", str(partitions), "--records-per-file", "10000",
                        "--update-ratio", "0", "--delete-ratio", "0", "--tombstone-ratio", "0",
                        "--late-ratio", "0", "--out", events_dir], check=True)
    return events_dir, sorted(os.path.join(events_dir, f) for f in os.listdir(events_dir) if f.endswith(".json"))


def tree_bytes(path):
    """Bytes of every file under `path`, and of the data files alone (parquet base files and log files)."""
    total = data = 0
    for d, _, names in os.walk(path):
        for name in names:
            n = os.path.getsize(os.path.join(d, name))
            total += n
            if ".hoodie" not in d.split(os.sep) and (name.endswith(".parquet") or ".log." in name):
                data += n
    return total, data


def contender(usage, records, path):
    """One contender's figures: whole-process CPU, wall time, peak RSS, bytes on storage, records per core-second."""
    table_bytes, data_bytes = tree_bytes(path)
    return {"cpu_s": usage["cpu_s"], "user_s": usage["user_s"], "sys_s": usage["sys_s"], "wall_s": usage["wall_s"],
            "peak_rss_mb": usage["peak_rss_mb"], "table_bytes": table_bytes, "data_bytes": data_bytes,
            "records_per_core_s": records / usage["cpu_s"]}


# The sink's tables for the Spark comparison: (name, properties added, properties dropped, ingest options).
# Defaults first (one table per Spark peer), then one commit per 6 MB payload (`--commit-interval-ms 0`), which is
# what a writer Lambda invoked with 6 MB ESM batches does: the Lambda view's figures.
INSERT_PROPS = (["hoodie.datasource.write.operation=insert"],
                ("hoodie.datasource.write.operation", "hoodie.index.type", "hoodie.bucket.index"))
MOR_PROPS = (["hoodie.table.type=MERGE_ON_READ"], ("hoodie.table.type",))
SINK_TABLES = (("insert",) + INSERT_PROPS + ([],),
               ("upsert_cow", [], (), []),
               ("upsert_mor",) + MOR_PROPS + ([],),
               ("insert_per_batch",) + INSERT_PROPS + (["--commit-interval-ms", "0"],),
               ("upsert_mor_per_batch",) + MOR_PROPS + (["--commit-interval-ms", "0"],))
# Spark's writes through the Hudi datasource: (name, operation, table type).
SPARK_WRITES = (("bulk_insert", "bulk_insert", "COPY_ON_WRITE"), ("insert", "insert", "COPY_ON_WRITE"),
                ("upsert_cow", "upsert", "COPY_ON_WRITE"), ("upsert_mor", "upsert", "MERGE_ON_READ"))


def spark_section(records, partitions):
    """The same events through `hudi-sink ingest` and through Spark 3.5 + Hudi 0.15.0 (`local[1]`, one datasource
    write per operation, bench/spark_hudi.py), each a child process pinned to one CPU; Spark's start-up (a
    session started and stopped) is measured apart. Every table is then read back (hudi-rs all of them, Spark its
    own) and must hold exactly the rows of the sink's insert table."""
    if not os.path.exists(INTEROP_PY):
        raise SystemExit(f"no {INTEROP_PY}: `make bench` installs it (make's $(VENV_INTEROP)/.stamp)")
    events_dir, files = workload(records, partitions)
    out = os.path.join(OUT, "spark")
    os.makedirs(out, exist_ok=True)
    sink = {}
    for name, extra, drop, options in SINK_TABLES:
        base = fresh(os.path.join(out, f"sink-{name}"))
        props = write_props(os.path.join(out, f"sink-{name}.properties"), base, extra, drop)
        usage = run_usage([os.path.join(REL, "hudi-sink"), "ingest", "--config", props] + options + [events_dir])
        sink[name] = contender(usage, records, base)
        commits = re.search(r"(\d+) commits", usage["stdout"] + usage["stderr"])
        sink[name]["commits"] = int(commits.group(1)) if commits else None
        print(f"sink {name}:", sink[name], flush=True)
    startup = run_usage([INTEROP_PY, SPARK_HUDI, "empty"])
    startup = {"cpu_s": startup["cpu_s"], "wall_s": startup["wall_s"], "peak_rss_mb": startup["peak_rss_mb"],
               **last_json(startup["stdout"])}
    print("spark start-up (empty session):", startup, flush=True)
    spark = {}
    for name, op, table_type in SPARK_WRITES:
        base = fresh(os.path.join(out, f"spark-{name}"))
        usage = run_usage([INTEROP_PY, SPARK_HUDI, "write", op, table_type, base,
                           fresh(os.path.join(out, "staging"))] + files)
        inside = last_json(usage["stdout"])
        if inside["records"] != records:
            raise SystemExit(f"spark {name} staged {inside['records']} records, not {records}")
        c = contender(usage, records, base)
        steady = usage["cpu_s"] - startup["cpu_s"]
        c.update({"commits": 1, "inside": inside, "steady_cpu_s": steady, "records_per_core_s_steady": records / steady,
                  "records_per_core_s_write_only": records / inside["jvm_cpu_write"]})
        spark[name] = c
        print(f"spark {name}:", c, flush=True)
    json_bytes = spark["insert"]["inside"]["json_bytes"]

    # Read back: hudi-rs every table, Spark its own; all must hold the sink's insert table's rows.
    named = [f"sink-{n}={os.path.join(out, f'sink-{n}')}" for n, *_ in SINK_TABLES]
    named += [f"+spark-{n}={os.path.join(out, f'spark-{n}')}" for n, *_ in SPARK_WRITES]
    p = subprocess.run([INTEROP_PY, SPARK_HUDI, "check"] + named, cwd=ROOT, capture_output=True, text=True)
    try:
        checked = last_json(p.stdout)
    except ValueError:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit("the read-back check of the Spark comparison failed")
    if p.returncode != 0 or checked["mismatches"]:
        raise SystemExit(f"ROW MISMATCH against {checked['reference']}: {json.dumps(checked['mismatches'], indent=1)}")
    print(f"read back: {len(checked['readings'])} readings hold the same {checked['rows']:,} rows", flush=True)

    gb = json_bytes / 1e9
    lambda_view = {}
    for name in ("insert_per_batch", "upsert_mor_per_batch"):
        c = sink[name]
        gb_s = c["wall_s"] / gb * LAMBDA_MB / 1024.0
        lambda_view[name] = {"wall_s_per_gb": c["wall_s"] / gb, "core_s_per_gb": c["cpu_s"] / gb,
                             "gb_s_per_gb": gb_s, "usd_per_gb": gb_s * PRICE_GB_S}
    lambda_view["spark_core_s_per_gb"] = {n: c["cpu_s"] / gb for n, c in spark.items()}
    lambda_view["spark_core_s_per_gb_steady"] = {n: c["steady_cpu_s"] / gb for n, c in spark.items()}
    lambda_view["sink_core_s_per_gb"] = {n: c["cpu_s"] / gb for n, c in sink.items()}
    return {"records": records, "json_mb": json_bytes / 1e6, "event_files": len(files),
            "payload_mb": sum(os.path.getsize(f) for f in files) / 1e6, "rows_checked": checked["rows"],
            "readings_checked": checked["readings"], "hudi_rs_reader": checked["hudi_rs"],
            "machine": machine(), "single_cpu": cpu(), "sink": sink, "spark_startup": startup,
            "spark": spark, "lambda": lambda_view}


def vs_spark(section):
    """results.json's `vs_spark_hudi_*`: records per core-second, the sink's (default settings) ÷ Spark's, the
    whole process on both sides and Spark less its start-up; with both sides' peak memory."""
    sink, spark = section["sink"], section["spark"]

    def versus(ours, peers):
        mine = sink[ours]
        out = {"ours": f"hudi-sink ingest ({ours}, default settings)", "ours_peak_rss_mb": mine["peak_rss_mb"],
               "ours_records_per_core_s": mine["records_per_core_s"]}
        for peer in peers:
            p = spark[peer]
            out[peer] = {"ratio": mine["records_per_core_s"] / p["records_per_core_s"],
                         "ratio_vs_steady_state": mine["records_per_core_s"] / p["records_per_core_s_steady"],
                         "peer_records_per_core_s": p["records_per_core_s"], "peer_peak_rss_mb": p["peak_rss_mb"],
                         "memory_ratio": mine["peak_rss_mb"] / p["peak_rss_mb"]}
        # The headline is against the stronger peer.
        best = max(peers, key=lambda q: spark[q]["records_per_core_s"])
        out.update({"ratio": out[best]["ratio"], "ratio_vs_steady_state": out[best]["ratio_vs_steady_state"],
                    "peer": f"spark {best}", "peer_peak_rss_mb": spark[best]["peak_rss_mb"]})
        return out

    return {"vs_spark_hudi_insert": versus("insert", ["bulk_insert", "insert"]),
            "vs_spark_hudi_upsert_cow": versus("upsert_cow", ["upsert_cow"]),
            "vs_spark_hudi_upsert_mor": versus("upsert_mor", ["upsert_mor"]),
            "vs_hoodiestreamer": {"blocked": True, "reason": HOODIESTREAMER_BLOCKED}}


def git_commit():
    """The checked-out commit, with "+dirty" when the work tree differs from it."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!bench/results.json", ":!bench/chart.svg"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return ""


def merge_results(update):
    """Merges `update` into bench/results.json (the keys of the other bench targets stay)."""
    path = os.path.join(ROOT, "bench", "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    results.update(update)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    return results


def main():
    global REL
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--init-runs", type=int, default=7)
    ap.add_argument("--process-only", action="store_true",
                    help="run only the whole-process comparison and merge it into bench/results.json")
    ap.add_argument("--avro-only", action="store_true",
                    help="run only the Avro comparison and merge it into bench/results.json")
    ap.add_argument("--spark-records", type=int, default=200_000,
                    help="records of the Spark Hudi comparison (its own workload, generated alike)")
    ap.add_argument("--spark-only", action="store_true",
                    help="run only the Spark Hudi comparison and merge it into bench/results.json")
    ap.add_argument("--clustering-runs", type=int, default=5,
                    help="runs each way of inline clustering's CPU share (bench/clustering.py --cpu-share)")
    ap.add_argument("--clustering-batches", type=int, default=10_000,
                    help="one-file batches of inline clustering's long run (bench/clustering.py); 0 skips it")
    ap.add_argument("--bin-dir", default=REL,
                    help="where hudi-sink, hudi-sink-writer and examples/bench_writer are (default target/release)")
    args = ap.parse_args()
    REL = os.path.abspath(args.bin_dir)
    commit = git_commit()  # the code the run starts from
    os.makedirs(OUT, exist_ok=True)
    if args.spark_only:
        section = spark_section(args.spark_records, args.partitions)
        update = {"spark_hudi": section, **vs_spark(section)}
        merge_results(update)
        print(json.dumps({k: v for k, v in update.items() if k != "spark_hudi"}, indent=2))
        return
    events_dir, files = workload(args.records, args.partitions)
    payload_bytes = sum(os.path.getsize(f) for f in files)
    print(f"workload: {len(files)} ESM payloads, {payload_bytes / 1e6:.0f} MB, {args.records:,} records", flush=True)
    if args.process_only:
        process = process_section(files, events_dir, args.records)
        merge_results({"process": process, **vs_process(process)})
        print(json.dumps(process, indent=2))
        return
    if args.avro_only:
        avro = merge_results({"avro": avro_section(files, args.records)})["avro"]
        print(json.dumps({k: v for k, v in avro.items() if not isinstance(v, dict)}, indent=2))
        return

    # (a) writer core, insert; (b) pyarrow; (c) delta-rs — alternated so that a burst of other load hits all.
    bench_writer = os.path.join(REL, "examples", "bench_writer")
    out, _, rss = run_measured([bench_writer, "insert", PROPS, fresh(os.path.join(OUT, "t-insert"))] + files)
    ours = last_json(out)
    ours["peak_rss_mb"] = rss
    print("ours insert:", ours, flush=True)
    out, _, rss = run_measured([PY, os.path.join(ROOT, "bench", "peers.py"), "pyarrow",
                                fresh(os.path.join(OUT, "pyarrow"))] + files)
    pyarrow = last_json(out)
    pyarrow["peak_rss_mb"] = rss
    print("pyarrow:", pyarrow, flush=True)
    out, _, rss = run_measured([PY, os.path.join(ROOT, "bench", "peers.py"), "deltalake",
                                fresh(os.path.join(OUT, "delta"))] + files)
    delta = last_json(out)
    delta["peak_rss_mb"] = rss
    print("deltalake:", delta, flush=True)
    out, _, rss = run_measured([bench_writer, "upsert", PROPS, fresh(os.path.join(OUT, "t-upsert"))] + files)
    upsert = last_json(out)
    upsert["peak_rss_mb"] = rss
    print("ours upsert:", upsert, flush=True)

    # (d) whole process: hudi-sink ingest against a Python script writing one parquet file.
    process = process_section(files, events_dir, args.records)

    # The release writer Lambda binary: cold start and one 6 MB payload end to end.
    largest = max(files, key=os.path.getsize)
    event = open(largest, "rb").read()
    init = []
    for i in range(args.init_runs):
        cfg = write_props(os.path.join(OUT, "writer.properties"), fresh(os.path.join(OUT, "t-writer")))
        ms, _, _ = writer_run(cfg, [])
        init.append(ms)
    cfg = write_props(os.path.join(OUT, "writer.properties"), fresh(os.path.join(OUT, "t-writer")))
    _, rss6, responses = writer_run(cfg, [event])
    ok = responses and responses[0][0].endswith("/response")
    if not ok:
        raise SystemExit(f"writer did not answer the 6 MB payload with a response: {responses[:1]}")
    committed = json.loads(responses[0][1])
    writer_bin = os.path.join(REL, "hudi-sink-writer")

    requests = request_counts()
    avro = avro_section(files, args.records)

    json_mb = ours["json_bytes"] / 1e6
    results = {
        "records": ours["records"],
        "json_mb": json_mb,
        "event_files": len(files),
        "payload_mb": payload_bytes / 1e6,
        "records_per_s": ours["records_per_s"],
        "json_mb_per_s": ours["json_mb_per_s"],
        "vs_pyarrow": ours["records_per_s"] / pyarrow["records_per_s"],
        # pyarrow's clock starts after the envelope is parsed; ours includes it (`envelope_seconds`).
        "vs_pyarrow_without_envelope": ours["records"] / (ours["seconds"] - ours["envelope_seconds"])
        / pyarrow["records_per_s"],
        "stage_seconds": {k: ours[k] for k in ("envelope_seconds", "values_seconds", "write_seconds")},
        **vs_process(process),
        "vs_deltalake": ours["records_per_s"] / delta["records_per_s"],
        "peak_rss_mb_6mb_payload": rss6,
        "payload_6mb": {"file": os.path.basename(largest), "bytes": len(event),
                        "records": committed.get("records_in"), "instant": committed.get("instant")},
        "init_ms": statistics.median(init),
        "init_ms_runs": init,
        "binary_mb": os.path.getsize(writer_bin) / 1e6,
        "ours_insert": ours,
        "ours_upsert": upsert,
        "pyarrow": pyarrow,
        "deltalake": delta,
        "process": process,
        "avro": avro,
        "requests_per_begin_commit": requests,
        "machine": machine(),
        "single_cpu": cpu(),
    }
    gb_s_per_gb = (1000.0 / results["json_mb_per_s"]) * (LAMBDA_MB / 1024.0)
    results["lambda_cost_per_gb_json_usd"] = gb_s_per_gb * PRICE_GB_S
    # The Spark Hudi comparison, on its own (smaller) workload: Spark in local[1] takes minutes per operation.
    section = spark_section(args.spark_records, args.partitions)
    results.update({"spark_hudi": section, **vs_spark(section)})
    # Inline clustering with the release CLI: its CPU share, then its long run (bench/clustering.py).
    import clustering
    cli = os.path.join(REL, "hudi-sink")
    work = "/dev/shm/hudi-sink-bench-clustering" if os.path.isdir("/dev/shm") else os.path.join(OUT, "clustering")
    results.update(clustering.cpu_share(cli, args.clustering_runs, work))
    if args.clustering_batches:
        results.update(clustering.curve(cli, args.clustering_batches, work))
    # Which keys this run wrote: the keys of the other bench targets (longrun, mor_vs_cow, writers, ...) stay
    # from their own runs.
    results["run"] = {"finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
                      "records": args.records, "spark_records": args.spark_records, "keys": sorted(results)}
    results = merge_results(results)
    chart(results, os.path.join(ROOT, "bench", "chart.svg"))
    print(json.dumps({k: v for k, v in results.items() if not isinstance(v, dict)}, indent=2))


if __name__ == "__main__":
    main()
