"""Copies a local directory, byte for byte, under an S3 prefix (the bucket made if missing), with boto3.

usage: s3_put_tree.py <endpoint> <directory> <bucket> <prefix>
"""

import pathlib
import sys

import boto3


def main():
    endpoint, directory, bucket, prefix = sys.argv[1:5]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=bucket)
    root = pathlib.Path(directory)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(root).as_posix()}")


if __name__ == "__main__":
    main()
