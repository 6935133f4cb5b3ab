//! `.hoodie_partition_metadata`: the text file that marks a directory as a partition (hudi-format.md §5.3).
//!
//! Spark discovers partitions by this file and the Hive input format walks `partitionDepth` parents up from a
//! partition to find the table root, so every partition needs it with the right depth. Invariants:
//! - the file is written once, when the partition is created, with `put_if_absent`: a second writer's attempt
//!   leaves the first one's content untouched;
//! - `partitionDepth` = number of `/`-separated segments of the partition path (`""` → 0, the file then sits
//!   at the table root);
//! - only the text variant is written (`hoodie.partition.metafile.use.base.format=false`).

use bytes::Bytes;
use thiserror::Error;

use super::instant::{InstantError, InstantTime};
use crate::config::java_properties::{JavaProperties, JavaPropertiesError};
use crate::storage::{join_path, PutOutcome, Storage, StorageError};

/// File name of the partition metafile.
pub const PARTITION_METAFILE: &str = ".hoodie_partition_metadata";

const COMMIT_TIME_KEY: &str = "commitTime";
const PARTITION_DEPTH_KEY: &str = "partitionDepth";

/// Failures reading or writing a partition metafile.
#[derive(Debug, Error)]
pub enum PartitionMetadataError {
    /// The file is not valid `.properties` text.
    #[error("partition metafile {path}: {source}")]
    Properties {
        /// The metafile's path.
        path: String,
        /// The parse error.
        #[source]
        source: JavaPropertiesError,
    },
    /// A required key is missing.
    #[error("partition metafile {path}: missing key {key}")]
    MissingKey {
        /// The metafile's path.
        path: String,
        /// The missing key.
        key: &'static str,
    },
    /// `commitTime` is not an instant time.
    #[error("partition metafile {path}: invalid commitTime: {source}")]
    InvalidCommitTime {
        /// The metafile's path.
        path: String,
        /// Why.
        #[source]
        source: InstantError,
    },
    /// `partitionDepth` is not a non-negative integer.
    #[error("partition metafile {path}: invalid partitionDepth {value:?}")]
    InvalidDepth {
        /// The metafile's path.
        path: String,
        /// The value found.
        value: String,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The content of a partition metafile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// The instant that created the partition.
    pub commit_time: InstantTime,
    /// Number of path segments between the table root and the partition directory.
    pub partition_depth: u32,
}

impl PartitionMetadata {
    /// Metadata with an explicit depth (prefer [`PartitionMetadata::for_partition`], which derives it).
    pub fn new(commit_time: InstantTime, partition_depth: u32) -> Self {
        Self {
            commit_time,
            partition_depth,
        }
    }

    /// Metadata for `partition_path` created by `commit_time`; the depth is derived from the path.
    pub fn for_partition(partition_path: &str, commit_time: InstantTime) -> Self {
        Self {
            commit_time,
            partition_depth: partition_depth(partition_path),
        }
    }

    /// The file's bytes: a `#partition metadata` comment, then `commitTime` and `partitionDepth` lines.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!(
            "#partition metadata\n{COMMIT_TIME_KEY}={}\n{PARTITION_DEPTH_KEY}={}\n",
            self.commit_time, self.partition_depth
        )
        .into_bytes()
    }

    /// Parses the text variant (any comments, Java `.properties` syntax); `path` only names the file in errors.
    pub fn parse(bytes: &[u8], path: &str) -> Result<Self, PartitionMetadataError> {
        let props =
            JavaProperties::parse(bytes).map_err(|source| PartitionMetadataError::Properties {
                path: path.to_string(),
                source,
            })?;
        let get = |key: &'static str| {
            props.get(key).ok_or(PartitionMetadataError::MissingKey {
                path: path.to_string(),
                key,
            })
        };
        let commit_time = InstantTime::parse(get(COMMIT_TIME_KEY)?).map_err(|source| {
            PartitionMetadataError::InvalidCommitTime {
                path: path.to_string(),
                source,
            }
        })?;
        let depth = get(PARTITION_DEPTH_KEY)?;
        let partition_depth = depth
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| depth.parse::<u32>().ok())
            .flatten()
            .ok_or_else(|| PartitionMetadataError::InvalidDepth {
                path: path.to_string(),
                value: depth.to_string(),
            })?;
        Ok(Self {
            commit_time,
            partition_depth,
        })
    }

    /// Creates the partition's metafile unless one exists (atomic create-if-absent).
    pub async fn create(
        storage: &dyn Storage,
        partition_path: &str,
        commit_time: InstantTime,
    ) -> Result<PutOutcome, PartitionMetadataError> {
        let meta = Self::for_partition(partition_path, commit_time);
        let outcome = storage
            .put_if_absent(&metafile_path(partition_path), Bytes::from(meta.to_bytes()))
            .await?;
        Ok(outcome)
    }

    /// Reads a partition's metafile; `None` when it does not exist.
    pub async fn load(
        storage: &dyn Storage,
        partition_path: &str,
    ) -> Result<Option<Self>, PartitionMetadataError> {
        let path = metafile_path(partition_path);
        match storage.get(&path).await {
            Ok(bytes) => Self::parse(&bytes, &path).map(Some),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// Number of segments in a partition path (`""` → 0, `a=1/b=2` → 2).
pub fn partition_depth(partition_path: &str) -> u32 {
    let trimmed = partition_path.trim_matches('/');
    if trimmed.is_empty() {
        0
    } else {
        u32::try_from(trimmed.split('/').count()).unwrap_or(u32::MAX)
    }
}

/// The metafile's path relative to the table base path.
pub fn metafile_path(partition_path: &str) -> String {
    join_path(&[partition_path, PARTITION_METAFILE])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("t")
    }

    #[test]
    fn depth_follows_segments() {
        assert_eq!(partition_depth(""), 0);
        assert_eq!(partition_depth("10"), 1);
        assert_eq!(partition_depth("byteField=10/shortField=300"), 2);
        assert_eq!(partition_depth("2023/04/01/12"), 4);
        assert_eq!(metafile_path(""), ".hoodie_partition_metadata");
        assert_eq!(
            metafile_path("2023/04/01/12"),
            "2023/04/01/12/.hoodie_partition_metadata"
        );
    }

    #[test]
    fn parses_spark_file_and_round_trips() {
        let spark = b"#partition metadata\n#Thu Apr 18 17:28:02 CDT 2024\ncommitTime=20240418172802262\npartitionDepth=1\n";
        let meta = PartitionMetadata::parse(spark, "10/.hoodie_partition_metadata").expect("parse");
        assert_eq!(
            meta,
            PartitionMetadata::for_partition("10", t("20240418172802262"))
        );
        let ours = meta.to_bytes();
        assert_eq!(
            String::from_utf8(ours.clone()).expect("ascii"),
            "#partition metadata\ncommitTime=20240418172802262\npartitionDepth=1\n"
        );
        assert_eq!(PartitionMetadata::parse(&ours, "x").expect("reparse"), meta);
    }

    #[test]
    fn rejects_bad_content() {
        assert!(matches!(
            PartitionMetadata::parse(b"partitionDepth=1\n", "p"),
            Err(PartitionMetadataError::MissingKey {
                key: "commitTime",
                ..
            })
        ));
        assert!(matches!(
            PartitionMetadata::parse(b"commitTime=2024\npartitionDepth=1\n", "p"),
            Err(PartitionMetadataError::InvalidCommitTime { .. })
        ));
        for depth in ["-1", "x", "", "+1"] {
            let text = format!("commitTime=20240418172802262\npartitionDepth={depth}\n");
            assert!(
                matches!(
                    PartitionMetadata::parse(text.as_bytes(), "p"),
                    Err(PartitionMetadataError::InvalidDepth { .. })
                ),
                "{depth:?} accepted"
            );
        }
    }

    #[tokio::test]
    async fn create_is_put_if_absent() {
        let storage = MemoryStorage::new("mem://t");
        let first = PartitionMetadata::create(&storage, "a=1/b=2", t("20240418172802262"))
            .await
            .expect("create");
        assert_eq!(first, PutOutcome::Created);
        let second = PartitionMetadata::create(&storage, "a=1/b=2", t("20240418172809999"))
            .await
            .expect("create again");
        assert_eq!(second, PutOutcome::AlreadyExists);
        let loaded = PartitionMetadata::load(&storage, "a=1/b=2")
            .await
            .expect("load")
            .expect("present");
        assert_eq!(loaded.commit_time, t("20240418172802262"));
        assert_eq!(loaded.partition_depth, 2);
        assert!(PartitionMetadata::load(&storage, "missing")
            .await
            .expect("load")
            .is_none());
        PartitionMetadata::create(&storage, "", t("20240418172802262"))
            .await
            .expect("root");
        assert!(storage
            .head(".hoodie_partition_metadata")
            .await
            .expect("head")
            .is_some());
    }
}
