//! Log file names: `.<fileId>_<baseInstant>.log.<version>_<writeToken>`.
//!
//! The base instant is the instant of the file slice the log belongs to (its base file's instant), not the
//! instant that wrote it (that one is in the block header). Every write opens a new version, one above the
//! highest in the slice. Parsing follows Hudi 0.14's pattern
//! `^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?` with the stricter rules this writer
//! relies on: the file id has no `_` (hudi-rs splits at the first `_`), the base instant is an instant time,
//! the token is present and numeric, the version has no leading zeros (so that a parsed name formats back
//! byte for byte), `.cdc` logs and `.archive` files are refused, and nothing may follow the token.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::file_name::{validate_file_id, WriteToken};
use super::instant::InstantTime;

/// Why a string is not a data log file name.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LogFileNameError {
    /// Not of the shape `.<fileId>_<baseInstant>.log.<version>_<token>`.
    #[error("not a log file name {name:?}: {reason}")]
    Invalid { name: String, reason: &'static str },
    /// A change-data-capture log (`….cdc`): not a file slice's data.
    #[error("{name:?} is a CDC log file, not a data log file")]
    Cdc { name: String },
    /// A log version that overflows.
    #[error("log version after {version} overflows")]
    VersionOverflow { version: u32 },
}

/// The first version of a file slice's logs (`HoodieLogFile.LOGFILE_BASE_VERSION`).
pub const LOG_FILE_BASE_VERSION: u32 = 1;

/// The token Hudi's rollback writes its command blocks with (`HoodieLogFormat.UNKNOWN_WRITE_TOKEN`).
pub const UNKNOWN_WRITE_TOKEN: WriteToken = WriteToken {
    task_partition_id: 1,
    stage_id: 0,
    task_attempt_id: 1,
};

/// One log file's name. Orders as readers order a slice's logs: base instant, version, then token text
/// (the file id last, only to keep the order consistent with equality).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogFileName {
    /// The file group id.
    pub file_id: String,
    /// The instant of the file slice this log belongs to.
    pub base_instant: InstantTime,
    /// 1, 2, …: one per write to the slice.
    pub version: u32,
    /// The writer's token.
    pub write_token: WriteToken,
}

impl LogFileName {
    /// The first log of a slice (version 1), validating the file id.
    pub fn first(
        file_id: &str,
        base_instant: InstantTime,
        write_token: WriteToken,
    ) -> Result<Self, LogFileNameError> {
        validate_file_id(file_id).map_err(|_| LogFileNameError::Invalid {
            name: file_id.to_string(),
            reason: "file id must be non-empty [A-Za-z0-9-]",
        })?;
        Ok(Self {
            file_id: file_id.to_string(),
            base_instant,
            version: LOG_FILE_BASE_VERSION,
            write_token,
        })
    }

    /// The log a new write opens after this one: same slice, version + 1, the new writer's token.
    pub fn next_version(&self, write_token: WriteToken) -> Result<Self, LogFileNameError> {
        let version = self
            .version
            .checked_add(1)
            .ok_or(LogFileNameError::VersionOverflow {
                version: self.version,
            })?;
        Ok(Self {
            version,
            write_token,
            ..self.clone()
        })
    }

    /// The log a new write to slice (`file_id`, `base_instant`) opens, given the slice's existing logs (others
    /// are ignored): one version above the highest, or version 1 for a slice without logs.
    pub fn next_in_slice<'a>(
        existing: impl IntoIterator<Item = &'a LogFileName>,
        file_id: &str,
        base_instant: &InstantTime,
        write_token: WriteToken,
    ) -> Result<Self, LogFileNameError> {
        let latest = existing
            .into_iter()
            .filter(|l| l.file_id == file_id && &l.base_instant == base_instant)
            .max();
        match latest {
            Some(latest) => latest.next_version(write_token),
            None => Self::first(file_id, base_instant.clone(), write_token),
        }
    }

    /// Parses a log file name (the last path segment).
    pub fn parse(name: &str) -> Result<Self, LogFileNameError> {
        let bad = |reason| LogFileNameError::Invalid {
            name: name.to_string(),
            reason,
        };
        let rest = name
            .strip_prefix('.')
            .ok_or_else(|| bad("no leading '.'"))?;
        let (stem, tail) = match rest.rsplit_once(".log.") {
            Some(parts) => parts,
            None if rest.contains(".archive.") => return Err(bad("an archive file, not a log")),
            None => return Err(bad("no '.log.'")),
        };
        let (file_id, base) = stem
            .split_once('_')
            .ok_or_else(|| bad("no '_' between file id and base instant"))?;
        validate_file_id(file_id).map_err(|_| bad("file id must be non-empty [A-Za-z0-9-]"))?;
        let base_instant =
            InstantTime::parse(base).map_err(|_| bad("base instant is not an instant time"))?;
        let (version, token) = tail
            .split_once('_')
            .ok_or_else(|| bad("no write token after the version"))?;
        if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("version is not a decimal number"));
        }
        if version.len() > 1 && version.starts_with('0') {
            return Err(bad("version has leading zeros"));
        }
        let version: u32 = version.parse().map_err(|_| bad("version overflows"))?;
        let token = match token.strip_suffix(".cdc") {
            Some(token) if token.parse::<WriteToken>().is_ok() => {
                return Err(LogFileNameError::Cdc {
                    name: name.to_string(),
                })
            }
            _ => token,
        };
        let write_token = token
            .parse::<WriteToken>()
            .map_err(|_| bad("write token is not <digits>-<digits>-<digits>"))?;
        let parsed = Self {
            file_id: file_id.to_string(),
            base_instant,
            version,
            write_token,
        };
        // Tokens with leading zeros would not format back; refuse them like the version.
        if parsed.to_string() != name {
            return Err(bad("does not format back to itself (leading zeros?)"));
        }
        Ok(parsed)
    }

    /// The file name.
    pub fn file_name(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for LogFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            ".{}_{}.log.{}_{}",
            self.file_id,
            self.base_instant.as_str(),
            self.version,
            self.write_token
        )
    }
}

impl FromStr for LogFileName {
    type Err = LogFileNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Ord for LogFileName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.base_instant
            .cmp(&other.base_instant)
            .then(self.version.cmp(&other.version))
            .then_with(|| {
                self.write_token
                    .to_string()
                    .cmp(&other.write_token.to_string())
            })
            .then_with(|| self.file_id.cmp(&other.file_id))
    }
}

impl PartialOrd for LogFileName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1";

    fn name(s: &str) -> LogFileName {
        LogFileName::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn spark_names_parse_and_format_back() {
        let n = name(FIXTURE);
        assert_eq!(n.file_id, "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0");
        assert_eq!(n.base_instant.as_str(), "20250126040823628");
        assert_eq!(n.version, 2);
        assert_eq!(n.write_token, UNKNOWN_WRITE_TOKEN);
        assert_eq!(n.file_name(), FIXTURE);
        let other = ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85";
        assert_eq!(name(other).to_string(), other);
    }

    #[test]
    fn refusals_are_typed() {
        let invalid = [
            "0712-0_20250126040823628.log.1_0-0-0",    // no leading dot
            ".0712-0_20250126040823628.log.1",         // no token
            ".0712_x-0_20250126040823628.log.1_0-0-0", // '_' in the file id
            ".0712-0_2025.log.1_0-0-0",                // not an instant
            ".0712-0_20250126040823628.log.01_0-0-0",  // leading zero
            ".0712-0_20250126040823628.log.x_0-0-0",   // version not numeric
            ".0712-0_20250126040823628.log.1_0-0",     // token not three numbers
            ".0712-0_20250126040823628.log.1_0-0-0.extra", // trailing text
            ".0712-0_20250126040823628.log.1_0-00-0",  // leading zero in token
            ".commits_.archive.1_1-0-1",               // archived timeline
            ".0712-0_20250126040823628.parquet",
        ];
        for s in invalid {
            assert!(
                matches!(LogFileName::parse(s), Err(LogFileNameError::Invalid { .. })),
                "{s}: {:?}",
                LogFileName::parse(s)
            );
        }
        assert_eq!(
            LogFileName::parse(".0712-0_20250126040823628.log.1_0-0-0.cdc"),
            Err(LogFileNameError::Cdc {
                name: ".0712-0_20250126040823628.log.1_0-0-0.cdc".into()
            })
        );
    }

    #[test]
    fn order_is_base_instant_then_version_then_token() {
        let mut names = [
            ".f-0_20250126040823628.log.10_0-1-1",
            ".f-0_20250126040823628.log.2_1-0-1",
            ".f-0_20250101000000000.log.9_0-0-0",
            ".f-0_20250126040823628.log.2_0-13-9",
            ".f-0_20250126040823628.log.1_0-33-43",
        ]
        .map(name);
        names.sort();
        let sorted: Vec<String> = names.iter().map(ToString::to_string).collect();
        assert_eq!(
            sorted,
            [
                ".f-0_20250101000000000.log.9_0-0-0",
                ".f-0_20250126040823628.log.1_0-33-43",
                ".f-0_20250126040823628.log.2_0-13-9",
                ".f-0_20250126040823628.log.2_1-0-1",
                ".f-0_20250126040823628.log.10_0-1-1",
            ]
        );
    }

    #[test]
    fn next_version_is_one_above_the_slice_maximum() {
        let base = InstantTime::parse("20250126040823628").expect("instant");
        let token = WriteToken::new(0, 13, 9);
        let existing = [
            name(".f-0_20250126040823628.log.1_0-33-43"),
            name(".f-0_20250126040823628.log.2_1-0-1"),
            name(".f-0_20250301000000000.log.7_0-0-0"), // another slice
            name(".g-0_20250126040823628.log.5_0-0-0"), // another group
        ];
        let next = LogFileName::next_in_slice(&existing, "f-0", &base, token).expect("next");
        assert_eq!(next.to_string(), ".f-0_20250126040823628.log.3_0-13-9");
        let first = LogFileName::next_in_slice(&existing, "h-0", &base, token).expect("first");
        assert_eq!(first.to_string(), ".h-0_20250126040823628.log.1_0-13-9");
        let max = LogFileName {
            version: u32::MAX,
            ..next
        };
        assert_eq!(
            max.next_version(token),
            Err(LogFileNameError::VersionOverflow { version: u32::MAX })
        );
    }
}
