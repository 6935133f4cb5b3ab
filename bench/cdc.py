"""`make bench-cdc`: what whole before rows cost a Debezium change stream whose updates move rows between
partitions (docs/cdc.md, "Rows that change partition").

One MySQL change stream (`--events` events over `--keys` customers, creates then updates, a quarter of the
updates moving their row to another `city`; no deletes), written as ESM event files of 2,000 records twice: with
the whole before row on every update (MySQL's `binlog_row_image=FULL`), and with `before: null` (what the sink
saw as a stream without before images, which it cannot place). Each is ingested `--runs` times into a fresh
copy-on-write table (`examples/local.properties`: bucket index of 4 buckets, partitioned by `city`) by
`hudi-sink ingest` at its default settings, the two interleaved, every process pinned to one CPU. Reports the
user + system CPU of each run, the ratio of the medians ("cdc_before_rows" in bench/results.json) and the CLI's
record accounting of each (with before rows: the moves, and the deletes they wrote in the partitions left).

    python bench/cdc.py [--bin target/profiling/hudi-sink] [--events 200000] [--keys 20000] [--runs 3]
"""

import argparse
import base64
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import machine, merge_results  # noqa: E402  (the conventions of `make bench`)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CITIES = ["lisbon", "oslo", "quito"]
SCHEMA = {"type": "record", "name": "Value", "namespace": "mysql1.inventory.customers", "fields": [
    {"name": "uuid", "type": "string"}, {"name": "city", "type": "string"},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "amount", "type": ["null", "long"], "default": None}]}


def stream(events, keys, seed=3):
    """[(key, envelope)] in binlog order, and how many updates move their row."""
    rng = random.Random(seed)
    live, sent, pos, moves = {}, [], 1000, 0
    for i in range(events):
        pos += rng.randint(10, 35)
        key = f"c-{rng.randrange(keys):06d}"
        city = live[key]["city"] if key in live else CITIES[int(key[2:]) % 3]
        if key in live and rng.random() < 0.25:
            city = rng.choice([c for c in CITIES if c != city])
            moves += 1
        image = {"uuid": key, "city": city, "name": f"name of customer {i}", "amount": i}
        source = {"version": "2.7.3.Final", "connector": "mysql", "name": "mysql1", "ts_ms": 1_718_000_000_000 + i,
                  "snapshot": "false", "db": "inventory", "table": "customers", "server_id": 223344, "gtid": None,
                  "file": "mysql-bin.000007", "pos": pos, "row": 0, "thread": 7, "query": None}
        sent.append((key, {"before": live.get(key), "after": image, "source": source,
                           "op": "u" if key in live else "c", "ts_ms": 1_718_000_000_100 + i}))
        live[key] = image
    return sent, moves


def write_events(directory, records, per_file=2000):
    os.makedirs(directory)
    files = []
    for n in range(0, len(records), per_file):
        out = [{"topic": "cdc", "partition": 0, "offset": n + i, "timestamp": 1_718_000_000_000 + n + i,
                "timestampType": "CREATE_TIME", "key": base64.b64encode(key.encode()).decode(), "headers": [],
                "value": base64.b64encode(json.dumps(value).encode()).decode()}
               for i, (key, value) in enumerate(records[n:n + per_file])]
        path = os.path.join(directory, f"events-{n // per_file:04d}.json")
        with open(path, "w") as f:
            json.dump({"eventSource": "aws:kafka", "records": {"cdc-0": out},
                       "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/cdc/3f1c2a9e-7b4d-4c1e-9a55-0d6e2f8b1c77-3"},
                      f)
        files.append(path)
    return files


def properties(work, label, schema):
    base = os.path.join(work, label)
    overrides = {"hoodie.base.path": os.path.join(base, "table"), "hudi.sink.dead.letter.path": os.path.join(base, "dead"),
                 "hoodie.table.type": "COPY_ON_WRITE", "hudi.sink.value.format": "debezium",
                 "hudi.sink.debezium.connector": "mysql",
                 "hoodie.streamer.schemaprovider.source.schema.file": schema,
                 "hoodie.datasource.write.precombine.field": "_event_seq"}
    with open(os.path.join(ROOT, "examples", "local.properties")) as f:
        lines = [line for line in f.read().splitlines() if line.split("=", 1)[0].strip() not in overrides]
    lines += [f"{k}={v}" for k, v in overrides.items()]
    path = os.path.join(work, f"{label}.properties")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def accounting(text):
    """The CLI's record accounting line ("records in … = written …")."""
    for line in text.splitlines():
        if line.startswith("records in"):
            return line
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "profiling", "hudi-sink"))
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="/dev/shm/hudi-sink-bench-cdc")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    records, moves = stream(args.events, args.keys)
    updates = sum(1 for _, v in records if v["op"] == "u")
    schema = os.path.join(args.out, "customers.avsc")
    with open(schema, "w") as f:
        json.dump(SCHEMA, f)
    without = [(k, dict(v, before=None)) for k, v in records]
    files = {"before_rows": write_events(os.path.join(args.out, "ev-before"), records),
             "no_before_rows": write_events(os.path.join(args.out, "ev-none"), without)}
    cpu = {label: [] for label in files}
    summary = {}
    for _ in range(args.runs):
        for label, paths in files.items():
            shutil.rmtree(os.path.join(args.out, label), ignore_errors=True)
            config = properties(args.out, label, schema)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(["taskset", "-c", "1", args.bin, "ingest", "--config", config, *paths],
                               capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode != 0:
                raise SystemExit(f"ingest failed: {(p.stdout + p.stderr)[-2000:]}")
            cpu[label].append(round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3))
            summary[label] = accounting(p.stdout + p.stderr)
    ratio = statistics.median(cpu["before_rows"]) / statistics.median(cpu["no_before_rows"])
    print(f"{len(records)} events, {updates} updates, {moves} of them moving their row")
    print("| stream | CPU s per run | median | the CLI's accounting |")
    print("|---|---|---|---|")
    for label, runs in cpu.items():
        print(f"| {label.replace('_', ' ')} | {', '.join(map(str, runs))} | {statistics.median(runs):.2f} "
              f"| {summary[label]} |")
    print(f"cdc_before_rows = {ratio:.2f}")
    merge_results({"cdc_before_rows": {"ratio": ratio, "cpu_s": cpu, "events": len(records), "updates": updates,
                                       "moves": moves, "binary": os.path.relpath(args.bin, ROOT),
                                       "machine": machine()}})
    shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
