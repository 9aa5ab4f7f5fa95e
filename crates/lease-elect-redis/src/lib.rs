//! A Redis lock for [`lease_elect`]: one key per lock, `SET NX` to create, a Lua
//! compare-and-swap to update, and pub/sub to wake waiting candidates.
//!
//! # Start here
//! ```no_run
//! use lease_elect_redis::RedisLock;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let lock = RedisLock::builder("redis://127.0.0.1:6379/", "my-controller", "pod-a")
//!     .build()?;
//! // Hand `lock` to an `ElectionConfig` (lease_elect), or use the `ResourceLock` methods.
//! # let _ = lock; Ok(()) }
//! ```
//!
//! # Storage
//! Lock `NAME` (with the default key prefix `lease-elect:`) uses:
//! - the key `lease-elect:{NAME}`: a string `VERSION\nRECORD`, where `VERSION` is a decimal
//!   write sequence and `RECORD` the [`LeaderElectionRecord`] in client-go's JSON annotation
//!   format (times to the second);
//! - the key `lease-elect:{NAME}:seq`: the counter that hands out versions. Each write takes
//!   the largest of the counter plus one, the server's clock in microseconds (`TIME`) and the
//!   handle's floor (below), and leaves the counter there. The key is never deleted, so
//!   versions strictly increase over every write, also across deletes; they carry a
//!   [`Version::sequence`], from which fencing tokens are derived (Redis 5 or later: the
//!   scripts read the clock after a write);
//! - the pub/sub channel `lease-elect:{NAME}`, on which every write publishes its version.
//!   A handle that waits for a change keeps one pub/sub connection subscribed to it.
//!
//! Both keys share the hash tag `{NAME}`, so they live in one slot of a Redis Cluster.
//! `create` runs `SET .. NX` inside a Lua script that also takes the next version; `update` and
//! `delete` compare the stored version with the expected one inside a Lua script, so each is
//! one atomic step on the server.
//!
//! # Durability
//! The lock is only as durable as the server. On its first connection a handle reads the
//! server's persistence configuration (`CONFIG GET appendonly` and `CONFIG GET save`) and
//! refuses a server with neither the append-only file nor RDB snapshots: every call then fails
//! with a permanent [`LockError::Backend`] whose source is a [`NoPersistence`] saying why,
//! unless the caller opted in with
//! [`allow_without_persistence`](RedisLockBuilder::allow_without_persistence). A server that
//! does not let the handle read its configuration (`CONFIG` renamed or not permitted) is
//! refused the same way. With RDB snapshots alone a restart goes back to the last snapshot (the
//! handle logs a warning).
//!
//! What the fencing tokens guarantee, then: with the append-only file they strictly increase
//! over every write, also across deletes and restarts (to the last fsync: use
//! `appendfsync always` for every write). A server restarted without its data (no
//! persistence, opted in; or a lost append-only file) forgets the record *and* the version
//! counter; a restart from an RDB snapshot alone goes back to the snapshot's counter. Two
//! things keep versions going up anyway:
//! - every version is at least the server's clock in microseconds when it was written, and
//!   the clock has moved on during the restart: the first version after it is above every
//!   earlier one as long as the server's clock never goes back;
//! - each handle remembers the highest version it has seen and passes it to every write: the
//!   version is above it, so a handle never hands out a version at or below one it has seen
//!   (a read that finds a lower version logs a warning), whatever the clock did.
//!
//! The elector's own check ([`lease_elect::SequenceRegression`]) refuses a term below a
//! sequence it saw, and its wait for a missing record
//! ([`absent_record_wait`](lease_elect::ElectionConfigBuilder::absent_record_wait)) keeps a
//! fresh process from leading while the old leader's term runs.
//!
//! # Errors
//! Connection, I/O and timeout errors, and a server that is still loading its data, are
//! retryable [`LockError::Backend`] errors; the handle reconnects by itself on the next call.
//! A stored value it cannot read is [`LockError::Corrupt`].

mod candidates;

pub use candidates::RedisCandidates;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use lease_elect::{ChangeFeed, LeaderElectionRecord, LockError, ResourceLock, Version};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands as _, Client, RedisError, Script};

// The next version, in both scripts: the largest of the counter's next value (`INCR`), the
// server's clock in microseconds (`TIME`) and ARGV[FLOOR] + 1, the highest version the handle
// has seen; the counter is moved to it. Versions are written with `%d` (Lua's numbers are
// doubles and would print large ones with an exponent); they stay exact below 2^53.
const NEXT_VERSION: &str = r"
local function next_version(floor_arg)
  local counted = redis.call('INCR', KEYS[2])
  local t = redis.call('TIME')
  local seq = math.max(counted, tonumber(t[1]) * 1000000 + tonumber(t[2]),
                       tonumber(floor_arg) + 1)
  if seq ~= counted then
    redis.call('SET', KEYS[2], string.format('%d', seq))
  end
  return string.format('%d', seq)
end
";

// ARGV[3] is the highest version the handle has seen.
const CREATE: &str = r"
local seq = next_version(ARGV[3])
if not redis.call('SET', KEYS[1], seq .. '\n' .. ARGV[1], 'NX') then
  return -1
end
redis.call('PUBLISH', ARGV[2], seq)
return tonumber(seq)
";

const UPDATE: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
local nl = string.find(cur, '\n', 1, true)
if not nl or string.sub(cur, 1, nl - 1) ~= ARGV[1] then return -1 end
-- ARGV[4] is the highest version the handle has seen.
local seq = next_version(ARGV[4])
redis.call('SET', KEYS[1], seq .. '\n' .. ARGV[2])
redis.call('PUBLISH', ARGV[3], seq)
return tonumber(seq)
";

const DELETE: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
local nl = string.find(cur, '\n', 1, true)
if not nl or string.sub(cur, 1, nl - 1) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'deleted')
return 0
";

static CREATE_SCRIPT: OnceLock<Script> = OnceLock::new();
static UPDATE_SCRIPT: OnceLock<Script> = OnceLock::new();

/// The script `body` with [`NEXT_VERSION`] before it, built once (its hash is computed then).
fn script(cell: &'static OnceLock<Script>, body: &str) -> &'static Script {
    cell.get_or_init(|| Script::new(&format!("{NEXT_VERSION}{body}")))
}

/// Builds a [`RedisLock`]; see [`RedisLock::builder`].
#[derive(Debug)]
#[must_use]
pub struct RedisLockBuilder {
    url: String,
    name: String,
    identity: String,
    prefix: String,
    timeout: Duration,
    allow_without_persistence: bool,
}

impl RedisLockBuilder {
    /// Accept a server without persistence (neither `appendonly yes` nor RDB snapshots; the
    /// default refuses it, see the [crate docs](crate#durability)). Such a server restarted
    /// loses the record and the version counter: a process started afterwards can get the
    /// fencing token of a leader that still runs, and fenced resources then accept both. Only
    /// for tests, or where nothing is fenced by these tokens.
    pub fn allow_without_persistence(mut self, yes: bool) -> Self {
        self.allow_without_persistence = yes;
        self
    }

    /// The prefix of the lock's keys and channel. Default `lease-elect:`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one connection attempt or one command may take before it fails with a
    /// retryable error. Default 2 s. Keep it below the elector's renew deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Creates the lock. It connects lazily, on the first call, so the server need not be up
    /// (and no Tokio runtime needs to run yet).
    ///
    /// # Errors
    /// When the URL is invalid, or the name or identity is empty.
    pub fn build(self) -> Result<RedisLock, LockError> {
        if self.name.is_empty() || self.identity.is_empty() {
            return Err(LockError::permanent(
                "a Redis lock needs a non-empty name and identity",
            ));
        }
        let client = Client::open(self.url.as_str()).map_err(LockError::permanent)?;
        let key = format!("{}{{{}}}", self.prefix, self.name);
        Ok(RedisLock {
            inner: Arc::new(Inner {
                seq_key: format!("{key}:seq"),
                channel: key.clone(),
                key,
                describe: format!("redis:{}/{}", redact(&self.url), self.name),
                client,
                conn: tokio::sync::OnceCell::new(),
                timeout: self.timeout,
                allow_without_persistence: self.allow_without_persistence,
                feed: Arc::new(ChangeFeed::new()),
                listener: OnceLock::new(),
                floor: AtomicU64::new(0),
            }),
            identity: self.identity,
        })
    }
}

/// A Redis server that keeps nothing across a restart (or whose configuration cannot be read),
/// refused by a [`RedisLock`] that was not told to
/// [allow it](RedisLockBuilder::allow_without_persistence): the source of the permanent
/// [`LockError::Backend`] its calls then fail with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoPersistence {
    /// The lock's description (the server and the lock's name).
    pub server: String,
    /// What was found.
    pub detail: String,
}

impl std::fmt::Display for NoPersistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refusing {}: {}; without persistence a restarted server forgets the record and \
             the version counter, so a new leader can get the fencing token of one that still \
             runs (enable appendonly, or opt in with allow_without_persistence)",
            self.server, self.detail
        )
    }
}

impl std::error::Error for NoPersistence {}

/// A [`ResourceLock`] on a Redis server; see the [crate docs](crate) for the storage layout.
///
/// Cheap to clone; clones share one connection. Open one handle per participant (identity).
#[derive(Clone)]
pub struct RedisLock {
    inner: Arc<Inner>,
    identity: String,
}

struct Inner {
    key: String,
    seq_key: String,
    channel: String,
    describe: String,
    client: Client,
    /// Created on first use (it needs a running Tokio runtime); reconnects by itself.
    conn: tokio::sync::OnceCell<ConnectionManager>,
    timeout: Duration,
    /// Whether a server without persistence is accepted.
    allow_without_persistence: bool,
    /// What the change listener reports, and the last read (the shared wait piece).
    feed: Arc<ChangeFeed>,
    /// The change listener: a task subscribed to the lock's channel, started by the first
    /// `wait_for_change`, stopped when the last clone of the lock is dropped.
    listener: OnceLock<tokio::task::AbortHandle>,
    /// The highest version this handle has seen.
    floor: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(listener) = self.listener.get() {
            listener.abort();
        }
    }
}

/// Keeps one pub/sub subscription to `channel`, reconnecting after failures, and counts what
/// arrives in `notes`.
async fn listen(client: Client, channel: String, feed: Arc<ChangeFeed>, timeout: Duration) {
    loop {
        if let Ok(Ok(mut pubsub)) = tokio::time::timeout(timeout, client.get_async_pubsub()).await
            && matches!(
                tokio::time::timeout(timeout, pubsub.subscribe(&channel)).await,
                Ok(Ok(()))
            )
        {
            // Writes may have happened while nobody listened: `connected` counts as a change.
            feed.connected();
            let mut messages = pubsub.on_message();
            while messages.next().await.is_some() {
                feed.notify();
            }
            feed.disconnected();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl std::fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLock")
            .field("lock", &self.inner.describe)
            .field("identity", &self.identity)
            .finish()
    }
}

impl RedisLock {
    /// A builder for lock `name` on the server at `url` (`redis://host:port/db`), for the
    /// participant `identity`.
    pub fn builder(
        url: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> RedisLockBuilder {
        RedisLockBuilder {
            url: url.into(),
            name: name.into(),
            identity: identity.into(),
            prefix: "lease-elect:".to_owned(),
            timeout: Duration::from_secs(2),
            allow_without_persistence: false,
        }
    }

    /// The key holding the record.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.inner.key
    }

    async fn conn(&self) -> Result<ConnectionManager, LockError> {
        self.inner
            .conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.inner.timeout))
                    .set_response_timeout(Some(self.inner.timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(100));
                let mut conn =
                    ConnectionManager::new_lazy_with_config(self.inner.client.clone(), config)
                        .map_err(classify)?;
                if !self.inner.allow_without_persistence {
                    self.check_persistence(&mut conn).await?;
                }
                Ok(conn)
            })
            .await
            .cloned()
    }

    /// Reads the server's persistence configuration; a server without any is refused.
    async fn check_persistence(&self, conn: &mut ConnectionManager) -> Result<(), LockError> {
        let mut setting = async |name: &str| -> Result<String, LockError> {
            let reply: Vec<String> = match self
                .bounded(redis::cmd("CONFIG").arg("GET").arg(name).query_async(conn))
                .await
            {
                Err(LockError::Backend {
                    source,
                    retryable: false,
                }) => {
                    return Err(LockError::permanent(NoPersistence {
                        server: self.inner.describe.clone(),
                        detail: format!("its configuration cannot be read ({source})"),
                    }));
                }
                r => r?,
            };
            Ok(reply.get(1).cloned().unwrap_or_default())
        };
        let appendonly = setting("appendonly").await?;
        let save = setting("save").await?;
        if appendonly == "yes" {
            return Ok(());
        }
        if save.trim().is_empty() {
            let error = NoPersistence {
                server: self.inner.describe.clone(),
                detail: "it runs with appendonly no and save \"\"".to_owned(),
            };
            tracing::error!(lock = %self.inner.describe, %error, "refusing the Redis server");
            return Err(LockError::permanent(error));
        }
        tracing::warn!(lock = %self.inner.describe, save = %save, "Redis keeps RDB snapshots but no append-only file: a restart goes back to the last snapshot, and fencing tokens with it");
        Ok(())
    }

    async fn bounded<T>(
        &self,
        fut: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, LockError> {
        match tokio::time::timeout(self.inner.timeout, fut).await {
            Ok(r) => r.map_err(classify),
            Err(_) => Err(LockError::Timeout),
        }
    }

    async fn read(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let before = self.inner.feed.before_read();
        let found = self.read_once().await?;
        self.inner
            .feed
            .after_read(before, found.as_ref().map(|(_, v)| v));
        Ok(found)
    }

    async fn read_once(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let mut conn = self.conn().await?;
        let raw: Option<Vec<u8>> = match self.bounded(conn.get(&self.inner.key)).await {
            // The connection manager reconnects after a dropped connection; a read is safe to
            // send again once.
            Err(LockError::Backend {
                retryable: true, ..
            }) => self.bounded(conn.get(&self.inner.key)).await?,
            r => r?,
        };
        let found = raw.map(|raw| parse(&raw)).transpose()?;
        if let Some((_, v)) = &found
            && let Some(seq) = v.sequence()
        {
            if seq < self.floor() {
                tracing::warn!(lock = %self.inner.describe, seen = self.floor(), found = seq, "the version went backwards: the server lost its data");
            }
            self.saw(seq);
        }
        Ok(found)
    }

    /// The highest version this handle has seen (read or written).
    fn floor(&self) -> u64 {
        self.inner.floor.load(Ordering::SeqCst)
    }

    fn saw(&self, seq: u64) -> Version {
        self.inner.floor.fetch_max(seq, Ordering::SeqCst);
        Version::from_sequence(seq)
    }
}

fn parse(raw: &[u8]) -> Result<(LeaderElectionRecord, Version), LockError> {
    let corrupt = |detail: &str| LockError::Corrupt {
        detail: detail.to_owned(),
        source: None,
    };
    let nl = raw
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt("no version line"))?;
    let seq: u64 = std::str::from_utf8(&raw[..nl])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupt("the version is not a number"))?;
    let record: LeaderElectionRecord =
        serde_json::from_slice(&raw[nl + 1..]).map_err(|e| LockError::Corrupt {
            detail: "the record is not valid JSON".to_owned(),
            source: Some(Box::new(e)),
        })?;
    Ok((record, Version::from_sequence(seq)))
}

fn encode(record: &LeaderElectionRecord) -> Result<String, LockError> {
    record.to_json().map_err(LockError::permanent)
}

fn classify(e: RedisError) -> LockError {
    let retryable = e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
        || matches!(
            e.kind(),
            redis::ErrorKind::Server(
                redis::ServerErrorKind::BusyLoading
                    | redis::ServerErrorKind::TryAgain
                    | redis::ServerErrorKind::ClusterDown
                    | redis::ServerErrorKind::MasterDown
                    | redis::ServerErrorKind::ReadOnly
            )
        );
    LockError::Backend {
        source: Box::new(e),
        retryable,
    }
}

/// The URL without a password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***{}", &url[..s], &url[at..]),
        _ => url.to_owned(),
    }
}

fn conflict(what: &str, key: &str) -> LockError {
    LockError::Conflict(format!("{what} {key}"))
}

#[async_trait]
impl ResourceLock for RedisLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        self.read().await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        let body = encode(record)?;
        let mut conn = self.conn().await?;
        let mut inv = script(&CREATE_SCRIPT, CREATE).key(&self.inner.key);
        inv.key(&self.inner.seq_key)
            .arg(body)
            .arg(&self.inner.channel)
            .arg(self.floor());
        let seq: i64 = self.bounded(inv.invoke_async(&mut conn)).await?;
        u64::try_from(seq)
            .map(|s| self.saw(s))
            .map_err(|_| conflict("create: the record exists at", &self.inner.key))
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let body = encode(record)?;
        let mut conn = self.conn().await?;
        let mut inv = script(&UPDATE_SCRIPT, UPDATE).key(&self.inner.key);
        inv.key(&self.inner.seq_key)
            .arg(expected.tag())
            .arg(body)
            .arg(&self.inner.channel)
            .arg(self.floor());
        let seq: i64 = self.bounded(inv.invoke_async(&mut conn)).await?;
        u64::try_from(seq)
            .map(|s| self.saw(s))
            .map_err(|_| conflict("update: the version changed at", &self.inner.key))
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let mut conn = self.conn().await?;
        let script = Script::new(DELETE);
        let mut inv = script.key(&self.inner.key);
        inv.arg(expected.tag()).arg(&self.inner.channel);
        let r: i64 = self.bounded(inv.invoke_async(&mut conn)).await?;
        if r < 0 {
            return Err(conflict("delete: the version changed at", &self.inner.key));
        }
        Ok(())
    }

    /// Resolves after the next write to the lock (every write publishes on the lock's
    /// channel, which a listener task of this handle keeps subscribed to), or at once when the
    /// stored version already differs from `seen`. When `seen` is what this handle's last `get`
    /// returned and nothing was published since, it sends no request; otherwise it reads the
    /// record once. While the server cannot be reached it never resolves (the elector's timers
    /// take over).
    async fn wait_for_change(&self, seen: Option<&Version>) {
        let feed = &self.inner.feed;
        self.inner.listener.get_or_init(|| {
            tokio::spawn(listen(
                self.inner.client.clone(),
                self.inner.channel.clone(),
                Arc::clone(feed),
                self.inner.timeout,
            ))
            .abort_handle()
        });
        feed.wait(seen, || async { Ok(self.read().await?.map(|(_, v)| v)) })
            .await;
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        self.inner.describe.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_garbage() {
        assert!(matches!(parse(b"x"), Err(LockError::Corrupt { .. })));
        assert!(matches!(parse(b"x\n{}"), Err(LockError::Corrupt { .. })));
        assert!(matches!(parse(b"1\n{"), Err(LockError::Corrupt { .. })));
        let (r, v) = parse(b"7\n{\"holderIdentity\":\"a\"}").expect("valid");
        assert_eq!(r.holder_identity, "a");
        assert_eq!(v.sequence(), Some(7));
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("redis://u:pw@h:1/"), "redis://***@h:1/");
        assert_eq!(redact("redis://h:1/"), "redis://h:1/");
    }
}
