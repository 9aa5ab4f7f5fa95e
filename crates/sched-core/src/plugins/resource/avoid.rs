//! `NodePreferAvoidPodsPriority`.

use serde_json::{Map, Value};

use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, PluginError, PreparedScore, Priority};
use crate::model::Node;
use crate::snapshot::NodeRef;
use crate::snapshot::flags;

/// The node annotation listing controllers whose pods should avoid the node.
pub const PREFER_AVOID_PODS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// `NodePreferAvoidPodsPriority`: 0 on nodes whose `scheduler.alpha.kubernetes.io/preferAvoidPods`
/// annotation names the pod's controller, 100 elsewhere. kube's default Policy gives it weight
/// 10000, so in practice such a node is only chosen when nothing else fits.
///
/// kube's NodePreferAvoidPods: the pod's controller is its first owner reference with
/// `controller: true`, and only kinds `ReplicationController` and `ReplicaSet` count (any other
/// pod scores 100 everywhere). The annotation is an `AvoidPods` JSON object,
/// `{"preferAvoidPods": [{"podSignature": {"podController": {"kind": ..., "uid": ...}},
/// "evictionTime": ..., "reason": ..., "message": ...}]}`; an entry matches when kind and uid
/// are equal. An empty or unparsable annotation (invalid JSON, a field of the wrong type, an
/// `evictionTime` that is not RFC 3339) counts as no annotation, as kube's
/// `GetAvoidPodsFromNodeAnnotations` error does. Keys are matched case-insensitively and unknown
/// keys ignored, as Go's `encoding/json` does. No argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodePreferAvoidPodsPriority;

/// Snapshot indices (sorted) of the feasible nodes that avoid the pod's controller.
#[derive(Debug, Default)]
pub struct AvoidingNodes(Vec<u32>);

impl NodePreferAvoidPodsPriority {
    /// The legacy Policy name.
    pub const NAME: &'static str = "NodePreferAvoidPodsPriority";

    /// The priority.
    pub fn new() -> NodePreferAvoidPodsPriority {
        NodePreferAvoidPodsPriority
    }
}

/// Looks a struct field up as Go's `encoding/json` does: an exact key first, else a key equal
/// under case folding.
fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// A JSON object, or `None` for `null`; `Err` for any other type (Go's UnmarshalTypeError).
fn object(v: Option<&Value>) -> Result<Option<&Map<String, Value>>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(()),
    }
}

/// A string field (`""` for absent or null).
fn string<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a str, ()> {
    match field(obj, name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(()),
    }
}

/// A `*bool` field.
fn opt_bool(obj: &Map<String, Value>, name: &str) -> Result<(), ()> {
    match field(obj, name) {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
        Some(_) => Err(()),
    }
}

fn two(b: &[u8], i: usize) -> Option<u32> {
    let (a, c) = (*b.get(i)?, *b.get(i + 1)?);
    (a.is_ascii_digit() && c.is_ascii_digit())
        .then(|| u32::from(a - b'0') * 10 + u32::from(c - b'0'))
}

/// Whether Go's `time.Parse(time.RFC3339, s)` accepts `s`
/// (`2006-01-02T15:04:05[.frac](Z|±07:00)`, with calendar ranges checked).
pub(crate) fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || !b[..4].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let (Some(month), Some(day), Some(hour), Some(min), Some(sec)) =
        (two(b, 5), two(b, 8), two(b, 11), two(b, 14), two(b, 17))
    else {
        return false;
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return false;
    }
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days || hour > 23 || min > 59 || sec > 59 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+') | Some(b'-') => {
            i + 6 == b.len()
                && b[i + 3] == b':'
                && two(b, i + 1).is_some_and(|h| h < 24)
                && two(b, i + 4).is_some_and(|m| m < 60)
        }
        _ => false,
    }
}

/// Whether the node's annotation lists the controller `(kind, uid)`. Unreadable annotations
/// list nothing.
fn node_avoids(node: &Node, kind: &str, uid: &str) -> bool {
    let Some(value) = node.metadata.annotations.get(PREFER_AVOID_PODS_ANNOTATION) else {
        return false;
    };
    if value.is_empty() {
        return false;
    }
    let Ok(doc) = serde_json::from_str::<Value>(value) else {
        return false;
    };
    parse_avoid_pods(&doc)
        .map(|entries| entries.iter().any(|&(k, u)| k == kind && u == uid))
        .unwrap_or(false)
}

/// Decodes an `AvoidPods` document into `(kind, uid)` pairs, failing where Go's decoder would
/// report an error.
fn parse_avoid_pods(doc: &Value) -> Result<Vec<(&str, &str)>, ()> {
    let Some(top) = object(Some(doc))? else {
        return Ok(Vec::new());
    };
    let entries = match field(top, "preferAvoidPods") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(()),
    };
    let mut out = Vec::new();
    let mut failed = false;
    for e in entries {
        let Some(entry) = object(Some(e))? else {
            continue;
        };
        match field(entry, "evictionTime") {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) if is_rfc3339(t) => {}
            Some(_) => return Err(()),
        }
        failed |= string(entry, "reason").is_err() | string(entry, "message").is_err();
        let Some(sig) = object(field(entry, "podSignature"))? else {
            continue;
        };
        let Some(ctrl) = object(field(sig, "podController"))? else {
            // kube would dereference a nil controller here; we treat it as matching nothing.
            continue;
        };
        for f in ["apiVersion", "name"] {
            failed |= string(ctrl, f).is_err();
        }
        for f in ["controller", "blockOwnerDeletion"] {
            failed |= opt_bool(ctrl, f).is_err();
        }
        match (string(ctrl, "kind"), string(ctrl, "uid")) {
            (Ok(k), Ok(u)) => out.push((k, u)),
            _ => failed = true,
        }
    }
    if failed { Err(()) } else { Ok(out) }
}

impl Priority for NodePreferAvoidPodsPriority {
    type State = AvoidingNodes;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let Some(ctrl) = cx.pod().controller_ref() else {
            return Ok(PreparedScore::Constant(MAX_NODE_SCORE));
        };
        if ctrl.kind != "ReplicationController" && ctrl.kind != "ReplicaSet" {
            return Ok(PreparedScore::Constant(MAX_NODE_SCORE));
        }
        let snapshot = cx.snapshot();
        let summaries = snapshot.summaries();
        let infos = snapshot.node_infos();
        let mut avoiding: Vec<u32> = feasible
            .iter()
            .copied()
            .filter(|&i| {
                summaries
                    .get(i as usize)
                    .is_some_and(|s| s.has(flags::PREFER_AVOID_PODS))
                    && node_avoids(infos[i as usize].node(), &ctrl.kind, &ctrl.uid)
            })
            .collect();
        if avoiding.is_empty() {
            return Ok(PreparedScore::Constant(MAX_NODE_SCORE));
        }
        avoiding.sort_unstable();
        Ok(PreparedScore::Run(AvoidingNodes(avoiding)))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        if !node.summary().has(flags::PREFER_AVOID_PODS) {
            return MAX_NODE_SCORE;
        }
        if state.0.binary_search(&(node.index() as u32)).is_ok() {
            0
        } else {
            MAX_NODE_SCORE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OwnerReference, Pod};
    use crate::plugins::resource::testutil::*;

    fn annotated(name: &str, value: Option<&str>) -> Node {
        let mut n = node(name, 1000, 1000);
        if let Some(v) = value {
            n.metadata
                .annotations
                .insert(PREFER_AVOID_PODS_ANNOTATION.into(), v.into());
        }
        n
    }

    fn doc(kind: &str, uid: &str) -> String {
        format!(
            r#"{{"preferAvoidPods": [{{"podSignature": {{"podController": {{"apiVersion": "v1",
            "kind": "{kind}", "name": "foo", "uid": "{uid}", "controller": true}}}},
            "reason": "some reason", "message": "some message"}}]}}"#
        )
    }

    fn owned(kind: &str, uid: &str, controller: Option<bool>) -> Pod {
        let mut p = pod_on("", vec![]);
        p.metadata.owner_references = vec![OwnerReference {
            kind: kind.into(),
            name: "foo".into(),
            uid: uid.into(),
            controller,
            ..OwnerReference::default()
        }];
        p
    }

    fn nodes() -> Vec<Node> {
        vec![
            annotated("m1", Some(&doc("ReplicationController", "abcdef123456"))),
            annotated("m2", Some(&doc("ReplicaSet", "qwert12345"))),
            annotated("m3", None),
        ]
    }

    // kube: node_prefer_avoid_pods_test.go TestNodePreferAvoidPods.
    #[test]
    fn prefer_avoid_pods_kube_table() {
        let p = NodePreferAvoidPodsPriority::new();
        let cases = vec![
            (
                "pod managed by ReplicationController should avoid a node",
                owned("ReplicationController", "abcdef123456", Some(true)),
                vec![0, 100, 100],
            ),
            (
                "ownership by random controller should be ignored",
                owned("RandomController", "abcdef123456", Some(true)),
                vec![100, 100, 100],
            ),
            (
                "owner without Controller field set should be ignored",
                owned("ReplicationController", "abcdef123456", None),
                vec![100, 100, 100],
            ),
            (
                "pod managed by ReplicaSet should avoid a node",
                owned("ReplicaSet", "qwert12345", Some(true)),
                vec![100, 0, 100],
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(run(&p, &pod, nodes(), vec![]), want, "{name}");
        }
    }

    #[test]
    fn constant_when_nothing_to_avoid() {
        let snap = crate::snapshot::Snapshot::from_objects(nodes(), vec![]).unwrap();
        let p = NodePreferAvoidPodsPriority;
        assert_eq!(is_constant(&p, &pod_on("", vec![]), &snap), Some(100));
        assert_eq!(
            is_constant(&p, &owned("StatefulSet", "abcdef123456", Some(true)), &snap),
            Some(100)
        );
        // A ReplicaSet no node lists: also constant.
        assert_eq!(
            is_constant(&p, &owned("ReplicaSet", "other", Some(true)), &snap),
            Some(100)
        );
        assert_eq!(
            is_constant(&p, &owned("ReplicaSet", "qwert12345", Some(true)), &snap),
            None
        );
    }

    #[test]
    fn unreadable_annotations_avoid_nothing() {
        let good = doc("ReplicaSet", "u1");
        let bad_docs = [
            "not json".to_string(),
            "[]".to_string(),
            r#"{"preferAvoidPods": {}}"#.to_string(),
            good.replace(r#""uid": "u1""#, r#""uid": 5"#),
            good.replace(r#""controller": true"#, r#""controller": "yes""#),
            good.replace(
                r#""reason": "some reason""#,
                r#""reason": "r", "evictionTime": "yesterday""#,
            ),
            good.replace(r#""message": "some message""#, r#""message": 1"#),
        ];
        let pod = owned("ReplicaSet", "u1", Some(true));
        for bad in &bad_docs {
            let got = run(
                &NodePreferAvoidPodsPriority,
                &pod,
                vec![annotated("a", Some(bad)), annotated("b", Some(&good))],
                vec![],
            );
            assert_eq!(got, vec![100, 0], "{bad}");
        }
        // Empty value, null document, case-insensitive keys, valid eviction time.
        let ok_docs = [
            ("", false),
            ("null", false),
            (r#"{"preferAvoidPods": null}"#, false),
            (
                r#"{"PreferAvoidPods": [{"PodSignature": {"PodController": {"Kind": "ReplicaSet", "UID": "u1"}}}]}"#,
                true,
            ),
            (
                &good.replace(
                    r#""reason": "some reason""#,
                    r#""evictionTime": "2021-02-28T10:00:00.5+02:00""#,
                ),
                true,
            ),
        ];
        for (d, avoids) in ok_docs {
            let got = run(
                &NodePreferAvoidPodsPriority,
                &pod,
                vec![annotated("a", Some(d)), annotated("b", None)],
                vec![],
            );
            assert_eq!(got, vec![if avoids { 0 } else { 100 }, 100], "{d}");
        }
    }

    #[test]
    fn rfc3339() {
        for ok in [
            "2021-01-02T15:04:05Z",
            "2020-02-29T23:59:59.999999999-07:00",
            "1999-12-31T00:00:00+00:00",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "2021-02-29T00:00:00Z",
            "2021-13-01T00:00:00Z",
            "2021-01-01 00:00:00Z",
            "2021-01-01T24:00:00Z",
            "2021-01-01T00:00:00",
            "2021-01-01T00:00:00.Z",
            "2021-01-01T00:00:00+0700",
            "",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
