"""Decodes Hudi log files (HoodieLogFormat v1, table version 6) and prints their blocks as canonical JSON.

An independent reader for the Rust tests, written from the format description: it frames each block itself
(big-endian: magic "#HUDI#", int64 block size, int32 format version, int32 block type, header map, int64
content length, content, footer map, int64 trailer), decodes Avro data-block records with fastavro's
schemaless reader under the header SCHEMA, delete blocks under the HoodieDeleteRecordList schema below, and
Parquet data blocks with pyarrow. Values are rendered as tests/python/hudi_read.py renders rows (dates as day
numbers, times and timestamps as integers in their unit, decimals as the unscaled integer's text, bytes and
fixed as lower-case hex, maps as [key, value] pairs in stored order), so that the Rust side can compare full
record sets exactly.

Output: {"files": [{"file": PATH, "blocks": [{"offset", "type", "header", "footer", and "records" (data),
"deletes" (delete) or nothing (command)}]}]}; header keys are the ordinals as strings.

Usage:
  log_read.py LOG_FILE...
"""

import copy
import importlib.util
import io
import json
import os
import struct
import sys

import fastavro
import pyarrow.parquet as pq

MAGIC = b"#HUDI#"
COMMAND, DELETE, AVRO_DATA, PARQUET_DATA = 0, 1, 3, 5
SCHEMA_KEY = "2"

_NS = "org.apache.hudi.avro.model"


def _wrapper(name, value_type):
    return {"type": "record", "name": name, "namespace": _NS, "fields": [{"name": "value", "type": value_type}]}


# HoodieDeleteRecordList as the log format description gives it: the ordering value is a union of null and
# one wrapper record per type, each {value: T}.
DELETE_SCHEMA = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _NS,
    "fields": [{
        "name": "deleteRecordList",
        "type": {"type": "array", "items": {
            "type": "record",
            "name": "HoodieDeleteRecord",
            "namespace": _NS,
            "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "type": [
                    "null",
                    _wrapper("BooleanWrapper", "boolean"),
                    _wrapper("IntWrapper", "int"),
                    _wrapper("LongWrapper", "long"),
                    _wrapper("FloatWrapper", "float"),
                    _wrapper("DoubleWrapper", "double"),
                    _wrapper("BytesWrapper", "bytes"),
                    _wrapper("StringWrapper", "string"),
                    _wrapper("DateWrapper", "int"),
                    _wrapper("DecimalWrapper", "bytes"),
                    _wrapper("TimeMicrosWrapper", "long"),
                    _wrapper("TimestampMicrosWrapper", "long"),
                ], "default": None},
            ],
        }},
    }],
}

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def _hudi_read():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hudi_read.py")
    spec = importlib.util.spec_from_file_location("hudi_read", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strip_logical(schema):
    """The schema without logicalType attributes: same binary encoding, raw values from fastavro."""
    if isinstance(schema, list):
        return [strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        out = {k: v for k, v in schema.items() if k != "logicalType"}
        if out.get("type") == "record":
            out["fields"] = [dict(f, type=strip_logical(f["type"])) for f in schema["fields"]]
        elif out.get("type") == "array":
            out["items"] = strip_logical(schema["items"])
        elif out.get("type") == "map":
            out["values"] = strip_logical(schema["values"])
        elif isinstance(out.get("type"), (dict, list)):
            out["type"] = strip_logical(out["type"])
        return out
    return schema


class Canon:
    """Renders raw fastavro values under the (logical-type-bearing) writer schema."""

    def __init__(self, root):
        self.named = {}
        self._collect(root, None)

    @staticmethod
    def _full(schema, ns):
        name = schema["name"]
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        ns = schema.get("namespace", ns)
        return (f"{ns}.{name}" if ns else name), ns

    def _collect(self, s, ns):
        if isinstance(s, list):
            for b in s:
                self._collect(b, ns)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in ("record", "enum", "fixed"):
                full, child_ns = self._full(s, ns)
                self.named.setdefault(full, (s, child_ns))
                if t == "record":
                    for f in s["fields"]:
                        self._collect(f["type"], child_ns)
            elif t == "array":
                self._collect(s["items"], ns)
            elif t == "map":
                self._collect(s["values"], ns)
            elif isinstance(t, (dict, list)):
                self._collect(t, ns)

    def _resolve(self, name, ns):
        for cand in ([f"{ns}.{name}"] if ns and "." not in name else []) + [name]:
            if cand in self.named:
                return self.named[cand]
        raise ValueError(f"undefined type {name}")

    def value(self, s, ns, v):
        if isinstance(s, list):
            if v is None:
                return None
            branches = [b for b in s if b != "null"]
            if len(branches) != 1:
                raise ValueError(f"union {s} is not [null, T]")
            return self.value(branches[0], ns, v)
        if isinstance(s, str):
            if s in PRIMITIVES:
                return self.primitive(s, None, v)
            target, target_ns = self._resolve(s, ns)
            return self.value(target, target_ns, v)
        t = s["type"]
        if isinstance(t, (dict, list)):
            return self.value(t, ns, v)
        if v is None:
            return None
        if t == "record":
            _, child_ns = self._full(s, ns)
            return {f["name"]: self.value(f["type"], child_ns, v.get(f["name"])) for f in s["fields"]}
        if t == "enum":
            return v
        if t == "array":
            return [self.value(s["items"], ns, x) for x in v]
        if t == "map":
            return [[k, self.value(s["values"], ns, x)] for k, x in v.items()]
        if t == "fixed":
            return self.primitive("bytes", s.get("logicalType"), v)
        if t in PRIMITIVES:
            return self.primitive(t, s.get("logicalType"), v)
        target, target_ns = self._resolve(t, ns)
        return self.value(target, target_ns, v)

    @staticmethod
    def primitive(t, logical, v):
        if v is None:
            return None
        if t == "bytes":
            if logical == "decimal":
                return str(int.from_bytes(v, "big", signed=True))
            return v.hex()
        return v


def framed_blocks(data):
    pos = 0
    while pos < len(data):
        start = pos
        if data[pos:pos + 6] != MAGIC:
            raise ValueError(f"no magic at {pos}")
        (size,) = struct.unpack(">q", data[pos + 6:pos + 14])
        end = pos + 14 + size
        if end > len(data):
            raise ValueError(f"block at {start} runs past the end")
        p = pos + 14
        version, block_type = struct.unpack(">ii", data[p:p + 8])
        if version != 1:
            raise ValueError(f"format version {version}")
        p += 8

        def read_map(p):
            (n,) = struct.unpack(">i", data[p:p + 4])
            p += 4
            out = {}
            for _ in range(n):
                key, length = struct.unpack(">ii", data[p:p + 8])
                p += 8
                out[str(key)] = data[p:p + length].decode("utf-8")
                p += length
            return out, p

        header, p = read_map(p)
        (content_len,) = struct.unpack(">q", data[p:p + 8])
        p += 8
        content = data[p:p + content_len]
        p += content_len
        footer, p = read_map(p)
        (trailer,) = struct.unpack(">q", data[p:p + 8])
        p += 8
        if p != end:
            raise ValueError(f"block at {start}: fields end at {p}, size says {end}")
        if trailer != p - 8 - start:
            raise ValueError(f"block at {start}: trailer {trailer}, expected {p - 8 - start}")
        yield start, block_type, header, content, footer
        pos = end


def avro_records(schema_json, content):
    version, count = struct.unpack(">ii", content[:8])
    if version != 3:
        raise ValueError(f"avro block version {version}")
    schema = json.loads(schema_json)
    parsed = fastavro.parse_schema(strip_logical(copy.deepcopy(schema)))
    canon = Canon(schema)
    p = 8
    out = []
    for _ in range(count):
        (length,) = struct.unpack(">i", content[p:p + 4])
        p += 4
        buf = io.BytesIO(content[p:p + length])
        record = fastavro.schemaless_reader(buf, parsed, None)
        if buf.tell() != length:
            raise ValueError("record length does not match its datum")
        out.append(canon.value(schema, None, record))
        p += length
    if p != len(content):
        raise ValueError("bytes after the last record")
    return out


def delete_records(content):
    version, length = struct.unpack(">ii", content[:8])
    if version != 3:
        raise ValueError(f"delete block version {version}")
    if length != len(content) - 8:
        raise ValueError("delete list length does not match the content")
    buf = io.BytesIO(content[8:])
    value = fastavro.schemaless_reader(buf, fastavro.parse_schema(DELETE_SCHEMA), None, return_record_name=True)
    out = []
    for r in value["deleteRecordList"]:
        ordering = r["orderingVal"]
        if ordering is not None:
            name, wrapped = ordering
            v = wrapped["value"]
            ordering = {"type": name.rsplit(".", 1)[-1], "value": v.hex() if isinstance(v, bytes) else v}
        out.append({"recordKey": r["recordKey"], "partitionPath": r["partitionPath"], "orderingVal": ordering})
    return out


def read_file(path, hudi_read):
    with open(path, "rb") as f:
        data = f.read()
    blocks = []
    for offset, block_type, header, content, footer in framed_blocks(data):
        block = {"offset": offset, "type": block_type, "header": header, "footer": footer}
        if block_type == AVRO_DATA:
            block["records"] = avro_records(header[SCHEMA_KEY], content)
        elif block_type == PARQUET_DATA:
            block["records"] = hudi_read.canon_table(pq.read_table(io.BytesIO(content)))["rows"]
        elif block_type == DELETE:
            block["deletes"] = delete_records(content)
        elif block_type == COMMAND:
            if content:
                raise ValueError("command block with content")
        else:
            raise ValueError(f"block type {block_type}")
        blocks.append(block)
    return {"file": path, "blocks": blocks}


def main():
    hudi_read = _hudi_read()
    json.dump({"files": [read_file(p, hudi_read) for p in sys.argv[1:]]}, sys.stdout)
    sys.stdout.flush()
    # Skip interpreter teardown: pyarrow's native threads occasionally abort it ("terminate called without an
    # active exception") after all output is written, which would fail the test for nothing.
    os._exit(0)


if __name__ == "__main__":
    main()
