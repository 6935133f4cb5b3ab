//! [`FaultyStorage`]: a [`Storage`] wrapper that injects failures, for exactly-once tests and the
//! deterministic simulation.
//!
//! The faults a real object store produces, and that the commit protocol must survive, are:
//!
//! - a call that fails before it had any effect ([`FaultAction::Fail`]),
//! - a call whose effect happened but whose answer was lost, like a request that timed out after S3 applied
//!   it ([`FaultAction::EffectThenFail`]: the inner put/delete is performed, then an error is returned),
//! - a slow call ([`FaultAction::Delay`], a `tokio` sleep, so paused test time makes it instant).
//!
//! Rules say which calls they hit: an operation (or any), a path filter (exact, prefix, suffix), and a
//! window of matching calls (`on_call(n)`: the n-th matching call, 1-based; `times(k)`: that many from
//! there; `always()`: every one from there on). Every rule counts every call it matches, whether or not it
//! fires. When several rules are due on one call, all their delays apply (in insertion order) and the first
//! failing rule decides the outcome. Injected failures are [`StorageError::Injected`].
//!
//! Nothing here is random: the same rules and the same call sequence give the same faults. Randomised
//! schedules belong to the caller (the simulation draws rules from its own seeded generator). Every call is
//! logged with its operation, path and what was injected, for assertions on the exact storage traffic.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{MultipartUpload, ObjectMeta, PutOutcome, Storage, StorageError, StorageResult};

mod upload;

/// One kind of [`Storage`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// [`Storage::get`].
    Get,
    /// [`Storage::get_range`].
    GetRange,
    /// [`Storage::head`].
    Head,
    /// [`Storage::put`].
    Put,
    /// [`Storage::put_if_absent`].
    PutIfAbsent,
    /// [`Storage::list`] (the path is the prefix).
    List,
    /// [`Storage::delete`].
    Delete,
    /// [`Storage::delete_many`] (the path is the first one).
    DeleteMany,
    /// [`MultipartUpload::write`] of an upload from [`Storage::put_multipart`] (the path is the object's).
    WritePart,
    /// [`MultipartUpload::complete`].
    CompleteUpload,
    /// [`MultipartUpload::abort`].
    AbortUpload,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 11] = [
        Operation::Get,
        Operation::GetRange,
        Operation::Head,
        Operation::Put,
        Operation::PutIfAbsent,
        Operation::List,
        Operation::Delete,
        Operation::DeleteMany,
        Operation::WritePart,
        Operation::CompleteUpload,
        Operation::AbortUpload,
    ];

    /// The trait method's name, as it appears in [`StorageError::Injected`].
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Get => "get",
            Operation::GetRange => "get_range",
            Operation::Head => "head",
            Operation::Put => "put",
            Operation::PutIfAbsent => "put_if_absent",
            Operation::List => "list",
            Operation::Delete => "delete",
            Operation::DeleteMany => "delete_many",
            Operation::WritePart => "write_part",
            Operation::CompleteUpload => "complete_upload",
            Operation::AbortUpload => "abort_upload",
        }
    }

    /// Whether the call changes the store (the calls for which "effect then error" matters).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Operation::Put
                | Operation::PutIfAbsent
                | Operation::Delete
                | Operation::DeleteMany
                | Operation::CompleteUpload
                | Operation::AbortUpload
        )
    }
}

/// Which paths a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathFilter {
    /// Every path.
    Any,
    /// Exactly this path.
    Exact(String),
    /// Paths starting with this (e.g. `.hoodie/`).
    Prefix(String),
    /// Paths ending with this (e.g. `.commit`).
    Suffix(String),
    /// Paths containing this (e.g. `.log.`: log files, whose names end with a version and token).
    Contains(String),
}

impl PathFilter {
    /// Whether `path` passes.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathFilter::Any => true,
            PathFilter::Exact(p) => path == p,
            PathFilter::Prefix(p) => path.starts_with(p.as_str()),
            PathFilter::Suffix(s) => path.ends_with(s.as_str()),
            PathFilter::Contains(s) => path.contains(s.as_str()),
        }
    }
}

/// What a due rule does to the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// Return [`StorageError::Injected`] without touching the inner store.
    Fail,
    /// Perform the call on the inner store, then return [`StorageError::Injected`] (the answer was lost).
    /// If the inner call itself fails, its error is returned.
    EffectThenFail,
    /// Sleep, then go on (with the next due rules, or the inner call).
    Delay(Duration),
}

/// A fault to inject. Built with [`FaultRule::fail`], [`FaultRule::effect_then_fail`],
/// [`FaultRule::delay`] or [`FaultRule::any_operation`], narrowed with the `with`-style methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// `None`: every operation.
    operation: Option<Operation>,
    path: PathFilter,
    /// 1-based index, among the calls this rule matches, of the first call it fires on.
    first: u64,
    /// How many matching calls it fires on from `first`; `None` = all of them.
    times: Option<u64>,
    action: FaultAction,
}

impl FaultRule {
    /// Fails the first matching call of `operation` before it has any effect.
    pub fn fail(operation: Operation) -> Self {
        Self::new(Some(operation), FaultAction::Fail)
    }

    /// Performs the first matching call of `operation`, then reports a failure.
    pub fn effect_then_fail(operation: Operation) -> Self {
        Self::new(Some(operation), FaultAction::EffectThenFail)
    }

    /// Delays the first matching call of `operation` by `delay`.
    pub fn delay(operation: Operation, delay: Duration) -> Self {
        Self::new(Some(operation), FaultAction::Delay(delay))
    }

    /// `action` on the first matching call of any operation (with [`FaultRule::always`]: a crashed store).
    pub fn any_operation(action: FaultAction) -> Self {
        Self::new(None, action)
    }

    fn new(operation: Option<Operation>, action: FaultAction) -> Self {
        Self {
            operation,
            path: PathFilter::Any,
            first: 1,
            times: Some(1),
            action,
        }
    }

    /// Fires first on the `n`-th matching call (1-based; 0 is taken as 1).
    pub fn on_call(mut self, n: u64) -> Self {
        self.first = n.max(1);
        self
    }

    /// Fires on `k` consecutive matching calls (from the first one it fires on).
    pub fn times(mut self, k: u64) -> Self {
        self.times = Some(k);
        self
    }

    /// Fires on every matching call (from the first one it fires on).
    pub fn always(mut self) -> Self {
        self.times = None;
        self
    }

    /// Only paths matching `filter`.
    pub fn with_path(mut self, filter: PathFilter) -> Self {
        self.path = filter;
        self
    }

    /// Only paths starting with `prefix`.
    pub fn path_prefix(self, prefix: impl Into<String>) -> Self {
        self.with_path(PathFilter::Prefix(prefix.into()))
    }

    /// Only paths ending with `suffix`.
    pub fn path_suffix(self, suffix: impl Into<String>) -> Self {
        self.with_path(PathFilter::Suffix(suffix.into()))
    }

    /// Only paths containing `part`.
    pub fn path_contains(self, part: impl Into<String>) -> Self {
        self.with_path(PathFilter::Contains(part.into()))
    }

    /// Only exactly `path`.
    pub fn path_exact(self, path: impl Into<String>) -> Self {
        self.with_path(PathFilter::Exact(path.into()))
    }

    /// The action.
    pub fn action(&self) -> FaultAction {
        self.action
    }

    fn matches(&self, operation: Operation, path: &str) -> bool {
        self.operation.is_none_or(|op| op == operation) && self.path.matches(path)
    }

    /// Whether the `n`-th matching call (1-based) is inside the firing window.
    fn due(&self, n: u64) -> bool {
        n >= self.first && self.times.is_none_or(|k| n - self.first < k)
    }
}

/// Identifies a rule added with [`FaultyStorage::add_rule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(usize);

/// How an injected failure related to the call's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedFailure {
    /// The call failed before reaching the inner store.
    BeforeEffect,
    /// The inner call ran; its answer was replaced by an error.
    AfterEffect,
}

/// One logged call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The operation.
    pub operation: Operation,
    /// The path (the prefix, for [`Operation::List`]).
    pub path: String,
    /// Total injected delay.
    pub delayed: Duration,
    /// The injected failure, if any.
    pub failure: Option<InjectedFailure>,
}

#[derive(Debug)]
struct RuleState {
    rule: FaultRule,
    matched: u64,
    fired: u64,
    removed: bool,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<RuleState>,
    log: Vec<Call>,
}

/// What the rules decided for one call.
struct Decision {
    delay: Duration,
    failure: Option<InjectedFailure>,
}

/// Wraps a storage and injects the faults its rules describe. See the module doc.
#[derive(Debug)]
pub struct FaultyStorage {
    inner: Arc<dyn Storage>,
    state: Mutex<State>,
}

impl FaultyStorage {
    /// A wrapper with no rules (every call passes through, and is logged).
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        Self {
            inner,
            state: Mutex::default(),
        }
    }

    /// The wrapped storage (to inspect the true state behind the faults).
    pub fn inner(&self) -> &Arc<dyn Storage> {
        &self.inner
    }

    /// Adds a rule; it sees calls made from now on.
    pub fn add_rule(&self, rule: FaultRule) -> RuleId {
        let mut state = self.state();
        state.rules.push(RuleState {
            rule,
            matched: 0,
            fired: 0,
            removed: false,
        });
        RuleId(state.rules.len() - 1)
    }

    /// Adds a rule (builder style).
    pub fn with_rule(self, rule: FaultRule) -> Self {
        self.add_rule(rule);
        self
    }

    /// Stops a rule from matching further calls (its counters stay readable).
    pub fn remove_rule(&self, id: RuleId) {
        if let Some(r) = self.state().rules.get_mut(id.0) {
            r.removed = true;
        }
    }

    /// Stops every rule.
    pub fn clear_rules(&self) {
        for r in &mut self.state().rules {
            r.removed = true;
        }
    }

    /// How many calls the rule matched so far.
    pub fn matched(&self, id: RuleId) -> u64 {
        self.state().rules.get(id.0).map_or(0, |r| r.matched)
    }

    /// How many calls the rule acted on so far.
    pub fn fired(&self, id: RuleId) -> u64 {
        self.state().rules.get(id.0).map_or(0, |r| r.fired)
    }

    /// Every call so far, in the order the calls started.
    pub fn calls(&self) -> Vec<Call> {
        self.state().log.clone()
    }

    /// `(operation, path)` of every call so far, in order.
    pub fn call_paths(&self) -> Vec<(Operation, String)> {
        self.state()
            .log
            .iter()
            .map(|c| (c.operation, c.path.clone()))
            .collect()
    }

    /// How many calls of `operation` were made.
    pub fn count(&self, operation: Operation) -> usize {
        self.state()
            .log
            .iter()
            .filter(|c| c.operation == operation)
            .count()
    }

    /// Forgets the call log (rules and their counters stay).
    pub fn clear_log(&self) {
        self.state().log.clear();
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a test thread panicked while holding it; the state is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the call against every rule, decides its faults and logs it, atomically (so that concurrent
    /// calls get consecutive, distinct call numbers).
    fn decide(&self, operation: Operation, path: &str) -> Decision {
        let mut state = self.state();
        let mut delay = Duration::ZERO;
        let mut failure = None;
        for r in state.rules.iter_mut().filter(|r| !r.removed) {
            if !r.rule.matches(operation, path) {
                continue;
            }
            r.matched += 1;
            if !r.rule.due(r.matched) {
                continue;
            }
            match r.rule.action {
                FaultAction::Delay(d) => {
                    delay += d;
                    r.fired += 1;
                }
                FaultAction::Fail if failure.is_none() => {
                    failure = Some(InjectedFailure::BeforeEffect);
                    r.fired += 1;
                }
                FaultAction::EffectThenFail if failure.is_none() => {
                    failure = Some(InjectedFailure::AfterEffect);
                    r.fired += 1;
                }
                FaultAction::Fail | FaultAction::EffectThenFail => {}
            }
        }
        state.log.push(Call {
            operation,
            path: path.to_string(),
            delayed: delay,
            failure,
        });
        Decision { delay, failure }
    }

    /// Runs `call` on the inner store under the faults decided for `(operation, path)`.
    async fn run<T, F>(&self, operation: Operation, path: &str, call: F) -> StorageResult<T>
    where
        F: std::future::Future<Output = StorageResult<T>>,
    {
        self.run_owing(operation, path, call, None).await
    }

    /// As [`FaultyStorage::run`]; with `owed`, a delay is added there instead of slept.
    async fn run_owing<T, F>(
        &self,
        operation: Operation,
        path: &str,
        call: F,
        owed: Option<&Mutex<Duration>>,
    ) -> StorageResult<T>
    where
        F: std::future::Future<Output = StorageResult<T>>,
    {
        let decision = self.decide(operation, path);
        match owed {
            Some(owed) => *owed.lock().unwrap_or_else(|e| e.into_inner()) += decision.delay,
            None if !decision.delay.is_zero() => tokio::time::sleep(decision.delay).await,
            None => {}
        }
        let injected = || StorageError::Injected {
            operation: operation.as_str(),
            path: path.to_string(),
        };
        match decision.failure {
            Some(InjectedFailure::BeforeEffect) => Err(injected()),
            Some(InjectedFailure::AfterEffect) => {
                call.await?;
                Err(injected())
            }
            None => call.await,
        }
    }
}

#[async_trait]
impl Storage for FaultyStorage {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.run(Operation::Get, path, self.inner.get(path)).await
    }

    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        self.run(Operation::GetRange, path, self.inner.get_range(path, range))
            .await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.run(Operation::Head, path, self.inner.head(path)).await
    }

    async fn modified_ms(&self, path: &str) -> StorageResult<Option<i64>> {
        self.run(Operation::Head, path, self.inner.modified_ms(path))
            .await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.run(Operation::Put, path, self.inner.put(path, data))
            .await
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.run(
            Operation::PutIfAbsent,
            path,
            self.inner.put_if_absent(path, data),
        )
        .await
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.run(Operation::List, prefix, self.inner.list(prefix))
            .await
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.run(Operation::Delete, path, self.inner.delete(path))
            .await
    }

    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        Ok(Box::new(upload::FaultyUpload {
            storage: self,
            path: path.to_string(),
            inner: self.inner.put_multipart(path).await?,
        }))
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let first = paths.first().map(String::as_str).unwrap_or_default();
        self.run(Operation::DeleteMany, first, self.inner.delete_many(paths))
            .await
    }
}

/// A [`FaultyStorage`] whose delays are owed instead of slept: the same store, rules and call counts, but a
/// delay adds up in [`Undelayed::take_owed`] for the caller to spend on a clock it drives. For a caller on a
/// runtime whose time the test does not control (the simulation runs the Delta mirror's engine on a
/// real-time runtime, and spends the delays on its paused clock afterwards).
#[derive(Debug)]
pub struct Undelayed {
    faulty: Arc<FaultyStorage>,
    owed: Mutex<Duration>,
}

impl Undelayed {
    /// `faulty`, its delays owed.
    pub fn new(faulty: Arc<FaultyStorage>) -> Self {
        Self {
            faulty,
            owed: Mutex::new(Duration::ZERO),
        }
    }

    /// The delays owed since the last call.
    pub fn take_owed(&self) -> Duration {
        std::mem::take(&mut *self.owed.lock().unwrap_or_else(|e| e.into_inner()))
    }

    async fn run<T, F>(&self, operation: Operation, path: &str, call: F) -> StorageResult<T>
    where
        F: std::future::Future<Output = StorageResult<T>>,
    {
        self.faulty
            .run_owing(operation, path, call, Some(&self.owed))
            .await
    }
}

#[async_trait]
impl Storage for Undelayed {
    fn base_uri(&self) -> &str {
        self.faulty.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.run(Operation::Get, path, self.faulty.inner.get(path))
            .await
    }

    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        let inner = &self.faulty.inner;
        self.run(Operation::GetRange, path, inner.get_range(path, range))
            .await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.run(Operation::Head, path, self.faulty.inner.head(path))
            .await
    }

    async fn modified_ms(&self, path: &str) -> StorageResult<Option<i64>> {
        let inner = &self.faulty.inner;
        self.run(Operation::Head, path, inner.modified_ms(path))
            .await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.run(Operation::Put, path, self.faulty.inner.put(path, data))
            .await
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let inner = &self.faulty.inner;
        self.run(
            Operation::PutIfAbsent,
            path,
            inner.put_if_absent(path, data),
        )
        .await
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.run(Operation::List, prefix, self.faulty.inner.list(prefix))
            .await
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.run(Operation::Delete, path, self.faulty.inner.delete(path))
            .await
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let first = paths.first().map(String::as_str).unwrap_or_default();
        let inner = &self.faulty.inner;
        self.run(Operation::DeleteMany, first, inner.delete_many(paths))
            .await
    }
}

#[cfg(test)]
mod tests;
