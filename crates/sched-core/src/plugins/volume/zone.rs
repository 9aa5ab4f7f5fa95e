//! VolumeZone (legacy NoVolumeZoneConflict): bound PersistentVolumes' zone and region labels
//! against the node's.

use crate::framework::{
    CycleContext, KubeVersion, PluginError, Predicate, Prepared, Reason, Rejection, VolumeProblem,
};
use crate::model::{
    LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, PersistentVolume, VolumeBindingMode,
};
use crate::snapshot::NodeRef;

use super::not_found;

/// The topology labels kube compares, in kube's order.
const TOPOLOGY_LABELS: [&str; 4] = [
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
];

fn translate_to_ga(key: &str) -> &str {
    match key {
        LABEL_FAILURE_DOMAIN_BETA_REGION => LABEL_TOPOLOGY_REGION,
        LABEL_FAILURE_DOMAIN_BETA_ZONE => LABEL_TOPOLOGY_ZONE,
        k => k,
    }
}

/// kube's `LabelZonesToSet`: `a__b` is the set {a, b}; an empty member makes the label
/// unreadable (`None`; kube ignores such a label).
fn zones(value: &str) -> Option<Vec<String>> {
    value
        .split("__")
        .map(|z| {
            let z = z.trim();
            (!z.is_empty()).then(|| z.to_string())
        })
        .collect()
}

/// kube's `VolumeZone` filter (legacy `NoVolumeZoneConflict`). No argument.
///
/// For each `persistentVolumeClaim` volume of the pod, the bound PersistentVolume's zone and
/// region labels (`topology.kubernetes.io/{zone,region}` and the beta
/// `failure-domain.beta.kubernetes.io/` keys; a value `a__b` allows either) must match the
/// node's. A node without any of these labels fits. Unbound claims of a
/// `WaitForFirstConsumer` class are left to VolumeBinding. Failure: "node(s) had no
/// available volume zone". v1.34 also matches a PV's beta key against the node's GA key;
/// v1.20 compares the same key only.
///
/// A claim that cannot be resolved (missing claim, volume or class, an unbound claim with no
/// class or of an `Immediate` class) rejects the pod with a [`Reason::Volume`]: in a v1.34
/// profile before any node is filtered ([`Prepared::Reject`]) with kube's text naming the
/// object (`persistentvolume "pv" not found`, `VolumeBindingMode not set for StorageClass
/// "sc"`); in a v1.20 profile on every node with topology labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeZone {
    name: &'static str,
}

impl Default for VolumeZone {
    fn default() -> Self {
        VolumeZone::new()
    }
}

impl VolumeZone {
    /// The plugin under its v1 name, `VolumeZone`.
    pub fn new() -> Self {
        VolumeZone { name: "VolumeZone" }
    }

    /// The predicate under its legacy name, `NoVolumeZoneConflict`.
    pub fn legacy() -> Self {
        VolumeZone {
            name: "NoVolumeZoneConflict",
        }
    }
}

/// Per-pod state: the bound volumes' topology constraints, or the reason every node fails.
#[derive(Debug, Default)]
pub struct ZoneState {
    /// (label key, allowed values) of each bound PV's topology labels.
    constraints: Vec<(&'static str, Vec<String>)>,
    reject: Option<Reason>,
}

fn topologies(pv: &PersistentVolume, out: &mut Vec<(&'static str, Vec<String>)>) {
    for key in TOPOLOGY_LABELS {
        if let Some(v) = pv.metadata.labels.get(key)
            && let Some(set) = zones(v)
        {
            out.push((key, set));
        }
    }
}

impl Predicate for VolumeZone {
    type State = ZoneState;

    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<ZoneState>, PluginError> {
        let pod = cx.pod();
        let storage = cx.snapshot().storage();
        let mut st = ZoneState::default();
        let v1_34 = cx.kube_version() >= KubeVersion::V1_34;
        // kube v1.34 rejects the pod in PreFilter with its text; v1.20 failed the nodes.
        let reject = |r, message: String| {
            Ok(if v1_34 {
                Prepared::Reject(Rejection::new(Reason::Volume(r), message))
            } else {
                Prepared::Run(ZoneState {
                    constraints: Vec::new(),
                    reject: Some(Reason::Volume(r)),
                })
            })
        };
        for v in &pod.spec.volumes {
            let Some(c) = &v.persistent_volume_claim else {
                continue;
            };
            if c.claim_name.is_empty() {
                return reject(
                    VolumeProblem::ClaimWithoutName,
                    "PersistentVolumeClaim had no name".into(),
                );
            }
            let Some(pvc) = storage.pvc(&pod.metadata.namespace, &c.claim_name) else {
                return reject(
                    VolumeProblem::ClaimNotFound,
                    not_found("persistentvolumeclaim", &c.claim_name),
                );
            };
            if pvc.spec.volume_name.is_empty() {
                let class = pvc.class();
                if class.is_empty() {
                    return reject(
                        VolumeProblem::NoVolumeNorClass,
                        "PersistentVolumeClaim had no pv name and storageClass name".into(),
                    );
                }
                let Some(sc) = storage.class(class) else {
                    return reject(
                        VolumeProblem::StorageClassNotFound,
                        not_found("storageclass.storage.k8s.io", class),
                    );
                };
                match sc.volume_binding_mode {
                    None => {
                        return reject(
                            VolumeProblem::BindingModeNotSet,
                            format!("VolumeBindingMode not set for StorageClass \"{class}\""),
                        );
                    }
                    Some(VolumeBindingMode::WaitForFirstConsumer) => continue,
                    Some(VolumeBindingMode::Immediate) => {
                        return reject(
                            VolumeProblem::UnboundVolume,
                            "PersistentVolume had no name".into(),
                        );
                    }
                }
            }
            let Some(pv) = storage.pv(&pvc.spec.volume_name) else {
                return reject(
                    VolumeProblem::VolumeNotFound,
                    not_found("persistentvolume", &pvc.spec.volume_name),
                );
            };
            topologies(pv, &mut st.constraints);
        }
        if st.constraints.is_empty() {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &ZoneState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let v1_34 = cx.kube_version() >= KubeVersion::V1_34;
        let labels = &node.node().metadata.labels;
        let unlabelled = !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k));
        if let Some(r) = st.reject {
            // v1.20 looked claims up only for labelled nodes (v1.34 rejects in PreFilter).
            if v1_34 || !unlabelled {
                return Err(r);
            }
        }
        if unlabelled {
            return Ok(());
        }
        for (key, values) in &st.constraints {
            let v = match labels.get(*key) {
                Some(v) => Some(v.as_str()),
                None if v1_34 => labels.get(translate_to_ga(key)).map(|s| s.as_str()),
                // v1.20 reads a missing node label as "".
                None => Some(""),
            };
            if !v.is_some_and(|v| values.iter().any(|x| x == v)) {
                return Err(Reason::VolumeZoneConflict);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "zone_tests.rs"]
mod tests;
