//! Names of the files a write produces: base files, file ids, write tokens, markers, heartbeats.
//!
//! Invariants (hudi-format.md §3.5, §5.1):
//! - A base file is `<fileId>_<writeToken>_<instantTime>.<ext>`. File id and token contain only `[A-Za-z0-9-]`
//!   (Java splits at `_`, hudi-rs at `_` and the first `.`), the instant is a valid [`InstantTime`], the
//!   extension `[A-Za-z0-9]+`. Whatever [`BaseFileName::parse`] accepts, [`BaseFileName::file_name`] writes
//!   back byte for byte.
//! - New file ids are a lower-case UUID v4 plus `-0`, unique across the table.
//! - Write tokens keep Spark's `<taskPartitionId>-<stageId>-<taskAttemptId>` decimal shape.
//! - Marker: `.hoodie/.temp/<t>/<partition>/<file>.marker.<CREATE|MERGE|APPEND>` (no partition segment for a
//!   non-partitioned table); heartbeat: `.hoodie/.heartbeat/<t>`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::instant::{InstantError, InstantTime};

/// Failures parsing file names, tokens and marker paths.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FileNameError {
    /// Not `<fileId>_<writeToken>_<instantTime>.<ext>`.
    #[error("not a base file name {file_name:?}: {reason}")]
    InvalidBaseFileName {
        /// The name found.
        file_name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The instant part of a base file name or marker path is not an instant time.
    #[error("invalid instant in {file_name:?}: {source}")]
    InvalidInstant {
        /// The name found.
        file_name: String,
        /// Why the instant is invalid.
        #[source]
        source: InstantError,
    },
    /// A write token that is not `<a>-<b>-<c>` with decimal numbers.
    #[error("invalid write token {value:?}: expected <taskPartitionId>-<stageId>-<taskAttemptId>")]
    InvalidWriteToken {
        /// The text found.
        value: String,
    },
    /// A file id with characters other than `[A-Za-z0-9-]` (or empty).
    #[error("invalid file id {value:?}: only [A-Za-z0-9-] allowed")]
    InvalidFileId {
        /// The text found.
        value: String,
    },
    /// Not `.hoodie/.temp/<t>/[<partition>/]<file>.marker.<TYPE>`.
    #[error("not a marker path {path:?}: {reason}")]
    InvalidMarkerPath {
        /// The path found.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Whether `s` is non-empty and only `[A-Za-z0-9-]`.
fn is_id_text(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Validates a file id (`[A-Za-z0-9-]+`).
pub fn validate_file_id(file_id: &str) -> Result<(), FileNameError> {
    if is_id_text(file_id) {
        Ok(())
    } else {
        Err(FileNameError::InvalidFileId {
            value: file_id.to_string(),
        })
    }
}

/// A new file-group id: lower-case hyphenated UUID v4 plus `-0` (Hudi's `createNewFileId(prefix, 0)`).
pub fn new_file_id() -> String {
    format!("{}-0", uuid::Uuid::new_v4())
}

/// A base (Parquet) file name: one file slice of one file group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseFileName {
    /// The file group id.
    pub file_id: String,
    /// The write token (`[A-Za-z0-9-]+`; this writer uses [`WriteToken`]).
    pub write_token: String,
    /// The instant that wrote the file.
    pub instant_time: InstantTime,
    /// The extension without the dot, e.g. `parquet`.
    pub extension: String,
}

impl BaseFileName {
    /// A Parquet base file name, validating id and token.
    pub fn new_parquet(
        file_id: &str,
        write_token: &WriteToken,
        instant_time: InstantTime,
    ) -> Result<Self, FileNameError> {
        validate_file_id(file_id)?;
        Ok(Self {
            file_id: file_id.to_string(),
            write_token: write_token.to_string(),
            instant_time,
            extension: "parquet".to_string(),
        })
    }

    /// Parses `<fileId>_<writeToken>_<instantTime>.<ext>`.
    pub fn parse(file_name: &str) -> Result<Self, FileNameError> {
        let bad = |reason| FileNameError::InvalidBaseFileName {
            file_name: file_name.to_string(),
            reason,
        };
        let (stem, extension) = file_name
            .split_once('.')
            .ok_or_else(|| bad("no extension"))?;
        if extension.is_empty() || !extension.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(bad("extension must be [A-Za-z0-9]+"));
        }
        let mut parts = stem.split('_');
        let (Some(file_id), Some(write_token), Some(instant), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad(
                "expected exactly three '_'-separated parts before the extension",
            ));
        };
        if !is_id_text(file_id) {
            return Err(bad("file id must be [A-Za-z0-9-]+"));
        }
        if !is_id_text(write_token) {
            return Err(bad("write token must be [A-Za-z0-9-]+"));
        }
        let instant_time =
            InstantTime::parse(instant).map_err(|source| FileNameError::InvalidInstant {
                file_name: file_name.to_string(),
                source,
            })?;
        Ok(Self {
            file_id: file_id.to_string(),
            write_token: write_token.to_string(),
            instant_time,
            extension: extension.to_string(),
        })
    }

    /// The file name.
    pub fn file_name(&self) -> String {
        format!(
            "{}_{}_{}.{}",
            self.file_id, self.write_token, self.instant_time, self.extension
        )
    }

    /// The path relative to the table base path (`<partition>/<file>`, or `<file>` when non-partitioned).
    pub fn path_in(&self, partition_path: &str) -> String {
        crate::storage::join_path(&[partition_path, &self.file_name()])
    }
}

impl fmt::Display for BaseFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file_name())
    }
}

impl FromStr for BaseFileName {
    type Err = FileNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A write token `<taskPartitionId>-<stageId>-<taskAttemptId>` (Hudi's `makeWriteToken`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteToken {
    /// Spark: the task's partition id; here the writer's task number within the instant.
    pub task_partition_id: u64,
    /// Spark: the stage id; here a per-instant sequence.
    pub stage_id: u64,
    /// Spark: the task attempt id; here the attempt number.
    pub task_attempt_id: u64,
}

impl WriteToken {
    /// A token from its three numbers.
    pub fn new(task_partition_id: u64, stage_id: u64, task_attempt_id: u64) -> Self {
        Self {
            task_partition_id,
            stage_id,
            task_attempt_id,
        }
    }
}

impl fmt::Display for WriteToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{}",
            self.task_partition_id, self.stage_id, self.task_attempt_id
        )
    }
}

impl FromStr for WriteToken {
    type Err = FileNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || FileNameError::InvalidWriteToken {
            value: s.to_string(),
        };
        let num = |p: &str| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
                p.parse::<u64>().map_err(|_| bad())
            } else {
                Err(bad())
            }
        };
        let mut parts = s.split('-');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(c), None) => Ok(Self::new(num(a)?, num(b)?, num(c)?)),
            _ => Err(bad()),
        }
    }
}

/// The I/O type a marker records (`IOType`): what a rollback must undo for the data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerType {
    /// A new file group's first base file.
    Create,
    /// A new slice of an existing file group.
    Merge,
    /// An append to a log file (merge-on-read; listed for completeness).
    Append,
}

impl MarkerType {
    /// The Java spelling used in marker file names.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkerType::Create => "CREATE",
            MarkerType::Merge => "MERGE",
            MarkerType::Append => "APPEND",
        }
    }
}

impl fmt::Display for MarkerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MarkerType {
    type Err = FileNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "CREATE" => Ok(MarkerType::Create),
            "MERGE" => Ok(MarkerType::Merge),
            "APPEND" => Ok(MarkerType::Append),
            _ => Err(FileNameError::InvalidMarkerPath {
                path: s.to_string(),
                reason: "marker type must be CREATE, MERGE or APPEND",
            }),
        }
    }
}

const MARKER_ROOT: &str = ".hoodie/.temp";
const MARKER_INFIX: &str = ".marker.";

/// The marker directory of an instant: `.hoodie/.temp/<t>`.
pub fn marker_dir(instant_time: &InstantTime) -> String {
    format!("{MARKER_ROOT}/{instant_time}")
}

/// The marker path for a data file: `.hoodie/.temp/<t>/<partition>/<file>.marker.<TYPE>`.
pub fn marker_path(
    instant_time: &InstantTime,
    partition_path: &str,
    data_file_name: &str,
    marker_type: MarkerType,
) -> String {
    let file = format!("{data_file_name}{MARKER_INFIX}{marker_type}");
    crate::storage::join_path(&[&marker_dir(instant_time), partition_path, &file])
}

/// A parsed marker path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The instant whose write created the data file.
    pub instant_time: InstantTime,
    /// The data file's partition (`""` when non-partitioned).
    pub partition_path: String,
    /// The data file's name.
    pub data_file_name: String,
    /// What the write did.
    pub marker_type: MarkerType,
}

impl Marker {
    /// Parses `.hoodie/.temp/<t>/[<partition>/]<file>.marker.<TYPE>`.
    pub fn parse(path: &str) -> Result<Self, FileNameError> {
        let bad = |reason| FileNameError::InvalidMarkerPath {
            path: path.to_string(),
            reason,
        };
        let rest = path
            .strip_prefix(MARKER_ROOT)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| bad("not under .hoodie/.temp/"))?;
        let (instant, rest) = rest
            .split_once('/')
            .ok_or_else(|| bad("no file below the instant directory"))?;
        let instant_time =
            InstantTime::parse(instant).map_err(|source| FileNameError::InvalidInstant {
                file_name: path.to_string(),
                source,
            })?;
        let (partition_path, file) = match rest.rsplit_once('/') {
            Some((p, f)) => (p.to_string(), f),
            None => (String::new(), rest),
        };
        let (data_file_name, kind) = file
            .rsplit_once(MARKER_INFIX)
            .ok_or_else(|| bad("no .marker.<TYPE> suffix"))?;
        if data_file_name.is_empty() {
            return Err(bad("empty data file name"));
        }
        let marker_type = kind
            .parse()
            .map_err(|_| bad("marker type must be CREATE, MERGE or APPEND"))?;
        Ok(Self {
            instant_time,
            partition_path,
            data_file_name: data_file_name.to_string(),
            marker_type,
        })
    }

    /// The marker's path.
    pub fn path(&self) -> String {
        marker_path(
            &self.instant_time,
            &self.partition_path,
            &self.data_file_name,
            self.marker_type,
        )
    }

    /// The data file's path relative to the table base path.
    pub fn data_file_path(&self) -> String {
        crate::storage::join_path(&[&self.partition_path, &self.data_file_name])
    }
}

/// Where the objects of open commit windows live (ignored by Hudi readers, like the rest of `.hoodie/.aux/`;
/// docs/architecture.md, "Interval commit").
pub const WINDOW_DIR: &str = ".hoodie/.aux/hudi-sink/window/";

/// The directory of window `instant`'s objects.
pub fn window_dir(instant: &InstantTime) -> String {
    format!("{WINDOW_DIR}{instant}/")
}

/// The heartbeat file of an instant: `.hoodie/.heartbeat/<t>`.
pub fn heartbeat_path(instant_time: &InstantTime) -> String {
    format!(".hoodie/.heartbeat/{instant_time}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_file_names_round_trip() {
        let name = "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet";
        let parsed = BaseFileName::parse(name).expect("parse");
        assert_eq!(parsed.file_id, "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0");
        assert_eq!(parsed.write_token, "0-119-166");
        assert_eq!(parsed.instant_time.as_str(), "20240418172804498");
        assert_eq!(parsed.extension, "parquet");
        assert_eq!(parsed.file_name(), name);
        assert_eq!(parsed.path_in("10"), format!("10/{name}"));
        assert_eq!(parsed.path_in(""), name);
        // Kafka Connect style upper-case hex ids and a legacy 14-digit instant.
        let connect = "2E0E6B1A7A7E-0_0-0-0_20210913214114.parquet";
        assert_eq!(
            BaseFileName::parse(connect).expect("parse").file_name(),
            connect
        );
    }

    #[test]
    fn bad_base_file_names_are_rejected() {
        for name in [
            "a_b_20240418172804498",
            "a_b_20240418172804498.",
            "a_b.parquet",
            "a_b_c_20240418172804498.parquet",
            "_b_20240418172804498.parquet",
            "a__20240418172804498.parquet",
            "a.x_b_20240418172804498.parquet",
            "a_b_2024041817280449.parquet",
            "a_b_20240418172804498.par-quet",
            "a b_c_20240418172804498.parquet",
            ".hoodie_partition_metadata",
        ] {
            assert!(BaseFileName::parse(name).is_err(), "{name} accepted");
        }
        assert!(matches!(
            BaseFileName::parse("a_b_2024041817280449x.parquet"),
            Err(FileNameError::InvalidInstant { .. })
        ));
    }

    #[test]
    fn new_file_ids_are_lowercase_uuid_dash_zero() {
        let id = new_file_id();
        assert_eq!(id.len(), 38);
        assert!(id.ends_with("-0"));
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-'));
        assert_eq!(
            uuid::Uuid::parse_str(&id[..36])
                .expect("uuid")
                .get_version_num(),
            4
        );
        assert_ne!(id, new_file_id());
        validate_file_id(&id).expect("valid");
        assert!(validate_file_id("a_b").is_err());
        assert!(validate_file_id("").is_err());
    }

    #[test]
    fn write_tokens() {
        let token: WriteToken = "1-98-142".parse().expect("parse");
        assert_eq!(token, WriteToken::new(1, 98, 142));
        assert_eq!(token.to_string(), "1-98-142");
        for bad in [
            "", "1-2", "1-2-3-4", "a-2-3", "-1-2-3", "1--3", "+1-2-3", "1-2-3 ",
        ] {
            assert!(bad.parse::<WriteToken>().is_err(), "{bad:?} accepted");
        }
        let name = BaseFileName::new_parquet(
            "abc-0",
            &token,
            InstantTime::parse("20240418172804498").expect("t"),
        )
        .expect("name");
        assert_eq!(name.file_name(), "abc-0_1-98-142_20240418172804498.parquet");
        assert!(BaseFileName::new_parquet(
            "a_b",
            &token,
            InstantTime::parse("20240418172804498").expect("t")
        )
        .is_err());
    }

    #[test]
    fn markers_and_heartbeats() {
        let t = InstantTime::parse("20240418172804498").expect("t");
        let file = "97de74b1-0_0-1-0_20240418172804498.parquet";
        let p = marker_path(&t, "byteField=10/shortField=300", file, MarkerType::Merge);
        assert_eq!(
            p,
            format!(
                ".hoodie/.temp/20240418172804498/byteField=10/shortField=300/{file}.marker.MERGE"
            )
        );
        let m = Marker::parse(&p).expect("parse");
        assert_eq!(m.partition_path, "byteField=10/shortField=300");
        assert_eq!(m.data_file_name, file);
        assert_eq!(m.marker_type, MarkerType::Merge);
        assert_eq!(m.path(), p);
        assert_eq!(
            m.data_file_path(),
            format!("byteField=10/shortField=300/{file}")
        );

        let flat = marker_path(&t, "", file, MarkerType::Create);
        assert_eq!(
            flat,
            format!(".hoodie/.temp/20240418172804498/{file}.marker.CREATE")
        );
        let m = Marker::parse(&flat).expect("parse");
        assert_eq!(m.partition_path, "");
        assert_eq!(m.data_file_path(), file);
        assert_eq!(marker_dir(&t), ".hoodie/.temp/20240418172804498");

        for bad in [
            ".hoodie/.temp/20240418172804498/x.parquet",
            ".hoodie/.temp/20240418172804498/x.parquet.marker.DELETE",
            ".hoodie/.temp/2024/x.parquet.marker.CREATE",
            ".hoodie/x/20240418172804498/x.parquet.marker.CREATE",
            ".hoodie/.temp/20240418172804498/.marker.CREATE",
        ] {
            assert!(Marker::parse(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(heartbeat_path(&t), ".hoodie/.heartbeat/20240418172804498");
    }
}
