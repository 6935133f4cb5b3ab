"""Reads a Hudi table with an independent reader and prints its rows as canonical JSON.

Used by the Rust integration tests to check every table this project writes against hudi-rs (the PyPI
`hudi` package) and, where it supports the table, daft. Output: one JSON object
{"rows": [...], "columns": [...]} on stdout. Values are canonicalised so that the Rust side can render its
expected rows the same way without floating-point or timezone ambiguity:

- timestamps -> integer in the column's own unit since the epoch; dates -> integer days since the epoch
- decimals -> string of the unscaled integer; binary -> lower-case hex string
- structs -> objects; lists -> arrays; maps -> arrays of [key, value] pairs in stored order

Usage:
  hudi_read.py TABLE snapshot
  hudi_read.py TABLE as_of INSTANT
  hudi_read.py TABLE read_optimized [INSTANT]  (merge-on-read: the base files only, no log files; as of INSTANT)
  hudi_read.py TABLE incremental START END
  hudi_read.py TABLE file_slices [INSTANT]
  hudi_read.py --engine daft TABLE snapshot
  hudi_read.py --engine delta TABLE snapshot     (the Delta Lake mirror, read with the `deltalake` package)
  hudi_read.py --engine delta TABLE as_of VERSION
  hudi_read.py --engine polars TABLE snapshot    (the Delta Lake mirror, read with Polars)
  hudi_read.py --engine polars TABLE as_of VERSION
  hudi_read.py --option KEY=VALUE ... TABLE snapshot   (hudi-rs read options, e.g. the file group reader version)
"""

import argparse
import decimal
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc


def canon_array(arr: pa.Array):
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        # days since epoch / units since epoch, as plain integers
        width = pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()
        return arr.cast(width).to_pylist()
    if pa.types.is_decimal(t):
        out = []
        # Decimal's default context keeps 28 digits: a decimal(38, s) would be rounded.
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            for d in arr.to_pylist():
                out.append(None if d is None else str(int(d.scaleb(t.scale))))
        return out
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if b is None else b.hex() for b in arr.to_pylist()]
    if pa.types.is_struct(t):
        fields = [canon_array(arr.field(i)) for i in range(t.num_fields)]
        names = [t.field(i).name for i in range(t.num_fields)]
        valid = arr.is_valid().to_pylist()
        return [
            {n: f[row] for n, f in zip(names, fields)} if valid[row] else None
            for row in range(len(arr))
        ]
    if pa.types.is_map(t):
        keys = canon_array(arr.keys)
        items = canon_array(arr.items)
        offsets = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [
            [[keys[i], items[i]] for i in range(offsets[r], offsets[r + 1])] if valid[r] else None
            for r in range(len(arr))
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = canon_array(arr.values)
        offsets = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [
            values[offsets[r]:offsets[r + 1]] if valid[r] else None for r in range(len(arr))
        ]
    if pa.types.is_dictionary(t):
        return canon_array(arr.cast(t.value_type))
    return arr.to_pylist()


def canon_table(table: pa.Table):
    table = table.combine_chunks()
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        arr = col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)
        cols[name] = canon_array(arr)
    rows = [{name: cols[name][i] for name in table.column_names} for i in range(table.num_rows)]
    return {"columns": table.column_names, "rows": rows}


def builder(path):
    """A table builder; `s3://` paths go to the endpoint in $HUDI_S3_ENDPOINT (moto in the tests)."""
    from hudi import HudiTableBuilder

    if "://" not in path:
        path = os.path.abspath(path)
    b = HudiTableBuilder.from_base_uri(path)
    endpoint = os.environ.get("HUDI_S3_ENDPOINT")
    if path.startswith("s3://") and endpoint:
        b = b.with_storage_options({
            "aws_endpoint_url": endpoint,
            "aws_allow_http": "true",
            "aws_region": "us-east-1",
            "aws_access_key_id": "test",
            "aws_secret_access_key": "testtesttest",
            "aws_virtual_hosted_style_request": "false",
        })
    return b


def read_hudi_rs(path, mode, args, options=()):
    from hudi import HudiTableBuilder, HudiReadOptions, HudiQueryType

    table = builder(path).build()
    opts = HudiReadOptions()
    for option in options:
        key, _, value = option.partition("=")
        opts = opts.with_hudi_option(key, value)
    if mode == "as_of":
        opts = opts.with_as_of_timestamp(args[0])
    elif mode == "incremental":
        opts = opts.with_query_type(HudiQueryType.Incremental).with_start_timestamp(args[0]).with_end_timestamp(args[1])
    elif mode == "read_optimized":
        opts = opts.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
        if args:
            opts = opts.with_as_of_timestamp(args[0])
    elif mode != "snapshot":
        raise SystemExit(f"unknown mode {mode}")
    batches = table.read(opts)
    if isinstance(batches, pa.Table):
        return batches
    batches = list(batches)
    if not batches:
        return pa.Table.from_batches([], schema=table.get_schema())
    if all(b.schema == batches[0].schema for b in batches):
        return pa.Table.from_batches(batches)
    # File slices written before a column was added lack it: it reads as null, as Hudi's readers do.
    return pa.concat_tables([pa.Table.from_batches([b]) for b in batches], promote_options="default")


def read_daft(path, mode, args):
    import daft

    if mode != "snapshot":
        raise SystemExit("daft: only snapshot reads")
    return daft.read_hudi(path).to_arrow()


def read_delta(path, mode, args):
    """The Delta Lake mirror of the table (`_delta_log/`), read with delta-rs's Python package."""
    from deltalake import DeltaTable

    if mode == "snapshot":
        dt = DeltaTable(path)
    elif mode == "as_of":
        dt = DeltaTable(path, version=int(args[0]))
    else:
        raise SystemExit("delta: only snapshot and as_of VERSION reads")
    table = dt.to_pyarrow_table()
    # Partition columns come from the log, and delta-rs puts them last: back into the table's column order.
    order = [f.name for f in dt.schema().fields]
    return table.select(order)


def read_polars(path, mode, args):
    """The Delta Lake mirror of the table read with Polars (its own parquet reader over the Delta log's files)."""
    import polars as pl
    from deltalake import DeltaTable

    if mode == "snapshot":
        version = None
    elif mode == "as_of":
        version = int(args[0])
    else:
        raise SystemExit("polars: only snapshot and as_of VERSION reads")
    frame = pl.read_delta(path, version=version)
    order = [f.name for f in DeltaTable(path, version=version).schema().fields]
    return frame.select(order).to_arrow()


def file_slices(path, args):
    from hudi import HudiTableBuilder

    table = builder(path).build()
    slices = table.get_file_slices(args[0]) if args else table.get_file_slices()
    out = []
    for s in slices:
        out.append({
            "partition_path": s.partition_path,
            "file_id": s.file_id,
            "base_instant": s.creation_instant_time if hasattr(s, "creation_instant_time") else s.base_instant_time,
            "file_name": s.base_file_name,
        })
    out.sort(key=lambda s: (s["partition_path"], s["file_id"]))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", default="hudi", choices=["hudi", "daft", "delta", "polars"])
    p.add_argument("--pretty", action="store_true", help="print a readable table instead of JSON")
    p.add_argument("--option", action="append", default=[], help="a hudi-rs read option KEY=VALUE")
    p.add_argument("table")
    p.add_argument("mode")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    if a.mode == "file_slices":
        json.dump({"file_slices": file_slices(a.table, a.args)}, sys.stdout)
        return
    if a.engine == "hudi":
        table = read_hudi_rs(a.table, a.mode, a.args, a.option)
    elif a.engine == "delta":
        table = read_delta(a.table, a.mode, a.args)
    elif a.engine == "polars":
        table = read_polars(a.table, a.mode, a.args)
    else:
        table = read_daft(a.table, a.mode, a.args)
    if a.pretty:
        print_table(table, f"{a.engine} reads {table.num_rows} rows ({a.mode}) from {a.table}:")
        return
    json.dump(canon_table(table), sys.stdout)
    if a.engine in ("delta", "polars"):
        # deltalake's scan leaves pyarrow I/O threads behind it that can abort the interpreter's shutdown
        # ("terminate called without an active exception") after every row is printed: end the process here.
        sys.stdout.flush()
        os._exit(0)


def print_table(table: pa.Table, title: str):
    cols = [c for c in table.column_names if c not in ("_hoodie_commit_seqno", "_hoodie_file_name")]
    rows = sorted(table.select(cols).to_pylist(), key=lambda r: (r["_hoodie_partition_path"], r["_hoodie_record_key"]))
    cells = [cols] + [["" if r[c] is None else str(r[c]) for c in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    print(title)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


if __name__ == "__main__":
    main()
