//! [`EtcdCandidates`]: the candidates of coordinated elections, one key each.

use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, GetOptions, PutOptions};
use lease_elect::LockError;
use lease_elect::coordinated::{Candidate, CandidateStore};

use crate::classify;

/// A [`CandidateStore`] in etcd: for election `e`, the key `/lease-elect/e/candidates/<id>`
/// holds `<emulation version> <binary version> <strategy>` (`Candidate::to_spec`), attached to
/// an etcd lease of the time to live granted at each registration, so etcd deletes it when the
/// candidate stops registering.
#[derive(Clone)]
pub struct EtcdCandidates {
    client: Client,
    prefix: String,
    ttl: Duration,
}

impl std::fmt::Debug for EtcdCandidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdCandidates")
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl EtcdCandidates {
    /// The candidates of `election` through `client`, each live for `ttl` (whole seconds, at
    /// least 1) after its last registration.
    #[must_use]
    pub fn new(client: Client, election: &str, ttl: Duration) -> Self {
        EtcdCandidates {
            client,
            prefix: format!("/lease-elect/{election}/candidates/"),
            ttl,
        }
    }
}

#[async_trait]
impl CandidateStore for EtcdCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        let mut client = self.client.clone();
        let ttl = i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX).max(1);
        let lease = client.lease_grant(ttl, None).await.map_err(classify)?;
        let value = candidate.to_spec();
        client
            .put(
                format!("{}{}", self.prefix, candidate.identity),
                value,
                Some(PutOptions::new().with_lease(lease.id())),
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        let mut client = self.client.clone();
        client
            .delete(format!("{}{identity}", self.prefix), None)
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let mut client = self.client.clone();
        let response = client
            .get(self.prefix.as_str(), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(classify)?;
        response
            .kvs()
            .iter()
            .map(|kv| {
                let key = String::from_utf8_lossy(kv.key()).into_owned();
                let value = String::from_utf8_lossy(kv.value()).into_owned();
                let identity = key.strip_prefix(&self.prefix).unwrap_or(&key);
                Candidate::from_spec(identity, &value).map_err(|e| LockError::Corrupt {
                    detail: format!("candidate key {key:?}: {value:?}"),
                    source: Some(Box::new(e)),
                })
            })
            .collect()
    }
}
