"""Checks the column statistics of a Delta table's add actions against the rows of each file.

For every file of the latest version, `deltalake`'s `get_add_actions(flatten=True)` (the stats as delta-rs
parses them) must equal what pyarrow computes from the file's rows: `num_records`, `null_count.<col>` for
every leaf column outside lists and maps, and `min.<col>` / `max.<col>` for the types readers skip by
(integers, floats, decimals, dates, timestamps, strings; strings cut to 32 characters as the Delta protocol
allows, a cut max with its tie-breaker). Partition columns have no stats. Columns whose values are all null
have a null count and no min/max.

Then data skipping: `FILTER` (a pyarrow expression in Python syntax over `pc.field`, e.g.
`pc.field("ts_us") > 0`) read through `to_pyarrow_dataset()` keeps only the fragments whose stats admit it,
prunes at least one file, and returns exactly the rows of a full scan filtered in memory; Polars's
`scan_delta(...).filter(...)` returns the same rows.

Usage: delta_stats.py TABLE [FILTER]
Output: one JSON object {"files", "compared": {stat: count}, "mismatches": [...], "skipping": {...}}.
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from deltalake import DeltaTable

PREFIX = 32
LIMIT = 64
MAX_LEAVES = 32


def cut_min(s):
    return s[:PREFIX]


def cut_max(s):
    if len(s) <= PREFIX:
        return s
    for n in range(PREFIX, min(len(s), LIMIT)):
        c = s[n]
        if c < "\x7f":
            return s[:n] + "\x7f"
        if c < "\U0010ffff":
            return s[:n] + "\U0010ffff"
    return s if len(s) <= LIMIT else None


def ranged(t):
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
    )


def leaves(schema, partitions):
    """(path, type) of the indexed leaf columns, in schema order, as delta-kernel counts them."""
    out = []
    budget = [MAX_LEAVES]

    def walk(fields, prefix):
        for f in fields:
            if budget[0] == 0:
                return
            if not prefix and f.name in partitions:
                continue
            path = prefix + [f.name]
            if pa.types.is_struct(f.type):
                walk(list(f.type), path)
            else:
                budget[0] -= 1
                if not (pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_map(f.type)):
                    out.append((path, f.type))

    walk(list(schema), [])
    return out


def column(table, path):
    arr = table.column(path[0]).combine_chunks()
    for name in path[1:]:
        arr = pc.struct_field(arr, name)  # null where any parent is null
    return arr


def norm(v):
    """Python scalar in a comparable form."""
    if isinstance(v, pa.Scalar):
        v = v.as_py()
    return v


def main():
    table_path = sys.argv[1]
    filter_text = sys.argv[2] if len(sys.argv) > 2 else None
    dt = DeltaTable(table_path)
    partitions = set(dt.metadata().partition_columns)
    actions = pa.table(dt.get_add_actions(flatten=True))
    names = set(actions.column_names)
    compared = {}
    mismatches = []
    rows = actions.to_pylist()
    for action in rows:
        path = action["path"]
        data = pq.read_table(os.path.join(table_path, path))
        if action.get("num_records") != data.num_rows:
            mismatches.append({"file": path, "stat": "num_records", "got": action.get("num_records"), "want": data.num_rows})
        schema = dt.schema().to_arrow()
        schema = pa.schema(schema)
        for leaf, typ in leaves(schema, partitions):
            name = ".".join(leaf)
            if leaf[0] in data.column_names:
                try:
                    arr = column(data, leaf)
                except KeyError:
                    arr = pa.nulls(data.num_rows, typ)
            else:
                arr = pa.nulls(data.num_rows, typ)
            want_nulls = arr.null_count
            got_nulls = action.get("null_count." + name)
            compared["null_count"] = compared.get("null_count", 0) + 1
            if got_nulls != want_nulls:
                mismatches.append({"file": path, "stat": "null_count." + name, "got": got_nulls, "want": want_nulls})
            if not ranged(typ):
                for side in ("min", "max"):
                    if action.get(f"{side}.{name}") is not None:
                        mismatches.append({"file": path, "stat": f"{side}.{name}", "got": str(action[f"{side}.{name}"]), "want": None})
                continue
            mm = pc.min_max(arr)
            want_min, want_max = norm(mm["min"]), norm(mm["max"])
            if isinstance(want_min, str):
                want_min, want_max = cut_min(want_min), cut_max(want_max)
            for side, want in (("min", want_min), ("max", want_max)):
                got = action.get(f"{side}.{name}")
                key = f"{side}.{name}"
                compared[key] = compared.get(key, 0) + 1
                if isinstance(got, float) and isinstance(want, float) and typ == pa.float32():
                    got = pa.scalar(got, pa.float32()).as_py()
                if got != want:
                    mismatches.append({"file": path, "stat": key, "got": repr(got), "want": repr(want)})
    out = {
        "files": len(rows),
        "compared": compared,
        "mismatches": mismatches,
        "stat_columns": sorted(n for n in names if n.startswith(("min.", "max.", "null_count."))),
    }
    if filter_text:
        expr = eval(filter_text, {"pc": pc, "pa": pa})
        ds = dt.to_pyarrow_dataset()
        all_frags = list(ds.get_fragments())
        kept = list(ds.get_fragments(filter=expr))
        got = ds.to_table(filter=expr)
        full = pa.concat_tables(
            [pq.read_table(os.path.join(table_path, a["path"])) for a in rows], promote_options="permissive"
        )
        key = "_hoodie_record_key"
        got_keys = sorted(got.column(key).to_pylist())
        want = full.filter(expr) if full.num_rows else full
        want_keys = sorted(want.column(key).to_pylist())
        import polars as pl

        polars_expr = eval(sys.argv[3], {"pl": pl}) if len(sys.argv) > 3 else None
        polars_keys = None
        if polars_expr is not None:
            polars_keys = sorted(
                pl.scan_delta(table_path).filter(polars_expr).select(key).collect()[key].to_list()
            )
        # The files pruned cannot hold a matching row.
        kept_paths = {f.path for f in kept}
        pruned_with_rows = [
            f.path for f in all_frags if f.path not in kept_paths and f.to_table(filter=expr).num_rows > 0
        ]
        out["skipping"] = {
            "fragments": len(all_frags),
            "kept": len(kept),
            "rows": len(got_keys),
            "rows_equal": got_keys == want_keys,
            "polars_equal": polars_keys == want_keys if polars_keys is not None else None,
            "pruned_with_rows": pruned_with_rows,
        }
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
