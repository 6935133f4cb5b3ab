"""Avro payloads and a Confluent registry made by independent libraries, for the Rust tests.

  avro_registry.py serve DIR
      A stub Confluent Schema Registry on 127.0.0.1: GET /schemas/ids/<id> answers {"schema": <DIR/<id>.avsc>}
      (404 with error_code 40403 when there is no such file; DIR/<id>.status holds another status to answer
      with); GET /subjects/<s>/versions/latest answers {"subject", "version", "id", "schema"} for the id
      written in DIR/subjects/<s> (404 without it; DIR/subjects/<s>.status likewise). Prints the port,
      serves until stdin closes, and counts requests in DIR/requests.log.

  avro_registry.py encode SPEC OUT
      SPEC (JSON): {"table": <table schema>, "schemas": {"<name>": <writer schema>},
                    "records": [{"key": str, "schema": "<name>", "framing": "confluent:<id>" |
                                 "glue:<uuid>" | "glue-zlib:<uuid>" | "glue-bomb:<uuid>" | "bare" | "hex",
                                 "datum": <record as fastavro takes it> | "hex": "<raw value bytes>",
                                 "expect": true|false, "metadata": <valueSchemaMetadata, passed through>}]}
      Each datum is written by fastavro's schemaless_writer with its writer schema and framed; each expected
      row is what fastavro's resolving reader gives for it with the table schema as reader schema, rendered
      the way hudi_read.py renders a table row (timestamps and dates as integers, decimals as unscaled
      integer strings, bytes and fixed as hex, maps as [key, value] pairs). OUT (JSON):
      {"values": [{"key", "value_b64", "metadata"?}], "rows": [row or null per record]}.
"""

import base64
import copy
import decimal
import io
import json
import os
import struct
import sys
import threading
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fastavro


def serve(directory):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            with lock:
                with open(os.path.join(directory, "requests.log"), "a") as log:
                    log.write(self.path + " " + (self.headers.get("authorization") or "-") + "\n")
            subject = self.path.split("?")[0]
            if subject.startswith("/subjects/") and subject.endswith("/versions/latest"):
                name = subject[len("/subjects/"):-len("/versions/latest")]
                latest = os.path.join(directory, "subjects", name)
                status_file = latest + ".status"
                if os.path.exists(status_file):
                    with open(status_file) as f:
                        return self.answer(int(f.read().strip()), {"error_code": 50001, "message": "stub"})
                if not os.path.exists(latest):
                    return self.answer(404, {"error_code": 40401, "message": "Subject not found"})
                with open(latest) as f:
                    sid = int(f.read().strip())
                with open(os.path.join(directory, f"{sid}.avsc")) as f:
                    return self.answer(200, {"subject": name, "version": sid, "id": sid, "schema": f.read()})
            prefix = "/schemas/ids/"
            if not self.path.startswith(prefix):
                return self.answer(404, {"error_code": 404, "message": "not found"})
            sid = self.path[len(prefix):].split("?")[0]
            status_file = os.path.join(directory, sid + ".status")
            if os.path.exists(status_file):
                with open(status_file) as f:
                    return self.answer(int(f.read().strip()), {"error_code": 50001, "message": "stub"})
            path = os.path.join(directory, sid + ".avsc")
            if not os.path.exists(path):
                return self.answer(404, {"error_code": 40403, "message": "Schema not found"})
            with open(path) as f:
                return self.answer(200, {"schema": f.read()})

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/vnd.schemaregistry.v1+json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_port, flush=True)
    sys.stdin.read()
    server.shutdown()


def strip_logical(schema):
    """The schema with logical types removed, so that fastavro hands out the stored integers and bytes."""
    if isinstance(schema, list):
        return [strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        out = {k: strip_logical(v) for k, v in schema.items() if k not in ("logicalType", "precision", "scale")}
        if "fields" in schema:
            out["fields"] = [dict(f, type=strip_logical(f["type"])) for f in schema["fields"]]
        return out
    return schema




def render(value, schema, named):
    """A fastavro value (read with logical types stripped) rendered as hudi_read.py renders the column."""
    if isinstance(schema, str):
        if schema in named:
            return render(value, named[schema], named)
        if value is None:
            return None
        if schema == "bytes":
            return value.hex()
        return value
    if isinstance(schema, list):
        if value is None:
            return None
        branches = [b for b in schema if b != "null"]
        return render(value, branches[0], named)
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return render(value, t, named)
    if value is None:
        return None
    logical = schema.get("logicalType")
    if t == "record":
        named[schema["name"]] = schema
        return {f["name"]: render(value[f["name"]], f["type"], named) for f in schema["fields"]}
    if t == "enum":
        named[schema["name"]] = schema
        return value
    if t == "fixed":
        named[schema["name"]] = schema
        if logical == "decimal":
            return str(int.from_bytes(value, "big", signed=True))
        return value.hex()
    if t == "array":
        return [render(v, schema["items"], named) for v in value]
    if t == "map":
        return [[k, render(v, schema["values"], named)] for k, v in value.items()]
    if t == "bytes":
        if logical == "decimal":
            return str(int.from_bytes(value, "big", signed=True))
        return value.hex()
    return value


def collect_named(schema, named):
    if isinstance(schema, list):
        for s in schema:
            collect_named(s, named)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "enum", "fixed") and "name" in schema:
            named[schema["name"]] = schema
        for f in schema.get("fields", []):
            collect_named(f["type"], named)
        for k in ("items", "values"):
            if k in schema:
                collect_named(schema[k], named)
        if isinstance(schema.get("type"), (dict, list)):
            collect_named(schema["type"], named)


def prepare(value, schema, named):
    """JSON-carried values in the types fastavro writes: bytes and fixed from strings whose code points are
    the bytes (Avro's JSON encoding), decimals from their text."""
    if isinstance(schema, str):
        if schema in named:
            return prepare(value, named[schema], named)
        if schema == "bytes" and isinstance(value, str):
            return value.encode("latin-1")
        return value
    if isinstance(schema, list):
        if value is None:
            return None
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return prepare(value, branches[0], named)
        return value
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return prepare(value, t, named)
    if value is None:
        return None
    if t == "record":
        named[schema["name"]] = schema
        out = dict(value)
        for f in schema["fields"]:
            if f["name"] in out:
                out[f["name"]] = prepare(out[f["name"]], f["type"], named)
        return out
    if t in ("enum", "fixed"):
        named[schema["name"]] = schema
    if schema.get("logicalType") == "decimal" and isinstance(value, str):
        return decimal.Decimal(value)
    if t in ("bytes", "fixed") and isinstance(value, str):
        return value.encode("latin-1")
    if t == "array":
        return [prepare(v, schema["items"], named) for v in value]
    if t == "map":
        return {k: prepare(v, schema["values"], named) for k, v in value.items()}
    return value


def encode(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    table = spec["table"]
    writers = {name: fastavro.parse_schema(copy.deepcopy(s)) for name, s in spec["schemas"].items()}
    plain_table = strip_logical(table)
    values, rows = [], []
    for rec in spec["records"]:
        if "hex" in rec:
            raw = bytes.fromhex(rec["hex"])
        elif rec.get("framing", "").startswith("glue-bomb:"):
            # 7 MiB of zeros, a few kB compressed: past the sink's inflate limit.
            raw = b"\x03\x05" + uuid.UUID(rec["framing"].split(":", 1)[1]).bytes + zlib.compress(bytes(7 << 20), 9)
        else:
            writer = writers[rec["schema"]]
            buf = io.BytesIO()
            # Named types up front: a reference ("after": ["null", "Value"]) may come before its definition
            # is met in the datum (a null "before").
            named = {}
            collect_named(spec["schemas"][rec["schema"]], named)
            datum = prepare(rec["datum"], spec["schemas"][rec["schema"]], named)
            fastavro.schemaless_writer(buf, writer, datum)
            body = buf.getvalue()
            framing = rec["framing"]
            if framing.startswith("confluent:"):
                raw = b"\x00" + struct.pack(">i", int(framing.split(":", 1)[1])) + body
            elif framing.startswith("glue:"):
                raw = b"\x03\x00" + uuid.UUID(framing.split(":", 1)[1]).bytes + body
            elif framing.startswith("glue-zlib:"):
                raw = b"\x03\x05" + uuid.UUID(framing.split(":", 1)[1]).bytes + zlib.compress(body)
            elif framing == "bare":
                raw = body
            else:
                raise SystemExit("unknown framing " + framing)
        entry = {"key": rec["key"], "value_b64": base64.b64encode(raw).decode()}
        if "metadata" in rec:
            entry["metadata"] = rec["metadata"]
        values.append(entry)
        if not rec.get("expect", True):
            rows.append(None)
            continue
        # The oracle: fastavro's resolution of the writer's datum to the table schema.
        plain_writer = fastavro.parse_schema(strip_logical(spec["schemas"][rec["schema"]]))
        resolved = fastavro.schemaless_reader(
            io.BytesIO(body), plain_writer, fastavro.parse_schema(copy.deepcopy(plain_table))
        )
        named = {}
        collect_named(table, named)
        rows.append(render(resolved, table, named))
    with open(out_path, "w") as f:
        json.dump({"values": values, "rows": rows}, f)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "encode":
        encode(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
