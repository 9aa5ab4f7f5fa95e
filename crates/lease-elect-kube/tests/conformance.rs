//! The lease-elect conformance suite against a loopback Kubernetes API server written for
//! these tests ([`apiserver`]): no API server can be installed here. What this does and does
//! not prove about a real cluster is written in docs/backends.md.

mod apiserver;

use std::sync::Arc;
use std::time::Duration;

use lease_elect::ResourceLock;
use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_outage};
use lease_elect_kube::LeaseLock;

use apiserver::ApiServer;

const NAMESPACE: &str = "lease-elect-test";

struct Factory {
    server: Arc<tokio::sync::Mutex<ApiServer>>,
    url: String,
}

fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_namespace = NAMESPACE.to_owned();
    config.connect_timeout = Some(Duration::from_secs(1));
    config.read_timeout = Some(Duration::from_secs(2));
    kube::Client::try_from(config).expect("a kube client")
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            LeaseLock::new(client(&self.url), NAMESPACE, name, identity)
                .with_timeout(Duration::from_secs(2)),
        )
    }

    fn time_precision(&self) -> Duration {
        Duration::from_micros(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        self.server.lock().await.set_spec_field(
            NAMESPACE,
            name,
            "leaseDurationSeconds",
            serde_json::json!(-1),
        );
        true
    }
}

async fn new_factory() -> Factory {
    let server = ApiServer::start().await;
    let url = server.url();
    Factory {
        server: Arc::new(tokio::sync::Mutex::new(server)),
        url,
    }
}

async fn factory() -> Option<Factory> {
    Some(new_factory().await)
}

lease_elect::conformance_tests!(factory);

struct Control(Arc<tokio::sync::Mutex<ApiServer>>);

impl ServerControl for Control {
    async fn stop(&mut self) {
        self.0.lock().await.stop().await;
    }

    async fn start(&mut self) {
        self.0.lock().await.restart().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let factory = new_factory().await;
    let mut control = Control(Arc::clone(&factory.server));
    let timing = Timing::default();
    let report = server_outage(
        &factory,
        &mut control,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound() + Duration::from_secs(1),
    )
    .await;
    println!("{report:?}");
}

/// A Lease written by client-go (as `kubectl get lease -o json` shows one) reads as the record
/// client-go's `LeaseSpecToLeaderElectionRecord` gives, and our update keeps its labels.
#[tokio::test]
async fn reads_client_go_lease_and_keeps_metadata() {
    let factory = new_factory().await;
    let http = client(&factory.url);
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(http, NAMESPACE);
    let lease: k8s_openapi::api::coordination::v1::Lease =
        serde_json::from_value(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kube-controller-manager", "labels": {"app": "kcm"}},
            "spec": {
                "holderIdentity": "master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11",
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-11-21T11:59:00.000000Z",
                "renewTime": "2026-11-21T12:00:01.250000Z",
                "leaseTransitions": 4
            }
        }))
        .expect("a Lease");
    api.create(&kube::api::PostParams::default(), &lease)
        .await
        .expect("create");
    let lock = factory.open("kube-controller-manager", "ours").await;
    let (record, version) = lock.get().await.expect("get").expect("a record");
    assert_eq!(
        record.to_json().expect("json"),
        r#"{"holderIdentity":"master-1_6f0c2f6e-8a0e-4a5b-9f0e-7c1d3e0b2a11","leaseDurationSeconds":15,"acquireTime":"2026-11-21T11:59:00Z","renewTime":"2026-11-21T12:00:01Z","leaderTransitions":4}"#
    );
    let mut taken = record.clone();
    taken.holder_identity = "ours".to_owned();
    taken.leader_transitions += 1;
    lock.update(&version, &taken).await.expect("update");
    let stored = api.get("kube-controller-manager").await.expect("get");
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
}
