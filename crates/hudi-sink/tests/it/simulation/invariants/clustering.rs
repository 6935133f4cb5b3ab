//! The clustering invariant, checked as each replacecommit is stored: a clustering replaces only file groups
//! that completed commits wrote and that no earlier replacecommit replaced. A file group replaced twice holds
//! rows that two clusterings each rewrote into their own new files, so every one of them would be read twice.

use super::*;

impl Seen {
    /// A replacecommit `time` completes (`name`): each file group it replaces was written by a commit
    /// completed before it (whatever the clocks say of their times) and not replaced before.
    pub(super) fn check_replace_commit(&mut self, name: &str, time: &str, body: &Bytes) {
        let Ok(meta) = ReplaceCommitMetadata::from_json(body) else {
            self.violations.push((
                "a clustering replaces live file groups once",
                format!("{name} does not parse as replacecommit metadata"),
            ));
            return;
        };
        *self.services.entry("clusterings completed").or_default() += 1;
        for (partition, file_id) in meta.replaced_file_groups() {
            let group = (partition.to_string(), file_id.to_string());
            if let Some(earlier) = self.replaced.get(&group) {
                self.violations.push((
                    "a clustering replaces live file groups once",
                    format!(
                        "{name} replaces file group {file_id} of {partition:?}, which {earlier} replaced"
                    ),
                ));
            } else if !self.written.contains(&group) {
                self.violations.push((
                    "a clustering replaces live file groups once",
                    format!(
                        "{name} replaces file group {file_id} of {partition:?}, which no earlier completed \
                         commit wrote"
                    ),
                ));
            }
            self.replaced.insert(group, time.to_string());
        }
    }

    /// A completed commit-like file is stored: the file groups its write stats name are written from now on.
    pub(super) fn note_written(&mut self, body: &Bytes) {
        if let Ok(meta) = CommitMetadata::from_json(body) {
            self.written.extend(
                meta.write_stats()
                    .map(|s| (s.partition_path.clone(), s.file_id.clone())),
            );
        }
    }
}
