//! One test per conflict rule, the base a writer is given, and the order of the checks.

use super::*;
use crate::table::instant::Action;
use crate::table::instant::State;

fn time(t: &str) -> InstantTime {
    InstantTime::parse(t).unwrap_or_else(|e| panic!("{e}"))
}

fn done(
    t: &str,
    action: Action,
    written: &[(&str, &str)],
    replaced: &[(&str, &str)],
) -> CompletedWrite {
    CompletedWrite {
        instant: Instant::new(time(t), action, State::Completed),
        written: written
            .iter()
            .map(|(p, f)| WriteStat::new(f, p, &format!("{p}/{f}_0-0-0_{t}.parquet")))
            .collect(),
        replaced: replaced
            .iter()
            .map(|(p, f)| (p.to_string(), f.to_string()))
            .collect(),
    }
}

fn stats(groups: &[(&str, &str)]) -> Vec<WriteStat> {
    groups
        .iter()
        .map(|(p, f)| WriteStat::new(f, p, &format!("{p}/{f}.parquet")))
        .collect()
}

const BASE: &str = "20250101000000000";
const WINNER: &str = "20250101000001000";
const CANDIDATE: &str = "20250101000002000";
const NEWER: &str = "20250101000003000";

fn checked(written: &[(&str, &str)], completed: &[CompletedWrite]) -> Result<(), Conflict> {
    let (instant, base, stats) = (time(CANDIDATE), time(BASE), stats(written));
    let candidate = Candidate::new(&instant, Some(&base), &stats);
    check(&candidate, completed.iter().map(|d| &d.instant), completed)
}

#[test]
fn disjoint_commits_after_the_base_do_not_conflict() {
    let completed = [
        done(BASE, Action::Commit, &[("p", "g1")], &[]),
        done(WINNER, Action::Commit, &[("p", "g2"), ("q", "g1")], &[]),
    ];
    assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
    // Commits at or before the base are the candidate's own view: never a conflict.
    let completed = [done(BASE, Action::Commit, &[("p", "g1")], &[])];
    assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
}

#[test]
fn a_newer_completed_commit_refuses_an_older_instant() {
    let completed = [done(NEWER, Action::Commit, &[("q", "other")], &[])];
    let conflict = checked(&[("p", "g1")], &completed);
    assert_eq!(
        conflict,
        Err(Conflict::OlderThanCompleted {
            instant: time(CANDIDATE),
            newer: time(NEWER),
        })
    );
    assert_eq!(
        conflict.map_err(|c| c.to_string()),
        Err(format!(
            "instant {CANDIDATE} is older than commit {NEWER} completed meanwhile"
        ))
    );
    // A newer replacecommit (clustering) carries no checkpoint: no order conflict.
    let completed = [done(
        NEWER,
        Action::ReplaceCommit,
        &[("q", "new")],
        &[("q", "old")],
    )];
    assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
}

#[test]
fn a_file_group_written_after_the_base_conflicts() {
    let completed = [done(
        WINNER,
        Action::Commit,
        &[("p", "g2"), ("p", "g1")],
        &[],
    )];
    let conflict = checked(&[("p", "g1"), ("p", "g3")], &completed);
    assert_eq!(
        conflict,
        Err(Conflict::FileGroupWritten {
            partition: "p".into(),
            file_id: "g1".into(),
            winner: time(WINNER),
        })
    );
    assert_eq!(
        conflict.map_err(|c| c.to_string()),
        Err(format!(
            "file group g1 in partition \"p\" was changed by commit {WINNER}"
        ))
    );
}

#[test]
fn a_file_group_replaced_after_the_base_conflicts() {
    let completed = [done(
        WINNER,
        Action::ReplaceCommit,
        &[("p", "new")],
        &[("p", "g1")],
    )];
    let conflict = checked(&[("p", "g1")], &completed);
    assert_eq!(
        conflict,
        Err(Conflict::FileGroupReplaced {
            partition: "p".into(),
            file_id: "g1".into(),
            winner: time(WINNER),
        })
    );
    // The protocol's reason is the same as for a written group.
    assert_eq!(
        conflict.map_err(|c| c.to_string()),
        Err(format!(
            "file group g1 in partition \"p\" was changed by commit {WINNER}"
        ))
    );
}

#[test]
fn a_bucket_touched_after_the_base_conflicts() {
    // Two file ids of bucket 3 (different uuid suffixes): no shared group, a shared bucket.
    let mine = "00000003-aaaa-bbbb-cccc-000000000001-0";
    let theirs = "00000003-dddd-eeee-ffff-000000000002-0";
    let completed = [done(
        WINNER,
        Action::Commit,
        &[("p", theirs), ("q", mine)],
        &[],
    )];
    let conflict = checked(&[("p", mine)], &completed);
    assert_eq!(
        conflict,
        Err(Conflict::BucketTouched {
            partition: "p".into(),
            bucket: 3,
            winner: time(WINNER),
        })
    );
    assert_eq!(
        conflict.map_err(|c| c.to_string()),
        Err(format!(
            "bucket 3 in partition \"p\" was changed by commit {WINNER}"
        ))
    );
}

#[test]
fn the_first_rule_broken_is_the_answer() {
    // Order before groups, and the first commit after the base before later ones.
    let completed = [
        done(WINNER, Action::Commit, &[("p", "g1")], &[]),
        done(NEWER, Action::Commit, &[("p", "g1")], &[]),
    ];
    assert!(matches!(
        checked(&[("p", "g1")], &completed),
        Err(Conflict::OlderThanCompleted { .. })
    ));
    let later = "20250101000001500";
    let completed = [
        done(WINNER, Action::Commit, &[("p", "g2")], &[]),
        done(later, Action::Commit, &[("p", "g1")], &[]),
    ];
    assert_eq!(
        checked(&[("p", "g1"), ("p", "g2")], &completed),
        Err(Conflict::FileGroupWritten {
            partition: "p".into(),
            file_id: "g2".into(),
            winner: time(WINNER),
        })
    );
    // Without a base every completed commit counts.
    let (instant, stats) = (time(CANDIDATE), stats(&[("p", "g1")]));
    let candidate = Candidate::new(&instant, None, &stats);
    let completed = [done(BASE, Action::Commit, &[("p", "g1")], &[])];
    assert!(matches!(
        check(&candidate, completed.iter().map(|d| &d.instant), &completed),
        Err(Conflict::FileGroupWritten { .. })
    ));
}

/// A merge-on-read append of log version `v` to (partition, file group) by instant `t`.
fn append(p: &str, f: &str, v: i64) -> WriteStat {
    let mut stat = WriteStat::new(f, p, &format!("{p}/.{f}_{BASE}.log.{v}_0-0-0"));
    stat.log_version = Some(v);
    stat
}

fn delta(t: &str, appends: &[(&str, &str, i64)]) -> CompletedWrite {
    CompletedWrite {
        instant: Instant::new(time(t), Action::DeltaCommit, State::Completed),
        written: appends.iter().map(|(p, f, v)| append(p, f, *v)).collect(),
        replaced: Vec::new(),
    }
}

fn checked_delta(mine: &[WriteStat], completed: &[CompletedWrite]) -> Result<(), Conflict> {
    let (instant, base) = (time(CANDIDATE), time(BASE));
    let candidate = Candidate::new(&instant, Some(&base), mine).deltacommit(true);
    check(&candidate, completed.iter().map(|d| &d.instant), completed)
}

const BUCKET_3: &str = "00000003-aaaa-bbbb-cccc-000000000001-0";

#[test]
fn appends_to_the_same_file_group_commute() {
    let completed = [delta(WINNER, &[("p", BUCKET_3, 2)])];
    assert_eq!(
        checked_delta(&[append("p", BUCKET_3, 3)], &completed),
        Ok(())
    );
}

/// A merge-on-read append of log version `v` to the slice of `file_id` whose base instant is `base`.
fn append_in(p: &str, f: &str, base: &str, v: i64) -> WriteStat {
    let mut stat = WriteStat::new(f, p, &format!("{p}/.{f}_{base}.log.{v}_0-0-0"));
    stat.log_version = Some(v);
    stat
}

/// A compaction `commit` at `t` that wrote a new base file of (partition, file group).
fn compaction(t: &str, p: &str, f: &str) -> CompletedWrite {
    done(t, Action::Commit, &[(p, f)], &[])
}

#[test]
fn logs_of_two_slices_order_by_their_base_instants_whatever_their_versions() {
    // The candidate appended version 1 to a newer slice (the compaction WINNER made); a deltacommit that
    // completed after the base appended version 9 to the old slice: the candidate's log comes later.
    let completed = [CompletedWrite {
        instant: Instant::new(time(NEWER), Action::DeltaCommit, State::Completed),
        written: vec![append_in("p", BUCKET_3, BASE, 9)],
        replaced: Vec::new(),
    }];
    let (instant, base) = (time("20250101000004000"), time(BASE));
    let mine = [append_in("p", BUCKET_3, WINNER, 1)];
    let candidate = Candidate::new(&instant, Some(&base), &mine).deltacommit(true);
    assert_eq!(
        check(&candidate, completed.iter().map(|d| &d.instant), &completed),
        Ok(())
    );
    // The other way round: an append to the old slice after a log of the new slice completed.
    let completed = [CompletedWrite {
        instant: Instant::new(time(NEWER), Action::DeltaCommit, State::Completed),
        written: vec![append_in("p", BUCKET_3, WINNER, 1)],
        replaced: Vec::new(),
    }];
    let mine = [append_in("p", BUCKET_3, BASE, 9)];
    let candidate = Candidate::new(&instant, Some(&base), &mine).deltacommit(true);
    assert_eq!(
        check(&candidate, completed.iter().map(|d| &d.instant), &completed),
        Err(Conflict::LogVersionBehind {
            partition: "p".into(),
            file_id: BUCKET_3.into(),
            version: 9,
            winner_version: 1,
            winner: time(NEWER),
        })
    );
}

#[test]
fn an_append_to_the_slice_a_compaction_made_does_not_conflict_with_it() {
    // A member that saw compaction WINNER complete appended to its slice: no conflict with it.
    let completed = [compaction(WINNER, "p", BUCKET_3)];
    assert_eq!(
        checked_delta(&[append_in("p", BUCKET_3, WINNER, 1)], &completed),
        Ok(())
    );
    // An append to the slice it replaced conflicts: the compaction's base file supersedes that slice.
    assert_eq!(
        checked_delta(&[append_in("p", BUCKET_3, BASE, 4)], &completed),
        Err(Conflict::FileGroupWritten {
            partition: "p".into(),
            file_id: BUCKET_3.into(),
            winner: time(WINNER),
        })
    );
}

#[test]
fn a_pending_compaction_holds_the_base_below_it() {
    use crate::table::timeline::Timeline;
    let i = |t: &str, a: Action, st: State| Instant::new(time(t), a, st);
    // Compaction WINNER merges outside the lock; deltacommit CANDIDATE completed meanwhile. A writer
    // based on CANDIDATE would never check its appends against WINNER when it completes later.
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Completed),
        i(WINNER, Action::Compaction, State::Inflight),
        i(CANDIDATE, Action::DeltaCommit, State::Completed),
    ]);
    assert_eq!(
        writer_base(&timeline, true).map(|b| b.time.as_str()),
        Some(BASE)
    );
    // Once it completed (a `commit` on merge-on-read), the base is the latest completed instant.
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Completed),
        i(WINNER, Action::Commit, State::Completed),
        i(CANDIDATE, Action::DeltaCommit, State::Completed),
    ]);
    assert_eq!(
        writer_base(&timeline, true).map(|b| b.time.as_str()),
        Some(CANDIDATE)
    );
}

#[test]
fn an_append_below_a_completed_append_conflicts() {
    // The winner took version 3 after the candidate took version 2: the candidate's blocks would
    // come before the winner's older-instant ones.
    let completed = [delta(WINNER, &[("p", BUCKET_3, 3)])];
    assert_eq!(
        checked_delta(&[append("p", BUCKET_3, 2)], &completed),
        Err(Conflict::LogVersionBehind {
            partition: "p".into(),
            file_id: BUCKET_3.into(),
            version: 2,
            winner_version: 3,
            winner: time(WINNER),
        })
    );
}

#[test]
fn a_compaction_of_an_appended_group_conflicts_but_does_not_order_deltacommits() {
    // A compaction commit newer than the candidate: no order conflict (no checkpoint), but the group it
    // rewrote is one the candidate appended to.
    let compaction = done(NEWER, Action::Commit, &[("p", BUCKET_3)], &[]);
    assert_eq!(
        checked_delta(
            &[append("p", BUCKET_3, 2)],
            std::slice::from_ref(&compaction)
        ),
        Err(Conflict::FileGroupWritten {
            partition: "p".into(),
            file_id: BUCKET_3.into(),
            winner: time(NEWER),
        })
    );
    let other = done(NEWER, Action::Commit, &[("p", "g9")], &[]);
    assert_eq!(checked_delta(&[append("p", BUCKET_3, 2)], &[other]), Ok(()));
}

#[test]
fn a_new_file_group_in_an_appended_bucket_conflicts() {
    // The candidate created bucket 3's group while the winner appended to another group of bucket 3
    // (the winner saw an older one): either way two groups would share the bucket.
    let theirs = "00000003-dddd-eeee-ffff-000000000002-0";
    let completed = [delta(WINNER, &[("p", theirs, 1)])];
    let created = WriteStat::new(
        BUCKET_3,
        "p",
        &format!("p/{BUCKET_3}_0-0-0_{CANDIDATE}.parquet"),
    );
    assert!(matches!(
        checked_delta(&[created], &completed),
        Err(Conflict::BucketTouched { bucket: 3, .. })
    ));
    // And a winner that created the bucket's group conflicts with an append to another one.
    let completed = [done(WINNER, Action::DeltaCommit, &[("p", theirs)], &[])];
    assert!(matches!(
        checked_delta(&[append("p", BUCKET_3, 2)], &completed),
        Err(Conflict::BucketTouched { bucket: 3, .. })
    ));
}

#[test]
fn the_base_stays_below_a_pending_write_that_may_complete_after_a_compaction() {
    use crate::table::timeline::Timeline;
    let i = |t: &str, a: Action, st: State| Instant::new(time(t), a, st);
    // A deltacommit pending below a completed compaction can still complete: the base stays below it.
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Completed),
        i(WINNER, Action::DeltaCommit, State::Inflight),
        i(CANDIDATE, Action::Commit, State::Completed),
    ]);
    assert_eq!(
        writer_base(&timeline, true).map(|b| b.time.as_str()),
        Some(BASE)
    );
    // On copy-on-write the commit orders writes: the pending one can never complete, the base is the
    // latest commit.
    assert_eq!(
        writer_base(&timeline, false).map(|b| b.time.as_str()),
        Some(CANDIDATE)
    );
    // A newer completed deltacommit dooms the pending one: the latest completed is the base.
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Completed),
        i(WINNER, Action::DeltaCommit, State::Inflight),
        i(CANDIDATE, Action::DeltaCommit, State::Completed),
        i(NEWER, Action::Commit, State::Completed),
    ]);
    assert_eq!(
        writer_base(&timeline, true).map(|b| b.time.as_str()),
        Some(NEWER)
    );
    // A pending write newer than everything completed leaves the latest completed as the base.
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Completed),
        i(WINNER, Action::Commit, State::Completed),
        i(NEWER, Action::DeltaCommit, State::Requested),
    ]);
    assert_eq!(
        writer_base(&timeline, true).map(|b| b.time.as_str()),
        Some(WINNER)
    );
    // Nothing completed below the pending write: no base (every completed commit is checked).
    let timeline = Timeline::from_instants([
        i(BASE, Action::DeltaCommit, State::Inflight),
        i(WINNER, Action::Commit, State::Completed),
    ]);
    assert_eq!(writer_base(&timeline, true), None);
}

#[test]
fn an_append_to_a_group_another_engine_plans_goes_to_its_slice_from_a_newer_instant() {
    let compaction = time(WINNER);
    let planned = PlannedGroups::default().with_foreign(&compaction, &[("p", "g1")]);
    let log = |base: &str| {
        let mut stat = WriteStat::new("g1", "p", &format!("p/.g1_{base}.log.1_0-1-0"));
        stat.log_version = Some(1);
        vec![stat]
    };
    let (candidate, older, base) = (time(CANDIDATE), time(BASE), time(BASE));
    // To the compaction's slice, from a newer instant: fine.
    let to_slice = log(WINNER);
    assert_eq!(
        Candidate::new(&candidate, Some(&base), &to_slice).check_planned(&planned),
        Ok(())
    );
    // Below it (the slice the plan reads): the executor would supersede the log.
    let below = log(BASE);
    let refused = Candidate::new(&candidate, Some(&base), &below).check_planned(&planned);
    assert_eq!(
        refused,
        Err(Conflict::PlannedByCompaction {
            partition: "p".into(),
            file_id: "g1".into(),
            compaction: compaction.clone(),
        })
    );
    // The writer knows the answer by its text (the protocol carries conflicts as text).
    let text = refused
        .as_ref()
        .map_err(ToString::to_string)
        .expect_err("refused");
    assert!(is_planned_by_compaction(&text), "{text}");
    assert!(!is_planned_by_compaction(
        &Conflict::FileGroupWritten {
            partition: "p".into(),
            file_id: "g1".into(),
            winner: compaction.clone(),
        }
        .to_string()
    ));
    // To its slice, but from an instant older than the compaction.
    assert!(Candidate::new(&older, None, &to_slice)
        .check_planned(&planned)
        .is_err());
    // Another group, or no foreign plan: nothing to check.
    let other = vec![WriteStat::new(
        "g2",
        "p",
        &format!("p/.g2_{BASE}.log.1_0-1-0"),
    )];
    assert_eq!(
        Candidate::new(&candidate, Some(&base), &other).check_planned(&planned),
        Ok(())
    );
    assert_eq!(
        Candidate::new(&candidate, Some(&base), &below).check_planned(&PlannedGroups::default()),
        Ok(())
    );
}

#[test]
fn a_write_pending_below_the_base_is_checked_once_it_completed() {
    use crate::table::timeline::Timeline;
    let i = |t: &str, a: Action, st: State| Instant::new(time(t), a, st);
    // Another engine requested WINNER before the commit CANDIDATE-as-base completed; the writer that began
    // then is based on it, and WINNER is pending below that base.
    let timeline = Timeline::from_instants([
        i(BASE, Action::Commit, State::Completed),
        i(WINNER, Action::Commit, State::Inflight),
        i(CANDIDATE, Action::Commit, State::Completed),
    ]);
    let base = writer_base(&timeline, false);
    assert_eq!(base.map(|b| b.time.as_str()), Some(CANDIDATE));
    let pending = pending_below(&timeline, base);
    assert_eq!(pending, vec![time(WINNER)]);
    // WINNER completes (out of instant order) with the first file group of bucket 3; the writer's commit
    // creates another one in the same bucket.
    let theirs = "00000003-dddd-eeee-ffff-000000000002-0";
    let mine = "00000003-aaaa-bbbb-cccc-000000000001-0";
    let completed = [
        done(BASE, Action::Commit, &[("q", "g1")], &[]),
        done(WINNER, Action::Commit, &[("p", theirs)], &[]),
        done(CANDIDATE, Action::Commit, &[("q", "g1")], &[]),
    ];
    let (instant, base, written) = (time(NEWER), time(CANDIDATE), stats(&[("p", mine)]));
    let candidate = Candidate::new(&instant, Some(&base), &written);
    let instants = || completed.iter().map(|d| &d.instant);
    // Without the pending set WINNER is below the base, and nothing is checked.
    assert_eq!(check(&candidate, instants(), &completed), Ok(()));
    let candidate = candidate.pending(&pending);
    assert_eq!(
        check(&candidate, instants(), &completed),
        Err(Conflict::BucketTouched {
            partition: "p".into(),
            bucket: 3,
            winner: time(WINNER),
        })
    );
    // Commits that were completed at or below the base stay the writer's view.
    let (written_q, base_only) = (stats(&[("q", "g1")]), [time(WINNER)]);
    let candidate = Candidate::new(&instant, Some(&base), &written_q).pending(&base_only);
    assert_eq!(check(&candidate, instants(), &completed), Ok(()));
}

#[test]
fn only_writes_pending_below_the_base_are_listed() {
    use crate::table::timeline::Timeline;
    let i = |t: &str, a: Action, st: State| Instant::new(time(t), a, st);
    let timeline = Timeline::from_instants([
        i(BASE, Action::Commit, State::Requested),
        i(WINNER, Action::ReplaceCommit, State::Inflight),
        i(CANDIDATE, Action::Commit, State::Completed),
        i(NEWER, Action::Commit, State::Inflight),
    ]);
    let base = timeline
        .completed_commits()
        .into_iter()
        .find(|c| c.time == time(CANDIDATE));
    // A clustering is not a write, and a write newer than the base is in the window anyway.
    assert_eq!(pending_below(&timeline, base), vec![time(BASE)]);
    assert_eq!(pending_below(&timeline, None), Vec::<InstantTime>::new());
}
