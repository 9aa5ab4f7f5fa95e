//! [`LeaseCandidates`]: the candidates of coordinated elections as `LeaseCandidate` objects.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use lease_elect::LockError;
use lease_elect::coordinated::{Candidate, CandidateStore};
use serde_json::json;

use crate::call;

/// A [`CandidateStore`] of `coordination.k8s.io/v1beta1` `LeaseCandidate` objects (Kubernetes
/// 1.33's coordinated leader election): one object per candidate, named
/// `<lease>-<identity>`, with `spec.leaseName`, `spec.binaryVersion`,
/// `spec.emulationVersion`, `spec.strategy` (the candidate's) and `spec.renewTime`.
/// A candidate is live while its `renewTime` is less than the time to live old on this
/// process's wall clock (as the API server's own coordinator judges it). The identity must
/// make a valid object name.
///
/// Permissions: `get`, `list`, `create`, `update`, `delete` on `leasecandidates` in the
/// namespace.
pub struct LeaseCandidates {
    api: Api<DynamicObject>,
    resource: ApiResource,
    namespace: String,
    lease: String,
    ttl: Duration,
    timeout: Duration,
}

impl std::fmt::Debug for LeaseCandidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseCandidates")
            .field("namespace", &self.namespace)
            .field("lease", &self.lease)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl LeaseCandidates {
    /// The candidates for the Lease `namespace/lease` through `client`, each live for `ttl`
    /// after its last registration.
    #[must_use]
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        lease: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        let namespace = namespace.into();
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("coordination.k8s.io", "v1beta1", "LeaseCandidate"),
            "leasecandidates",
        );
        LeaseCandidates {
            api: Api::namespaced_with(client, &namespace, &resource),
            resource,
            namespace,
            lease: lease.into(),
            ttl,
            timeout: Duration::from_secs(5),
        }
    }

    fn object_name(&self, identity: &str) -> String {
        format!("{}-{identity}", self.lease)
    }

    fn describe(&self) -> String {
        format!("leasecandidates:{}/{}", self.namespace, self.lease)
    }
}

fn micro_time_now() -> String {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let micros = i64::try_from(t.as_micros()).unwrap_or(i64::MAX);
    k8s_openapi::jiff::Timestamp::from_microsecond(micros)
        .map(|ts| ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_default()
}

#[async_trait]
impl CandidateStore for LeaseCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        let name = self.object_name(&candidate.identity);
        let spec = json!({
            "leaseName": self.lease,
            "binaryVersion": candidate.binary_version.to_string(),
            "emulationVersion": candidate.emulation_version.to_string(),
            "strategy": candidate.strategy,
            "renewTime": micro_time_now(),
        });
        let describe = self.describe();
        let found = call(
            self.timeout,
            &describe,
            "LeaseCandidate",
            self.api.get_opt(&name),
        )
        .await?;
        let pp = PostParams::default();
        match found {
            None => {
                let object = DynamicObject::new(&name, &self.resource)
                    .within(&self.namespace)
                    .data(json!({ "spec": spec }));
                call(
                    self.timeout,
                    &describe,
                    "LeaseCandidate",
                    self.api.create(&pp, &object),
                )
                .await?;
            }
            Some(mut object) => {
                object.data["spec"] = spec;
                call(
                    self.timeout,
                    &describe,
                    "LeaseCandidate",
                    self.api.replace(&name, &pp, &object),
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        let name = self.object_name(identity);
        let describe = self.describe();
        match call(
            self.timeout,
            &describe,
            "LeaseCandidate",
            self.api.delete(&name, &Default::default()),
        )
        .await
        {
            Ok(_) | Err(LockError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let describe = self.describe();
        let list = call(
            self.timeout,
            &describe,
            "LeaseCandidate",
            self.api.list(&ListParams::default()),
        )
        .await?;
        let now = SystemTime::now();
        let mut out = Vec::new();
        for object in list.items {
            let spec = &object.data["spec"];
            if spec["leaseName"].as_str() != Some(self.lease.as_str()) {
                continue;
            }
            let corrupt = |what: &str| LockError::Corrupt {
                detail: format!("{describe}: {what} of {:?}", object.metadata.name),
                source: None,
            };
            let renewed = spec["renewTime"]
                .as_str()
                .and_then(|t| lease_elect::parse_rfc3339(t).ok())
                .ok_or_else(|| corrupt("renewTime"))?;
            if now.duration_since(renewed).unwrap_or_default() >= self.ttl {
                continue;
            }
            let version = |field: &str| {
                spec[field]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| corrupt(field))
            };
            let name = object.metadata.name.clone().unwrap_or_default();
            let identity = name
                .strip_prefix(&format!("{}-", self.lease))
                .unwrap_or(&name)
                .to_owned();
            let strategy = spec["strategy"]
                .as_str()
                .ok_or_else(|| corrupt("strategy"))?;
            out.push(
                Candidate::new(
                    identity,
                    version("emulationVersion")?,
                    version("binaryVersion")?,
                )
                .with_strategy(strategy)
                .map_err(|_| corrupt("strategy"))?,
            );
        }
        Ok(out)
    }
}
