"""An independent model of the rows a bucket-indexed table of the sink must hold, merge-on-read included.

The generator's model (`hudi-sink generate --model`) applies copy-on-write merging. On merge-on-read, readers
merge each file slice at read time, by Hudi's rule (docs/semantics.md, "Merge-on-read tables";
docs/compatibility.md, limit 6), and that differs for a key deleted and re-created. `TableModel` replays the
generated event files as `hudi-sink ingest --commit-interval-ms 0` reads them (one batch per file), keeps what
each batch leaves in base files and logs, and merges a slice as Hudi 0.15's reader does. It shares no code with
the sink: the rules it follows are the documented ones, each stated where it is applied.
"""

import base64
import json

# A slice's log entry: a delete record (Kafka tombstone, or a `_hoodie_is_deleted` row after a tombstone of
# its batch), written with Spark's natural-order ordering value, which readers apply by log order.
DELETE = "delete"
# The log scanner's state of a key before any of its log records.
ABSENT = "absent"


def java_string_hash(s):
    """Java's `String.hashCode` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_of(key, num_buckets):
    """Hudi's `BucketIdentifier.getBucketId` for a single-field key: `(List.of(key).hashCode() & MAX) % n`."""
    h = (31 + java_string_hash(key)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % num_buckets


class Fold:
    """A key's version after folding one batch: `tombstone` (nothing after the key's last tombstone), or `row`
    (`forced` when it follows a tombstone of the batch)."""

    def __init__(self, row=None, forced=False):
        self.row = row
        self.forced = forced

    @property
    def tombstone(self):
        return self.row is None


class TableModel:
    """The rows of a table of the sink written from event files, on either table type.

    Batches: each event file is one batch. Records whose offset is below the checkpoint of their Kafka
    partition (the next offset after the last committed batch) are redeliveries and dropped; a batch left empty
    makes no instant. Within a batch, per key in arrival order: a tombstone discards the versions before it;
    versions after it are forced (they re-create the key); otherwise the larger ordering value wins, ties to the
    later record (docs/semantics.md, "Merge semantics").

    Copy-on-write: the folded version merges into the stored row at once: a tombstone deletes it, a forced
    version replaces it, another one replaces it when its ordering value is at least the stored one;
    `_hoodie_is_deleted` versions delete.

    Merge-on-read: a file group is one (partition path, bucket), the bucket Hudi's simple bucket index computes
    from the record key. The first batch that has a live version for a (partition, bucket) creates its file
    group with a base file holding that batch's live versions (deleted versions and tombstones of a bucket
    without a file group write nothing); every later batch appends to the group's log: a delete record for a
    tombstone or a forced `_hoodie_is_deleted` version, a delete record then a data row for another forced
    version (the batch's tombstone, then the re-creation), a data row for any other version. A compaction of every file group replaces each base file with the slice it planned, merged;
    logs written while it was pending stay, on the new base file. Merging a slice, per key: the log records in
    order, a delete record replacing whatever came before it, a data row replacing a delete or a data row with an
    ordering value not larger (Hudi's `preCombine`); then the result against the base file's version: a delete
    record deletes, a data row with a smaller ordering value than the base version loses to it (the base version
    shows again, with its commit time), otherwise the data row wins; a winning `_hoodie_is_deleted` row deletes.
    """

    def __init__(self, table_type, num_buckets=4, key_field="uuid", partition_field="city", ordering_field="ts"):
        assert table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"), table_type
        self.table_type = table_type
        self.num_buckets = num_buckets
        self.key_field = key_field
        self.partition_field = partition_field
        self.ordering_field = ordering_field
        # (topic, Kafka partition) -> next offset to read.
        self.checkpoint = {}
        # Copy-on-write: key -> stored row. Merge-on-read: key -> the base file's version.
        self.base = {}
        # Merge-on-read: key -> log entries of its slice, in commit order (DELETE or a row).
        self.logs = {}
        # Merge-on-read: (partition path, bucket) of every file group.
        self.groups = set()
        # key -> partition path (a key's partition never changes): where its tombstones apply.
        self.partition_of = {}
        # Merge-on-read: while a compaction is planned and not complete, key -> how many of its log entries the
        # compaction merges.
        self.plan = None

    # -- reading event files --------------------------------------------------------------------------------

    def deliver(self, path):
        """The records of the event file at `path` that are not redeliveries, as (record key, value or None), in
        the order the sink reads them; advances the checkpoint. A value's record key is its key field; a
        tombstone's, the Kafka key."""
        event = json.loads(path.read_text())
        kept = []
        seen = {}
        for records in event["records"].values():
            for r in records:
                tp = (r["topic"], r["partition"])
                if r["offset"] < self.checkpoint.get(tp, 0):
                    continue
                seen[tp] = max(seen.get(tp, 0), r["offset"] + 1)
                if r["value"] is None:
                    kept.append((base64.b64decode(r["key"]).decode(), None))
                else:
                    value = json.loads(base64.b64decode(r["value"]))
                    kept.append((value[self.key_field], value))
        self.checkpoint.update(seen)
        return kept

    def fold(self, records):
        """One batch folded per key: {key: Fold}, keys in first-arrival order."""
        folded = {}
        for key, value in records:
            current = folded.get(key)
            if value is None:
                folded[key] = Fold()
            elif current is None:
                folded[key] = Fold(value)
            elif current.tombstone:
                folded[key] = Fold(value, forced=True)
            elif value[self.ordering_field] >= current.row[self.ordering_field]:
                folded[key] = Fold(value, forced=current.forced)
        return folded

    def ingest(self, path, instant):
        """Applies the event file at `path` as one batch; `instant()` names the batch's commit time and is called
        only when the batch keeps records. Returns whether it did."""
        records = self.deliver(path)
        if not records:
            return False
        commit_time = instant()
        folded = self.fold(records)
        for key, version in folded.items():
            if version.row is not None:
                version.row = self.with_meta(key, version.row, commit_time)
                self.partition_of[key] = version.row["_hoodie_partition_path"]
        if self.table_type == "COPY_ON_WRITE":
            self._merge_cow(folded)
        else:
            self._append_mor(folded)
        return True

    def with_meta(self, key, value, commit_time):
        """The row a reader shows for `value`: Hudi's meta columns (hive-style partition path) and the data."""
        return {"_hoodie_commit_time": commit_time, "_hoodie_record_key": key,
                "_hoodie_partition_path": f"{self.partition_field}={value[self.partition_field]}", **value}

    # -- copy-on-write --------------------------------------------------------------------------------------

    def _merge_cow(self, folded):
        for key, version in folded.items():
            row, stored = version.row, self.base.get(key)
            if row is None:
                self.base.pop(key, None)
            elif version.forced or stored is None or row[self.ordering_field] >= stored[self.ordering_field]:
                if row.get("_hoodie_is_deleted"):
                    self.base.pop(key, None)
                else:
                    self.base[key] = row

    # -- merge-on-read --------------------------------------------------------------------------------------

    def _append_mor(self, folded):
        by_group = {}
        for key, version in folded.items():
            partition = self.partition_of.get(key)
            if partition is None:
                # A tombstone of a key never written: nothing stored to delete.
                continue
            by_group.setdefault((partition, bucket_of(key, self.num_buckets)), []).append((key, version))
        for group, versions in by_group.items():
            if group not in self.groups:
                live = [(k, v.row) for k, v in versions if v.row is not None and not v.row.get("_hoodie_is_deleted")]
                if live:
                    self.groups.add(group)
                    for key, row in live:
                        self.base[key] = row
                continue
            for key, version in versions:
                log = self.logs.setdefault(key, [])
                if version.row is None or (version.forced and version.row.get("_hoodie_is_deleted")):
                    log.append(DELETE)
                elif version.forced:
                    log += [DELETE, version.row]
                else:
                    log.append(version.row)

    def merged(self, key):
        """The key's version in a snapshot of its slice, or None."""
        return self._merge(self.base.get(key), self.logs.get(key, []))

    def _merge(self, base, log):
        """A slice's version of a key: the base file's version `base` (or None) merged with the log entries `log`
        in commit order."""
        state = ABSENT
        for entry in log:
            if entry is DELETE:
                state = DELETE
            elif state in (ABSENT, DELETE) or entry[self.ordering_field] >= state[self.ordering_field]:
                state = entry
        if state is ABSENT:
            version = base
        elif state is DELETE:
            version = None
        elif base is not None and base[self.ordering_field] > state[self.ordering_field]:
            version = base
        else:
            version = state
        if version is None or version.get("_hoodie_is_deleted"):
            return None
        return version

    def group_of(self, key):
        """The (partition path, bucket) of the key's file group."""
        return self.partition_of[key], bucket_of(key, self.num_buckets)

    def plan_compaction(self, groups=None):
        """Plans a compaction of the file groups `groups` ((partition path, bucket) pairs; None: every group): it
        merges each slice as it is now. The logs written until it completes go to the slices it makes, and until
        then readers merge them with the planned slice as one slice (its base file, then all the logs): a snapshot
        of the model is unchanged by the plan."""
        assert self.table_type == "MERGE_ON_READ" and self.plan is None
        self.plan = {k: len(log) for k, log in self.logs.items() if groups is None or self.group_of(k) in groups}

    def compact(self, groups=None):
        """Completes the planned compaction (planning one of `groups` first if none is): each planned base file
        becomes its planned slice merged, and the logs written since the plan stay, on the new base."""
        if self.plan is None:
            self.plan_compaction(groups)
        plan, self.plan = self.plan, None
        base = {}
        for key in set(self.base) | set(self.logs):
            version = self._merge(self.base.get(key), self.logs.get(key, [])[:plan.get(key, 0)])
            if version is not None:
                base[key] = version
        self.logs = {k: log[plan.get(k, 0):] for k, log in self.logs.items() if log[plan.get(k, 0):]}
        self.base = base

    def resurrected(self):
        """Keys whose snapshot shows their base file's version although a delete record and then a data row of
        the key follow it in the slice's logs: the key re-created below its base version after a tombstone."""
        out = []
        for key, log in self.logs.items():
            base = self.base.get(key)
            if base is None or DELETE not in log[:-1]:
                continue
            after = log[log.index(DELETE) + 1:]
            if any(e is not DELETE for e in after) and self.merged(key) is base:
                out.append(key)
        return sorted(out)

    # -- reading the model ----------------------------------------------------------------------------------

    def snapshot(self):
        """The live rows, each with `_hoodie_commit_time`, `_hoodie_record_key` and `_hoodie_partition_path`."""
        if self.table_type == "COPY_ON_WRITE":
            return list(self.base.values())
        keys = set(self.base) | set(self.logs)
        return [v for k in keys if (v := self.merged(k)) is not None]
