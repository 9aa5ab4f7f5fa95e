//! Loading nodes and pods from Kubernetes JSON (`kubectl get nodes -o json`, `kubectl get pods -A -o json`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Node, Pod, ResourceList};

/// Why Kubernetes JSON could not be loaded. Names the object (by index and name) and the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The text is not JSON at all.
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The document is JSON but not a list of the expected kind nor a single object of it.
    #[error("expected a {expected} or a List of them, found {found}")]
    Shape {
        /// What was expected (`Node`, `Pod`).
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// One object has a field with a bad value.
    #[error("{kind} {name:?} (items[{index}]): field `{field}`: {message}")]
    Field {
        /// `Node` or `Pod`.
        kind: &'static str,
        /// Position in the list.
        index: usize,
        /// `metadata.name` of the object (or `namespace/name` for pods), if it had one.
        name: String,
        /// Dotted path of the bad field, e.g. `status.allocatable.cpu`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

fn object_name(v: &Value) -> String {
    let meta = v.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
    {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Objects whose values Kubernetes' API validation would refuse.
pub(crate) trait Validate {
    /// `(field path, message)` of the first value the API server would refuse.
    fn invalid_field(&self) -> Option<(String, String)>;
}

fn negative_in(list: &ResourceList, path: &str) -> Option<(String, String)> {
    list.iter()
        .find(|(_, q)| q.value() < 0 || q.milli_value() < 0)
        .map(|(name, q)| {
            (
                format!("{path}.{name}"),
                format!("must be greater than or equal to 0, got {:?}", q.as_str()),
            )
        })
}

impl Validate for Node {
    fn invalid_field(&self) -> Option<(String, String)> {
        negative_in(&self.status.capacity, "status.capacity")
            .or_else(|| negative_in(&self.status.allocatable, "status.allocatable"))
    }
}

impl Validate for Pod {
    fn invalid_field(&self) -> Option<(String, String)> {
        let containers = |list: &[super::Container], field: &str| {
            list.iter().enumerate().find_map(|(i, c)| {
                let base = format!("spec.{field}[{i}].resources");
                negative_in(&c.resources.requests, &format!("{base}.requests"))
                    .or_else(|| negative_in(&c.resources.limits, &format!("{base}.limits")))
            })
        };
        containers(&self.spec.containers, "containers")
            .or_else(|| containers(&self.spec.init_containers, "initContainers"))
            .or_else(|| negative_in(&self.spec.overhead, "spec.overhead"))
    }
}

fn parse_one<T: DeserializeOwned + Validate>(
    kind: &'static str,
    index: usize,
    v: Value,
) -> Result<T, LoadError> {
    let name = object_name(&v);
    let obj = serde_path_to_error::deserialize::<_, T>(v).map_err(|e| LoadError::Field {
        kind,
        index,
        name: name.clone(),
        field: e.path().to_string(),
        message: e.into_inner().to_string(),
    })?;
    match obj.invalid_field() {
        None => Ok(obj),
        Some((field, message)) => Err(LoadError::Field {
            kind,
            index,
            name,
            field,
            message,
        }),
    }
}

fn load_list<T: DeserializeOwned + Validate>(
    kind: &'static str,
    json: &str,
) -> Result<Vec<T>, LoadError> {
    let doc: Value = serde_json::from_str(json).map_err(LoadError::Json)?;
    match doc {
        Value::Object(mut map) => {
            if let Some(items) = map.remove("items") {
                let Value::Array(items) = items else {
                    return Err(LoadError::Shape {
                        expected: kind,
                        found: "`items` that is not an array".into(),
                    });
                };
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| parse_one(kind, i, v))
                    .collect()
            } else {
                let found = map.get("kind").and_then(Value::as_str).unwrap_or("");
                if !found.is_empty() && found != kind {
                    return Err(LoadError::Shape {
                        expected: kind,
                        found: format!("kind {found:?}"),
                    });
                }
                Ok(vec![parse_one(kind, 0, Value::Object(map))?])
            }
        }
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| parse_one(kind, i, v))
            .collect(),
        other => Err(LoadError::Shape {
            expected: kind,
            found: format!("a JSON {}", json_type(&other)),
        }),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Loads nodes from a NodeList (or `List`) JSON document, a JSON array of nodes, or one Node.
///
/// ```
/// let nodes = sched_core::model::load_node_list(r#"{"kind":"NodeList","items":[
///   {"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}]}"#)?;
/// assert_eq!(nodes[0].name(), "n1");
/// # Ok::<(), sched_core::model::LoadError>(())
/// ```
pub fn load_node_list(json: &str) -> Result<Vec<Node>, LoadError> {
    load_list("Node", json)
}

/// Loads pods from a PodList (or `List`) JSON document, a JSON array of pods, or one Pod.
pub fn load_pod_list(json: &str) -> Result<Vec<Pod>, LoadError> {
    load_list("Pod", json)
}

/// Parses one Node object.
pub fn parse_node(json: &str) -> Result<Node, LoadError> {
    let v: Value = serde_json::from_str(json).map_err(LoadError::Json)?;
    parse_one("Node", 0, v)
}

/// Parses one Pod object.
pub fn parse_pod(json: &str) -> Result<Pod, LoadError> {
    let v: Value = serde_json::from_str(json).map_err(LoadError::Json)?;
    parse_one("Pod", 0, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_quantity_names_object_and_field() {
        let err = load_node_list(
            r#"{"items":[{"metadata":{"name":"ok"}},
                {"metadata":{"name":"n2"},"status":{"allocatable":{"cpu":"4x"}}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Node \"n2\" (items[1])"), "{text}");
        assert!(text.contains("status.allocatable.cpu"), "{text}");
        assert!(text.contains("\"4x\""), "{text}");
    }

    #[test]
    fn bad_enum_names_pod_and_field() {
        let err = load_pod_list(
            r#"{"kind":"PodList","items":[{"metadata":{"name":"p","namespace":"ns"},
               "spec":{"tolerations":[{"key":"k","effect":"Sometimes"}]}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Pod \"ns/p\""), "{text}");
        assert!(text.contains("spec.tolerations[0].effect"), "{text}");
    }

    #[test]
    fn negative_quantities_are_refused_like_the_api_server() {
        let err = load_pod_list(
            r#"{"items":[{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[
               {"name":"a"},{"name":"b","resources":{"requests":{"cpu":"-50T"}}}]}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("spec.containers[1].resources.requests.cpu"),
            "{text}"
        );
        assert!(
            text.contains("must be greater than or equal to 0"),
            "{text}"
        );
        let err = load_node_list(
            r#"[{"metadata":{"name":"n"},"status":{"allocatable":{"memory":"-1"}}}]"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("status.allocatable.memory"),
            "{err}"
        );
    }

    #[test]
    fn wrong_shape_is_an_error() {
        assert!(matches!(load_pod_list("[1]"), Err(LoadError::Field { .. })));
        assert!(matches!(load_pod_list("3"), Err(LoadError::Shape { .. })));
        assert!(matches!(
            load_pod_list(r#"{"kind":"Node","metadata":{"name":"x"}}"#),
            Err(LoadError::Shape { .. })
        ));
        assert!(matches!(load_pod_list("{"), Err(LoadError::Json(_))));
    }
}
