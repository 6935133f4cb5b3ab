//! Preparing a write: incoming rows keyed, placed and folded per key (tombstones included), before any
//! instant exists, so that every attempt of a batch writes the same preparation.

use super::*;
use crate::write::ordering::OrderingComparator;

impl TableWriter {
    /// Keys, places and folds the incoming rows. Fails on the first row that cannot be keyed.
    pub fn prepare(
        &self,
        operation: WriteOperation,
        batches: &[RecordBatch],
    ) -> Result<PreparedWrite, WriteError> {
        let batch = self.concat(batches)?;
        let prepared = self.prepare_records(operation, batch, None, &[], &[])?;
        match prepared.rejected.first() {
            Some((row, source)) => Err(WriteError::Record {
                row: *row,
                source: source.clone(),
            }),
            None => Ok(prepared),
        }
    }

    /// Concatenates incoming batches after checking they have the table's data schema.
    pub fn concat(&self, batches: &[RecordBatch]) -> Result<RecordBatch, WriteError> {
        let schema = self.schema();
        for b in batches {
            if b.schema().fields() != schema.data.fields() {
                return Err(WriteError::Data {
                    reason: format!(
                        "batch schema {:?} differs from table schema {:?}",
                        b.schema(),
                        schema.data
                    ),
                });
            }
        }
        concat_batches(&schema.data, batches).map_err(|source| WriteError::Arrow {
            context: "concatenate incoming batches",
            source,
        })
    }

    /// Keys, places and folds incoming rows and Kafka tombstones, in arrival order.
    ///
    /// `positions[i]` is the arrival position of data row `i` (default: its index); `tombstones` are
    /// `(record key, position)` of tombstones (records without a value). Per key, in arrival order: a
    /// tombstone deletes whatever came before it; a record after a tombstone recreates the key whatever the
    /// stored ordering value; otherwise the larger ordering value wins, ties go to the later record. Rows
    /// whose key or partition cannot be computed are returned in `rejected` (with their row index) and take
    /// no part in the write.
    ///
    /// `priors` (ascending row indices) are rows that delete the version before the row just above them (a
    /// Debezium update's before image): each is written only when it has that row's key and names another
    /// partition, where the key's older version would otherwise stay (Hudi's indexes find a key within one
    /// partition); otherwise, or when it cannot be keyed, it is left out and counted nowhere.
    pub fn prepare_records(
        &self,
        operation: WriteOperation,
        batch: RecordBatch,
        positions: Option<&[u64]>,
        tombstones: &[(String, u64)],
        priors: &[usize],
    ) -> Result<PreparedWrite, WriteError> {
        let shape = self.shape();
        // Decoded under an older schema (another task evolved it since): the rows in the current one.
        let batch = project_incoming(&batch, &shape.schema)?;
        let rows = batch.num_rows();
        let position = |row: usize| {
            positions
                .and_then(|p| p.get(row).copied())
                .unwrap_or(row as u64)
        };
        let mut last_tombstone: HashMap<&str, u64> = HashMap::new();
        for (key, pos) in tombstones {
            let e = last_tombstone.entry(key.as_str()).or_insert(*pos);
            *e = (*e).max(*pos);
        }
        let mut keys = vec![String::new(); rows];
        let mut deletes = vec![false; rows];
        let mut forced = vec![false; rows];
        let mut rejected = Vec::new();
        let mut counts = WriteCounts::default();
        let is_deleted = shape
            .is_deleted
            .map(|i| batch.column(i).as_boolean().clone());
        let op_deleted = shape
            .op_deleted
            .map(|i| batch.column(i).as_string::<i32>().clone());
        let mut by_partition: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        // One partition-path buffer for all rows: a path is copied only the first time it is seen.
        let mut part = String::new();
        // The partition path of a prior's row (the one above it).
        let mut above = String::new();
        // `(row, prior)` of the rows that moved: a TOAST placeholder of the row takes its before image's
        // value.
        let mut moved_from = Vec::new();
        for row in 0..rows {
            let mut key = String::new();
            let is_prior = priors.binary_search(&row).is_ok();
            part.clear();
            if let Err(e) = shape
                .keygen
                .record_key(&batch, row, &mut key)
                .and_then(|()| shape.keygen.partition_path(&batch, row, &mut part))
            {
                if !is_prior {
                    rejected.push((row, e));
                }
                continue;
            }
            if is_prior {
                // The row above was placed with this key (a placed row's key is never empty) in another
                // partition.
                above.clear();
                let moved = row > 0
                    && keys[row - 1] == key
                    && shape
                        .keygen
                        .partition_path(&batch, row - 1, &mut above)
                        .is_ok()
                    && part != above
                    && !crate::mutation::is_disabled(crate::mutation::Mutation::PartitionMove);
                if !moved {
                    continue;
                }
                counts.moved += 1;
                moved_from.push((row - 1, row));
            }
            counts.records_in += 1;
            let pos = position(row);
            match last_tombstone.get(key.as_str()) {
                // A later tombstone deletes this version whatever its ordering value.
                Some(t) if *t > pos => {
                    counts.deduped += 1;
                    continue;
                }
                Some(_) => forced[row] = true,
                None => {}
            }
            // Hudi's Debezium payloads delete a row whose `_change_operation_type` is `d` (any case).
            let flagged = is_deleted
                .as_ref()
                .is_some_and(|a| a.is_valid(row) && a.value(row))
                || op_deleted
                    .as_ref()
                    .is_some_and(|a| a.is_valid(row) && a.value(row).eq_ignore_ascii_case("d"));
            if operation == WriteOperation::Delete {
                // The delete operation removes keys whatever their ordering value.
                deletes[row] = true;
                forced[row] = true;
            } else {
                deletes[row] = flagged;
            }
            keys[row] = key;
            match by_partition.get_mut(part.as_str()) {
                Some(rows_in_part) => rows_in_part.push(row),
                None => {
                    by_partition.insert(part.clone(), vec![row]);
                }
            }
        }
        // Tombstones: one effective delete per key; repeated tombstones and tombstones followed by a record
        // of the same key (which recreates it) are superseded.
        let recreated: std::collections::HashSet<&str> = (0..rows)
            .filter(|r| forced[*r] && operation != WriteOperation::Delete)
            .map(|r| keys[r].as_str())
            .collect();
        let mut effective_tombstones = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (key, _) in tombstones {
            counts.records_in += 1;
            if !seen.insert(key.as_str()) || recreated.contains(key.as_str()) {
                counts.deduped += 1;
            } else {
                effective_tombstones.push(key.clone());
            }
        }
        // Recreated keys still delete their other partitions' versions.
        let mut shadow_tombstones: Vec<String> = tombstones
            .iter()
            .filter(|(k, _)| recreated.contains(k.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        shadow_tombstones.sort();
        shadow_tombstones.dedup();

        let ordering = shape
            .ordering
            .map(|(idx, cmp)| (batch.column(idx).clone(), cmp));
        let mut partitions = BTreeMap::new();
        let mut versions = Vec::new();
        for (part, rows_in_part) in by_partition {
            let winners = if operation == WriteOperation::Insert && self.bucketed().is_none() {
                // Plain inserts append every row (Hudi does not combine before insert by default). Every
                // partition takes this branch and each row is in one partition: its key can be moved.
                rows_in_part
                    .iter()
                    .map(|&row| {
                        (
                            std::mem::take(&mut keys[row]),
                            Winner {
                                row,
                                delete: deletes[row],
                                force: forced[row],
                            },
                        )
                    })
                    .collect()
            } else {
                let folded = fold_incoming(
                    &keys,
                    &deletes,
                    &forced,
                    &rows_in_part,
                    ordering.as_ref().map(|(col, cmp)| (col, *cmp)),
                );
                counts.deduped += folded.superseded;
                if let (Some(toast), true) = (&shape.toast, folded.superseded > 0) {
                    versions.extend(earlier_versions(
                        toast,
                        &batch,
                        &keys,
                        &deletes,
                        &rows_in_part,
                        &folded.winners,
                        ordering.as_ref(),
                    ));
                }
                folded.winners
            };
            partitions.insert(part, winners);
        }
        // A TOAST placeholder takes the value of the latest earlier version in this batch; a moved row's, the
        // value of its before image (it has no stored version in its new partition).
        let (batch, toast_fills) = match &shape.toast {
            Some(toast) => toast.fill_in_batch(batch, &moved_from, &versions)?,
            None => (batch, Default::default()),
        };
        Ok(PreparedWrite {
            operation,
            batch,
            partitions,
            tombstones: effective_tombstones,
            shadow_tombstones,
            counts,
            rejected,
            toast_fills,
        })
    }
}

/// `(row, earlier)` for each upsert winner of a partition that carries a TOAST placeholder and superseded
/// other versions of its key in the batch: those versions, latest first by ordering value (arrival order
/// for ties and without an ordering field), each with whether it deletes the key.
fn earlier_versions(
    toast: &crate::write::toast::Toast,
    batch: &RecordBatch,
    keys: &[String],
    deletes: &[bool],
    rows_in_part: &[usize],
    winners: &[(String, Winner)],
    ordering: Option<&(ArrayRef, OrderingComparator)>,
) -> Vec<(usize, Vec<(usize, bool)>)> {
    // The upsert winners with a placeholder, by key: only their keys' rows are gathered.
    let mut by_key: HashMap<&str, (usize, Vec<usize>)> = winners
        .iter()
        .filter(|(_, w)| !w.delete && w.row != crate::write::merge::TOMBSTONE_ROW)
        .filter(|(_, w)| toast.has_placeholder(batch, w.row))
        .map(|(key, w)| (key.as_str(), (w.row, Vec::new())))
        .collect();
    if by_key.is_empty() {
        return Vec::new();
    }
    for &r in rows_in_part {
        if let Some((winner, earlier)) = by_key.get_mut(keys[r].as_str()) {
            if r != *winner {
                earlier.push(r);
            }
        }
    }
    let by_ordering = !crate::mutation::is_disabled(crate::mutation::Mutation::ToastOrdering);
    let mut out = Vec::new();
    for (_, (winner, mut earlier)) in by_key {
        if earlier.is_empty() {
            continue;
        }
        if let (Some((col, cmp)), true) = (ordering, by_ordering) {
            // Stable: arrival order stays for equal ordering values, as when folding.
            earlier.sort_by(|&a, &b| cmp.compare(col, a, col, b));
        }
        earlier.reverse();
        out.push((
            winner,
            earlier.into_iter().map(|r| (r, deletes[r])).collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

    use crate::clock::ManualClock;
    use crate::schema::avro::AvroSchema;
    use crate::storage::memory::MemoryStorage;
    use crate::write::{TableWriter, WriteConfig, WriteOperation};

    const SCHEMA: &str = r#"{"type":"record","name":"r","fields":[
        {"name":"uuid","type":"string"},{"name":"city","type":["null","string"],"default":null},
        {"name":"_change_operation_type","type":["null","string"],"default":null},
        {"name":"ts","type":"long"}]}"#;

    async fn writer() -> TableWriter {
        let config = WriteConfig::from_properties_text(
            "hoodie.table.name=t\nhoodie.base.path=mem://t\nhoodie.datasource.write.recordkey.field=uuid\n\
             hoodie.datasource.write.partitionpath.field=city\nhoodie.datasource.write.precombine.field=ts\n\
             hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=1\n\
             hoodie.datasource.write.payload.class=org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload\n",
        )
        .expect("config");
        TableWriter::create_or_open(
            Arc::new(MemoryStorage::new("mem://t")),
            Arc::new(ManualClock::new(1_767_225_600_000)),
            config,
            Some(AvroSchema::parse(SCHEMA).expect("schema")),
        )
        .await
        .expect("writer")
    }

    /// Rows `(uuid, city, op, ts)`.
    fn rows(writer: &TableWriter, rows: &[(&str, Option<&str>, &str, i64)]) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3))),
        ];
        RecordBatch::try_new(writer.schema().data.clone(), columns).expect("batch")
    }

    #[tokio::test]
    async fn a_prior_is_written_only_where_its_row_left_a_partition() {
        let w = writer().await;
        let batch = rows(
            &w,
            &[
                ("a", Some("la"), "u", 10), // moved from sf: its prior deletes it there
                ("a", Some("sf"), "d", 10),
                ("b", Some("la"), "u", 11), // updated in place: its prior is left out
                ("b", Some("la"), "d", 11),
                ("c", Some("la"), "u", 12), // a prior of another key: left out
                ("x", Some("sf"), "d", 12),
                ("d", Some("la"), "u", 13), // a prior that cannot be keyed: left out, not rejected
                ("", Some("sf"), "d", 13),
                ("", Some("ny"), "u", 14), // a row that cannot be keyed: rejected, its prior left out
                ("e", Some("sf"), "d", 14),
            ],
        );
        let positions = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4];
        let prepared = w
            .prepare_records(
                WriteOperation::Upsert,
                batch,
                Some(&positions),
                &[],
                &[1, 3, 5, 7, 9],
            )
            .expect("prepare");
        let placed: Vec<(&str, &str, usize, bool)> = prepared
            .partitions
            .iter()
            .flat_map(|(part, winners)| {
                winners
                    .iter()
                    .map(move |(k, w)| (part.as_str(), k.as_str(), w.row, w.delete))
            })
            .collect();
        assert_eq!(
            placed,
            [
                ("la", "a", 0, false),
                ("la", "b", 2, false),
                ("la", "c", 4, false),
                ("la", "d", 6, false),
                ("sf", "a", 1, true),
            ]
        );
        assert_eq!(prepared.counts.moved, 1);
        assert_eq!(prepared.counts.records_in, 5);
        assert_eq!(
            prepared
                .rejected
                .iter()
                .map(|(r, _)| *r)
                .collect::<Vec<_>>(),
            [8]
        );
    }
}
