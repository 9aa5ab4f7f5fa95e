//! Which pods of the snapshot use which PersistentVolumeClaims: the storage objects a node's
//! memo ([`NodeInfo::memo`](super::NodeInfo::memo)) can read through its pods' volumes, so
//! that a claim or volume change drops the memos of the nodes it concerns only.

use std::collections::HashMap;

use crate::model::{Pod, PodKey, volume_claim};

/// The pods using each claim, by (namespace, name); kept with the snapshot's pods (every add
/// and removal, the preemption dry run's included) and checked against a recount.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClaimUsers {
    pods: HashMap<(String, String), Vec<PodKey>>,
}

impl ClaimUsers {
    /// `pod` (filed under `key`) joined the snapshot.
    pub(crate) fn add(&mut self, pod: &Pod, key: &PodKey) {
        for claim in claims(pod) {
            self.pods.entry(claim).or_default().push(key.clone());
        }
    }

    /// `pod` (filed under `key`) left the snapshot.
    pub(crate) fn remove(&mut self, pod: &Pod, key: &str) {
        for claim in claims(pod) {
            let Some(users) = self.pods.get_mut(&claim) else {
                continue;
            };
            if let Some(i) = users.iter().position(|k| k == key) {
                users.swap_remove(i);
            }
            if users.is_empty() {
                self.pods.remove(&claim);
            }
        }
    }

    /// The pods using the claim `namespace/name`.
    pub(crate) fn users(&self, namespace: &str, name: &str) -> &[PodKey] {
        // One key built per lookup: claims change once per storage event.
        self.pods
            .get(&(namespace.to_string(), name.to_string()))
            .map_or(&[], Vec::as_slice)
    }

    /// The index recounted from `pods`, for the checks against the kept one.
    pub(crate) fn recount<'a>(pods: impl Iterator<Item = &'a Pod>) -> ClaimUsers {
        let mut c = ClaimUsers::default();
        for p in pods {
            c.add(p, &p.key());
        }
        c.normalized()
    }

    /// The same index with each claim's pods sorted (the kept order follows the changes).
    pub(crate) fn normalized(&self) -> ClaimUsers {
        let mut c = self.clone();
        for users in c.pods.values_mut() {
            users.sort();
        }
        c
    }
}

/// The claims `pod`'s volumes use, as (namespace, name).
fn claims(pod: &Pod) -> impl Iterator<Item = (String, String)> + '_ {
    pod.spec
        .volumes
        .iter()
        .filter_map(|v| volume_claim(pod, v))
        .map(|(name, _)| (pod.metadata.namespace.clone(), name))
}
