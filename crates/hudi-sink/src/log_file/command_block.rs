//! COMMAND blocks: the rollback command, which tells readers to drop the blocks an earlier (failed) instant
//! appended to this file slice. Header {INSTANT_TIME: the rollback instant, COMMAND_BLOCK_TYPE: "0",
//! TARGET_INSTANT_TIME: the rolled-back instant}, no content, empty footer: exactly Spark's 105-byte block
//! for 17-digit instants.

use super::block::{encode_block, BlockType, HeaderKey};
use crate::table::instant::InstantTime;

/// `HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK`'s ordinal, as the COMMAND_BLOCK_TYPE header writes it.
pub const ROLLBACK_COMMAND: &str = "0";

/// The framed rollback command block (header order as Spark writes it).
pub fn encode_rollback_block(
    rollback_instant: &InstantTime,
    target_instant: &InstantTime,
) -> Vec<u8> {
    encode_block(
        BlockType::Command,
        &[
            (HeaderKey::InstantTime, rollback_instant.as_str()),
            (HeaderKey::CommandBlockType, ROLLBACK_COMMAND),
            (HeaderKey::TargetInstantTime, target_instant.as_str()),
        ],
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_file::block::read_blocks;

    #[test]
    fn rollback_block_has_the_three_headers_and_no_content() {
        let r = InstantTime::parse("20250126040936578").expect("instant");
        let t = InstantTime::parse("20250126040826878").expect("instant");
        let bytes = encode_rollback_block(&r, &t);
        assert_eq!(bytes.len(), 105);
        let blocks = read_blocks("f", &bytes).expect("read");
        let header: Vec<(HeaderKey, &str)> = blocks[0]
            .header
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        assert_eq!(
            header,
            [
                (HeaderKey::InstantTime, "20250126040936578"),
                (HeaderKey::TargetInstantTime, "20250126040826878"),
                (HeaderKey::CommandBlockType, "0"),
            ]
        );
        assert!(blocks[0].content.is_empty());
    }
}
