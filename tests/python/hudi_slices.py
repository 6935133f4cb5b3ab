"""Prints the file slices the hudi-rs Python reader (`hudi` 0.5.0) reports for a table, as JSON.

Used by the Rust integration tests to check the library's merge-on-read slices (base file and log files per
partition and file group). Output:

  {"instants": [<completed commit-like instant times, oldest first>],
   "writers": {"<table-relative path>": "<completed deltacommit that names it in a write stat>"},
   "latest": [slice, ...],
   "as_of": {"<t>": [slice, ...]}}

with slice = {"partition_path", "file_id", "base_instant", "base_file", "base_size", "log_files", "log_sizes"},
sorted by (partition_path, file_id); log_files in the reader's order. The reader lists a slice's logs by the base
instant in their names; "writers" comes from the reader's own timeline (`get_instant_metadata_in_json`).

Usage: hudi_slices.py TABLE
"""

import json
import os
import sys

from hudi import HudiReadOptions, HudiTableBuilder


def slices(table, as_of=None):
    got = table.get_file_slices(HudiReadOptions().with_as_of_timestamp(as_of)) if as_of else table.get_file_slices()
    out = []
    for s in got:
        out.append({
            "partition_path": s.partition_path,
            "file_id": s.file_id,
            "base_instant": s.creation_instant_time,
            "base_file": s.base_file_name,
            "base_size": s.base_file_size,
            "log_files": list(s.log_file_names),
            "log_sizes": list(s.log_file_sizes),
        })
    out.sort(key=lambda s: (s["partition_path"], s["file_id"]))
    return out


def main():
    path = os.path.abspath(sys.argv[1])
    table = HudiTableBuilder.from_base_uri(path).build()
    timeline = table.get_timeline()
    writers = {}
    for instant in timeline.get_completed_deltacommits():
        meta = json.loads(timeline.get_instant_metadata_in_json(instant))
        for stats in (meta.get("partitionToWriteStats") or {}).values():
            for stat in stats:
                if stat.get("path"):
                    writers[stat["path"]] = instant.timestamp
    instants = sorted(
        {i.timestamp for i in timeline.get_completed_commits()}
        | {i.timestamp for i in timeline.get_completed_deltacommits()}
        | {i.timestamp for i in timeline.get_completed_replacecommits()}
    )
    result = {
        "instants": instants,
        "writers": writers,
        "latest": slices(table),
        "as_of": {t: slices(table, t) for t in instants},
    }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
