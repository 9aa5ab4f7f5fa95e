//! Test helpers shared by the inter-pod affinity and spreading tests: pods built like kube's
//! `st.MakePod()`, nodes with labels, and runners for predicates and priorities.

use serde_json::{Value, json};

use crate::framework::{
    CycleContext, PluginError, Predicate, Prepared, PreparedScore, Priority, Reason,
};
use crate::model::{Node, Pod, Workload, WorkloadKind};
use crate::snapshot::Snapshot;

/// `{"matchExpressions": [{key, op, values}]}`.
pub(crate) fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": op})
    } else {
        json!({"key": key, "operator": op, "values": values})
    }
}

/// A selector from expressions.
pub(crate) fn sel(exprs: &[Value]) -> Value {
    json!({ "matchExpressions": exprs })
}

/// A pod affinity term with a selector and a topology key.
pub(crate) fn term(selector: Value, topology_key: &str) -> Value {
    json!({"labelSelector": selector, "topologyKey": topology_key})
}

/// A term `key In values` over `topology_key`.
pub(crate) fn term_in(key: &str, values: &[&str], topology_key: &str) -> Value {
    term(sel(&[expr(key, "In", values)]), topology_key)
}

/// A term `key NotIn values` over `topology_key`.
pub(crate) fn term_not_in(key: &str, values: &[&str], topology_key: &str) -> Value {
    term(sel(&[expr(key, "NotIn", values)]), topology_key)
}

/// A term `key Exists` over `topology_key`.
pub(crate) fn term_exists(key: &str, topology_key: &str) -> Value {
    term(sel(&[expr(key, "Exists", &[])]), topology_key)
}

/// A weighted term.
pub(crate) fn weighted(weight: i32, term: Value) -> Value {
    json!({"weight": weight, "podAffinityTerm": term})
}

/// A pod under construction.
#[derive(Clone, Debug)]
pub(crate) struct PodB(Value);

/// A new pod with no namespace, labels or node.
pub(crate) fn pod() -> PodB {
    PodB(json!({"metadata": {}, "spec": {}}))
}

impl PodB {
    pub(crate) fn name(mut self, n: &str) -> Self {
        self.0["metadata"]["name"] = json!(n);
        self
    }
    pub(crate) fn ns(mut self, n: &str) -> Self {
        self.0["metadata"]["namespace"] = json!(n);
        self
    }
    pub(crate) fn node(mut self, n: &str) -> Self {
        self.0["spec"]["nodeName"] = json!(n);
        self
    }
    pub(crate) fn labels(mut self, l: &[(&str, &str)]) -> Self {
        for (k, v) in l {
            self.0["metadata"]["labels"][*k] = json!(v);
        }
        self
    }
    /// A controller owner reference.
    pub(crate) fn owner(mut self, api_version: &str, kind: &str, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": api_version, "kind": kind, "name": name, "uid": "", "controller": true
        }]);
        self
    }
    fn push(mut self, kind: &str, when: &str, v: Value) -> Self {
        let list = &mut self.0["spec"]["affinity"][kind][when];
        if list.is_null() {
            *list = json!([]);
        }
        if let Some(a) = list.as_array_mut() {
            a.push(v);
        }
        self
    }
    /// Adds a required pod affinity term.
    pub(crate) fn req_aff(self, t: Value) -> Self {
        self.push(
            "podAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            t,
        )
    }
    /// Adds a required pod anti-affinity term.
    pub(crate) fn req_anti(self, t: Value) -> Self {
        self.push(
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            t,
        )
    }
    /// Adds a preferred pod affinity term.
    pub(crate) fn pref_aff(self, w: i32, t: Value) -> Self {
        self.push(
            "podAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted(w, t),
        )
    }
    /// Adds a preferred pod anti-affinity term.
    pub(crate) fn pref_anti(self, w: i32, t: Value) -> Self {
        self.push(
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            weighted(w, t),
        )
    }
    pub(crate) fn build(&self) -> Pod {
        serde_json::from_value(self.0.clone()).expect("test pod")
    }
}

/// A node with labels.
pub(crate) fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.to_string();
    for (k, v) in labels {
        n.metadata.labels.insert(k.to_string(), v.to_string());
    }
    n
}

/// A snapshot; pods without a name get a unique one.
pub(crate) fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    let pods = pods
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            if p.metadata.name.is_empty() {
                p.metadata.name = format!("pod-{i}");
            }
            p
        })
        .collect();
    Snapshot::from_objects(nodes, pods).expect("test snapshot")
}

/// Runs a predicate on every node of the snapshot.
pub(crate) fn run_filter(
    p: &impl Predicate,
    pod: &Pod,
    snap: &Snapshot,
) -> Result<(bool, Vec<Result<(), Reason>>), PluginError> {
    let cx = CycleContext::new(pod, snap);
    match p.prepare(&cx)? {
        Prepared::Skip | Prepared::Pass => Ok((true, vec![Ok(()); snap.len()])),
        Prepared::Run(state) => Ok((
            false,
            (0..snap.len())
                .map(|i| p.filter(&cx, &state, snap.node(i)))
                .collect(),
        )),
        _ => unreachable!("InterPodAffinity neither narrows nor rejects in PreFilter"),
    }
}

/// Runs a priority with every node feasible; also says whether it was a constant.
pub(crate) fn run_priority(
    p: &impl Priority,
    pod: &Pod,
    snap: &Snapshot,
) -> Result<(bool, Vec<i64>), PluginError> {
    let feasible: Vec<u32> = (0..snap.len() as u32).collect();
    run_priority_on(p, pod, snap, &feasible)
}

/// Runs a priority over the given feasible nodes.
pub(crate) fn run_priority_on(
    p: &impl Priority,
    pod: &Pod,
    snap: &Snapshot,
    feasible: &[u32],
) -> Result<(bool, Vec<i64>), PluginError> {
    let cx = CycleContext::new(pod, snap);
    match p.prepare(&cx, feasible)? {
        PreparedScore::Constant(c) => Ok((true, vec![c; feasible.len()])),
        PreparedScore::Run(state) => {
            let mut scores: Vec<i64> = feasible
                .iter()
                .map(|&i| p.score(&cx, &state, snap.node(i as usize)))
                .collect();
            p.normalize(&cx, &state, &mut scores);
            Ok((false, scores))
        }
    }
}

/// A workload with a `matchLabels` selector.
pub(crate) fn workload(
    kind: WorkloadKind,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> Workload {
    let mut selector = crate::model::LabelSelector::default();
    for (k, v) in labels {
        selector.match_labels.insert(k.to_string(), v.to_string());
    }
    Workload {
        kind,
        namespace: ns.to_string(),
        name: name.to_string(),
        selector,
    }
}
