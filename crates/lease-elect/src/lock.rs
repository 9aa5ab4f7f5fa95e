//! The lock abstraction every backend implements.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::LeaderElectionRecord;

/// An opaque version of a stored record, like Kubernetes' `resourceVersion`.
///
/// A backend hands one out with every record it returns or writes and takes it back in
/// [`ResourceLock::update`] and [`ResourceLock::delete`] to detect concurrent writes. The
/// elector only compares versions for equality and passes them back; it never parses the tag.
///
/// A backend may also attach a **sequence**: a number that strictly increases with every
/// successful write to the lock and is never reused, not even after the record is deleted
/// (etcd's `mod_revision`, a database sequence, the file counter of
/// [`FileLock`](crate::FileLock)). When present, fencing tokens are derived from it; see
/// [`FencingToken`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version {
    tag: Arc<str>,
    sequence: Option<u64>,
}

impl Version {
    /// A version identified by an opaque tag (for example a `resourceVersion`), without a
    /// sequence.
    #[must_use]
    pub fn new(tag: impl Into<Arc<str>>) -> Self {
        Version {
            tag: tag.into(),
            sequence: None,
        }
    }

    /// A version that is a write sequence number: strictly increasing over every successful
    /// write of the lock, never reused (see the type's docs).
    #[must_use]
    pub fn from_sequence(sequence: u64) -> Self {
        Version {
            tag: sequence.to_string().into(),
            sequence: Some(sequence),
        }
    }

    /// The opaque tag.
    #[must_use]
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The write sequence number, when the backend provides one.
    #[must_use]
    pub fn sequence(&self) -> Option<u64> {
        self.sequence
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({})", self.tag)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag)
    }
}

/// A fencing token: a number handed to the leader at the start of each leadership term,
/// strictly greater than every token of an earlier term on the same lock.
///
/// Pass it to the resources the leader writes to and have them reject writes carrying a
/// token smaller than the largest they have seen: a deposed leader that still runs (paused
/// process, partition) is then refused.
///
/// # Derivation
/// A term starts with one successful compare-and-swap write (or create) of the record.
/// - If the lock's versions carry a [sequence](Version::sequence), the token is the sequence
///   of the version that write returned. Sequences strictly increase over all writes, so
///   terms, which start with distinct writes, get strictly increasing tokens, even when the
///   record is deleted and created again (leader-for-life).
/// - Otherwise the token is the record's `leaderTransitions` as written by that write.
///   Electors of this crate increment `leaderTransitions` at the start of **every** term,
///   also when the same identity acquires again after a release, an expiry or a restart,
///   and keep it on renewals and releases. Because each term's write is a compare-and-swap
///   on the latest version, the field never decreases and each term sees a bigger value.
///   This scheme needs the record never to be deleted and only electors of this crate (or
///   client-go, which never decreases the field) to write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub u64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A boxed error source of a [`LockError`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The write lost a race: on `create`, a record already exists; on `update` or `delete`,
    /// somebody wrote since the expected version (or the record is gone). Not retryable
    /// as is: read the record again and decide anew.
    #[error("conflict: the lock was written concurrently ({0})")]
    Conflict(String),
    /// The backend failed (I/O, network, server error). `retryable` says whether the same
    /// call may succeed later (a timeout or an unavailable server) or not (bad credentials,
    /// permission denied).
    ///
    /// A failed write may still have been applied (a lost response): callers must read the
    /// lock again before they assume anything.
    #[error("backend error (retryable: {retryable}): {source}")]
    Backend {
        /// The underlying error.
        #[source]
        source: BoxError,
        /// Whether trying again may help.
        retryable: bool,
    },
    /// The stored record exists but cannot be read (bad JSON, bad version counter,
    /// truncated file). The elector never takes such a lock over: it reports the error and
    /// keeps retrying, because a record it cannot read may name a live leader.
    #[error("corrupt lock record: {detail}")]
    Corrupt {
        /// What is wrong.
        detail: String,
        /// The parse or I/O error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// The operation did not finish in time (the elector's per-attempt timeout, or the
    /// backend's own). The write may or may not have been applied. Retryable.
    #[error("lock operation timed out")]
    Timeout,
    /// The backend does not support this operation (for example `delete`).
    #[error("operation not supported by this lock: {0}")]
    Unsupported(&'static str),
}

impl LockError {
    /// A retryable backend error from any error value.
    pub fn retryable(source: impl Into<BoxError>) -> Self {
        LockError::Backend {
            source: source.into(),
            retryable: true,
        }
    }

    /// A permanent backend error from any error value.
    pub fn permanent(source: impl Into<BoxError>) -> Self {
        LockError::Backend {
            source: source.into(),
            retryable: false,
        }
    }

    /// Whether trying the same operation again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            LockError::Backend { retryable, .. } => *retryable,
            LockError::Timeout => true,
            LockError::Conflict(_) | LockError::Corrupt { .. } | LockError::Unsupported(_) => false,
        }
    }

    /// Whether this is a [`LockError::Conflict`].
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, LockError::Conflict(_))
    }
}

/// A leadership transition, passed to [`ResourceLock::record_event`] so a backend can
/// publish it (client-go records Kubernetes events such as "became leader").
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// This elector became leader for a new term. Recorded where the term starts, on every
    /// path that starts one: the `run`/`acquire` loop and also a direct
    /// `try_acquire_or_renew` (client-go records "became leader" only in its acquire loop,
    /// after `tryAcquireOrRenew`; here a caller driving the elector by hand gets the event too,
    /// and the acquire loop does not record it a second time).
    BecameLeader {
        /// The term's fencing token.
        token: FencingToken,
    },
    /// This elector stopped leading (renew deadline passed, lost a race, or cancelled).
    StoppedLeading,
    /// This elector released the lock voluntarily.
    Released,
}

impl fmt::Display for ElectionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElectionEvent::BecameLeader { token } => write!(f, "became leader (token {token})"),
            ElectionEvent::StoppedLeading => f.write_str("stopped leading"),
            ElectionEvent::Released => f.write_str("released the lock"),
        }
    }
}

/// A store for one [`LeaderElectionRecord`] with optimistic concurrency: the lock an
/// elector competes for. Object safe, so a lock can be chosen at run time
/// (`Arc<dyn ResourceLock>`).
///
/// A `ResourceLock` value is one participant's handle: it knows that participant's
/// [`identity`](ResourceLock::identity). Several handles (in one process or many) refer to
/// the same stored record.
///
/// # Contract
/// To be correct, an implementation must guarantee:
/// 1. **Linearizable compare-and-swap.** `create` succeeds only when no record exists, and
///    fails with [`LockError::Conflict`] otherwise. `update(expected, record)` succeeds only
///    when the stored version equals `expected`, and fails with `Conflict` when anybody
///    wrote (or deleted) since, or when no record exists. Two concurrent writes based on the
///    same version never both succeed.
/// 2. **Fresh versions.** Every successful `create`, and every `update` that changes the
///    record, returns a version that differs from every version the lock returned before (a
///    tag is never reused; after a delete-and-create either). An `update` that writes exactly
///    the stored record (as stored) may return the stored version unchanged: a Kubernetes API
///    server skips such a write and keeps the `resourceVersion`. The elector never writes an
///    identical record on renewal (`renewTime` changes), so a renewal always moves the version
///    on a backend that stores times finer than the retry period, and on every backend with
///    sequences. `get` returns the version of the latest write.
/// 3. **Faithful records.** `get` returns exactly the last record written (all fields;
///    times at least to the second), or `Ok(None)` when there is none. One exception: a store
///    that does not know client-go's newer optional fields (`strategy`, `preferredHolder`; a
///    Kubernetes API server before 1.31) may drop them, and they then read back unset.
/// 4. **Corruption is an error.** A stored record that cannot be read is reported as
///    [`LockError::Corrupt`], never as `Ok(None)` (which would invite a takeover).
/// 5. **Errors say if a retry helps** ([`LockError::is_retryable`]). A failed write may
///    have been applied; the elector copes with that by reading again.
/// 6. **Sequences, if any, are monotonic.** If [`Version::sequence`] is `Some` for one
///    version of a lock it is `Some` for all, and strictly increases with every successful
///    write, including across deletes.
/// 7. **No blocking.** Methods are async and must not block the executor thread for long
///    (use `spawn_blocking` for blocking I/O or keep it short, as a local file is).
///
/// [`wait_for_change`](ResourceLock::wait_for_change) is a hint, not a contract: it may
/// return spuriously, and the default never returns. The shared conformance suite
/// (`lease_elect::testing`, feature `testing`) checks these rules for a backend.
///
/// # Leader for life
/// In [leader-for-life mode](crate::LeaderForLife) the elector only ever calls `create`,
/// never renews, and on a graceful stop calls [`delete`](ResourceLock::delete) with the
/// version it created. When the holder dies without deleting, the backend must remove the
/// record by itself (owner liveness, a TTL) or an operator must delete it; until then no
/// new leader is chosen, which is the point of the mode.
#[async_trait]
pub trait ResourceLock: Send + Sync {
    /// Reads the record and its version, or `None` when no record exists.
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError>;

    /// Creates the record; fails with [`LockError::Conflict`] when one exists.
    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError>;

    /// Replaces the record if its version is still `expected`; fails with
    /// [`LockError::Conflict`] when somebody wrote since or the record is gone.
    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError>;

    /// Deletes the record if its version is still `expected` (used by leader-for-life on
    /// a graceful stop). The default returns [`LockError::Unsupported`].
    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let _ = expected;
        Err(LockError::Unsupported("delete"))
    }

    /// Resolves when the record may have changed from version `seen` (`None`: no record),
    /// for example after a release, so waiting candidates can try at once instead of on
    /// their next tick. Spurious returns are allowed. The default never resolves: the
    /// elector then relies on its timers alone.
    async fn wait_for_change(&self, seen: Option<&Version>) {
        let _ = seen;
        std::future::pending::<()>().await;
    }

    /// This participant's identity, written as `holderIdentity` when it leads. Must not be
    /// empty and must be unique among the participants of one election.
    fn identity(&self) -> &str;

    /// A human-readable description of the lock (for logs), such as `file:/run/app.lock`.
    fn describe(&self) -> String;

    /// Publishes a leadership transition of this participant (client-go's `RecordEvent`).
    /// Called synchronously from the elector; must be quick. The default does nothing.
    fn record_event(&self, event: &ElectionEvent) {
        let _ = event;
    }
}

#[async_trait]
impl<L: ResourceLock + ?Sized> ResourceLock for Arc<L> {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        (**self).get().await
    }
    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        (**self).create(record).await
    }
    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        (**self).update(expected, record).await
    }
    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        (**self).delete(expected).await
    }
    async fn wait_for_change(&self, seen: Option<&Version>) {
        (**self).wait_for_change(seen).await;
    }
    fn identity(&self) -> &str {
        (**self).identity()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn record_event(&self, event: &ElectionEvent) {
        (**self).record_event(event);
    }
}
