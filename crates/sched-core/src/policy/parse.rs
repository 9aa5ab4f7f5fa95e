//! Reading a Policy document: every problem collected, in document order.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::document::{Policy, PredicatePolicy, PriorityPolicy};
use super::schema::{self, Doc, POLICY_FIELDS};
use super::{FeatureGates, PolicyError, plan};

fn json_error(e: &serde_json::Error) -> PolicyError {
    let mut message = e.to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    PolicyError::Json {
        message,
        line: e.line(),
        column: e.column(),
    }
}

/// What makes a document a `KubeSchedulerConfiguration`, if anything.
fn component_config(doc: &Doc) -> Option<String> {
    let text = |key: &str| match doc.get(key) {
        Some(Doc::String(s)) => Some(s.as_str()),
        _ => None,
    };
    if let Some(kind) = text("kind")
        && kind == "KubeSchedulerConfiguration"
    {
        return Some(match text("apiVersion") {
            Some(v) => format!(
                "kind {kind:?}, apiVersion {:?}",
                crate::model::short_name(v)
            ),
            None => format!("kind {kind:?}"),
        });
    }
    if let Some(v) = text("apiVersion")
        && v.starts_with("kubescheduler.config.k8s.io")
        && text("kind").is_none()
    {
        return Some(format!("apiVersion {:?}", crate::model::short_name(v)));
    }
    if text("kind").is_none() && doc.get("profiles").is_some() {
        return Some("it has `profiles`".into());
    }
    None
}

/// Deserializes one value, its error given the path of the value.
fn value_at<T: DeserializeOwned>(v: Value, path: &str) -> Result<T, PolicyError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let path = match inner.as_str() {
            "." | "" => path.to_string(),
            p if p.starts_with('[') => format!("{path}{p}"),
            p => format!("{path}.{p}"),
        };
        PolicyError::InvalidValue {
            path,
            message: bounded(e.into_inner().to_string()),
        }
    })
}

/// A decoder message cut to at most [`MAX_MESSAGE`] characters (serde quotes the value it
/// refused, which can be a string of any length).
fn bounded(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE) {
        let len = message.len();
        message.truncate(cut);
        message.push_str(&format!("... ({len} bytes)"));
    }
    message
}

/// The longest decoder message kept whole, in characters.
const MAX_MESSAGE: usize = 300;

/// The paths that have a key problem at or under them: each problem's path and every
/// enclosing path (`predicates[3].argument.x` gives `predicates`, `predicates[3]`,
/// `predicates[3].argument` and itself), so that one lookup tells whether a value is
/// affected, however many problems there are.
fn affected_paths(problems: &[PolicyError]) -> HashSet<String> {
    let mut out = HashSet::new();
    for p in problems {
        let path = p.path();
        for (cut, _) in path.match_indices(['.', '[']) {
            out.insert(path[..cut].to_string());
        }
        out.insert(path);
    }
    out
}

/// The entries of a list that parse, with their indices in the document; the others' problems
/// are added to `problems`. Entries with key problems are not read again.
fn entries<T: DeserializeOwned>(
    value: &Doc,
    list: &str,
    key_problems: &HashSet<String>,
    index: &mut Vec<usize>,
    problems: &mut Vec<PolicyError>,
) -> Option<Vec<T>> {
    let Doc::Array(items) = value else {
        // null: absent; another type was reported by the key check.
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{list}[{i}]");
        if key_problems.contains(&path) {
            continue;
        }
        match value_at::<T>(item.to_value(), &path) {
            Ok(entry) => {
                out.push(entry);
                index.push(i);
            }
            Err(e) => problems.push(e),
        }
    }
    Some(out)
}

/// Parses, checks and plans a Policy document, reporting every problem.
pub(crate) fn parse(json: &str) -> Result<Policy, PolicyError> {
    let doc: Doc = serde_json::from_str(json).map_err(|e| json_error(&e))?;
    let Doc::Object(fields) = &doc else {
        return Err(PolicyError::InvalidValue {
            path: String::new(),
            message: format!("a Policy is a JSON object, found {}", doc.json_type()),
        });
    };
    if let Some(found) = component_config(&doc) {
        return Err(PolicyError::NotAPolicy { found });
    }
    let mut problems = schema::check_keys(&doc);
    let key_problems = affected_paths(&problems);
    let mut policy = Policy::default();
    let (mut predicate_index, mut priority_index) = (Vec::new(), Vec::new());
    for (key, value) in fields {
        match key.as_str() {
            "predicates" => {
                policy.predicates = entries::<PredicatePolicy>(
                    value,
                    key,
                    &key_problems,
                    &mut predicate_index,
                    &mut problems,
                );
            }
            "priorities" => {
                policy.priorities = entries::<PriorityPolicy>(
                    value,
                    key,
                    &key_problems,
                    &mut priority_index,
                    &mut problems,
                );
            }
            known if POLICY_FIELDS.contains(&known) => {
                if key_problems.contains(known) {
                    continue;
                }
                let one = Value::Object([(key.clone(), value.to_value())].into_iter().collect());
                match value_at::<Policy>(one, "") {
                    Ok(part) => merge(&mut policy, part),
                    Err(PolicyError::InvalidValue { path, message }) => {
                        problems.push(PolicyError::InvalidValue {
                            path: path.trim_start_matches('.').to_string(),
                            message,
                        });
                    }
                    Err(e) => problems.push(e),
                }
            }
            _ => {} // reported by the key check
        }
    }
    if let Err(e) = plan::plan_indexed(
        &policy,
        FeatureGates::default(),
        Some(&predicate_index),
        Some(&priority_index),
    ) {
        problems.extend(e.into_problems());
    }
    if problems.is_empty() {
        return Ok(policy);
    }
    Err(PolicyError::from_problems(in_document_order(
        &doc, problems,
    )))
}

/// Copies the top-level scalar fields that `part` sets.
fn merge(policy: &mut Policy, part: Policy) {
    let Policy {
        kind,
        api_version,
        predicates: _,
        priorities: _,
        extenders,
        hard_pod_affinity_symmetric_weight,
        always_check_all_predicates,
        percentage_of_nodes_to_score,
    } = part;
    policy.kind = policy.kind.take().or(kind);
    policy.api_version = policy.api_version.take().or(api_version);
    policy.extenders = policy.extenders.take().or(extenders);
    policy.hard_pod_affinity_symmetric_weight = policy
        .hard_pod_affinity_symmetric_weight
        .or(hard_pod_affinity_symmetric_weight);
    policy.always_check_all_predicates = policy
        .always_check_all_predicates
        .or(always_check_all_predicates);
    policy.percentage_of_nodes_to_score = policy
        .percentage_of_nodes_to_score
        .or(percentage_of_nodes_to_score);
}

/// The problems sorted by where their paths are in the document (a stable sort: problems at
/// one place keep their order).
fn in_document_order(doc: &Doc, mut problems: Vec<PolicyError>) -> Vec<PolicyError> {
    let wanted = affected_paths(&problems);
    let positions = doc.positions(&wanted);
    let position = |path: &str| -> usize {
        let mut p = path;
        loop {
            if let Some(&i) = positions.get(p) {
                return i;
            }
            match p.rfind(['.', '[']) {
                Some(cut) => p = &p[..cut],
                // The top of the document comes first.
                None => return 0,
            }
        }
    };
    problems.sort_by_cached_key(|e| position(&e.path()));
    problems
}
