//! The table's checkpoint: per topic-partition, the next Kafka offset to read, carried cumulatively in the
//! `extraMetadata` of every commit (docs/architecture.md, "Exactly-once").
//!
//! The coordinator reads it from the latest completed commit that has one, refuses a commit whose offsets it
//! already covers (`already_committed`: no offset is committed twice), and writes the advanced checkpoint
//! into the new commit. Commit files never change, so the checkpoint of the latest commit is remembered
//! while warm and read again only when another commit became the latest.

use crate::protocol::TopicOffsets;
use crate::table::commit::Checkpoint;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::Coordinator;

/// Parses the checkpoint a coordinator returns (`hudi.sink.checkpoint` JSON; `{}` or empty for none).
pub fn parse_checkpoint(json: &str) -> Result<Checkpoint, WriteError> {
    if json.trim() == "{}" || json.trim().is_empty() {
        return Ok(Checkpoint::default());
    }
    Ok(Checkpoint::parse_sink_json(json)?)
}

/// `checkpoint` moved past `offsets`: the next offset to read of each consumed partition is its last + 1.
pub(crate) fn advance(checkpoint: &mut Checkpoint, offsets: &[TopicOffsets]) {
    for topic in offsets {
        for r in &topic.ranges {
            checkpoint.set(&topic.topic, r.partition, r.last + 1);
        }
    }
}

impl Coordinator {
    /// The checkpoint of the latest completed commit that has one (empty for none), read only when it is not
    /// the one remembered.
    pub(super) async fn latest_checkpoint(
        &self,
        timeline: &Timeline,
    ) -> Result<Checkpoint, WriteError> {
        let latest = timeline.completed_commits().last().map(|i| i.time.clone());
        if let Some(latest) = &latest {
            if let Some((time, checkpoint)) = self.remembered_checkpoint() {
                if time == *latest {
                    return Ok(checkpoint);
                }
            }
        }
        let found = timeline.latest_checkpoint(self.storage.as_ref()).await?;
        match found {
            Some((instant, checkpoint)) => {
                if latest.as_ref() == Some(&instant.time) {
                    self.remember_checkpoint(instant.time, checkpoint.clone());
                }
                Ok(checkpoint)
            }
            None => Ok(Checkpoint::default()),
        }
    }

    fn remembered_checkpoint(&self) -> Option<(InstantTime, Checkpoint)> {
        self.last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Remembers `checkpoint` as the one of `instant`, the latest completed commit.
    pub(super) fn remember_checkpoint(&self, instant: InstantTime, checkpoint: Checkpoint) {
        *self
            .last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((instant, checkpoint));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::OffsetRange;

    #[test]
    fn advance_moves_each_consumed_partition_past_its_last_offset() {
        let mut checkpoint = Checkpoint::new();
        checkpoint.set("a", 0, 5);
        checkpoint.set("a", 1, 9);
        let offsets = [TopicOffsets {
            topic: "a".into(),
            ranges: vec![OffsetRange {
                partition: 0,
                first: 5,
                last: 11,
            }],
        }];
        advance(&mut checkpoint, &offsets);
        assert_eq!(checkpoint.get("a", 0), Some(12));
        // Partitions the commit did not consume keep their offsets.
        assert_eq!(checkpoint.get("a", 1), Some(9));
    }

    #[test]
    fn an_empty_answer_is_an_empty_checkpoint() {
        for json in ["{}", " ", ""] {
            assert!(parse_checkpoint(json)
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty());
        }
    }
}
