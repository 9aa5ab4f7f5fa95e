//! Loading files as kubectl writes them: by kind, with nothing dropped silently.

use std::path::PathBuf;

use sched_core::model::{
    ClusterObjects, LeftOut, LoadErrorKind, Position, Role, TaintEffect, TolerationOperator,
    WorkloadKind, load_bytes, load_file, pod_requests,
};
use sched_core::policy::Policy;
use sched_core::snapshot::{Snapshot, SnapshotError};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/load")
        .join(name)
}

fn load(name: &str, role: Role) -> ClusterObjects {
    load_file(data(name), role).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn mixed_kubectl_list_splits_by_kind() {
    let objects = load("nodes-pods-services.json", Role::Mixed);
    assert_eq!(objects.nodes.len(), 3);
    assert_eq!(objects.pods.len(), 8);
    let kinds: Vec<(WorkloadKind, &str)> = objects
        .workloads
        .iter()
        .map(|w| (w.kind, w.name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (WorkloadKind::Service, "web"),
            (WorkloadKind::Service, "kubernetes"),
            (WorkloadKind::ReplicaSet, "web-7d9c5b8f6d"),
        ]
    );
    assert!(objects.workloads[1].selector.match_labels.is_empty());
    assert_eq!(
        objects.workloads[2].selector.match_labels["pod-template-hash"],
        "7d9c5b8f6d"
    );
    assert_eq!(objects.other_kinds.len(), 2);
    assert_eq!(objects.other_kinds["ConfigMap"], 1);
    assert_eq!(objects.other_kinds["Deployment"], 1);
}

#[test]
fn null_fields_and_empty_toleration_fields_are_accepted() {
    let objects = load("nodes-pods-services.json", Role::Mixed);
    // "images": null and "taints": null, as real kubectl files have them.
    assert!(objects.nodes[0].status.images.is_empty());
    assert!(objects.nodes[0].spec.taints.is_empty());
    assert_eq!(
        objects.nodes[2].spec.taints[0].effect,
        TaintEffect::NoSchedule
    );
    let proxy = &objects.pods[0];
    assert_eq!(proxy.metadata.name, "kube-proxy-7xk2p");
    let t = &proxy.spec.tolerations[1];
    assert_eq!(t.key, "CriticalAddonsOnly");
    assert_eq!(t.operator, TolerationOperator::Equal);
    assert_eq!(t.effect, None);
}

#[test]
fn into_cluster_reports_every_pod_it_leaves_out() {
    let cluster = load("nodes-pods-services.json", Role::Mixed)
        .into_cluster()
        .unwrap();
    assert_eq!(cluster.nodes.len(), 3);
    let bound: Vec<&str> = cluster
        .bound
        .iter()
        .map(|p| p.metadata.name.as_str())
        .collect();
    assert_eq!(
        bound,
        [
            "kube-proxy-7xk2p",
            "coredns-6f6b679f8f-q2w9d",
            "web-7d9c5b8f6d-m8v2c"
        ]
    );
    assert_eq!(cluster.pending.len(), 1);
    assert_eq!(cluster.pending[0].metadata.name, "web-7d9c5b8f6d-p4k7r");
    let r = &cluster.report;
    let unknown = r.get(LeftOut::UnknownNode).unwrap();
    assert_eq!(unknown.count, 1);
    assert_eq!(
        unknown.examples,
        ["shop/cart-5c4b8d9f7-zt6wq (node \"ip-10-0-9-99.eu-west-1.compute.internal\")"]
    );
    assert_eq!(
        r.get(LeftOut::DuplicatePod).unwrap().examples,
        ["shop/web-7d9c5b8f6d-p4k7r"]
    );
    assert_eq!(
        r.get(LeftOut::FinishedPod).unwrap().examples,
        ["shop/report-28851840-zz9lp"]
    );
    assert_eq!(
        r.get(LeftOut::PendingPodBeingDeleted).unwrap().examples,
        ["shop/web-7d9c5b8f6d-d3x8n"]
    );
    assert_eq!(r.get(LeftOut::OtherKind).unwrap().count, 2);
    assert!(r.has_warnings());
    let text = r.to_string();
    assert!(
        text.starts_with(
            "warning: 1 pod bound to a node that is not in the cluster, left out: shop/cart-5c4b8d9f7-zt6wq"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "warning: 2 objects of kinds not read here, left out: 1 ConfigMap, 1 Deployment"
        ),
        "{text}"
    );
    assert!(
        text.contains("note: 1 pending pod being deleted, not scheduled"),
        "{text}"
    );
    assert_eq!(cluster.workloads.len(), 3);
}

#[test]
fn swapped_files_name_the_file_item_and_both_kinds() {
    let err = load_file(data("pods.json"), Role::Nodes).unwrap_err();
    assert!(
        err.to_string().ends_with(
            r#"pods.json: items[0]: expected a Node (this file holds nodes), found a Pod "kube-system/kube-proxy-7xk2p""#
        ),
        "{err}"
    );
    assert!(
        matches!(err.kind(), LoadErrorKind::WrongKind { at: Position(Some(0)), expected: "Node", found, .. } if found == "Pod")
    );
    let err = load_file(data("nodes.json"), Role::Pods).unwrap_err();
    assert!(
        err.to_string().ends_with(
            r#"nodes.json: items[0]: expected a Pod (this file holds pods), found a Node "ip-10-0-1-12.eu-west-1.compute.internal""#
        ),
        "{err}"
    );
    // A typed List's items without `kind` take the List's.
    let err = load_file(data("podlist.json"), Role::Nodes).unwrap_err();
    assert!(
        matches!(err.kind(), LoadErrorKind::WrongKind { found, .. } if found == "Pod"),
        "{err}"
    );
    // The mixed file is not a nodes file either.
    let err = load_file(data("nodes-pods-services.json"), Role::Nodes).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            LoadErrorKind::WrongKind {
                at: Position(Some(3)),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn typed_lists_and_lists_load_the_same_objects() {
    let a = load("nodes.json", Role::Nodes);
    let b = load("nodelist.json", Role::Nodes);
    assert_eq!(a.nodes, b.nodes);
    let a = load("pods.json", Role::Pods);
    let b = load("podlist.json", Role::Pods);
    assert_eq!(a.pods, b.pods);
    let c = load("podlist.json", Role::Mixed);
    assert_eq!(a.pods, c.pods);
}

#[test]
fn duplicate_node_names_name_the_file_and_both_items() {
    let err = load("nodes-duplicate.json", Role::Nodes)
        .into_cluster()
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            r#"nodes-duplicate.json: items[2]: node "ip-10-0-1-12.eu-west-1.compute.internal" is already defined at items[0]"#
        ),
        "{err}"
    );
    let mut objects = load("nodes.json", Role::Nodes);
    objects.extend(load("pods.json", Role::Pods));
    objects.extend(load("nodes-more.json", Role::Nodes));
    let err = objects.into_cluster().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("nodes-more.json: items[1]: node \"ip-10-0-2-40"),
        "{text}"
    );
    assert!(text.contains("already defined at "), "{text}");
    assert!(text.ends_with("nodes.json: items[1]"), "{text}");
    assert!(!text.contains("pods.json"), "{text}");
}

#[test]
fn empty_names_are_errors() {
    let err = load_bytes(
        "pods.json",
        br#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"a","namespace":"x"}},
            {"kind":"Pod","metadata":{"name":null,"namespace":"x"}}]}"#,
        Role::Pods,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pods.json: items[1]: Pod has an empty metadata.name"
    );
}

#[test]
fn huge_requests_saturate_and_a_node_sum_never_wraps() {
    let mut objects = load("nodes.json", Role::Nodes);
    objects.extend(load("pods-huge-requests.json", Role::Pods));
    let cluster = objects.into_cluster().unwrap();
    let hog = &cluster.pending[0];
    let r = pod_requests(hog);
    assert_eq!((r.milli_cpu, r.memory), (i64::MAX, i64::MAX));
    // Two bound pods of 5Ei on one node would wrap its memory sum: refused, not wrapped.
    let err = Snapshot::from_objects(cluster.nodes.clone(), cluster.bound.clone()).unwrap_err();
    assert_eq!(
        err,
        SnapshotError::RequestOverflow {
            pod: "batch/hog-bound-1".into(),
            node: "ip-10-0-1-12.eu-west-1.compute.internal".into(),
        }
    );
    // With one of them, the saturated pending pod fits nowhere.
    let snapshot = Snapshot::from_objects(cluster.nodes, cluster.bound[..1].to_vec()).unwrap();
    let profile = Policy::kube_default().compile().unwrap();
    let mut cache = profile.create_cache();
    assert!(profile.schedule(&mut cache, hog, &snapshot).is_err());
}

#[test]
fn byte_order_mark_is_skipped_and_utf16_named() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(data("nodes.json")).unwrap());
    let objects = load_bytes("nodes.json", &bytes, Role::Nodes).unwrap();
    assert_eq!(objects.nodes.len(), 3);
    let utf16: Vec<u8> = "\u{feff}{}"
        .encode_utf16()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    let err = load_bytes("nodes.json", &utf16, Role::Nodes).unwrap_err();
    assert!(matches!(
        err.kind(),
        LoadErrorKind::Utf16 { big_endian: false }
    ));
    assert!(err.to_string().contains("UTF-16"), "{err}");
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = load_file(data("no-such-file.json"), Role::Nodes).unwrap_err();
    assert!(matches!(err.kind(), LoadErrorKind::Io(_)));
    assert!(err.file().unwrap().ends_with("no-such-file.json"));
}

#[test]
fn namespaces_are_read_for_namespace_selectors() {
    let objects = load_bytes(
        "cluster.json",
        br#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "payments", "labels": {"team": "payments",
                          "kubernetes.io/metadata.name": "payments"}},
             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": null}}
        ]}"#,
        Role::Mixed,
    )
    .unwrap();
    assert!(objects.other_kinds.is_empty());
    let cluster = objects.into_cluster().unwrap();
    let names: Vec<&str> = cluster
        .namespaces
        .iter()
        .map(|n| n.metadata.name.as_str())
        .collect();
    assert_eq!(names, ["payments", "default"]);
    let mut labels = sched_core::snapshot::NamespaceLabels::new();
    labels.extend_from(&cluster.namespaces);
    assert_eq!(labels.labels_of("payments").unwrap()["team"], "payments");
    assert!(labels.labels_of("default").unwrap().is_empty());
    let unnamed = load_bytes(
        "ns.json",
        br#"[{"kind": "Namespace", "metadata": {}}]"#,
        Role::Mixed,
    )
    .unwrap_err();
    assert!(unnamed.to_string().contains("Namespace"), "{unnamed}");
}
