"""Spark reads a merge-on-read table whose compaction carried logs (docs/architecture.md, "Compaction").

The table comes from the deterministic simulation's scenario "windows commit while a compaction merges": a
compaction is planned, a window commits logs into the slices it merges, and the compaction copies those logs
into its new slices before it completes. The scenario itself checks the table against its model with the
sink's reader and with hudi-rs; here Spark, the reference, must read the same rows, and must not when the
carry is switched off (the mutation `compaction-carries-late-logs`).
"""

import json
import os
import subprocess

import pytest

from conftest import (ROOT, Table, data_only, diff, hudi_rs_read, incremental_oracle, rows_of_arrow, rows_of_spark,
                      spark_incremental, spark_read)


def export(tmp, mutation=None):
    """Runs the scenario's export test (the `it` binary is built by `cargo test`) into `tmp`."""
    env = dict(os.environ, HUDI_SINK_INTEROP_OUT=str(tmp))
    if mutation:
        env["HUDI_SINK_INTEROP_MUTATION"] = mutation
    cmd = ["cargo", "test", "--quiet", "--workspace", "--test", "it",
           "simulation::compaction_scenarios::export_for_interop", "--", "--exact"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0 or not (tmp / ".hoodie" / "hoodie.properties").exists():
        pytest.fail(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return Table(tmp, [], "MERGE_ON_READ")


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    return export(tmp_path_factory.mktemp("carried"))


def compaction_carried_logs(table):
    for t, a in table.timeline():
        if a == "commit":
            meta = json.loads((table.path / ".hoodie" / f"{t}.commit").read_text())
            if meta.get("extraMetadata", {}).get("hudi.sink.compaction.carried"):
                return t
    return None


def test_the_scenario_carried_logs(carried):
    assert compaction_carried_logs(carried), carried.timeline()


def test_spark_snapshot_equals_hudi_rs(spark, carried):
    """hudi-rs equals the scenario's model (checked by the scenario); Spark must equal hudi-rs."""
    got = rows_of_spark(spark_read(spark, carried))
    want = rows_of_arrow(hudi_rs_read(carried, "snapshot"))
    assert not diff("spark", got, "hudi-rs", want)


def test_spark_incremental_over_the_compaction_returns_every_record_written(spark, carried):
    """Hudi's merge-on-read incremental relation builds its file view from the files that the write stats of
    the commits in range name: the compaction commit names its carried copies there too."""
    data = carried.data_instants()
    begin, end = data[0], data[-1]
    got = rows_of_spark(spark_incremental(spark, carried, begin, end))
    want = incremental_oracle(spark, carried, begin, end)
    have = {(r["_hoodie_record_key"], r["_hoodie_commit_time"]) for r in got}
    missing = [r for r in want if (r["_hoodie_record_key"], r["_hoodie_commit_time"]) not in have]
    assert not missing, f"{len(missing)} of {len(want)} records written in ({begin}, {end}] missing: {missing[:4]}"


def test_without_the_carry_spark_loses_rows(spark, carried, tmp_path):
    """The same scenario with the carry switched off: Spark's snapshot no longer equals the correct table."""
    mutated = export(tmp_path / "mutated", mutation="compaction-carries-late-logs")
    want = data_only(rows_of_arrow(hudi_rs_read(carried, "snapshot")))
    got = data_only(rows_of_spark(spark_read(spark, mutated)))
    assert diff("spark, carry off", got, "correct table", want), "Spark did not see the lost carry"


def export_recreated(tmp, mutation=None):
    """The tables of the `export_recreated_across_the_carry` test: just before its compaction completes, just
    after, and after the next compaction ((before, after, again))."""
    env = dict(os.environ, HUDI_SINK_INTEROP_RECREATE_OUT=str(tmp))
    if mutation:
        env["HUDI_SINK_INTEROP_MUTATION"] = mutation
    cmd = ["cargo", "test", "--quiet", "--workspace", "--test", "it",
           "simulation::compaction_scenarios::export_recreated_across_the_carry", "--", "--exact"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0 or not (tmp / "after" / ".hoodie" / "hoodie.properties").exists():
        pytest.fail(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return tuple(Table(tmp / name, [], "MERGE_ON_READ") for name in ("before", "after", "again")
                 if (tmp / name / ".hoodie").exists())


def key_rows(rows):
    return sorted((r["uuid"], r["ts"], r["rider"]) for r in rows)


def test_a_compaction_leaves_out_a_group_whose_carried_log_would_change_the_snapshot(spark, tmp_path):
    """The sink's compaction plans two groups: `sf` holds `trip-k`'s V1 (ts 100) in its base file and its
    tombstone in a log, `la` an update of `trip-m`. While it merges, a batch re-creates `trip-k` with ts 50 and
    updates `trip-m` again. Spark merges `trip-k`'s slice (base V1, tombstone, re-creation) and shows V1
    (docs/semantics.md, "Merge-on-read tables"); carried behind a new base file without the key, the
    re-creation would show. The compaction leaves `sf` out and carries `la`'s late log: Spark's snapshot just
    before it completes, just after, and after the next compaction (which plans `trip-k`'s logs together) are
    the same rows, and hudi-rs reads them too."""
    before, after, again = export_recreated(tmp_path)
    want = [("trip-k", 100, "v1"), ("trip-m", 300, "v3")]
    for name, table in (("before", before), ("after", after), ("again", again)):
        assert key_rows(rows_of_spark(spark_read(spark, table))) == want, f"Spark, {name}"
        assert key_rows(rows_of_arrow(hudi_rs_read(table, "snapshot"))) == want, f"hudi-rs, {name}"
    # The compaction names only the `la` group's new base file, and carries its late log.
    compaction = compaction_carried_logs(after)
    meta = json.loads((after.path / ".hoodie" / f"{compaction}.commit").read_text())
    partitions = sorted(p for p, stats in meta["partitionToWriteStats"].items()
                        if any(s["path"].endswith(".parquet") for s in stats))
    assert [p.split("=")[-1] for p in partitions] == ["la"], meta["partitionToWriteStats"].keys()


def test_without_leaving_the_group_out_spark_shows_another_version_after_the_compaction(spark, tmp_path):
    """The mutation `compaction-keeps-snapshot` compacts the `sf` group too: Spark then shows the re-created
    version once the compaction completes."""
    before, after = export_recreated(tmp_path, "compaction-keeps-snapshot")[:2]
    assert ("trip-k", 100, "v1") in key_rows(rows_of_spark(spark_read(spark, before)))
    assert ("trip-k", 50, "v3") in key_rows(rows_of_spark(spark_read(spark, after)))
