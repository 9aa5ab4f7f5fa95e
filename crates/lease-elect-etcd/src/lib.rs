//! An etcd lock for [`lease_elect`]: one key per lock, transactions on the key's create and
//! mod revisions, and etcd watches to wake waiting candidates.
//!
//! # Start here
//! ```no_run
//! use lease_elect_etcd::EtcdLock;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let lock = EtcdLock::builder(["http://127.0.0.1:2379"], "my-controller", "pod-a")
//!     .connect()
//!     .await?;
//! // Hand `lock` to an `ElectionConfig` (lease_elect), or use the `ResourceLock` methods.
//! # let _ = lock; Ok(()) }
//! ```
//!
//! # Storage
//! Lock `NAME` is the key `/lease-elect/NAME` (the prefix can be changed). Its value is the
//! [`LeaderElectionRecord`] in client-go's JSON annotation format (times to the second).
//!
//! - `create` is a transaction `if create_revision(key) == 0 then put`;
//! - `update(expected)` and `delete(expected)` are transactions
//!   `if mod_revision(key) == expected then put / delete`;
//! - the version is the key's `mod_revision`: etcd's store revision, which strictly increases
//!   over every write to the cluster and is never reused, so it is also the version's
//!   [`Version::sequence`], from which fencing tokens are derived.
//!
//! With [`EtcdLockBuilder::owner_lease`], every write also attaches an etcd lease that the
//! writing handle keeps alive, so etcd deletes the record when its holder's process dies
//! (leader-for-life).
//!
//! # Errors
//! Unavailable servers, timeouts and transport errors are retryable [`LockError::Backend`]
//! errors; the client reconnects by itself. A value that is not a record is
//! [`LockError::Corrupt`].

mod candidates;

pub use candidates::EtcdCandidates;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error as EtcdError, PutOptions, Txn, TxnOp,
};
use lease_elect::{ChangeFeed, LeaderElectionRecord, LockError, ResourceLock, Version};

/// Builds an [`EtcdLock`]; see [`EtcdLock::builder`].
#[derive(Debug)]
#[must_use]
pub struct EtcdLockBuilder {
    endpoints: Vec<String>,
    name: String,
    identity: String,
    prefix: String,
    timeout: Duration,
    owner_lease: Option<Duration>,
}

impl EtcdLockBuilder {
    /// Attaches an etcd lease of this `ttl` (whole seconds, at least 1) to the key on every
    /// write by this handle, kept alive while the handle lives: when the process dies, etcd
    /// deletes the record `ttl` after the last keep-alive. This is how leader-for-life locks
    /// on etcd are freed when their holder goes away.
    ///
    /// In a normal election use a `ttl` of at least the lease duration and at least 1.5 x the
    /// renew deadline: keep-alives are sent every `ttl / 3`, and a leader cut off from etcd
    /// must have given up (renew deadline) before its key can vanish.
    pub fn owner_lease(mut self, ttl: Duration) -> Self {
        self.owner_lease = Some(ttl);
        self
    }

    /// The prefix of the lock's key. Default `/lease-elect/`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one connection attempt or one request may take before it fails with a
    /// retryable error. Default 2 s. Keep it below the elector's renew deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Creates the lock with a client of its own. The client connects lazily, so the servers
    /// need not be up yet.
    ///
    /// # Errors
    /// When an endpoint is invalid, or the name or identity is empty.
    pub async fn connect(self) -> Result<EtcdLock, LockError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(self.timeout)
            .with_timeout(self.timeout);
        let client = Client::connect(&self.endpoints, Some(options))
            .await
            .map_err(classify)?;
        self.with_client(client)
    }

    /// Creates the lock on an existing client (clones of one client share its connections).
    ///
    /// # Errors
    /// When the name or identity is empty.
    pub fn with_client(self, client: Client) -> Result<EtcdLock, LockError> {
        if self.name.is_empty() || self.identity.is_empty() {
            return Err(LockError::permanent(
                "an etcd lock needs a non-empty name and identity",
            ));
        }
        let key = format!("{}{}", self.prefix, self.name);
        Ok(EtcdLock {
            describe: format!("etcd:{}{}", self.endpoints.join(","), key),
            key,
            client,
            identity: self.identity,
            timeout: self.timeout,
            owner: self.owner_lease.map(|ttl| {
                Arc::new(OwnerLease {
                    ttl,
                    state: tokio::sync::Mutex::new(None),
                })
            }),
            feed: Arc::new(ChangeFeed::new()),
            watcher: Arc::new(Watcher::default()),
        })
    }
}

/// A [`ResourceLock`] on an etcd cluster; see the [crate docs](crate) for the storage layout.
#[derive(Clone)]
pub struct EtcdLock {
    key: String,
    describe: String,
    client: Client,
    identity: String,
    timeout: Duration,
    owner: Option<Arc<OwnerLease>>,
    /// What the watch task reports, and the last read (the shared wait piece).
    feed: Arc<ChangeFeed>,
    /// The watch task, started by the first `wait_for_change`, stopped with the last clone.
    watcher: Arc<Watcher>,
}

#[derive(Default)]
struct Watcher(OnceLock<tokio::task::AbortHandle>);

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(task) = self.0.get() {
            task.abort();
        }
    }
}

/// Keeps one watch on `key` open (from the current revision each time it is started again
/// after an error) and reports its events to `feed`.
async fn watch_key(mut client: Client, key: String, feed: Arc<ChangeFeed>, timeout: Duration) {
    loop {
        if let Ok(Ok(mut stream)) =
            tokio::time::timeout(timeout, client.watch(key.as_str(), None)).await
        {
            feed.connected();
            loop {
                match stream.message().await {
                    Ok(Some(resp)) if resp.canceled() => break,
                    Ok(Some(resp)) => {
                        if !resp.events().is_empty() {
                            feed.notify();
                        }
                    }
                    Ok(None) | Err(_) => break,
                }
            }
            feed.disconnected();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The etcd lease this handle attaches to the key on its writes, kept alive by a task while
/// the handle lives.
struct OwnerLease {
    ttl: Duration,
    /// The lease id and its keep-alive task, once granted.
    state: tokio::sync::Mutex<Option<(i64, tokio::task::AbortHandle)>>,
}

impl Drop for OwnerLease {
    fn drop(&mut self) {
        // No async work here: stop the keep-alives and let etcd expire the lease.
        if let Some((_, task)) = self.state.get_mut().take() {
            task.abort();
        }
    }
}

impl OwnerLease {
    /// The id of a live lease of this handle, granted (and kept alive) when there is none.
    async fn id(&self, client: &Client, timeout: Duration) -> Result<i64, LockError> {
        let mut state = self.state.lock().await;
        if let Some((id, task)) = state.as_ref()
            && !task.is_finished()
        {
            return Ok(*id);
        }
        let ttl = i64::try_from(self.ttl.as_secs().max(1)).unwrap_or(i64::MAX);
        let mut c = client.clone();
        let grant = async {
            let id = c.lease_grant(ttl, None).await?.id();
            let keep = c.lease_keep_alive(id).await?;
            Ok::<_, EtcdError>((id, keep))
        };
        let (id, (mut keeper, mut responses)) = match tokio::time::timeout(timeout, grant).await {
            Ok(r) => r.map_err(classify)?,
            Err(_) => return Err(LockError::Timeout),
        };
        let interval = self.ttl / 3;
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                if keeper.keep_alive().await.is_err() {
                    return;
                }
                match responses.message().await {
                    // A TTL of 0 means the lease expired: the next write grants a new one.
                    Ok(Some(r)) if r.ttl() > 0 => {}
                    _ => return,
                }
            }
        });
        *state = Some((id, task.abort_handle()));
        Ok(id)
    }

    async fn forget(&self) {
        if let Some((_, task)) = self.state.lock().await.take() {
            task.abort();
        }
    }
}

impl std::fmt::Debug for EtcdLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdLock")
            .field("lock", &self.describe)
            .field("identity", &self.identity)
            .finish()
    }
}

impl EtcdLock {
    /// A builder for lock `name` on the etcd cluster at `endpoints` (`http://host:port`), for
    /// the participant `identity`.
    pub fn builder<E, S>(
        endpoints: E,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> EtcdLockBuilder
    where
        E: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EtcdLockBuilder {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            name: name.into(),
            identity: identity.into(),
            prefix: "/lease-elect/".to_owned(),
            timeout: Duration::from_secs(2),
            owner_lease: None,
        }
    }

    /// The key holding the record.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    async fn bounded<T>(
        &self,
        fut: impl Future<Output = Result<T, EtcdError>>,
    ) -> Result<T, LockError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(r) => r.map_err(classify),
            Err(_) => Err(LockError::Timeout),
        }
    }

    async fn put_if(
        &self,
        compare: Compare,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let value = record.to_json().map_err(LockError::permanent)?;
        let options = match &self.owner {
            Some(owner) => {
                Some(PutOptions::new().with_lease(owner.id(&self.client, self.timeout).await?))
            }
            None => None,
        };
        let txn =
            Txn::new()
                .when([compare])
                .and_then([TxnOp::put(self.key.as_str(), value, options)]);
        let mut client = self.client.clone();
        let resp = match self.bounded(client.txn(txn)).await {
            Ok(resp) => resp,
            Err(e) => {
                // The lease may have expired on the server: grant a new one next time.
                if let Some(owner) = &self.owner {
                    owner.forget().await;
                }
                return Err(e);
            }
        };
        if !resp.succeeded() {
            return Err(LockError::Conflict(format!(
                "{}: the key changed",
                self.key
            )));
        }
        // The put is the transaction's only write, so the key's new mod_revision is the
        // revision of the store after the transaction.
        let revision = resp
            .header()
            .map(etcd_client::ResponseHeader::revision)
            .ok_or_else(|| LockError::retryable("etcd returned no response header"))?;
        sequence(revision)
    }
}

fn sequence(revision: i64) -> Result<Version, LockError> {
    u64::try_from(revision)
        .ok()
        .filter(|r| *r > 0)
        .map(Version::from_sequence)
        .ok_or_else(|| LockError::Corrupt {
            detail: format!("etcd returned the revision {revision}"),
            source: None,
        })
}

fn expected_revision(expected: &Version) -> Option<i64> {
    expected.sequence().and_then(|s| i64::try_from(s).ok())
}

fn classify(e: EtcdError) -> LockError {
    use tonic_code::retryable_status;
    let retryable = match &e {
        EtcdError::IoError(_) | EtcdError::TransportError(_) => true,
        EtcdError::GRpcStatus(status) => retryable_status(status.code()),
        _ => false,
    };
    LockError::Backend {
        source: Box::new(e),
        retryable,
    }
}

mod tonic_code {
    /// gRPC codes after which the same request may succeed.
    pub(crate) fn retryable_status(code: tonic::Code) -> bool {
        use tonic::Code;
        matches!(
            code,
            Code::Unavailable
                | Code::DeadlineExceeded
                | Code::Aborted
                | Code::ResourceExhausted
                | Code::Unknown
                | Code::Internal
                | Code::Cancelled
        )
    }
}

#[async_trait]
impl ResourceLock for EtcdLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let mut client = self.client.clone();
        let before = self.feed.before_read();
        let resp = self.bounded(client.get(self.key.as_str(), None)).await?;
        let Some(kv) = resp.kvs().first() else {
            self.feed.after_read(before, None);
            return Ok(None);
        };
        let record: LeaderElectionRecord =
            serde_json::from_slice(kv.value()).map_err(|e| LockError::Corrupt {
                detail: format!("{}: the value is not a leader election record", self.key),
                source: Some(Box::new(e)),
            })?;
        let version = sequence(kv.mod_revision())?;
        self.feed.after_read(before, Some(&version));
        Ok(Some((record, version)))
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        self.put_if(
            Compare::create_revision(self.key.as_str(), CompareOp::Equal, 0),
            record,
        )
        .await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let Some(revision) = expected_revision(expected) else {
            return Err(LockError::Conflict(format!(
                "{}: {expected:?} is not an etcd revision",
                self.key
            )));
        };
        // A missing key has mod_revision 0, never equal to a real revision.
        self.put_if(
            Compare::mod_revision(self.key.as_str(), CompareOp::Equal, revision),
            record,
        )
        .await
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let Some(revision) = expected_revision(expected) else {
            return Err(LockError::Conflict(format!(
                "{}: {expected:?} is not an etcd revision",
                self.key
            )));
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(
                self.key.as_str(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::delete(self.key.as_str(), None)]);
        let mut client = self.client.clone();
        if self.bounded(client.txn(txn)).await?.succeeded() {
            Ok(())
        } else {
            Err(LockError::Conflict(format!(
                "{}: the key changed",
                self.key
            )))
        }
    }

    /// Resolves after the next change of the key, which a watch task of this handle follows
    /// (one long-lived watch per handle, started on the first call), or at once when the
    /// stored version already differs from `seen`. When `seen` is what this handle's last
    /// `get` returned and no event arrived since, it sends no request; otherwise it reads the
    /// key once. While the cluster cannot be reached it never resolves (the elector's timers
    /// take over).
    async fn wait_for_change(&self, seen: Option<&Version>) {
        self.watcher.0.get_or_init(|| {
            tokio::spawn(watch_key(
                self.client.clone(),
                self.key.clone(),
                Arc::clone(&self.feed),
                self.timeout,
            ))
            .abort_handle()
        });
        self.feed
            .wait(seen, || async { Ok(self.get().await?.map(|(_, v)| v)) })
            .await;
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}
