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

/// What the latest completed commit says that every commit carries on: its checkpoint and its schema.
#[derive(Debug, Clone)]
pub(crate) struct Latest {
    /// The latest completed commit.
    pub instant: InstantTime,
    /// The checkpoint of the latest commit that has one.
    pub checkpoint: Checkpoint,
    /// The schema of the latest commit that has one.
    pub schema: Option<String>,
}

impl Coordinator {
    /// The checkpoint of the latest completed commit that has one (empty for none), read only when it is not
    /// the one remembered.
    pub(super) async fn latest_checkpoint(
        &self,
        timeline: &Timeline,
    ) -> Result<Checkpoint, WriteError> {
        Ok(self.latest(timeline).await?.0)
    }

    /// The checkpoint and the schema the next commit carries on, from the latest commits that have them
    /// (usually the latest commit has both: one read, none while it is the one remembered).
    pub(super) async fn latest(
        &self,
        timeline: &Timeline,
    ) -> Result<(Checkpoint, Option<String>), WriteError> {
        let latest = timeline.completed_commits().last().map(|i| i.time.clone());
        if let Some(latest) = &latest {
            if let Some(known) = self.remembered() {
                if known.instant == *latest {
                    return Ok((known.checkpoint, known.schema));
                }
            }
        }
        let (found, schema) = timeline
            .latest_checkpoint_and_schema(self.storage.as_ref())
            .await?;
        match found {
            Some((instant, checkpoint)) => {
                // Remembered only when the latest commit carries it: a later instant may complete before an
                // earlier one (a compaction planned after a window opened), so a checkpoint inherited from an
                // older commit could go stale while the latest commit stays the same.
                if latest.as_ref() == Some(&instant.time) {
                    self.remember(instant.time, checkpoint.clone(), schema.clone());
                }
                Ok((checkpoint, schema))
            }
            None => Ok((Checkpoint::default(), schema)),
        }
    }

    fn remembered(&self) -> Option<Latest> {
        self.last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Remembers `checkpoint` and `schema` as those of `instant`, the latest completed commit.
    pub(super) fn remember(
        &self,
        instant: InstantTime,
        checkpoint: Checkpoint,
        schema: Option<String>,
    ) {
        *self
            .last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Latest {
            instant,
            checkpoint,
            schema,
        });
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
