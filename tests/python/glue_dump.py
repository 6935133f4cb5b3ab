"""Prints a Glue table and its partitions as JSON, read with boto3 (an independent client of the catalog).

usage: glue_dump.py <endpoint> <database> <table>
Prints {"table": <GetTable's Table or null>, "partitions": [{"Values": [...], "Location": "..."}]}.
"""

import json
import sys

import boto3


def main():
    endpoint, database, table = sys.argv[1:4]
    glue = boto3.client("glue", endpoint_url=endpoint, region_name="us-east-1")
    try:
        found = glue.get_table(DatabaseName=database, Name=table)["Table"]
    except glue.exceptions.EntityNotFoundException:
        print(json.dumps({"table": None, "partitions": []}))
        return
    partitions = []
    for page in glue.get_paginator("get_partitions").paginate(DatabaseName=database, TableName=table):
        for p in page["Partitions"]:
            partitions.append({"Values": p["Values"], "Location": p["StorageDescriptor"]["Location"]})
    print(json.dumps({"table": found, "partitions": partitions}, default=str))


if __name__ == "__main__":
    main()
