"""`make bench-clustering`: what inline clustering rewrites over a long run of small insert batches.

One table, many one-file batches of small inserts (`hudi-sink generate --schema bench`, 500 records per file, 16
Kafka partitions, no updates), ingested by `hudi-sink ingest --commit-interval-ms 0` (one instant per file) with
the default table services, in chunks: each chunk is generated under a topic of its own (fresh Kafka offsets, so
no batch is skipped as already committed), ingested, then deleted. After each chunk the script reads the commits
and replacecommits the chunk added to the timeline (archival is held above a chunk's instants, so that none is
archived before it is read) and samples:

- bytes written: the base files of the ingest commits (`fileSizeInBytes` of their write stats);
- bytes rewritten: the input files of the clustering replacecommits (their sizes as written);
- files per partition: live base files (not replaced), all of them and those below the small-file limit, the
  largest count over the partitions;
- CPU seconds of the ingest processes (user + system) so far.

Writes the samples to bench/results.json ("clustering_curve", and "clustering_rewrite_ratio": bytes rewritten
over bytes written at the last sample; other keys kept) and prints them as the table of docs/performance.md.

`--cpu-share RUNS` measures what inline clustering costs in CPU instead: one workload of 40 files of 5,000
records (one instant per file), ingested RUNS times into a fresh table with the default services and RUNS times
with `hoodie.clustering.inline=false`, interleaved; "clustering_cpu_share" is (median CPU with clustering − median
without) / median without, the whole process's user + system CPU. Nothing is asserted. That workload has one
tier of rewrites (every file is rewritten once, into files of about 1 MB); `--cpu-share-files 400
--cpu-share-records 500` measures the same share over 400 files of 500 records, where the outputs of the first
tier are rewritten again (written to `--label`, not to "clustering_cpu_share").

    python bench/clustering.py [--batches 10000] [--chunk 500] [--bin target/debug/hudi-sink] [--out DIR]
    python bench/clustering.py --cpu-share 5 [--bin target/release/hudi-sink]
    python bench/clustering.py --cpu-share 3 --cpu-share-files 400 --cpu-share-records 500 --label share_400
"""

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import machine, merge_results  # noqa: E402  (the conventions of `make bench`)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# On tmpfs when there is one, as `make bench` runs it: on a disk the kernel's inode allocation makes the system
# CPU of the same ingest grow from run to run, which swamps the share.
OUT = ("/dev/shm/hudi-sink-bench-clustering" if os.path.isdir("/dev/shm")
       else os.path.join(ROOT, "bench", "out", "clustering"))
SMALL_FILE_LIMIT = 100 * 1024 * 1024


def properties(path, base, chunk, extra):
    lines = [
        "hoodie.table.name=bench",
        "hoodie.database.name=default",
        f"hoodie.base.path={base}",
        f"hudi.sink.dead.letter.path={base}-dead-letters",
        f"hoodie.streamer.schemaprovider.source.schema.file={ROOT}/events/schema/bench.avsc",
        "hoodie.datasource.write.recordkey.field=event_id",
        "hoodie.datasource.write.partitionpath.field=region",
        "hoodie.datasource.write.precombine.field=event_ts",
        "hoodie.datasource.write.hive_style_partitioning=true",
        "hoodie.datasource.write.operation=insert",
        "hoodie.parquet.compression.codec=zstd",
        # Archival stays above one chunk of instants and its replacecommits (a plan that merges every few files
        # makes one per batch or more), so that every instant is read before it is archived.
        f"hoodie.keep.min.commits={3 * chunk}",
        f"hoodie.keep.max.commits={3 * chunk + 50}",
    ] + list(extra)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Table:
    """What the timeline says so far: live files and their sizes, bytes written and rewritten."""

    def __init__(self, base):
        self.base = base
        self.seen = set()
        self.live = {}  # (partition, file id) -> size
        self.written = 0
        self.rewritten = 0
        self.clusterings = 0

    def read_new_instants(self):
        names = sorted(os.listdir(os.path.join(self.base, ".hoodie")))
        times = [n.split(".")[0] for n in names if n.endswith((".commit", ".replacecommit"))]
        if self.seen and times and min(times) > max(n.split(".")[0] for n in self.seen):
            raise SystemExit("instants were archived before they were read: raise hoodie.keep.min.commits")
        for name in names:
            time, _, action = name.partition(".")
            if action not in ("commit", "replacecommit") or name in self.seen:
                continue
            self.seen.add(name)
            with open(os.path.join(self.base, ".hoodie", name)) as f:
                meta = json.load(f)
            if action == "replacecommit":
                self.clusterings += 1
                for partition, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                    for file_id in ids:
                        self.rewritten += self.live.pop((partition, file_id), 0)
            for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
                for stat in stats:
                    size = int(stat.get("fileSizeInBytes") or 0)
                    self.live[(partition, stat["fileId"])] = size
                    if action == "commit":
                        self.written += size

    def files_per_partition(self):
        every, small = {}, {}
        for (partition, _), size in self.live.items():
            every[partition] = every.get(partition, 0) + 1
            if size < SMALL_FILE_LIMIT:
                small[partition] = small.get(partition, 0) + 1
        return max(every.values(), default=0), max(small.values(), default=0), len(every)


def cpu_of(argv):
    """Runs `argv`; the user + system CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{argv[1]} failed: {(p.stdout + p.stderr)[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout + p.stderr


def cpu_share(binary, runs_each, work, extra=(), files=40, records_per_file=5000, key="clustering_cpu_share"):
    """Inline clustering's CPU over the ingest's, on one workload of `files` instants (see the module doc).
    Merges `key` and "clustering_cpu" (for the default key) into bench/results.json and returns them."""
    out = work + "-cpu"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    events = os.path.join(out, "events")
    subprocess.run([binary, "generate", "--schema", "bench", "--records", str(files * records_per_file),
                    "--partitions", "16", "--records-per-file", str(records_per_file), "--update-ratio", "0",
                    "--delete-ratio", "0", "--tombstone-ratio", "0", "--late-ratio", "0", "--topic", "bench",
                    "--seed", "1", "--out", events], check=True, stdout=subprocess.DEVNULL)
    files = sorted(glob.glob(os.path.join(events, "*.json")))
    runs = {"clustering": [], "no_clustering": []}
    replaced = {}
    for _ in range(runs_each):
        for label, off in (("clustering", []), ("no_clustering", ["hoodie.clustering.inline=false"])):
            base = os.path.join(out, label)
            shutil.rmtree(base, ignore_errors=True)
            props = properties(os.path.join(out, f"{label}.properties"), base, len(files), list(extra) + off)
            cpu, text = cpu_of([binary, "ingest", "--config", props, "--commit-interval-ms", "0"] + files)
            if f"{len(files)} commits" not in text:
                raise SystemExit(f"not one instant per file: {text[-2000:]}")
            runs[label].append(round(cpu, 3))
            table = Table(base)
            table.read_new_instants()
            replaced[label] = {"written_mb": round(table.written / 1e6, 2),
                               "rewritten_mb": round(table.rewritten / 1e6, 2),
                               "clusterings": table.clusterings}
    on, off = statistics.median(runs["clustering"]), statistics.median(runs["no_clustering"])
    share = (on - off) / off
    print("| inline clustering | CPU s per run | median CPU s | MB written | MB rewritten | clusterings |")
    print("|---|---|---|---|---|---|")
    for label in runs:
        r = replaced[label]
        print(f"| {label.replace('_', ' ')} | {', '.join(map(str, runs[label]))} | {statistics.median(runs[label]):.2f} "
              f"| {r['written_mb']} | {r['rewritten_mb']} | {r['clusterings']} |")
    print(f"clustering_cpu_share = {share:.3f}")
    detail = {"binary": os.path.relpath(binary, ROOT), "files": len(files), "records_per_file": records_per_file,
              "properties": list(extra), "runs_cpu_s": runs, "tables": replaced, "machine": machine()}
    update = ({"clustering_cpu_share": share, "clustering_cpu": detail} if key == "clustering_cpu_share"
              else {key: {"share": share, **detail}})
    merge_results(update)
    shutil.rmtree(out, ignore_errors=True)
    return update


def curve(binary, batches, work, chunk=500, records=500, extra=(), label="clustering_curve"):
    """The long run of one-file batches (see the module doc): samples after every `chunk` batches. Merges
    `label` (and "clustering_rewrite_ratio" for the default label) into bench/results.json and returns them."""
    out = work
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    base = os.path.join(out, "table")
    props = properties(os.path.join(out, "table.properties"), base, chunk, list(extra))
    table = Table(base)
    samples = []
    done = 0
    while done < batches:
        n = min(chunk, batches - done)
        events = os.path.join(out, "events")
        shutil.rmtree(events, ignore_errors=True)
        subprocess.run([binary, "generate", "--schema", "bench", "--records", str(n * records),
                        "--partitions", "16", "--records-per-file", str(records), "--update-ratio", "0",
                        "--delete-ratio", "0", "--tombstone-ratio", "0", "--late-ratio", "0",
                        "--topic", f"bench-{done}", "--seed", str(done), "--out", events],
                       check=True, stdout=subprocess.DEVNULL)
        files = sorted(glob.glob(os.path.join(events, "*.json")))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([binary, "ingest", "--config", props, "--commit-interval-ms", "0"] + files,
                           capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0 or f"{len(files)} commits" not in p.stdout + p.stderr:
            raise SystemExit(f"ingest failed or not one instant per file: {(p.stdout + p.stderr)[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        done += len(files)
        table.read_new_instants()
        every, small, partitions = table.files_per_partition()
        sample = {
            "batches": done,
            "written_mb": round(table.written / 1e6, 2),
            "rewritten_mb": round(table.rewritten / 1e6, 2),
            "rewritten_per_written": round(table.rewritten / max(table.written, 1), 3),
            "clusterings": table.clusterings,
            "files_per_partition_max": every,
            "small_files_per_partition_max": small,
            "partitions": partitions,
            "ingest_cpu_s": round(cpu + (samples[-1]["ingest_cpu_s"] if samples else 0.0), 2),
        }
        samples.append(sample)
        print(json.dumps(sample), flush=True)
        shutil.rmtree(events, ignore_errors=True)
    print("| batches | MB written | MB rewritten | rewritten / written | clusterings | files per partition "
          "(most) | small files per partition (most) | ingest CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for s in samples:
        print(f"| {s['batches']:,} | {s['written_mb']} | {s['rewritten_mb']} | {s['rewritten_per_written']} "
              f"| {s['clusterings']} | {s['files_per_partition_max']} | {s['small_files_per_partition_max']} "
              f"| {s['ingest_cpu_s']} |")
    update = {label: {"binary": os.path.relpath(binary, ROOT), "records_per_batch": records, "properties": list(extra),
                      "machine": machine(), "samples": samples},
              **({"clustering_rewrite_ratio": samples[-1]["rewritten_per_written"]}
                 if samples and label == "clustering_curve" else {})}
    merge_results(update)
    shutil.rmtree(out, ignore_errors=True)
    return update


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=10_000)
    ap.add_argument("--chunk", type=int, default=500, help="batches per ingest process (and per sample)")
    ap.add_argument("--records", type=int, default=500, help="records per batch")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "hudi-sink"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra table property")
    ap.add_argument("--label", default="clustering_curve", help="the key of bench/results.json to write")
    ap.add_argument("--out", default=OUT, help="work directory (e.g. on /dev/shm: no disk flushes)")
    ap.add_argument("--cpu-share", type=int, default=0, metavar="RUNS",
                    help="measure inline clustering's CPU share instead of the curve, RUNS runs each way")
    ap.add_argument("--cpu-share-files", type=int, default=40, metavar="N",
                    help="files (instants) of the CPU-share workload, of --cpu-share-records records each")
    ap.add_argument("--cpu-share-records", type=int, default=5000, metavar="N")
    args = ap.parse_args()
    if args.cpu_share:
        label = args.label if args.label != "clustering_curve" else "clustering_cpu_share"
        cpu_share(args.bin, args.cpu_share, args.out, args.set, args.cpu_share_files, args.cpu_share_records, label)
    else:
        curve(args.bin, args.batches, args.out, args.chunk, args.records, args.set, args.label)


if __name__ == "__main__":
    main()
