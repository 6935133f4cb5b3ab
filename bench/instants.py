"""`make bench-instants`: what one instant costs on the embedded default (local disk, in-process coordinator, file
lock), against the number of instants.

`hudi-sink ingest --commit-interval-ms 0` of N one-file batches (500 records of the `bench` schema each) into an
insert table (examples/bench.properties with `hoodie.datasource.write.operation=insert`, inline clustering off so
that only the instants' own work grows), for each N of --instants, pinned to one CPU like bench/run.py's
contenders: wall time and CPU time (wait4) of the whole process, medians of --runs. `--compare` measures several
builds or table directories with their runs interleaved, so that a before/after is taken within one run. The
marginal cost of an instant is the slope between the smallest and the largest N. With strace on the PATH, one run
per N under `strace -f -c` counts the system calls per instant (fsync, statx, openat, mkdir, rmdir, with their
failures). Merges `per_instant` into bench/results.json.

    python bench/instants.py [--bin-dir target/release] [--instants 10,40,160] [--runs 3] [--label NAME]
    python bench/instants.py --compare before=DIR --compare after=DIR --compare tmpfs=DIR:/dev/shm ...
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
    ap.add_argument("--bin-dir", default=run.REL, help="the `hudi-sink` to measure (with --compare: to generate)")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=BIN_DIR[:TABLE_DIR]",
                    help="measure several builds (or table directories, e.g. a tmpfs), their runs interleaved")
    ap.add_argument("--instants", default="10,40,160")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--label", default="per_instant", help="the key of bench/results.json to write")
    args = ap.parse_args()
    run.REL = os.path.abspath(args.bin_dir)
    contenders = []
    for spec in args.compare or [f"this={run.REL}"]:
        name, _, where = spec.partition("=")
        bin_dir, _, table_dir = where.partition(":")
        contenders.append((name, os.path.join(os.path.abspath(bin_dir), "hudi-sink"),
                           os.path.join(os.path.abspath(table_dir or run.OUT), f"instants-table-{name}")))
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

    def command(name, binary, base, n):
        props = run.write_props(os.path.join(run.OUT, f"instants-{name}.properties"), base,
                                ["hoodie.datasource.write.operation=insert", "hoodie.clustering.inline=false"],
                                drop=("hoodie.datasource.write.operation", "hoodie.index.type",
                                      "hoodie.bucket.index"))
        return [binary, "ingest", "--config", props, "--commit-interval-ms", "0"] + files[:n]

    # Round-robin: a burst of other load on this shared machine hits every contender alike.
    usage = {}
    for _ in range(args.runs):
        for name, binary, base in contenders:
            for n in sizes:
                run.fresh(base)
                u = run.run_usage(command(name, binary, base, n))
                if f"{n} commits" not in u["stdout"] + u["stderr"]:
                    raise SystemExit(f"{name}: not {n} instants: {(u['stdout'] + u['stderr'])[-500:]}")
                usage.setdefault((name, n), []).append(u)
    result = {"records_per_instant": 500, "runs": args.runs, "machine": run.machine(), "single_cpu": run.cpu()}
    for name, binary, base in contenders:
        rows = []
        for n in sizes:
            walls = [u["wall_s"] for u in usage[(name, n)]]
            cpus = [u["cpu_s"] for u in usage[(name, n)]]
            row = {"instants": n, "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
                   "wall_runs": walls, "cpu_runs": cpus}
            row["wall_ms_per_instant"] = row["wall_s"] * 1000 / n
            row["cpu_ms_per_instant"] = row["cpu_s"] * 1000 / n
            row["not_cpu_ms_per_instant"] = (row["wall_s"] - row["cpu_s"]) * 1000 / n
            if shutil.which("strace"):
                run.fresh(base)
                row["syscalls"] = strace_counts(command(name, binary, base, n), n)
            rows.append(row)
        lo, hi = rows[0], rows[-1]
        span = hi["instants"] - lo["instants"]
        summary = {"binary": binary, "table_dir": os.path.dirname(base), "rows": rows}
        if span:
            summary["marginal_wall_ms_per_instant"] = (hi["wall_s"] - lo["wall_s"]) * 1000 / span
            summary["marginal_cpu_ms_per_instant"] = (hi["cpu_s"] - lo["cpu_s"]) * 1000 / span
        result[name] = summary
        run.fresh(base)
        print(name, json.dumps({k: v for k, v in summary.items() if k != "rows"}), flush=True)
        for row in rows:
            print("  ", json.dumps({k: v for k, v in row.items() if not k.endswith("_runs")}), flush=True)
    run.merge_results({args.label: result})


if __name__ == "__main__":
    main()
