//! Crashes at a chosen storage call, on copies of a prepared table: the crash-at-every-step tests build a
//! table once, then for every call number `n` copy it, run the work with a fault at call `n`, and check
//! what the crash left.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hudi_sink::storage::faulty::{FaultAction, FaultRule, FaultyStorage, RuleId};
use hudi_sink::storage::{ObjectMeta, PutOutcome, Storage, StorageResult};

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Hard-links the directory tree `from` into `to`: a copy in metadata only. Safe for a store that never
/// changes a file in place (`LocalStorage` writes a fresh file, then renames or links it, and deletes by
/// unlinking), so that nothing done under `to` reaches `from`.
pub fn link_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            link_dir(&entry.path(), &target);
        } else {
            std::fs::hard_link(entry.path(), &target).expect("link");
        }
    }
}

/// A crash right after the `n`-th storage call took effect: its answer is lost and every later call fails.
/// Over every `n` this leaves every state a crash can leave (a crash before call `n` leaves the state of
/// one after call `n - 1`). Returns the rule of call `n` (it has fired once the run reached `n`).
pub fn crash_after(storage: &FaultyStorage, n: u64) -> RuleId {
    let id = storage.add_rule(FaultRule::any_operation(FaultAction::EffectThenFail).on_call(n));
    storage.add_rule(
        FaultRule::any_operation(FaultAction::Fail)
            .on_call(n + 1)
            .always(),
    );
    id
}

/// A crash right before the `n`-th storage call: it and every later call fail without effect.
pub fn crash_before(storage: &FaultyStorage, n: u64) -> RuleId {
    storage.add_rule(
        FaultRule::any_operation(FaultAction::Fail)
            .on_call(n)
            .always(),
    )
}

/// One failed call, the `n`-th (before or after its effect); the calls after it succeed.
pub fn fail_once(storage: &FaultyStorage, n: u64, after_effect: bool) -> RuleId {
    let action = if after_effect {
        FaultAction::EffectThenFail
    } else {
        FaultAction::Fail
    };
    storage.add_rule(FaultRule::any_operation(action).on_call(n))
}

/// A storage whose batch deletes reach `faulty` as one delete per key, in order, so that a fault can land
/// inside a batch: a crash between two keys (a local file system deletes one file at a time), or one key
/// that fails while the others go (S3's DeleteObjects reports errors per key). Every key is tried; the
/// first failure is returned.
#[derive(Debug)]
pub struct KeyByKey {
    faulty: Arc<FaultyStorage>,
    batches: Mutex<Vec<Vec<usize>>>,
}

impl KeyByKey {
    /// Batch deletes of `faulty`'s callers, key by key.
    pub fn new(faulty: Arc<FaultyStorage>) -> Self {
        Self {
            faulty,
            batches: Mutex::default(),
        }
    }

    /// Where the keys of each batch delete are in `faulty`'s call log (0-based), in order.
    pub fn batches(&self) -> Vec<Vec<usize>> {
        self.batches.lock().expect("batches").clone()
    }
}

#[async_trait::async_trait]
impl Storage for KeyByKey {
    fn base_uri(&self) -> &str {
        self.faulty.base_uri()
    }
    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.faulty.get(path).await
    }
    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        self.faulty.get_range(path, range).await
    }
    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.faulty.head(path).await
    }
    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.faulty.put(path, data).await
    }
    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.faulty.put_if_absent(path, data).await
    }
    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.faulty.list(prefix).await
    }
    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.faulty.delete(path).await
    }
    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let mut first = None;
        self.batches.lock().expect("batches").push(Vec::new());
        for path in paths {
            let n = self.faulty.calls().len();
            if let Some(batch) = self.batches.lock().expect("batches").last_mut() {
                batch.push(n);
            }
            if let Err(e) = self.faulty.delete(path).await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}
