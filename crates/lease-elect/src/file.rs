//! A lock in a local file, for several processes on one machine.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{
    Clock, ElectionEvent, LeaderElectionRecord, LockError, ResourceLock, TokioClock, Version,
};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    version: u64,
    record: Option<LeaderElectionRecord>,
}

/// A [`ResourceLock`] in a file: the embedded default for several processes on one machine.
///
/// - The file holds `{"version":N,"record":{...client-go record...}}`; `N` is a write
///   counter that also survives deletes (`"record":null`), so versions carry
///   [sequences](Version::sequence) and fencing tokens strictly increase.
/// - Every write is a read-modify-write under an exclusive OS file lock on `<path>.lock`
///   (held for the read, one fsync of the new content and the rename; the directory fsync
///   comes after the release; the OS releases it if the process dies), checking the
///   expected version. A write that
///   cannot take the OS lock within the lock timeout (default 500 ms,
///   [`with_lock_timeout`](FileLock::with_lock_timeout)) fails with a retryable error.
/// - `<path>.lock` also keeps a floor: the highest version ever written. Versions continue
///   above it even when the record file is removed, so fencing tokens never go backwards.
/// - The new content goes to the temporary file `<path>.tmp` (one fixed name, written only
///   under the OS lock, so a writer killed half-way leaves nothing the next write does not
///   replace), which is fsynced and atomically renamed over the record; the directory is
///   fsynced after the OS lock is released. A crash at any point leaves either the old or
///   the new record, never a torn one.
/// - A file that does not parse is [`LockError::Corrupt`]: the elector reports it and never
///   takes over.
/// - Waiting candidates poll the file's version every 100 ms (configurable), so a release
///   is handed over within about one poll interval.
///
/// Blocking file I/O runs on tokio's blocking pool.
///
/// ```no_run
/// use lease_elect::{ElectionConfig, FileLock, LeaderElector};
///
/// let lock = FileLock::new("/run/my-controller/leader.json", "host-1");
/// let elector = LeaderElector::new(ElectionConfig::builder().lock(lock).build()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FileLock {
    inner: Arc<FileInner>,
}

struct FileInner {
    path: PathBuf,
    lock_path: PathBuf,
    owner_path: PathBuf,
    identity: String,
    clock: Arc<dyn Clock>,
    poll_interval: Duration,
    owner_liveness: bool,
    /// The open, OS-locked `<path>.owner` while this handle owns the record (owner liveness).
    owner: Mutex<Option<File>>,
    tmp_path: PathBuf,
    lock_timeout: Duration,
}

#[derive(Clone)]
struct Settings {
    path: PathBuf,
    identity: String,
    clock: Arc<dyn Clock>,
    poll_interval: Duration,
    owner_liveness: bool,
    lock_timeout: Duration,
}

impl std::fmt::Debug for FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLock")
            .field("path", &self.inner.path)
            .field("identity", &self.inner.identity)
            .finish_non_exhaustive()
    }
}

impl FileLock {
    /// A handle on the record at `path` for participant `identity`. The file and its
    /// `<path>.lock` companion are created on first write; the directory must exist.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>, identity: impl Into<String>) -> Self {
        Self::build(Settings {
            path: path.into(),
            identity: identity.into(),
            clock: Arc::new(TokioClock::new()),
            poll_interval: Duration::from_millis(100),
            owner_liveness: false,
            lock_timeout: Duration::from_millis(500),
        })
    }

    /// Sets how often waiting candidates poll the file for changes (default 100 ms).
    #[must_use]
    pub fn with_poll_interval(self, interval: Duration) -> Self {
        let mut s = self.settings();
        s.poll_interval = interval;
        Self::build(s)
    }

    /// Sets how long a write waits for the OS lock on `<path>.lock` (default 500 ms) before
    /// it fails with a retryable [`LockError::Backend`] whose source is a [`LockBusy`].
    /// Writers hold that lock for one fsync; only a stopped process or a foreign one holds it
    /// much longer. Keep it below the elector's attempt timeout.
    #[must_use]
    pub fn with_lock_timeout(self, timeout: Duration) -> Self {
        let mut s = self.settings();
        s.lock_timeout = timeout;
        Self::build(s)
    }

    /// Sets the clock the change poll sleeps on (default [`TokioClock`]).
    #[must_use]
    pub fn with_clock(self, clock: impl Clock) -> Self {
        let mut s = self.settings();
        s.clock = Arc::new(clock);
        Self::build(s)
    }

    /// Owner liveness, for [leader-for-life](crate::LeaderForLife) across processes: a
    /// handle whose `create` succeeds also holds an exclusive OS lock on `<path>.owner`
    /// until it deletes the record or its process ends (the OS drops the lock when a
    /// process dies, even by SIGKILL). A `create` that finds a record whose owner lock is
    /// free treats the record as gone and replaces it, so a crashed leader-for-life holder
    /// is succeeded on its successors' next try. Leave it off for lease-based election.
    #[must_use]
    pub fn with_owner_liveness(self) -> Self {
        let mut s = self.settings();
        s.owner_liveness = true;
        Self::build(s)
    }

    fn settings(&self) -> Settings {
        let i = &self.inner;
        Settings {
            path: i.path.clone(),
            identity: i.identity.clone(),
            clock: i.clock.clone(),
            poll_interval: i.poll_interval,
            owner_liveness: i.owner_liveness,
            lock_timeout: i.lock_timeout,
        }
    }

    fn build(s: Settings) -> Self {
        let sibling = |suffix: &str| {
            let mut p = s.path.clone().into_os_string();
            p.push(suffix);
            PathBuf::from(p)
        };
        FileLock {
            inner: Arc::new(FileInner {
                lock_path: sibling(".lock"),
                owner_path: sibling(".owner"),
                tmp_path: sibling(".tmp"),
                path: s.path,
                identity: s.identity,
                clock: s.clock,
                poll_interval: s.poll_interval,
                owner_liveness: s.owner_liveness,
                owner: Mutex::new(None),
                lock_timeout: s.lock_timeout,
            }),
        }
    }

    /// The record file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&FileInner) -> Result<T, LockError> + Send + 'static,
    ) -> Result<T, LockError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(LockError::retryable)?
    }
}

/// Another process held the OS lock of a [`FileLock`] for longer than its lock timeout
/// (the source of a retryable [`LockError::Backend`]).
#[derive(Debug, thiserror::Error)]
#[error("{} stayed locked by another process for {waited:?}", path.display())]
pub struct LockBusy {
    /// The lock file.
    pub path: PathBuf,
    /// How long the write waited.
    pub waited: Duration,
}

/// The floor kept in `<path>.lock`: the highest version ever written.
fn read_floor(file: &mut File) -> Option<u64> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn write_floor(file: &mut File, version: u64) {
    let text = format!("{version:020}\n");
    // Fixed width: the new content always covers the old one.
    let _ = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(text.as_bytes()));
}

fn io_error(e: std::io::Error) -> LockError {
    let retryable = !matches!(
        e.kind(),
        ErrorKind::PermissionDenied | ErrorKind::NotFound | ErrorKind::ReadOnlyFilesystem
    );
    LockError::Backend {
        source: Box::new(e),
        retryable,
    }
}

impl FileInner {
    fn read(&self) -> Result<Option<Stored>, LockError> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(e)),
        };
        serde_json::from_slice::<Stored>(&bytes)
            .map(Some)
            .map_err(|e| LockError::Corrupt {
                detail: format!("{} does not hold a lock record", self.path.display()),
                source: Some(Box::new(e)),
            })
    }

    /// Runs `f` on the current content under the exclusive OS lock; writes what it returns.
    fn modify(
        &self,
        f: impl FnOnce(Option<Stored>) -> Result<Stored, LockError>,
    ) -> Result<u64, LockError> {
        let mut guard = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.lock_path)
            .map_err(io_error)?;
        self.lock_with_timeout(&guard)?;
        let floor = read_floor(&mut guard);
        let current = self.read()?;
        let mut next = f(current)?;
        // The counter never goes below the floor, even when the record file was removed.
        if let Some(floor) = floor
            && next.version <= floor
        {
            next.version = floor.checked_add(1).ok_or_else(|| LockError::Corrupt {
                detail: "the lock file's version floor is at its maximum".into(),
                source: None,
            })?;
        }
        self.write_atomically(&next)?;
        write_floor(&mut guard, next.version);
        drop(guard); // closing the file releases the OS lock
        self.sync_dir();
        Ok(next.version)
    }

    /// Takes the exclusive OS lock on `<path>.lock`, trying for at most the lock timeout: a
    /// process that holds it for longer (stopped, or not a lease-elect process) makes the
    /// call fail with a retryable error instead of hanging.
    fn lock_with_timeout(&self, file: &File) -> Result<(), LockError> {
        let start = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(()),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(io_error(e)),
            }
            if start.elapsed() >= self.lock_timeout {
                return Err(LockError::retryable(LockBusy {
                    path: self.lock_path.clone(),
                    waited: self.lock_timeout,
                }));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Persists renames in the directory; not every platform can open a directory.
    fn sync_dir(&self) {
        if let Some(dir) = self.path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }

    /// Takes the owner lock if nobody holds it. `Ok(true)`: this handle holds it now.
    fn take_owner(&self) -> Result<bool, LockError> {
        let mut owner = self
            .owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if owner.is_some() {
            return Ok(true);
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.owner_path)
            .map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => {
                *owner = Some(file);
                Ok(true)
            }
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Error(e)) => Err(io_error(e)),
        }
    }

    fn holds_owner(&self) -> bool {
        self.owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    fn drop_owner(&self) {
        // Closing the file releases the OS lock.
        self.owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }

    fn write_atomically(&self, stored: &Stored) -> Result<(), LockError> {
        let text = serde_json::to_vec(stored).map_err(LockError::permanent)?;
        // One fixed temporary name, only ever written under the OS lock: a writer killed
        // half-way leaves at most this file, which the next write replaces and renames away.
        let tmp = &self.tmp_path;
        let result = (|| {
            let mut file = File::create(tmp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(tmp, &self.path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(tmp);
        }
        result.map_err(io_error)
    }
}

fn current_version(stored: Option<&Stored>) -> Option<u64> {
    stored.and_then(|s| s.record.as_ref().map(|_| s.version))
}

#[async_trait]
impl ResourceLock for FileLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        self.blocking(|i| {
            Ok(i.read()?.and_then(|s| {
                let v = s.version;
                s.record.map(|r| (r, Version::from_sequence(v)))
            }))
        })
        .await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        let record = record.clone();
        self.blocking(move |i| {
            let held_before = i.holds_owner();
            let result = i.modify(|cur| {
                let exists = current_version(cur.as_ref()).is_some();
                if i.owner_liveness {
                    let owner_gone = !held_before && i.take_owner()?;
                    if exists && !owner_gone {
                        return Err(LockError::Conflict(
                            "record already exists and its owner is alive".into(),
                        ));
                    }
                    if !exists && !i.holds_owner() {
                        return Err(LockError::Conflict(
                            "another handle holds the owner lock".into(),
                        ));
                    }
                    if exists {
                        tracing::info!(lock = %i.path.display(), identity = %i.identity, "the record's owner is gone; replacing the record");
                    }
                } else if exists {
                    return Err(LockError::Conflict("record already exists".into()));
                }
                Ok(Stored {
                    version: next_version(cur.as_ref())?,
                    record: Some(record),
                })
            });
            if result.is_err() && i.owner_liveness && !held_before {
                i.drop_owner();
            }
            result.map(Version::from_sequence)
        })
        .await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let record = record.clone();
        let expected = expected.sequence();
        self.blocking(move |i| {
            i.modify(|cur| {
                let found = current_version(cur.as_ref());
                if found.is_none() || found != expected {
                    return Err(LockError::Conflict(format!(
                        "expected version {expected:?}, found {found:?}"
                    )));
                }
                Ok(Stored {
                    version: next_version(cur.as_ref())?,
                    record: Some(record),
                })
            })
            .map(Version::from_sequence)
        })
        .await
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let expected = expected.sequence();
        self.blocking(move |i| {
            i.modify(|cur| {
                let found = current_version(cur.as_ref());
                if found.is_none() || found != expected {
                    return Err(LockError::Conflict(format!(
                        "expected version {expected:?}, found {found:?}"
                    )));
                }
                // Keep the counter so later versions (and tokens) keep increasing.
                Ok(Stored {
                    version: next_version(cur.as_ref())?,
                    record: None,
                })
            })?;
            i.drop_owner();
            Ok(())
        })
        .await
    }

    async fn wait_for_change(&self, seen: Option<&Version>) {
        let seen = seen.and_then(Version::sequence);
        loop {
            self.inner.clock.sleep(self.inner.poll_interval).await;
            let now = self
                .blocking(|i| Ok(current_version(i.read()?.as_ref())))
                .await;
            match now {
                Ok(v) if v == seen => {}
                _ => return,
            }
        }
    }

    fn identity(&self) -> &str {
        &self.inner.identity
    }

    fn describe(&self) -> String {
        format!("file:{}", self.inner.path.display())
    }

    fn record_event(&self, event: &ElectionEvent) {
        tracing::debug!(lock = %self.describe(), identity = %self.inner.identity, %event, "election event");
    }
}

/// The version after the stored one; a counter at its maximum cannot advance without
/// wrapping (which would make fencing tokens go backwards), so the file is reported corrupt.
fn next_version(cur: Option<&Stored>) -> Result<u64, LockError> {
    cur.map_or(0, |s| s.version)
        .checked_add(1)
        .ok_or_else(|| LockError::Corrupt {
            detail: "the lock file's version counter is at its maximum".into(),
            source: None,
        })
}
