//! A PostgreSQL lock for [`lease_elect`]: one row per lock in a table the lock creates when
//! missing, a compare-and-swap on a version column, and `LISTEN`/`NOTIFY` to wake waiting
//! candidates.
//!
//! # Start here
//! ```no_run
//! use lease_elect_postgres::PostgresLock;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let lock = PostgresLock::builder("postgres://app@db.internal/app", "my-controller", "pod-a")
//!     .table("lease_elect_locks")
//!     .build()?;
//! // Hand `lock` to an `ElectionConfig` (lease_elect), or use the `ResourceLock` methods.
//! # let _ = lock; Ok(()) }
//! ```
//!
//! # Schema
//! The table (default `lease_elect_locks`) and its version sequence are created on first use,
//! under a transaction-scoped advisory lock so concurrent first uses do not race:
//!
//! ```sql
//! CREATE SEQUENCE IF NOT EXISTS lease_elect_locks_version;
//! CREATE TABLE IF NOT EXISTS lease_elect_locks (
//!     name                   text PRIMARY KEY,
//!     holder_identity        text        NOT NULL,
//!     lease_duration_seconds bigint      NOT NULL,
//!     acquire_time           timestamptz,
//!     renew_time             timestamptz,
//!     leader_transitions     bigint      NOT NULL,
//!     strategy               text,
//!     preferred_holder       text,
//!     version                bigint      NOT NULL
//! );
//! ```
//!
//! - `create` is `INSERT .. ON CONFLICT (name) DO NOTHING`;
//! - `update(expected)` is `UPDATE .. WHERE name = $1 AND version = expected`, `delete` alike;
//! - every write sets `version = nextval(sequence)`: versions strictly increase over all writes
//!   of the table and are never reused, also after a delete, so they are the versions'
//!   [`Version::sequence`], from which fencing tokens are derived;
//! - every write also runs `pg_notify('<table>_changes', name)` in the same statement, so the
//!   notification is sent exactly when the write commits. Each lock handle `LISTEN`s on its
//!   own connection and wakes its [`wait_for_change`](ResourceLock::wait_for_change).
//!
//! The four statements are prepared once per connection, so each call is one round trip (a
//! bind and execute; the fault suite checks it through 150 ms of added latency).
//!
//! Times are stored as `timestamptz`: to the microsecond (truncated toward the past).
//! The user needs `CREATE` on the schema for the first use (or create the table beforehand),
//! then `SELECT, INSERT, UPDATE, DELETE` on the table and `USAGE` on the sequence.
//!
//! # Errors
//! A lost connection, a server shutting down or starting, timeouts, serialization failures
//! and deadlocks are retryable [`LockError::Backend`] errors; the handle reconnects on its next
//! call. A row with values out of range is [`LockError::Corrupt`].

mod candidates;

pub use candidates::PostgresCandidates;

use std::future::poll_fn;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use lease_elect::{ChangeFeed, LeaderElectionRecord, LockError, ResourceLock, Version};
use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Row, Statement};

/// Builds a [`PostgresLock`]; see [`PostgresLock::builder`].
#[derive(Debug)]
#[must_use]
pub struct PostgresLockBuilder {
    url: String,
    name: String,
    identity: String,
    table: String,
    timeout: Duration,
}

impl PostgresLockBuilder {
    /// The table holding the locks (created when missing). Lower-case letters, digits and `_`,
    /// starting with a letter, at most 40 bytes. Default `lease_elect_locks`.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// How long connecting or one statement may take before it fails with a retryable error.
    /// Default 2 s. Keep it below the elector's renew deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Creates the lock. It connects lazily, on the first call, so the server need not be up.
    /// TLS is not supported (use a local socket, a trusted network or a TLS-terminating proxy).
    ///
    /// # Errors
    /// When the URL or the table name is invalid, or the name or identity is empty.
    pub fn build(self) -> Result<PostgresLock, LockError> {
        if self.name.is_empty() || self.identity.is_empty() {
            return Err(LockError::permanent(
                "a PostgreSQL lock needs a non-empty name and identity",
            ));
        }
        let valid_table = self.table.len() <= 40
            && self.table.starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .table
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_table {
            return Err(LockError::permanent(format!(
                "invalid table name {:?}: use lower-case letters, digits and _ (at most 40)",
                self.table
            )));
        }
        let mut config: Config = self.url.parse().map_err(LockError::permanent)?;
        config.connect_timeout(self.timeout);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        let t = &self.table;
        let sql = Sql {
            setup: format!(
                "BEGIN;
                 SELECT pg_advisory_xact_lock(7383961242650112011);
                 CREATE SEQUENCE IF NOT EXISTS {t}_version;
                 CREATE TABLE IF NOT EXISTS {t} (
                     name text PRIMARY KEY,
                     holder_identity text NOT NULL,
                     lease_duration_seconds bigint NOT NULL,
                     acquire_time timestamptz,
                     renew_time timestamptz,
                     leader_transitions bigint NOT NULL,
                     strategy text,
                     preferred_holder text,
                     version bigint NOT NULL
                 );
                 COMMIT;
                 LISTEN {t}_changes;"
            ),
            get: format!(
                "SELECT holder_identity, lease_duration_seconds, acquire_time, renew_time,
                        leader_transitions, strategy, preferred_holder, version
                 FROM {t} WHERE name = $1"
            ),
            create: format!(
                "WITH w AS (
                     INSERT INTO {t} (name, holder_identity, lease_duration_seconds, acquire_time,
                         renew_time, leader_transitions, strategy, preferred_holder, version)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nextval('{t}_version'))
                     ON CONFLICT (name) DO NOTHING
                     RETURNING version)
                 SELECT version, pg_notify('{t}_changes', $1) FROM w"
            ),
            update: format!(
                "WITH w AS (
                     UPDATE {t} SET holder_identity = $2, lease_duration_seconds = $3,
                         acquire_time = $4, renew_time = $5, leader_transitions = $6,
                         strategy = $7, preferred_holder = $8, version = nextval('{t}_version')
                     WHERE name = $1 AND version = $9
                     RETURNING version)
                 SELECT version, pg_notify('{t}_changes', $1) FROM w"
            ),
            delete: format!(
                "WITH w AS (DELETE FROM {t} WHERE name = $1 AND version = $2 RETURNING version)
                 SELECT version, pg_notify('{t}_changes', $1) FROM w"
            ),
        };
        Ok(PostgresLock {
            inner: Arc::new(Inner {
                describe: format!("postgres:{}/{}/{}", redact(&config), self.table, self.name),
                config,
                name: self.name,
                sql,
                conn: Mutex::new(None),
                feed: Arc::new(ChangeFeed::new()),
                timeout: self.timeout,
            }),
            identity: self.identity,
        })
    }
}

/// A connection with the lock's statements prepared on it, so every call is one round trip
/// (a bind and execute of a prepared statement).
struct Conn {
    client: Client,
    get: Statement,
    create: Statement,
    update: Statement,
    delete: Statement,
}

struct Sql {
    setup: String,
    get: String,
    create: String,
    update: String,
    delete: String,
}

/// A [`ResourceLock`] on a PostgreSQL table; see the [crate docs](crate) for the schema.
///
/// Cheap to clone; clones share one connection. Open one handle per participant (identity).
#[derive(Clone)]
pub struct PostgresLock {
    inner: Arc<Inner>,
    identity: String,
}

struct Inner {
    config: Config,
    name: String,
    describe: String,
    sql: Sql,
    conn: Mutex<Option<Arc<Conn>>>,
    /// Notifications for this lock and the last read (the shared wait piece): a waiter on an
    /// unchanged record needs no query.
    feed: Arc<ChangeFeed>,
    timeout: Duration,
}

impl std::fmt::Debug for PostgresLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresLock")
            .field("lock", &self.inner.describe)
            .field("identity", &self.identity)
            .finish()
    }
}

fn redact(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map_or_else(String::new, |h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        });
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or_default())
}

impl PostgresLock {
    /// A builder for lock `name` in the database at `url` (`postgres://user@host:port/db` or
    /// a `key=value` connection string), for the participant `identity`.
    pub fn builder(
        url: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> PostgresLockBuilder {
        PostgresLockBuilder {
            url: url.into(),
            name: name.into(),
            identity: identity.into(),
            table: "lease_elect_locks".to_owned(),
            timeout: Duration::from_secs(2),
        }
    }

    /// The lock's connection, opened (with the table set up and `LISTEN` running) when there
    /// is none or the last one closed.
    async fn client(&self) -> Result<Arc<Conn>, LockError> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            if !conn.client.is_closed() {
                return Ok(Arc::clone(conn));
            }
            *slot = None;
        }
        let connect = async {
            let (client, mut connection) = self.inner.config.connect(NoTls).await?;
            let feed = Arc::clone(&self.inner.feed);
            let name = self.inner.name.clone();
            tokio::spawn(async move {
                // Drives the connection and forwards this lock's notifications.
                while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                    match message {
                        Ok(AsyncMessage::Notification(n)) if n.payload() == name => feed.notify(),
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                feed.disconnected();
            });
            client.batch_execute(&self.inner.sql.setup).await?;
            let sql = &self.inner.sql;
            let (get, create, update, delete) = tokio::try_join!(
                client.prepare(&sql.get),
                client.prepare(&sql.create),
                client.prepare(&sql.update),
                client.prepare(&sql.delete),
            )?;
            Ok::<_, tokio_postgres::Error>(Conn {
                client,
                get,
                create,
                update,
                delete,
            })
        };
        let client = match tokio::time::timeout(self.inner.timeout, connect).await {
            Ok(r) => Arc::new(r.map_err(classify)?),
            Err(_) => return Err(LockError::Timeout),
        };
        // The connection LISTENs now; writes may have happened while nobody listened
        // (`connected` counts as a change).
        self.inner.feed.connected();
        *slot = Some(Arc::clone(&client));
        Ok(client)
    }

    /// Runs one statement that returns at most one row, within the timeout.
    async fn query_opt(
        &self,
        statement: fn(&Conn) -> &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Row>, LockError> {
        let conn = self.client().await?;
        let query = conn.client.query_opt(statement(&conn), params);
        match tokio::time::timeout(self.inner.timeout, query).await {
            Ok(r) => r.map_err(classify),
            Err(_) => Err(LockError::Timeout),
        }
    }

    async fn write(
        &self,
        sql: fn(&Conn) -> &Statement,
        expected: Option<i64>,
        record: &LeaderElectionRecord,
        what: &str,
    ) -> Result<Version, LockError> {
        let duration = i64::from(record.lease_duration_seconds);
        let transitions = i64::try_from(record.leader_transitions).map_err(|_| {
            LockError::permanent(format!(
                "leaderTransitions {} does not fit a bigint",
                record.leader_transitions
            ))
        })?;
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
            &self.inner.name,
            &record.holder_identity,
            &duration,
            &record.acquire_time,
            &record.renew_time,
            &transitions,
            &record.strategy,
            &record.preferred_holder,
        ];
        if let Some(expected) = expected.as_ref() {
            params.push(expected);
        }
        match self.query_opt(sql, &params).await? {
            Some(row) => version(&row, 0),
            None => Err(LockError::Conflict(format!(
                "{what}: {}",
                self.inner.describe
            ))),
        }
    }
}

fn expected_version(expected: &Version) -> Option<i64> {
    expected.sequence().and_then(|s| i64::try_from(s).ok())
}

fn corrupt(detail: String) -> LockError {
    LockError::Corrupt {
        detail,
        source: None,
    }
}

fn version(row: &Row, idx: usize) -> Result<Version, LockError> {
    let v: i64 = row
        .try_get(idx)
        .map_err(|e| corrupt(format!("bad version column: {e}")))?;
    u64::try_from(v)
        .map(Version::from_sequence)
        .map_err(|_| corrupt(format!("negative version {v}")))
}

fn record(row: &Row) -> Result<LeaderElectionRecord, LockError> {
    let bad = |e: tokio_postgres::Error| corrupt(format!("unreadable lock row: {e}"));
    let duration: i64 = row.try_get(1).map_err(bad)?;
    let transitions: i64 = row.try_get(4).map_err(bad)?;
    Ok(LeaderElectionRecord {
        holder_identity: row.try_get(0).map_err(bad)?,
        lease_duration_seconds: u32::try_from(duration)
            .map_err(|_| corrupt(format!("lease_duration_seconds {duration} out of range")))?,
        acquire_time: row.try_get::<_, Option<SystemTime>>(2).map_err(bad)?,
        renew_time: row.try_get::<_, Option<SystemTime>>(3).map_err(bad)?,
        leader_transitions: u64::try_from(transitions)
            .map_err(|_| corrupt(format!("leader_transitions {transitions} out of range")))?,
        strategy: row.try_get(5).map_err(bad)?,
        preferred_holder: row.try_get(6).map_err(bad)?,
    })
}

fn classify(e: tokio_postgres::Error) -> LockError {
    let retryable = match e.code() {
        None => true, // I/O, a closed connection, a timeout while connecting
        Some(code) => {
            let c = code.code();
            c.starts_with("08") // connection exception
                || c.starts_with("53") // insufficient resources
                || c.starts_with("57P") // admin/crash shutdown, cannot connect now
                || *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::LOCK_NOT_AVAILABLE
                || *code == SqlState::QUERY_CANCELED
        }
    };
    LockError::Backend {
        source: Box::new(e),
        retryable,
    }
}

#[async_trait]
impl ResourceLock for PostgresLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        // The notification count before the query: a wait on the version read then needs no
        // query until a notification arrives.
        let before = self.inner.feed.before_read();
        let found = match self.query_opt(|c| &c.get, &[&self.inner.name]).await? {
            None => None,
            Some(row) => Some((record(&row)?, version(&row, 7)?)),
        };
        self.inner
            .feed
            .after_read(before, found.as_ref().map(|(_, v)| v));
        Ok(found)
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        self.write(|c| &c.create, None, record, "create: the lock exists")
            .await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let Some(expected) = expected_version(expected) else {
            return Err(LockError::Conflict(format!(
                "{expected:?} is not a version of {}",
                self.inner.describe
            )));
        };
        self.write(
            |c| &c.update,
            Some(expected),
            record,
            "update: the version changed",
        )
        .await
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let Some(expected) = expected_version(expected) else {
            return Err(LockError::Conflict(format!(
                "{expected:?} is not a version of {}",
                self.inner.describe
            )));
        };
        match self
            .query_opt(|c| &c.delete, &[&self.inner.name, &expected])
            .await?
        {
            Some(_) => Ok(()),
            None => Err(LockError::Conflict(format!(
                "delete: the version changed: {}",
                self.inner.describe
            ))),
        }
    }

    /// Resolves on the next `NOTIFY` for this lock, or at once when the stored version already
    /// differs from `seen`. When `seen` is what this handle's last `get` returned and no
    /// notification arrived since, it sends no query; otherwise it reads the record once.
    /// While the server cannot be reached it never resolves (the elector's timers take over).
    async fn wait_for_change(&self, seen: Option<&Version>) {
        // The notifications arrive on the handle's connection: open it when it is not.
        if !self.inner.feed.is_connected() && self.client().await.is_err() {
            return std::future::pending().await;
        }
        self.inner
            .feed
            .wait(seen, || async { Ok(self.get().await?.map(|(_, v)| v)) })
            .await;
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        self.inner.describe.clone()
    }
}
