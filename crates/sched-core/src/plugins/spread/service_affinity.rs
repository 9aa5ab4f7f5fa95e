//! The legacy `CheckServiceAffinity` predicate (kube v1.20's ServiceAffinity filter).

use std::collections::BTreeMap;

use super::selector_spread::pod_services;
use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::snapshot::NodeRef;

/// Legacy predicate `CheckServiceAffinity` (kube v1.20's ServiceAffinity filter): the pods of
/// one Service land on nodes with the same values of `labels`.
///
/// The pod's constraints are its `nodeSelector` values for those labels; when some are
/// missing and a Service in its namespace selects it, the missing ones are taken from the node
/// of the first pod (in snapshot order) of the pod's namespace whose labels include all of the
/// pod's labels. A node fits when it has every constrained label with that value. Without
/// labels every node fits. Failure: "node(s) didn't match service affinity".
///
/// "First pod" follows the snapshot's node order, where kube follows its own node list; the
/// two differ only when the Service's pods already run on nodes with different values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAffinity {
    labels: Vec<String>,
}

impl ServiceAffinity {
    /// The predicate over these node labels (a Policy's `serviceAffinity` arguments, merged).
    pub fn new(labels: Vec<String>) -> Self {
        ServiceAffinity { labels }
    }

    /// The node labels.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
}

/// Per-pod state: the label values a node must have.
#[derive(Debug, Default)]
pub struct ServiceAffinityState {
    required: BTreeMap<String, String>,
}

impl Predicate for ServiceAffinity {
    type State = ServiceAffinityState;

    fn name(&self) -> &str {
        "CheckServiceAffinity"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
    ) -> Result<Prepared<ServiceAffinityState>, PluginError> {
        if self.labels.is_empty() {
            return Ok(Prepared::Skip);
        }
        let pod = cx.pod();
        let snapshot = cx.snapshot();
        let mut required: BTreeMap<String, String> = self
            .labels
            .iter()
            .filter_map(|l| {
                pod.spec
                    .node_selector
                    .get(l)
                    .map(|v| (l.clone(), v.clone()))
            })
            .collect();
        if required.len() < self.labels.len()
            && pod_services(pod, snapshot.workloads()).next().is_some()
        {
            let first = snapshot.node_infos().iter().find(|info| {
                info.pods().iter().any(|p| {
                    let p = p.pod();
                    p.metadata.namespace == pod.metadata.namespace
                        && pod
                            .metadata
                            .labels
                            .iter()
                            .all(|(k, v)| p.metadata.labels.get(k) == Some(v))
                })
            });
            if let Some(info) = first {
                let node_labels = &info.node().metadata.labels;
                for l in &self.labels {
                    if !required.contains_key(l)
                        && let Some(v) = node_labels.get(l)
                    {
                        required.insert(l.clone(), v.clone());
                    }
                }
            }
        }
        Ok(Prepared::Run(ServiceAffinityState { required }))
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        st: &ServiceAffinityState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let labels = &node.node().metadata.labels;
        if st.required.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            Ok(())
        } else {
            Err(Reason::ServiceAffinityViolated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LabelSelector, Node, Pod, Workload, WorkloadKind};
    use crate::snapshot::Snapshot;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn node(name: &str, l: &[(&str, &str)]) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.into();
        n.metadata.labels = labels(l);
        n
    }

    fn pod(ns: &str, l: &[(&str, &str)], node_selector: &[(&str, &str)]) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = "p".into();
        p.metadata.namespace = ns.into();
        p.metadata.labels = labels(l);
        p.spec.node_selector = labels(node_selector);
        p
    }

    fn service(ns: &str, selector: &[(&str, &str)]) -> Workload {
        Workload {
            kind: WorkloadKind::Service,
            namespace: ns.into(),
            name: "svc".into(),
            selector: LabelSelector {
                match_labels: labels(selector),
                ..LabelSelector::default()
            },
        }
    }

    // kube v1.20 `serviceaffinity/service_affinity_test.go` TestServiceAffinity: every case,
    // with its expected code (Success or Unschedulable).
    #[test]
    fn service_affinity() {
        let sel = [("foo", "bar")];
        let l1 = [("region", "r1"), ("zone", "z11")];
        let l2 = [("region", "r1"), ("zone", "z12")];
        let l3 = [("region", "r2"), ("zone", "z21")];
        let l4 = [("region", "r2"), ("zone", "z22")];
        let nodes = || {
            vec![
                node("machine1", &l1),
                node("machine2", &l2),
                node("machine3", &l3),
                node("machine4", &l4),
                node("machine5", &l4),
            ]
        };
        let existing = |ns: &str, on: &str| {
            let mut p = pod(ns, &sel, &[]);
            p.metadata.name = format!("existing-{on}");
            p.spec.node_name = on.into();
            p
        };
        struct Case {
            name: &'static str,
            pod: Pod,
            pods: Vec<Pod>,
            services: Vec<Workload>,
            node: usize,
            labels: &'static [&'static str],
            fits: bool,
        }
        let region: &[&str] = &["region"];
        let both: &[&str] = &["region", "zone"];
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: pod("", &[], &[]),
                pods: vec![],
                services: vec![],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "pod with region label match",
                pod: pod("", &[], &[("region", "r1")]),
                pods: vec![],
                services: vec![],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "pod with region label mismatch",
                pod: pod("", &[], &[("region", "r2")]),
                pods: vec![],
                services: vec![],
                node: 0,
                labels: region,
                fits: false,
            },
            Case {
                name: "service pod on same node",
                pod: pod("", &sel, &[]),
                pods: vec![existing("", "machine1")],
                services: vec![service("", &sel)],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "service pod on different node, region match",
                pod: pod("", &sel, &[]),
                pods: vec![existing("", "machine2")],
                services: vec![service("", &sel)],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "service pod on different node, region mismatch",
                pod: pod("", &sel, &[]),
                pods: vec![existing("", "machine3")],
                services: vec![service("", &sel)],
                node: 0,
                labels: region,
                fits: false,
            },
            Case {
                name: "service in different namespace, region mismatch",
                pod: pod("ns1", &sel, &[]),
                pods: vec![existing("ns1", "machine3")],
                services: vec![service("ns2", &sel)],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "pod in different namespace, region mismatch",
                pod: pod("ns1", &sel, &[]),
                pods: vec![existing("ns2", "machine3")],
                services: vec![service("ns1", &sel)],
                node: 0,
                labels: region,
                fits: true,
            },
            Case {
                name: "service and pod in same namespace, region mismatch",
                pod: pod("ns1", &sel, &[]),
                pods: vec![existing("ns1", "machine3")],
                services: vec![service("ns1", &sel)],
                node: 0,
                labels: region,
                fits: false,
            },
            Case {
                name: "service pod on different node, multiple labels, not all match",
                pod: pod("", &sel, &[]),
                pods: vec![existing("", "machine2")],
                services: vec![service("", &sel)],
                node: 0,
                labels: both,
                fits: false,
            },
            Case {
                name: "service pod on different node, multiple labels, all match",
                pod: pod("", &sel, &[]),
                pods: vec![existing("", "machine5")],
                services: vec![service("", &sel)],
                node: 3,
                labels: both,
                fits: true,
            },
        ];
        for c in cases {
            let mut snap = Snapshot::from_objects(nodes(), c.pods).unwrap();
            snap.set_workloads(c.services);
            let p = ServiceAffinity::new(c.labels.iter().map(|s| s.to_string()).collect());
            let cx = CycleContext::for_version(&c.pod, &snap, crate::framework::KubeVersion::V1_20);
            let got = match p.prepare(&cx).unwrap() {
                Prepared::Skip | Prepared::Pass => Ok(()),
                Prepared::Run(st) => p.filter(&cx, &st, snap.node(c.node)),
                _ => unreachable!("ServiceAffinity neither narrows nor rejects"),
            };
            let want = if c.fits {
                Ok(())
            } else {
                Err(Reason::ServiceAffinityViolated)
            };
            assert_eq!(got, want, "{}", c.name);
        }
    }
}
