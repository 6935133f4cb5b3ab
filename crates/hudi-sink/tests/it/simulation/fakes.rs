//! The simulation's parts that stand in for the world around one invocation: its storage (scheduling noise,
//! crash and freeze points), its lock, its transport, and S3 on moto driven from the paused runtime.

use super::*;

/// The storage as one invocation sees it: scheduling noise, crash and freeze points, then the shared
/// fault-injecting store.
#[derive(Debug)]
pub(super) struct InvStorage {
    pub(super) inner: Arc<dyn Storage>,
    pub(super) plan: Arc<Plan>,
    pub(super) world: Arc<World>,
}

impl InvStorage {
    /// Stops the process (clock, heartbeats, every call) for the plan's freeze time.
    async fn freeze(&self, kind: &'static str) {
        let plan = &self.plan;
        self.world.count(kind);
        plan.frozen.store(true, Ordering::SeqCst);
        plan.clock.freeze();
        tokio::time::sleep(Duration::from_millis(plan.freeze_ms)).await;
        plan.clock.thaw();
        plan.frozen.store(false, Ordering::SeqCst);
    }

    async fn before(&self, commit_put: bool) -> u64 {
        let plan = &self.plan;
        if plan.crashed.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        while plan.frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let n = plan.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.world.faults_on.load(Ordering::SeqCst) {
            for _ in 0..self.world.roll(3) {
                tokio::task::yield_now().await;
            }
            if self.world.chance(8) {
                self.world.count("reordering delay");
                let ms = 1 + self.world.roll(400);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
        // A freeze right before the commit file's PUT (or a window member's data file upload) is a window
        // lease fencing cannot close (see docs/reliability.md): it is left out here and named as a limit there.
        if plan.freeze_at == Some(n) && !commit_put && self.world.faults_on.load(Ordering::SeqCst) {
            self.freeze("process frozen past the lease").await;
        }
        if plan.crash_at == Some(n) && !plan.crash_after_effect {
            self.world.count("crash before a storage call");
            plan.crash_now().await;
        }
        n
    }

    async fn after(&self, n: u64) {
        if self.plan.crash_at == Some(n) && self.plan.crash_after_effect {
            self.world.count("crash after a storage call took effect");
            self.plan.crash_now().await;
        }
    }
}

#[async_trait]
impl Storage for InvStorage {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        let n = self.before(false).await;
        let r = self.inner.get(path).await;
        self.after(n).await;
        r
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        let n = self.before(false).await;
        let r = self.inner.get_range(path, range).await;
        self.after(n).await;
        r
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        let n = self.before(false).await;
        let r = self.inner.head(path).await;
        self.after(n).await;
        // The coordinator checks each file of a commit with a HEAD; after the last one it only proves its
        // lease and creates the commit file.
        let armed = &self.plan.checks_until_pause;
        if path.ends_with(".parquet")
            && armed.load(Ordering::SeqCst) > 0
            && armed.fetch_sub(1, Ordering::SeqCst) == 1
            && self.world.faults_on.load(Ordering::SeqCst)
        {
            self.freeze("process frozen between the last check and the lease proof")
                .await;
        }
        r
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        let n = self
            .before(is_commit_file(path) || is_data_file(path))
            .await;
        let r = self.inner.put(path, data).await;
        self.after(n).await;
        r
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let n = self
            .before(is_commit_file(path) || is_data_file(path))
            .await;
        let r = self.inner.put_if_absent(path, data).await;
        self.after(n).await;
        r
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let n = self.before(false).await;
        let r = self.inner.list(prefix).await;
        self.after(n).await;
        r
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        let n = self.before(false).await;
        let r = self.inner.delete(path).await;
        self.after(n).await;
        r
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let n = self.before(false).await;
        let r = self.inner.delete_many(paths).await;
        self.after(n).await;
        r
    }

    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        Ok(CountedUpload::start(self, path, &self.plan.open_uploads))
    }
}

/// The lock as one invocation sees it: acquisition sometimes fails (throttling, network).
#[derive(Debug)]
pub(super) struct SimLock {
    pub(super) inner: MemoryLock,
    pub(super) world: Arc<World>,
}

#[async_trait]
impl Lock for SimLock {
    async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError> {
        if self.world.chance(3) {
            self.world.count("lock acquisition failed");
            return Err(LockError::Backend {
                lock: self.inner.describe().to_string(),
                operation: "PutItem",
                message: "injected by the simulation".into(),
                retryable: false,
            });
        }
        self.inner.acquire(wait).await
    }

    async fn current(&self) -> Result<Option<LockRecord>, LockError> {
        self.inner.current().await
    }

    fn owner(&self) -> &str {
        self.inner.owner()
    }

    fn describe(&self) -> &str {
        self.inner.describe()
    }
}

/// The writer → coordinator transport: a request or its answer is sometimes lost.
#[derive(Debug)]
pub(super) struct SimTransport {
    pub(super) inner: InProcessClient,
    pub(super) world: Arc<World>,
    pub(super) plan: Arc<Plan>,
}

#[async_trait]
impl CoordinatorClient for SimTransport {
    async fn call(&self, request: CoordinatorRequest) -> Result<CoordinatorResponse, WriteError> {
        let lost = |what: &str| WriteError::Transport {
            function: "simulated coordinator".into(),
            message: format!("injected: {what} lost"),
        };
        if self.world.chance(2) {
            self.world.count("coordinator request lost");
            return Err(lost("request"));
        }
        let checked = match &request {
            CoordinatorRequest::Commit(req) => Some(req.write_stats.len()),
            // A submit that closes the window checks at least this member's files.
            CoordinatorRequest::Submit(req) => Some(req.contribution.write_stats.len()),
            _ => None,
        };
        if let Some(files) = checked.filter(|_| self.plan.pause_before_fence) {
            self.plan
                .checks_until_pause
                .store(files as u64, Ordering::SeqCst);
        }
        let answer = self.inner.call(request).await;
        if self.world.chance(2) {
            self.world.count("coordinator answer lost");
            return Err(lost("answer"));
        }
        answer
    }
}

/// Which backend the run's table lives on.
#[derive(Debug, Clone)]
pub(super) enum Backend {
    Memory,
    Local(std::path::PathBuf),
    /// S3 on moto: this bucket, one prefix per seed.
    Moto(String),
}

/// The real-time runtime that S3 calls of moto seeds run on.
pub(super) fn real_time() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("real-time runtime")
    })
}

/// Runs `f` to completion on the real-time runtime while this thread waits.
pub(super) fn on_real_time<T: Send + 'static>(
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    real_time().spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().expect("the real-time runtime dropped a call")
}

/// S3 (the library's `S3Storage` and the AWS SDK) on moto, as the simulation's paused runtime sees it: each
/// call runs on a real-time runtime while the simulation's only thread waits for it. A request therefore
/// takes no virtual time and keeps the run's order of events, and the SDK's own timers run in real time.
#[derive(Debug)]
pub(super) struct BlockingS3 {
    pub(super) inner: Arc<hudi_sink::storage::s3::S3Storage>,
}

impl BlockingS3 {
    pub(super) fn new(bucket: &str, prefix: &str) -> Self {
        let (bucket, prefix) = (bucket.to_string(), prefix.to_string());
        let client = on_real_time(async move {
            aws_sdk_s3::Client::new(&crate::common::moto::sdk_config().await)
        });
        Self {
            inner: Arc::new(hudi_sink::storage::s3::S3Storage::new(
                client, bucket, prefix,
            )),
        }
    }
}

#[async_trait]
impl Storage for BlockingS3 {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.get(&p).await })
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.get_range(&p, range).await })
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.head(&p).await })
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.put(&p, data).await })
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.put_if_absent(&p, data).await })
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let (s, p) = (self.inner.clone(), prefix.to_string());
        on_real_time(async move { s.list(&p).await })
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        let (s, p) = (self.inner.clone(), path.to_string());
        on_real_time(async move { s.delete(&p).await })
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        let (s, p) = (self.inner.clone(), paths.to_vec());
        on_real_time(async move { s.delete_many(&p).await })
    }
}

/// An upload counted in `open` until it completes or aborts (S3 keeps the parts of one dropped half-way).
pub(super) struct CountedUpload<'a> {
    inner: Box<dyn MultipartUpload + 'a>,
    open: &'a AtomicU64,
}

impl<'a> CountedUpload<'a> {
    /// The default (buffered) upload of `path` into `storage`, counted in `open`.
    pub(super) fn start<S: Storage>(storage: &'a S, path: &str, open: &'a AtomicU64) -> Box<Self> {
        open.fetch_add(1, Ordering::SeqCst);
        Box::new(Self {
            inner: Box::new(BufferedUpload::new(storage, path)),
            open,
        })
    }
}

#[async_trait]
impl MultipartUpload for CountedUpload<'_> {
    async fn write(&mut self, data: Bytes) -> StorageResult<()> {
        self.inner.write(data).await
    }

    async fn complete(self: Box<Self>) -> StorageResult<u64> {
        let result = self.inner.complete().await;
        self.open.fetch_sub(1, Ordering::SeqCst);
        result
    }

    async fn abort(self: Box<Self>) -> StorageResult<()> {
        let result = self.inner.abort().await;
        self.open.fetch_sub(1, Ordering::SeqCst);
        result
    }
}
