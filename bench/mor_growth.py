"""`make bench-mor`: does an upsert batch cost what the batch is, or what the table is? MOR against COW.

Part 1, writer growth. For each table type (COPY_ON_WRITE, MERGE_ON_READ) one table (16 buckets x 6 partitions,
the trips schema) grows by MOR_LOAD_ROWS new keys per level, MOR_LEVELS times; at every level MOR_BATCHES upsert
batches of MOR_BATCH_ROWS rows (half updates of random stored keys, half new keys) each run in a fresh process
(`bench_growth batch`), which reports the batch's wall time, the bytes it wrote, the rows it wrote and the
process's peak RSS. Per table type: the curves against table rows, and the ratio of the last level to the first.

Part 2, compaction. One merge-on-read file group (non-partitioned, one bucket, ~450-byte rows) grows to each size
of MOR_GROUP_MB (in steps of 400,000 rows, compacted after every step); at each size MOR_COMPACT_LOG_ROWS rows of
updates are appended as logs and one compaction is measured (`bench_growth compact`): wall time, rows and MB per
second, peak RSS.

Merges "mor_vs_cow" and "compaction" into bench/results.json (keeping every other key) and draws
bench/mor_growth.svg. Nothing is asserted.

    MOR_LEVELS=5 MOR_LOAD_ROWS=1000000 python bench/mor_growth.py

Needs the example built with the profiling profile (`make bench-mor` builds it).
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import cpu, machine  # noqa: E402  (the conventions of `make bench`: one pinned CPU, machine facts)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "mor_growth")
TARGET = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"))
BIN = os.path.join(TARGET, "profiling", "examples", "bench_growth")
RESULTS = os.path.join(ROOT, "bench", "results.json")
CHART = os.path.join(ROOT, "bench", "mor_growth.svg")

LEVELS = int(os.environ.get("MOR_LEVELS", "5"))
LOAD_ROWS = int(os.environ.get("MOR_LOAD_ROWS", "1000000"))
BATCH_ROWS = int(os.environ.get("MOR_BATCH_ROWS", "20000"))
BATCHES = int(os.environ.get("MOR_BATCHES", "3"))
GROUP_MB = [int(x) for x in os.environ.get("MOR_GROUP_MB", "128,256,512,1024").split(",") if x]
COMPACT_LOG_ROWS = int(os.environ.get("MOR_COMPACT_LOG_ROWS", "50000"))
NOTE_BYTES = 420


def run(args, env=None):
    cmd = ["taskset", "-c", str(cpu()), BIN] + [str(a) for a in args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, **(env or {})})
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def writer_growth(table_type):
    table = os.path.join(OUT, table_type.lower())
    shutil.rmtree(table, ignore_errors=True)
    stored, ts, points = 0, 1, []
    for level in range(LEVELS):
        run(["load", table_type, table, stored, LOAD_ROWS, ts])
        stored += LOAD_ROWS
        for _ in range(BATCHES):
            ts += 1
            p = run(["batch", table_type, table, stored, BATCH_ROWS, ts])
            p["level"] = level
            stored += p["new_rows"]
            points.append(p)
            print(f"{table_type:14} rows={p['table_rows']:>9} {p['seconds']:7.3f}s {p['bytes_written'] / 1e6:8.2f} MB "
                  f"written ({p['bytes_written_per_batch_byte']:.2f}x the batch) peak {p['peak_rss_mb']:.0f} MB",
                  flush=True)
    return points


def level_median(points, level, key):
    vals = sorted(p[key] for p in points if p["level"] == level)
    return vals[len(vals) // 2]


def prune(table):
    """Removes the slices compaction superseded (older base files and every log file once compacted), as the
    cleaner would, so that the sizes measured are the latest slice's."""
    names = os.listdir(table)
    bases = sorted(f for f in names if f.endswith(".parquet"))
    for f in bases[:-1] + [f for f in names if ".log." in f]:
        os.remove(os.path.join(table, f))


def compaction():
    table = os.path.join(OUT, "compaction")
    shutil.rmtree(table, ignore_errors=True)
    env = {"BENCH_SINGLE_GROUP": "1", "BENCH_NOTE_BYTES": str(NOTE_BYTES)}
    stored, ts, points = 0, 1, []
    for mb in GROUP_MB:
        while True:
            base = sum(os.path.getsize(os.path.join(table, f)) for f in os.listdir(table)
                       if f.endswith(".parquet")) if os.path.isdir(table) else 0
            if base >= mb * 1024 * 1024:
                break
            # Grow and compact (not measured): the newest base file is the group's size. The first load
            # creates the base file; the later ones append logs.
            run(["load", "MERGE_ON_READ", table, stored, 400_000, ts], env)
            stored += 400_000
            ts += 1
            if stored > 400_000:
                run(["compact", "MERGE_ON_READ", table, 0, 0, 0], env)
            prune(table)
        ts += 1
        # Updates of the oldest keys, appended as logs, then the measured compaction.
        run(["batch", "MERGE_ON_READ", table, stored, 2 * COMPACT_LOG_ROWS, ts], env)
        p = run(["compact", "MERGE_ON_READ", table, 0, 0, 0], env)
        stored += COMPACT_LOG_ROWS
        p["group_mb"] = mb
        points.append(p)
        print(f"compaction     base {p['base_bytes_before'] / 1048576:7.0f} MB + logs {p['log_bytes_before'] / 1048576:5.0f} MB:"
              f" {p['seconds']:6.2f}s {p['rows_per_s']:>9.0f} rows/s {p['mb_read_per_s']:6.1f} MB/s peak {p['peak_rss_mb']:.0f} MB",
              flush=True)
        prune(table)
    return points


def chart(result, path):
    w, h, pad = 760, 300, 50
    series = result["mor_vs_cow"]["points"]
    xs = [p["table_rows"] for pts in series.values() for p in pts]
    ys = [p["bytes_written"] / 1e6 for pts in series.values() for p in pts]
    xmax, ymax = max(xs), max(ys) * 1.1
    colors = {"COPY_ON_WRITE": "#d62728", "MERGE_ON_READ": "#1f77b4"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="18">MB written per {BATCH_ROWS:,}-row upsert batch against table rows</text>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - 20}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{pad}" y2="30" stroke="black"/>',
           f'<text x="{w - 160}" y="{h - 15}">table rows (max {xmax:,})</text>',
           f'<text x="5" y="40">{ymax:.0f} MB</text>']
    for i, (name, pts) in enumerate(series.items()):
        coords = " ".join(f"{pad + p['table_rows'] / xmax * (w - pad - 30):.1f},"
                          f"{h - pad - p['bytes_written'] / 1e6 / ymax * (h - pad - 40):.1f}" for p in pts)
        out.append(f'<polyline fill="none" stroke="{colors.get(name, "black")}" stroke-width="2" points="{coords}"/>')
        out.append(f'<text x="{pad + 10}" y="{50 + 16 * i}" fill="{colors.get(name, "black")}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if not os.path.isfile(BIN):
        raise SystemExit(f"{BIN} missing: run `make bench-mor`")
    os.makedirs(OUT, exist_ok=True)
    points = {t: writer_growth(t) for t in ("COPY_ON_WRITE", "MERGE_ON_READ")}
    growth = {}
    for t, pts in points.items():
        first, last = 0, LEVELS - 1
        growth[t] = {
            "seconds_last_over_first": level_median(pts, last, "seconds") / level_median(pts, first, "seconds"),
            "bytes_last_over_first": level_median(pts, last, "bytes_written") / level_median(pts, first, "bytes_written"),
            "rss_last_over_first": level_median(pts, last, "peak_rss_mb") / level_median(pts, first, "peak_rss_mb"),
            "bytes_per_batch_byte_last": level_median(pts, last, "bytes_written_per_batch_byte"),
        }
    last = LEVELS - 1
    side_by_side = {
        "cow_over_mor_seconds_at_largest": level_median(points["COPY_ON_WRITE"], last, "seconds")
        / level_median(points["MERGE_ON_READ"], last, "seconds"),
        "cow_over_mor_bytes_at_largest": level_median(points["COPY_ON_WRITE"], last, "bytes_written")
        / level_median(points["MERGE_ON_READ"], last, "bytes_written"),
        "cow_over_mor_rss_at_largest": level_median(points["COPY_ON_WRITE"], last, "peak_rss_mb")
        / level_median(points["MERGE_ON_READ"], last, "peak_rss_mb"),
    }
    compact = compaction()
    result = {
        "mor_vs_cow": {
            "machine": machine(), "levels": LEVELS, "load_rows": LOAD_ROWS, "batch_rows": BATCH_ROWS,
            "batches_per_level": BATCHES, "growth": growth, "side_by_side": side_by_side, "points": points,
        },
        "compaction": {"log_rows": COMPACT_LOG_ROWS, "note_bytes": NOTE_BYTES, "points": compact},
    }
    for t, g in growth.items():
        print(f"{t}: last/first level: time {g['seconds_last_over_first']:.2f}x, bytes {g['bytes_last_over_first']:.2f}x, "
              f"peak RSS {g['rss_last_over_first']:.2f}x; bytes per batch byte {g['bytes_per_batch_byte_last']:.2f}")
    print("at the largest table, COW/MOR:", {k: round(v, 1) for k, v in side_by_side.items()})
    existing = {}
    if os.path.isfile(RESULTS):
        with open(RESULTS) as f:
            existing = json.load(f)
    existing.update(result)
    with open(RESULTS, "w") as f:
        json.dump(existing, f, indent=1)
        f.write("\n")
    chart(result, CHART)


if __name__ == "__main__":
    main()
