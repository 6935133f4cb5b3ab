//! The interval commit's invariant over every commit ever made: each acknowledged batch committed exactly once,
//! each instant in its own window's interval, and the slot rule (docs/architecture.md, "Interval commit").

use super::*;

/// The interval commit's invariants over every commit ever made (in instant order): each acknowledged batch is
/// committed exactly once (no offset is in two members' contributions, in one commit or in two), each instant
/// lies in its own window's interval, and a window that shares its interval with an earlier committed write
/// instant was opened for a writer with a backlog (the slot rule: no other window waits less than a slot).
pub(super) fn check_windows(
    commits: &[(String, String, ReplaceCommitMetadata)],
) -> Result<(), Failure> {
    use hudi_sink::commit::window::WindowRecord;
    // Per (topic, partition): the committed ranges, with who committed each.
    type Committed = Vec<(i64, i64, String)>;
    let mut ranges: BTreeMap<(String, i32), Committed> = BTreeMap::new();
    let mut ends: BTreeMap<i64, String> = BTreeMap::new();
    for (time, _, meta) in commits {
        let Some(record) = WindowRecord::from_extra_metadata(&meta.commit.extra_metadata) else {
            continue;
        };
        match ends.get(&record.end_ms) {
            Some(other) if !record.backlog => {
                return Err(fail(
                    "instants ≤ windows elapsed, but for backlogs",
                    format!(
                        "{time} closes a window ending at {} after {other}, and no backlog opened it",
                        record.end_ms
                    ),
                ));
            }
            Some(_) => {}
            None => {
                ends.insert(record.end_ms, time.clone());
            }
        }
        let instant_ms = hudi_sink::table::instant::InstantTime::parse(time)
            .ok()
            .and_then(|t| t.to_millis())
            .unwrap_or(0);
        if instant_ms >= record.end_ms {
            return Err(fail(
                "instants ≤ windows elapsed",
                format!(
                    "{time} is not inside its window ending at {}",
                    record.end_ms
                ),
            ));
        }
        for (member, offsets) in &record.members {
            for topic in offsets {
                for r in &topic.ranges {
                    let seen = ranges
                        .entry((topic.topic.clone(), r.partition))
                        .or_default();
                    if let Some((first, last, by)) =
                        seen.iter().find(|(f, l, _)| r.first <= *l && *f <= r.last)
                    {
                        return Err(fail(
                            "every acknowledged batch is committed exactly once",
                            format!(
                                "{time} commits {}/{} {}..={} of {member}, already committed ({first}..={last}) by {by}",
                                topic.topic, r.partition, r.first, r.last
                            ),
                        ));
                    }
                    seen.push((r.first, r.last, format!("{member} in {time}")));
                }
            }
        }
    }
    Ok(())
}
