"""`make bench-longrun`: does batch 20,000 cost what batch 100 costs? Many small upsert batches into one table.

One `hudi-sink ingest` process per backend feeds a generated stream of small ESM payloads (20 records each, keys
drawn from a fixed space of 2,000, so every batch updates existing bucket file groups) through the sink one payload
at a time, exactly as a warm writer Lambda would, with the default table-service settings. The CLI's
`--report-jsonl` gives the wall time of every batch. Backends:

- local: `examples/local.properties` as is (local disk, in-process coordinator, file lock), LONGRUN_BATCHES
  batches (default 20,000);
- s3: the same properties on moto (S3 + DynamoDB, started here on 127.0.0.1 and stopped at the end), DynamoDB lock
  through `hoodie.write.lock.dynamodb.*`, LONGRUN_S3_BATCHES batches (default 1,000); 0 skips a backend.

Per backend it records the median batch time of the first and the last tenth and their ratio (`growth`), what is
on storage at the end (data files, `.hoodie/` entries, timeline entries) against the live snapshot (the latest file
slices as hudi-rs lists them, sized from the storage listing), and checks that the table hudi-rs reads equals the
generator's model row for row. Merges `longrun` and `longrun_growth` (the local backend's growth; goal <= 1.2) into
bench/results.json, keeping every other key, and draws bench/longrun.svg. Nothing is asserted about speed; the run
fails only if a table differs from its model.

    LONGRUN_BATCHES=600 LONGRUN_S3_BATCHES=100 python bench/longrun.py

Needs the release CLI (`make bench-longrun` builds it) and the test venv's Python (hudi, moto, boto3).
"""

import bisect
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import cpu, machine  # noqa: E402  (the conventions of `make bench`: one pinned CPU, machine facts)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "longrun")
TARGET = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"))
CLI = os.path.join(TARGET, "release", "hudi-sink")
PROPS = os.path.join(ROOT, "examples", "local.properties")
READER = os.path.join(ROOT, "tests", "python", "hudi_read.py")
PY = sys.executable
RECORDS_PER_BATCH = 20
KEYS = 2000
KAFKA_PARTITIONS = 4
SEED = 42
# Credentials moto accepts; never real ones (AWS_PROFILE is dropped from the children's environment).
MOTO_ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "testtesttest", "AWS_REGION": "us-east-1"}


def stream(batches):
    """The generated stream of `batches` payloads and its model, made once per size (cached under bench/out)."""
    events = os.path.join(OUT, f"events-{batches}")
    model = os.path.join(OUT, f"model-{batches}.jsonl")
    if os.path.isdir(events) and os.path.isfile(model):
        return events, model
    tmp = events + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([CLI, "generate", "--out", tmp, "--records", str(batches * RECORDS_PER_BATCH),
                    "--keys", str(KEYS), "--partitions", str(KAFKA_PARTITIONS),
                    "--records-per-file", str(RECORDS_PER_BATCH), "--seed", str(SEED), "--model", model + ".tmp",
                    "--model-batch-bytes", "0"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    made = len([f for f in os.listdir(tmp) if f.endswith(".json")])
    if made != batches:
        raise SystemExit(f"generate wrote {made} event files, expected {batches}")
    os.replace(model + ".tmp", model)
    os.rename(tmp, events)
    return events, model


def ingest(name, events, batches, sets, env):
    """Runs one `hudi-sink ingest` over every event file; returns its --report-jsonl lines and wall seconds."""
    work = os.path.join(OUT, name)
    os.makedirs(work, exist_ok=True)
    report = os.path.join(work, "report.jsonl")
    log = os.path.join(work, "ingest.log")
    # Every event file is its own batch and window (1 ms slots: no wait), so that each line is one commit.
    cmd = ["taskset", "-c", str(cpu()), CLI, "ingest", "--config", PROPS, "--report-jsonl", report,
           "--commit-interval-ms", "1", "--max-batch-bytes", "1"]
    for kv in sets:
        cmd += ["--set", kv]
    cmd.append(events)
    started = time.perf_counter()
    lines = []
    with open(log, "w") as logf:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=logf, stderr=subprocess.STDOUT)
        last_print = started
        while True:
            done = p.poll() is not None
            lines = read_lines(report, lines)
            now = time.perf_counter()
            if done or now - last_print >= 30:
                last_print = now
                recent = [l["ms"] for l in lines[-100:]]
                tail = f", median of the last {len(recent)}: {statistics.median(recent):.1f} ms" if recent else ""
                print(f"  {name}: {len(lines)}/{batches} batches in {now - started:.0f} s{tail}", flush=True)
            if done:
                break
            time.sleep(2)
    wall = time.perf_counter() - started
    if p.returncode != 0:
        sys.stderr.write(open(log).read()[-4000:])
        raise SystemExit(f"{name}: hudi-sink ingest failed ({p.returncode}); log: {log}")
    if len(lines) != batches:
        raise SystemExit(f"{name}: {len(lines)} report lines for {batches} event files")
    return lines, wall


def read_lines(path, have):
    """`have` plus the complete lines appended to `path` since (the CLI flushes whole lines)."""
    if not os.path.exists(path):
        return have
    with open(path) as f:
        text = f.read()
    complete = text.splitlines()[: text.count("\n")]
    return have + [json.loads(l) for l in complete[len(have):]]


def classify(objects):
    """Storage facts from {relative path: size}: data files, .hoodie/ entries, timeline entries, other files."""
    s = {"data_files": 0, "data_bytes": 0, "hoodie_entries": 0, "hoodie_bytes": 0, "timeline_entries": 0,
         "other_files": 0, "other_bytes": 0}
    for rel, size in objects.items():
        if rel.startswith(".hoodie/"):
            s["hoodie_entries"] += 1
            s["hoodie_bytes"] += size
            if "/" not in rel[len(".hoodie/"):]:
                s["timeline_entries"] += 1
        elif rel.endswith(".parquet"):
            s["data_files"] += 1
            s["data_bytes"] += size
        else:  # partition metadata, anything else
            s["other_files"] += 1
            s["other_bytes"] += size
    return s


def local_objects(base):
    out = {}
    for dirpath, _, files in os.walk(base):
        for f in files:
            full = os.path.join(dirpath, f)
            out[os.path.relpath(full, base)] = os.path.getsize(full)
    return out


def s3_objects(s3, bucket, prefix):
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            out[o["Key"][len(prefix) + 1:]] = o["Size"]
    return out


def hudi_rs(table, args, env):
    """hudi-rs (the pinned `hudi` package) through tests/python/hudi_read.py; returns its JSON and seconds."""
    started = time.perf_counter()
    p = subprocess.run([PY, READER, table] + args, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hudi-rs failed on {table} {args}: {p.stderr[-3000:]}")
    return json.loads(p.stdout), time.perf_counter() - started


def check(table, objects, model, env):
    """Live snapshot (latest slices per hudi-rs) and the model check: rows without meta columns, by key."""
    slices, slices_s = hudi_rs(table, ["file_slices"], env)
    live_files, live_bytes, missing = 0, 0, []
    for s in slices["file_slices"]:
        rel = f'{s["partition_path"]}/{s["file_name"]}' if s["partition_path"] else s["file_name"]
        live_files += 1
        if rel in objects:
            live_bytes += objects[rel]
        else:
            missing.append(rel)
    snap, read_s = hudi_rs(table, ["snapshot"], env)
    got = {}
    for r in snap["rows"]:
        got[r["uuid"]] = {k: v for k, v in r.items() if k == "_hoodie_is_deleted" or not k.startswith("_hoodie_")}
    want = {}
    with open(model) as f:
        for line in f:
            row = json.loads(line)
            want[row["uuid"]] = row
    return {
        "live_files": live_files, "live_bytes": live_bytes, "live_files_not_on_storage": len(missing),
        "rows": len(snap["rows"]), "model_rows": len(want),
        "keys_match_model": len(got) == len(snap["rows"]) and set(got) == set(want),
        "rows_match_model": len(got) == len(snap["rows"]) and got == want,
        "hudi_rs_file_slices_s": slices_s, "hudi_rs_snapshot_s": read_s,
    }


def tenth_medians(ms):
    tenth = max(1, len(ms) // 10)
    first, last = statistics.median(ms[:tenth]), statistics.median(ms[-tenth:])
    return first, last, tenth


def summary(lines, wall, storage, live):
    ms = [l["ms"] for l in lines]
    first, last, tenth = tenth_medians(ms)
    out = {
        "batches": len(ms),
        "records_per_batch": RECORDS_PER_BATCH,
        "keys": KEYS,
        "commits": sum(1 for l in lines if l["report"].get("instant")),
        "seconds": wall,
        "tenth": tenth,
        "first_tenth_median_ms": first,
        "last_tenth_median_ms": last,
        "growth": last / first,
        "median_ms": statistics.median(ms),
        "max_ms": max(ms),
        "storage": storage,
        "timeline_entries": storage["timeline_entries"],
    }
    out.update(live)
    out["files_vs_live"] = storage["data_files"] / live["live_files"] if live["live_files"] else None
    out["bytes_vs_live"] = storage["data_bytes"] / live["live_bytes"] if live["live_bytes"] else None
    return out


def run_local(batches):
    events, model = stream(batches)
    base = os.path.join(OUT, "local", "trips")
    shutil.rmtree(os.path.join(OUT, "local"), ignore_errors=True)
    env = dict(os.environ, RUST_LOG="warn")
    lines, wall = ingest("local", events, batches,
                         [f"hoodie.base.path={base}", f"hudi.sink.dead.letter.path={base}-dead-letters"], env)
    objects = local_objects(base)
    return summary(lines, wall, classify(objects), check(base, objects, model, env)), lines


class Moto:
    """moto (S3 + DynamoDB) on a free port of 127.0.0.1, through the tests' tests/python/moto_server.py, which
    exits when its stdin closes: it cannot outlive this script."""

    def __init__(self):
        self.p = subprocess.Popen([PY, os.path.join(ROOT, "tests", "python", "moto_server.py")], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.p.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SystemExit(f"moto did not start: {line!r}")
        self.endpoint = f"http://127.0.0.1:{line}"

    def stop(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def run_s3(batches):
    import boto3

    events, model = stream(batches)
    env = {k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}
    env.update(MOTO_ENV)
    env["RUST_LOG"] = "warn"
    moto = Moto()
    try:
        env["AWS_ENDPOINT_URL_S3"] = moto.endpoint
        env["HUDI_S3_ENDPOINT"] = moto.endpoint  # for hudi_read.py
        kw = dict(endpoint_url=moto.endpoint, region_name=MOTO_ENV["AWS_REGION"],
                  aws_access_key_id=MOTO_ENV["AWS_ACCESS_KEY_ID"],
                  aws_secret_access_key=MOTO_ENV["AWS_SECRET_ACCESS_KEY"])
        s3 = boto3.client("s3", **kw)
        bucket, prefix, lock_table = "longrun", "tables/trips", "hudi-locks"
        s3.create_bucket(Bucket=bucket)
        boto3.client("dynamodb", **kw).create_table(
            TableName=lock_table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}])
        base = f"s3://{bucket}/{prefix}"
        sets = [f"hoodie.base.path={base}", f"hudi.sink.dead.letter.path=s3://{bucket}/dead-letters/trips",
                f"hoodie.write.lock.dynamodb.table={lock_table}",
                f"hoodie.write.lock.dynamodb.endpoint_url={moto.endpoint}",
                f"hoodie.write.lock.dynamodb.region={MOTO_ENV['AWS_REGION']}"]
        shutil.rmtree(os.path.join(OUT, "s3"), ignore_errors=True)
        lines, wall = ingest("s3", events, batches, sets, env)
        objects = s3_objects(s3, bucket, prefix)
        return summary(lines, wall, classify(objects), check(base, objects, model, env)), lines
    finally:
        moto.stop()


def rolling_median(values, window):
    """Median of each run of `window` consecutive values, ending at index window-1 .. len-1."""
    out, sorted_win = [], []
    for i, v in enumerate(values):
        bisect.insort(sorted_win, v)
        if i >= window:
            del sorted_win[bisect.bisect_left(sorted_win, values[i - window])]
        if i >= window - 1:
            n = len(sorted_win)
            out.append(sorted_win[n // 2] if n % 2 else (sorted_win[n // 2 - 1] + sorted_win[n // 2]) / 2)
    return out


def nice_step(span, ticks=5):
    raw = span / ticks
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def chart(panels, path):
    """A hand-written SVG (no plotting library, as bench/chart.svg): per backend, the rolling median of the batch
    time against the batch number, with the first- and last-tenth medians as dashed lines."""
    w, ph, left, right, top_pad = 760, 270, 70, 20, 58
    h = 40 + len(panels) * (ph + 36)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="10" y="22" font-size="15" font-weight="bold">Wall time per upsert batch ({RECORDS_PER_BATCH} '
           f'records, {KEYS:,} keys, default services)</text>']
    y0 = 40
    for name, label, ms, r in panels:
        window = min(100, max(5, len(ms) // 10))
        med = rolling_median(ms, window)
        step = max(1, len(med) // 800)
        pts = [(window + i, med[i]) for i in range(0, len(med), step)]
        if pts[-1][0] != len(ms):
            pts.append((len(ms), med[-1]))
        ymax = max(max(m for _, m in pts), r["first_tenth_median_ms"], r["last_tenth_median_ms"]) * 1.1
        ystep = nice_step(ymax)
        ymax = ystep * (int(ymax / ystep) + 1)
        xstep = nice_step(len(ms))
        px0, px1, py0, py1 = left, w - right, y0 + top_pad, y0 + ph
        X = lambda b: px0 + (px1 - px0) * b / len(ms)  # noqa: E731
        Y = lambda v: py1 - (py1 - py0) * v / ymax  # noqa: E731
        out.append(f'<text x="10" y="{y0 + 24}" font-size="13" font-weight="bold">{label}: {len(ms):,} batches, '
                   f'growth {r["growth"]:.2f}</text>')
        out.append(f'<text x="10" y="{y0 + 42}" fill="#555">line: rolling median of {window} batches; dashed: '
                   f'median of the first and of the last tenth ({r["tenth"]:,} batches each)</text>')
        out.append(f'<rect x="{px0}" y="{py0}" width="{px1 - px0}" height="{py1 - py0}" fill="none" stroke="#999"/>')
        v = 0.0
        while v <= ymax + 1e-9:
            out.append(f'<line x1="{px0}" y1="{Y(v):.1f}" x2="{px1}" y2="{Y(v):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{px0 - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g} ms</text>')
            v += ystep
        b = 0
        while b <= len(ms):
            out.append(f'<text x="{X(b):.1f}" y="{py1 + 16}" text-anchor="middle">{int(b):,}</text>')
            b += xstep
        out.append(f'<text x="{px1}" y="{py1 + 30}" text-anchor="end" fill="#555">batch number</text>')
        color = "#1f77b4" if name == "local" else "#ff7f0e"
        for key, tag in (("first_tenth_median_ms", "first tenth"), ("last_tenth_median_ms", "last tenth")):
            yv = Y(r[key])
            out.append(f'<line x1="{px0}" y1="{yv:.1f}" x2="{px1}" y2="{yv:.1f}" stroke="#555" '
                       f'stroke-dasharray="4 3"/>')
            out.append(f'<text x="{px1 - 4}" y="{yv - 4:.1f}" text-anchor="end" fill="#555">{tag} '
                       f'{r[key]:.1f} ms</text>')
        poly = " ".join(f"{X(bn):.1f},{Y(m):.1f}" for bn, m in pts)
        out.append(f'<polyline points="{poly}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        y0 += ph + 36
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    local_n = int(os.environ.get("LONGRUN_BATCHES", "20000"))
    s3_n = int(os.environ.get("LONGRUN_S3_BATCHES", "1000"))
    if not os.path.exists(CLI):
        raise SystemExit(f"{CLI} not found: `make bench-longrun` builds it")
    os.makedirs(OUT, exist_ok=True)
    started = time.perf_counter()
    longrun, panels = {}, []
    for name, label, n, run in (("local", "local disk, in-process coordinator, file lock", local_n, run_local),
                                ("s3", "moto S3 + DynamoDB lock", s3_n, run_s3)):
        if n <= 0:
            continue
        print(f"{name}: {n:,} batches of {RECORDS_PER_BATCH} records", flush=True)
        r, lines = run(n)
        longrun[name] = r
        panels.append((name, label, [l["ms"] for l in lines], r))
        print(f"{name}:", json.dumps({k: v for k, v in r.items() if not isinstance(v, dict)}), flush=True)
    if not longrun:
        raise SystemExit("LONGRUN_BATCHES and LONGRUN_S3_BATCHES are both 0: nothing to run")
    longrun["machine"] = machine()
    longrun["single_cpu"] = cpu()
    longrun["harness_seconds"] = time.perf_counter() - started

    path = os.path.join(ROOT, "bench", "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    results["longrun"] = longrun
    if "local" in longrun:
        results["longrun_growth"] = longrun["local"]["growth"]
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    chart(panels, os.path.join(ROOT, "bench", "longrun.svg"))
    print(f"longrun_growth (local; goal <= 1.2): {results.get('longrun_growth')}; "
          f"{longrun['harness_seconds']:.0f} s in all; bench/results.json, bench/longrun.svg")
    bad = [n for n in ("local", "s3") if n in longrun and not longrun[n]["rows_match_model"]]
    if bad:
        raise SystemExit(f"the table read by hudi-rs differs from the generator's model: {', '.join(bad)}")


if __name__ == "__main__":
    main()
