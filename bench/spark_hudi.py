"""The Spark Hudi peer of `make bench`: Spark 3.5 with Hudi 0.15.0 in `local[1]`, writing the bench workload's JSON
values through the Hudi datasource. Run by bench/run.py in the interop venv (.venv-interop: pyspark), one child
process per contender, pinned to one CPU; run.py measures the whole process tree (wait4: the JVM is this
process's child and is waited for before exit, so its CPU and peak RSS are counted).

    spark_hudi.py empty                                       session start and stop only: Spark's start-up
    spark_hudi.py write OP TABLE_TYPE TABLE STAGING EVENT_FILE...
                                                              OP = bulk_insert | insert | upsert,
                                                              TABLE_TYPE = COPY_ON_WRITE | MERGE_ON_READ
    spark_hudi.py check [+]NAME=TABLE...                      every table read by hudi-rs, and by Spark too where its
                                                              name has a leading `+`; each reading's data columns
                                                              must equal the first table's hudi-rs reading, row for
                                                              row (exit 1 and the first difference otherwise)

`write` does what a Spark job fed by the same ESM payloads would: it parses each payload's envelope, decodes the
base64 values into one JSON-lines staging file (timed: `staging_seconds`), then `spark.read.json` with the table's
schema, the Avro logical types applied (`timestamp_micros`, `date_from_unix_date`, decimal(12,2)), and one
datasource write (`spark_write_seconds`) with the bench table's record key, partition field, precombine field, key
generator and (for upserts) bucket index with the same bucket count (examples/bench.properties). Hudi's metadata
table is off: the sink writes none. Prints one JSON object with the times inside the process, including the
session's start-up (`session_seconds`, and the JVM's CPU seconds when the session was ready).
"""

import base64
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JARS = os.path.join(ROOT, "target", "jvm", "jars")
PROPS = os.path.join(ROOT, "examples", "bench.properties")

# The JSON values' types as the generator writes them; the table's types come from them below.
SCHEMA = ("event_id STRING, event_ts LONG, seq LONG, region STRING, user_id LONG, session STRING, amount DOUBLE, "
          "price STRING, quantity INT, active BOOLEAN, event_date INT, "
          "device STRUCT<os: STRING, model: STRING, screen_width: INT, lat: DOUBLE>, note STRING, "
          "_hoodie_is_deleted BOOLEAN")
COLUMNS = ["event_id", "timestamp_micros(event_ts) AS event_ts", "seq", "region", "user_id", "session", "amount",
           "CAST(price AS DECIMAL(12, 2)) AS price", "quantity", "active",
           "date_from_unix_date(event_date) AS event_date", "device", "note", "_hoodie_is_deleted"]


def bench_props():
    """examples/bench.properties as a dict (the sink's bench table)."""
    out = {}
    with open(PROPS) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def jvm_cpu_seconds(pid):
    """User + system CPU of one process so far (/proc/PID/stat, clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def session(master="local[1]"):
    from pyspark.sql import SparkSession

    jars = sorted(os.path.join(JARS, j) for j in os.listdir(JARS) if j.endswith(".jar")) \
        if os.path.isdir(JARS) else []
    if not any("hudi-spark3.5-bundle" in j for j in jars):
        raise SystemExit(f"no Hudi Spark bundle in {JARS}: run `make jvm-jars`")
    spark = (
        SparkSession.builder.master(master)
        .appName("hudi-sink-bench")
        .config("spark.jars", ",".join(jars))
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.warehouse.dir", os.path.join(ROOT, "bench", "out", "spark-warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop(spark):
    """Stops the session and waits for the JVM to exit, so that its CPU time and peak RSS reach this process's
    rusage (and so the parent's wait4)."""
    proc = spark.sparkContext._gateway.proc
    spark.stop()
    proc.stdin.close()
    proc.wait()


def stage(files, path):
    """The ESM payloads' values, base64-decoded, one JSON value a line."""
    records = json_bytes = 0
    with open(path, "wb") as out:
        for name in files:
            with open(name, "rb") as f:
                event = json.load(f)
            for rs in event["records"].values():
                for r in rs:
                    if r.get("value") is None:
                        continue
                    raw = base64.b64decode(r["value"])
                    out.write(raw)
                    out.write(b"\n")
                    records += 1
                    json_bytes += len(raw)
    return records, json_bytes


def write_options(op, table_type):
    props = bench_props()
    opts = {
        "hoodie.table.name": props["hoodie.table.name"],
        "hoodie.database.name": props["hoodie.database.name"],
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": op,
        "hoodie.datasource.write.recordkey.field": props["hoodie.datasource.write.recordkey.field"],
        "hoodie.datasource.write.partitionpath.field": props["hoodie.datasource.write.partitionpath.field"],
        "hoodie.datasource.write.precombine.field": props["hoodie.datasource.write.precombine.field"],
        "hoodie.datasource.write.hive_style_partitioning": props["hoodie.datasource.write.hive_style_partitioning"],
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.parquet.compression.codec": props["hoodie.parquet.compression.codec"],
        "hoodie.metadata.enable": "false",
        "hoodie.bulkinsert.shuffle.parallelism": "1",
        "hoodie.insert.shuffle.parallelism": "1",
        "hoodie.upsert.shuffle.parallelism": "1",
    }
    if op == "upsert":
        opts["hoodie.index.type"] = props["hoodie.index.type"]
        opts["hoodie.bucket.index.num.buckets"] = props["hoodie.bucket.index.num.buckets"]
        opts["hoodie.bucket.index.hash.field"] = props["hoodie.datasource.write.recordkey.field"]
    return opts


def write(op, table_type, table, staging, files):
    started = time.perf_counter()
    os.makedirs(staging, exist_ok=True)
    staged = os.path.join(staging, "values.jsonl")
    records, json_bytes = stage(files, staged)
    staging_seconds = time.perf_counter() - started
    t = time.perf_counter()
    spark = session()
    session_seconds = time.perf_counter() - t
    jvm = spark.sparkContext._gateway.proc.pid
    jvm_cpu_ready = jvm_cpu_seconds(jvm)
    t = time.perf_counter()
    df = spark.read.schema(SCHEMA).json(staged).selectExpr(*COLUMNS)
    df.write.format("hudi").options(**write_options(op, table_type)).mode("append").save(table)
    spark_write_seconds = time.perf_counter() - t
    jvm_cpu_written = jvm_cpu_seconds(jvm)
    stop(spark)
    return {"op": op, "table_type": table_type, "records": records, "json_bytes": json_bytes,
            "staging_seconds": staging_seconds, "session_seconds": session_seconds,
            "spark_write_seconds": spark_write_seconds, "jvm_cpu_session_ready": jvm_cpu_ready,
            "jvm_cpu_write": jvm_cpu_written - jvm_cpu_ready}


def empty():
    t = time.perf_counter()
    spark = session()
    session_seconds = time.perf_counter() - t
    jvm_cpu_ready = jvm_cpu_seconds(spark.sparkContext._gateway.proc.pid)
    versions = {"spark": spark.version,
                "java": spark.sparkContext._jvm.java.lang.System.getProperty("java.version"),
                "hudi_jars": sorted(j for j in os.listdir(JARS) if j.startswith("hudi-"))}
    stop(spark)
    return {"session_seconds": session_seconds, "jvm_cpu_session_ready": jvm_cpu_ready, "versions": versions}


def canonical(table, key):
    """A table's data columns (Hudi's meta columns dropped, structs flattened) in one form whatever the reader:
    timestamps as integer microseconds, dates as integer days, decimals as strings, strings as `string`; sorted
    by `key`, columns by name."""
    import pyarrow as pa

    table = table.select([c for c in table.column_names if not c.startswith("_hoodie_") or c == "_hoodie_is_deleted"])
    while any(pa.types.is_struct(t) for t in table.schema.types):
        table = table.flatten()
    cols = {}
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if pa.types.is_timestamp(t):
            col = col.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
        elif pa.types.is_date(t):
            col = col.cast(pa.int32())
        elif pa.types.is_decimal(t):
            col = col.cast(pa.string())
        elif pa.types.is_large_string(t) or pa.types.is_string_view(t):
            col = col.cast(pa.string())
        cols[name] = col
    table = pa.table(cols).sort_by([(k, "ascending") for k in key])
    return table.select(sorted(table.column_names)).combine_chunks()


def difference(want, got, key):
    """The first difference between two canonical tables, or None."""
    if got.column_names != want.column_names:
        return f"columns {got.column_names}, not {want.column_names}"
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows, not {want.num_rows}"
    for name in want.column_names:
        a, b = want.column(name), got.column(name)
        if a.type != b.type:
            return f"column {name} is {b.type}, not {a.type}"
        if not a.equals(b):
            a, b = a.to_pylist(), b.to_pylist()
            i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
            at = {k: want.column(k)[i].as_py() for k in key}
            return f"column {name} at {at}: {b[i]!r}, not {a[i]!r}"
    return None


def check(named_tables, spark_names):
    """Reads every table with hudi-rs (tests/python/hudi_read.py) and those in `spark_names` with Spark too (one
    session, two threads: not measured), and compares each reading's data rows with the first table's hudi-rs
    reading, every row and column."""
    import pyarrow.parquet as pq

    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import hudi_read

    props = bench_props()
    key = [props["hoodie.datasource.write.recordkey.field"], props["hoodie.datasource.write.partitionpath.field"]]
    readings = []
    for name, table in named_tables:
        readings.append((f"{name}.hudi-rs", canonical(hudi_read.read_hudi_rs(table, "snapshot", []), key)))
    spark = session("local[2]")
    dump = os.path.join(ROOT, "bench", "out", "spark", "check")
    for name, table in named_tables:
        if name in spark_names:
            df = spark.read.format("hudi").option("hoodie.metadata.enable", "false").load(table)
            df.coalesce(1).write.mode("overwrite").parquet(dump)
            readings.append((f"{name}.spark", canonical(pq.read_table(dump), key)))
    stop(spark)
    (reference, want), rest = readings[0], readings[1:]
    mismatches = {}
    for name, got in rest:
        diff = difference(want, got, key)
        if diff:
            mismatches[name] = diff
    import hudi

    return {"reference": reference, "hudi_rs": hudi.__version__, "rows": want.num_rows, "columns": want.column_names,
            "readings": [name for name, _ in readings], "mismatches": mismatches}


def main():
    mode = sys.argv[1]
    if mode == "empty":
        report = empty()
    elif mode == "write":
        op, table_type, table, staging, files = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
        report = write(op, table_type, table, staging, files)
    elif mode == "check":
        named = [arg.lstrip("+").split("=", 1) for arg in sys.argv[2:]]
        report = check(named, {arg[1:].split("=", 1)[0] for arg in sys.argv[2:] if arg.startswith("+")})
        print(json.dumps(report), flush=True)
        sys.exit(1 if report["mismatches"] else 0)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
