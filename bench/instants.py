"""`make bench-instants`: what one instant costs on the embedded default (local disk, in-process coordinator, file
lock), against the number of instants.

`hudi-sink ingest --commit-interval-ms 0` of N one-file batches (500 records of the `bench` schema each) into an
insert table (examples/bench.properties with `hoodie.datasource.write.operation=insert`, inline clustering off so
that only the instants' own work grows), for each N of --instants, pinned to one CPU like bench/run.py's
contenders: wall time and CPU time (wait4) of the whole process, medians of --runs. The marginal cost of an
instant is the slope between the smallest and the largest N. With strace on the PATH, one run per N under
`strace -f -c` counts the system calls per instant (fsync, statx, openat, mkdir, rmdir, with their failures).
Merges `per_instant` into bench/results.json.

    python bench/instants.py [--bin-dir target/release] [--instants 10,40,160] [--runs 3] [--label NAME]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: the pinned, measured child processes and the properties files)

SYSCALLS = ("fsync", "statx", "openat", "mkdir", "rmdir", "unlink", "renameat", "linkat", "getdents64")


def strace_counts(cmd, n):
    """System calls per instant of one run under `strace -f -c`: {name: [calls, errors]}."""
    out = os.path.join(run.OUT, "instants-strace.txt")
    subprocess.run(["strace", "-f", "-c", "-o", out] + cmd, cwd=run.ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    counts = {}
    for line in open(out):
        parts = line.split()
        if parts and parts[-1] in SYSCALLS and len(parts) >= 5:
            calls = int(parts[3])
            errors = int(parts[4]) if len(parts) == 6 else 0
            counts[parts[-1]] = {"calls_per_instant": calls / n, "errors_per_instant": errors / n}
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=run.REL)
    ap.add_argument("--instants", default="10,40,160")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--label", default="per_instant", help="the key of bench/results.json to write")
    args = ap.parse_args()
    run.REL = os.path.abspath(args.bin_dir)
    sizes = [int(n) for n in args.instants.split(",")]
    os.makedirs(run.OUT, exist_ok=True)
    events = os.path.join(run.OUT, "instants-events")
    if not os.path.isdir(events) or len(os.listdir(events)) < max(sizes):
        shutil.rmtree(events, ignore_errors=True)
        subprocess.run([os.path.join(run.REL, "hudi-sink"), "generate", "--schema", "bench", "--records",
                        str(500 * max(sizes)), "--partitions", "16", "--records-per-file", "500",
                        "--update-ratio", "0", "--delete-ratio", "0", "--tombstone-ratio", "0", "--late-ratio", "0",
                        "--out", events], check=True, stdout=subprocess.DEVNULL)
    files = sorted(os.path.join(events, f) for f in os.listdir(events) if f.endswith(".json"))
    base = os.path.join(run.OUT, "instants-table")
    props = run.write_props(os.path.join(run.OUT, "instants.properties"), base,
                            ["hoodie.datasource.write.operation=insert", "hoodie.clustering.inline=false"],
                            drop=("hoodie.datasource.write.operation", "hoodie.index.type", "hoodie.bucket.index"))
    rows = []
    for n in sizes:
        cmd = [os.path.join(run.REL, "hudi-sink"), "ingest", "--config", props, "--commit-interval-ms", "0"] \
            + files[:n]
        walls, cpus = [], []
        for _ in range(args.runs):
            run.fresh(base)
            u = run.run_usage(cmd)
            walls.append(u["wall_s"])
            cpus.append(u["cpu_s"])
        row = {"instants": n, "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
               "wall_runs": walls, "cpu_runs": cpus}
        row["wall_ms_per_instant"] = row["wall_s"] * 1000 / n
        row["cpu_ms_per_instant"] = row["cpu_s"] * 1000 / n
        row["not_cpu_ms_per_instant"] = (row["wall_s"] - row["cpu_s"]) * 1000 / n
        if shutil.which("strace"):
            run.fresh(base)
            row["syscalls"] = strace_counts(cmd, n)
        print(json.dumps(row), flush=True)
        rows.append(row)
    lo, hi = rows[0], rows[-1]
    span = hi["instants"] - lo["instants"]
    result = {"rows": rows, "records_per_instant": 500, "machine": run.machine(), "single_cpu": run.cpu()}
    if span:
        result["marginal_wall_ms_per_instant"] = (hi["wall_s"] - lo["wall_s"]) * 1000 / span
        result["marginal_cpu_ms_per_instant"] = (hi["cpu_s"] - lo["cpu_s"]) * 1000 / span
    run.merge_results({args.label: result})
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
