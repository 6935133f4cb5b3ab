"""The peers of `make bench`, one per child process (run by bench/run.py, which measures the peak RSS).

    peers.py pyarrow   OUT_DIR EVENT_FILE...  per ESM payload: base64 -> pyarrow.json.read_json -> parquet file
    peers.py deltalake OUT_DIR EVENT_FILE...  per ESM payload: the same decode -> write_deltalake (one commit)
    peers.py process   OUT_FILE EVENT_FILE... whole process: envelope, base64, read_json, one parquet file
    peers.py fastavro  OUT_DIR SCHEMA AVRO_EVENT_FILE...  per Confluent-framed Avro payload: base64 -> fastavro
                                              schemaless_reader per record -> pyarrow table -> parquet file

pyarrow and deltalake: the envelope (JSON parse of the ESM payload, picking out the base64 values) is done
before the clock starts; the timed part is base64 decoding, JSON reading and writing. `process` times
nothing itself: run.py measures the whole process from start to exit. One thread (pa.set_cpu_count(1),
pa.set_io_thread_count(1); run.py also pins every contender to one CPU). Prints one JSON object.
"""

import base64
import io
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

CODEC = "zstd"


def values_of(path):
    with open(path, "rb") as f:
        event = json.load(f)
    return [r["value"] for rs in event["records"].values() for r in rs if r.get("value") is not None]


def decode(values):
    raw = [base64.b64decode(v) for v in values]
    data = b"\n".join(raw)
    table = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False))
    return table, len(data) - (len(raw) - 1)


def peak_rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def per_payload(mode, out_dir, files):
    os.makedirs(out_dir, exist_ok=True)
    records = json_bytes = 0
    elapsed = 0.0
    if mode == "deltalake":
        from deltalake import WriterProperties, write_deltalake

        props = WriterProperties(compression=CODEC.upper())
    for i, path in enumerate(files):
        values = values_of(path)
        started = time.perf_counter()
        table, n = decode(values)
        if mode == "pyarrow":
            pq.write_table(table, os.path.join(out_dir, f"part-{i:05d}.parquet"), compression=CODEC)
        else:
            write_deltalake(out_dir, table, mode="append", writer_properties=props)
        elapsed += time.perf_counter() - started
        records += table.num_rows
        json_bytes += n
    return {
        "mode": mode,
        "records": records,
        "json_bytes": json_bytes,
        "seconds": elapsed,
        "records_per_s": records / elapsed,
        "json_mb_per_s": json_bytes / 1e6 / elapsed,
        "peak_rss_mb": peak_rss_mb(),
    }


def process(out_file, files):
    writer = None
    records = 0
    for path in files:
        table, _ = decode(values_of(path))
        if writer is None:
            writer = pq.ParquetWriter(out_file, table.schema, compression=CODEC)
        writer.write_table(table.cast(writer.schema))
        records += table.num_rows
    if writer is not None:
        writer.close()
    return {"mode": "process", "records": records, "peak_rss_mb": peak_rss_mb()}


def fastavro_payloads(out_dir, schema_path, files):
    """Avro values the Python way: fastavro's reader per record (its C extension), then one pyarrow table."""
    import fastavro

    os.makedirs(out_dir, exist_ok=True)
    with open(schema_path) as f:
        schema = fastavro.parse_schema(json.load(f))
    records = avro_bytes = 0
    elapsed = 0.0
    for i, path in enumerate(files):
        values = values_of(path)
        started = time.perf_counter()
        rows = []
        for v in values:
            raw = base64.b64decode(v)
            avro_bytes += len(raw)
            # The 5-byte Confluent header (magic, schema id): one writer schema, as a registry cache gives.
            rows.append(fastavro.schemaless_reader(io.BytesIO(raw[5:]), schema, None))
        table = pa.Table.from_pylist(rows)
        pq.write_table(table, os.path.join(out_dir, f"part-{i:05d}.parquet"), compression=CODEC)
        elapsed += time.perf_counter() - started
        records += table.num_rows
    return {"mode": "fastavro", "records": records, "avro_bytes": avro_bytes, "seconds": elapsed,
            "records_per_s": records / elapsed, "avro_mb_per_s": avro_bytes / 1e6 / elapsed,
            "peak_rss_mb": peak_rss_mb()}


def main():
    mode, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "fastavro":
        report = fastavro_payloads(out, files[0], files[1:])
    elif mode in ("pyarrow", "deltalake"):
        report = per_payload(mode, out, files)
    elif mode == "process":
        report = process(out, files)
    else:
        sys.exit(f"unknown mode {mode!r}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
