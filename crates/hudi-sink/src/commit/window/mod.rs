//! Interval commit: every writer of a table shares one instant per commit interval
//! (`hudi.sink.commit.interval.ms`; docs/architecture.md, "Interval commit").
//!
//! ```text
//! member                                coordinator (window objects in .hoodie/.aux/hudi-sink/window/<t>/)
//!   ── Join{member, interval, seen} ──▶ join.rs    member.<m> ─ window.json still open? ─▶ Joined{t, base,
//!                                                  checkpoint, end, lease}; none open: under the lock, once
//!                                                  per interval slot: <t> pending, heartbeat, window.json
//!   (markers and files named t, each upload checks the lease; heartbeat of t)
//!   ── Submit{t, contribution} ───────▶ close.rs   contribution.<m>.json ─ every member submitted? ─ close
//!   ◀── Waiting{until} | WindowCommitted | Excluded | RolledBack
//!   ── Close{t, member} (at `until`) ─▶ close.rs   <t> committed? answer; due? close; else Waiting
//!
//! close (one caller at a time wins; any member, or the first one asking after the end)
//!   no lock:   window.json closing (no new member) ─ list .hoodie/ ─ members all submitted, or past their lease
//!              ─ read contributions ─ resolve.rs (checkpoint, conflicts, one contribution per offset)
//!              ─ whole files ─ files to delete (excluded members', by their markers)
//!   lock:      list .hoodie/ (unchanged?) ─ delete excluded files ─ fence ─ <t>.commit (create-if-absent)
//!   after:     markers, heartbeat, window objects
//! ```
//!
//! Rules (each has a mutation switch in the simulation):
//! - **Membership before close.** A window commits only when each member has submitted, or its lease (window
//!   end plus half the heartbeat tolerance) is over and the tolerance has passed: nobody may commit before
//!   every member has either submitted or been excluded. A joiner writes its member object, then reads the
//!   window object; the closer marks the window closing, then lists members: one of them always sees the
//!   other, so a member either is waited for or leaves.
//! - **Fencing of stragglers.** A member checks its lease before every upload (`write::lease`); the files of
//!   excluded members are deleted under the lock before the commit, and a straggler's file that lands later
//!   has a marker, by which the next window's open deletes it.
//! - **One contribution per offset.** Contributions are taken in offset order; one whose offsets the
//!   checkpoint (advanced by those taken before it) already covers is left out, so a redelivered batch whose
//!   earlier attempt is in the same window is committed once.
//!
//! At most one write instant completes per interval slot, except for backlogs: a window opens only in a slot
//! that has no write instant yet, or for a writer whose batch has more records waiting behind it
//! (`JoinRequest::backlog`), and closes as soon as every member submitted.

mod close;
mod join;
pub mod resolve;

pub(crate) use close::member_answer;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::storage::ObjectMeta;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;

pub use crate::table::file_name::{window_dir, WINDOW_DIR};

/// Extra metadata key of a window's commit: its end and the offsets of each member it committed.
pub const WINDOW_METADATA_KEY: &str = "hudi.sink.window";

fn window_object_path(instant: &InstantTime) -> String {
    format!("{}window.json", window_dir(instant))
}

fn member_path(instant: &InstantTime, member: &str) -> String {
    format!("{}member.{member}", window_dir(instant))
}

fn contribution_path(instant: &InstantTime, member: &str) -> String {
    format!("{}contribution.{member}.json", window_dir(instant))
}

/// A member name is part of object names: letters, digits, `-`, `_` and `.` only, at most 120 characters.
pub fn is_valid_member(member: &str) -> bool {
    !member.is_empty()
        && member.len() <= 120
        && member
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// A member name from a writer's name and its attempt number: the characters an object name cannot have
/// become `-`.
pub fn member_name(writer: &str, attempt: u64) -> String {
    let mut name: String = writer
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    if name.is_empty() {
        name.push_str("writer");
    }
    format!("{name}.{attempt}")
}

/// `window.json`: what a window is, written under the lock when it opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WindowObject {
    /// The instant.
    pub instant: String,
    /// Epoch ms after which no member joins.
    pub end_ms: i64,
    /// The base instant of every member.
    pub base_instant: Option<String>,
    /// The writes pending below the base when the window opened: checked once completed
    /// (`commit/conflict.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The checkpoint when the window opened (`hudi.sink.checkpoint` JSON).
    pub checkpoint: String,
    /// Set by a closer before it reads the members: a member that joins afterwards leaves.
    #[serde(default)]
    pub closing: bool,
    /// When the closer set `closing` (epoch ms; 0 when unknown): other members asking to close leave the
    /// close to it until [`CLOSE_TAKEOVER_MS`] later, instead of repeating its reads and checks.
    #[serde(default)]
    pub closing_ms: i64,
    /// How long after the end members that have not submitted are waited for (their lease ends half-way).
    #[serde(default)]
    pub grace_ms: i64,
    /// The commit interval (the slot length), for the one-instant-per-slot check at the close.
    #[serde(default)]
    pub interval_ms: u64,
    /// Opened for a writer with a backlog in a slot that may hold another write instant: the close skips the
    /// one-instant-per-slot check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backlog: bool,
}

/// How long a closer has to commit a window it marked closing before another member's close request takes
/// over (the closer may have died). A takeover is always safe (the commit is create-if-absent under the lock,
/// after a check that the listing is unchanged); waiting first only saves the repeated reads of every
/// contribution and file, which at a slot's end every waiting member would otherwise make at once.
pub const CLOSE_TAKEOVER_MS: i64 = 3_000;

/// How long a window stays open for joiners before it may close early (every member submitted): a tenth of
/// the interval, at most 500 ms. Writers of one slot arrive within that, so the first to submit does not close
/// the window under the others.
pub fn join_grace_ms(interval_ms: u64) -> i64 {
    i64::try_from((interval_ms / 10).min(500)).unwrap_or(500)
}

/// The join grace of a window: none for a backlog's window (its opener does not wait for a slot, so no crowd
/// of writers arrives with it), else [`join_grace_ms`].
pub(crate) fn window_join_grace_ms(interval_ms: u64, backlog: bool) -> i64 {
    if backlog {
        0
    } else {
        join_grace_ms(interval_ms)
    }
}

/// The window's commit interval slot: `[slot * interval, (slot + 1) * interval)`.
pub(crate) fn slot_of(ms: i64, interval_ms: u64) -> i64 {
    ms.div_euclid(interval_ms.max(1) as i64)
}

/// What one listing of `.hoodie/` shows of window `instant`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WindowListing {
    /// `window.json` exists.
    pub has_object: bool,
    /// Members that joined.
    pub members: BTreeSet<String>,
    /// Members that submitted.
    pub contributions: BTreeSet<String>,
    /// Every object of the window (deleted once it is committed or rolled back).
    pub objects: Vec<String>,
}

impl WindowListing {
    /// Members that joined and have not submitted.
    pub fn missing(&self) -> impl Iterator<Item = &String> {
        self.members.difference(&self.contributions)
    }
}

/// Every window shown by `listed` (a listing of `.hoodie/`), by instant.
pub(crate) fn windows_in(listed: &[ObjectMeta]) -> BTreeMap<InstantTime, WindowListing> {
    let mut windows: BTreeMap<InstantTime, WindowListing> = BTreeMap::new();
    for object in listed {
        let Some(rest) = object.path.strip_prefix(WINDOW_DIR) else {
            continue;
        };
        let Some((time, name)) = rest.split_once('/') else {
            continue;
        };
        let Ok(time) = InstantTime::parse(time) else {
            continue;
        };
        let window = windows.entry(time).or_default();
        window.objects.push(object.path.clone());
        if name == "window.json" {
            window.has_object = true;
        } else if let Some(member) = name
            .strip_prefix("contribution.")
            .and_then(|m| m.strip_suffix(".json"))
        {
            window.contributions.insert(member.to_string());
        } else if let Some(member) = name.strip_prefix("member.") {
            window.members.insert(member.to_string());
        }
    }
    windows
}

/// The open window a writer can join, from its listing of `.hoodie/`: the newest pending write instant with a
/// window object. Whether it still takes members is for `join` to find out.
pub fn open_window(listed: &[ObjectMeta], timeline: &Timeline) -> Option<InstantTime> {
    let windows = windows_in(listed);
    timeline
        .pending()
        .into_iter()
        .rev()
        .filter(|i| i.action.is_write())
        .find(|i| windows.get(&i.time).is_some_and(|w| w.has_object))
        .map(|i| i.time.clone())
}

/// What a window's commit records in its extra metadata ([`WINDOW_METADATA_KEY`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRecord {
    /// The window's end (epoch ms).
    pub end_ms: i64,
    /// The offsets of each member committed.
    pub members: BTreeMap<String, Vec<crate::protocol::TopicOffsets>>,
    /// The members left out, with the reason.
    #[serde(default)]
    pub excluded: BTreeMap<String, String>,
    /// The window was opened for a writer with a backlog, so it may share its interval slot with another
    /// write instant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backlog: bool,
}

impl WindowRecord {
    /// The record of a commit's extra metadata, if it is a window's commit.
    pub fn from_extra_metadata(extra: &BTreeMap<String, String>) -> Option<Self> {
        extra
            .get(WINDOW_METADATA_KEY)
            .and_then(|json| serde_json::from_str(json).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(path: &str) -> ObjectMeta {
        ObjectMeta {
            path: path.into(),
            size: 0,
        }
    }

    #[test]
    fn a_listing_shows_members_and_contributions_per_window() {
        let t = "20261201000000000";
        let listed = [
            meta(&format!("{WINDOW_DIR}{t}/window.json")),
            meta(&format!("{WINDOW_DIR}{t}/member.a.1")),
            meta(&format!("{WINDOW_DIR}{t}/member.b.1")),
            meta(&format!("{WINDOW_DIR}{t}/contribution.a.1.json")),
            meta(".hoodie/20261201000000000.commit.requested"),
        ];
        let windows = windows_in(&listed);
        let w = &windows[&InstantTime::parse(t).expect("time")];
        assert!(w.has_object);
        assert_eq!(w.missing().cloned().collect::<Vec<_>>(), vec!["b.1"]);
        assert_eq!(w.objects.len(), 4);
    }

    #[test]
    fn member_names_are_object_name_safe() {
        assert_eq!(member_name("req/1 2", 3), "req-1-2.3");
        assert!(is_valid_member(&member_name("arn:aws:lambda:x", 1)));
        assert!(!is_valid_member("a/b"));
        assert!(!is_valid_member(""));
        assert_eq!(slot_of(9_999, 5_000), 1);
        assert_eq!(slot_of(10_000, 5_000), 2);
    }
}
