//! Instants: the timeline's timestamps, actions and states, and their layout-1 file names.
//!
//! Invariants:
//! - An [`InstantTime`] is 17 ASCII digits (`yyyyMMddHHmmssSSS`, UTC) or, when read from an old table, the legacy
//!   14-digit `yyyyMMddHHmmss`. Times compare as plain strings, exactly like Java's `compareTimestamps`; fixed
//!   width is what makes that order chronological, so this writer only ever generates 17 digits.
//! - Generated times are strictly greater than every time already on the timeline ([`InstantTime::next_after`]),
//!   even when the wall clock is behind, and never one of Hudi's reserved times (`00000000000000`,
//!   `00000000000001`, `00000000000002`).
//! - [`Instant`] orders as Java's `HoodieInstant.COMPARATOR`: by time, then by action (a compaction ranks as the
//!   `commit` it becomes, a log compaction as `deltacommit`), then by state `REQUESTED < INFLIGHT < COMPLETED`.
//!
//! File names (layout 1, hudi-format.md §3.2): `<t>.<action>` completed, `<t>.<action>.inflight`,
//! `<t>.<action>.requested`; except that an inflight commit is the legacy `<t>.inflight` and a completed
//! compaction (or log compaction) is written as `<t>.commit` (`<t>.deltacommit`).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use thiserror::Error;

use crate::clock::Clock;

/// Failures parsing instant times, actions and instant file names.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InstantError {
    /// Not 17 (or legacy 14) ASCII digits.
    #[error("invalid instant time {value:?}: expected 17 digits yyyyMMddHHmmssSSS (or legacy 14)")]
    InvalidTime {
        /// The text found.
        value: String,
    },
    /// The digits do not name a real calendar date and time.
    #[error("invalid instant time {value:?}: not a valid UTC date and time")]
    InvalidDate {
        /// The text found.
        value: String,
    },
    /// Epoch milliseconds outside the years 0000–9999 that 17 digits can express.
    #[error("epoch milliseconds {millis} cannot be written as a 17-digit instant time")]
    OutOfRange {
        /// The value given.
        millis: i64,
    },
    /// An action word Hudi does not define.
    #[error("unknown timeline action {value:?}")]
    UnknownAction {
        /// The text found.
        value: String,
    },
    /// A timeline file name that is not `<time>.<extension>` with a known extension.
    #[error("not a timeline instant file name: {file_name:?}")]
    InvalidFileName {
        /// The file name found.
        file_name: String,
    },
}

/// Hudi's reserved instant times (init, metadata bootstrap, full bootstrap); never generated.
pub const RESERVED_INSTANT_TIMES: [&str; 3] =
    ["00000000000000", "00000000000001", "00000000000002"];

/// The largest time 17 digits can express (`9999-12-31T23:59:59.999Z`), in epoch milliseconds.
const MAX_MILLIS: i64 = 253_402_300_799_999;
/// The smallest (`0000-01-01T00:00:00.000Z`), in epoch milliseconds.
const MIN_MILLIS: i64 = -62_167_219_200_000;

/// An instant time: the 17-digit (or legacy 14-digit) timestamp naming one timeline instant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstantTime(String);

impl InstantTime {
    /// Validates `value`: 17 digits forming a real UTC date-time, 14 digits likewise (legacy), or a reserved time.
    pub fn parse(value: &str) -> Result<Self, InstantError> {
        let digits = value.bytes().all(|b| b.is_ascii_digit());
        if !digits || !(value.len() == 17 || value.len() == 14) {
            return Err(InstantError::InvalidTime {
                value: value.to_string(),
            });
        }
        if RESERVED_INSTANT_TIMES.contains(&value) {
            return Ok(Self(value.to_string()));
        }
        if parse_datetime(value).is_none() {
            return Err(InstantError::InvalidDate {
                value: value.to_string(),
            });
        }
        Ok(Self(value.to_string()))
    }

    /// Formats `epoch_ms` as `yyyyMMddHHmmssSSS` in UTC.
    pub fn from_millis(epoch_ms: i64) -> Result<Self, InstantError> {
        if !(MIN_MILLIS..=MAX_MILLIS).contains(&epoch_ms) {
            return Err(InstantError::OutOfRange { millis: epoch_ms });
        }
        let dt = Utc
            .timestamp_millis_opt(epoch_ms)
            .single()
            .ok_or(InstantError::OutOfRange { millis: epoch_ms })?;
        Ok(Self(dt.format("%Y%m%d%H%M%S%3f").to_string()))
    }

    /// A new time for the next instant: the clock's time, or `latest` + 1 ms when the clock is not past it.
    ///
    /// Strictly greater than `latest` for every `latest` below `9999-12-31T23:59:59.999` (a 14-digit `latest`
    /// counts as its second's last millisecond, as Java reads it). At that bound, which no real clock reaches,
    /// the bound itself is returned; use [`InstantTime::checked_next_after`] to get an error instead.
    pub fn next_after(clock: &dyn Clock, latest: Option<&InstantTime>) -> InstantTime {
        Self::checked_next_after(clock, latest).unwrap_or_else(|_| Self::max_value())
    }

    /// As [`InstantTime::next_after`], but fails instead of saturating at the 17-digit bound.
    pub fn checked_next_after(
        clock: &dyn Clock,
        latest: Option<&InstantTime>,
    ) -> Result<InstantTime, InstantError> {
        let now = clock.now_millis().clamp(MIN_MILLIS, MAX_MILLIS);
        let floor = match latest.and_then(InstantTime::to_millis) {
            Some(ms) => ms
                .checked_add(1)
                .ok_or(InstantError::OutOfRange { millis: ms })?,
            // Reserved times (or none) sort below every generated time.
            None => MIN_MILLIS,
        };
        let candidate = InstantTime::from_millis(now.max(floor))?;
        // Belt and braces: the string order is what Hudi compares.
        if latest.is_some_and(|l| candidate <= *l)
            || RESERVED_INSTANT_TIMES.contains(&candidate.as_str())
        {
            return Err(InstantError::OutOfRange {
                millis: now.max(floor),
            });
        }
        Ok(candidate)
    }

    fn max_value() -> InstantTime {
        InstantTime("99991231235959999".to_string())
    }

    /// The time as epoch milliseconds (UTC); a 14-digit time counts as millisecond 999 of its second (as Java
    /// does); `None` for the reserved times.
    pub fn to_millis(&self) -> Option<i64> {
        parse_datetime(&self.0).map(|dt| dt.and_utc().timestamp_millis())
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a legacy 14-digit time.
    pub fn is_legacy(&self) -> bool {
        self.0.len() == 14
    }
}

/// Parses 17 or 14 digits into a date-time (14 digits get millisecond 999).
fn parse_datetime(value: &str) -> Option<NaiveDateTime> {
    let num = |r: std::ops::Range<usize>| value.get(r).and_then(|s| s.parse::<u32>().ok());
    let year = i32::try_from(num(0..4)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, num(4..6)?, num(6..8)?)?;
    let millis = if value.len() == 17 { num(14..17)? } else { 999 };
    let time = NaiveTime::from_hms_milli_opt(num(8..10)?, num(10..12)?, num(12..14)?, millis)?;
    Some(NaiveDateTime::new(date, time))
}

impl fmt::Display for InstantTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for InstantTime {
    type Err = InstantError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for InstantTime {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<InstantTime> for String {
    fn from(t: InstantTime) -> String {
        t.0
    }
}

impl TryFrom<DateTime<Utc>> for InstantTime {
    type Error = InstantError;
    fn try_from(dt: DateTime<Utc>) -> Result<Self, Self::Error> {
        Self::from_millis(dt.timestamp_millis())
    }
}

/// A timeline action (`HoodieTimeline.*_ACTION`), spelled as in file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `commit`: a copy-on-write write (also a completed compaction).
    Commit,
    /// `replacecommit`: insert_overwrite, delete_partition, clustering.
    ReplaceCommit,
    /// `clean`.
    Clean,
    /// `rollback`.
    Rollback,
    /// `deltacommit`: a merge-on-read write.
    DeltaCommit,
    /// `compaction` (pending; completes as `commit`).
    Compaction,
    /// `savepoint`.
    Savepoint,
    /// `restore`.
    Restore,
    /// `indexing`.
    Indexing,
    /// `schemacommit`.
    SchemaCommit,
    /// `logcompaction` (pending; completes as `deltacommit`).
    LogCompaction,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 11] = [
        Action::Commit,
        Action::ReplaceCommit,
        Action::Clean,
        Action::Rollback,
        Action::DeltaCommit,
        Action::Compaction,
        Action::Savepoint,
        Action::Restore,
        Action::Indexing,
        Action::SchemaCommit,
        Action::LogCompaction,
    ];

    /// The action word used in file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Commit => "commit",
            Action::ReplaceCommit => "replacecommit",
            Action::Clean => "clean",
            Action::Rollback => "rollback",
            Action::DeltaCommit => "deltacommit",
            Action::Compaction => "compaction",
            Action::Savepoint => "savepoint",
            Action::Restore => "restore",
            Action::Indexing => "indexing",
            Action::SchemaCommit => "schemacommit",
            Action::LogCompaction => "logcompaction",
        }
    }

    /// The action a pending instant becomes when completed (Java's `getComparableAction`): compaction → commit,
    /// log compaction → delta commit; every other action is itself.
    pub fn comparable(self) -> Action {
        match self {
            Action::Compaction => Action::Commit,
            Action::LogCompaction => Action::DeltaCommit,
            other => other,
        }
    }

    /// Whether instants of this action are a writer's writes (`commit` on copy-on-write, `deltacommit` on
    /// merge-on-read tables), which the writer's rollback undoes.
    pub fn is_write(self) -> bool {
        matches!(self, Action::Commit | Action::DeltaCommit)
    }

    /// Whether instants of this action complete into a commit-timeline file (`commit`, `deltacommit`,
    /// `replacecommit`).
    pub fn is_commit_like(self) -> bool {
        matches!(
            self,
            Action::Commit | Action::ReplaceCommit | Action::DeltaCommit
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    type Err = InstantError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Action::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| InstantError::UnknownAction {
                value: s.to_string(),
            })
    }
}

/// The state of an instant; ordered `Requested < Inflight < Completed` as Java's enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Planned (`.requested`).
    Requested,
    /// Running (`.inflight`).
    Inflight,
    /// Done.
    Completed,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Requested => "REQUESTED",
            State::Inflight => "INFLIGHT",
            State::Completed => "COMPLETED",
        })
    }
}

/// One instant on the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Instant {
    /// When.
    pub time: InstantTime,
    /// What.
    pub action: Action,
    /// How far it got.
    pub state: State,
}

impl Instant {
    /// An instant.
    pub fn new(time: InstantTime, action: Action, state: State) -> Self {
        Self {
            time,
            action,
            state,
        }
    }

    /// Parses a layout-1 timeline file name (`20240418172802262.commit`, `….inflight`, `….replacecommit.requested`).
    pub fn parse_file_name(file_name: &str) -> Result<Self, InstantError> {
        let invalid = || InstantError::InvalidFileName {
            file_name: file_name.to_string(),
        };
        let (time, ext) = file_name.split_once('.').ok_or_else(invalid)?;
        let (action, state) = parse_extension(ext).ok_or_else(invalid)?;
        let time = InstantTime::parse(time)?;
        Ok(Self {
            time,
            action,
            state,
        })
    }

    /// Whether `ext` (after the first dot) is a layout-1 instant file extension.
    pub fn is_timeline_extension(ext: &str) -> bool {
        parse_extension(ext).is_some()
    }

    /// The layout-1 file name of this instant (inside `.hoodie/`).
    pub fn file_name(&self) -> String {
        let t = &self.time;
        match (self.action, self.state) {
            (Action::Commit, State::Inflight) => format!("{t}.inflight"),
            (Action::Compaction, State::Completed) => format!("{t}.commit"),
            (Action::LogCompaction, State::Completed) => format!("{t}.deltacommit"),
            (action, State::Completed) => format!("{t}.{action}"),
            (action, State::Inflight) => format!("{t}.{action}.inflight"),
            (action, State::Requested) => format!("{t}.{action}.requested"),
        }
    }

    /// The path relative to the table base path: `.hoodie/<file name>`.
    pub fn path(&self) -> String {
        format!(".hoodie/{}", self.file_name())
    }

    /// Whether the instant is completed.
    pub fn is_completed(&self) -> bool {
        self.state == State::Completed
    }
}

/// Maps a file-name extension to (action, state); `None` for anything that is not a layout-1 instant file.
fn parse_extension(ext: &str) -> Option<(Action, State)> {
    if ext == "inflight" {
        return Some((Action::Commit, State::Inflight));
    }
    let (word, state) = if let Some(w) = ext.strip_suffix(".inflight") {
        (w, State::Inflight)
    } else if let Some(w) = ext.strip_suffix(".requested") {
        (w, State::Requested)
    } else {
        (ext, State::Completed)
    };
    let action: Action = word.parse().ok()?;
    // Completed compactions are written as `.commit` / `.deltacommit`; a bare `.compaction` is not a timeline file.
    if state == State::Completed && matches!(action, Action::Compaction | Action::LogCompaction) {
        return None;
    }
    Some((action, state))
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}__{}__{}", self.time, self.action, self.state)
    }
}

impl Ord for Instant {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time
            .cmp(&other.time)
            .then_with(|| {
                self.action
                    .comparable()
                    .as_str()
                    .cmp(other.action.comparable().as_str())
            })
            .then_with(|| self.state.cmp(&other.state))
            // Not in Java; keeps `Ord` consistent with `Eq` when a compaction and a commit share time and state.
            .then_with(|| self.action.as_str().cmp(other.action.as_str()))
    }
}

impl PartialOrd for Instant {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("valid time")
    }

    #[test]
    fn times_validate() {
        assert!(InstantTime::parse("20240418172802262").is_ok());
        assert!(InstantTime::parse("20240418172802").is_ok());
        for reserved in RESERVED_INSTANT_TIMES {
            assert!(InstantTime::parse(reserved).is_ok());
        }
        for bad in [
            "",
            "2024041817280226",
            "202404181728022621",
            "2024041817280226x",
            "20241318172802262",
            "20240230172802262",
            "20240418252802262",
            "20240418172802262.commit",
            "+2024041817280226",
            "٢٠٢٤٠٤١٨١٧٢٨٠٢٢٦٢",
        ] {
            assert!(InstantTime::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn from_millis_formats_utc() {
        assert_eq!(
            InstantTime::from_millis(0).expect("t").as_str(),
            "19700101000000000"
        );
        // 2024-04-18T22:28:02.262Z
        let ms = 1_713_479_282_262;
        let time = InstantTime::from_millis(ms).expect("t");
        assert_eq!(time.as_str(), "20240418222802262");
        assert_eq!(time.to_millis(), Some(ms));
        assert_eq!(
            InstantTime::from_millis(MAX_MILLIS).expect("max").as_str(),
            "99991231235959999"
        );
        assert!(InstantTime::from_millis(MAX_MILLIS + 1).is_err());
        assert!(InstantTime::from_millis(MIN_MILLIS - 1).is_err());
        assert_eq!(t("20240418222802").to_millis(), Some(1_713_479_282_999));
        assert_eq!(t("00000000000001").to_millis(), None);
    }

    #[test]
    fn next_after_is_strictly_increasing_when_clock_goes_backwards() {
        let clock = ManualClock::new(1_713_479_282_262);
        let first = InstantTime::next_after(&clock, None);
        assert_eq!(first.as_str(), "20240418222802262");
        // Same millisecond: bump by one.
        let second = InstantTime::next_after(&clock, Some(&first));
        assert_eq!(second.as_str(), "20240418222802263");
        // Clock jumps back an hour: still after the latest.
        clock.advance(-3_600_000);
        let third = InstantTime::next_after(&clock, Some(&second));
        assert_eq!(third.as_str(), "20240418222802264");
        // Clock moves ahead again: its time is used.
        clock.set(1_713_479_300_000);
        let fourth = InstantTime::next_after(&clock, Some(&third));
        assert_eq!(fourth.as_str(), "20240418222820000");
        let mut prev = fourth;
        for _ in 0..1000 {
            clock.advance(-7);
            let next = InstantTime::next_after(&clock, Some(&prev));
            assert!(next > prev);
            assert_eq!(next.as_str().len(), 17);
            prev = next;
        }
    }

    #[test]
    fn next_after_legacy_and_reserved() {
        let clock = ManualClock::new(0);
        let legacy = t("20240418222802");
        let next = InstantTime::next_after(&clock, Some(&legacy));
        assert_eq!(next.as_str(), "20240418222803000");
        // A reserved latest (bootstrap) never yields a reserved time.
        for reserved in RESERVED_INSTANT_TIMES {
            let next = InstantTime::next_after(&clock, Some(&t(reserved)));
            assert_eq!(next.as_str(), "19700101000000000");
            assert!(next > t(reserved));
        }
        // A clock before year 0 is clamped, never mis-formatted.
        clock.set(i64::MIN);
        assert_eq!(
            InstantTime::next_after(&clock, None).as_str(),
            "00000101000000000"
        );
        // At the 17-digit bound: checked errors, unchecked saturates.
        let max = t("99991231235959999");
        assert!(InstantTime::checked_next_after(&clock, Some(&max)).is_err());
        assert_eq!(InstantTime::next_after(&clock, Some(&max)), max);
    }

    #[test]
    fn file_names_round_trip() {
        let cases = [
            ("20240418172802262.commit", Action::Commit, State::Completed),
            (
                "20240418172802262.inflight",
                Action::Commit,
                State::Inflight,
            ),
            (
                "20240418172802262.commit.requested",
                Action::Commit,
                State::Requested,
            ),
            (
                "20240707001303088.replacecommit",
                Action::ReplaceCommit,
                State::Completed,
            ),
            (
                "20240707001303088.replacecommit.inflight",
                Action::ReplaceCommit,
                State::Inflight,
            ),
            (
                "20240707001303088.replacecommit.requested",
                Action::ReplaceCommit,
                State::Requested,
            ),
            (
                "20250126040936578.rollback",
                Action::Rollback,
                State::Completed,
            ),
            (
                "20250126040936578.rollback.inflight",
                Action::Rollback,
                State::Inflight,
            ),
            (
                "20250126040936578.clean.requested",
                Action::Clean,
                State::Requested,
            ),
            (
                "20250126040936578.deltacommit.inflight",
                Action::DeltaCommit,
                State::Inflight,
            ),
            (
                "20250126040936578.compaction.requested",
                Action::Compaction,
                State::Requested,
            ),
            (
                "20250126040936578.compaction.inflight",
                Action::Compaction,
                State::Inflight,
            ),
            (
                "20250126040936578.logcompaction.requested",
                Action::LogCompaction,
                State::Requested,
            ),
            (
                "20250126040936578.savepoint",
                Action::Savepoint,
                State::Completed,
            ),
            (
                "20250126040936578.restore.inflight",
                Action::Restore,
                State::Inflight,
            ),
            (
                "20250126040936578.indexing.requested",
                Action::Indexing,
                State::Requested,
            ),
            (
                "20250126040936578.schemacommit",
                Action::SchemaCommit,
                State::Completed,
            ),
            ("20240418172802.commit", Action::Commit, State::Completed),
        ];
        for (name, action, state) in cases {
            let instant = Instant::parse_file_name(name).expect(name);
            assert_eq!((instant.action, instant.state), (action, state), "{name}");
            assert_eq!(instant.file_name(), name);
            assert_eq!(instant.path(), format!(".hoodie/{name}"));
        }
        // A completed compaction is written as a commit.
        let compaction = Instant::new(t("20250126040936578"), Action::Compaction, State::Completed);
        assert_eq!(compaction.file_name(), "20250126040936578.commit");
        let log_compaction = Instant::new(
            t("20250126040936578"),
            Action::LogCompaction,
            State::Completed,
        );
        assert_eq!(log_compaction.file_name(), "20250126040936578.deltacommit");
    }

    #[test]
    fn bad_file_names_are_rejected() {
        for name in [
            "hoodie.properties",
            "20240418172802262",
            "20240418172802262.",
            "20240418172802262.COMMIT",
            "20240418172802262.commit.crc",
            "20240418172802262.compaction",
            "20240418172802262.logcompaction",
            "20240418172802262.unknown.inflight",
            "20240418172802262.inflight.requested",
        ] {
            assert!(
                matches!(
                    Instant::parse_file_name(name),
                    Err(InstantError::InvalidFileName { .. })
                ),
                "{name} accepted"
            );
        }
        assert!(matches!(
            Instant::parse_file_name("20250713010139392_20250713010140981.commit"),
            Err(InstantError::InvalidTime { .. })
        ));
        assert!("Commit".parse::<Action>().is_err());
    }

    #[test]
    fn ordering_follows_java() {
        let a = |time: &str, action, state| Instant::new(t(time), action, state);
        let mut instants = [
            a("20240101000000002", Action::Commit, State::Requested),
            a("20240101000000001", Action::ReplaceCommit, State::Completed),
            a("20240101000000001", Action::Commit, State::Completed),
            a("20240101000000001", Action::Commit, State::Inflight),
            a("20240101000000001", Action::Clean, State::Completed),
            a("20240101000000001", Action::Compaction, State::Requested),
        ];
        instants.sort();
        let got: Vec<String> = instants.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            vec![
                "20240101000000001__clean__COMPLETED",
                "20240101000000001__compaction__REQUESTED",
                "20240101000000001__commit__INFLIGHT",
                "20240101000000001__commit__COMPLETED",
                "20240101000000001__replacecommit__COMPLETED",
                "20240101000000002__commit__REQUESTED",
            ]
        );
        // Plain string order between a legacy and a 17-digit time, as in Java.
        assert!(t("20240101000000") < t("20240101000000000"));
        assert!(State::Requested < State::Inflight && State::Inflight < State::Completed);
    }
}
