//! The Delta log's expiry: the mirror deletes old commit and checkpoint files itself, because delta-rs's own
//! clean-up needs modification times the sink's storage does not list (docs/delta.md, "Retention and time
//! travel").

use std::time::Duration;

use deltalake_core::logstore::LogStoreRef;
use deltalake_core::protocol::checkpoints::cleanup_expired_logs_for;
use deltalake_core::{DeltaTableError, ObjectMeta};
use futures_util::StreamExt as _;
use object_store::ObjectStoreExt as _;
use serde_json::Value;

use super::mirror::{MirrorError, INSTANT_KEY};
use crate::table::instant::InstantTime;

/// Deletes the log below the newest checkpoint whose version was committed at least `retention` ago (its
/// `commitInfo.timestamp`) and mirrors a Hudi instant older than `floor`, the first instant of Hudi's active
/// timeline; returns how many files went. So every version committed within `retention` stays readable (Delta's
/// `delta.logRetentionDuration`, at checkpoint granularity), and so does every version of an instant Hudi's
/// time travel still reaches, whatever the commit interval (with no floor, nothing expires).
pub(super) async fn expire_logs(
    log_store: &LogStoreRef,
    retention: Duration,
    floor: Option<&InstantTime>,
) -> Result<usize, MirrorError> {
    let Some(floor) = floor else {
        return Ok(0);
    };
    let store = log_store.object_store(None);
    let log_path = log_store.log_path().clone();
    let entries: Vec<ObjectMeta> = store
        .list(Some(&log_path))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(DeltaTableError::from)?;
    let mut checkpoints: Vec<u64> = entries
        .iter()
        .filter_map(|m| {
            let name = m.location.filename()?;
            let (version, rest) = name.split_once('.')?;
            rest.starts_with("checkpoint")
                .then(|| version.parse().ok())?
        })
        .collect();
    checkpoints.sort_unstable();
    checkpoints.dedup();
    let cutoff = chrono::Utc::now().timestamp_millis()
        - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    for version in checkpoints.into_iter().rev() {
        let path = log_path.clone().join(format!("{version:020}.json"));
        let bytes = match store.get(&path).await {
            Ok(got) => got.bytes().await.map_err(DeltaTableError::from)?,
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(DeltaTableError::from(e).into()),
        };
        let info = String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|mut a| a.get_mut("commitInfo").map(Value::take));
        let committed = info.as_ref().and_then(|i| i.get("timestamp")?.as_i64());
        let mirrors = info
            .as_ref()
            .and_then(|i| InstantTime::parse(i.get(INSTANT_KEY)?.as_str()?).ok());
        // Instants are mirrored in timeline order: every version below this one mirrors an older instant.
        let archived = mirrors.is_some_and(|t| &t < floor)
            || crate::mutation::is_disabled(crate::mutation::Mutation::DeltaLogKeepsActive);
        if archived && committed.is_some_and(|t| t <= cutoff) {
            let deleted =
                cleanup_expired_logs_for(version, log_store.as_ref(), i64::MAX, None).await?;
            return Ok(deleted);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use serde_json::json;

    use super::*;
    use crate::storage::memory::MemoryStorage;
    use crate::storage::Storage;

    const HOUR_MS: i64 = 3_600_000;

    fn instant(version: u64) -> InstantTime {
        InstantTime::parse(&format!("20261207000000{version:03}")).expect("instant")
    }

    /// Versions 0..25 (version `v` mirrors [`instant`]`(v)`, committed `age(v)` ms ago) with checkpoints
    /// after versions 9 and 19.
    async fn log(age: impl Fn(u64) -> i64) -> (Arc<dyn Storage>, LogStoreRef) {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new("mem://t"));
        let now = chrono::Utc::now().timestamp_millis();
        for v in 0..25u64 {
            let info = json!({"commitInfo": {"timestamp": now - age(v), INSTANT_KEY: instant(v).as_str()}});
            let path = format!("_delta_log/{v:020}.json");
            storage
                .put(&path, Bytes::from(format!("{info}\n")))
                .await
                .expect("put");
        }
        for v in [9u64, 19] {
            let path = format!("_delta_log/{v:020}.checkpoint.parquet");
            storage.put(&path, Bytes::new()).await.expect("put");
        }
        let log_store = super::super::store::log_store(storage.clone(), "mem://t").expect("store");
        (storage, log_store)
    }

    /// The versions whose commit file is left.
    async fn kept(storage: &Arc<dyn Storage>) -> Vec<u64> {
        let mut versions: Vec<u64> = storage
            .list("_delta_log/")
            .await
            .expect("list")
            .iter()
            .filter_map(|m| {
                let name = m.path.rsplit('/').next()?;
                name.strip_suffix(".json")?.parse().ok()
            })
            .collect();
        versions.sort_unstable();
        versions
    }

    #[tokio::test]
    async fn expires_below_the_newest_checkpoint_that_archival_and_the_retention_passed() {
        // Retention 0: Hudi's active timeline alone decides.
        for (floor, first_kept) in [(21u64, 19u64), (19, 9), (15, 9), (9, 0), (3, 0)] {
            let (storage, log_store) = log(|_| 0).await;
            expire_logs(&log_store, Duration::ZERO, Some(&instant(floor)))
                .await
                .expect("expire");
            assert_eq!(
                kept(&storage).await,
                (first_kept..25).collect::<Vec<_>>(),
                "active timeline from version {floor}'s instant"
            );
        }
        // Every instant archived: the retention alone decides (versions up to 9 are two hours old).
        let old_first = |v: u64| if v <= 9 { 2 * HOUR_MS } else { 0 };
        for (retention_h, first_kept) in [(1u64, 9u64), (3, 0)] {
            let (storage, log_store) = log(old_first).await;
            let retention = Duration::from_secs(retention_h * 3600);
            expire_logs(&log_store, retention, Some(&instant(99)))
                .await
                .expect("expire");
            assert_eq!(
                kept(&storage).await,
                (first_kept..25).collect::<Vec<_>>(),
                "retention {retention_h} h"
            );
        }
        // No active timeline known: nothing expires.
        let (storage, log_store) = log(|_| 2 * HOUR_MS).await;
        assert_eq!(
            expire_logs(&log_store, Duration::ZERO, None)
                .await
                .expect("expire"),
            0
        );
        assert_eq!(kept(&storage).await, (0..25).collect::<Vec<_>>());
    }
}
