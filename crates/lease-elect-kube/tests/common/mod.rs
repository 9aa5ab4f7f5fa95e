//! What the Kubernetes locks' tests share, so that a check is written once and runs on both
//! servers: the loopback API server of `lease_elect_kube::testing` (`tests/conformance.rs`,
//! `tests/annotation.rs`) and a real kube-apiserver (`tests/apiserver.rs`).
//!
//! Here: the locks a factory opens ([`Kind`]), what the checks ask of a factory besides its
//! locks ([`KubeFactory`]), a factory on the loopback server and its stop and start, and the
//! checks of what the loopback server copies from the real one. Each check takes the factory
//! its test's function returns: `None` (no server, reported by that function) skips it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints};
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, server_restart_outage};
use lease_elect::testing::unique_name;
use lease_elect::{LeaderElectionRecord, MultiLock, ResourceLock, Version};
use lease_elect_kube::testing::{ApiServer, Resource};
use lease_elect_kube::{AnnotationLock, AnnotationObject, LEADER_ANNOTATION, LeaseLock};

pub const NAMESPACE: &str = "lease-elect-test";
/// The locks' request timeout.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(2);
/// A leader annotation that is no JSON record (the corrupt-record check).
pub const CORRUPT_ANNOTATION: &str = "{\"holderIdentity\":";

/// Which lock a factory opens.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Lease,
    ConfigMap,
    Endpoints,
    /// client-go's `configmapsleases`: a ConfigMap primary, a Lease secondary.
    ConfigMapsLeases,
    /// client-go's `endpointsleases`.
    EndpointsLeases,
}

impl Kind {
    /// Opens lock `name` for `identity`, each object's lock on a client from `client`.
    pub fn open(
        self,
        client: impl Fn() -> kube::Client,
        name: &str,
        identity: &str,
    ) -> Arc<dyn ResourceLock> {
        match self {
            Kind::Lease => Arc::new(lease_lock(client(), name, identity)),
            Kind::ConfigMap => Arc::new(annotation_lock::<ConfigMap>(client(), name, identity)),
            Kind::Endpoints => Arc::new(annotation_lock::<Endpoints>(client(), name, identity)),
            Kind::ConfigMapsLeases => Arc::new(MultiLock::new(
                annotation_lock::<ConfigMap>(client(), name, identity),
                lease_lock(client(), name, identity),
            )),
            Kind::EndpointsLeases => Arc::new(MultiLock::new(
                annotation_lock::<Endpoints>(client(), name, identity),
                lease_lock(client(), name, identity),
            )),
        }
    }

    pub fn time_precision(self) -> Duration {
        match self {
            // MicroTime.
            Kind::Lease => Duration::from_micros(1),
            // client-go's JSON record (the multi-locks read their primary).
            _ => Duration::from_secs(1),
        }
    }
}

pub fn annotation_lock<K: AnnotationObject>(
    c: kube::Client,
    name: &str,
    id: &str,
) -> AnnotationLock<K> {
    AnnotationLock::<K>::new(c, NAMESPACE, name, id).with_timeout(LOCK_TIMEOUT)
}

pub fn lease_lock(c: kube::Client, name: &str, id: &str) -> LeaseLock {
    LeaseLock::new(c, NAMESPACE, name, id).with_timeout(LOCK_TIMEOUT)
}

/// A factory of locks on an API server, and clients of that server.
pub trait KubeFactory: LockFactory {
    /// A client of its own (its own connections), as another process would have, in
    /// [`NAMESPACE`].
    fn client(&self) -> kube::Client;

    fn api<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        kube::Api::namespaced(self.client(), NAMESPACE)
    }
}

/// The lease-elect conformance suite on locks of each kind, each in a module of its own:
/// `conformance_per_kind!(factory: lease => Lease, ...)`, where `factory` is the calling
/// file's `async fn(Kind) -> Option<impl LockFactory>` (`None`: no server, reported).
#[allow(unused_macros)]
macro_rules! conformance_per_kind {
    ($factory:ident: $($module:ident => $kind:ident),* $(,)?) => {
        $(
            mod $module {
                async fn factory() -> Option<impl lease_elect::testing::LockFactory> {
                    super::$factory(super::common::Kind::$kind).await
                }

                lease_elect::conformance_tests!(factory);
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use conformance_per_kind;

// ---- the loopback server ----

/// A client of the loopback server at `url`.
pub fn loopback_client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_namespace = NAMESPACE.to_owned();
    config.connect_timeout = Some(Duration::from_secs(1));
    config.read_timeout = Some(Duration::from_secs(2));
    kube::Client::try_from(config).expect("a kube client")
}

/// A factory on a loopback server of its own (for [`conformance_per_kind!`]).
pub async fn loopback(kind: Kind) -> Option<LoopbackFactory> {
    Some(LoopbackFactory::start(kind).await)
}

/// Locks of one [`Kind`] on a loopback server of the factory's own.
pub struct LoopbackFactory {
    pub server: Arc<tokio::sync::Mutex<ApiServer>>,
    pub url: String,
    pub kind: Kind,
    /// `false` on a server that drops `strategy` and `preferredHolder`, as a 1.20 one does.
    keeps_newer_fields: bool,
}

impl LoopbackFactory {
    pub async fn start(kind: Kind) -> LoopbackFactory {
        Self::with(ApiServer::start().await, kind, true)
    }

    /// On a server that drops the fields it does not know, as Kubernetes 1.20 does.
    pub async fn start_v1_20(kind: Kind) -> LoopbackFactory {
        Self::with(ApiServer::start_v1_20().await, kind, false)
    }

    fn with(server: ApiServer, kind: Kind, keeps_newer_fields: bool) -> LoopbackFactory {
        let url = server.url();
        LoopbackFactory {
            server: Arc::new(tokio::sync::Mutex::new(server)),
            url,
            kind,
            keeps_newer_fields,
        }
    }

    /// Stops and starts the factory's server.
    pub fn control(&self) -> LoopbackControl {
        LoopbackControl(Arc::clone(&self.server))
    }
}

impl LockFactory for LoopbackFactory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        self.kind
            .open(|| loopback_client(&self.url), name, identity)
    }

    fn time_precision(&self) -> Duration {
        self.kind.time_precision()
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    fn keeps_newer_fields(&self) -> bool {
        self.keeps_newer_fields
    }

    async fn corrupt(&self, name: &str) -> bool {
        let server = self.server.lock().await;
        let resource = match self.kind {
            Kind::Lease => {
                server.set_spec_field(
                    NAMESPACE,
                    name,
                    "leaseDurationSeconds",
                    serde_json::json!(-1),
                );
                return true;
            }
            Kind::ConfigMap | Kind::ConfigMapsLeases => Resource::ConfigMap,
            Kind::Endpoints | Kind::EndpointsLeases => Resource::Endpoints,
        };
        server.modify(resource, NAMESPACE, name, |object| {
            object["metadata"]["annotations"][LEADER_ANNOTATION] =
                serde_json::json!(CORRUPT_ANNOTATION);
        });
        true
    }
}

impl KubeFactory for LoopbackFactory {
    fn client(&self) -> kube::Client {
        loopback_client(&self.url)
    }
}

/// Stops and starts a loopback server (for the outage check).
pub struct LoopbackControl(Arc<tokio::sync::Mutex<ApiServer>>);

impl ServerControl for LoopbackControl {
    async fn stop(&mut self) {
        self.0.lock().await.stop().await;
    }

    async fn start(&mut self) {
        self.0.lock().await.restart().await;
    }
}

/// The fault check of the suite on locks of `kind`: the loopback server stops for longer than
/// the lease and comes back; no two electors lead at once, and one leads again soon after.
pub async fn loopback_outage(kind: Kind) {
    let factory = LoopbackFactory::start(kind).await;
    let mut control = factory.control();
    server_restart_outage(&factory, &mut control).await;
}

// ---- what the loopback server copies from the real one ----

/// A Lease `name` as JSON gives it: `extra_meta` added to its metadata.
pub fn lease_json(name: &str, extra_meta: serde_json::Value, spec: serde_json::Value) -> Lease {
    let mut meta = serde_json::json!({"name": name});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        m.extend(extra.clone());
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": spec,
    }))
    .expect("a Lease")
}

/// Whether `result` is the API's refusal with status `code`.
pub fn is_status(result: &Result<impl std::fmt::Debug, kube::Error>, code: u16) -> bool {
    matches!(result, Err(kube::Error::Api(s)) if s.code == code)
}

/// A PUT that changes nothing keeps the `resourceVersion`, as on a real API server.
pub async fn an_identical_put_keeps_the_resource_version(factory: Option<impl KubeFactory>) {
    let Some(factory) = factory else {
        return;
    };
    let lock = factory.open(&unique_name("noop"), "a").await;
    let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
    let v1 = lock.create(&record).await.expect("create");
    let v2 = lock.update(&v1, &record).await.expect("identical update");
    assert_eq!(v1, v2, "a no-op PUT keeps the resourceVersion");
    let mut changed = record.clone();
    changed.leader_transitions += 1;
    let v3 = lock.update(&v2, &changed).await.expect("update");
    assert_ne!(v3, v2);
}

/// The uid of no object.
const SOME_UID: &str = "00000000-0000-0000-0000-000000000999";

/// A PUT of `object`, which carries a uid, to missing object `name`: the uid precondition
/// fails (409) and nothing is created.
async fn a_put_with_a_uid_creates_nothing<K>(api: &kube::Api<K>, name: &str, object: &K)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let refused = api
        .replace(name, &kube::api::PostParams::default(), object)
        .await;
    assert!(is_status(&refused, 409), "{refused:?}");
    assert!(api.get_opt(name).await.expect("get").is_none());
}

/// A handle read object `name` at `version`, and the object is deleted through `api` under it:
/// its update is a conflict (it sends the uid it read) and creates nothing.
async fn update_after_a_delete_conflicts<K>(
    api: &kube::Api<K>,
    name: &str,
    lock: &dyn ResourceLock,
    version: &Version,
    record: &LeaderElectionRecord,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    assert!(
        lock.update(version, record)
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert!(lock.get().await.expect("get").is_none());
}

/// A PUT to a missing Lease creates it unless the body carries `metadata.uid` (409); the
/// lock always sends the uid, so its update of a missing or deleted Lease is a conflict and
/// creates nothing.
pub async fn a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid(
    factory: Option<impl KubeFactory>,
) {
    let Some(factory) = factory else {
        return;
    };
    let api: kube::Api<Lease> = factory.api();
    let pp = kube::api::PostParams::default();
    let spec = serde_json::json!({"holderIdentity": "x", "leaseDurationSeconds": 15});
    let created_name = unique_name("put-created");
    let created = api
        .replace(
            &created_name,
            &pp,
            &lease_json(
                &created_name,
                serde_json::json!({"resourceVersion": "12345"}),
                spec.clone(),
            ),
        )
        .await
        .expect("a PUT without a uid creates the Lease");
    assert!(created.metadata.uid.is_some());
    let refused = unique_name("put-refused");
    let meta = serde_json::json!({"resourceVersion": "12345", "uid": SOME_UID});
    a_put_with_a_uid_creates_nothing(&api, &refused, &lease_json(&refused, meta, spec)).await;

    // The lock: a version from another Lease, on a handle that never read this one.
    let other_name = unique_name("other");
    let other = factory.open(&other_name, "a").await;
    let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
    let v = other.create(&record).await.expect("create");
    let absent = factory.open(&unique_name("absent"), "a").await;
    assert!(absent.update(&v, &record).await.unwrap_err().is_conflict());
    assert!(absent.get().await.expect("get").is_none());
    // A handle whose cached Lease was deleted meanwhile: the uid makes the PUT a conflict.
    let (_, v) = other.get().await.expect("get").expect("a record");
    update_after_a_delete_conflicts(&api, &other_name, &*other, &v, &record).await;
}

/// What the server does with a PUT to a missing object, and that the lock never creates one
/// by an update: ConfigMaps have no create-on-update (404); Endpoints do, unless the body
/// carries a uid (409); the annotation lock's update of a deleted object is a conflict and
/// creates nothing.
pub async fn a_put_to_a_missing_configmap_or_endpoints(factory: Option<impl KubeFactory>) {
    let Some(factory) = factory else {
        return;
    };
    let cms: kube::Api<ConfigMap> = factory.api();
    let eps: kube::Api<Endpoints> = factory.api();
    let pp = kube::api::PostParams::default();
    let name = unique_name("put");
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    let refused = cms.replace(&name, &pp, &cm).await;
    assert!(is_status(&refused, 404), "{refused:?}");
    let ep: Endpoints =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    eps.replace(&name, &pp, &ep)
        .await
        .expect("a PUT without a uid creates Endpoints");
    let other = unique_name("put-uid");
    let ep: Endpoints =
        serde_json::from_value(serde_json::json!({"metadata": {"name": other, "uid": SOME_UID}}))
            .unwrap();
    a_put_with_a_uid_creates_nothing(&eps, &other, &ep).await;

    // The lock: a handle whose cached object was deleted meanwhile gets a conflict, and
    // nothing is created.
    let gone = unique_name("gone");
    let lock = factory.open(&gone, "a").await;
    let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
    let v = lock.create(&record).await.expect("create");
    update_after_a_delete_conflicts(&eps, &gone, &*lock, &v, &record).await;
}

/// A Lease written by client-go (as `kubectl get lease -o json` shows one) reads as the record
/// client-go's `LeaseSpecToLeaderElectionRecord` gives, and our update keeps its labels, its
/// duration and its MicroTime to the microsecond.
pub async fn reads_client_go_lease_and_keeps_metadata(factory: Option<impl KubeFactory>) {
    let Some(factory) = factory else {
        return;
    };
    let api: kube::Api<Lease> = factory.api();
    let name = unique_name("kcm");
    let lease = lease_json(
        &name,
        serde_json::json!({"labels": {"app": "kcm"}}),
        serde_json::json!({
            "holderIdentity": "master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-11-21T11:59:00.000000Z",
            "renewTime": "2026-11-21T12:00:01.250000Z",
            "leaseTransitions": 4
        }),
    );
    api.create(&kube::api::PostParams::default(), &lease)
        .await
        .expect("create");
    let lock = factory.open(&name, "ours").await;
    let (record, version) = lock.get().await.expect("get").expect("a record");
    assert_eq!(
        record.to_json().expect("json"),
        r#"{"holderIdentity":"master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11","leaseDurationSeconds":15,"acquireTime":"2026-11-21T11:59:00Z","renewTime":"2026-11-21T12:00:01Z","leaderTransitions":4}"#
    );
    let mut taken = record.clone();
    taken.holder_identity = "ours".to_owned();
    taken.leader_transitions += 1;
    lock.update(&version, &taken).await.expect("update");
    let stored = api.get(&name).await.expect("get");
    assert_eq!(
        stored
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app"))
            .map(String::as_str),
        Some("kcm"),
        "an update keeps the Lease's labels"
    );
    let spec = stored.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("ours"));
    assert_eq!(spec.lease_transitions, Some(5));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(
        spec.renew_time.map(|t| t.0.to_string()),
        Some("2026-11-21T12:00:01.25Z".to_owned()),
        "MicroTime kept to the microsecond"
    );
}

/// A server that drops `strategy` and `preferredHolder` (a 1.20 one, a default v1.34 one):
/// they read back unset, and an elector still leads and renews.
pub async fn an_elector_works_on_a_server_that_drops_newer_fields(
    factory: Option<impl KubeFactory>,
) {
    let Some(factory) = factory else {
        return;
    };
    let lock = factory.open(&unique_name("newer"), "a").await;
    let mut record = LeaderElectionRecord::new("b", 15, SystemTime::now());
    record.strategy = Some("OldestEmulationVersion".to_owned());
    record.preferred_holder = Some("b".to_owned());
    lock.create(&record).await.expect("create");
    let (read, _) = lock.get().await.expect("get").expect("a record");
    assert_eq!((read.strategy, read.preferred_holder), (None, None));
    let elector = lease_elect::LeaderElector::new(
        lease_elect::ElectionConfig::builder()
            .shared_lock(factory.open(&unique_name("newer"), "a").await)
            // The first term on a fresh lock at once: this checks the elector's writes.
            .absent_record_wait(false)
            .build()
            .expect("config"),
    );
    assert!(elector.try_acquire_or_renew().await.expect("acquire"));
    assert!(elector.try_acquire_or_renew().await.expect("renew"));
}

/// A Lease `PUT` without a `resourceVersion` is refused (422): the Lease strategy allows no
/// unconditional update.
pub async fn an_unconditional_lease_put_is_refused(factory: &impl KubeFactory) {
    let api: kube::Api<Lease> = factory.api();
    let pp = kube::api::PostParams::default();
    let name = unique_name("unconditional");
    let spec = serde_json::json!({"holderIdentity": "x", "leaseDurationSeconds": 15});
    api.create(&pp, &lease_json(&name, serde_json::json!({}), spec.clone()))
        .await
        .expect("create");
    let refused = api
        .replace(&name, &pp, &lease_json(&name, serde_json::json!({}), spec))
        .await;
    assert!(is_status(&refused, 422), "{refused:?}");
}
