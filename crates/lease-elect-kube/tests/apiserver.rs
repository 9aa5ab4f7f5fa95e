//! The lease-elect conformance suite on the Kubernetes locks against a real kube-apiserver
//! v1.34.4 (on etcd v3.6.4, both built from `reference/` by `scripts/reference.sh`):
//! [`LeaseLock`], [`ConfigMapLock`], [`EndpointsLock`] and client-go's `configmapsleases` and
//! `endpointsleases` multi-locks, on the server `scripts/servers.sh` starts
//! (`LEASE_ELECT_KUBE_URL`, `_TOKEN`, `_CA`, `_ETCD_ENDPOINT`); the server outages on servers of
//! the tests' own (`KUBE_REFERENCE_BIN`). Without them every test fails under `CI` and is skipped
//! loudly elsewhere.
//!
//! Also checked here, against the real server: what the loopback server of
//! `lease_elect_kube::testing` (which the other tests of this crate use) says about it: a `PUT`
//! to a missing object, a `PUT` that changes nothing, an unconditional `PUT`, the Lease's
//! validation, and the fields a default v1.34 server drops. Those checks are written once, in
//! `common`, and run on the loopback server too (`tests/conformance.rs`, `tests/annotation.rs`).

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{CORRUPT_ANNOTATION, Kind, KubeFactory, NAMESPACE, is_status, lease_json, lease_lock};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace};
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, server_restart_outage};
use lease_elect::testing::process::server_missing;
use lease_elect::{LeaderElectionRecord, ResourceLock};
use lease_elect_kube::LEADER_ANNOTATION;
use lease_elect_kube::testing::apiserver::{Connection, ETCD_VAR, KubeApiServer};

/// Connect and read timeout of the clients.
const TIMEOUT: Duration = Duration::from_secs(2);

struct Factory {
    config: kube::Config,
    /// The API server's etcd, to corrupt a Lease where the API would refuse to.
    etcd: String,
    kind: Kind,
}

impl Factory {
    async fn new(connection: &Connection, etcd: String, kind: Kind) -> Factory {
        let config = connection
            .config(NAMESPACE, Some(TIMEOUT))
            .await
            .expect("a client configuration");
        let factory = Factory { config, etcd, kind };
        ensure_namespace(&factory.client()).await;
        factory
    }
}

impl KubeFactory for Factory {
    fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config.clone()).expect("a kube client")
    }
}

/// Creates the test namespace unless it exists (a real server refuses objects in a namespace
/// that does not).
async fn ensure_namespace(client: &kube::Client) {
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}})).unwrap();
    match api.create(&kube::api::PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create the namespace {NAMESPACE}: {e}"),
    }
}

impl LockFactory for Factory {
    /// The object locks of a multi-lock share one client.
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        let c = self.client();
        self.kind.open(|| c.clone(), name, identity)
    }

    fn time_precision(&self) -> Duration {
        self.kind.time_precision()
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    /// A default v1.34 API server drops a Lease's `strategy` and `preferredHolder`: the
    /// feature gate CoordinatedLeaderElection is off (beta, off by default), and the Lease
    /// strategy's `PrepareForCreate`/`PrepareForUpdate` clear them then. The annotation
    /// locks keep them in their JSON.
    fn keeps_newer_fields(&self) -> bool {
        !matches!(self.kind, Kind::Lease)
    }

    async fn corrupt(&self, name: &str) -> bool {
        match self.kind {
            Kind::Lease => corrupt_lease_in_storage(self, name).await,
            Kind::ConfigMap | Kind::ConfigMapsLeases => {
                set_annotation::<ConfigMap>(&self.api(), name, CORRUPT_ANNOTATION).await;
            }
            Kind::Endpoints | Kind::EndpointsLeases => {
                set_annotation::<Endpoints>(&self.api(), name, CORRUPT_ANNOTATION).await;
            }
        }
        true
    }
}

/// Replaces the leader annotation of object `name` through the API (which takes any string).
async fn set_annotation<K>(api: &kube::Api<K>, name: &str, value: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let mut object = api.get(name).await.expect("get the object to corrupt");
    object
        .meta_mut()
        .annotations
        .get_or_insert_default()
        .insert(LEADER_ANNOTATION.to_owned(), value.to_owned());
    api.replace(name, &kube::api::PostParams::default(), &object)
        .await
        .expect("the API server takes any annotation");
}

/// The API server validates every Lease it is given (`leaseDurationSeconds` > 0,
/// `leaseTransitions` >= 0, times as MicroTime; `validation_refuses_what_the_lock_refuses`
/// checks it), so no write through the API leaves a Lease that the mapping refuses. A Lease
/// that never passed that validation can still be in storage (written by another etcd client,
/// restored from a backup, left by a server with other rules), and the API server serves what
/// etcd holds without validating it again. So this writes one to the API server's etcd, at
/// the Lease's key, as JSON (the storage decodes JSON as well as its own protobuf), with
/// `leaseDurationSeconds: -1`; `get` must report it corrupt.
async fn corrupt_lease_in_storage(factory: &Factory, name: &str) {
    let api: kube::Api<Lease> = factory.api();
    let lease = api.get(name).await.expect("get the Lease to corrupt");
    let mut stored = serde_json::to_value(&lease).expect("json");
    stored["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    stored["spec"]["leaseDurationSeconds"] = serde_json::json!(-1);
    let mut etcd = etcd_client::Client::connect([factory.etcd.as_str()], None)
        .await
        .expect("connect to the API server's etcd");
    etcd.put(
        format!("/registry/leases/{NAMESPACE}/{name}"),
        stored.to_string(),
        None,
    )
    .await
    .expect("put the Lease into etcd");
    // The API server reads a single object from etcd (no resourceVersion: a quorum read), so
    // the next `get` sees it.
    let served = api.get(name).await.expect("the API server serves it");
    assert_eq!(
        served.spec.and_then(|s| s.lease_duration_seconds),
        Some(-1),
        "the API server serves the Lease as stored"
    );
}

/// The server of `scripts/servers.sh`, or `None` after reporting it missing (a failure under
/// `CI`).
async fn shared(kind: Kind) -> Option<Factory> {
    let connection = match Connection::from_env() {
        Ok(c) => c,
        Err(missing) => {
            server_missing(&missing);
            return None;
        }
    };
    let Some(etcd) = std::env::var(ETCD_VAR).ok().filter(|v| !v.is_empty()) else {
        server_missing(&format!(
            "{ETCD_VAR} is not set (the API server's etcd; scripts/servers.sh sets it)"
        ));
        return None;
    };
    Some(Factory::new(&connection, etcd, kind).await)
}

async fn leases() -> Option<Factory> {
    shared(Kind::Lease).await
}

common::conformance_per_kind!(shared:
    lease => Lease,
    configmap => ConfigMap,
    endpoints => Endpoints,
    configmaps_leases => ConfigMapsLeases,
    endpoints_leases => EndpointsLeases,
);

// ---- outages, on servers of the tests' own ----

/// A kube-apiserver of the test's own, or `None` after reporting why not (a failure under
/// `CI`).
async fn own_server() -> Option<KubeApiServer> {
    if let Err(missing) = lease_elect_kube::testing::apiserver::binaries() {
        server_missing(&missing);
        return None;
    }
    Some(
        KubeApiServer::start()
            .await
            .unwrap_or_else(|e| panic!("start a kube-apiserver: {e}")),
    )
}

/// What an outage stops: the API server process, or its etcd under a running API server.
#[derive(Clone, Copy)]
enum Part {
    ApiServer,
    Etcd,
}

struct Control {
    server: KubeApiServer,
    part: Part,
}

impl ServerControl for Control {
    async fn stop(&mut self) {
        match self.part {
            Part::ApiServer => tokio::task::block_in_place(|| self.server.kill()),
            Part::Etcd => tokio::task::block_in_place(|| self.server.kill_etcd()),
        }
    }

    /// Returns once the API server answers `ok` on `/readyz` (which checks etcd too).
    async fn start(&mut self) {
        let started = std::time::Instant::now();
        match self.part {
            Part::ApiServer => {
                self.server
                    .restart(Duration::from_secs(60))
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            Part::Etcd => {
                tokio::task::block_in_place(|| self.server.restart_etcd(Duration::from_secs(10)))
                    .unwrap_or_else(|e| panic!("{e}"));
                self.server
                    .connection()
                    .wait_ready(Duration::from_secs(60))
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        println!("ready again {:?} after the start", started.elapsed());
    }
}

async fn outage(part: Part) {
    let Some(server) = own_server().await else {
        return;
    };
    let factory = Factory::new(
        server.connection(),
        server.etcd_endpoint().to_owned(),
        Kind::Lease,
    )
    .await;
    let mut control = Control { server, part };
    server_restart_outage(&factory, &mut control).await;
}

/// kube-apiserver killed (SIGKILL) under a leader on a Lease, started again 3 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_apiserver_outage() {
    outage(Part::ApiServer).await;
}

/// The API server's etcd killed (SIGKILL) under a leader on a Lease, the API server up; etcd
/// started again 3 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_etcd_outage() {
    outage(Part::Etcd).await;
}

// ---- what the loopback server says about the real one ----

/// The server is the version the docs name.
#[tokio::test]
async fn server_is_v1_34_4() {
    let Some(factory) = leases().await else {
        return;
    };
    let info = factory
        .client()
        .apiserver_version()
        .await
        .expect("/version");
    assert_eq!(info.git_version, "v1.34.4");
}

/// The validation the loopback server copies: `leaseDurationSeconds` <= 0 and a negative
/// `leaseTransitions` are refused (422), and so is a Lease `PUT` without a `resourceVersion`
/// (the Lease strategy allows no unconditional update).
#[tokio::test]
async fn validation_refuses_what_the_lock_refuses() {
    let Some(factory) = leases().await else {
        return;
    };
    let api: kube::Api<Lease> = factory.api();
    let pp = kube::api::PostParams::default();
    let name = lease_elect::testing::unique_name("valid");
    for spec in [
        serde_json::json!({"holderIdentity": "x", "leaseDurationSeconds": -1}),
        serde_json::json!({"holderIdentity": "x", "leaseDurationSeconds": 0}),
        serde_json::json!({"holderIdentity": "x", "leaseDurationSeconds": 15, "leaseTransitions": -1}),
    ] {
        let refused = api
            .create(&pp, &lease_json(&name, serde_json::json!({}), spec.clone()))
            .await;
        assert!(is_status(&refused, 422), "{spec}: {refused:?}");
    }
    common::an_unconditional_lease_put_is_refused(&factory).await;
}

/// A PUT that changes nothing keeps the `resourceVersion`.
#[tokio::test]
async fn an_identical_put_keeps_the_resource_version() {
    common::an_identical_put_keeps_the_resource_version(leases().await).await;
}

/// A PUT to a missing Lease creates it unless the body carries `metadata.uid` (409); the
/// lock always sends the uid, so its update of a missing or deleted Lease is a conflict and
/// creates nothing.
#[tokio::test]
async fn a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid() {
    common::a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid(leases().await).await;
}

/// ConfigMaps have no create-on-update (404); Endpoints do, unless the body carries a uid
/// (409); the annotation lock's update of a deleted object is a conflict and creates nothing.
#[tokio::test]
async fn a_put_to_a_missing_configmap_or_endpoints() {
    common::a_put_to_a_missing_configmap_or_endpoints(shared(Kind::Endpoints).await).await;
}

/// A Lease written by client-go reads as client-go reads it, and our update keeps its labels,
/// its duration and its MicroTime to the microsecond.
#[tokio::test]
async fn reads_client_go_lease_and_keeps_metadata() {
    common::reads_client_go_lease_and_keeps_metadata(leases().await).await;
}

/// A default v1.34 server drops `strategy` and `preferredHolder` (CoordinatedLeaderElection
/// is off), as the loopback server's 1.20 mode does; an elector still leads and renews.
#[tokio::test]
async fn a_default_server_drops_newer_fields_and_an_elector_still_works() {
    common::an_elector_works_on_a_server_that_drops_newer_fields(leases().await).await;
}

/// A default v1.34 server serves no `coordination.k8s.io/v1beta1` (LeaseCandidate is a beta
/// API, off by default): registering a candidate for coordinated election fails there (404).
#[tokio::test]
async fn a_default_server_serves_no_lease_candidates() {
    use lease_elect::coordinated::{Candidate, CandidateStore};
    let Some(factory) = leases().await else {
        return;
    };
    let candidates = lease_elect_kube::LeaseCandidates::new(
        factory.client(),
        NAMESPACE,
        lease_elect::testing::unique_name("cle"),
        Duration::from_secs(60),
    );
    let c = Candidate::new("a", "1.34".parse().unwrap(), "1.34.4".parse().unwrap());
    let refused = candidates
        .register(&c)
        .await
        .expect_err("no LeaseCandidates");
    assert!(
        refused
            .to_string()
            .contains("the server could not find the requested resource"),
        "{refused}"
    );
}

// ---- the permissions of the crate docs ----

/// A service account of the test namespace whose Role allows `verbs` on Leases, and a client
/// authenticated as it (a token from the TokenRequest API).
async fn service_account_client(factory: &Factory, verbs: &[&str]) -> kube::Client {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let pp = kube::api::PostParams::default();
    let name = lease_elect::testing::unique_name("elector");
    let sas: kube::Api<ServiceAccount> = factory.api();
    let sa: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    sas.create(&pp, &sa)
        .await
        .expect("create the service account");
    let roles: kube::Api<Role> = factory.api();
    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs}],
    }))
    .unwrap();
    roles.create(&pp, &role).await.expect("create the role");
    let bindings: kube::Api<RoleBinding> = factory.api();
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
    }))
    .unwrap();
    bindings
        .create(&pp, &binding)
        .await
        .expect("create the role binding");
    let request: TokenRequest =
        serde_json::from_value(serde_json::json!({"spec": {"audiences": []}})).unwrap();
    let token = sas
        .create_token_request(&name, &pp, &request)
        .await
        .expect("a token for the service account")
        .status
        .expect("the token")
        .token;
    let mut config = factory.config.clone();
    config.auth_info.token = None;
    config.headers.push((
        http::header::AUTHORIZATION,
        format!("Bearer {token}").parse().expect("a header value"),
    ));
    kube::Client::try_from(config).expect("a client")
}

/// The crate docs' permissions (`get`, `watch`, `create`, `update`, `delete` on Leases) are
/// enough for every call of the lock, its wake-ups included; without `watch` the lock still
/// works, and a wait for a change resolves no sooner than the caller's timer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_permissions_suffice() {
    let Some(factory) = leases().await else {
        return;
    };
    for watch in [true, false] {
        let verbs: &[&str] = if watch {
            &["get", "watch", "create", "update", "delete"]
        } else {
            &["get", "create", "update", "delete"]
        };
        let client = service_account_client(&factory, verbs).await;
        let name = lease_elect::testing::unique_name("rbac");
        let lock = Arc::new(lease_lock(client.clone(), &name, "a"));
        let other = lease_lock(client.clone(), &name, "b");
        // RBAC takes the new binding up at once, but give it a moment on a busy machine.
        let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
        let mut created = lock.create(&record).await;
        for _ in 0..50 {
            match &created {
                Err(e) if e.to_string().contains("forbidden") => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    created = lock.create(&record).await;
                }
                _ => break,
            }
        }
        let v1 = created.unwrap_or_else(|e| panic!("create (watch: {watch}): {e}"));
        let (_, seen) = lock.get().await.expect("get").expect("a record");
        assert_eq!(seen, v1);
        let waiter = Arc::clone(&lock);
        let wait = tokio::spawn(async move { waiter.wait_for_change(Some(&v1)).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut changed = record.clone();
        changed.holder_identity = "b".to_owned();
        changed.leader_transitions = 1;
        let v2 = other.update(&seen, &changed).await.expect("update");
        let woken = tokio::time::timeout(Duration::from_secs(2), wait).await;
        assert_eq!(
            woken.is_ok(),
            watch,
            "a waiting handle is woken by the change exactly when it may watch"
        );
        other.delete(&v2).await.expect("delete");
        assert!(lock.get().await.expect("get").is_none());
    }
    // Without `update` the lock cannot renew: a permanent error, not a conflict.
    let client = service_account_client(&factory, &["get", "watch", "create"]).await;
    let name = lease_elect::testing::unique_name("rbac-ro");
    let lock = lease_lock(client, &name, "a");
    let record = LeaderElectionRecord::new("a", 15, SystemTime::now());
    let mut created = lock.create(&record).await;
    for _ in 0..50 {
        match &created {
            Err(e) if e.to_string().contains("forbidden") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                created = lock.create(&record).await;
            }
            _ => break,
        }
    }
    let v = created.expect("create");
    let refused = lock
        .update(&v, &record)
        .await
        .expect_err("no update permission");
    assert!(
        !refused.is_conflict() && !refused.is_retryable(),
        "403 is permanent: {refused}"
    );
}
