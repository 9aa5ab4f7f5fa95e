//! kube's extender wire format (`k8s.io/kube-scheduler/extender/v1`), exactly as kube-scheduler
//! writes and reads it.
//!
//! Filter and prioritize send [`ExtenderArgs`] (the filter reply is an
//! [`ExtenderFilterResult`], the prioritize reply a list of [`HostPriority`]); bind sends
//! [`ExtenderBindingArgs`]; preempt sends kube's `ExtenderPreemptionArgs`
//! ([`preemption_args_json`]: [`Victims`], or [`MetaVictims`] for a `nodeCacheCapable`
//! extender) and reads an `ExtenderPreemptionResult` ([`preemption_result_from_json`]).
//! kube's types carry no JSON tags, so Go's encoder writes the Go field names (`Pod`, `Nodes`,
//! `NodeNames`, `FailedNodes`, `FailedAndUnresolvableNodes`, `Error`, `Host`, `Score`,
//! `PodName`, `PodNamespace`, `PodUID`, `Node`, `NodeNameToVictims`, `NodeNameToMetaVictims`,
//! `Pods`, `NumPDBViolations`, `UID`), and Go's decoder matches keys
//! case-insensitively (`nodenames` and `failedNodes` are read too), ignores unknown keys,
//! takes `null` as absent, and reads only the first JSON value of a reply. This module does
//! the same. The pod and nodes are their Kubernetes JSON, as [`crate::model`] serializes
//! them: the fields the model keeps (names, labels, annotations, owners, UID, the spec fields
//! scheduling reads, node capacity, allocatable, conditions, images and taints); other fields
//! of the objects (container images and commands, volumes' sources beyond what scheduling
//! reads, managed fields) are not sent.
//!
//! ```
//! use sched_core::extender::wire::{ExtenderFilterResult, HostPriority};
//! // A reply written by an extender with its own lower-case JSON tags.
//! let r = ExtenderFilterResult::from_json(
//!     br#"{"nodenames": ["a"], "failedNodes": {"b": "no GPU"}, "error": ""}"#,
//! )?;
//! assert_eq!(r.node_names.as_deref(), Some(&["a".to_string()][..]));
//! assert_eq!(r.failed_nodes["b"], "no GPU");
//! let scores = HostPriority::list_from_json(br#"[{"Host": "a", "Score": 7}]"#)?;
//! assert_eq!(scores, [HostPriority { host: "a".into(), score: 7 }]);
//! # Ok::<(), sched_core::extender::wire::WireError>(())
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use super::FailedNodesMap;
use crate::model::{Node, Pod};

/// A reply or request that is not the JSON kube expects, with the path of the bad part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct WireError {
    /// Where (`NodeNames[2]`), empty for the whole document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl WireError {
    fn new(path: &str, message: impl Into<String>) -> WireError {
        WireError {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

/// The first JSON value of `bytes`, as Go's `json.Decoder.Decode` reads a reply.
fn first_value(bytes: &[u8]) -> Result<Value, WireError> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(WireError::new("", format!("not JSON: {e}"))),
        None => Err(WireError::new("", "empty reply")),
    }
}

use crate::model::json_type_name as type_name;

fn wrong(path: &str, expected: &str, v: &Value) -> WireError {
    WireError::new(path, format!("expected {expected}, found {}", type_name(v)))
}

/// The field `name` of `m` as Go's decoder finds it: the exact key, else a key equal to it
/// ignoring ASCII case. `null` is absent.
fn field<'v>(m: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    let v = m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })?;
    (!v.is_null()).then_some(v)
}

/// The document as an object (`null` reads as an empty one, as Go leaves the struct zero).
fn object<'v>(v: &'v Value, path: &str) -> Result<Option<&'v Map<String, Value>>, WireError> {
    match v {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        other => Err(wrong(path, "an object", other)),
    }
}

fn string(m: Option<&Map<String, Value>>, name: &str, path: &str) -> Result<String, WireError> {
    match m.and_then(|m| field(m, name)) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(wrong(&join(path, name), "a string", other)),
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn strings(v: &Value, path: &str) -> Result<Vec<String>, WireError> {
    let Value::Array(a) = v else {
        return Err(wrong(path, "a list", v));
    };
    a.iter()
        .enumerate()
        .map(|(i, s)| match s {
            Value::String(s) => Ok(s.clone()),
            other => Err(wrong(&format!("{path}[{i}]"), "a string", other)),
        })
        .collect()
}

fn failed_map(m: Option<&Map<String, Value>>, name: &str) -> Result<FailedNodesMap, WireError> {
    let Some(v) = m.and_then(|m| field(m, name)) else {
        return Ok(FailedNodesMap::new());
    };
    let Value::Object(o) = v else {
        return Err(wrong(name, "an object", v));
    };
    o.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(wrong(&format!("{name}.{k}"), "a string", other)),
        })
        .collect()
}

/// The names of a NodeList's items (`items[].metadata.name`).
fn node_list_names(v: &Value, path: &str) -> Result<Vec<String>, WireError> {
    let list = object(v, path)?;
    let Some(items) = list.and_then(|m| field(m, "items")) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = items else {
        return Err(wrong(&join(path, "items"), "a list", items));
    };
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ip = format!("{path}.items[{i}]");
        let meta = object(item, &ip)?.and_then(|m| field(m, "metadata"));
        let meta = match meta {
            Some(m) => object(m, &join(&ip, "metadata"))?,
            None => None,
        };
        names.push(string(meta, "name", &join(&ip, "metadata"))?);
    }
    Ok(names)
}

/// The request of the filter and prioritize verbs (kube's `ExtenderArgs`): the pod, and the
/// candidate nodes as a NodeList (`Nodes`) or, for a `nodeCacheCapable` extender, as names
/// (`NodeNames`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExtenderArgs {
    /// `Pod`.
    pub pod: Pod,
    /// `Nodes`: the NodeList's items.
    pub nodes: Option<Vec<Node>>,
    /// `NodeNames`.
    pub node_names: Option<Vec<String>>,
}

#[derive(Serialize)]
struct EmptyMeta {}

#[derive(Serialize)]
struct NodeListOut<'a> {
    metadata: EmptyMeta,
    items: &'a [&'a Node],
}

#[derive(Serialize)]
struct ArgsOut<'a> {
    #[serde(rename = "Pod")]
    pod: &'a Pod,
    #[serde(rename = "Nodes")]
    nodes: Option<NodeListOut<'a>>,
    #[serde(rename = "NodeNames")]
    node_names: Option<Vec<&'a str>>,
}

impl ExtenderArgs {
    /// kube's request body for `pod` and `nodes`: `{"Pod": .., "Nodes": {"metadata": {},
    /// "items": [..]}, "NodeNames": null}`, or with `node_cache_capable` `{"Pod": ..,
    /// "Nodes": null, "NodeNames": [..]}`.
    pub fn to_json(pod: &Pod, nodes: &[&Node], node_cache_capable: bool) -> Vec<u8> {
        let out = if node_cache_capable {
            ArgsOut {
                pod,
                nodes: None,
                node_names: Some(nodes.iter().map(|n| n.metadata.name.as_str()).collect()),
            }
        } else {
            ArgsOut {
                pod,
                nodes: Some(NodeListOut {
                    metadata: EmptyMeta {},
                    items: nodes,
                }),
                node_names: None,
            }
        };
        // Serializing the model's types cannot fail (string keys, no custom errors).
        serde_json::to_vec(&out).unwrap_or_default()
    }

    /// Reads a request as an extender would (for extenders written with this crate).
    ///
    /// # Errors
    /// A request that is not kube's `ExtenderArgs`, or a pod or node the model cannot read.
    pub fn from_json(bytes: &[u8]) -> Result<ExtenderArgs, WireError> {
        let v = first_value(bytes)?;
        let m = object(&v, "")?;
        let pod = match m.and_then(|m| field(m, "Pod")) {
            Some(p) => serde_json::from_value(p.clone())
                .map_err(|e| WireError::new("Pod", e.to_string()))?,
            None => Pod::default(),
        };
        let nodes = match m.and_then(|m| field(m, "Nodes")) {
            Some(list) => {
                let items = object(list, "Nodes")?
                    .and_then(|l| field(l, "items"))
                    .cloned()
                    .unwrap_or(Value::Array(Vec::new()));
                Some(
                    serde_json::from_value(items)
                        .map_err(|e| WireError::new("Nodes.items", e.to_string()))?,
                )
            }
            None => None,
        };
        let node_names = match m.and_then(|m| field(m, "NodeNames")) {
            Some(v) => Some(strings(v, "NodeNames")?),
            None => None,
        };
        Ok(ExtenderArgs {
            pod,
            nodes,
            node_names,
        })
    }
}

/// The reply of the filter verb (kube's `ExtenderFilterResult`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtenderFilterResult {
    /// `Nodes`: the names of the NodeList's items (only `metadata.name` is read).
    pub nodes: Option<Vec<String>>,
    /// `NodeNames`.
    pub node_names: Option<Vec<String>>,
    /// `FailedNodes`.
    pub failed_nodes: FailedNodesMap,
    /// `FailedAndUnresolvableNodes`.
    pub failed_and_unresolvable_nodes: FailedNodesMap,
    /// `Error`.
    pub error: String,
}

impl ExtenderFilterResult {
    /// Reads a filter reply as kube does.
    ///
    /// # Errors
    /// A reply that is not an `ExtenderFilterResult` (not JSON, a field of the wrong type).
    pub fn from_json(bytes: &[u8]) -> Result<ExtenderFilterResult, WireError> {
        let v = first_value(bytes)?;
        let m = object(&v, "")?;
        let nodes = match m.and_then(|m| field(m, "Nodes")) {
            Some(v) => Some(node_list_names(v, "Nodes")?),
            None => None,
        };
        let node_names = match m.and_then(|m| field(m, "NodeNames")) {
            Some(v) => Some(strings(v, "NodeNames")?),
            None => None,
        };
        Ok(ExtenderFilterResult {
            nodes,
            node_names,
            failed_nodes: failed_map(m, "FailedNodes")?,
            failed_and_unresolvable_nodes: failed_map(m, "FailedAndUnresolvableNodes")?,
            error: string(m, "Error", "")?,
        })
    }

    /// The reply as kube's Go types write it (`Nodes` as a NodeList of name-only items).
    pub fn to_json(&self) -> Vec<u8> {
        let nodes = self.nodes.as_ref().map(|names| {
            serde_json::json!({
                "metadata": {},
                "items": names.iter().map(|n| serde_json::json!({"metadata": {"name": n}})).collect::<Vec<_>>(),
            })
        });
        serde_json::to_vec(&serde_json::json!({
            "Nodes": nodes,
            "NodeNames": self.node_names,
            "FailedNodes": self.failed_nodes,
            "FailedAndUnresolvableNodes": self.failed_and_unresolvable_nodes,
            "Error": self.error,
        }))
        .unwrap_or_default()
    }
}

/// One node's score from an extender (kube's `HostPriority`); the prioritize reply is a list
/// of them (`HostPriorityList`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostPriority {
    /// `Host`: the node name.
    #[serde(rename = "Host")]
    pub host: String,
    /// `Score`: 0 to [`super::MAX_EXTENDER_PRIORITY`].
    #[serde(rename = "Score")]
    pub score: i64,
}

impl HostPriority {
    /// Reads a prioritize reply (`HostPriorityList`) as kube does.
    ///
    /// # Errors
    /// A reply that is not a list of `{Host, Score}` objects with integer scores.
    pub fn list_from_json(bytes: &[u8]) -> Result<Vec<HostPriority>, WireError> {
        let v = first_value(bytes)?;
        let items = match &v {
            Value::Null => return Ok(Vec::new()),
            Value::Array(a) => a,
            other => return Err(wrong("", "a list", other)),
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("[{i}]");
            let m = object(item, &path)?;
            let score = match m.and_then(|m| field(m, "Score")) {
                None => 0,
                Some(Value::Number(n)) => n.as_i64().ok_or_else(|| {
                    WireError::new(
                        &join(&path, "Score"),
                        format!("expected an integer (int64), found {n}"),
                    )
                })?,
                Some(other) => return Err(wrong(&join(&path, "Score"), "a number", other)),
            };
            out.push(HostPriority {
                host: string(m, "Host", &path)?,
                score,
            });
        }
        Ok(out)
    }
}

/// The request of the bind verb (kube's `ExtenderBindingArgs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExtenderBindingArgs {
    /// `PodName`.
    #[serde(rename = "PodName")]
    pub pod_name: String,
    /// `PodNamespace`.
    #[serde(rename = "PodNamespace")]
    pub pod_namespace: String,
    /// `PodUID`.
    #[serde(rename = "PodUID")]
    pub pod_uid: String,
    /// `Node`.
    #[serde(rename = "Node")]
    pub node: String,
}

impl ExtenderBindingArgs {
    /// The binding of `pod` to `node`.
    pub fn new(pod: &Pod, node: impl Into<String>) -> ExtenderBindingArgs {
        ExtenderBindingArgs {
            pod_name: pod.metadata.name.clone(),
            pod_namespace: pod.metadata.namespace.clone(),
            pod_uid: pod.metadata.uid.clone(),
            node: node.into(),
        }
    }

    /// The request body.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a bind request (for extenders written with this crate).
    ///
    /// # Errors
    /// A request that is not an `ExtenderBindingArgs`.
    pub fn from_json(bytes: &[u8]) -> Result<ExtenderBindingArgs, WireError> {
        let v = first_value(bytes)?;
        let m = object(&v, "")?;
        Ok(ExtenderBindingArgs {
            pod_name: string(m, "PodName", "")?,
            pod_namespace: string(m, "PodNamespace", "")?,
            pod_uid: string(m, "PodUID", "")?,
            node: string(m, "Node", "")?,
        })
    }
}

/// A pod named by its UID (kube's `MetaPod`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MetaPod {
    /// `UID`.
    #[serde(rename = "UID")]
    pub uid: String,
}

/// The victims on one node as UIDs (kube's `MetaVictims`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MetaVictims {
    /// `Pods`.
    #[serde(rename = "Pods")]
    pub pods: Vec<MetaPod>,
    /// `NumPDBViolations`.
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// The victims on one node (kube's `Victims`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Victims {
    /// `Pods`.
    #[serde(rename = "Pods")]
    pub pods: Vec<Pod>,
    /// `NumPDBViolations`.
    #[serde(rename = "NumPDBViolations")]
    pub num_pdb_violations: i64,
}

/// kube's `convertToMetaVictims`: each node's victims as UIDs.
pub fn convert_to_meta_victims(
    victims: &std::collections::BTreeMap<String, Victims>,
) -> std::collections::BTreeMap<String, MetaVictims> {
    victims
        .iter()
        .map(|(node, v)| {
            let meta = MetaVictims {
                pods: v
                    .pods
                    .iter()
                    .map(|p| MetaPod {
                        uid: p.metadata.uid.clone(),
                    })
                    .collect(),
                num_pdb_violations: v.num_pdb_violations,
            };
            (node.clone(), meta)
        })
        .collect()
}

#[derive(Serialize)]
struct PreemptionArgsOut<'a> {
    #[serde(rename = "Pod")]
    pod: &'a Pod,
    #[serde(rename = "NodeNameToVictims")]
    victims: Option<&'a std::collections::BTreeMap<String, Victims>>,
    #[serde(rename = "NodeNameToMetaVictims")]
    meta: Option<std::collections::BTreeMap<String, MetaVictims>>,
}

/// kube's `ExtenderPreemptionArgs` request body: the pod and the candidate nodes' victims, as
/// pods (`NodeNameToVictims`) or, for a `nodeCacheCapable` extender, as UIDs
/// (`NodeNameToMetaVictims`).
pub fn preemption_args_json(
    pod: &Pod,
    victims: &std::collections::BTreeMap<String, Victims>,
    node_cache_capable: bool,
) -> Vec<u8> {
    let out = if node_cache_capable {
        PreemptionArgsOut {
            pod,
            victims: None,
            meta: Some(convert_to_meta_victims(victims)),
        }
    } else {
        PreemptionArgsOut {
            pod,
            victims: Some(victims),
            meta: None,
        }
    };
    serde_json::to_vec(&out).unwrap_or_default()
}

/// Reads a preempt reply (kube's `ExtenderPreemptionResult`): `NodeNameToMetaVictims`.
///
/// # Errors
/// A reply that is not an `ExtenderPreemptionResult`.
pub fn preemption_result_from_json(
    bytes: &[u8],
) -> Result<std::collections::BTreeMap<String, MetaVictims>, WireError> {
    let v = first_value(bytes)?;
    let Some(map) = object(&v, "")?.and_then(|m| field(m, "NodeNameToMetaVictims")) else {
        return Ok(std::collections::BTreeMap::new());
    };
    let Value::Object(map) = map else {
        return Err(wrong("NodeNameToMetaVictims", "an object", map));
    };
    let mut out = std::collections::BTreeMap::new();
    for (node, mv) in map {
        let path = format!("NodeNameToMetaVictims.{node}");
        let m = object(mv, &path)?;
        let mut victims = MetaVictims::default();
        if let Some(pods) = m.and_then(|m| field(m, "Pods")) {
            let Value::Array(pods) = pods else {
                return Err(wrong(&join(&path, "Pods"), "a list", pods));
            };
            for (i, p) in pods.iter().enumerate() {
                let pp = format!("{path}.Pods[{i}]");
                victims.pods.push(MetaPod {
                    uid: string(object(p, &pp)?, "UID", &pp)?,
                });
            }
        }
        victims.num_pdb_violations = match m.and_then(|m| field(m, "NumPDBViolations")) {
            None => 0,
            Some(Value::Number(n)) => n.as_i64().ok_or_else(|| {
                WireError::new(
                    &join(&path, "NumPDBViolations"),
                    format!("expected an integer (int64), found {n}"),
                )
            })?,
            Some(other) => return Err(wrong(&join(&path, "NumPDBViolations"), "a number", other)),
        };
        out.insert(node.clone(), victims);
    }
    Ok(out)
}

/// The `Error` of a bind reply (kube's `ExtenderBindingResult`); empty on success.
///
/// # Errors
/// A reply that is not an `ExtenderBindingResult`.
pub fn binding_result_from_json(bytes: &[u8]) -> Result<String, WireError> {
    let v = first_value(bytes)?;
    string(object(&v, "")?, "Error", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.into();
        n
    }

    #[test]
    fn args_use_kubes_go_field_names() {
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.metadata.namespace = "ns".into();
        let (a, b) = (node("a"), node("b"));
        let v: Value =
            serde_json::from_slice(&ExtenderArgs::to_json(&pod, &[&a, &b], false)).expect("json");
        assert_eq!(v["Pod"]["metadata"]["name"], "p");
        assert_eq!(v["Pod"]["metadata"]["namespace"], "ns");
        assert_eq!(v["Nodes"]["metadata"], serde_json::json!({}));
        assert_eq!(v["Nodes"]["items"][1]["metadata"]["name"], "b");
        assert!(v["NodeNames"].is_null());
        assert!(v.as_object().expect("object").contains_key("NodeNames"));
        let v: Value =
            serde_json::from_slice(&ExtenderArgs::to_json(&pod, &[&a, &b], true)).expect("json");
        assert_eq!(v["NodeNames"], serde_json::json!(["a", "b"]));
        assert!(v["Nodes"].is_null());
        let back =
            ExtenderArgs::from_json(&ExtenderArgs::to_json(&pod, &[&a], false)).expect("read back");
        assert_eq!(back.pod, pod);
        assert_eq!(back.nodes, Some(vec![a]));
    }

    #[test]
    fn filter_replies_read_as_go_reads_them() {
        let r = ExtenderFilterResult::from_json(
            br#"{"Nodes": {"items": [{"metadata": {"name": "a"}}]}, "FAILEDNODES": {"b": "x"},
                "failedAndUnresolvableNodes": {"c": "y"}, "Error": null, "extra": 1} trailing"#,
        )
        .expect("reply");
        assert_eq!(r.nodes, Some(vec!["a".to_string()]));
        assert_eq!(r.node_names, None);
        assert_eq!(r.failed_nodes["b"], "x");
        assert_eq!(r.failed_and_unresolvable_nodes["c"], "y");
        assert_eq!(r.error, "");
        let back = ExtenderFilterResult::from_json(&r.to_json()).expect("round trip");
        assert_eq!(back, r);
        assert_eq!(
            ExtenderFilterResult::from_json(b"null").expect("null"),
            ExtenderFilterResult::default()
        );
    }

    #[test]
    fn malformed_replies_are_typed_errors() {
        let e = ExtenderFilterResult::from_json(br#"{"NodeNames": ["a", 3]}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "NodeNames[1]: expected a string, found a number"
        );
        let e = ExtenderFilterResult::from_json(b"<html>").unwrap_err();
        assert!(e.to_string().starts_with("not JSON: "), "{e}");
        assert_eq!(
            ExtenderFilterResult::from_json(b"")
                .unwrap_err()
                .to_string(),
            "empty reply"
        );
        let e = HostPriority::list_from_json(br#"[{"Host": "a", "Score": 1.5}]"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "[0].Score: expected an integer (int64), found 1.5"
        );
        let e = HostPriority::list_from_json(br#"{"Host": "a"}"#).unwrap_err();
        assert_eq!(e.to_string(), "expected a list, found an object");
    }

    #[test]
    fn binding_args_round_trip() {
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.metadata.namespace = "ns".into();
        pod.metadata.uid = "u-1".into();
        let args = ExtenderBindingArgs::new(&pod, "n1");
        let v: Value = serde_json::from_slice(&args.to_json()).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"PodName": "p", "PodNamespace": "ns", "PodUID": "u-1", "Node": "n1"})
        );
        assert_eq!(
            ExtenderBindingArgs::from_json(&args.to_json()).unwrap(),
            args
        );
        assert_eq!(
            binding_result_from_json(br#"{"error": "no"}"#).unwrap(),
            "no"
        );
    }
}
