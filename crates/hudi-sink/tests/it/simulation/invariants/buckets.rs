//! The bucket invariant: one file group per bucket.

use super::*;
use hudi_sink::index::bucket::bucket_id_from_file_id;

/// On a bucket-indexed table (every file group's id names its bucket), each (partition, bucket) has one live
/// file group over all commits ever made: a second one would hide the first one's records from writers that
/// look keys up in the bucket, and Hudi's bucket index refuses the partition ("multiple files ... belong to
/// the same bucket id").
pub(super) fn check_one_group_per_bucket(
    commits: &[(String, String, ReplaceCommitMetadata)],
) -> Result<(), Failure> {
    let mut live: BTreeSet<(String, String)> = BTreeSet::new();
    for (_, _, meta) in commits {
        for (p, id) in meta.replaced_file_groups() {
            live.remove(&(p.to_string(), id.to_string()));
        }
        for s in meta.commit.write_stats() {
            live.insert((s.partition_path.clone(), s.file_id.clone()));
        }
    }
    let mut buckets: BTreeMap<(&str, u32), &str> = BTreeMap::new();
    for (partition, file_id) in &live {
        let Some(bucket) = bucket_id_from_file_id(file_id) else {
            return Ok(());
        };
        if let Some(other) = buckets.insert((partition.as_str(), bucket), file_id.as_str()) {
            return Err(fail(
                "one file group per bucket",
                format!("bucket {bucket} of partition {partition:?}: {other} and {file_id}"),
            ));
        }
    }
    Ok(())
}
