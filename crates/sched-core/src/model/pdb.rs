//! `policy/v1` PodDisruptionBudget: what preemption reads of it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::objects::nullable;
use super::{LabelSelector, ObjectMeta};

/// A `policy/v1` PodDisruptionBudget as preemption reads it: its namespace, its selector over
/// pod labels and the disruption controller's `status.disruptionsAllowed` and
/// `status.disruptedPods`. kube-scheduler reads nothing else of it (`minAvailable` and
/// `maxUnavailable` are the disruption controller's business; their outcome is
/// `disruptionsAllowed`).
///
/// ```
/// use sched_core::model::PodDisruptionBudget;
/// let pdb: PodDisruptionBudget = serde_json::from_str(r#"{
///   "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
///   "metadata": {"name": "web", "namespace": "shop"},
///   "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
///   "status": {"disruptionsAllowed": 1, "disruptedPods": {"web-0": "2024-01-01T00:00:00Z"}}
/// }"#)?;
/// assert_eq!(pdb.key(), "shop/web");
/// assert_eq!(pdb.status.disruptions_allowed, 1);
/// assert!(pdb.status.disrupted_pods.contains_key("web-0"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDisruptionBudget {
    /// Name and namespace.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// The selector.
    #[serde(deserialize_with = "nullable")]
    pub spec: PodDisruptionBudgetSpec,
    /// The disruption controller's figures.
    #[serde(deserialize_with = "nullable")]
    pub status: PodDisruptionBudgetStatus,
}

/// `spec` of a [`PodDisruptionBudget`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDisruptionBudgetSpec {
    /// The pods the budget covers. A missing or empty selector covers no pod (in `policy/v1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// `status` of a [`PodDisruptionBudget`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDisruptionBudgetStatus {
    /// How many more covered pods may be disrupted now.
    #[serde(deserialize_with = "nullable")]
    pub disruptions_allowed: i32,
    /// Pods (by name) whose eviction the API server has processed and the controller has not
    /// yet seen go, with the time: preemption does not count them against the budget again.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub disrupted_pods: BTreeMap<String, String>,
}

impl PodDisruptionBudget {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_files_read_budgets_and_name_bad_fields() {
        use crate::model::{Role, load_bytes};
        let objects = load_bytes(
            "all.json",
            br#"{"kind":"List","items":[
                {"kind":"PodDisruptionBudget","metadata":{"name":"web","namespace":"shop"},
                 "spec":{"maxUnavailable":1,"selector":{"matchLabels":{"app":"web"}}},
                 "status":{"disruptionsAllowed":1,"currentHealthy":3}},
                {"kind":"Node","metadata":{"name":"n1"}}]}"#,
            Role::Mixed,
        )
        .unwrap();
        assert_eq!(objects.pdbs.len(), 1);
        assert_eq!(objects.pdbs[0].key(), "shop/web");
        let cluster = objects.into_cluster().unwrap();
        assert_eq!(cluster.pdbs.len(), 1);
        assert!(cluster.report.is_empty(), "{}", cluster.report);
        let err = load_bytes(
            "pdb.json",
            br#"[{"kind":"PodDisruptionBudget","metadata":{"name":"web","namespace":"shop"},
                  "status":{"disruptionsAllowed":"one"}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("pdb.json: items[0]: PodDisruptionBudget \"shop/web\""),
            "{err}"
        );
        assert!(err.contains("status.disruptionsAllowed"), "{err}");
        let err = load_bytes(
            "pdb.json",
            br#"[{"kind":"PodDisruptionBudget","metadata":{"namespace":"shop"}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("PodDisruptionBudget"), "{err}");
    }

    #[test]
    fn nulls_and_missing_fields_read_as_empty() {
        let pdb: PodDisruptionBudget = serde_json::from_str(
            r#"{"metadata":{"name":"a","namespace":"n"},"spec":null,"status":{"disruptionsAllowed":null}}"#,
        )
        .unwrap();
        assert_eq!(pdb.spec.selector, None);
        assert_eq!(pdb.status.disruptions_allowed, 0);
        assert!(pdb.status.disrupted_pods.is_empty());
        let bad =
            serde_json::from_str::<PodDisruptionBudget>(r#"{"status":{"disruptionsAllowed":"x"}}"#);
        assert!(bad.is_err());
    }
}
