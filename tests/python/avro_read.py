"""Reads an Avro object-container file with fastavro and prints what it holds as JSON.

Used by the Rust integration tests as an independent reader of the timeline's Avro files (clean plans, clean
metadata, clustering plans). With a reader schema, fastavro resolves the writer schema against it as Java Avro
does (fields by name, defaults for missing ones, record full names must match), so the output has exactly the
reader's fields. Output: one JSON object {"records": [...], "codec": ..., "metadata_keys": [...]} on stdout.
With --rewrite, the records are also written back to OUT with --codec, under the reader schema if given, else
the file's writer schema (so that the Rust decoder can be checked on files fastavro wrote).

Usage:
  avro_read.py FILE [--reader-schema SCHEMA_FILE] [--rewrite OUT --codec null|deflate]
"""

import argparse
import json
import sys

import fastavro


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--reader-schema")
    parser.add_argument("--rewrite")
    parser.add_argument("--codec", default="null")
    args = parser.parse_args()

    reader_schema = None
    if args.reader_schema:
        with open(args.reader_schema, encoding="utf-8") as f:
            reader_schema = fastavro.parse_schema(json.load(f))
    with open(args.file, "rb") as f:
        reader = fastavro.reader(f, reader_schema=reader_schema)
        records = list(reader)
        writer_schema = reader.writer_schema
        out = {
            "records": records,
            "codec": reader.codec,
            "metadata_keys": sorted(reader.metadata),
        }
    if args.rewrite:
        with open(args.rewrite, "wb") as f:
            fastavro.writer(f, reader_schema or writer_schema, records, codec=args.codec)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
