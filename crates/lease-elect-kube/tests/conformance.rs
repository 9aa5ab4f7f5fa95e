//! The lease-elect conformance suite on [`LeaseLock`] against the loopback Kubernetes API
//! server of [`lease_elect_kube::testing`]: no API server can be installed here. What this does
//! and does not prove about a real cluster is written in docs/backends.md.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Kind, KubeFactory, LoopbackFactory, NAMESPACE};
use lease_elect::testing::election::Timing;

async fn factory() -> Option<LoopbackFactory> {
    common::loopback(Kind::Lease).await
}

lease_elect::conformance_tests!(factory);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    common::loopback_outage(Kind::Lease).await;
}

/// A Lease written by client-go (as `kubectl get lease -o json` shows one) reads as the record
/// client-go's `LeaseSpecToLeaderElectionRecord` gives, and our update keeps its labels, its
/// duration and its MicroTime to the microsecond.
#[tokio::test]
async fn reads_client_go_lease_and_keeps_metadata() {
    common::reads_client_go_lease_and_keeps_metadata(factory().await).await;
}

/// A factory on a server that drops `strategy` and `preferredHolder`, as a 1.20 one does.
async fn v1_20_factory() -> Option<LoopbackFactory> {
    Some(LoopbackFactory::start_v1_20(Kind::Lease).await)
}

/// The whole suite against a server that drops the fields it does not know (Kubernetes 1.20).
mod v1_20 {
    use super::v1_20_factory;

    lease_elect::conformance_tests!(v1_20_factory);
}

/// A PUT that changes nothing keeps the `resourceVersion`, as on a real API server.
#[tokio::test]
async fn an_identical_put_keeps_the_resource_version() {
    common::an_identical_put_keeps_the_resource_version(factory().await).await;
}

/// A PUT to a missing Lease creates it unless the body carries `metadata.uid` (409); the lock
/// always sends the uid, so its update of a missing or deleted Lease is a conflict and creates
/// nothing.
#[tokio::test]
async fn a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid() {
    common::a_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid(factory().await).await;
}

/// A 1.20 server drops `strategy` and `preferredHolder`; the elector still leads and renews.
#[tokio::test]
async fn an_elector_works_on_a_server_that_drops_newer_fields() {
    common::an_elector_works_on_a_server_that_drops_newer_fields(v1_20_factory().await).await;
}

/// Coordinated election on the API server: candidates as LeaseCandidate objects, electors and
/// the coordinator on `LeaseLock`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election() {
    const TTL: Duration = Duration::from_secs(2);
    let factory = LoopbackFactory::start(Kind::Lease).await;
    let election = lease_elect::testing::unique_name("cle");
    let candidates =
        lease_elect_kube::LeaseCandidates::new(factory.client(), NAMESPACE, election, TTL);
    let report = lease_elect::testing::coordinated::coordinated_election(
        &factory,
        Arc::new(candidates),
        TTL,
        Timing::default(),
    )
    .await;
    println!("{report:?}");
}

/// LeaseCandidates as the API server stores them, and a PUT without a resourceVersion refused
/// for Leases (422) as the Lease strategy refuses unconditional updates.
#[tokio::test]
async fn lease_candidates_stored_and_unconditional_lease_put_refused() {
    use lease_elect::coordinated::{Candidate, CandidateStore};
    use lease_elect_kube::testing::Resource;
    let factory = LoopbackFactory::start(Kind::Lease).await;
    let candidates = lease_elect_kube::LeaseCandidates::new(
        factory.client(),
        NAMESPACE,
        "sched",
        Duration::from_secs(60),
    );
    let c = Candidate::new("node-a", "1.33".parse().unwrap(), "1.34.1".parse().unwrap())
        .with_strategy("example.com/custom")
        .unwrap();
    candidates.register(&c).await.expect("register");
    candidates.register(&c).await.expect("renew");
    let stored = factory
        .server
        .lock()
        .await
        .object(Resource::LeaseCandidate, NAMESPACE, "sched-node-a")
        .expect("stored");
    assert_eq!(stored["spec"]["leaseName"], "sched");
    assert_eq!(stored["spec"]["binaryVersion"], "1.34.1");
    assert_eq!(stored["spec"]["emulationVersion"], "1.33.0");
    assert_eq!(stored["spec"]["strategy"], "example.com/custom");
    let renew = stored["spec"]["renewTime"].as_str().expect("renewTime");
    assert!(
        renew.len() == 27 && renew.ends_with('Z'),
        "MicroTime: {renew}"
    );
    assert_eq!(candidates.candidates().await.unwrap(), vec![c]);
    candidates.deregister("node-a").await.expect("deregister");
    assert!(candidates.candidates().await.unwrap().is_empty());

    common::an_unconditional_lease_put_is_refused(&factory).await;
}
