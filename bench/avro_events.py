"""Turns the JSON ESM payloads of `make bench` into the same records as Confluent-framed Avro values.

    avro_events.py SCHEMA OUT_DIR EVENT_FILE...

Every value is written by fastavro's `schemaless_writer` with SCHEMA (the table schema, so writer and reader
schemas agree, as with a registry whose latest version is the table's) behind the 5-byte Confluent header
(magic 0, schema id 1). Keys, offsets and every other envelope field stay as they were.
"""

import base64
import datetime
import decimal
import io
import json
import os
import struct
import sys

import fastavro

EPOCH = datetime.date(1970, 1, 1)


def main():
    schema_path, out_dir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(schema_path) as f:
        raw_schema = json.load(f)
    schema = fastavro.parse_schema(raw_schema)
    decimals = {f["name"] for f in raw_schema["fields"]
                if isinstance(f["type"], dict) and f["type"].get("logicalType") == "decimal"}
    dates = {f["name"] for f in raw_schema["fields"]
             if isinstance(f["type"], dict) and f["type"].get("logicalType") == "date"}
    header = b"\x00" + struct.pack(">i", 1)
    os.makedirs(out_dir, exist_ok=True)
    for path in files:
        with open(path) as f:
            event = json.load(f)
        for records in event["records"].values():
            for r in records:
                if r.get("value") is None:
                    continue
                row = json.loads(base64.b64decode(r["value"]))
                for name in decimals:
                    if row.get(name) is not None:
                        row[name] = decimal.Decimal(str(row[name]))
                for name in dates:
                    if isinstance(row.get(name), str):
                        row[name] = (datetime.date.fromisoformat(row[name]) - EPOCH).days
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, schema, row)
                r["value"] = base64.b64encode(header + buf.getvalue()).decode()
        with open(os.path.join(out_dir, os.path.basename(path)), "w") as f:
            json.dump(event, f)


if __name__ == "__main__":
    main()
