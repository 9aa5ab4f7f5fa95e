//! [`PostgresCandidates`]: the candidates of coordinated elections, one row each.

use std::time::Duration;

use async_trait::async_trait;
use lease_elect::LockError;
use lease_elect::coordinated::{Candidate, CandidateStore};
use tokio::sync::Mutex;
use tokio_postgres::{Client, Config, NoTls};

use crate::classify;

/// A [`CandidateStore`] in PostgreSQL: one row per candidate of an election in the table
/// `lease_elect_candidates` (created on first use), live for a time to live after its last
/// registration, judged by the server's clock:
///
/// ```sql
/// CREATE TABLE IF NOT EXISTS lease_elect_candidates (
///     election          text NOT NULL,
///     identity          text NOT NULL,
///     emulation_version text NOT NULL,
///     binary_version    text NOT NULL,
///     renewed_at        timestamptz NOT NULL,
///     PRIMARY KEY (election, identity)
/// );
/// ALTER TABLE lease_elect_candidates
///     ADD COLUMN IF NOT EXISTS strategy text NOT NULL DEFAULT 'OldestEmulationVersion';
/// ```
///
/// (`strategy` is the candidate's strategy; a table of an earlier version gets the column,
/// its rows `OldestEmulationVersion`.)
///
/// A candidate registers again well within the time to live (the registration is an upsert).
pub struct PostgresCandidates {
    config: Config,
    election: String,
    ttl: Duration,
    client: Mutex<Option<Client>>,
}

impl std::fmt::Debug for PostgresCandidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresCandidates")
            .field("election", &self.election)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl PostgresCandidates {
    /// The candidates of `election` in the database at `url`, each live for `ttl` after its
    /// last registration. Connects lazily.
    ///
    /// # Errors
    /// When the URL is invalid.
    pub fn new(url: &str, election: impl Into<String>, ttl: Duration) -> Result<Self, LockError> {
        let mut config: Config = url.parse().map_err(LockError::permanent)?;
        config.connect_timeout(Duration::from_secs(2));
        Ok(PostgresCandidates {
            config,
            election: election.into(),
            ttl,
            client: Mutex::new(None),
        })
    }

    /// Runs `f` on a connection (made, and the table created, when there is none); a failed
    /// call drops the connection so the next one reconnects.
    async fn with<T>(
        &self,
        f: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, LockError> {
        let mut guard = self.client.lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            let (client, connection) = self.config.connect(NoTls).await.map_err(classify)?;
            tokio::spawn(connection);
            client
                .batch_execute(
                    "BEGIN;
                     SELECT pg_advisory_xact_lock(7383961242650112012);
                     CREATE TABLE IF NOT EXISTS lease_elect_candidates (
                         election text NOT NULL,
                         identity text NOT NULL,
                         emulation_version text NOT NULL,
                         binary_version text NOT NULL,
                         renewed_at timestamptz NOT NULL,
                         PRIMARY KEY (election, identity)
                     );
                     ALTER TABLE lease_elect_candidates ADD COLUMN IF NOT EXISTS
                         strategy text NOT NULL DEFAULT 'OldestEmulationVersion';
                     COMMIT;",
                )
                .await
                .map_err(classify)?;
            *guard = Some(client);
        }
        let client = guard.as_ref().expect("connected above");
        match f(client).await {
            Ok(v) => Ok(v),
            Err(e) => {
                *guard = None;
                Err(classify(e))
            }
        }
    }
}

#[async_trait]
impl CandidateStore for PostgresCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        let (e, b) = (
            candidate.emulation_version.to_string(),
            candidate.binary_version.to_string(),
        );
        self.with(async |c| {
            c.execute(
                "INSERT INTO lease_elect_candidates
                     (election, identity, emulation_version, binary_version, renewed_at, strategy)
                 VALUES ($1, $2, $3, $4, now(), $5)
                 ON CONFLICT (election, identity) DO UPDATE SET
                     emulation_version = $3, binary_version = $4, renewed_at = now(),
                     strategy = $5",
                &[
                    &self.election,
                    &candidate.identity,
                    &e,
                    &b,
                    &candidate.strategy,
                ],
            )
            .await
        })
        .await?;
        Ok(())
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        self.with(async |c| {
            c.execute(
                "DELETE FROM lease_elect_candidates WHERE election = $1 AND identity = $2",
                &[&self.election, &identity],
            )
            .await
        })
        .await?;
        Ok(())
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let ttl = self.ttl.as_secs_f64();
        let rows = self
            .with(async |c| {
                c.query(
                    "SELECT identity, emulation_version, binary_version, strategy
                     FROM lease_elect_candidates WHERE election = $1 AND renewed_at > now() - make_interval(secs => $2)",
                    &[&self.election, &ttl],
                )
                .await
            })
            .await?;
        rows.iter()
            .map(|row| {
                let (identity, strategy): (String, String) = (row.get(0), row.get(3));
                let corrupt = |e: lease_elect::coordinated::BadCandidate| LockError::Corrupt {
                    detail: format!("candidate row of {:?}", self.election),
                    source: Some(Box::new(e)),
                };
                let version = |i: usize| -> Result<_, LockError> {
                    let text: String = row.get(i);
                    text.parse().map_err(|e| LockError::Corrupt {
                        detail: format!("candidate row of {:?}", self.election),
                        source: Some(Box::new(e)),
                    })
                };
                Candidate::new(identity, version(1)?, version(2)?)
                    .with_strategy(strategy)
                    .map_err(corrupt)
            })
            .collect()
    }
}
