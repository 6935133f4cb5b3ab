"""Trino's Hudi connector (Trino 476, the engine behind Athena's SQL) reads the sink's tables, row for row.

Each table is written by the sink, copied byte for byte into moto's S3 and registered by the sink's own catalog
sync (`hudi-sink sync-catalog`) in moto's Glue; one Trino server (single node, `jvm/pom-trino.xml`, unpacked by
`make test-interop` into target/jvm/trino-476) reads it through a `hudi` catalog on Glue and Trino's native S3
file system, both pointed at moto. Trino's rows must equal Spark's read-optimized rows (meta columns included)
and, on copy-on-write tables, the generator's model. The connector reads the latest base files only: a
merge-on-read table's `_rt` table returns its read-optimized rows (docs/compatibility.md, limit 14).
"""

import json
import os
import pathlib
import socket
import subprocess
import time

import pytest

from conftest import (COW, MOR, READERS_PYTHON, ROOT, TABLES, aws_env, canon, data_only, diff, hoodie_properties,
                      model_rows, read_optimized, row_key, run, spark_rows, sync_catalog, write_catalog_tables)

BUCKET = "lake"
# Trino 476 needs Java 24 or later; the machine's default java may be older.
MIN_JAVA = 24


def trino_home():
    home = os.environ.get("HUDI_SINK_TRINO_HOME")
    if home:
        return pathlib.Path(home)
    found = sorted((ROOT / "target" / "jvm").glob("trino-*/trino-server-*/lib"))
    if not found:
        pytest.fail("no Trino server in target/jvm: run `make test-interop` (it resolves jvm/pom-trino.xml)")
    return found[-1].parent


def java_home():
    """`HUDI_SINK_TRINO_JAVA_HOME`, else the first JDK under /usr/lib/jvm whose release is at least `MIN_JAVA`."""
    home = os.environ.get("HUDI_SINK_TRINO_JAVA_HOME")
    if home:
        return pathlib.Path(home)
    for release in sorted(pathlib.Path("/usr/lib/jvm").glob("*/release")):
        fields = dict(line.split("=", 1) for line in release.read_text().splitlines() if "=" in line)
        major = fields.get("JAVA_VERSION", '"0"').strip('"').split(".")[0]
        if major.isdigit() and int(major) >= MIN_JAVA and (release.parent / "bin" / "java").exists():
            return release.parent
    pytest.fail(f"Trino needs Java {MIN_JAVA}+: set HUDI_SINK_TRINO_JAVA_HOME")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_properties(path, props):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def write_catalog(path, connector, endpoint):
    """A catalog of `connector` (`hudi`, `delta_lake`) on moto's Glue and Trino's native S3 file system."""
    write_properties(path, {
        "connector.name": connector,
        "hive.metastore": "glue",
        "hive.metastore.glue.region": "us-east-1",
        "hive.metastore.glue.endpoint-url": endpoint,
        "hive.metastore.glue.aws-access-key": "test",
        "hive.metastore.glue.aws-secret-key": "test",
        "fs.native-s3.enabled": "true",
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "s3.path-style-access": "true",
        "s3.aws-access-key": "test",
        "s3.aws-secret-key": "test",
    })


class Trino:
    """One Trino server: a coordinator that also runs the work, with a catalog per connector of `catalogs`
    ({catalog: connector}; by default a `hudi` catalog) on moto's Glue and S3."""

    def __init__(self, tmp, endpoint, catalogs=None):
        home, port = trino_home(), free_port()
        etc = tmp / "etc"
        write_properties(etc / "config.properties", {
            "coordinator": "true",
            "node-scheduler.include-coordinator": "true",
            "http-server.http.port": port,
            "discovery.uri": f"http://127.0.0.1:{port}",
            "query.max-memory": "512MB",
            "query.max-memory-per-node": "256MB",
            "plugin.dir": home / "plugin",
            "catalog.config-dir": etc / "catalog",
        })
        for catalog, connector in (catalogs or {"hudi": "hudi"}).items():
            write_catalog(etc / "catalog" / f"{catalog}.properties", connector, endpoint)
        self.port = port
        self.log = tmp / "server.log"
        java = java_home() / "bin" / "java"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [str(java), "-Xmx1G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-Djdk.attach.allowAttachSelf=true",
                 "-Duser.timezone=UTC", f"-Dconfig={etc / 'config.properties'}", "-Dnode.environment=interop",
                 "-Dnode.id=interop", f"-Dnode.data-dir={tmp / 'data'}", "-cp", f"{home / 'lib'}/*",
                 "io.trino.server.TrinoServer"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp)  # var/log goes there
        self.started = time.monotonic()
        self.wait()

    def wait(self, timeout=300):
        """Until the server answers a query (its node registered), or fails with its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"Trino exited ({self.process.returncode}):\n{self.log.read_text()[-4000:]}")
            if "SERVER STARTED" in self.log.read_text():
                try:
                    self.query("SELECT 1")
                    print(f"Trino answered {time.monotonic() - self.started:.1f} s after its start")
                    return
                except Exception:
                    pass
            time.sleep(1)
        self.stop()
        pytest.fail(f"Trino did not start in {timeout} s:\n{self.log.read_text()[-4000:]}")

    def query(self, sql):
        """Rows of `sql` as {column: value} dicts."""
        import trino

        with trino.dbapi.connect(host="127.0.0.1", port=self.port, user="interop", catalog="hudi") as conn:
            cursor = conn.cursor()
            cursor.execute(sql)
            rows = cursor.fetchall()
            names = [d[0] for d in cursor.description]
            types = [d[1] for d in cursor.description]
        self.types = dict(zip(names, types))
        return [dict(zip(names, row)) for row in rows]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def trino(tmp_path_factory, moto_endpoint):
    server = Trino(tmp_path_factory.mktemp("trino"), moto_endpoint)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_catalog_tables(tmp_path_factory)


@pytest.fixture(scope="module")
def catalog(moto_endpoint, tables):
    """Every table copied to s3://lake/<name> and registered in Glue twice: in `lake` with the timestamp column a
    `bigint` (the sync's default), in `lake_timestamps` as a `timestamp` (`support_timestamp`)."""
    env = aws_env(moto_endpoint)
    for name, table in tables.items():
        run(READERS_PYTHON, ROOT / "tests" / "python" / "s3_put_tree.py", moto_endpoint, table.path, BUCKET, name,
            env=env)
        for database, timestamps in (("lake", False), ("lake_timestamps", True)):
            sync_catalog(table, env, database, name, timestamps=timestamps, base_path=f"s3://{BUCKET}/{name}")
    return tables


def trino_value(value):
    """A Trino value in `conftest.canon`'s form: a `row` (a named tuple) as a dict."""
    if isinstance(value, tuple) and hasattr(value, "_names"):
        return {n: trino_value(v) for n, v in zip(value._names, value)}
    return canon(value)


def micros_columns(table):
    """Top-level columns of Avro `timestamp-micros`: the catalog registers them as `bigint` unless synced with
    `support_timestamp`, and Trino then returns the stored microseconds, which Spark reads as a timestamp."""
    schema = json.loads(hoodie_properties(table)["hoodie.table.create.schema"].replace("\\:", ":"))
    out = set()
    for field in schema["fields"]:
        types = field["type"] if isinstance(field["type"], list) else [field["type"]]
        if any(isinstance(t, dict) and t.get("logicalType") == "timestamp-micros" for t in types):
            out.add(field["name"])
    return out


def read(trino, database, name, table):
    """Trino's `SELECT *` of `database.name` (the registration of `table`) in `conftest.canon`'s form, sorted like
    Spark's rows."""
    micros = micros_columns(table)
    rows = [{k: ("ts_us", v) if k in micros and isinstance(v, int) else trino_value(v) for k, v in r.items()}
            for r in trino.query(f'SELECT * FROM hudi.{database}."{name}"')]
    return sorted(rows, key=row_key)


def registered_name(tables, name, view):
    """The Glue name of `name`'s view: the copy-on-write table itself, or a merge-on-read `_ro` / `_rt` table."""
    return name if tables[name].table_type == COW else f"{name}_{view}"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_read_optimized_equals_spark(spark, trino, catalog, name):
    """Trino returns the latest base files' rows: Spark's read-optimized rows, meta columns, partition column and
    every type of the `bench` schema included (strings, longs, ints, doubles, a decimal, a boolean, a date, a
    nested record); on copy-on-write tables, the model."""
    table = catalog[name]
    rows = read(trino, "lake", registered_name(catalog, name, "ro"), table)
    assert rows, name
    assert not diff("trino", rows, "spark read-optimized", read_optimized(spark, table))
    if table.table_type == COW:
        assert not diff("trino", data_only(rows), "model", model_rows(table))


@pytest.mark.parametrize("name", sorted(n for n, (t, _) in TABLES.items() if t == MOR))
def test_realtime_table_reads_base_files_only(spark, trino, catalog, name):
    """Limit 14: the connector accepts the `_rt` table (`HoodieParquetRealtimeInputFormat`) but merges no log file:
    it returns the read-optimized rows, not Spark's snapshot, which the logs change."""
    table = catalog[name]
    assert any(table.path.rglob(".*.log.*")), "no logs to merge"
    snapshot = spark_rows(spark, table)
    ro = read_optimized(spark, table)
    assert diff("spark snapshot", snapshot, "spark read-optimized", ro), "the logs change nothing: the test shows nothing"
    assert not diff("trino _rt", read(trino, "lake", f"{name}_rt", table), "spark read-optimized", ro)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_timestamp_columns_equal_spark(spark, trino, catalog, name):
    """Synced with `support_timestamp`, the `timestamp-micros` column is a Glue `timestamp`, which the connector
    reads as `timestamp(9)`: every microsecond kept, the rows equal Spark's read-optimized rows."""
    table, column = catalog[name], "event_ts"
    want = read_optimized(spark, table)
    assert any(r[column][1] % 1000 for r in want if r[column]), "no timestamp has microseconds: the test shows nothing"
    rows = read(trino, "lake_timestamps", registered_name(catalog, name, "ro"), table)
    assert trino.types[column] == "timestamp(9)", trino.types
    assert not diff("trino", rows, "spark read-optimized", want)
