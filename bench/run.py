"""`make bench`: one workload, every contender single-threaded (pinned to one CPU) in one run, side by side.

Writes bench/results.json and bench/chart.svg. Ratios are taken within this run only (the machine is noisy:
other builds may be running), so compare ratios, not absolute figures, across runs. Nothing is asserted.

    python bench/run.py [--records N] [--skip-build]

Needs the release binaries (`make bench` builds them): target/release/hudi-sink, target/release/hudi-sink-writer,
target/release/examples/bench_writer.
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
# Arm64 Lambda: price per GB-second and the memory size that gives one full vCPU.
PRICE_GB_S = 0.0000133334
LAMBDA_MB = 1769


def cpu():
    """One CPU to pin every contender to (the same one for all, so they compete alike with other load)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1]


def run_measured(cmd, env=None):
    """Like run_child, with the peak RSS from wait4 (the child's own, not this process's)."""
    started = time.perf_counter()
    p = subprocess.Popen(["taskset", "-c", str(cpu())] + cmd, cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = p.stdout.read()
    stderr = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if p.returncode != 0:
        sys.stderr.write(stderr.decode(errors="replace")[-4000:])
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    return stdout.decode(), wall, usage.ru_maxrss / 1024.0


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--init-runs", type=int, default=7)
    ap.add_argument("--process-only", action="store_true",
                    help="run only the whole-process comparison and merge it into bench/results.json")
    ap.add_argument("--avro-only", action="store_true",
                    help="run only the Avro comparison and merge it into bench/results.json")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    events_dir = os.path.join(OUT, f"events-{args.records}")
    if not os.path.isdir(events_dir):
        subprocess.run([os.path.join(REL, "hudi-sink"), "generate", "--schema", "bench", "--records",
                        str(args.records), "--partitions", str(args.partitions), "--records-per-file", "10000",
                        "--update-ratio", "0", "--delete-ratio", "0", "--tombstone-ratio", "0",
                        "--late-ratio", "0", "--out", events_dir], check=True)
    files = sorted(os.path.join(events_dir, f) for f in os.listdir(events_dir) if f.endswith(".json"))
    payload_bytes = sum(os.path.getsize(f) for f in files)
    print(f"workload: {len(files)} ESM payloads, {payload_bytes / 1e6:.0f} MB, {args.records:,} records", flush=True)
    if args.process_only:
        path = os.path.join(ROOT, "bench", "results.json")
        results = json.load(open(path))
        results["process"] = process_section(files, events_dir, args.records)
        results["vs_pyarrow_process"] = results["process"]["pyarrow_seconds"] / results["process"]["ours_seconds"]
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
        print(json.dumps(results["process"], indent=2))
        return
    if args.avro_only:
        path = os.path.join(ROOT, "bench", "results.json")
        results = json.load(open(path)) if os.path.exists(path) else {}
        results["avro"] = avro_section(files, args.records)
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
        print(json.dumps({k: v for k, v in results["avro"].items() if not isinstance(v, dict)}, indent=2))
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
        "vs_pyarrow_process": process["pyarrow_seconds"] / process["ours_seconds"],
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
    # Keep what `make bench-longrun` (bench/longrun.py) merged into the same file.
    previous_path = os.path.join(ROOT, "bench", "results.json")
    if os.path.exists(previous_path):
        previous = json.load(open(previous_path))
        results.update({k: previous[k] for k in ("longrun", "longrun_growth") if k in previous})
    with open(os.path.join(ROOT, "bench", "results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    chart(results, os.path.join(ROOT, "bench", "chart.svg"))
    print(json.dumps({k: v for k, v in results.items() if not isinstance(v, dict)}, indent=2))


if __name__ == "__main__":
    main()
