//! Everything the scheduler writes to the API server, as kube-scheduler writes it: the
//! `pods/binding` subresource, PreBind's volume and claim writes, DynamicResources'
//! deallocations, status patches (the `PodScheduled`
//! condition, `nominatedNodeName`, a victim's `DisruptionTarget`), victim deletions and
//! `events.k8s.io/v1` Events.
//!
//! Every write is refused once this replica's term is over ([`Fence`]): a replica that lost
//! its lease writes nothing more.

use std::time::SystemTime;

use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use lease_elect::LeaderGuard;
use sched_core::model::PodKey;

/// kube's `NoteLengthLimit`: an event's note is cut to this many bytes.
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// Why a write was not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// This replica no longer leads: nothing is written.
    #[error("this replica's lease is no longer valid")]
    Fenced,
    /// The API server refused the write (a conflict, an object that is gone, a failed
    /// precondition): the status code and its message.
    #[error("{code}: {message}")]
    Refused {
        /// The HTTP status code.
        code: u16,
        /// The API server's message.
        message: String,
    },
    /// The request failed (a timeout, a lost connection).
    #[error(transparent)]
    Failed(kube::Error),
}

impl From<kube::Error> for WriteError {
    fn from(e: kube::Error) -> WriteError {
        match e {
            kube::Error::Api(s) if (400..500).contains(&s.code) => WriteError::Refused {
                code: s.code,
                message: s.message.clone(),
            },
            other => WriteError::Failed(other),
        }
    }
}

/// Whether this replica may still write: its leader term's guard, or always when leader
/// election is off.
#[derive(Clone, Debug)]
pub struct Fence(Option<LeaderGuard>);

impl Fence {
    /// Writes while `guard`'s term is valid.
    pub fn leader(guard: LeaderGuard) -> Fence {
        Fence(Some(guard))
    }

    /// Always writes (leader election off).
    pub fn unfenced() -> Fence {
        Fence(None)
    }

    fn check(&self) -> Result<(), WriteError> {
        match &self.0 {
            Some(g) if !g.is_valid() => Err(WriteError::Fenced),
            _ => Ok(()),
        }
    }
}

/// The scheduler's writes, with its identity for Events.
#[derive(Clone)]
pub struct Writer {
    client: Client,
    fence: Fence,
    /// `reportingInstance` of Events (kube: `<scheduler name>-<hostname>`; here the
    /// replica's identity).
    instance: String,
}

/// A condition for a pod's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition<'a> {
    /// `type` (`PodScheduled`, `DisruptionTarget`).
    pub type_: &'a str,
    /// `status` (`True`, `False`).
    pub status: &'a str,
    /// `reason`.
    pub reason: &'a str,
    /// `message`.
    pub message: &'a str,
    /// The `lastTransitionTime` to keep: the pod's current one when the condition's status
    /// does not change (kube's `UpdatePodCondition` keeps it then); `None` writes now.
    pub since: Option<&'a str>,
}

fn now() -> Timestamp {
    Timestamp::try_from(SystemTime::now()).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Writer {
    /// A writer over `client`, fenced by `fence`; `instance` names this replica in Events.
    pub fn new(client: Client, fence: Fence, instance: impl Into<String>) -> Writer {
        Writer {
            client,
            fence,
            instance: instance.into(),
        }
    }

    /// `Err(WriteError::Fenced)` once this replica's term is over.
    ///
    /// # Errors
    /// [`WriteError::Fenced`].
    pub fn check(&self) -> Result<(), WriteError> {
        self.fence.check()
    }

    fn pods(&self, pod: &PodKey) -> Api<Pod> {
        Api::namespaced(self.client.clone(), pod.namespace())
    }

    /// Binds `pod` (of UID `uid`) to `node`: a `Binding` posted to `pods/binding`, with the
    /// pod's UID as a precondition, as kube's DefaultBinder does.
    ///
    /// # Errors
    /// [`WriteError`]; 409 (already bound) and 404 (gone) are [`WriteError::Refused`].
    pub async fn bind(&self, pod: &PodKey, uid: &str, node: &str) -> Result<(), WriteError> {
        self.fence.check()?;
        let binding = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name(), "namespace": pod.namespace(), "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        self.pods(pod)
            .create_subresource::<_, serde_json::Value>(
                "binding",
                pod.name(),
                &PostParams::default(),
                &binding,
            )
            .await?;
        Ok(())
    }

    /// Merge-patches a pod's status: a condition (replacing the one of its type, as kube's
    /// `UpdatePodCondition`; `lastTransitionTime` now) and/or `nominatedNodeName`.
    ///
    /// # Errors
    /// [`WriteError`].
    pub async fn patch_pod_status(
        &self,
        pod: &PodKey,
        condition: Option<Condition<'_>>,
        nominated_node: Option<&str>,
    ) -> Result<(), WriteError> {
        self.fence.check()?;
        let mut status = serde_json::Map::new();
        if let Some(c) = condition {
            // A strategic merge patch merges `conditions` by `type`.
            status.insert(
                "conditions".into(),
                serde_json::json!([{
                    "type": c.type_,
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "lastTransitionTime": c.since.map_or_else(|| now().to_string(), str::to_owned),
                }]),
            );
        }
        if let Some(n) = nominated_node {
            status.insert("nominatedNodeName".into(), n.into());
        }
        let patch = serde_json::json!({ "status": status });
        self.pods(pod)
            .patch_status(
                pod.name(),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await?;
        Ok(())
    }

    /// Clears a pod's `status.nominatedNodeName` (kube's `clearNominatedNodeName`, for a
    /// lower-priority pod nominated where a preemptor now is). A pod gone is no error.
    ///
    /// # Errors
    /// [`WriteError`].
    pub async fn clear_nomination(&self, pod: &PodKey) -> Result<(), WriteError> {
        self.fence.check()?;
        let patch = serde_json::json!({ "status": { "nominatedNodeName": null } });
        match self
            .pods(pod)
            .patch_status(pod.name(), &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a victim of preemption (default grace period), only the pod of UID `uid`.
    /// `Ok(false)` when it was gone already (kube's `PreemptPod` then records no event).
    ///
    /// # Errors
    /// [`WriteError`].
    pub async fn delete_pod(&self, pod: &PodKey, uid: &str) -> Result<bool, WriteError> {
        self.fence.check()?;
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.pods(pod).delete(pod.name(), &params).await {
            Ok(_) => Ok(true),
            // Gone, or a new pod of that name (the UID precondition failed).
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// VolumeBinding's PreBind writes: each PersistentVolume's `claimRef` (and
    /// `pv.kubernetes.io/bound-by-controller`) as the engine assumed them, refused when the
    /// volume was bound to another claim or changed since it was read; and each claim to
    /// provision annotated with its node (`volume.kubernetes.io/selected-node`). In the
    /// engine's order.
    ///
    /// # Errors
    /// [`WriteError`].
    pub async fn write_volumes(
        &self,
        volumes: &sched_core::plugins::volume::AssumedVolumes,
    ) -> Result<(), WriteError> {
        for pv in volumes.bindings() {
            self.fence.check()?;
            let api = Api::<PersistentVolume>::all(self.client.clone());
            let name = &pv.metadata.name;
            // kube updates the volume it read: a volume bound to another claim meanwhile is
            // a conflict, and so is any change since (the resourceVersion precondition).
            let current = api.get(name).await?;
            let wanted = pv.spec.claim_ref.as_ref();
            if let Some(held) = current.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
                let same = wanted.is_some_and(|c| {
                    held.namespace.as_deref() == Some(c.namespace.as_str())
                        && held.name.as_deref() == Some(c.name.as_str())
                });
                if !same {
                    return Err(WriteError::Refused {
                        code: 409,
                        message: format!(
                            "PersistentVolume {name} is bound to {}/{} now",
                            held.namespace.as_deref().unwrap_or_default(),
                            held.name.as_deref().unwrap_or_default()
                        ),
                    });
                }
            }
            let claim = wanted.map(|c| {
                serde_json::json!({
                    "kind": "PersistentVolumeClaim", "apiVersion": "v1",
                    "namespace": c.namespace, "name": c.name, "uid": c.uid,
                })
            });
            // Only the annotation the binding sets; the volume's others stay as they are.
            let annotations: serde_json::Map<String, serde_json::Value> = pv
                .metadata
                .annotations
                .iter()
                .filter(|(k, _)| k.as_str() == "pv.kubernetes.io/bound-by-controller")
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            let patch = serde_json::json!({
                "metadata": {
                    "resourceVersion": current.metadata.resource_version,
                    "annotations": annotations,
                },
                "spec": {"claimRef": claim},
            });
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
        }
        for pvc in volumes.provisions() {
            self.fence.check()?;
            let node = pvc
                .metadata
                .annotations
                .get("volume.kubernetes.io/selected-node")
                .cloned()
                .unwrap_or_default();
            let patch = serde_json::json!({
                "metadata": {"annotations": {"volume.kubernetes.io/selected-node": node}},
            });
            Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), &pvc.metadata.namespace)
                .patch(
                    &pvc.metadata.name,
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await?;
        }
        Ok(())
    }

    /// DynamicResources' PreBind: for each claim, a new allocation first gets kube's
    /// finalizer `resource.kubernetes.io/delete-protection`, then the status is patched with
    /// the allocation and the pod added to `reservedFor` (merged by UID, so the other pods
    /// sharing the claim stay).
    ///
    /// # Errors
    /// [`WriteError`].
    pub async fn write_claims(
        &self,
        claims: &[sched_core::plugins::dra::ClaimBinding],
    ) -> Result<(), WriteError> {
        for c in claims {
            self.fence.check()?;
            let api = self.claims(&c.namespace);
            let mut status = serde_json::json!({ "reservedFor": [c.consumer] });
            if let Some(allocation) = &c.allocation {
                let finalizer = serde_json::json!({
                    "metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]},
                });
                // Strategic merge patches add to the lists (finalizers; reservedFor, merged by
                // UID) instead of replacing them.
                api.patch(
                    &c.name,
                    &PatchParams::default(),
                    &Patch::Strategic(finalizer),
                )
                .await?;
                status["allocation"] = serde_json::to_value(allocation).unwrap_or_default();
                self.fence.check()?;
            }
            api.patch_status(
                &c.name,
                &PatchParams::default(),
                &Patch::Strategic(serde_json::json!({ "status": status })),
            )
            .await?;
        }
        Ok(())
    }

    /// DynamicResources' Unreserve after a failed binding: the pod (`pod_uid`) is removed from
    /// each claim's `status.reservedFor` with kube's strategic merge patch, which names the
    /// claim's UID (a claim created again under the same name is refused, not touched) and
    /// deletes the one entry without reading the claim. The allocation stays, as in kube. A
    /// claim gone, or recreated, is skipped.
    ///
    /// # Errors
    /// [`WriteError`] of the first claim that could not be patched (the others are still
    /// tried).
    pub async fn unreserve_claims(
        &self,
        claims: &[sched_core::plugins::dra::ClaimBinding],
        pod_uid: &str,
    ) -> Result<(), WriteError> {
        let mut first = Ok(());
        for c in claims {
            self.fence.check()?;
            let patch = serde_json::json!({
                "metadata": {"uid": c.uid},
                "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
            });
            let written = self
                .claims(&c.namespace)
                .patch_status(&c.name, &PatchParams::default(), &Patch::Strategic(patch))
                .await;
            match written.map_err(WriteError::from) {
                // Gone (404), or created again: another UID is refused as a conflict or as
                // an invalid change of the immutable `metadata.uid` (422).
                Ok(_)
                | Err(WriteError::Refused {
                    code: 404 | 409 | 422,
                    ..
                }) => {}
                Err(e) => {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first
    }

    /// The ResourceClaims of `namespace`.
    fn claims(&self, namespace: &str) -> Api<kube::api::DynamicObject> {
        let resource = crate::kinds::WATCHED
            .iter()
            .find(|k| k.kind == "ResourceClaim")
            .map(crate::kinds::WatchedKind::api_resource)
            .expect("ResourceClaims are watched");
        Api::namespaced_with(self.client.clone(), namespace, &resource)
    }

    /// DynamicResources' PostFilter deallocation: the claim is read, and if it still is the
    /// claim the scheduler saw, allocated and reserved for nobody or the pod alone
    /// ([`Deallocation::still_applies`](sched_core::plugins::dra::Deallocation::still_applies)),
    /// its `status.allocation`, `reservedFor` and `devices` are cleared, with the
    /// resourceVersion it was read at (kube's `UpdateStatus` of the copy it read). Returns
    /// whether it was written (`false`: gone or no longer applies).
    ///
    /// # Errors
    /// [`WriteError`] (a conflict when the claim changed since the read).
    pub async fn deallocate_claim(
        &self,
        d: &sched_core::plugins::dra::Deallocation,
    ) -> Result<bool, WriteError> {
        self.fence.check()?;
        let api = self.claims(&d.namespace);
        let Some(current) = api.get_opt(&d.name).await? else {
            return Ok(false);
        };
        let version = current.metadata.resource_version.clone();
        let claim: sched_core::model::ResourceClaim = serde_json::to_value(&current)
            .and_then(serde_json::from_value)
            .map_err(|e| WriteError::Refused {
                code: 422,
                message: format!("claim {}/{}: {e}", d.namespace, d.name),
            })?;
        if !d.still_applies(&claim) {
            return Ok(false);
        }
        self.fence.check()?;
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": version},
            "status": {"allocation": null, "reservedFor": null, "devices": null},
        });
        match api
            .patch_status(&d.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => Ok(true),
            // Changed since the read (another deallocation, a new reservation): the claim as
            // it is now comes through the watch, and the pod's next attempt decides again.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Records an `events.k8s.io/v1` Event about `pod` (and `related`, a second pod), as
    /// kube's event recorder writes it: `reportingController` the profile's scheduler name,
    /// the note cut to [`NOTE_LENGTH_LIMIT`].
    ///
    /// # Errors
    /// [`WriteError`].
    #[allow(clippy::too_many_arguments)]
    pub async fn record(
        &self,
        regarding: (&PodKey, &str),
        related: Option<(&PodKey, &str)>,
        controller: &str,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Result<(), WriteError> {
        self.fence.check()?;
        let reference = |(pod, uid): (&PodKey, &str)| ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(pod.namespace().to_owned()),
            name: Some(pod.name().to_owned()),
            uid: Some(uid.to_owned()),
            ..ObjectReference::default()
        };
        let now = now();
        let (pod, _) = regarding;
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", pod.name(), now.as_nanosecond())),
                namespace: Some(pod.namespace().to_owned()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(controller.to_owned()),
            reporting_instance: Some(reporting_instance(controller, &self.instance)),
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            note: Some(truncate_note(note)),
            type_: Some(type_.to_owned()),
            regarding: Some(reference(regarding)),
            related: related.map(reference),
            ..Event::default()
        };
        Api::<Event>::namespaced(self.client.clone(), pod.namespace())
            .create(&PostParams::default(), &event)
            .await?;
        Ok(())
    }
}

/// `<controller>-<instance>`, cut to the 128 bytes the API server accepts.
fn reporting_instance(controller: &str, instance: &str) -> String {
    let mut s = format!("{controller}-{instance}");
    let mut end = s.len().min(128);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// kube's `truncateMessage`: a note longer than [`NOTE_LENGTH_LIMIT`] is cut and ends with
/// ` ...`.
pub fn truncate_note(note: &str) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note.to_owned();
    }
    let suffix = " ...";
    let mut end = NOTE_LENGTH_LIMIT - suffix.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &note[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reporting_instance_fits_the_api_servers_limit() {
        assert_eq!(reporting_instance("sched-kube", "a"), "sched-kube-a");
        assert_eq!(reporting_instance("s", &"é".repeat(100)).len(), 128);
        assert_eq!(reporting_instance("ab", &"é".repeat(100)).len(), 127);
    }

    #[test]
    fn a_long_note_is_cut_as_kube_cuts_it() {
        assert_eq!(truncate_note("short"), "short");
        let long = "x".repeat(2000);
        let cut = truncate_note(&long);
        assert_eq!(cut.len(), NOTE_LENGTH_LIMIT);
        assert!(cut.ends_with("x ..."));
        // Never inside a character.
        let wide = "é".repeat(600);
        assert!(truncate_note(&wide).len() <= NOTE_LENGTH_LIMIT);
    }
}
