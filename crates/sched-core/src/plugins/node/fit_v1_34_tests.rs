//! kube v1.34's `fit_test.go` (`pkg/scheduler/framework/plugins/noderesources/`) filter cases
//! for ignored resources and sidecars (restartable init containers), with their exact
//! statuses, against [`PodFitsResources`] in a v1.34 cycle.
//!
//! Ported:
//! - `TestEnoughRequests`: "skip checking ignored extended resource" (`ignoredResources`),
//!   "skip checking ignored extended resource via resource groups" (`ignoredResourceGroups`),
//!   "skip checking extended resource request with quantity zero via resource groups".
//! - `TestRestartableInitContainers`: the four cases with the SidecarContainers feature
//!   enabled, and "allow pod without restartable init containers if sidecar containers is
//!   disabled" (a pod without sidecars is treated the same either way).
//! - `TestEnoughRequests` "skip checking resource request with quantity zero" (kube v1.34's
//!   zero-request guard: CPU, memory and ephemeral storage are checked only when requested),
//!   with the same node under v1.20's rule beside it.
//!
//! Skipped:
//! - `TestRestartableInitContainers` "not allow pod with restartable init containers if
//!   sidecar containers is disabled": a disabled SidecarContainers gate (GA and on in v1.34)
//!   cannot be expressed; sidecars always count.
//!
//! kube's UnschedulableAndUnresolvable and Unschedulable both map to a failed filter with
//! kube's reason text; we do not model the code distinction.

use super::PodFitsResources;
use super::testutil::*;
use crate::fast_path::SEALED;
use crate::framework::{CycleContext, KubeVersion, Predicate, Prepared};
use crate::model::{Container, Node, Pod};

/// kube's test node: capacity and allocatable `makeResources(10, 20, 32, 5, 20, 5)`.
fn enough_requests_node() -> Node {
    let mut n = node("node");
    let l = list(&[
        ("cpu", "10m"),
        ("memory", "20"),
        ("pods", "32"),
        ("example.com/aaa", "5"),
        ("ephemeral-storage", "20"),
        ("hugepages-2Mi", "5"),
    ]);
    n.status.capacity = l.clone();
    n.status.allocatable = l;
    n
}

/// kube's `newResourcePod(usage...)`: one container per usage, each requesting cpu, memory,
/// pods and ephemeral storage (0 when not given) plus its scalars.
fn resource_pod(usages: &[&[(&str, &str)]]) -> Pod {
    let mut p = pod();
    p.spec.containers = usages
        .iter()
        .map(|u| {
            let mut r = vec![
                ("cpu", "0"),
                ("memory", "0"),
                ("pods", "0"),
                ("ephemeral-storage", "0"),
            ];
            for (k, v) in u.iter() {
                match r.iter_mut().find(|(rk, _)| rk == k) {
                    Some(e) => e.1 = v,
                    None => r.push((k, v)),
                }
            }
            container(&r)
        })
        .collect();
    p
}

/// Filter result for `pod` on `node` holding `existing`, as kube's reason texts (empty: fits).
fn run_filter(fit: &PodFitsResources, pod: &Pod, node: Node, existing: Vec<Pod>) -> Vec<String> {
    let snap = snapshot(vec![node], existing.into_iter().map(|p| (0, p)).collect());
    match filter(fit, pod, &snap, 0) {
        Ok(()) => vec![],
        Err(r) => messages(r, pod, &snap, 0),
    }
}

#[test]
fn enough_requests_ignored_resources() {
    let mut ran = 0;

    // "skip checking ignored extended resource"
    let fit = PodFitsResources::new().with_ignored_resources(["example.com/bbb".to_string()]);
    let got = run_filter(
        &fit,
        &resource_pod(&[&[("cpu", "1m"), ("memory", "1"), ("example.com/bbb", "1")]]),
        enough_requests_node(),
        vec![resource_pod(&[&[]])],
    );
    assert_eq!(
        got,
        Vec::<String>::new(),
        "skip checking ignored extended resource"
    );
    ran += 1;

    // "skip checking ignored extended resource via resource groups": kubernetes.io/ names are
    // not extended resources, so a group never hides them.
    let fit = PodFitsResources::new().with_ignored_resource_groups(["example.com".to_string()]);
    let got = run_filter(
        &fit,
        &resource_pod(&[&[
            ("cpu", "1m"),
            ("memory", "1"),
            ("example.com/bbb", "1"),
            ("kubernetes.io/something", "1"),
        ]]),
        enough_requests_node(),
        vec![resource_pod(&[&[]])],
    );
    assert_eq!(
        got,
        vec!["Insufficient kubernetes.io/something".to_string()],
        "skip checking ignored extended resource via resource groups"
    );
    ran += 1;

    // "skip checking extended resource request with quantity zero via resource groups"
    let got = run_filter(
        &PodFitsResources::new(),
        &resource_pod(&[&[("cpu", "1m"), ("memory", "1"), ("example.com/aaa", "0")]]),
        enough_requests_node(),
        vec![resource_pod(&[&[("example.com/aaa", "6")]])],
    );
    assert_eq!(
        got,
        Vec::<String>::new(),
        "skip checking extended resource request with quantity zero via resource groups"
    );
    ran += 1;

    assert_eq!(ran, 3, "cases run");
}

#[test]
fn restartable_init_containers() {
    // kube's node: no capacity, allocatable `makeAllocatableResources(2, 0, 1, 0, 0, 0)`.
    let node = || {
        let mut n = node("node");
        n.status.allocatable = list(&[
            ("cpu", "2m"),
            ("memory", "0"),
            ("pods", "1"),
            ("example.com/aaa", "0"),
            ("ephemeral-storage", "0"),
            ("hugepages-2Mi", "0"),
        ]);
        n
    };
    let new_pod = || {
        let mut p = pod();
        p.spec.containers = vec![Container {
            name: "regular".into(),
            ..Container::default()
        }];
        p
    };
    let with_sidecar = |request: Option<&str>, sidecar: Option<&str>| {
        let mut p = pod();
        let mut c = match request {
            Some(cpu) => container(&[("cpu", cpu)]),
            None => Container::default(),
        };
        c.name = "regular".into();
        let mut s = match sidecar {
            Some(cpu) => container(&[("cpu", cpu)]),
            None => Container::default(),
        };
        s.name = "restartable-init".into();
        s.restart_policy = Some("Always".into());
        p.spec.containers = vec![c];
        p.spec.init_containers = vec![s];
        p
    };
    let fit = PodFitsResources::new();
    let cases: Vec<(&str, Pod, Vec<String>)> = vec![
        (
            "allow pod without restartable init containers if sidecar containers is disabled",
            new_pod(),
            vec![],
        ),
        (
            "allow pod without restartable init containers if sidecar containers is enabled",
            new_pod(),
            vec![],
        ),
        (
            "allow pod with restartable init containers if sidecar containers is enabled",
            with_sidecar(None, None),
            vec![],
        ),
        (
            "allow pod if the total requested resources do not exceed the node's allocatable \
             resources",
            with_sidecar(Some("1m"), Some("1m")),
            vec![],
        ),
        (
            "not allow pod if the total requested resources do exceed the node's allocatable \
             resources",
            with_sidecar(Some("1m"), Some("2m")),
            vec!["Insufficient cpu".into()],
        ),
    ];
    let mut ran = 0;
    for (name, pod, want) in cases {
        assert_eq!(run_filter(&fit, &pod, node(), vec![]), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 5, "cases run");
}

/// Filter result for `pod` on `node` holding `existing` in a `version` cycle, as kube's reason
/// texts, through the plugin's `filter` and through its fast form (which must agree).
fn run_filter_in(
    version: KubeVersion,
    pod: &Pod,
    node: Node,
    existing: Vec<Pod>,
) -> (Vec<String>, Option<bool>) {
    let fit = PodFitsResources::new();
    let snap = snapshot(vec![node], existing.into_iter().map(|p| (0, p)).collect());
    let cx = CycleContext::for_version(pod, &snap, version);
    let Ok(Prepared::Run(state)) = fit.prepare(&cx) else {
        panic!("NodeResourcesFit always runs");
    };
    let texts = match fit.filter(&cx, &state, snap.node(0)) {
        Ok(()) => vec![],
        Err(r) => {
            let mut out = Vec::new();
            r.write_messages(version, cx.requests(), snap.node(0).node(), &mut |m| {
                out.push(m.into_owned())
            });
            out
        }
    };
    let fast = fit
        .fast_filter(&cx, &state, SEALED)
        .map(|f| f.passes(&snap.free()[0]));
    (texts, fast)
}

/// Kind 1, the zero-request guard: kube v1.34 checks CPU, memory and ephemeral storage only
/// when the pod requests them, on the plugin path and the fast path alike.
#[test]
fn zero_request_guard() {
    // "skip checking resource request with quantity zero": the node's pods already request
    // 20m CPU and 30 bytes of memory of its 10m and 20; the pod asks for one example.com/aaa
    // only (and 0 of cpu, memory, pods and ephemeral storage).
    let pod = resource_pod(&[&[("example.com/aaa", "1")]]);
    let existing = || {
        vec![resource_pod(&[&[
            ("cpu", "20m"),
            ("memory", "30"),
            ("example.com/aaa", "1"),
        ]])]
    };
    let (got, _) = run_filter_in(KubeVersion::V1_34, &pod, enough_requests_node(), existing());
    assert_eq!(
        got,
        Vec::<String>::new(),
        "skip checking resource request with quantity zero"
    );
    // kube v1.20 compared every resource once the pod requested anything.
    let (got, _) = run_filter_in(KubeVersion::V1_20, &pod, enough_requests_node(), existing());
    assert_eq!(got, vec!["Insufficient cpu", "Insufficient memory"]);

    // The same guard on the fast path (no scalar request, so the summary says it all): a
    // pod asking for memory only fits a node whose CPU and ephemeral storage are
    // over-committed, and not under v1.20's rule.
    let pod = resource_pod(&[&[("memory", "1")]]);
    let existing = || {
        vec![resource_pod(&[&[
            ("cpu", "20m"),
            ("ephemeral-storage", "30"),
        ]])]
    };
    let (got, fast) = run_filter_in(KubeVersion::V1_34, &pod, enough_requests_node(), existing());
    assert_eq!((got, fast), (vec![], Some(true)));
    let (got, fast) = run_filter_in(KubeVersion::V1_20, &pod, enough_requests_node(), existing());
    assert_eq!(
        (got, fast),
        (
            vec![
                "Insufficient cpu".to_string(),
                "Insufficient ephemeral-storage".to_string()
            ],
            Some(false)
        )
    );
    // A requested resource is still checked: memory beyond what is free fails on both paths.
    let pod = resource_pod(&[&[("memory", "21")]]);
    let (got, fast) = run_filter_in(KubeVersion::V1_34, &pod, enough_requests_node(), existing());
    assert_eq!(
        (got, fast),
        (vec!["Insufficient memory".to_string()], Some(false))
    );
}
