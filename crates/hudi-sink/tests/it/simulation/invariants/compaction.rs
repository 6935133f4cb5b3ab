//! The invariants of compaction, checked as its timeline files are stored: a plan merges only committed
//! logs, a commit keeps every committed log of the slices it replaces (merged or carried), and while another
//! engine's compaction is pending, appends to its groups go to its slice.

use super::*;

impl Seen {
    /// Compaction merges only the logs of completed deltacommits: every log file the plan of `time` names was
    /// written by an instant that had completed when the plan was stored.
    pub(super) fn check_compaction_plan(&mut self, time: &str, data: &Bytes) {
        *self.services.entry("compactions planned").or_default() += 1;
        let plan = match hudi_sink::table::records::CompactionPlan::from_avro_bytes(data) {
            Ok(plan) => plan,
            Err(e) => {
                self.violations
                    .push(("compaction plans are readable", format!("{time}: {e}")));
                return;
            }
        };
        let this_sinks = plan
            .extra_metadata
            .get(hudi_sink::table::records::WRITER_KEY)
            .map(String::as_str)
            == Some(hudi_sink::table::records::WRITER_NAME);
        if this_sinks {
            self.foreign_compactions.remove(time);
        } else {
            self.foreign_compactions.insert(time.to_string());
        }
        let mut planned = BTreeMap::new();
        for op in &plan.operations {
            let logs: BTreeSet<String> = op
                .delta_file_paths
                .iter()
                .map(|name| hudi_sink::storage::join_path(&[&op.partition_path, name]))
                .collect();
            planned.insert(
                (op.partition_path.clone(), op.file_id.clone()),
                (op.base_instant_time.clone(), logs),
            );
            for name in &op.delta_file_paths {
                let path = hudi_sink::storage::join_path(&[&op.partition_path, name]);
                // The latest store of the path is the one the plan reads.
                let committed = self
                    .log_instants
                    .get(&path)
                    .and_then(|ts| ts.last())
                    .is_some_and(|t| self.commits.contains_key(t));
                if !committed {
                    self.violations.push((
                        "compaction merges only committed logs",
                        format!(
                            "{time} plans {path}, written by {:?}, not a completed deltacommit",
                            self.log_instants.get(&path)
                        ),
                    ));
                }
            }
        }
        self.compaction_plans.insert(time.to_string(), planned);
    }

    /// A compaction `time` completes: every committed log of a slice it replaces (a completed deltacommit
    /// lists it) is merged by its plan or carried into its new slice, or its rows would vanish behind the
    /// new base file.
    pub(super) fn check_compaction_commit(&mut self, time: &str, body: &Bytes) {
        let Some(planned) = self.compaction_plans.get(time) else {
            return;
        };
        *self.services.entry("compactions completed").or_default() += 1;
        let meta = CommitMetadata::from_json(body).ok();
        let (carried, copies): (BTreeSet<String>, BTreeSet<String>) = meta
            .as_ref()
            .and_then(|m| hudi_sink::table::carried::carried_logs(m).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.from, c.path))
            .unzip();
        // The groups it replaces: those it names a new base file of. A planned group it left out keeps its
        // old slice, logs and all.
        let replaced: BTreeSet<(String, String)> = meta
            .iter()
            .flat_map(|m| m.partition_to_write_stats.values().flatten())
            .filter(|s| s.path.ends_with(".parquet"))
            .map(|s| (s.partition_path.clone(), s.file_id.clone()))
            .collect();
        if replaced.len() < planned.len() {
            *self
                .services
                .entry("compactions that left groups out")
                .or_default() += 1;
        }
        if !carried.is_empty() {
            *self
                .services
                .entry("compactions that carried logs")
                .or_default() += 1;
        }
        for (path, writer) in &self.live_logs {
            let Some((partition, log)) = log_name_of(path) else {
                continue;
            };
            // Its new slices hold only the copies it names and the logs completed deltacommits appended to
            // them while it was pending (writers do while another engine's compaction is pending): any
            // other log there would be read as committed.
            let appended = self.commits.get(writer).is_some_and(|(name, b)| {
                name.ends_with(".deltacommit") && listed_paths(b).contains(path)
            });
            if log.base_instant.to_string() == time && !copies.contains(path) && !appended {
                self.violations.push((
                    "no file of an excluded member is ever visible",
                    format!("{time} completes while {path} of its slice, which it does not name, is on storage"),
                ));
            }
            let group = (partition.to_string(), log.file_id.clone());
            let Some((base, merged)) = planned.get(&group).filter(|_| replaced.contains(&group))
            else {
                continue;
            };
            if log.base_instant.to_string() != *base {
                continue;
            }
            let committed = self
                .commits
                .get(writer)
                .is_some_and(|(_, b)| listed_paths(b).contains(path));
            if committed && !merged.contains(path) && !carried.contains(path) {
                self.violations.push((
                    "a compaction keeps every committed log of the slices it replaces",
                    format!("{time} neither merges nor carries {path}, committed by {writer}"),
                ));
            }
        }
    }

    /// A deltacommit `time` completes: each log it names in a group that another engine's pending compaction
    /// plans is in that compaction's slice and newer than it. Hudi's executors carry nothing, so a log below
    /// the slice would vanish behind the new base file.
    pub(super) fn check_appends_to_foreign_plans(&mut self, time: &str, body: &Bytes) {
        let pending: Vec<&String> = self
            .foreign_compactions
            .iter()
            .filter(|c| !self.commits.contains_key(*c))
            .collect();
        if pending.is_empty() {
            return;
        }
        *self
            .services
            .entry("deltacommits while another engine's compaction was pending")
            .or_default() += 1;
        for path in listed_paths(body) {
            let Some((partition, log)) = log_name_of(&path) else {
                continue;
            };
            let key = (partition.to_string(), log.file_id.clone());
            for c in &pending {
                let planned = self
                    .compaction_plans
                    .get(*c)
                    .is_some_and(|groups| groups.contains_key(&key));
                if planned && (log.base_instant.to_string() != **c || time <= c.as_str()) {
                    self.violations.push((
                        "appends to another engine's planned groups go to its compaction's slice",
                        format!("{time} appends {path} while compaction {c} of another engine plans its group"),
                    ));
                }
            }
        }
    }
}
