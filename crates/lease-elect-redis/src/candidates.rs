//! [`RedisCandidates`]: the candidates of coordinated elections, one key each.

use std::time::Duration;

use async_trait::async_trait;
use lease_elect::LockError;
use lease_elect::coordinated::{Candidate, CandidateStore};
use redis::Client;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::classify;

/// A [`CandidateStore`] in Redis: for election `e`, the key `lease-elect:{e}:candidate:<id>`
/// holds `<emulation version> <binary version> <strategy>` (`Candidate::to_spec`) and expires a
/// time to live after the last registration (`SET .. PX`), and the set `lease-elect:{e}:candidates` lists the identities
/// (members whose key expired are removed when listing). The keys share a hash slot.
pub struct RedisCandidates {
    client: Client,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    set: String,
    prefix: String,
    ttl: Duration,
}

impl std::fmt::Debug for RedisCandidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCandidates")
            .field("set", &self.set)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisCandidates {
    /// The candidates of `election` on the server at `url`, each live for `ttl` after its
    /// last registration. Connects lazily.
    ///
    /// # Errors
    /// When the URL is invalid.
    pub fn new(url: &str, election: &str, ttl: Duration) -> Result<Self, LockError> {
        let client = Client::open(url).map_err(LockError::permanent)?;
        Ok(RedisCandidates {
            client,
            conn: tokio::sync::OnceCell::new(),
            set: format!("lease-elect:{{{election}}}:candidates"),
            prefix: format!("lease-elect:{{{election}}}:candidate:"),
            ttl,
        })
    }

    async fn conn(&self) -> Result<ConnectionManager, LockError> {
        self.conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(Duration::from_secs(2)))
                    .set_number_of_retries(1);
                ConnectionManager::new_with_config(self.client.clone(), config)
                    .await
                    .map_err(classify)
            })
            .await
            .cloned()
    }
}

#[async_trait]
impl CandidateStore for RedisCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        let mut conn = self.conn().await?;
        let value = candidate.to_spec();
        let ttl = u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(format!("{}{}", self.prefix, candidate.identity))
            .arg(value)
            .arg("PX")
            .arg(ttl)
            .ignore()
            .cmd("SADD")
            .arg(&self.set)
            .arg(&candidate.identity)
            .ignore()
            .query_async::<()>(&mut conn)
            .await
            .map_err(classify)
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        let mut conn = self.conn().await?;
        redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(format!("{}{}", self.prefix, identity))
            .ignore()
            .cmd("SREM")
            .arg(&self.set)
            .arg(identity)
            .ignore()
            .query_async::<()>(&mut conn)
            .await
            .map_err(classify)
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let mut conn = self.conn().await?;
        let ids: Vec<String> = redis::cmd("SMEMBERS")
            .arg(&self.set)
            .query_async(&mut conn)
            .await
            .map_err(classify)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids
            .iter()
            .map(|id| format!("{}{id}", self.prefix))
            .collect();
        let values: Vec<Option<String>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .map_err(classify)?;
        let mut out = Vec::new();
        for (id, value) in ids.into_iter().zip(values) {
            let Some(value) = value else {
                // Expired: forget the member (a registration meanwhile adds it again).
                let _: Result<(), _> = redis::cmd("SREM")
                    .arg(&self.set)
                    .arg(&id)
                    .query_async(&mut conn)
                    .await;
                continue;
            };
            out.push(
                Candidate::from_spec(&id, &value).map_err(|e| LockError::Corrupt {
                    detail: format!("candidate key of {id:?}: {value:?}"),
                    source: Some(Box::new(e)),
                })?,
            );
        }
        Ok(out)
    }
}
