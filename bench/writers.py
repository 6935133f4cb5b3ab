"""`make bench-writers`: how the interval commit scales with concurrent writers on one table.

Starts a moto server (S3 + DynamoDB) on 127.0.0.1 and runs `bench_writers` (crates/hudi-sink/examples) once per
configuration, in a fresh process each: K writers (one Kafka partition each, each its own sink, in-process
coordinator and DynamoDB lock client) upsert batches of WRITERS_RECORDS records into one table on moto S3 for
WRITERS_DURATION_S seconds, every S3 call delayed by WRITERS_LATENCY_MS. Configurations: every table type of
WRITERS_TABLE_TYPES x interval of WRITERS_INTERVALS_MS x K of WRITERS_K, plus K=1 at interval 0 (the per-batch
protocol: one instant per batch) per table type as the baseline. The order interleaves table types and K, and
WRITERS_ROUNDS > 1 repeats the whole set (medians are reported), so that machine noise spreads evenly.

Merges "writers" into bench/results.json (keeping every other key): per configuration the example's JSON, and
per table type and interval a table of records/s, ratio to K=1 at the same interval, ratio to the per-batch
baseline, instants per minute, lock hold, window wait and contributions per instant. Draws bench/writers.svg.
Nothing is asserted.

    WRITERS_DURATION_S=40 WRITERS_K=1,2,4,8,16 .venv/bin/python bench/writers.py

Needs the example built with the profiling profile (`make bench-writers` builds it).
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import machine  # noqa: E402  (the machine facts of `make bench`)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"))
BIN = os.path.join(TARGET, "profiling", "examples", "bench_writers")
RESULTS = os.path.join(ROOT, "bench", "results.json")
CHART = os.path.join(ROOT, "bench", "writers.svg")
MOTO = os.path.join(ROOT, "tests", "python", "moto_server.py")


def env_list(name, default, conv=int):
    return [conv(x) for x in os.environ.get(name, default).split(",") if x.strip()]


KS = env_list("WRITERS_K", "1,2,4,8,16")
INTERVALS = env_list("WRITERS_INTERVALS_MS", "5000")
TABLE_TYPES = env_list("WRITERS_TABLE_TYPES", "MERGE_ON_READ,COPY_ON_WRITE", str)
DURATION_S = float(os.environ.get("WRITERS_DURATION_S", "60"))
RECORDS = int(os.environ.get("WRITERS_RECORDS", "1000"))
LATENCY_MS = int(os.environ.get("WRITERS_LATENCY_MS", "20"))
ROUNDS = int(os.environ.get("WRITERS_ROUNDS", "1"))


def start_moto():
    proc = subprocess.Popen([sys.executable, MOTO], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    port = int(proc.stdout.readline().strip())
    return proc, f"http://127.0.0.1:{port}"


def configurations():
    """(table type, interval, K) in an order that interleaves table types and writer counts."""
    out = []
    for t in TABLE_TYPES:
        out.append((t, 0, 1))
    for k in KS:
        for interval in INTERVALS:
            for t in TABLE_TYPES:
                out.append((t, interval, k))
    return out


def run_one(endpoint, table_type, interval, k):
    cmd = [BIN, "--endpoint", endpoint, "--writers", k, "--interval-ms", interval, "--latency-ms", LATENCY_MS,
           "--duration-s", DURATION_S, "--records", RECORDS, "--table-type", table_type]
    # A configuration that does not finish within three durations plus a minute is reported as timed out.
    try:
        out = subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True,
                             timeout=3 * DURATION_S + 60)
    except subprocess.TimeoutExpired:
        return {"writers": k, "interval_ms": interval, "table_type": table_type, "timed_out": True}
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def median_of(runs, path):
    vals = []
    for r in runs:
        v = r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if v is not None:
            vals.append(v)
    return statistics.median(vals) if vals else None


def figures(runs):
    return {
        "records_per_s": median_of(runs, ["records_per_s"]),
        "instants_per_min": median_of(runs, ["instants_per_min"]),
        "lock_hold_ms_p50": median_of(runs, ["lock_hold_ms", "p50"]),
        "lock_hold_ms_p90": median_of(runs, ["lock_hold_ms", "p90"]),
        "lock_hold_ms_max": median_of(runs, ["lock_hold_ms", "max"]),
        "lock_hold_share": median_of(runs, ["lock_hold_share"]),
        "lock_wait_ms_p50": median_of(runs, ["lock_wait_ms", "p50"]),
        "window_wait_ms_p50": median_of(runs, ["window_wait_ms", "p50"]),
        "window_wait_ms_p90": median_of(runs, ["window_wait_ms", "p90"]),
        "contributions_per_instant_p50": median_of(runs, ["contributions_per_instant", "p50"]),
        "batch_ms_p50": median_of(runs, ["batch_ms", "p50"]),
        "excluded_members": median_of(runs, ["excluded_members"]),
        "conflicts": median_of(runs, ["conflicts"]),
        "compactions": median_of(runs, ["compactions"]),
        "carried_logs": median_of(runs, ["carried_logs"]),
        "errors": median_of(runs, ["errors"]),
    }


def summarise(runs_by_config):
    tables = {}
    for t in TABLE_TYPES:
        base = runs_by_config.get((t, 0, 1))
        base_rps = figures(base)["records_per_s"] if base else None
        per_interval = {}
        for interval in INTERVALS:
            rows = {}
            one = runs_by_config.get((t, interval, 1))
            one_rps = figures(one)["records_per_s"] if one else None
            for k in KS:
                runs = runs_by_config.get((t, interval, k))
                if not runs:
                    continue
                runs = [r for r in runs if not r.get("timed_out")]
                if not runs:
                    rows[str(k)] = {"timed_out": True}
                    continue
                f = figures(runs)
                f["ratio_to_k1"] = f["records_per_s"] / one_rps if one_rps else None
                f["ratio_to_per_batch_k1"] = f["records_per_s"] / base_rps if base_rps else None
                f["instants_per_interval"] = f["instants_per_min"] / (60_000 / interval)
                rows[str(k)] = f
            per_interval[str(interval)] = rows
        tables[t] = {"per_batch_k1": figures(base) if base else None, "by_interval": per_interval}
    return tables


def chart(summary, path):
    w, h, pad = 760, 320, 55
    colors = {"MERGE_ON_READ": "#1f77b4", "COPY_ON_WRITE": "#d62728"}
    dashes = ["", "6,4", "2,3"]
    series = []
    for t, s in summary.items():
        for i, (interval, rows) in enumerate(s["by_interval"].items()):
            pts = [(int(k), f["records_per_s"]) for k, f in rows.items() if f.get("records_per_s") is not None]
            when = f" (measured {s['measured']})" if s.get("measured") else ""
            series.append((f"{t} interval {interval} ms{when}", colors.get(t, "black"), dashes[i % 3], pts))
    kmax = max(KS)
    ymax = max([y for _, _, _, pts in series for _, y in pts] +
               [s["per_batch_k1"]["records_per_s"] for s in summary.values() if s["per_batch_k1"]]) * 1.1
    x = lambda k: pad + (k / kmax) * (w - pad - 30)
    y = lambda v: h - pad - v / ymax * (h - pad - 40)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="18">Committed records/s against concurrent writers on one table '
           f'(moto S3 + {LATENCY_MS} ms per request, {RECORDS:,}-record batches)</text>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - 20}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{pad}" y2="30" stroke="black"/>',
           f'<text x="{w - 140}" y="{h - 15}">writers (K)</text>',
           f'<text x="5" y="40">{ymax:,.0f}</text>', f'<text x="5" y="{h - pad}">0</text>']
    for k in KS:
        out.append(f'<text x="{x(k) - 4:.1f}" y="{h - pad + 16}">{k}</text>')
    for i, (name, color, dash, pts) in enumerate(series):
        coords = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in pts)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}" points="{coords}"/>')
        for k, v in pts:
            out.append(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="{pad + 10}" y="{50 + 16 * i}" fill="{color}">{name}</text>')
    for j, (t, s) in enumerate(summary.items()):
        if s["per_batch_k1"]:
            v = s["per_batch_k1"]["records_per_s"]
            color = colors.get(t, "black")
            out.append(f'<line x1="{pad}" y1="{y(v):.1f}" x2="{w - 20}" y2="{y(v):.1f}" stroke="{color}" '
                       f'stroke-opacity="0.5" stroke-dasharray="1,3"/>')
            out.append(f'<text x="{w - 260}" y="{y(v) - 4:.1f}" fill="{color}">{t} per-batch protocol, K=1</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if not os.path.isfile(BIN):
        raise SystemExit(f"{BIN} missing: run `make bench-writers`")
    proc, endpoint = start_moto()
    runs_by_config = {}
    try:
        for rnd in range(ROUNDS):
            for t, interval, k in configurations():
                r = run_one(endpoint, t, interval, k)
                runs_by_config.setdefault((t, interval, k), []).append(r)
                if r.get("timed_out"):
                    print(f"round {rnd} {t:14} interval {interval:>5} ms K={k:>2}: timed out", flush=True)
                    continue
                print(f"round {rnd} {t:14} interval {interval:>5} ms K={k:>2}: {r['records_per_s']:8.0f} rec/s "
                      f"{r['instants_per_min']:5.1f} instants/min, contributions p50 "
                      f"{r['contributions_per_instant']['p50']}, lock hold p50 {r['lock_hold_ms']['p50']:.0f} ms "
                      f"max {r['lock_hold_ms']['max']:.0f} ms, compactions {r.get('compactions')}, "
                      f"window wait p50 {r['window_wait_ms']['p50']} ms, excluded {r['excluded_members']}, "
                      f"conflicts {r['conflicts']}, errors {r['errors']}", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    summary = summarise(runs_by_config)
    result = {"writers": {
        "machine": machine(), "duration_s": DURATION_S, "records_per_batch": RECORDS, "latency_ms": LATENCY_MS,
        "rounds": ROUNDS, "buckets": 16, "keys": 100_000,
        "lock_hold": "from the response of the acquiring DynamoDB PutItem to the sending of the releasing "
                     "DeleteItem, per lock acquisition (SDK interceptor on each writer's DynamoDB client)",
        "summary": summary,
        "runs": [dict(r, round=i) for runs in runs_by_config.values() for i, r in enumerate(runs)],
    }}
    existing = {}
    if os.path.isfile(RESULTS):
        with open(RESULTS) as f:
            existing = json.load(f)
    # Table types this run left out (WRITERS_TABLE_TYPES) keep their figures of the run that measured them.
    previous = existing.get("writers", {})
    for t, s in previous.get("summary", {}).items():
        if t not in summary:
            summary[t] = dict(s, measured=previous.get("measured", "an earlier run"))
            result["writers"]["runs"].extend(r for r in previous.get("runs", []) if r.get("table_type") == t)
    result["writers"]["measured"] = time.strftime("%Y-%m-%d")
    existing.update(result)
    with open(RESULTS, "w") as f:
        json.dump(existing, f, indent=1)
        f.write("\n")
    chart(summary, CHART)
    for t, s in summary.items():
        for interval, rows in s["by_interval"].items():
            for k, f in rows.items():
                if f.get("timed_out"):
                    print(f"{t} {interval} ms K={k}: timed out")
                    continue
                print(f"{t} {interval} ms K={k}: {f['records_per_s']:.0f} rec/s, x{f['ratio_to_k1']:.2f} of K=1, "
                      f"{f['instants_per_min']:.1f} instants/min")


if __name__ == "__main__":
    main()
