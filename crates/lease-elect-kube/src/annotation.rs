//! Locks that keep the record as client-go's annotation on a ConfigMap or an Endpoints object.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use lease_elect::{LeaderElectionRecord, LockError, ResourceLock, Version};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ResourceVersions;
use crate::call;
use crate::object::Target;

/// The annotation client-go keeps the election record in
/// (`resourcelock.LeaderElectionRecordAnnotationKey`).
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

mod sealed {
    pub trait Sealed {}
    impl Sealed for k8s_openapi::api::core::v1::ConfigMap {}
    impl Sealed for k8s_openapi::api::core::v1::Endpoints {}
}

/// An object kind that can carry the election annotation: [`ConfigMap`] and [`Endpoints`]
/// (sealed).
pub trait AnnotationObject:
    kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Debug
    + Default
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// The kind's name in descriptions (`configmap`, `endpoints`).
    const NAME: &'static str;
}

impl AnnotationObject for ConfigMap {
    const NAME: &'static str = "configmap";
}

impl AnnotationObject for Endpoints {
    const NAME: &'static str = "endpoints";
}

/// client-go's `ConfigMapLock`: the record in the annotation
/// `control-plane.alpha.kubernetes.io/leader` of a ConfigMap.
pub type ConfigMapLock = AnnotationLock<ConfigMap>;

/// client-go's `EndpointsLock`: the record in the annotation
/// `control-plane.alpha.kubernetes.io/leader` of an Endpoints object.
pub type EndpointsLock = AnnotationLock<Endpoints>;

/// A [`ResourceLock`] keeping the record as client-go's `ConfigMapLock` and `EndpointsLock`
/// do (client-go up to v0.27, and kube-controller-manager and kube-scheduler before they moved
/// to Leases): JSON in the annotation [`LEADER_ANNOTATION`] of a ConfigMap or an Endpoints
/// object. Use it through [`ConfigMapLock`] and [`EndpointsLock`].
///
/// # Mapping
/// - The annotation's value is [`LeaderElectionRecord::to_json`], byte for byte what client-go
///   writes (`{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"…Z",
///   "renewTime":"…Z","leaderTransitions":0}`, times in seconds), so electors of this crate
///   and client-go electors of that era share one lock.
/// - The version is the object's `metadata.resourceVersion`, read as the Lease lock reads
///   it ([`ResourceVersions`]): by default comparable, and fencing tokens come from it.
/// - No object is no record. An object without the annotation reads as an empty record
///   (nobody holds it), as in client-go, so a candidate takes it over at once. An annotation
///   that is not a record is [`LockError::Corrupt`].
/// - `create` is a `POST` of a new object carrying only the annotation (409 AlreadyExists
///   is a conflict). `update` is a `PUT` of the object as read at the expected version, with
///   the annotation replaced: its data, subsets, labels and other annotations stay. The `PUT`
///   carries the expected `resourceVersion` and the object's `uid`, so a stale version or a
///   deleted-and-recreated object is a conflict (409), and a missing object is never created
///   by it (ConfigMaps: 404; Endpoints allow create-on-update, which the uid prevents).
///   `delete` is a `DELETE` with a `resourceVersion` precondition: it removes the whole
///   object, as leader-for-life expects.
///
/// # Permissions
/// `get`, `watch`, `create`, `update` (and `delete` for leader-for-life) on `configmaps` or
/// `endpoints` in the namespace. Kubernetes 1.33 deprecates the Endpoints API: the server
/// then answers with a warning, which the lock ignores.
pub struct AnnotationLock<K: AnnotationObject> {
    t: Target<K>,
}

impl<K: AnnotationObject> Debug for AnnotationLock<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnotationLock")
            .field("object", &self.describe())
            .field("identity", &self.t.identity)
            .finish()
    }
}

impl<K: AnnotationObject> AnnotationLock<K> {
    /// A lock on the object `namespace/name` through `client`, for the participant
    /// `identity`.
    #[must_use]
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        AnnotationLock {
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

    /// How the object's `resourceVersion` is read: [`ResourceVersions::Comparable`] (the
    /// default; fencing tokens from it) or [`ResourceVersions::Opaque`] (tokens from
    /// `leaderTransitions`).
    #[must_use]
    pub fn with_resource_versions(mut self, versions: ResourceVersions) -> Self {
        self.t.versions = versions;
        self
    }

    /// The object's namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.t.namespace
    }

    /// The object's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.t.name
    }

    async fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LockError> {
        call(self.t.timeout, &self.t.describe, K::NAME, fut).await
    }

    fn remember(&self, object: Option<K>) {
        *self
            .t
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = object;
    }

    fn version_of(&self, object: &K) -> Result<Version, LockError> {
        self.t.versions.version(
            object.meta().resource_version.as_deref(),
            &self.t.describe,
            K::NAME,
        )
    }

    /// The record in `object`'s annotation; an empty record when there is none.
    fn record_of(&self, object: &K) -> Result<LeaderElectionRecord, LockError> {
        match object
            .meta()
            .annotations
            .as_ref()
            .and_then(|a| a.get(LEADER_ANNOTATION))
        {
            None => Ok(LeaderElectionRecord::default()),
            Some(text) => LeaderElectionRecord::from_json(text).map_err(|e| LockError::Corrupt {
                detail: format!(
                    "{}: the annotation {LEADER_ANNOTATION} is not a leader election record",
                    self.t.describe
                ),
                source: Some(Box::new(e)),
            }),
        }
    }

    /// The object at version `expected`: the one last seen when it is that version, else read
    /// again. `Err(Conflict)` when the object is gone or at another version.
    async fn object_at(&self, expected: &Version) -> Result<K, LockError> {
        let cached = self
            .t
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .filter(|o| o.meta().resource_version.as_deref() == Some(expected.tag()));
        if let Some(object) = cached {
            return Ok(object);
        }
        match self.call(self.t.api.get_opt(&self.t.name)).await? {
            Some(object) if object.meta().resource_version.as_deref() == Some(expected.tag()) => {
                self.remember(Some(object.clone()));
                Ok(object)
            }
            found => {
                let what = if found.is_some() {
                    "the version changed"
                } else {
                    "no object"
                };
                self.remember(found);
                Err(LockError::Conflict(format!(
                    "{}: update from {expected}: {what}",
                    self.t.describe
                )))
            }
        }
    }
}

fn record_json(record: &LeaderElectionRecord) -> Result<String, LockError> {
    record.to_json().map_err(LockError::permanent)
}

#[async_trait]
impl<K: AnnotationObject> ResourceLock for AnnotationLock<K> {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let before = self.t.feed.before_read();
        let found = match self.call(self.t.api.get_opt(&self.t.name)).await? {
            None => {
                self.remember(None);
                None
            }
            Some(object) => {
                let record = self.record_of(&object)?;
                let version = self.version_of(&object)?;
                self.remember(Some(object));
                Some((record, version))
            }
        };
        self.t
            .feed
            .after_read(before, found.as_ref().map(|(_, v)| v));
        Ok(found)
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        let mut object = K::default();
        *object.meta_mut() = ObjectMeta {
            name: Some(self.t.name.clone()),
            namespace: Some(self.t.namespace.clone()),
            annotations: Some(BTreeMap::from([(
                LEADER_ANNOTATION.to_owned(),
                record_json(record)?,
            )])),
            ..ObjectMeta::default()
        };
        let created = self
            .call(self.t.api.create(&PostParams::default(), &object))
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
        let mut object = self.object_at(expected).await?;
        if object.meta().uid.as_deref().is_none_or(str::is_empty) {
            return Err(LockError::Corrupt {
                detail: format!("{}: the {} has no uid", self.t.describe, K::NAME),
                source: None,
            });
        }
        object
            .meta_mut()
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(LEADER_ANNOTATION.to_owned(), record_json(record)?);
        let replaced = self
            .call(
                self.t
                    .api
                    .replace(&self.t.name, &PostParams::default(), &object),
            )
            .await?;
        let version = self.version_of(&replaced)?;
        self.remember(Some(replaced));
        Ok(version)
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        self.t.delete(expected, K::NAME).await?;
        self.remember(None);
        Ok(())
    }

    /// As [`LeaseLock`'s](crate::LeaseLock): one watch on the object per handle, started on
    /// the first call.
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
        format!("{}:{}", K::NAME, self.t.describe)
    }
}
