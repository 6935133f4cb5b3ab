//! Copy-on-write merges into bucket file groups: the stored base file read (and projected into the table
//! schema), the folded winners planned against it, and the output rows assembled without re-sorting.

use super::*;

impl TableWriter {
    /// Merges a bucket's winners into its file group (or creates the group) and writes the new slice.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn merge_bucket(
        &self,
        instant: &InstantTime,
        partition: &str,
        bucket_id: u32,
        existing: Option<&FileSlice>,
        batch: &RecordBatch,
        fills: &BatchFills,
        winners: &[(&str, Winner)],
        file_index: &mut usize,
        counts: &mut WriteCounts,
    ) -> Result<(Option<WriteStat>, Vec<String>), WriteError> {
        let shape = self.shape();
        let schema = &shape.schema;
        let stored = match existing {
            Some(slice) => {
                let path = join_path(&[partition, &slice.file_name]);
                let data = self.storage.get(&path).await?;
                let (_, batches) = read_base_file(data)?;
                let stored = concat_batches(&schema.file, &conform_batches(&schema.file, batches)?)
                    .map_err(|source| WriteError::Arrow {
                        context: "concatenate stored file",
                        source,
                    })?;
                Some(stored)
            }
            None => None,
        };
        let stored_keys: Vec<&str> = match &stored {
            Some(s) => {
                let col = s.column(2).as_string::<i32>();
                (0..col.len()).map(|i| col.value(i)).collect()
            }
            None => Vec::new(),
        };
        let ordering = shape.ordering.map(|(idx, cmp)| {
            let meta_offset = META_COLUMNS.len();
            (
                stored
                    .as_ref()
                    .map(|s| s.column(meta_offset + idx).clone())
                    .unwrap_or_else(|| batch.column(idx).clone()),
                batch.column(idx).clone(),
                cmp,
            )
        });
        let plan = plan_file_group(
            &stored_keys,
            winners,
            ordering.as_ref().map(|(s, i, c)| (s, i, *c)),
        );
        counts.add_plan(&plan);
        let changed =
            plan.updated + plan.inserted + plan.deleted + plan.tombstone_deletes.len() as u64;
        if changed == 0 {
            // Nothing to write for this group (only ignored versions or deletes of absent keys).
            return Ok((None, Vec::new()));
        }
        let (file_id, prev_commit, marker) = match existing {
            Some(slice) => (
                slice.file_id.clone(),
                Some(slice.base_instant.to_string()),
                MarkerType::Merge,
            ),
            None => (
                bucket::new_bucket_file_id(bucket_id),
                None,
                MarkerType::Create,
            ),
        };
        let file_name = base_file_name(&file_id, *file_index, instant)?;
        self.put_marker(instant, partition, &file_name, marker)
            .await?;
        let key_of_row: HashMap<usize, &str> = winners.iter().map(|(k, w)| (w.row, *k)).collect();
        let keys: Vec<&str> = plan
            .rows
            .iter()
            .map(|s| match s {
                Source::Stored(r) | Source::Update { stored: r, .. } => stored_keys[*r],
                Source::Insert(r) => key_of_row.get(r).copied().unwrap_or_default(),
            })
            .collect();
        let mut seq = 0u64;
        let out = self.build_output(
            instant,
            partition,
            &file_name,
            *file_index,
            &mut seq,
            stored.as_ref().map(|s| (s, fills)),
            batch,
            &plan.rows,
            &keys,
        )?;
        let mut writer = self.new_file_writer()?;
        writer.write(&out)?;
        let written = writer.finish()?;
        let stat = self
            .put_base_file(
                partition,
                &file_id,
                &file_name,
                written,
                prev_commit,
                plan.inserted,
                plan.updated,
                plan.deleted + plan.tombstone_deletes.len() as u64,
            )
            .await?;
        *file_index += 1;
        Ok((Some(stat), plan.tombstone_deletes))
    }

    /// Builds the output rows of one file: meta columns (kept for stored rows, new for written ones) and data
    /// columns gathered from the stored file and the incoming batch without re-sorting. `stored_with_fills`: the
    /// stored file's rows with the batch's TOAST decisions (`PreparedWrite::toast_fills`), none for a new file.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_output(
        &self,
        instant: &InstantTime,
        partition: &str,
        file_name: &str,
        file_index: usize,
        seq: &mut u64,
        stored_with_fills: Option<(&RecordBatch, &BatchFills)>,
        incoming: &RecordBatch,
        rows: &[Source],
        keys: &[&str],
    ) -> Result<RecordBatch, WriteError> {
        let stored = stored_with_fills.map(|(s, _)| s);
        let t = instant.as_str();
        let n = rows.len();
        // Written straight into the column buffers: no string per row.
        let mut commit_time = StringBuilder::with_capacity(n, n * t.len());
        let mut seqno = StringBuilder::with_capacity(n, n * (t.len() + 12));
        let stored_meta = stored.map(|s| {
            (
                s.column(0).as_string::<i32>(),
                s.column(1).as_string::<i32>(),
            )
        });
        let prefix = format!("{t}_{file_index}_");
        for src in rows {
            match (src, &stored_meta) {
                (Source::Stored(r), Some((ct, sq))) => {
                    commit_time.append_value(ct.value(*r));
                    seqno.append_value(sq.value(*r));
                }
                _ => {
                    commit_time.append_value(t);
                    // Writing into a column buffer cannot fail.
                    let _ = write!(seqno, "{prefix}{seq}");
                    seqno.append_value("");
                    *seq += 1;
                }
            }
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(commit_time.finish()),
            Arc::new(seqno.finish()),
            Arc::new(StringArray::from_iter_values(keys.iter())),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                partition, n,
            ))),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                file_name, n,
            ))),
        ];
        let meta_offset = META_COLUMNS.len();
        let indices: Vec<(usize, usize)> = rows
            .iter()
            .map(|s| match s {
                Source::Stored(r) => (0, *r),
                Source::Update { incoming, .. } | Source::Insert(incoming) => (1, *incoming),
            })
            .collect();
        let schema = self.schema();
        let shape = self.shape();
        let toast = shape.toast.as_ref().zip(stored_with_fills);
        // The incoming and stored ordering columns, which decide whether a stored value beats a batch's fill.
        let toast_ordering = toast.and_then(|(_, (s, _))| {
            shape
                .ordering
                .map(|(idx, cmp)| (incoming.column(idx), s.column(meta_offset + idx), cmp))
        });
        for col in 0..schema.data.fields().len() {
            let inc = incoming.column(col);
            // A TOAST placeholder that replaces a stored row keeps the stored value, and so does one the batch
            // filled from a version older than the stored one (`write::toast`).
            let backfilled: Option<Vec<(usize, usize)>> = toast
                .filter(|(t, _)| t.columns().contains(&col))
                .and_then(|(t, (_, fills))| {
                    let mut changed = false;
                    let own: Vec<(usize, usize)> = rows
                        .iter()
                        .zip(&indices)
                        .map(|(src, &index)| match src {
                            Source::Update {
                                incoming: i,
                                stored: r,
                            } if t.stored_value_wins(
                                incoming,
                                *i,
                                col,
                                fills,
                                toast_ordering,
                                *r,
                            ) =>
                            {
                                changed = true;
                                (0, *r)
                            }
                            _ => index,
                        })
                        .collect();
                    changed.then_some(own)
                });
            let indices = backfilled.as_deref().unwrap_or(&indices);
            let array = match stored {
                Some(s) => {
                    let st = s.column(meta_offset + col);
                    interleave(&[st.as_ref(), inc.as_ref()], indices).map_err(|source| {
                        WriteError::Arrow {
                            context: "merge columns",
                            source,
                        }
                    })?
                }
                None => {
                    let idx = arrow_array::UInt32Array::from_iter_values(
                        indices.iter().map(|(_, r)| *r as u32),
                    );
                    take(inc.as_ref(), &idx, None).map_err(|source| WriteError::Arrow {
                        context: "gather rows",
                        source,
                    })?
                }
            };
            columns.push(array);
        }
        RecordBatch::try_new(schema.file.clone(), columns).map_err(|source| WriteError::Arrow {
            context: "assemble base file rows",
            source,
        })
    }
}

/// Whether a base file may hold `key`: inside its min/max key range (Java order) and in its bloom filter.
pub(super) fn footer_may_contain(
    footer: &crate::base_file::reader::BaseFileFooter,
    key: &str,
) -> Result<bool, WriteError> {
    use crate::base_file::writer::java_string_cmp;
    use std::cmp::Ordering;
    if footer.num_rows == 0 {
        return Ok(false);
    }
    if let (Some(min), Some(max)) = (footer.min_record_key(), footer.max_record_key()) {
        if java_string_cmp(key, min) == Ordering::Less
            || java_string_cmp(key, max) == Ordering::Greater
        {
            return Ok(false);
        }
    }
    Ok(match footer.bloom_filter()? {
        Some(bloom) => bloom.might_contain(key.as_bytes()),
        None => true,
    })
}
