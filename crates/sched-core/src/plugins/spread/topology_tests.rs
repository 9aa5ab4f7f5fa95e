//! kube-scheduler v1.34's PodTopologySpread table tests
//! (`pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go` and
//! `scoring_test.go`), run against [`PodTopologySpread`] with the v1.34 rules
//! ([`KubeVersion::V1_34`]) and kube's expected values: filter status codes per node, the
//! PreFilter and PreScore states (constraints, matching pods per domain, critical paths,
//! ignored nodes, normalizing weights) and the normalized scores.
//!
//! The tables come from kubernetes/kubernetes' sources as stored for reference (filtering_test.go
//! at 01c2588bf4a3, scoring_test.go at 008b3652959c); that filtering_test.go already has
//! v1.35's `TestPodTopoSignatures`, so it may be a little newer than the v1.34 tag; the plugin
//! rules its tables exercise are those of v1.34.
//!
//! Ported, per kube test (kube's count in brackets):
//! - `TestPreFilterState`: 35 [36]
//! - `TestSingleConstraint`: 23 [23]
//! - `TestMultipleConstraints`: 13 [13]
//! - `TestPreScoreSkip`: 2 [2]
//! - `TestPreScoreStateEmptyNodes`: 12 [12]
//! - `TestPodTopologySpreadScore`: 27 [28]
//!
//! Cases kube runs with a feature gate disabled are ported when the gate does not change the
//! result for their pod (no node inclusion policies set, or no label the matchLabelKeys name);
//! they then check the v1.34 default (gate on) gives the same answer.
//!
//! Skipped:
//! - `TestPreFilterState` "matchLabelKeys ignored when feature gate disabled" and
//!   `TestPodTopologySpreadScore` "matchLabelKeys ignored when feature gate disabled": they turn
//!   `MatchLabelKeysInPodTopologySpread` off, which changes their result; a v1.34 profile
//!   always has it on (the gate is GA), and our model has no switch for it.
//! - `TestPreFilterStateAddPod` (16 cases) and `TestPreFilterStateRemovePod` (9 cases): the
//!   preemption hooks `AddPod`/`RemovePod` that update the PreFilter state in place; our plugin
//!   has no such hooks (a preemption dry run builds a new snapshot).
//! - `TestPreFilterDisabled` (Filter without PreFilter state: a framework error our API cannot
//!   express, the state being an argument) and `TestPodTopoSignatures` (pod signatures for
//!   opportunistic batching, which we do not have); also the benchmarks.
//!
//! Also tested here, beyond kube's tables: v1.34 counts no pod for an empty `labelSelector: {}`
//! (kube's `countPodsMatchSelector` shortcut, `selector.Empty()`) and ignores `matchLabelKeys`
//! when the `labelSelector` is absent (`mergeLabelSetWithSelector` keeps `labels.Nothing()`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::model::{Node, Workload, WorkloadKind};
use crate::plugins::interpod::testutil::snapshot;

const V: KubeVersion = KubeVersion::V1_34;
const OK: &str = "Success";
const U: &str = "Unschedulable";
const UU: &str = "UnschedulableAndUnresolvable";
const HOST: &str = "kubernetes.io/hostname";
const DNS: WhenUnsatisfiable = WhenUnsatisfiable::DoNotSchedule;
const SA: WhenUnsatisfiable = WhenUnsatisfiable::ScheduleAnyway;

// ---------------------------------------------------------------------------------------------
// Builders, after kube's st.MakePod() / st.MakeNode() / st.MakeLabelSelector().

/// `st.MakeLabelSelector().Exists(key)`.
fn exists(key: &str) -> Option<Value> {
    Some(json!({"matchExpressions": [{"key": key, "operator": "Exists"}]}))
}

/// `st.MakeLabelSelector().Label(k, v)...`.
fn labels(pairs: &[(&str, &str)]) -> Option<Value> {
    let m: serde_json::Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Some(json!({ "matchLabels": m }))
}

/// `st.MakeLabelSelector().Obj()`: the empty selector `{}`.
fn empty_sel() -> Option<Value> {
    Some(json!({}))
}

fn foo() -> Option<Value> {
    exists("foo")
}

fn bar() -> Option<Value> {
    exists("bar")
}

/// A pod under construction.
#[derive(Clone)]
struct P(Value);

/// `st.MakePod().Name(name)`.
fn pod(name: &str) -> P {
    P(json!({"metadata": {"name": name}, "spec": {}}))
}

/// `st.MakePod().Name(name).Node(node).Label(k, "")...`: an existing pod.
fn on(name: &str, node: &str, keys: &[&str]) -> P {
    let mut p = pod(name).node(node);
    for k in keys {
        p = p.label(k, "");
    }
    p
}

impl P {
    fn ns(mut self, ns: &str) -> Self {
        self.0["metadata"]["namespace"] = json!(ns);
        self
    }
    fn node(mut self, n: &str) -> Self {
        self.0["spec"]["nodeName"] = json!(n);
        self
    }
    fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        self
    }
    fn owner_rs(mut self, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": name,
            "controller": true
        }]);
        self
    }
    fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.0["spec"]["nodeSelector"][k] = json!(v);
        self
    }
    fn node_affinity(mut self, key: &str, op: &str, values: &[&str]) -> Self {
        self.0["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": op, "values": values}]}]
        });
        self
    }
    /// `NodeAffinityIn(key, values, st.NodeSelectorTypeMatchExpressions)`.
    fn affinity_in(self, key: &str, values: &[&str]) -> Self {
        self.node_affinity(key, "In", values)
    }
    /// `NodeAffinityNotIn(key, values)`.
    fn affinity_not_in(self, key: &str, values: &[&str]) -> Self {
        self.node_affinity(key, "NotIn", values)
    }
    /// `Toleration(key)`: operator Exists, any effect.
    fn toleration(mut self, key: &str) -> Self {
        self.0["spec"]["tolerations"] = json!([{"key": key, "operator": "Exists"}]);
        self
    }
    /// `SpreadConstraint(maxSkew, key, when, selector, nil, nil, nil, nil)`; the modifiers below
    /// set the other arguments on the last constraint.
    fn spread(
        mut self,
        max_skew: i32,
        key: &str,
        when: WhenUnsatisfiable,
        sel: Option<Value>,
    ) -> Self {
        let mut c = json!({
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": format!("{when:?}"),
        });
        if let Some(sel) = sel {
            c["labelSelector"] = sel;
        }
        let list = &mut self.0["spec"]["topologySpreadConstraints"];
        if list.is_null() {
            *list = json!([]);
        }
        list.as_array_mut().expect("constraints").push(c);
        self
    }
    fn last(&mut self) -> &mut Value {
        self.0["spec"]["topologySpreadConstraints"]
            .as_array_mut()
            .and_then(|a| a.last_mut())
            .expect("a constraint")
    }
    fn min_domains(mut self, n: i32) -> Self {
        self.last()["minDomains"] = json!(n);
        self
    }
    fn affinity_policy(mut self, p: &str) -> Self {
        self.last()["nodeAffinityPolicy"] = json!(p);
        self
    }
    fn taints_policy(mut self, p: &str) -> Self {
        self.last()["nodeTaintsPolicy"] = json!(p);
        self
    }
    fn match_label_keys(mut self, keys: &[&str]) -> Self {
        self.last()["matchLabelKeys"] = json!(keys);
        self
    }
    fn obj(&self) -> Pod {
        serde_json::from_value(self.0.clone()).expect("test pod")
    }
}

/// A node under construction.
#[derive(Clone)]
struct N(Value);

/// `st.MakeNode().Name(name)`.
fn node(name: &str) -> N {
    N(json!({"metadata": {"name": name}, "spec": {}}))
}

/// A node with `zone` and `node` labels, as most of kube's filter tables have.
fn zn(name: &str, zone: &str) -> N {
    node(name).label("zone", zone).label("node", name)
}

/// A node with only the `node` label.
fn nn(name: &str) -> N {
    node(name).label("node", name)
}

/// A node with only `kubernetes.io/hostname`.
fn hn(name: &str) -> N {
    node(name).label(HOST, name)
}

/// A node with `zone` and `kubernetes.io/hostname`.
fn zh(name: &str, zone: &str) -> N {
    node(name).label("zone", zone).label(HOST, name)
}

impl N {
    fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    /// kube's `taints`: `node.kubernetes.io/unschedulable:NoSchedule`.
    fn tainted(mut self) -> Self {
        self.0["spec"]["taints"] =
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]);
        self
    }
    fn obj(&self) -> Node {
        serde_json::from_value(self.0.clone()).expect("test node")
    }
}

/// The four nodes most of kube's filter tables use: node-a, node-b in zone1, node-x, node-y
/// in zone2.
fn four() -> Vec<N> {
    vec![
        zn("node-a", "zone1"),
        zn("node-b", "zone1"),
        zn("node-x", "zone2"),
        zn("node-y", "zone2"),
    ]
}

/// A Service (no namespace, as in kube's tests) with a selector map.
fn service(sel: &[(&str, &str)]) -> Workload {
    Workload {
        kind: WorkloadKind::Service,
        namespace: String::new(),
        name: "svc".to_string(),
        selector: serde_json::from_value(labels(sel).expect("selector")).expect("selector"),
    }
}

/// A ReplicaSet in `default` with a selector.
fn replica_set(name: &str, sel: Option<Value>) -> Workload {
    Workload {
        kind: WorkloadKind::ReplicaSet,
        namespace: "default".to_string(),
        name: name.to_string(),
        selector: serde_json::from_value(sel.expect("selector")).expect("selector"),
    }
}

/// A default constraint without selector.
fn default_constraint(
    max_skew: i32,
    key: &str,
    when: WhenUnsatisfiable,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: when,
        ..TopologySpreadConstraint::default()
    }
}

fn snap(nodes: &[N], pods: &[P], workloads: Vec<Workload>) -> Snapshot {
    let mut s = snapshot(
        nodes.iter().map(N::obj).collect(),
        pods.iter().map(P::obj).collect(),
    );
    s.set_workloads(workloads);
    s
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// A selector as kube's `labels.Selector` sees it: `None` for `labels.Nothing()`, else the
/// sorted requirements, `matchLabels` as single-value `In` (kube's `=`).
type Canon = Option<Vec<(String, String, Vec<String>)>>;

fn canon(sel: Option<&LabelSelector>) -> Canon {
    let sel = sel?;
    let mut reqs: Vec<(String, String, Vec<String>)> = sel
        .match_labels
        .iter()
        .map(|(k, v)| (k.clone(), "In".to_string(), vec![v.clone()]))
        .collect();
    for r in &sel.match_expressions {
        let mut values = r.values.clone();
        values.sort();
        reqs.push((r.key.clone(), format!("{:?}", r.operator), values));
    }
    reqs.sort();
    Some(reqs)
}

fn canon_json(sel: &Option<Value>) -> Canon {
    let sel: Option<LabelSelector> = sel
        .as_ref()
        .map(|v| serde_json::from_value(v.clone()).expect("selector"));
    canon(sel.as_ref())
}

/// kube's `topologySpreadConstraint`: maxSkew, topologyKey, selector, minDomains,
/// nodeAffinityPolicy, nodeTaintsPolicy (`true` = Honor).
#[derive(Debug, PartialEq)]
struct Want {
    max_skew: i64,
    key: String,
    selector: Canon,
    min_domains: usize,
    affinity_honor: bool,
    taints_honor: bool,
}

/// A constraint with kube's defaults: minDomains 1, affinity Honor, taints Ignore.
fn want(max_skew: i64, key: &str, sel: Option<Value>) -> Want {
    Want {
        max_skew,
        key: key.to_string(),
        selector: canon_json(&sel),
        min_domains: 1,
        affinity_honor: true,
        taints_honor: false,
    }
}

impl Want {
    fn affinity_ignored(mut self) -> Self {
        self.affinity_honor = false;
        self
    }
    fn taints_honored(mut self) -> Self {
        self.taints_honor = true;
        self
    }
}

fn got(c: &Constraint) -> Want {
    Want {
        max_skew: c.max_skew,
        key: c.source.0.clone(),
        selector: canon(c.source.1.as_ref()),
        min_domains: c.min_domains,
        affinity_honor: c.honor_affinity,
        taints_honor: c.honor_taints,
    }
}

fn counts(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

/// kube's critical paths of a constraint: the two domains with the fewest matching pods,
/// `("", MaxInt32)` standing in for missing ones; equal counts in name order (kube's test
/// comparer sorts them so).
fn critical_paths(counts: &BTreeMap<String, i64>) -> [(String, i64); 2] {
    let mut v: Vec<(i64, String)> = counts.iter().map(|(k, &n)| (n, k.clone())).collect();
    v.sort();
    let at = |i: usize| {
        v.get(i)
            .map_or((String::new(), i64::from(i32::MAX)), |(n, k)| {
                (k.clone(), *n)
            })
    };
    [at(0), at(1)]
}

fn sorted_paths(p: [(&str, i64); 2]) -> [(String, i64); 2] {
    let [a, b] = p;
    let (a, b) = if a.1 == b.1 && a.0 > b.0 {
        (b, a)
    } else {
        (a, b)
    };
    [(a.0.to_string(), a.1), (b.0.to_string(), b.1)]
}

/// `newCriticalPaths()`.
const NO_PATHS: [(&str, i64); 2] = [("", i32::MAX as i64), ("", i32::MAX as i64)];

fn code(r: &Result<(), Reason>) -> &'static str {
    match r {
        Ok(()) => OK,
        Err(Reason::TopologySpreadMissingLabel) => UU,
        Err(_) => U,
    }
}

// ---------------------------------------------------------------------------------------------
// Filter: TestSingleConstraint and TestMultipleConstraints.

struct FilterCase {
    name: &'static str,
    pod: P,
    nodes: Vec<N>,
    pods: Vec<P>,
    want: Vec<&'static str>,
}

fn fc(
    name: &'static str,
    pod: P,
    nodes: Vec<N>,
    pods: Vec<P>,
    want: &[&'static str],
) -> FilterCase {
    FilterCase {
        name,
        pod,
        nodes,
        pods,
        want: want.to_vec(),
    }
}

/// Runs PreFilter and Filter on every node (kube's ListDefaulting, no default constraints);
/// returns the failures.
fn run_filter_cases(cases: &[FilterCase]) -> (usize, Vec<String>) {
    let mut ran = 0;
    let pl = PodTopologySpread::without_defaults();
    let mut failures = Vec::new();
    for c in cases {
        ran += 1;
        let s = snap(&c.nodes, &c.pods, Vec::new());
        let p = c.pod.obj();
        let cx = CycleContext::for_version(&p, &s, V);
        let got: Vec<&str> = match Predicate::prepare(&pl, &cx) {
            Ok(Prepared::Skip) => vec![OK; s.len()],
            Ok(Prepared::Run(st)) => (0..s.len())
                .map(|i| code(&pl.filter(&cx, &st, s.node(i))))
                .collect(),
            Ok(_) => unreachable!("PodTopologySpread neither passes, narrows nor rejects"),
            Err(e) => {
                failures.push(format!("{}: PreFilter error {e}", c.name));
                continue;
            }
        };
        let names: Vec<&str> = (0..s.len()).map(|i| s.node(i).info().name()).collect();
        let want_names: Vec<String> = c
            .nodes
            .iter()
            .map(|n| {
                n.0["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        if names != want_names || got != c.want {
            failures.push(format!(
                "{}: nodes {names:?} got {got:?}, want {:?}",
                c.name, c.want
            ));
        }
    }
    (ran, failures)
}

#[test]
fn kube_single_constraint() {
    let foo_on = |name: &str, n: &str| on(name, n, &["foo"]);
    let spread_2103 = || {
        vec![
            foo_on("p-a1", "node-a"),
            foo_on("p-a2", "node-a"),
            foo_on("p-b1", "node-b"),
            foo_on("p-y1", "node-y"),
            foo_on("p-y2", "node-y"),
            foo_on("p-y3", "node-y"),
        ]
    };
    let abc = || vec![nn("node-a"), nn("node-b"), nn("node-c")];
    let pods_221 = || {
        vec![
            foo_on("p-a1", "node-a"),
            foo_on("p-a2", "node-a"),
            foo_on("p-b1", "node-b"),
            foo_on("p-b2", "node-b"),
            foo_on("p-c1", "node-c"),
        ]
    };
    let pods_zone_21 = || {
        vec![
            foo_on("p-b1", "node-a"),
            foo_on("p-b2", "node-b"),
            foo_on("p-y1", "node-y"),
        ]
    };
    // Nodes for the node inclusion policy cases: node-y lacks label foo.
    let foo_nodes = || {
        vec![
            nn("node-a").label("foo", ""),
            nn("node-b").label("foo", ""),
            nn("node-x").label("foo", ""),
            nn("node-y"),
        ]
    };
    let taint_nodes = || {
        vec![
            nn("node-a").label("foo", ""),
            nn("node-b").label("foo", ""),
            nn("node-x").label("foo", ""),
            nn("node-y").tainted(),
        ]
    };
    let p = || pod("p").label("foo", "");
    let cases = vec![
        fc(
            "no existing pods",
            p().spread(1, "zone", DNS, foo()),
            four(),
            vec![],
            &[OK, OK, OK, OK],
        ),
        fc(
            "no existing pods, incoming pod doesn't match itself",
            p().spread(1, "zone", DNS, bar()),
            four(),
            vec![],
            &[OK, OK, OK, OK],
        ),
        fc(
            "existing pods in a different namespace do not count",
            p().spread(1, "zone", DNS, foo()),
            four(),
            vec![
                foo_on("p-a1", "node-a").ns("ns1"),
                foo_on("p-b1", "node-a").ns("ns2"),
                foo_on("p-x1", "node-x"),
                foo_on("p-y1", "node-y"),
            ],
            &[OK, OK, U, U],
        ),
        fc(
            "existing pods do not match null selector",
            p().spread(1, "zone", DNS, None),
            four(),
            vec![foo_on("p-x1", "node-x"), foo_on("p-y1", "node-y")],
            &[OK, OK, OK, OK],
        ),
        fc(
            "pods spread across zones as 3/3, all nodes fit",
            p().spread(1, "zone", DNS, foo()),
            four(),
            spread_2103(),
            &[OK, OK, OK, OK],
        ),
        fc(
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            p().spread(1, "zone", DNS, foo()),
            vec![
                zn("node-a", "zone1"),
                node("node-b").label("zon", "zone1").label("node", "node-b"),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            vec![
                foo_on("p-a1", "node-a"),
                foo_on("p-b1", "node-b"),
                foo_on("p-x1", "node-x"),
                foo_on("p-y1", "node-y"),
            ],
            &[OK, UU, U, U],
        ),
        fc(
            "pod cannot be scheduled as all nodes don't have label 'rack'",
            p().spread(1, "rack", DNS, foo()),
            vec![zn("node-a", "zone1"), zn("node-x", "zone2")],
            vec![],
            &[UU, UU],
        ),
        fc(
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            p().spread(1, "node", DNS, foo()),
            four(),
            spread_2103(),
            &[U, U, OK, U],
        ),
        fc(
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            p().spread(2, "node", DNS, foo()),
            four(),
            spread_2103(),
            &[U, OK, OK, U],
        ),
        fc(
            "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            pod("p").label("bar", "").spread(1, "node", DNS, foo()),
            four(),
            spread_2103(),
            &[U, OK, OK, U],
        ),
        fc(
            "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            p().affinity_in("node", &["node-a", "node-y"])
                .spread(1, "node", DNS, foo()),
            four(),
            spread_2103(),
            &[OK, OK, OK, U],
        ),
        fc(
            "terminating Pods should be excluded",
            p().spread(1, "node", DNS, foo()),
            vec![nn("node-a"), nn("node-b")],
            vec![
                foo_on("p-a", "node-a").terminating(),
                foo_on("p-b", "node-b"),
            ],
            &[OK, U],
        ),
        fc(
            "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
            p().affinity_not_in("node", &["node-b"])
                .spread(1, "zone", DNS, foo()),
            four(),
            vec![
                foo_on("p-b1", "node-b"),
                foo_on("p-b2", "node-b"),
                foo_on("p-y1", "node-y"),
            ],
            &[OK, OK, U, U],
        ),
        fc(
            "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
            p().spread(2, "node", DNS, foo()).min_domains(4),
            abc(),
            pods_221(),
            &[U, U, OK],
        ),
        fc(
            "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
            p().spread(2, "node", DNS, foo()).min_domains(2),
            abc(),
            pods_221(),
            &[OK, OK, OK],
        ),
        fc(
            "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
            p().spread(2, "zone", DNS, foo()).min_domains(3),
            four(),
            pods_zone_21(),
            &[U, U, OK, OK],
        ),
        fc(
            "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
            p().spread(2, "zone", DNS, foo()).min_domains(1),
            four(),
            pods_zone_21(),
            &[OK, OK, OK, OK],
        ),
        fc(
            "NodeAffinityPolicy honored with labelSelectors",
            p().node_selector("foo", "").spread(1, "node", DNS, foo()),
            foo_nodes(),
            pods_zone_21(),
            &[U, U, OK, OK],
        ),
        fc(
            "NodeAffinityPolicy ignored with labelSelectors",
            p().node_selector("foo", "")
                .spread(1, "node", DNS, foo())
                .affinity_policy("Ignore"),
            foo_nodes(),
            pods_zone_21(),
            &[U, U, OK, U],
        ),
        fc(
            "NodeAffinityPolicy honored with nodeAffinity",
            p().affinity_in("foo", &[""]).spread(1, "node", DNS, foo()),
            foo_nodes(),
            pods_zone_21(),
            &[U, U, OK, OK],
        ),
        fc(
            // kube names this case like the one before it.
            "NodeAffinityPolicy ignored with labelSelectors",
            p().affinity_in("foo", &[""])
                .spread(1, "node", DNS, foo())
                .affinity_policy("Ignore"),
            foo_nodes(),
            pods_zone_21(),
            &[U, U, OK, U],
        ),
        fc(
            "NodeTaintsPolicy honored",
            p().spread(1, "node", DNS, foo()).taints_policy("Honor"),
            taint_nodes(),
            pods_zone_21(),
            &[U, U, OK, OK],
        ),
        fc(
            "NodeTaintsPolicy ignored",
            p().spread(1, "node", DNS, foo()),
            taint_nodes(),
            pods_zone_21(),
            &[U, U, OK, U],
        ),
    ];
    assert_eq!(cases.len(), 23);
    let (ran, failures) = run_filter_cases(&cases);
    assert_eq!(ran, 23);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn kube_multiple_constraints() {
    let on_ = |name: &str, n: &str, keys: &[&str]| on(name, n, keys);
    let zone_node = || {
        pod("p")
            .label("foo", "")
            .spread(1, "zone", DNS, foo())
            .spread(1, "node", DNS, foo())
    };
    let foo_bar = || {
        pod("p")
            .label("foo", "")
            .label("bar", "")
            .spread(1, "zone", DNS, foo())
            .spread(1, "node", DNS, bar())
    };
    let spread_2103 = || {
        vec![
            on_("p-a1", "node-a", &["foo"]),
            on_("p-a2", "node-a", &["foo"]),
            on_("p-b1", "node-b", &["foo"]),
            on_("p-y1", "node-y", &["foo"]),
            on_("p-y2", "node-y", &["foo"]),
            on_("p-y3", "node-y", &["foo"]),
        ]
    };
    let pods_111 = || {
        vec![
            on_("p-a1", "node-a", &["foo"]),
            on_("p-b1", "node-b", &["foo"]),
            on_("p-y1", "node-y", &["foo"]),
        ]
    };
    let zf = |name: &str, zone: &str| zn(name, zone).label("foo", "");
    let two_zone = || {
        vec![
            on_("p-a1", "node-a", &["foo", "bar"]),
            on_("p-a2", "node-a", &["foo"]),
            on_("p-b1", "node-b", &["foo", "bar"]),
            on_("p-y1", "node-y", &["foo"]),
            on_("p-y2", "node-y", &["foo", "bar"]),
            on_("p-y3", "node-y", &["foo"]),
        ]
    };
    let two_zone_pod = || {
        pod("p")
            .label("foo", "")
            .label("bar", "")
            .spread(1, "zone", DNS, bar())
            .spread(1, "zone", DNS, foo())
    };
    let cases = vec![
        fc(
            "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
            zone_node(),
            four(),
            spread_2103(),
            &[U, U, OK, U],
        ),
        fc(
            "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
            zone_node(),
            four(),
            [spread_2103(), vec![on_("p-y4", "node-y", &["foo"])]].concat(),
            &[U, U, U, U],
        ),
        fc(
            "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
            foo_bar(),
            four(),
            vec![
                on_("p-a1", "node-a", &["foo"]),
                on_("p-y1", "node-y", &["bar"]),
            ],
            &[U, U, OK, U],
        ),
        fc(
            "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
            foo_bar(),
            four(),
            vec![
                on_("p-a1", "node-a", &["foo"]),
                on_("p-x1", "node-x", &["bar"]),
                on_("p-y1", "node-y", &["bar"]),
            ],
            &[U, U, U, U],
        ),
        fc(
            "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
            foo_bar(),
            four(),
            vec![
                on_("p-a1", "node-a", &["foo"]),
                on_("p-a2", "node-a", &["foo", "bar"]),
                on_("p-y1", "node-y", &["foo"]),
                on_("p-y2", "node-y", &["foo", "bar"]),
                on_("p-y3", "node-y", &["foo"]),
            ],
            &[U, OK, U, U],
        ),
        fc(
            "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
            pod("p")
                .label("bar", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, bar()),
            four(),
            vec![
                on_("p-a1", "node-a", &["foo"]),
                on_("p-x1", "node-x", &["bar"]),
                on_("p-y1", "node-y", &["bar"]),
            ],
            &[OK, OK, U, U],
        ),
        fc(
            "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
            zone_node(),
            vec![
                zn("node-a", "zone1"),
                zn("node-b", "zone1"),
                node("node-x").label("zone", "zone2"),
                zn("node-y", "zone2"),
            ],
            vec![
                on_("p-a1", "node-a", &["foo"]),
                on_("p-y3", "node-y", &["foo"]),
            ],
            &[U, OK, UU, U],
        ),
        fc(
            "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
            pod("p")
                .label("foo", "")
                .node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo())
                .affinity_policy("Ignore"),
            vec![
                zf("node-a", "zone1"),
                zf("node-b", "zone1"),
                zf("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            pods_111(),
            &[U, U, OK, U],
        ),
        fc(
            "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
            pod("p")
                .label("foo", "")
                .spread(1, "zone", DNS, foo())
                .taints_policy("Honor")
                .spread(1, "node", DNS, foo()),
            vec![
                zf("node-a", "zone1"),
                zf("node-b", "zone1"),
                zf("node-x", "zone2"),
                zn("node-y", "zone2").tainted(),
            ],
            pods_111(),
            &[U, U, OK, U],
        ),
        fc(
            "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
            pod("p")
                .label("foo", "")
                .node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo()),
            vec![
                zf("node-a", "zone1"),
                zn("node-b", "zone1"),
                zf("node-x", "zone2"),
                zf("node-y", "zone2").tainted(),
            ],
            pods_111(),
            &[U, OK, OK, U],
        ),
        fc(
            "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
            pod("p")
                .label("foo", "")
                .node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .taints_policy("Honor")
                .spread(1, "node", DNS, foo())
                .affinity_policy("Ignore"),
            vec![
                zf("node-a", "zone1"),
                zn("node-b", "zone1"),
                zf("node-x", "zone2"),
                zf("node-y", "zone2").tainted(),
            ],
            pods_111(),
            &[U, U, OK, U],
        ),
        fc(
            "two Constraints on zone, spreads = [3/3, 2/1]",
            two_zone_pod(),
            four(),
            two_zone(),
            &[U, U, OK, OK],
        ),
        fc(
            "two Constraints on zone, spreads = [3/4, 2/1]",
            two_zone_pod(),
            four(),
            [two_zone(), vec![on_("p-y4", "node-y", &["foo"])]].concat(),
            &[U, U, U, U],
        ),
    ];
    assert_eq!(cases.len(), 13);
    let (ran, failures) = run_filter_cases(&cases);
    assert_eq!(ran, 13);
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---------------------------------------------------------------------------------------------
// TestPreFilterState.

/// One constraint of the PreFilter state: the constraint, its matching pods per domain
/// (`TpValueToMatchNum`) and its critical paths.
struct WantState {
    constraint: Want,
    counts: BTreeMap<String, i64>,
    paths: [(&'static str, i64); 2],
}

fn ws(constraint: Want, c: &[(&str, i64)], paths: [(&'static str, i64); 2]) -> WantState {
    WantState {
        constraint,
        counts: counts(c),
        paths,
    }
}

struct StateCase {
    name: &'static str,
    pod: P,
    nodes: Vec<N>,
    pods: Vec<P>,
    defaults: Vec<TopologySpreadConstraint>,
    workloads: Vec<Workload>,
    /// `None`: PreFilter returns Skip.
    want: Option<Vec<WantState>>,
}

fn sc(
    name: &'static str,
    pod: P,
    nodes: Vec<N>,
    pods: Vec<P>,
    want: Option<Vec<WantState>>,
) -> StateCase {
    StateCase {
        name,
        pod,
        nodes,
        pods,
        defaults: Vec::new(),
        workloads: Vec::new(),
        want,
    }
}

impl StateCase {
    fn defaults(mut self, d: Vec<TopologySpreadConstraint>, w: Vec<Workload>) -> Self {
        self.defaults = d;
        self.workloads = w;
        self
    }
}

fn run_state_cases(cases: &[StateCase]) -> (usize, Vec<String>) {
    let mut ran = 0;
    let mut failures = Vec::new();
    for c in cases {
        ran += 1;
        let pl = PodTopologySpread::with_defaults(DefaultConstraints::List(c.defaults.clone()));
        let s = snap(&c.nodes, &c.pods, c.workloads.clone());
        let p = c.pod.obj();
        let cx = CycleContext::for_version(&p, &s, V);
        let prepared = match Predicate::prepare(&pl, &cx) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("{}: PreFilter error {e}", c.name));
                continue;
            }
        };
        match (prepared, &c.want) {
            (Prepared::Skip, None) => {}
            (Prepared::Skip, Some(_)) => failures.push(format!("{}: got Skip", c.name)),
            (Prepared::Run(_), None) => failures.push(format!("{}: want Skip", c.name)),
            (Prepared::Pass | Prepared::RunOn(..) | Prepared::Reject(_), _) => {
                unreachable!("PodTopologySpread neither passes, narrows nor rejects")
            }
            (Prepared::Run(st), Some(want)) => {
                let view = st.view(&s);
                if view.len() != want.len() {
                    failures.push(format!(
                        "{}: {} constraints, want {}",
                        c.name,
                        view.len(),
                        want.len()
                    ));
                    continue;
                }
                for (i, ((con, counts, min), w)) in view.iter().zip(want).enumerate() {
                    let g = got(con);
                    if g != w.constraint {
                        failures.push(format!(
                            "{} [{i}]: constraint {g:?}, want {:?}",
                            c.name, w.constraint
                        ));
                    }
                    if *counts != w.counts {
                        failures.push(format!(
                            "{} [{i}]: counts {counts:?}, want {:?}",
                            c.name, w.counts
                        ));
                    }
                    let paths = critical_paths(counts);
                    if paths != sorted_paths(w.paths) {
                        failures.push(format!(
                            "{} [{i}]: critical paths {paths:?}, want {:?}",
                            c.name, w.paths
                        ));
                    }
                    // The filter measures skew from the first critical path (0 with fewer
                    // domains than minDomains).
                    let want_min = if counts.len() < w.constraint.min_domains {
                        0
                    } else {
                        w.paths[0].1
                    };
                    if *min != want_min {
                        failures.push(format!("{} [{i}]: minimum {min}, want {want_min}", c.name));
                    }
                }
            }
        }
    }
    (ran, failures)
}

#[test]
fn kube_pre_filter_state() {
    let f = |name: &str, n: &str| on(name, n, &["foo"]);
    let fa = |name: &str, n: &str| pod(name).node(n).label("foo", "a");
    let b = |name: &str, n: &str| on(name, n, &["bar"]);
    let p = || pod("p").label("foo", "");
    let pods_3_2 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-b1", "node-b"),
            f("p-y1", "node-y"),
            f("p-y2", "node-y"),
        ]
    };
    let pods_3_4 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-b1", "node-b"),
            f("p-y1", "node-y"),
            f("p-y2", "node-y"),
            f("p-y3", "node-y"),
            f("p-y4", "node-y"),
        ]
    };
    let pods_foo_a = || {
        vec![
            fa("p-a1", "node-a"),
            fa("p-a2", "node-a"),
            fa("p-b1", "node-b"),
            fa("p-y1", "node-y"),
            fa("p-y2", "node-y"),
        ]
    };
    let aby = || {
        vec![
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            zn("node-y", "zone2"),
        ]
    };
    // Node inclusion policy tables: node-c is labelled bar (and tainted in the taint cases).
    let sel_nodes = || {
        vec![
            nn("node-a").label("foo", ""),
            nn("node-b").label("foo", ""),
            nn("node-c").label("bar", ""),
        ]
    };
    let taint_nodes = || {
        vec![
            nn("node-a"),
            nn("node-b"),
            nn("node-c").tainted().label("bar", ""),
        ]
    };
    let abcd = || {
        vec![
            b("p-a", "node-a"),
            b("p-b", "node-b"),
            b("p-c", "node-b"),
            pod("p-d").node("node-c"),
        ]
    };
    let zone = |sel| want(1, "zone", sel);
    let nodec = |sel| want(1, "node", sel);
    let zone_3_4 = || {
        ws(
            zone(foo()),
            &[("zone1", 3), ("zone2", 4)],
            [("zone1", 3), ("zone2", 4)],
        )
    };
    let a1b2 = || [("node-a", 1), ("node-b", 2)];
    let a1b2c0 = || [("node-a", 1), ("node-b", 2), ("node-c", 0)];
    let cases = vec![
        sc(
            "clean cluster with one spreadConstraint",
            p().spread(5, "zone", DNS, labels(&[("foo", "bar")])),
            four(),
            vec![],
            Some(vec![ws(
                want(5, "zone", labels(&[("foo", "bar")])),
                &[("zone1", 0), ("zone2", 0)],
                [("zone1", 0), ("zone2", 0)],
            )]),
        ),
        sc(
            "normal case with one spreadConstraint",
            p().spread(1, "zone", DNS, foo()),
            four(),
            pods_3_2(),
            Some(vec![ws(
                zone(foo()),
                &[("zone1", 3), ("zone2", 2)],
                [("zone2", 2), ("zone1", 3)],
            )]),
        ),
        sc(
            "normal case with null label selector",
            p().spread(1, "zone", DNS, None),
            four(),
            pods_3_2(),
            Some(vec![ws(
                zone(None),
                &[("zone1", 0), ("zone2", 0)],
                [("zone2", 0), ("zone1", 0)],
            )]),
        ),
        sc(
            "normal case with one spreadConstraint, on a 3-zone cluster",
            p().spread(1, "zone", DNS, foo()),
            [four(), vec![zn("node-o", "zone3"), zn("node-p", "zone3")]].concat(),
            pods_3_2(),
            Some(vec![ws(
                zone(foo()),
                &[("zone1", 3), ("zone2", 2), ("zone3", 0)],
                [("zone3", 0), ("zone2", 2)],
            )]),
        ),
        sc(
            "namespace mismatch doesn't count",
            p().spread(1, "zone", DNS, foo()),
            four(),
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a").ns("ns1"),
                f("p-b1", "node-b"),
                f("p-y1", "node-y").ns("ns2"),
                f("p-y2", "node-y"),
            ],
            Some(vec![ws(
                zone(foo()),
                &[("zone1", 2), ("zone2", 1)],
                [("zone2", 1), ("zone1", 2)],
            )]),
        ),
        sc(
            "normal case with two spreadConstraints",
            p().spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo()),
            four(),
            pods_3_4(),
            Some(vec![
                zone_3_4(),
                ws(
                    nodec(foo()),
                    &[("node-a", 2), ("node-b", 1), ("node-x", 0), ("node-y", 4)],
                    [("node-x", 0), ("node-b", 1)],
                ),
            ]),
        ),
        sc(
            "soft spreadConstraints should be bypassed",
            p().spread(1, "zone", SA, foo())
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", SA, foo())
                .spread(1, "node", DNS, foo()),
            aby(),
            pods_3_4(),
            Some(vec![
                zone_3_4(),
                ws(
                    nodec(foo()),
                    &[("node-a", 2), ("node-b", 1), ("node-y", 4)],
                    [("node-b", 1), ("node-a", 2)],
                ),
            ]),
        ),
        sc(
            "different labelSelectors - simple version",
            p().label("bar", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, bar()),
            aby(),
            vec![f("p-a", "node-a"), b("p-b", "node-b")],
            Some(vec![
                ws(
                    zone(foo()),
                    &[("zone1", 1), ("zone2", 0)],
                    [("zone2", 0), ("zone1", 1)],
                ),
                ws(
                    nodec(bar()),
                    &[("node-a", 0), ("node-b", 1), ("node-y", 0)],
                    [("node-a", 0), ("node-y", 0)],
                ),
            ]),
        ),
        sc(
            "different labelSelectors - complex pods",
            p().label("bar", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, bar()),
            aby(),
            vec![
                f("p-a1", "node-a"),
                on("p-a2", "node-a", &["foo", "bar"]),
                f("p-b1", "node-b"),
                f("p-y1", "node-y"),
                on("p-y2", "node-y", &["foo", "bar"]),
                f("p-y3", "node-y"),
                on("p-y4", "node-y", &["foo", "bar"]),
            ],
            Some(vec![
                zone_3_4(),
                ws(
                    nodec(bar()),
                    &[("node-a", 1), ("node-b", 0), ("node-y", 2)],
                    [("node-b", 0), ("node-a", 1)],
                ),
            ]),
        ),
        sc(
            "two spreadConstraints, and with podAffinity",
            p().affinity_not_in("node", &["node-x"])
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo()),
            four(),
            pods_3_4(),
            Some(vec![
                zone_3_4(),
                ws(
                    nodec(foo()),
                    &[("node-a", 2), ("node-b", 1), ("node-y", 4)],
                    [("node-b", 1), ("node-a", 2)],
                ),
            ]),
        ),
        sc(
            "default constraints and a service",
            pod("p").label("foo", "bar").label("baz", "kar"),
            vec![],
            vec![],
            Some(vec![
                ws(want(3, "node", labels(&[("foo", "bar")])), &[], NO_PATHS),
                ws(want(5, "rack", labels(&[("foo", "bar")])), &[], NO_PATHS),
            ]),
        )
        .defaults(
            vec![
                default_constraint(3, "node", DNS),
                default_constraint(2, "node", SA),
                default_constraint(5, "rack", DNS),
            ],
            vec![service(&[("foo", "bar")])],
        ),
        sc(
            "default constraints and a service that doesn't match",
            pod("p").label("foo", "bar"),
            vec![],
            vec![],
            None,
        )
        .defaults(
            vec![default_constraint(3, "node", DNS)],
            vec![service(&[("baz", "kep")])],
        ),
        sc(
            "default constraints and a service, but pod has constraints",
            pod("p")
                .label("foo", "bar")
                .label("baz", "tar")
                .spread(1, "zone", DNS, labels(&[("baz", "tar")]))
                .spread(2, "planet", SA, labels(&[("fot", "rok")])),
            vec![],
            vec![],
            Some(vec![ws(
                want(1, "zone", labels(&[("baz", "tar")])),
                &[],
                NO_PATHS,
            )]),
        )
        .defaults(
            vec![default_constraint(2, "node", DNS)],
            vec![service(&[("foo", "bar")])],
        ),
        sc(
            "default soft constraints and a service",
            pod("p").label("foo", "bar"),
            vec![],
            vec![],
            None,
        )
        .defaults(
            vec![default_constraint(2, "node", SA)],
            vec![service(&[("foo", "bar")])],
        ),
        sc(
            "TpKeyToDomainsNum is calculated when MinDomains is enabled",
            p().spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo()),
            four(),
            pods_3_4(),
            Some(vec![
                zone_3_4(),
                ws(
                    nodec(foo()),
                    &[("node-a", 2), ("node-b", 1), ("node-x", 0), ("node-y", 4)],
                    [("node-x", 0), ("node-b", 1)],
                ),
            ]),
        ),
        sc(
            "feature gate disabled with NodeAffinityPolicy",
            p().node_selector("foo", "").spread(1, "node", DNS, bar()),
            sel_nodes(),
            abcd(),
            Some(vec![ws(nodec(bar()), &a1b2(), a1b2())]),
        ),
        sc(
            "NodeAffinityPolicy honored with labelSelectors",
            p().node_selector("foo", "").spread(1, "node", DNS, bar()),
            sel_nodes(),
            abcd(),
            Some(vec![ws(nodec(bar()), &a1b2(), a1b2())]),
        ),
        sc(
            "NodeAffinityPolicy ignored with labelSelectors",
            p().node_selector("foo", "")
                .spread(1, "node", DNS, bar())
                .affinity_policy("Ignore"),
            sel_nodes(),
            abcd(),
            Some(vec![ws(
                nodec(bar()).affinity_ignored(),
                &a1b2c0(),
                [("node-c", 0), ("node-a", 1)],
            )]),
        ),
        sc(
            "NodeAffinityPolicy honored with nodeAffinity",
            p().affinity_in("foo", &[""]).spread(1, "node", DNS, bar()),
            sel_nodes(),
            vec![
                b("p-a", "node-a"),
                b("p-c", "node-b"),
                b("p-d", "node-b"),
                pod("p-e").node("node-c"),
            ],
            Some(vec![ws(nodec(bar()), &a1b2(), a1b2())]),
        ),
        sc(
            "NodeAffinityPolicy ignored with nodeAffinity",
            p().affinity_in("foo", &[""])
                .spread(1, "node", DNS, bar())
                .affinity_policy("Ignore"),
            sel_nodes(),
            abcd(),
            Some(vec![ws(
                nodec(bar()).affinity_ignored(),
                &a1b2c0(),
                [("node-c", 0), ("node-a", 1)],
            )]),
        ),
        sc(
            "feature gate disabled with NodeTaintsPolicy",
            p().spread(1, "node", DNS, bar()),
            taint_nodes(),
            abcd(),
            Some(vec![ws(
                nodec(bar()),
                &a1b2c0(),
                [("node-c", 0), ("node-a", 1)],
            )]),
        ),
        sc(
            "NodeTaintsPolicy ignored",
            p().spread(1, "node", DNS, bar()),
            taint_nodes(),
            abcd(),
            Some(vec![ws(
                nodec(bar()),
                &a1b2c0(),
                [("node-c", 0), ("node-a", 1)],
            )]),
        ),
        sc(
            "NodeTaintsPolicy honored",
            p().spread(1, "node", DNS, bar()).taints_policy("Honor"),
            taint_nodes(),
            abcd(),
            Some(vec![ws(nodec(bar()).taints_honored(), &a1b2(), a1b2())]),
        ),
        sc(
            "NodeTaintsPolicy honored with tolerated taints",
            p().toleration("node.kubernetes.io/unschedulable")
                .spread(1, "node", DNS, bar())
                .taints_policy("Honor"),
            taint_nodes(),
            abcd(),
            Some(vec![ws(
                nodec(bar()).taints_honored(),
                &a1b2c0(),
                [("node-c", 0), ("node-a", 1)],
            )]),
        ),
        sc(
            "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
            p().node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo())
                .affinity_policy("Ignore"),
            vec![
                zn("node-a", "zone1").label("foo", ""),
                zn("node-b", "zone1"),
                zn("node-x", "zone2").label("foo", ""),
            ],
            vec![
                f("p-b1", "node-b"),
                f("p-b2", "node-b"),
                f("p-x1", "node-x"),
            ],
            Some(vec![
                ws(
                    zone(foo()),
                    &[("zone1", 0), ("zone2", 1)],
                    [("zone1", 0), ("zone2", 1)],
                ),
                ws(
                    nodec(foo()).affinity_ignored(),
                    &[("node-a", 0), ("node-b", 2), ("node-x", 1)],
                    [("node-a", 0), ("node-x", 1)],
                ),
            ]),
        ),
        sc(
            "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
            p().spread(1, "zone", DNS, foo())
                .taints_policy("Honor")
                .spread(1, "node", DNS, foo()),
            vec![
                zn("node-a", "zone1").label("foo", ""),
                zn("node-b", "zone1").tainted(),
                zn("node-x", "zone2").label("foo", ""),
            ],
            vec![
                f("p-b1", "node-b"),
                f("p-b2", "node-b"),
                f("p-x1", "node-x"),
            ],
            Some(vec![
                ws(
                    zone(foo()).taints_honored(),
                    &[("zone1", 0), ("zone2", 1)],
                    [("zone1", 0), ("zone2", 1)],
                ),
                ws(
                    nodec(foo()),
                    &[("node-a", 0), ("node-b", 2), ("node-x", 1)],
                    [("node-a", 0), ("node-x", 1)],
                ),
            ]),
        ),
        sc(
            "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
            p().node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "node", DNS, foo()),
            vec![
                zn("node-a", "zone1"),
                zn("node-b", "zone1").label("foo", "").tainted(),
                zn("node-x", "zone2").label("foo", ""),
                zn("node-y", "zone2"),
            ],
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a"),
                f("p-x1", "node-x"),
                f("p-y1", "node-y"),
            ],
            Some(vec![
                ws(
                    zone(foo()),
                    &[("zone1", 0), ("zone2", 1)],
                    [("zone1", 0), ("zone2", 1)],
                ),
                ws(
                    nodec(foo()),
                    &[("node-b", 0), ("node-x", 1)],
                    [("node-b", 0), ("node-x", 1)],
                ),
            ]),
        ),
        sc(
            "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
            p().node_selector("foo", "")
                .spread(1, "zone", DNS, foo())
                .affinity_policy("Ignore")
                .spread(1, "node", DNS, foo())
                .taints_policy("Honor"),
            vec![
                zn("node-a", "zone1"),
                zn("node-b", "zone1").label("foo", "").tainted(),
                zn("node-x", "zone2").label("foo", ""),
                zn("node-y", "zone2").label("foo", ""),
            ],
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a"),
                f("p-x1", "node-x"),
                f("p-x2", "node-x"),
                f("p-y1", "node-y"),
            ],
            Some(vec![
                ws(
                    zone(foo()).affinity_ignored(),
                    &[("zone1", 2), ("zone2", 3)],
                    [("zone1", 2), ("zone2", 3)],
                ),
                ws(
                    nodec(foo()).taints_honored(),
                    &[("node-x", 2), ("node-y", 1)],
                    [("node-y", 1), ("node-x", 2)],
                ),
            ]),
        ),
        sc(
            "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
            pod("p")
                .label("foo", "")
                .label("bar", "a")
                .spread(1, "zone", DNS, foo())
                .match_label_keys(&["bar"]),
            four(),
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a").label("bar", "a"),
                f("p-b1", "node-b"),
                f("p-y1", "node-y").label("bar", "a"),
                b("p-y2", "node-y"),
            ],
            Some(vec![ws(
                zone(Some(json!({
                    "matchLabels": {"bar": "a"},
                    "matchExpressions": [{"key": "foo", "operator": "Exists"}]
                }))),
                &[("zone1", 1), ("zone2", 1)],
                [("zone2", 1), ("zone1", 1)],
            )]),
        ),
        sc(
            "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
            pod("p")
                .label("foo", "a")
                .spread(1, "zone", DNS, empty_sel())
                .match_label_keys(&["foo"]),
            four(),
            pods_foo_a(),
            Some(vec![ws(
                zone(labels(&[("foo", "a")])),
                &[("zone1", 3), ("zone2", 2)],
                [("zone2", 2), ("zone1", 3)],
            )]),
        ),
        sc(
            "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
            p().spread(1, "zone", DNS, None).match_label_keys(&["bar"]),
            four(),
            pods_foo_a(),
            Some(vec![ws(
                zone(None),
                &[("zone1", 0), ("zone2", 0)],
                [("zone2", 0), ("zone1", 0)],
            )]),
        ),
        sc(
            "no pod is matched when LabelSelector is nil when feature gate disabled",
            p().spread(1, "zone", DNS, None).match_label_keys(&["bar"]),
            four(),
            pods_foo_a(),
            Some(vec![ws(
                zone(None),
                &[("zone1", 0), ("zone2", 0)],
                [("zone2", 0), ("zone1", 0)],
            )]),
        ),
        sc(
            "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
            p().spread(1, "zone", DNS, foo()).match_label_keys(&["bar"]),
            four(),
            pods_foo_a(),
            Some(vec![ws(
                zone(foo()),
                &[("zone1", 3), ("zone2", 2)],
                [("zone2", 2), ("zone1", 3)],
            )]),
        ),
        sc(
            "two spreadConstraints with the same topologyKey",
            p().label("bar", "")
                .spread(1, "zone", DNS, foo())
                .spread(1, "zone", DNS, bar()),
            four(),
            vec![
                on("p-a1", "node-a", &["foo", "bar"]),
                f("p-b1", "node-b"),
                b("p-x1", "node-x"),
                on("p-y1", "node-y", &["foo", "bar"]),
                b("p-y2", "node-y"),
            ],
            Some(vec![
                ws(
                    zone(foo()),
                    &[("zone1", 2), ("zone2", 1)],
                    [("zone2", 1), ("zone1", 2)],
                ),
                ws(
                    zone(bar()),
                    &[("zone1", 1), ("zone2", 3)],
                    [("zone1", 1), ("zone2", 3)],
                ),
            ]),
        ),
        sc(
            "skip if not specified",
            p(),
            vec![zn("node-a", "zone1")],
            vec![],
            None,
        ),
    ];
    assert_eq!(cases.len(), 35);
    let (ran, failures) = run_state_cases(&cases);
    assert_eq!(ran, 35);
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---------------------------------------------------------------------------------------------
// Score: TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore.

#[test]
fn kube_pre_score_skip() {
    type Case = (&'static str, PodTopologySpread, P, Vec<N>, Vec<Workload>);
    let cases: Vec<Case> = vec![
        (
            "the pod doesn't have soft topology spread Constraints",
            PodTopologySpread::without_defaults(),
            pod("p").ns("default"),
            vec![hn("node-a"), hn("node-b")],
            vec![],
        ),
        (
            "default constraints and a replicaset that doesn't match",
            PodTopologySpread::with_defaults(DefaultConstraints::List(vec![default_constraint(
                2, "planet", SA,
            )])),
            pod("p")
                .ns("default")
                .label("foo", "bar")
                .label("baz", "sup")
                .owner_rs("rs2"),
            vec![node("node-a").label("planet", "mars")],
            vec![replica_set("rs1", exists("tar"))],
        ),
    ];
    let mut ran = 0;
    for (name, pl, p, nodes, workloads) in &cases {
        let s = snap(nodes, &[], workloads.clone());
        let p = p.obj();
        let cx = CycleContext::for_version(&p, &s, V);
        let feasible: Vec<u32> = (0..s.len() as u32).collect();
        // v1.34 skips the plugin: every node gets 0 from it.
        match Priority::prepare(pl, &cx, &feasible) {
            Ok(PreparedScore::Constant(0)) => {}
            Ok(PreparedScore::Constant(c)) => panic!("{name}: constant {c}, want skip"),
            Ok(PreparedScore::Run(_)) => panic!("{name}: ran, want skip"),
            Err(e) => panic!("{name}: {e}"),
        }
        ran += 1;
    }
    assert_eq!(ran, 2);
}

struct ScoreStateCase {
    name: &'static str,
    pl: PodTopologySpread,
    pod: P,
    nodes: Vec<N>,
    workloads: Vec<Workload>,
    /// Per constraint: the constraint, `TopologyValueToPodCounts`, the size the normalizing
    /// weight is `ln(size + 2)` of.
    want: Vec<(Want, BTreeMap<String, i64>, usize)>,
    ignored: Vec<&'static str>,
}

#[test]
fn kube_pre_score_state_empty_nodes() {
    let list = PodTopologySpread::without_defaults;
    let p = || pod("p").label("foo", "");
    let zone2 = || counts(&[("zone1", 0), ("zone2", 0)]);
    let policy_nodes = || {
        vec![
            zh("node-a", "zone1").label("foo", ""),
            zh("node-b", "zone1").label("foo", ""),
            zh("node-x", "zone2"),
        ]
    };
    let taint_nodes = || {
        vec![
            zh("node-a", "zone1").label("foo", ""),
            zh("node-b", "zone1").label("foo", ""),
            zh("node-x", "zone2").tainted(),
        ]
    };
    let abx = || {
        vec![
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-x", "zone2"),
        ]
    };
    let rs_pod = || {
        pod("p")
            .ns("default")
            .label("foo", "tar")
            .label("baz", "sup")
            .owner_rs("rs1")
    };
    let case = |name, pl, pod, nodes, want| ScoreStateCase {
        name,
        pl,
        pod,
        nodes,
        workloads: vec![],
        want,
        ignored: vec![],
    };
    let cases = vec![
        case(
            "normal case",
            list(),
            p().spread(1, "zone", SA, foo()).spread(1, HOST, SA, foo()),
            abx(),
            vec![
                (want(1, "zone", foo()), zone2(), 2),
                (want(1, HOST, foo()), counts(&[]), 3),
            ],
        ),
        case(
            "null selector",
            list(),
            p().spread(1, "zone", SA, None),
            abx(),
            vec![(want(1, "zone", None), zone2(), 2)],
        ),
        ScoreStateCase {
            ignored: vec!["node-x"],
            ..case(
                "node-x doesn't have label zone",
                list(),
                p().spread(1, "zone", SA, foo()).spread(1, HOST, SA, bar()),
                vec![zh("node-a", "zone1"), zh("node-b", "zone1"), hn("node-x")],
                vec![
                    (want(1, "zone", foo()), counts(&[("zone1", 0)]), 1),
                    (want(1, HOST, bar()), counts(&[]), 2),
                ],
            )
        },
        ScoreStateCase {
            workloads: vec![replica_set("rs1", foo())],
            ..case(
                "system default constraints and a replicaset",
                PodTopologySpread::new(),
                rs_pod(),
                vec![
                    hn("node-a").label("topology.kubernetes.io/zone", "mars"),
                    hn("node-b").label("topology.kubernetes.io/zone", "mars"),
                    hn("node-c"),
                    hn("node-d"),
                ],
                vec![
                    (want(3, HOST, foo()), counts(&[]), 4),
                    (
                        want(5, "topology.kubernetes.io/zone", foo()),
                        counts(&[("mars", 0), ("", 0)]),
                        2,
                    ),
                ],
            )
        },
        ScoreStateCase {
            workloads: vec![replica_set("rs1", foo())],
            ..case(
                "default constraints and a replicaset",
                PodTopologySpread::with_defaults(DefaultConstraints::List(vec![
                    default_constraint(1, HOST, SA),
                    default_constraint(2, "rack", DNS),
                    default_constraint(2, "planet", SA),
                ])),
                rs_pod(),
                vec![
                    node("node-a")
                        .label("rack", "rack1")
                        .label(HOST, "node-a")
                        .label("planet", "mars"),
                ],
                vec![
                    (want(1, HOST, foo()), counts(&[]), 1),
                    (want(2, "planet", foo()), counts(&[("mars", 0)]), 1),
                ],
            )
        },
        ScoreStateCase {
            workloads: vec![replica_set("rs1", foo())],
            ..case(
                "default constraints and a replicaset, but pod has constraints",
                PodTopologySpread::with_defaults(DefaultConstraints::List(vec![
                    default_constraint(2, "galaxy", SA),
                ])),
                pod("p")
                    .ns("default")
                    .label("foo", "bar")
                    .label("baz", "sup")
                    .owner_rs("rs1")
                    .spread(1, "zone", DNS, bar())
                    .spread(2, "planet", SA, labels(&[("baz", "sup")])),
                vec![
                    node("node-a")
                        .label("planet", "mars")
                        .label("galaxy", "andromeda"),
                ],
                vec![(
                    want(2, "planet", labels(&[("baz", "sup")])),
                    counts(&[("mars", 0)]),
                    1,
                )],
            )
        },
        case(
            "NodeAffinityPolicy honored with labelSelectors",
            list(),
            p().node_selector("foo", "").spread(1, "zone", SA, bar()),
            policy_nodes(),
            vec![(want(1, "zone", bar()), zone2(), 2)],
        ),
        case(
            "NodeAffinityPolicy ignored with labelSelectors",
            list(),
            p().node_selector("foo", "")
                .spread(1, "zone", SA, bar())
                .affinity_policy("Ignore"),
            policy_nodes(),
            vec![(want(1, "zone", bar()).affinity_ignored(), zone2(), 2)],
        ),
        case(
            "NodeAffinityPolicy honored with nodeAffinity",
            list(),
            p().affinity_in("foo", &[""]).spread(1, "zone", SA, bar()),
            policy_nodes(),
            vec![(want(1, "zone", bar()), zone2(), 2)],
        ),
        case(
            "NodeAffinityPolicy ignored with nodeAffinity",
            list(),
            p().affinity_in("foo", &[""])
                .spread(1, "zone", SA, bar())
                .affinity_policy("Ignore"),
            policy_nodes(),
            vec![(want(1, "zone", bar()).affinity_ignored(), zone2(), 2)],
        ),
        case(
            "NodeTaintsPolicy honored",
            list(),
            p().spread(1, "zone", SA, bar()).taints_policy("Honor"),
            taint_nodes(),
            vec![(want(1, "zone", bar()).taints_honored(), zone2(), 2)],
        ),
        case(
            "NodeTaintsPolicy ignored",
            list(),
            p().spread(1, "zone", SA, bar()),
            taint_nodes(),
            vec![(want(1, "zone", bar()), zone2(), 2)],
        ),
    ];
    assert_eq!(cases.len(), 12);
    let mut failures = Vec::new();
    let mut ran = 0;
    for c in &cases {
        ran += 1;
        let s = snap(&c.nodes, &[], c.workloads.clone());
        let p = c.pod.obj();
        let cx = CycleContext::for_version(&p, &s, V);
        let feasible: Vec<u32> = (0..s.len() as u32).collect();
        let st = match Priority::prepare(&c.pl, &cx, &feasible) {
            Ok(PreparedScore::Run(st)) => st,
            Ok(PreparedScore::Constant(k)) => {
                failures.push(format!("{}: constant {k}", c.name));
                continue;
            }
            Err(e) => {
                failures.push(format!("{}: {e}", c.name));
                continue;
            }
        };
        let (per, ignored) = st.view(&s);
        let got_ignored: Vec<&str> = feasible
            .iter()
            .zip(ignored)
            .filter(|(_, ig)| **ig)
            .map(|(&i, _)| s.node(i as usize).info().name())
            .collect();
        if got_ignored != c.ignored {
            failures.push(format!(
                "{}: ignored {got_ignored:?}, want {:?}",
                c.name, c.ignored
            ));
        }
        if per.len() != c.want.len() {
            failures.push(format!("{}: {} constraints", c.name, per.len()));
            continue;
        }
        for (i, ((con, counts, weight), (w, wc, size))) in per.iter().zip(&c.want).enumerate() {
            let g = got(con);
            if g != *w {
                failures.push(format!("{} [{i}]: constraint {g:?}, want {w:?}", c.name));
            }
            if counts != wc {
                failures.push(format!("{} [{i}]: counts {counts:?}, want {wc:?}", c.name));
            }
            // kube's topologyNormalizingWeight(size).
            let want_weight = ((size + 2) as f64).ln();
            if *weight != want_weight {
                failures.push(format!(
                    "{} [{i}]: weight {weight}, want ln({size} + 2) = {want_weight}",
                    c.name
                ));
            }
        }
    }
    assert_eq!(ran, 12);
    assert!(failures.is_empty(), "{failures:#?}");
}

struct ScoreCase {
    name: &'static str,
    pod: P,
    pods: Vec<P>,
    nodes: Vec<N>,
    failed: Vec<N>,
    workloads: Vec<Workload>,
    want: Vec<i64>,
}

fn score_case(
    name: &'static str,
    pod: P,
    pods: Vec<P>,
    nodes: Vec<N>,
    failed: Vec<N>,
    want: &[i64],
) -> ScoreCase {
    ScoreCase {
        name,
        pod,
        pods,
        nodes,
        failed,
        workloads: vec![],
        want: want.to_vec(),
    }
}

#[test]
fn kube_pod_topology_spread_score() {
    let f = |name: &str, n: &str| on(name, n, &["foo"]);
    let p = || pod("p").label("foo", "");
    let host = |max_skew| p().spread(max_skew, HOST, SA, foo());
    let abcd = || vec![hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")];
    let pods_2103 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-b1", "node-b"),
            f("p-d1", "node-d"),
            f("p-d2", "node-d"),
            f("p-d3", "node-d"),
        ]
    };
    let pods_4321 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-a3", "node-a"),
            f("p-a4", "node-a"),
            f("p-b1", "node-b"),
            f("p-b2", "node-b"),
            f("p-b3", "node-b"),
            f("p-c1", "node-c"),
            f("p-c2", "node-c"),
            f("p-d1", "node-d"),
        ]
    };
    let pods_4213 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-a3", "node-a"),
            f("p-a4", "node-a"),
            f("p-b1", "node-b"),
            f("p-b2", "node-b"),
            f("p-x1", "node-x"),
            f("p-y1", "node-y"),
            f("p-y2", "node-y"),
            f("p-y3", "node-y"),
        ]
    };
    let pods_2111 = || {
        vec![
            f("p-a1", "node-a"),
            f("p-a2", "node-a"),
            f("p-b1", "node-b"),
            f("p-c1", "node-c"),
        ]
    };
    let policy_nodes = || {
        vec![
            nn("node-a").label("foo", ""),
            nn("node-b").label("foo", ""),
            nn("node-c"),
        ]
    };
    let taint_nodes = || vec![nn("node-a"), nn("node-b"), nn("node-c").tainted()];
    let foo_bar = || {
        pod("p")
            .label("foo", "")
            .label("bar", "")
            .spread(1, "zone", SA, foo())
            .spread(1, HOST, SA, bar())
    };
    let fb4 = || {
        vec![
            f("p-a1", "node-a"),
            on("p-b1", "node-b", &["foo", "bar"]),
            f("p-y1", "node-y"),
            on("p-y2", "node-y", &["bar"]),
        ]
    };
    let zabxy = || {
        vec![
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-x", "zone2"),
            zh("node-y", "zone2"),
        ]
    };
    let zabcd = || {
        vec![
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-c", "zone2"),
            zh("node-d", "zone2"),
        ]
    };
    let cases = vec![
        score_case(
            "one constraint on node, no existing pods",
            host(1),
            vec![],
            vec![hn("node-a"), hn("node-b")],
            vec![],
            &[100, 100],
        ),
        score_case(
            "one constraint on node, only one node is candidate",
            host(1),
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a"),
                f("p-b1", "node-b"),
            ],
            vec![hn("node-a")],
            vec![hn("node-b")],
            &[100],
        ),
        score_case(
            "one constraint on node, all nodes have the same number of matching pods",
            host(1),
            vec![f("p-a1", "node-a"), f("p-b1", "node-b")],
            vec![hn("node-a"), hn("node-b")],
            vec![],
            &[100, 100],
        ),
        score_case(
            "one constraint on node, all 4 nodes are candidates",
            host(1),
            pods_2103(),
            abcd(),
            vec![],
            &[20, 60, 100, 0],
        ),
        score_case(
            "one constraint on node, null selector",
            p().spread(1, HOST, SA, None),
            pods_2103(),
            abcd(),
            vec![],
            &[100, 100, 100, 100],
        ),
        score_case(
            "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            host(2),
            pods_2103(),
            abcd(),
            vec![],
            &[33, 66, 100, 16],
        ),
        score_case(
            "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            host(3),
            pods_4321(),
            abcd(),
            vec![],
            &[44, 66, 77, 100],
        ),
        ScoreCase {
            workloads: vec![service(&[("foo", "")])],
            ..score_case(
                "system defaulting, nodes don't have zone, pods match service",
                p(),
                pods_4321(),
                abcd(),
                vec![],
                &[44, 66, 77, 100],
            )
        },
        score_case(
            "one constraint on node, 3 out of 4 nodes are candidates",
            host(1),
            pods_4213(),
            vec![hn("node-a"), hn("node-b"), hn("node-x")],
            vec![hn("node-y")],
            &[33, 83, 100],
        ),
        score_case(
            "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            host(1),
            pods_4213(),
            vec![
                hn("node-a"),
                node("node-b").label("n", "node-b"),
                hn("node-x"),
            ],
            vec![hn("node-y")],
            &[16, 0, 100],
        ),
        score_case(
            "one constraint on zone, 3 out of 4 nodes are candidates",
            p().spread(1, "zone", SA, foo()),
            pods_4213(),
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
            ],
            vec![zh("node-y", "zone2")],
            &[75, 75, 100],
        ),
        score_case(
            "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            p().spread(1, "zone", SA, foo()).spread(1, HOST, SA, foo()),
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a"),
                f("p-b1", "node-b"),
                f("p-x1", "node-x"),
                f("p-x2", "node-x"),
                f("p-y1", "node-y"),
                f("p-y2", "node-y"),
                f("p-y3", "node-y"),
                f("p-y4", "node-y"),
            ],
            vec![zh("node-a", "zone1"), zh("node-x", "zone2")],
            vec![zh("node-b", "zone1"), zh("node-y", "zone2")],
            &[100, 63],
        ),
        score_case(
            "two Constraints on zone, 2 out of 4 nodes are candidates",
            pod("p")
                .label("foo", "")
                .label("bar", "")
                .spread(1, "zone", SA, foo())
                .spread(1, "zone", SA, bar()),
            vec![
                on("p-a1", "node-a", &["foo", "bar"]),
                f("p-a2", "node-a"),
                on("p-b1", "node-b", &["foo", "bar"]),
                f("p-y1", "node-y"),
                on("p-y2", "node-y", &["foo", "bar"]),
                f("p-y3", "node-y"),
            ],
            vec![
                node("node-a").label("zone", "zone1"),
                node("node-x").label("zone", "zone2"),
            ],
            vec![
                node("node-b").label("zone", "zone1"),
                node("node-y").label("zone", "zone2"),
            ],
            &[85, 100],
        ),
        score_case(
            "two Constraints on zone and node, with different labelSelectors",
            foo_bar(),
            fb4(),
            zabxy(),
            vec![],
            &[60, 20, 100, 60],
        ),
        score_case(
            "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
            foo_bar(),
            vec![
                on("p-b1", "node-b", &["bar"]),
                f("p-x1", "node-x"),
                on("p-y1", "node-y", &["foo", "bar"]),
            ],
            zabxy(),
            vec![],
            &[100, 60, 40, 0],
        ),
        score_case(
            "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
            foo_bar(),
            fb4(),
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
            ],
            vec![zh("node-y", "zone2")],
            &[50, 25, 100],
        ),
        score_case(
            "existing pods in a different namespace do not count",
            host(1),
            vec![
                f("p-a1", "node-a").ns("ns1"),
                f("p-a2", "node-a"),
                f("p-b1", "node-b"),
                f("p-b2", "node-b"),
            ],
            vec![hn("node-a"), hn("node-b")],
            vec![],
            &[100, 33],
        ),
        score_case(
            "terminating Pods should be excluded",
            host(1),
            vec![f("p-a", "node-a").terminating(), f("p-b", "node-b")],
            vec![hn("node-a"), hn("node-b")],
            vec![],
            &[100, 0],
        ),
        score_case(
            "minDomains has no effect when ScheduleAnyway",
            p().spread(2, "node", SA, foo()).min_domains(10),
            vec![
                f("p-a1", "node-a"),
                f("p-a2", "node-a"),
                f("p-b1", "node-b"),
                f("p-b2", "node-b"),
                f("p-c1", "node-c"),
            ],
            vec![nn("node-a"), nn("node-b"), nn("node-c")],
            vec![],
            &[75, 75, 100],
        ),
        score_case(
            "NodeAffinityPolicy honoed with labelSelectors",
            p().node_selector("foo", "").spread(1, "node", SA, foo()),
            pods_2111(),
            policy_nodes(),
            vec![],
            &[0, 33, 100],
        ),
        score_case(
            "NodeAffinityPolicy ignored with labelSelectors",
            p().node_selector("foo", "")
                .spread(1, "node", SA, foo())
                .affinity_policy("Ignore"),
            pods_2111(),
            policy_nodes(),
            vec![],
            &[66, 100, 100],
        ),
        score_case(
            "NodeAffinityPolicy honoed with nodeAffinity",
            p().affinity_in("foo", &[""]).spread(1, "node", SA, foo()),
            pods_2111(),
            policy_nodes(),
            vec![],
            &[0, 33, 100],
        ),
        score_case(
            "NodeAffinityPolicy ignored with nodeAffinity",
            p().affinity_in("foo", &[""])
                .spread(1, "node", SA, foo())
                .affinity_policy("Ignore"),
            pods_2111(),
            policy_nodes(),
            vec![],
            &[66, 100, 100],
        ),
        score_case(
            "NodeTaintsPolicy honored",
            p().spread(1, "node", SA, foo()).taints_policy("Honor"),
            pods_2111(),
            taint_nodes(),
            vec![],
            &[0, 33, 100],
        ),
        score_case(
            "NodeTaintsPolicy ignored",
            p().spread(1, "node", SA, foo()),
            pods_2111(),
            taint_nodes(),
            vec![],
            &[66, 100, 100],
        ),
        score_case(
            "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
            pod("p")
                .label("foo", "")
                .label("bar", "")
                .spread(1, "zone", SA, empty_sel())
                .match_label_keys(&["foo"])
                .spread(1, HOST, SA, empty_sel())
                .match_label_keys(&["bar"]),
            vec![
                f("p-a1", "node-a"),
                on("p-b1", "node-b", &["foo", "bar"]),
                f("p-y1", "node-c"),
                on("p-y2", "node-c", &["bar"]),
            ],
            zabcd(),
            vec![],
            &[60, 20, 60, 100],
        ),
        score_case(
            "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
            pod("p")
                .label("foo", "")
                .label("bar", "")
                .label("baz", "")
                .spread(1, "zone", SA, foo())
                .spread(1, HOST, SA, bar())
                .match_label_keys(&["baz"]),
            vec![
                f("p-a1", "node-a"),
                on("p-b1", "node-b", &["foo", "bar", "baz"]),
                f("p-c1", "node-c"),
                on("p-c2", "node-c", &["bar"]),
                on("p-d3", "node-c", &["bar", "baz"]),
            ],
            zabcd(),
            vec![],
            &[60, 20, 60, 100],
        ),
    ];
    assert_eq!(cases.len(), 27);
    // kube's TestPodTopologySpreadScore runs with SystemDefaulting.
    let pl = PodTopologySpread::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for c in &cases {
        ran += 1;
        let all = [c.nodes.clone(), c.failed.clone()].concat();
        let s = snap(&all, &c.pods, c.workloads.clone());
        let p = c.pod.obj();
        let cx = CycleContext::for_version(&p, &s, V);
        let feasible: Vec<u32> = (0..c.nodes.len() as u32).collect();
        let got = match Priority::prepare(&pl, &cx, &feasible) {
            Ok(PreparedScore::Constant(k)) => vec![k; feasible.len()],
            Ok(PreparedScore::Run(st)) => {
                let mut scores: Vec<i64> = feasible
                    .iter()
                    .map(|&i| pl.score(&cx, &st, s.node(i as usize)))
                    .collect();
                pl.normalize(&cx, &st, &mut scores);
                scores
            }
            Err(e) => {
                failures.push(format!("{}: {e}", c.name));
                continue;
            }
        };
        if got != c.want {
            failures.push(format!("{}: got {got:?}, want {:?}", c.name, c.want));
        }
    }
    assert_eq!(ran, 27);
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---------------------------------------------------------------------------------------------
// v1.34 differences kube's tables do not cover.

/// Filter codes and the PreFilter counts of the first constraint.
fn filter_with(
    version: KubeVersion,
    p: &P,
    nodes: &[N],
    pods: &[P],
) -> (Vec<&'static str>, BTreeMap<String, i64>) {
    let pl = PodTopologySpread::without_defaults();
    let s = snap(nodes, pods, Vec::new());
    let p = p.obj();
    let cx = CycleContext::for_version(&p, &s, version);
    match Predicate::prepare(&pl, &cx).expect("prefilter") {
        Prepared::Skip => panic!("skipped"),
        Prepared::Run(st) => (
            (0..s.len())
                .map(|i| code(&pl.filter(&cx, &st, s.node(i))))
                .collect(),
            st.view(&s)[0].1.clone(),
        ),
        _ => unreachable!("PodTopologySpread neither passes, narrows nor rejects"),
    }
}

fn scores_with(version: KubeVersion, p: &P, nodes: &[N], pods: &[P]) -> Vec<i64> {
    let pl = PodTopologySpread::without_defaults();
    let s = snap(nodes, pods, Vec::new());
    let p = p.obj();
    let cx = CycleContext::for_version(&p, &s, version);
    let feasible: Vec<u32> = (0..s.len() as u32).collect();
    match Priority::prepare(&pl, &cx, &feasible).expect("prescore") {
        PreparedScore::Constant(k) => vec![k; feasible.len()],
        PreparedScore::Run(st) => {
            let mut scores: Vec<i64> = feasible
                .iter()
                .map(|&i| pl.score(&cx, &st, s.node(i as usize)))
                .collect();
            pl.normalize(&cx, &st, &mut scores);
            scores
        }
    }
}

/// kube v1.27+ counts no pod for a selector without requirements (`countPodsMatchSelector`
/// returns 0 when `selector.Empty()`), though the pod itself still matches `{}`; v1.20 counted
/// every pod of the namespace.
#[test]
fn empty_selector_counts_no_pods_in_v1_34() {
    let pods = [
        on("p-a1", "node-a", &["foo"]),
        on("p-a2", "node-a", &["app"]),
    ];
    let filter_pod = pod("p")
        .label("foo", "")
        .spread(1, "zone", DNS, empty_sel());
    let (codes, counts_34) = filter_with(V, &filter_pod, &four(), &pods);
    assert_eq!(codes, [OK, OK, OK, OK]);
    assert_eq!(counts_34, counts(&[("zone1", 0), ("zone2", 0)]));
    let (codes, counts_20) = filter_with(KubeVersion::V1_20, &filter_pod, &four(), &pods);
    assert_eq!(codes, [U, U, OK, OK]);
    assert_eq!(counts_20, counts(&[("zone1", 2), ("zone2", 0)]));

    let score_pod = pod("p").label("foo", "").spread(1, "zone", SA, empty_sel());
    assert_eq!(
        scores_with(V, &score_pod, &four(), &pods),
        [100, 100, 100, 100]
    );
    assert_eq!(
        scores_with(KubeVersion::V1_20, &score_pod, &four(), &pods),
        [0, 0, 100, 100]
    );
}

/// kube v1.34's `mergeLabelSetWithSelector` keeps `labels.Nothing()` when the constraint has no
/// labelSelector: the matchLabelKeys are ignored and no pod counts (nor the pod itself).
#[test]
fn match_label_keys_ignored_without_label_selector() {
    let pods = [
        pod("p-a1").node("node-a").label("app", "web"),
        pod("p-a2").node("node-a").label("app", "web"),
    ];
    let filter_pod = pod("p")
        .label("app", "web")
        .spread(1, "zone", DNS, None)
        .match_label_keys(&["app"]);
    let (codes, c) = filter_with(V, &filter_pod, &four(), &pods);
    assert_eq!(codes, [OK, OK, OK, OK]);
    assert_eq!(c, counts(&[("zone1", 0), ("zone2", 0)]));

    let score_pod = pod("p")
        .label("app", "web")
        .spread(1, "zone", SA, None)
        .match_label_keys(&["app"]);
    assert_eq!(
        scores_with(V, &score_pod, &four(), &pods),
        [100, 100, 100, 100]
    );

    // With a labelSelector the keys are ANDed in (kube's table covers this too).
    let with_sel = pod("p")
        .label("app", "web")
        .spread(1, "zone", DNS, exists("app"))
        .match_label_keys(&["app"]);
    let (codes, c) = filter_with(V, &with_sel, &four(), &pods);
    assert_eq!(codes, [U, U, OK, OK]);
    assert_eq!(c, counts(&[("zone1", 2), ("zone2", 0)]));
}
