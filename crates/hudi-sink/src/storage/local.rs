//! The local file system as a [`Storage`]: the embedded default of the `hudi-sink` command.
//!
//! Writes go to a temporary file in the target directory first. `put` renames it over the target (atomic
//! replace); `put_if_absent` hard-links it to the target, which fails if the target exists, so exactly one
//! of several racing creators wins and nobody ever sees a partial file.
//!
//! A multipart upload ([`Storage::put_multipart`]) appends to such a temporary file and renames it over the
//! target on completion; an aborted or dropped upload deletes it, so the final name never holds a partial file.
//!
//! Directories are objects' prefixes, as on S3: a delete removes the parent directories it leaves empty (up to
//! the root), so that a table whose markers come and go (`.hoodie/.temp/<t>/…`) keeps no trail of empty
//! directories for every listing to walk. A write whose directory vanished that way re-creates it.
//!
//! The directories a write made or found are remembered ([`KnownDirs`]): the next write into them goes straight
//! to its temporary file, without a `mkdir` that fails with `EEXIST` (one per write otherwise). The memory is
//! only a hint: a directory removed behind its back (by a delete of this storage, another process or a person)
//! makes the temporary file's creation fail with `NotFound`, and the write then creates the directory and tries
//! again, as it does when a concurrent delete removed it.
//!
//! Every file with data is synced before it is renamed or linked into place; an empty one is not, as a sync
//! protects no bytes of it (see [`sync_data`]).

use std::collections::HashSet;
use std::io::ErrorKind;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

use super::{
    validate_relative_path, MultipartUpload, ObjectMeta, PutOutcome, Storage, StorageError,
    StorageResult,
};

/// A directory holding one table.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
    uri: String,
    dirs: KnownDirs,
}

/// At most this many directories are remembered (a table's partitions and the timeline's few).
const MAX_KNOWN_DIRS: usize = 4096;

/// Directories that a write of this storage (or a clone of it) made or found, and that no delete of it removed
/// since: a hint that saves a write its `mkdir`, never a reason for a write to fail (see the module doc).
#[derive(Debug, Clone, Default)]
struct KnownDirs(Arc<Mutex<HashSet<PathBuf>>>);

impl KnownDirs {
    fn contains(&self, dir: &Path) -> bool {
        self.lock().contains(dir)
    }

    fn insert(&self, dir: &Path) {
        let mut dirs = self.lock();
        // Bounded: directories removed behind the set's back are never forgotten otherwise (a cleared set costs
        // one `mkdir` per directory on its next write).
        if dirs.len() >= MAX_KNOWN_DIRS {
            dirs.clear();
        }
        dirs.insert(dir.to_path_buf());
    }

    fn forget(&self, dir: &Path) {
        self.lock().remove(dir);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        // The set is only a hint, and no operation on it can leave it half-changed: a poisoned lock is fine.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl LocalStorage {
    /// Storage rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let uri = root.display().to_string();
        Self {
            root,
            uri,
            dirs: KnownDirs::default(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> StorageResult<PathBuf> {
        validate_relative_path(path)?;
        Ok(self.root.join(path))
    }
}

fn io_err(path: &str) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| {
        if source.kind() == ErrorKind::NotFound {
            StorageError::NotFound { path: path.into() }
        } else {
            StorageError::Io {
                path: path.into(),
                source,
            }
        }
    }
}

/// A fresh, empty temporary file beside `target`. Its directory is created unless `dirs` knows it.
fn create_temp(target: &Path, dirs: &KnownDirs) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = target.parent().unwrap_or_else(|| Path::new("."));
    let mut attempts = 0;
    loop {
        if !dirs.contains(dir) {
            std::fs::create_dir_all(dir)?;
            dirs.insert(dir);
        }
        match tempfile::Builder::new()
            .prefix(".tmp-hudi-sink-")
            .tempfile_in(dir)
        {
            Ok(tmp) => return Ok(tmp),
            // The directory is gone (a concurrent delete removed it as it became empty, or it was removed
            // behind `dirs`' back): make it again.
            Err(e) if e.kind() == ErrorKind::NotFound && attempts < 8 => {
                dirs.forget(dir);
                attempts += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes `data` to a fresh temporary file beside `target` and syncs it ([`sync_data`]).
fn write_temp(target: &Path, data: &[u8], dirs: &KnownDirs) -> std::io::Result<tempfile::TempPath> {
    use std::io::Write;
    let mut tmp = create_temp(target, dirs)?;
    tmp.write_all(data)?;
    sync_data(tmp.as_file(), data.len() as u64)?;
    Ok(tmp.into_temp_path())
}

/// Syncs a temporary file of `len` bytes before it is renamed or linked into place, so that a crash never leaves
/// the target name on a file whose bytes were lost. An empty file has no bytes to lose: with or without the sync,
/// a crash leaves the target name absent or on an empty file (no name here is made durable by a directory sync),
/// so the sync is skipped. A third of an instant's files are empty in Hudi: its markers and its `.requested` and
/// `.inflight` timeline files.
fn sync_data(file: &std::fs::File, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    file.sync_all()
}

/// Lists files under `dir`. An entry deleted while the listing runs is simply absent from it (as an object
/// deleted during an S3 listing is), not an error.
fn list_recursive(dir: &Path, rel: &str, out: &mut Vec<ObjectMeta>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(".tmp-hudi-sink-") {
            continue;
        }
        let child_rel = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        let vanished = |e: &std::io::Error| e.kind() == ErrorKind::NotFound;
        let ft = match entry.file_type() {
            Ok(ft) => ft,
            Err(e) if vanished(&e) => continue,
            Err(e) => return Err(e),
        };
        if ft.is_dir() {
            list_recursive(&entry.path(), &child_rel, out)?;
        } else if ft.is_file() {
            let size = match entry.metadata() {
                Ok(m) => m.len(),
                Err(e) if vanished(&e) => continue,
                Err(e) => return Err(e),
            };
            out.push(ObjectMeta {
                path: child_rel,
                size,
            });
        }
    }
    Ok(())
}

/// Runs blocking file work off the async threads; a panicked task becomes an I/O error on `path`.
async fn blocking<T: Send + 'static>(
    path: &str,
    work: impl FnOnce() -> StorageResult<T> + Send + 'static,
) -> StorageResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StorageError::Io {
            path: path.into(),
            source: std::io::Error::other(e),
        })?
}

/// A [`MultipartUpload`] into a temporary file beside the target, renamed over it on completion.
#[derive(Debug)]
struct LocalUpload {
    path: String,
    full: PathBuf,
    /// `None` only while a blocking write holds it (or after a failed one).
    file: Option<tempfile::NamedTempFile>,
    size: u64,
}

impl LocalUpload {
    fn take_file(&mut self) -> StorageResult<tempfile::NamedTempFile> {
        self.file.take().ok_or_else(|| StorageError::Io {
            path: self.path.clone(),
            source: std::io::Error::other("upload used after a failed write"),
        })
    }
}

#[async_trait]
impl MultipartUpload for LocalUpload {
    async fn write(&mut self, data: Bytes) -> StorageResult<()> {
        use std::io::Write;
        if data.is_empty() {
            return Ok(());
        }
        let mut file = self.take_file()?;
        let p = self.path.clone();
        let len = data.len() as u64;
        let file = blocking(&self.path, move || {
            file.write_all(&data).map_err(io_err(&p))?;
            Ok(file)
        })
        .await?;
        self.file = Some(file);
        self.size += len;
        Ok(())
    }

    async fn complete(mut self: Box<Self>) -> StorageResult<u64> {
        let file = self.take_file()?;
        let (p, full, size) = (self.path.clone(), self.full.clone(), self.size);
        blocking(&self.path, move || {
            sync_data(file.as_file(), size).map_err(io_err(&p))?;
            file.persist(&full).map_err(|e| io_err(&p)(e.error))?;
            Ok(size)
        })
        .await
    }

    async fn abort(mut self: Box<Self>) -> StorageResult<()> {
        let file = self.take_file()?;
        let p = self.path.clone();
        blocking(&self.path, move || file.close().map_err(io_err(&p))).await
    }
}

#[async_trait]
impl Storage for LocalStorage {
    fn base_uri(&self) -> &str {
        &self.uri
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        let full = self.resolve(path)?;
        let data = tokio::fs::read(&full).await.map_err(io_err(path))?;
        Ok(Bytes::from(data))
    }

    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let full = self.resolve(path)?;
        let mut file = tokio::fs::File::open(&full).await.map_err(io_err(path))?;
        let size = file.metadata().await.map_err(io_err(path))?.len();
        if range.start > range.end || range.end > size {
            return Err(StorageError::Range {
                path: path.into(),
                start: range.start,
                end: range.end,
                size,
            });
        }
        file.seek(std::io::SeekFrom::Start(range.start))
            .await
            .map_err(io_err(path))?;
        let mut buf = vec![0u8; (range.end - range.start) as usize];
        file.read_exact(&mut buf).await.map_err(io_err(path))?;
        Ok(Bytes::from(buf))
    }

    async fn modified_ms(&self, path: &str) -> StorageResult<Option<i64>> {
        let full = self.resolve(path)?;
        match tokio::fs::metadata(&full).await {
            Ok(m) if m.is_file() => Ok(m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .and_then(|d| i64::try_from(d.as_millis()).ok())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(path)(e)),
        }
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        let full = self.resolve(path)?;
        match tokio::fs::metadata(&full).await {
            Ok(m) if m.is_file() => Ok(Some(ObjectMeta {
                path: path.into(),
                size: m.len(),
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(path)(e)),
        }
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        let full = self.resolve(path)?;
        let p = path.to_string();
        let dirs = self.dirs.clone();
        tokio::task::spawn_blocking(move || -> StorageResult<()> {
            let tmp = write_temp(&full, &data, &dirs).map_err(io_err(&p))?;
            tmp.persist(&full).map_err(|e| io_err(&p)(e.error))?;
            Ok(())
        })
        .await
        .map_err(|e| StorageError::Io {
            path: path.into(),
            source: std::io::Error::other(e),
        })?
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let full = self.resolve(path)?;
        let p = path.to_string();
        let dirs = self.dirs.clone();
        tokio::task::spawn_blocking(move || -> StorageResult<PutOutcome> {
            if full.exists() {
                return Ok(PutOutcome::AlreadyExists);
            }
            let tmp = write_temp(&full, &data, &dirs).map_err(io_err(&p))?;
            // link(2) fails with EEXIST if the target exists: the atomic create-if-absent.
            match std::fs::hard_link(&tmp, &full) {
                Ok(()) => Ok(PutOutcome::Created),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(PutOutcome::AlreadyExists),
                Err(e) => Err(io_err(&p)(e)),
            }
        })
        .await
        .map_err(|e| StorageError::Io {
            path: path.into(),
            source: std::io::Error::other(e),
        })?
    }

    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        let full = self.resolve(path)?;
        let p = path.to_string();
        let target = full.clone();
        let dirs = self.dirs.clone();
        let file = blocking(path, move || {
            create_temp(&target, &dirs).map_err(io_err(&p))
        })
        .await?;
        Ok(Box::new(LocalUpload {
            path: path.to_string(),
            full,
            file: Some(file),
            size: 0,
        }))
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        // List from the deepest directory the prefix names, then filter by the full prefix.
        let dir_rel = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let start = if dir_rel.is_empty() {
            self.root.clone()
        } else {
            self.resolve(dir_rel)?
        };
        let root_rel = dir_rel.to_string();
        let prefix_owned = prefix.to_string();
        tokio::task::spawn_blocking(move || -> StorageResult<Vec<ObjectMeta>> {
            let mut out = Vec::new();
            list_recursive(&start, &root_rel, &mut out).map_err(io_err(&prefix_owned))?;
            out.retain(|o| o.path.starts_with(&prefix_owned));
            out.sort();
            Ok(out)
        })
        .await
        .map_err(|e| StorageError::Io {
            path: prefix.into(),
            source: std::io::Error::other(e),
        })?
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        let full = self.resolve(path)?;
        match tokio::fs::remove_file(&full).await {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(path)(e)),
        }
        // Parents left empty go too, up to the first that is not (best effort: a directory that is not empty, or
        // is being written to, simply stays).
        let mut dir = full.parent();
        while let Some(d) = dir {
            if d == self.root
                || !d.starts_with(&self.root)
                || tokio::fs::remove_dir(d).await.is_err()
            {
                break;
            }
            self.dirs.forget(d);
            dir = d.parent();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_delete_removes_the_directories_it_leaves_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalStorage::new(dir.path());
        for p in [
            ".hoodie/.temp/1/p/a.marker",
            ".hoodie/.temp/1/p/b.marker",
            "p/f.parquet",
        ] {
            store.put(p, Bytes::from_static(b"x")).await.expect("put");
        }
        store
            .delete(".hoodie/.temp/1/p/a.marker")
            .await
            .expect("delete");
        assert!(
            dir.path().join(".hoodie/.temp/1/p").is_dir(),
            "still holds b"
        );
        store
            .delete(".hoodie/.temp/1/p/b.marker")
            .await
            .expect("delete");
        assert!(
            !dir.path().join(".hoodie/.temp").exists(),
            "empty parents removed"
        );
        assert!(dir.path().join("p/f.parquet").is_file());
        store.delete("p/f.parquet").await.expect("delete");
        assert!(dir.path().is_dir(), "the root stays");
        // A write into a directory that a delete removed re-creates it.
        store
            .put(".hoodie/.temp/1/p/c.marker", Bytes::from_static(b"x"))
            .await
            .expect("put again");
        assert_eq!(store.list(".hoodie/.temp/").await.expect("list").len(), 1);
    }

    #[tokio::test]
    async fn a_directory_removed_behind_the_known_dirs_back_is_made_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalStorage::new(dir.path());
        let partition = dir.path().join("p/q");
        store
            .put("p/q/a.parquet", Bytes::from_static(b"a"))
            .await
            .expect("put");
        assert!(store.dirs.contains(&partition), "remembered after a put");
        // Removed by someone else: every kind of write still lands.
        std::fs::remove_dir_all(dir.path().join("p")).expect("remove");
        store
            .put("p/q/b.parquet", Bytes::from_static(b"b"))
            .await
            .expect("put into a removed directory");
        std::fs::remove_dir_all(dir.path().join("p")).expect("remove");
        assert_eq!(
            store
                .put_if_absent("p/q/c.parquet", Bytes::from_static(b"c"))
                .await
                .expect("put_if_absent into a removed directory"),
            PutOutcome::Created
        );
        std::fs::remove_dir_all(dir.path().join("p")).expect("remove");
        let mut upload = store
            .put_multipart("p/q/d.parquet")
            .await
            .expect("multipart into a removed directory");
        upload.write(Bytes::from_static(b"d")).await.expect("write");
        upload.complete().await.expect("complete");
        let names: Vec<_> = store
            .list("p/")
            .await
            .expect("list")
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(names, ["p/q/d.parquet"]);
        assert_eq!(&store.get("p/q/d.parquet").await.expect("get")[..], b"d");
        // A clone shares what is known; a delete that removes the directory forgets it.
        let clone = store.clone();
        assert!(clone.dirs.contains(&partition));
        clone.delete("p/q/d.parquet").await.expect("delete");
        assert!(!partition.exists());
        assert!(!store.dirs.contains(&partition), "forgotten once removed");
        assert!(!store.dirs.contains(&dir.path().join("p")));
    }

    #[tokio::test]
    async fn put_if_absent_has_one_winner_under_concurrency() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(LocalStorage::new(dir.path()));
        let mut handles = Vec::new();
        for i in 0..16u8 {
            let store = store.clone();
            handles.push(tokio::spawn(async move {
                store
                    .put_if_absent(".hoodie/1.commit", Bytes::from(vec![i; 100]))
                    .await
            }));
        }
        let mut created = 0;
        for h in handles {
            if h.await.expect("join").expect("put") == PutOutcome::Created {
                created += 1;
            }
        }
        assert_eq!(created, 1);
        let data = store.get(".hoodie/1.commit").await.expect("get");
        assert_eq!(data.len(), 100);
        assert!(data.iter().all(|b| *b == data[0]), "torn write");
        // No temporary files are left behind or listed.
        let listed = store.list("").await.expect("list");
        assert_eq!(listed.len(), 1);
    }

    #[tokio::test]
    async fn list_get_range_delete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalStorage::new(dir.path());
        store
            .put("a/b/c.txt", Bytes::from_static(b"hello"))
            .await
            .expect("put");
        store
            .put("a/d.txt", Bytes::from_static(b"x"))
            .await
            .expect("put");
        store
            .put("ab.txt", Bytes::from_static(b"y"))
            .await
            .expect("put");
        let names: Vec<_> = store
            .list("a/")
            .await
            .expect("list")
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(names, vec!["a/b/c.txt", "a/d.txt"]);
        let all: Vec<_> = store
            .list("a")
            .await
            .expect("list")
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(all, vec!["a/b/c.txt", "a/d.txt", "ab.txt"]);
        assert_eq!(
            &store.get_range("a/b/c.txt", 1..4).await.expect("range")[..],
            b"ell"
        );
        assert!(store.get_range("a/b/c.txt", 1..9).await.is_err());
        assert!(store.get("nope").await.expect_err("missing").is_not_found());
        store.delete("a/d.txt").await.expect("delete");
        store.delete("a/d.txt").await.expect("delete twice");
        assert_eq!(store.head("a/d.txt").await.expect("head"), None);
        assert!(store.put("../escape", Bytes::new()).await.is_err());
    }

    #[tokio::test]
    async fn an_unfinished_upload_leaves_no_file_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalStorage::new(dir.path());
        let files = || -> Vec<String> {
            let mut out = Vec::new();
            for entry in std::fs::read_dir(dir.path().join("p")).expect("read dir") {
                out.push(
                    entry
                        .expect("entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
            out
        };
        let mut upload = store.put_multipart("p/f.parquet").await.expect("start");
        upload
            .write(Bytes::from_static(b"abc"))
            .await
            .expect("write");
        assert_eq!(files().len(), 1, "the temporary file");
        assert!(!dir.path().join("p/f.parquet").exists());
        upload.abort().await.expect("abort");
        assert!(files().is_empty(), "{:?}", files());
        let mut upload = store.put_multipart("p/f.parquet").await.expect("start");
        upload
            .write(Bytes::from_static(b"abc"))
            .await
            .expect("write");
        drop(upload);
        assert!(files().is_empty(), "{:?}", files());
        let mut upload = store.put_multipart("p/f.parquet").await.expect("start");
        upload
            .write(Bytes::from_static(b"ab"))
            .await
            .expect("write");
        upload.write(Bytes::from_static(b"c")).await.expect("write");
        assert_eq!(upload.complete().await.expect("complete"), 3);
        assert_eq!(files(), ["f.parquet"]);
        assert_eq!(&store.get("p/f.parquet").await.expect("get")[..], b"abc");
    }
}
