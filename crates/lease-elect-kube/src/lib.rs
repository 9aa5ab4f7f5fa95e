//! Kubernetes locks for [`lease_elect`]: a Lease lock (`coordination.k8s.io/v1`), mapped
//! exactly as client-go's `LeaseLock` maps it, so electors of this crate and client-go electors
//! can share one Lease; and client-go's older [`ConfigMapLock`] and [`EndpointsLock`], which
//! keep the record as JSON in the annotation [`LEADER_ANNOTATION`] (see [`AnnotationLock`]).
//! With [`lease_elect::MultiLock`] they give client-go's `configmapsleases` and
//! `endpointsleases` for moving an election to a Lease. The feature `testing` adds
//! `testing::ApiServer`, a loopback API server for tests, and `testing::apiserver`, a real
//! kube-apiserver (and its etcd) run by a test.
//!
//! # Start here
//! ```no_run
//! use lease_elect_kube::LeaseLock;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?; // in-cluster or ~/.kube/config
//! let lock = LeaseLock::new(client, "kube-system", "my-controller", "pod-a");
//! // Hand `lock` to an `ElectionConfig` (lease_elect), or use the `ResourceLock` methods.
//! # let _ = lock; Ok(()) }
//! ```
//!
//! # Mapping
//! | record (client-go JSON) | Lease `spec` |
//! |---|---|
//! | `holderIdentity` | `holderIdentity` (always written, empty when released) |
//! | `leaseDurationSeconds` | `leaseDurationSeconds` |
//! | `acquireTime` | `acquireTime` (MicroTime: microseconds, truncated) |
//! | `renewTime` | `renewTime` (MicroTime) |
//! | `leaderTransitions` | `leaseTransitions` |
//! | `strategy`, `preferredHolder` | `strategy`, `preferredHolder` (written only when set) |
//!
//! The version is the Lease's `metadata.resourceVersion`. By default it is read as a
//! comparable resource version (Kubernetes 1.35's rule, KEP-5504, and what every API server on
//! etcd hands out) and also serves as the version's
//! [`sequence`](lease_elect::Version::sequence): fencing tokens are then the resource versions
//! of the writes that began the terms, and keep increasing when somebody deletes the Lease
//! and a new one is created. With [`ResourceVersions::Opaque`] it is compared for equality
//! only and fencing tokens come from `leaseTransitions`, which a deleted Lease loses. `create` is a `POST` (409 AlreadyExists is a conflict), `update` a
//! `PUT` carrying the expected `resourceVersion` and the Lease's `metadata.uid` (409 Conflict is
//! a conflict), `delete` a `DELETE` with a `resourceVersion` precondition. An update keeps the
//! Lease's other metadata (labels, annotations, owner references) as last read.
//!
//! What a real API server does with a `PUT`, and how the lock copes:
//! - **A missing Lease is created by a `PUT`** (the Lease strategy allows create-on-update), and
//!   the `resourceVersion` in the body does not stop it. Only a `metadata.uid` does: the server
//!   then answers 409 (a failed UID precondition). So `update` always sends the uid of the
//!   Lease it expects: from the Lease this handle last read or wrote when that is the expected
//!   version, else from a `GET` first (no Lease, or another version: a conflict, no write).
//! - **A `PUT` that changes nothing keeps the `resourceVersion`** (the server skips the
//!   write). The contract allows that for an update that writes the stored record unchanged;
//!   the elector never does (every renewal writes a new `renewTime`, in microseconds here).
//! - **A server that does not know `strategy` and `preferredHolder`** (before Kubernetes 1.31)
//!   drops them: they read back as unset. The elector only copies them from the record it
//!   read, so it works with such a server.
//!
//! `leaseDurationSeconds` and `leaseTransitions` are `int32` in the API: larger values are
//! refused with a permanent error. [`wait_for_change`](ResourceLock::wait_for_change) keeps one
//! watch on the Lease per waiting handle, so a waiting candidate takes a released Lease over at
//! once instead of on its next retry (client-go waits for the tick), without more requests
//! per retry period.
//!
//! # Permissions
//! The service account needs `get`, `watch`, `create`, `update` (and `delete` for
//! leader-for-life) on `leases` in `coordination.k8s.io` in the namespace. Without `watch`
//! the lock still works; candidates then wait for their timers.
//!
//! # Features
//! The default feature `k8s-openapi-earliest` selects k8s-openapi's oldest supported
//! Kubernetes version. A binary that selects its own k8s-openapi version feature depends on
//! this crate with `default-features = false`.

pub use k8s_openapi;
pub use kube;

mod annotation;
mod candidates;
mod object;
#[cfg(feature = "testing")]
pub mod testing;

pub use annotation::{
    AnnotationLock, AnnotationObject, ConfigMapLock, EndpointsLock, LEADER_ANNOTATION,
};
pub use candidates::LeaseCandidates;
pub use object::ResourceVersions;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use futures_util::StreamExt as _;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use lease_elect::{ChangeFeed, LeaderElectionRecord, LockError, ResourceLock, Version};

use object::Target;

/// A [`ResourceLock`] on a Kubernetes `Lease`; see the [crate docs](crate) for the mapping.
pub struct LeaseLock {
    t: Target<Lease>,
}

/// Keeps one watch on the object `name` open (from "now" each time it is started again after
/// an error or the server's timeout) and reports its events to `feed`.
async fn watch_object<K>(api: Api<K>, name: String, feed: Arc<ChangeFeed>, timeout: Duration)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(290);
    loop {
        if let Ok(Ok(stream)) = tokio::time::timeout(timeout, api.watch(&params, "")).await {
            let mut stream = std::pin::pin!(stream);
            feed.connected();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(WatchEvent::Bookmark(_)) => {}
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                    Ok(_) => feed.notify(),
                }
            }
            feed.disconnected();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A kube error as a [`LockError`]: 404 and 409 (AlreadyExists, Conflict, NotFound) are
/// conflicts, throttling, timeouts and server errors retryable, a body that cannot be decoded
/// corrupt.
fn classify(describe: &str, what: &str, e: kube::Error) -> LockError {
    match &e {
        kube::Error::Api(status) => match status.code {
            404 | 409 => LockError::Conflict(format!("{describe}: {}", status.message)),
            408 | 429 | 500 | 502 | 503 | 504 => LockError::retryable(e),
            _ => LockError::permanent(e),
        },
        kube::Error::SerdeError(_) => LockError::Corrupt {
            detail: format!("{describe}: the {what} cannot be decoded"),
            source: Some(Box::new(e)),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
            LockError::retryable(e)
        }
        _ => LockError::permanent(e),
    }
}

/// `fut` within `timeout`, its error classified.
async fn call<T>(
    timeout: Duration,
    describe: &str,
    what: &str,
    fut: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, LockError> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r.map_err(|e| classify(describe, what, e)),
        Err(_) => Err(LockError::Timeout),
    }
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.t.describe)
            .field("identity", &self.t.identity)
            .finish()
    }
}

impl LeaseLock {
    /// A lock on the Lease `namespace/name` through `client`, for the participant `identity`.
    #[must_use]
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaseLock {
            t: Target::new(client, namespace.into(), name.into(), identity.into()),
        }
    }

    /// How long one API request may take before it fails with [`LockError::Timeout`].
    /// Default 5 s. Keep it below the elector's renew deadline.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.t.timeout = timeout;
        self
    }

    /// How the Lease's `resourceVersion` is read: [`ResourceVersions::Comparable`] (the
    /// default; fencing tokens from it) or [`ResourceVersions::Opaque`] (tokens from
    /// `leaseTransitions`).
    #[must_use]
    pub fn with_resource_versions(mut self, versions: ResourceVersions) -> Self {
        self.t.versions = versions;
        self
    }

    /// The Lease's namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.t.namespace
    }

    /// The Lease's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.t.name
    }

    async fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LockError> {
        call(self.t.timeout, &self.t.describe, "Lease", fut).await
    }

    fn remember(&self, lease: Option<Lease>) {
        *self
            .t
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = lease;
    }

    fn version_of(&self, lease: &Lease) -> Result<Version, LockError> {
        self.t.versions.version(
            lease.metadata.resource_version.as_deref(),
            &self.t.describe,
            "Lease",
        )
    }

    /// The metadata for a write: the Lease's as last seen when that is the expected version
    /// (so labels, annotations and owners stay), else just name and namespace.
    fn metadata_for(&self, expected: Option<&Version>) -> ObjectMeta {
        let last = self
            .t
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut meta = match (last, expected) {
            (Some(lease), Some(v))
                if lease.metadata.resource_version.as_deref() == Some(v.tag()) =>
            {
                lease.metadata
            }
            _ => ObjectMeta::default(),
        };
        meta.name = Some(self.t.name.clone());
        meta.namespace = Some(self.t.namespace.clone());
        meta.resource_version = expected.map(|v| v.tag().to_owned());
        if expected.is_none() {
            meta.uid = None;
            meta.creation_timestamp = None;
            meta.managed_fields = None;
        }
        meta
    }
}

/// client-go's `LeaderElectionRecordToLeaseSpec`.
///
/// # Errors
/// When `leaseDurationSeconds` or `leaderTransitions` does not fit the API's `int32`, or a
/// time is out of the API's range.
pub fn record_to_lease_spec(record: &LeaderElectionRecord) -> Result<LeaseSpec, LockError> {
    let duration = i32::try_from(record.lease_duration_seconds).map_err(|_| {
        LockError::permanent(format!(
            "leaseDurationSeconds {} does not fit the Lease's int32",
            record.lease_duration_seconds
        ))
    })?;
    let transitions = i32::try_from(record.leader_transitions).map_err(|_| {
        LockError::permanent(format!(
            "leaderTransitions {} does not fit the Lease's int32",
            record.leader_transitions
        ))
    })?;
    Ok(LeaseSpec {
        holder_identity: Some(record.holder_identity.clone()),
        lease_duration_seconds: Some(duration),
        acquire_time: record.acquire_time.map(micro_time).transpose()?,
        renew_time: record.renew_time.map(micro_time).transpose()?,
        lease_transitions: Some(transitions),
        preferred_holder: record.preferred_holder.clone().filter(|s| !s.is_empty()),
        strategy: record.strategy.clone().filter(|s| !s.is_empty()),
    })
}

/// client-go's `LeaseSpecToLeaderElectionRecord`.
///
/// # Errors
/// [`LockError::Corrupt`] when a number is negative (the record's are unsigned).
pub fn lease_spec_to_record(spec: &LeaseSpec) -> Result<LeaderElectionRecord, LockError> {
    let unsigned = |v: Option<i32>, field: &str| {
        u32::try_from(v.unwrap_or(0)).map_err(|_| LockError::Corrupt {
            detail: format!("the Lease's {field} is negative: {v:?}"),
            source: None,
        })
    };
    Ok(LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: unsigned(spec.lease_duration_seconds, "leaseDurationSeconds")?,
        acquire_time: spec.acquire_time.as_ref().map(system_time),
        renew_time: spec.renew_time.as_ref().map(system_time),
        leader_transitions: u64::from(unsigned(spec.lease_transitions, "leaseTransitions")?),
        strategy: spec.strategy.clone().filter(|s| !s.is_empty()),
        preferred_holder: spec.preferred_holder.clone().filter(|s| !s.is_empty()),
    })
}

/// A wall-clock time as a MicroTime, truncated toward the past to the microsecond.
fn micro_time(t: SystemTime) -> Result<MicroTime, LockError> {
    let micros = |d: Duration| d.as_secs() as i128 * 1_000_000 + i128::from(d.subsec_micros());
    let us: i128 = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => micros(d),
        Err(e) => {
            let d = e.duration();
            let whole = micros(d);
            if d.subsec_nanos() % 1_000 != 0 {
                -whole - 1
            } else {
                -whole
            }
        }
    };
    let us = i64::try_from(us).map_err(LockError::permanent)?;
    k8s_openapi::jiff::Timestamp::from_microsecond(us)
        .map(MicroTime)
        .map_err(LockError::permanent)
}

fn system_time(t: &MicroTime) -> SystemTime {
    SystemTime::from(t.0)
}

#[async_trait]
impl ResourceLock for LeaseLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let before = self.t.feed.before_read();
        let found = match self.call(self.t.api.get_opt(&self.t.name)).await? {
            None => {
                self.remember(None);
                None
            }
            Some(lease) => {
                let record = lease_spec_to_record(&lease.spec.clone().unwrap_or_default())?;
                let version = self.version_of(&lease)?;
                self.remember(Some(lease));
                Some((record, version))
            }
        };
        self.t
            .feed
            .after_read(before, found.as_ref().map(|(_, v)| v));
        Ok(found)
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        let lease = Lease {
            metadata: self.metadata_for(None),
            spec: Some(record_to_lease_spec(record)?),
        };
        let created = self
            .call(self.t.api.create(&PostParams::default(), &lease))
            .await?;
        let version = self.version_of(&created)?;
        self.remember(Some(created));
        Ok(version)
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let mut metadata = self.metadata_for(Some(expected));
        if metadata.uid.is_none() {
            // Without the uid a real API server would create a missing Lease: learn it first.
            match self.call(self.t.api.get_opt(&self.t.name)).await? {
                Some(lease)
                    if lease.metadata.resource_version.as_deref() == Some(expected.tag()) =>
                {
                    metadata = ObjectMeta {
                        resource_version: Some(expected.tag().to_owned()),
                        ..lease.metadata.clone()
                    };
                    self.remember(Some(lease));
                }
                found => {
                    let what = if found.is_some() {
                        "the version changed"
                    } else {
                        "no Lease"
                    };
                    self.remember(found);
                    return Err(LockError::Conflict(format!(
                        "{}: update from {expected}: {what}",
                        self.t.describe
                    )));
                }
            }
        }
        if metadata.uid.is_none() {
            return Err(LockError::Corrupt {
                detail: format!("{}: the Lease has no uid", self.t.describe),
                source: None,
            });
        }
        let lease = Lease {
            metadata,
            spec: Some(record_to_lease_spec(record)?),
        };
        let replaced = self
            .call(
                self.t
                    .api
                    .replace(&self.t.name, &PostParams::default(), &lease),
            )
            .await?;
        let version = self.version_of(&replaced)?;
        self.remember(Some(replaced));
        Ok(version)
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        self.t.delete(expected, "Lease").await?;
        self.remember(None);
        Ok(())
    }

    /// Resolves after the next change of the Lease, which a watch task of this handle
    /// follows (one long-lived watch per handle, started on the first call), or at once when
    /// the stored version already differs from `seen`. When `seen` is what this handle's last
    /// `get` returned and no event arrived since, it sends no request; otherwise it reads the
    /// Lease once. While the API server cannot be reached (or refuses the watch) it never
    /// resolves (the elector's timers take over).
    async fn wait_for_change(&self, seen: Option<&Version>) {
        self.t.ensure_watch();
        self.t
            .feed
            .wait(seen, || async { Ok(self.get().await?.map(|(_, v)| v)) })
            .await;
    }

    fn identity(&self) -> &str {
        &self.t.identity
    }

    fn describe(&self) -> String {
        format!("lease:{}", self.t.describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_round_trips_at_microseconds() {
        let t = UNIX_EPOCH + Duration::new(1_795_262_400, 123_456_789);
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(t),
            renew_time: None,
            leader_transitions: 7,
            strategy: None,
            preferred_holder: Some("b".into()),
        };
        let spec = record_to_lease_spec(&record).expect("fits");
        assert_eq!(spec.lease_transitions, Some(7));
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert!(spec.renew_time.is_none());
        let back = lease_spec_to_record(&spec).expect("valid");
        let mut expected = record;
        expected.acquire_time = Some(UNIX_EPOCH + Duration::new(1_795_262_400, 123_456_000));
        assert_eq!(back, expected);
    }

    #[test]
    fn released_record_keeps_empty_holder() {
        let spec = record_to_lease_spec(&LeaderElectionRecord::default()).expect("fits");
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!(spec.lease_transitions, Some(0));
        let json = serde_json::to_value(&spec).expect("json");
        assert_eq!(json["holderIdentity"], "");
    }

    #[test]
    fn refuses_out_of_range_numbers() {
        let record = LeaderElectionRecord {
            leader_transitions: u64::from(u32::MAX),
            ..LeaderElectionRecord::default()
        };
        assert!(record_to_lease_spec(&record).is_err());
        let spec = LeaseSpec {
            lease_duration_seconds: Some(-1),
            ..LeaseSpec::default()
        };
        assert!(matches!(
            lease_spec_to_record(&spec),
            Err(LockError::Corrupt { .. })
        ));
    }

    #[test]
    fn pre_epoch_times_truncate_toward_the_past() {
        let t = UNIX_EPOCH - Duration::new(1, 500);
        let m = micro_time(t).expect("in range");
        assert_eq!(
            system_time(&m),
            UNIX_EPOCH - Duration::new(1, 1_000),
            "truncated toward the past"
        );
    }
}
