//! kube v1.34's DynamicResources plugin (`pkg/scheduler/framework/plugins/dynamicresources`):
//! a pod's ResourceClaims at PreFilter and Filter here, and the allocation its Reserve and
//! PreBind hand on ([`allocate_on`], which the scheduling engine calls).
//!
//! - **PreFilter** ([`DynamicResources::prepare`]): the pod's claims are looked up (by
//!   `resourceClaimName`, or for a template by the name in `status.resourceClaimStatuses`,
//!   which must name a claim the pod controls); a claim being deleted, in use by the most
//!   consumers a claim may have, or with an allocation in flight rejects the pod, as does a
//!   request whose device class does not exist. A pod without claims skips the plugin.
//! - **Filter**: the claims to allocate are allocated together on the node by the structured
//!   allocator ([`crate::dra::allocator`], v1.34's features) over the snapshot's slices,
//!   classes and devices in use; then every allocated claim's node selector must match. The
//!   allocator's answer per node is kept between cycles by the DRA index
//!   ([`DraIndex::filter_answers`]) until something it reads changes, so that pods with
//!   claims of one spec (from one template) run it once per node and change.
//!
//! PreEnqueue ([`Predicate::pre_enqueue`]) keeps a pod whose claims do not resolve out of
//! scheduling, as kube's does. Its PostFilter ([`crate::scheduler::post_filter`]) names an
//! allocated claim to deallocate ([`Deallocation`]). Every rejection is kube's `UnschedulableAndUnresolvable` with
//! kube's text; an allocator error (a CEL runtime error in a selector, ...) fails the whole
//! attempt, as kube's Filter `Error` status does ([`DraProblem::AllocatorError`],
//! [`Predicate::filter_error`]). Where this differs from kube: the DRAExtendedResource (alpha) and device binding conditions are not run, as
//! with v1.34's default gates; Filter's timeout (DRASchedulerFilterTimeout) is not applied.

use std::sync::Arc;

use crate::dra::allocator::{self, Allocator, Features, Outcome, TargetNode};
use crate::fast_path::Sealed;
use crate::framework::{
    CycleContext, DraProblem, PluginError, PluginErrorKind, Predicate, Prepared, Reason, Rejection,
};
use crate::model::{
    AllocationResult, Node, NodeSelector, NodeSelectorOperator, Pod, ResourceClaim,
    ResourceClaimConsumerReference,
};
use crate::snapshot::{DraIndex, FilterAnswer, FilterAnswers, NodeRef};

/// The plugin's name.
pub const NAME: &str = "DynamicResources";

/// How many consumers a claim's `status.reservedFor` may list (kube's
/// `ResourceClaimReservedForMaxSize`).
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// kube's DynamicResources at PreFilter and Filter.
#[derive(Clone, Copy, Debug, Default)]
pub struct DynamicResources {
    features: Features,
}

impl DynamicResources {
    /// With kube v1.34's default features.
    pub fn new() -> Self {
        DynamicResources::default()
    }
}

/// What PreFilter found for the pod: its claims to allocate and the node selectors of those
/// allocated already.
#[derive(Debug, Default)]
pub struct DraState {
    to_allocate: Vec<Arc<ResourceClaim>>,
    on_nodes: Vec<NodeSelector>,
    /// The node that the allocated claims whose node selector names one node
    /// ([`pinned_name`]) allow, when there are such claims.
    pinned: Option<PinnedNode>,
    /// The index's kept Filter answers for `to_allocate`, when it keeps them.
    answers: Option<FilterAnswers>,
}

/// The nodes that allocated claims whose node selectors are `metadata.name In [name]` allow:
/// the node of that name (none when two claims name different nodes), and a node without a
/// name (whose `matchFields` kube ignores).
#[derive(Debug)]
struct PinnedNode {
    /// The name the claims name, or `None` when they name different nodes.
    name: Option<String>,
    /// The snapshot index of the node so named.
    index: Option<u32>,
    /// The snapshot index of a node with an empty name.
    unnamed: Option<u32>,
}

impl PinnedNode {
    /// Whether the node with snapshot index `index` and name `name` is allowed.
    fn allows(&self, name: &str) -> bool {
        name.is_empty() || self.name.as_deref() == Some(name)
    }

    /// [`PinnedNode::allows`] by snapshot index.
    fn allows_index(&self, index: u32) -> bool {
        Some(index) == self.index || Some(index) == self.unnamed
    }
}

/// The one node name an allocation's node selector allows, when it is a single term of a
/// single `metadata.name In [name]` field requirement (what kube's allocator writes for a
/// device of a node-local slice): the selector matches exactly the node of that name (and a
/// node without a name, as `selector_matches` reads it).
fn pinned_name(selector: &NodeSelector) -> Option<&str> {
    let mut terms = selector
        .node_selector_terms
        .iter()
        .filter(|t| !(t.match_expressions.is_empty() && t.match_fields.is_empty()));
    let term = terms.next()?;
    if terms.next().is_some() || !term.match_expressions.is_empty() {
        return None;
    }
    let [field] = term.match_fields.as_slice() else {
        return None;
    };
    let [value] = field.values.as_slice() else {
        return None;
    };
    (field.key == "metadata.name" && field.operator == NodeSelectorOperator::In)
        .then_some(value.as_str())
}

impl Predicate for DynamicResources {
    type State = DraState;

    fn name(&self) -> &str {
        NAME
    }

    /// kube's PreEnqueue: every claim of the pod must resolve (made from its template,
    /// existing, not being deleted, owned by the pod when made from a template).
    fn pre_enqueue(&self, pod: &Pod, snapshot: &crate::snapshot::Snapshot) -> Result<(), String> {
        if pod.spec.resource_claims.is_empty() {
            return Ok(());
        }
        pod_claims(pod, snapshot.dra()).map(drop)
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<DraState>, PluginError> {
        let pod = cx.pod();
        if pod.spec.resource_claims.is_empty() {
            return Ok(Prepared::Skip);
        }
        let dra = cx.snapshot().dra();
        let claims = match pod_claims(pod, dra) {
            Ok(c) => c,
            Err(message) => return Ok(reject(message)),
        };
        if claims.is_empty() {
            return Ok(Prepared::Skip);
        }
        let mut state = DraState::default();
        for claim in claims {
            match &claim.status.allocation {
                Some(allocation) => {
                    if !can_be_reserved(&claim) && !is_reserved_for(&claim, pod) {
                        return Ok(reject("resourceclaim in use".into()));
                    }
                    if let Some(selector) = &allocation.node_selector {
                        check_node_selector(selector)?;
                        match pinned_name(selector) {
                            Some(name) => pin(&mut state.pinned, name, cx.snapshot()),
                            None => state.on_nodes.push(selector.clone()),
                        }
                    }
                }
                None => {
                    let key = format!("{}/{}", claim.metadata.namespace, claim.metadata.name);
                    if dra.has_pending(&claim.metadata.namespace, &claim.metadata.name) {
                        return Ok(reject(format!(
                            "resource claim {key} is in the process of being allocated"
                        )));
                    }
                    if let Some(message) = missing_class(&claim, &key, dra, self.features)? {
                        return Ok(reject(message));
                    }
                    state.to_allocate.push(claim);
                }
            }
        }
        if !state.to_allocate.is_empty() {
            state.answers = dra.filter_answers(self.features, &state.to_allocate);
        }
        Ok(Prepared::Run(state))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &DraState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let node = node.node();
        if !state.to_allocate.is_empty() {
            let dra = cx.snapshot().dra();
            let answer = filter_answer(dra, self.features, node, state);
            match answer {
                FilterAnswer::Fits => {}
                FilterAnswer::DoesNotFit => {
                    return Err(Reason::DynamicResources(DraProblem::CannotAllocate));
                }
                FilterAnswer::Error => {
                    return Err(Reason::DynamicResources(DraProblem::AllocatorError));
                }
            }
        }
        let target = TargetNode::from(node);
        if state
            .pinned
            .as_ref()
            .is_some_and(|p| !p.allows(target.name))
            || state
                .on_nodes
                .iter()
                .any(|s| !allocator::node_selector_matches(s, target).unwrap_or(false))
        {
            return Err(Reason::DynamicResources(DraProblem::ClaimNotOnNode));
        }
        Ok(())
    }

    /// `filter` per node; a pod whose every claim is allocated, each on one named node,
    /// compares snapshot indices only.
    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &DraState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        if let Some(pinned) = &state.pinned
            && state.to_allocate.is_empty()
            && state.on_nodes.is_empty()
        {
            for (o, &i) in out.iter_mut().zip(nodes) {
                *o = if pinned.allows_index(i) {
                    Ok(())
                } else {
                    Err(Reason::DynamicResources(DraProblem::ClaimNotOnNode))
                };
            }
            return;
        }
        let snapshot = cx.snapshot();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.filter(cx, state, snapshot.node(i as usize));
        }
    }

    /// The allocator's error on `node` (kube's Filter `Error` status: the attempt fails).
    fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &DraState,
        node: NodeRef<'_>,
    ) -> Option<String> {
        let claims: Vec<&ResourceClaim> = state.to_allocate.iter().map(|c| &**c).collect();
        allocate(cx.snapshot().dra(), self.features, node.node(), &claims)
            .err()
            .map(|e| e.to_string())
    }

    /// The allocator's errors (a selector's CEL runtime error) are Filter errors.
    fn may_error(&self, _: Sealed) -> bool {
        true
    }
}

/// A claim the pod's bind has to write (kube's PreBind, `bindClaim`): its new allocation, if
/// the cycle allocated it, and the pod added to its `status.reservedFor`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ClaimBinding {
    /// The claim's namespace (the pod's).
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The claim's UID (`metadata.uid`): kube's Unreserve names it in its patch, so that a
    /// claim created again under the same name is left alone.
    pub uid: String,
    /// The allocation to write into `status.allocation` (with kube's finalizer
    /// `resource.kubernetes.io/delete-protection` on the claim); `None` when the claim was
    /// allocated already.
    pub allocation: Option<AllocationResult>,
    /// The entry to add to `status.reservedFor`: the pod.
    pub consumer: ResourceClaimConsumerReference,
}

/// DynamicResources' Reserve and PreBind in one step, for a pod placed on `node` outside the
/// engine (a simulator, a replay): its claims are allocated there and written into the
/// snapshot's index (allocation and `reservedFor`), as the API server would hold them after
/// kube's PreBind. Returns the claims written, as `namespace/name`.
///
/// # Errors
/// As [`allocate_on`]; nothing is written then.
pub fn assume_claims(
    snapshot: &mut crate::snapshot::Snapshot,
    pod: &Pod,
    node: &str,
) -> Result<Vec<String>, String> {
    if pod.spec.resource_claims.is_empty() {
        return Ok(Vec::new());
    }
    let info = snapshot
        .get(node)
        .ok_or_else(|| format!("node {node} is not in the snapshot"))?;
    let bindings = allocate_on(snapshot.dra(), pod, info.node())?;
    let dra = snapshot.dra_mut();
    let mut written = Vec::with_capacity(bindings.len());
    for b in bindings {
        written.push(format!("{}/{}", b.namespace, b.name));
        dra.confirm(&b.namespace, &b.name, b.allocation, b.consumer);
    }
    Ok(written)
}

/// Reserve's allocation for `pod` on `node` (kube's Reserve and what its PreBind writes): the
/// claims not yet reserved for the pod, each with the allocation found for it on the node if
/// it needs one. `Ok(empty)` for a pod without claims.
///
/// # Errors
/// kube's text when the claims cannot be resolved or allocated on the node any more.
pub fn allocate_on(dra: &DraIndex, pod: &Pod, node: &Node) -> Result<Vec<ClaimBinding>, String> {
    if pod.spec.resource_claims.is_empty() {
        return Ok(Vec::new());
    }
    let claims = pod_claims(pod, dra)?;
    let to_allocate: Vec<&ResourceClaim> = claims
        .iter()
        .filter(|c| c.status.allocation.is_none())
        .map(|c| &**c)
        .collect();
    let mut found = Vec::new();
    if !to_allocate.is_empty() {
        match allocate(dra, Features::V1_34, node, &to_allocate) {
            Ok(Outcome::Allocated(a)) => found = a,
            Ok(_) => return Err("claim allocation not found for node".into()),
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut found = found.into_iter();
    let consumer = ResourceClaimConsumerReference {
        resource: "pods".into(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..ResourceClaimConsumerReference::default()
    };
    Ok(claims
        .iter()
        .filter_map(|claim| {
            let allocation = match claim.status.allocation {
                Some(_) => None,
                None => found.next().map(|a| a.result),
            };
            (allocation.is_some() || !is_reserved_for(claim, pod)).then(|| ClaimBinding {
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
                allocation,
                consumer: consumer.clone(),
            })
        })
        .collect())
}

/// Whether `state`'s claims can be allocated on `node`: the index's kept answer, or the
/// allocator's (then kept).
fn filter_answer(
    dra: &DraIndex,
    features: Features,
    node: &Node,
    state: &DraState,
) -> FilterAnswer {
    let compute = || fresh_answer(dra, features, node, &state.to_allocate);
    match &state.answers {
        Some(answers) => answers.get_or(dra, &node.metadata.name, compute),
        None => compute(),
    }
}

/// The allocator's answer for `claims` on `node`, from scratch.
fn fresh_answer(
    dra: &DraIndex,
    features: Features,
    node: &Node,
    claims: &[Arc<ResourceClaim>],
) -> FilterAnswer {
    let claims: Vec<&ResourceClaim> = claims.iter().map(|c| &**c).collect();
    match allocate(dra, features, node, &claims) {
        Ok(Outcome::Allocated(_)) => FilterAnswer::Fits,
        Ok(_) => FilterAnswer::DoesNotFit,
        Err(_) => FilterAnswer::Error,
    }
}

fn allocate(
    dra: &DraIndex,
    features: Features,
    node: &Node,
    claims: &[&ResourceClaim],
) -> Result<Outcome, allocator::AllocError> {
    Allocator::new(
        features,
        dra.slices(),
        dra.classes(),
        dra.allocated(),
        dra.selectors(),
    )
    .with_slice_index(dra.slice_index())
    .allocate(TargetNode::from(node), claims)
}

fn reject(message: String) -> Prepared<DraState> {
    Prepared::Reject(Rejection::new(
        Reason::DynamicResources(DraProblem::PodRejected),
        message,
    ))
}

/// A claim DynamicResources' PostFilter deallocates so that the pod may fit elsewhere (kube's
/// PostFilter: an `UpdateStatus` of the claim with `status.allocation`, `status.reservedFor`
/// and `status.devices` cleared). The scheduling engine hands it to the caller with the
/// pod's unschedulable or preempting step; the claim's update, once the informer reports it,
/// wakes the pod.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deallocation {
    /// The claim's namespace (the pod's).
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The claim's UID as the scheduler saw it: a writer refuses a claim of the same name
    /// with another UID.
    pub uid: String,
    /// The UID of the pod whose attempt asked for it: the claim may be reserved for this pod
    /// alone, or for nobody.
    pub pod_uid: String,
}

impl Deallocation {
    /// Whether `claim` may still be deallocated as this asks (kube's condition, checked again
    /// on the claim as it is now): the same claim, allocated, reserved for nobody or for the
    /// pod alone.
    pub fn still_applies(&self, claim: &ResourceClaim) -> bool {
        let reserved = &claim.status.reserved_for;
        claim.metadata.uid == self.uid
            && claim.status.allocation.is_some()
            && (reserved.is_empty() || reserved.len() == 1 && reserved[0].uid == self.pod_uid)
    }

    /// `claim` as the deallocation leaves it: allocation and `reservedFor` cleared, the rest
    /// as it was (what an in-process caller applies back to the engine as the claim's update).
    pub fn cleared(claim: &ResourceClaim) -> ResourceClaim {
        let mut out = claim.clone();
        out.status.allocation = None;
        out.status.reserved_for.clear();
        out
    }
}

/// The pod's claims, in `spec.resourceClaims` order (kube's `foreachPodResourceClaim`): a
/// template's entry without a claim name in the status needs no claim and is passed over.
///
/// # Errors
/// kube's text for a claim not created yet, missing, being deleted or not the pod's own.
pub fn pod_claims(pod: &Pod, dra: &DraIndex) -> Result<Vec<Arc<ResourceClaim>>, String> {
    let namespace = &pod.metadata.namespace;
    let mut out = Vec::with_capacity(pod.spec.resource_claims.len());
    for entry in &pod.spec.resource_claims {
        let (name, must_check_owner) = if let Some(name) = &entry.resource_claim_name {
            (name, false)
        } else if entry.resource_claim_template_name.is_some() {
            let status = pod
                .status
                .resource_claim_statuses
                .iter()
                .find(|s| s.name == entry.name)
                .ok_or_else(|| {
                    format!(
                        "pod \"{namespace}/{}\": ResourceClaim not created yet",
                        pod.metadata.name
                    )
                })?;
            match &status.resource_claim_name {
                Some(name) => (name, true),
                None => continue,
            }
        } else {
            return Err(format!(
                "pod \"{namespace}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                pod.metadata.name, entry.name
            ));
        };
        let claim = dra
            .claim(namespace, name)
            .ok_or_else(|| format!("could not find ResourceClaim \"{namespace}/{name}\""))?;
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim {name:?} is being deleted"));
        }
        if must_check_owner
            && (claim.metadata.namespace != *namespace
                || !claim.metadata.is_controlled_by(&pod.metadata.uid))
        {
            return Err(format!(
                "ResourceClaim {}/{name} was not created for pod {namespace}/{} (pod is not owner)",
                claim.metadata.namespace, pod.metadata.name
            ));
        }
        out.push(Arc::clone(claim));
    }
    Ok(out)
}

/// kube's `resourceclaim.IsReservedForPod`.
fn is_reserved_for(claim: &ResourceClaim, pod: &Pod) -> bool {
    claim
        .status
        .reserved_for
        .iter()
        .any(|r| r.uid == pod.metadata.uid)
}

/// kube's `resourceclaim.CanBeReserved`.
fn can_be_reserved(claim: &ResourceClaim) -> bool {
    claim.status.reserved_for.len() < RESERVED_FOR_MAX_SIZE
}

/// kube's `nodeaffinity.NewNodeSelector` checks on an allocation's node selector.
/// Adds a claim allocated on the node named `name` to the pod's pinned node.
fn pin(pinned: &mut Option<PinnedNode>, name: &str, snapshot: &crate::snapshot::Snapshot) {
    match pinned {
        Some(p) => {
            if p.name.as_deref() != Some(name) {
                p.name = None;
                p.index = None;
            }
        }
        None => {
            let index = |n: &str| snapshot.index_of(n).map(|i| i as u32);
            *pinned = Some(PinnedNode {
                name: Some(name.to_owned()),
                index: index(name),
                unnamed: index(""),
            });
        }
    }
}

fn check_node_selector(selector: &NodeSelector) -> Result<(), PluginError> {
    let probe = std::collections::BTreeMap::new();
    let node = TargetNode {
        name: "",
        labels: &probe,
    };
    allocator::node_selector_matches(selector, node)
        .map(drop)
        .map_err(|e| PluginError::new(NAME, PluginErrorKind::InvalidInput(e)))
}

/// PreFilter's check of the device classes a claim to allocate names (kube's
/// `validateDeviceClass`): kube's text for the first missing one.
fn missing_class(
    claim: &ResourceClaim,
    key: &str,
    dra: &DraIndex,
    features: Features,
) -> Result<Option<String>, PluginError> {
    let check = |class: &str, request: &str| -> Result<Option<String>, PluginError> {
        if class.is_empty() {
            return Err(PluginError::new(
                NAME,
                PluginErrorKind::InvalidInput(format!(
                    "request {request}: unsupported request type"
                )),
            ));
        }
        Ok(dra
            .class(class)
            .is_none()
            .then(|| format!("request {request}: device class {class} does not exist")))
    };
    for request in &claim.spec.devices.requests {
        if let Some(exactly) = &request.exactly {
            if let Some(m) = check(&exactly.device_class_name, &request.name)? {
                return Ok(Some(m));
            }
        } else if !request.first_available.is_empty() {
            if !features.prioritized_list {
                return Ok(Some(format!(
                    "resource claim {key}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                    request.name
                )));
            }
            for sub in &request.first_available {
                let name = format!("{}/{}", request.name, sub.name);
                if let Some(m) = check(&sub.device_class_name, &name)? {
                    return Ok(Some(m));
                }
            }
        } else {
            return Ok(Some(format!(
                "resource claim {key}, request {}: unknown request type",
                request.name
            )));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceClass, ResourceSlice};
    use proptest::prelude::*;
    use serde_json::json;

    const NODES: usize = 4;

    fn node(n: usize) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": format!("n{n}"), "labels": {"zone": if n.is_multiple_of(2) { "a" } else { "b" }}}
        }))
        .unwrap()
    }

    /// Slice `k`: on node `k % NODES`, for all nodes, or by a node selector (`reach` 0, 1, 2).
    fn slice(k: u8, reach: u8, pool: u8, devices: u8, count: u8) -> ResourceSlice {
        let mut spec = json!({
            "driver": "drv",
            "pool": {"name": format!("p{pool}"), "generation": 1, "resourceSliceCount": count},
            "devices": (0..devices).map(|d| json!({
                "name": format!("d{d}"),
                "attributes": {"kind": {"string": if d.is_multiple_of(2) { "a" } else { "b" }}}
            })).collect::<Vec<_>>(),
        });
        match reach {
            0 => spec["nodeName"] = json!(format!("n{}", k as usize % NODES)),
            1 => spec["allNodes"] = json!(true),
            _ => {
                spec["nodeSelector"] = json!({"nodeSelectorTerms": [{"matchExpressions":
                    [{"key": "zone", "operator": "In", "values": ["a"]}]}]})
            }
        }
        serde_json::from_value(json!({"metadata": {"name": format!("s{k}")}, "spec": spec}))
            .unwrap()
    }

    fn class(selective: bool) -> DeviceClass {
        let expression = if selective {
            r#"device.attributes["drv"].kind == "a""#
        } else {
            r#"device.driver == "drv""#
        };
        serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}
        }))
        .unwrap()
    }

    /// The claim specs Filter is asked about: one device, two devices, all devices.
    fn pending_claim(spec: usize) -> Arc<ResourceClaim> {
        let exactly = match spec {
            0 => json!({"deviceClassName": "c"}),
            1 => json!({"deviceClassName": "c", "count": 2}),
            _ => json!({"deviceClassName": "c", "allocationMode": "All"}),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"namespace": "ns", "name": format!("pending-{spec}")},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}
            }))
            .unwrap(),
        )
    }

    fn allocated_claim(n: u8, devices: &[(u8, u8)]) -> ResourceClaim {
        let results: Vec<_> = devices
            .iter()
            .map(|(p, d)| {
                json!({"request": "r", "driver": "drv", "pool": format!("p{p}"),
                       "device": format!("d{d}")})
            })
            .collect();
        serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": format!("c{n}")},
            "status": {"allocation": {"devices": {"results": results}}}
        }))
        .unwrap()
    }

    #[derive(Clone, Debug)]
    enum Op {
        Slice(u8, u8, u8, u8, u8),
        RemoveSlice(u8),
        Class(bool),
        RemoveClass,
        Claim(u8, Vec<(u8, u8)>),
        RemoveClaim(u8),
        Pending(u8, Vec<(u8, u8)>),
        ClearPending(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        let devices = prop::collection::vec((0u8..3, 0u8..3), 0..3);
        prop_oneof![
            3 => (0u8..6, prop::sample::select(vec![0u8, 0, 0, 1, 2]), 0u8..3, 1u8..4, 1u8..3)
                .prop_map(|(k, r, p, d, c)| Op::Slice(k, r, p, d, c)),
            1 => (0u8..6).prop_map(Op::RemoveSlice),
            1 => any::<bool>().prop_map(Op::Class),
            1 => Just(Op::RemoveClass),
            4 => (0u8..4, devices.clone()).prop_map(|(n, d)| Op::Claim(n, d)),
            2 => (0u8..4).prop_map(Op::RemoveClaim),
            2 => (0u8..4, devices).prop_map(|(n, d)| Op::Pending(n, d)),
            2 => (0u8..4).prop_map(Op::ClearPending),
        ]
    }

    fn apply(index: &mut DraIndex, op: Op) {
        match op {
            Op::Slice(k, r, p, d, c) => drop(index.upsert_slice(slice(k, r, p, d, c))),
            Op::RemoveSlice(k) => drop(index.remove_slice(&format!("s{k}"))),
            Op::Class(selective) => drop(index.upsert_class(class(selective))),
            Op::RemoveClass => drop(index.remove_class("c")),
            Op::Claim(n, d) => drop(index.upsert_claim(allocated_claim(n, &d))),
            Op::RemoveClaim(n) => drop(index.remove_claim("ns", &format!("c{n}"))),
            Op::Pending(n, d) => {
                let a = allocated_claim(n, &d).status.allocation.unwrap_or_default();
                index.set_pending("ns", &format!("c{n}"), a);
            }
            Op::ClearPending(n) => drop(index.clear_pending("ns", &format!("c{n}"))),
        }
    }

    proptest! {
        /// Filter's kept answers, read after any sequence of changes to the slices, classes,
        /// claims and in-flight allocations, are those a fresh allocation gives.
        #[test]
        fn kept_filter_answers_match_fresh_allocations(
            ops in prop::collection::vec(op(), 0..40),
        ) {
            let mut index = DraIndex::default();
            index.upsert_class(class(false));
            let nodes: Vec<Node> = (0..=NODES).map(node).collect();
            for op in ops {
                apply(&mut index, op);
                for spec in 0..3 {
                    let claims = vec![pending_claim(spec)];
                    let state = DraState {
                        answers: index.filter_answers(Features::V1_34, &claims),
                        to_allocate: claims,
                        on_nodes: Vec::new(),
                        pinned: None,
                    };
                    for node in &nodes {
                        let kept = filter_answer(&index, Features::V1_34, node, &state);
                        let fresh = fresh_answer(&index, Features::V1_34, node, &state.to_allocate);
                        prop_assert_eq!(kept, fresh, "spec {} on {}", spec, node.metadata.name);
                    }
                }
            }
        }
    }

    fn requirement() -> impl Strategy<Value = crate::model::NodeSelectorRequirement> {
        (
            prop_oneof![3 => Just("metadata.name"), 1 => Just("metadata.uid")],
            prop_oneof![3 => Just(NodeSelectorOperator::In), 1 => Just(NodeSelectorOperator::NotIn)],
            prop::collection::vec(prop_oneof![Just("n0"), Just("n1"), Just("n2"), Just("")], 0..3),
        )
            .prop_map(|(key, operator, values)| crate::model::NodeSelectorRequirement {
                key: key.into(),
                operator,
                values: values.into_iter().map(String::from).collect(),
            })
    }

    fn selector() -> impl Strategy<Value = NodeSelector> {
        let term = (
            prop::collection::vec(requirement(), 0..3),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(match_fields, zone)| crate::model::NodeSelectorTerm {
                match_fields,
                match_expressions: if zone {
                    vec![crate::model::NodeSelectorRequirement {
                        key: "zone".into(),
                        operator: NodeSelectorOperator::In,
                        values: vec!["a".into()],
                    }]
                } else {
                    Vec::new()
                },
            });
        let pinned = prop_oneof![Just("n0"), Just("n1"), Just("n2"), Just("n9"), Just("")]
            .prop_map(|name| {
                serde_json::from_value(json!({"nodeSelectorTerms": [{"matchFields":
                    [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}))
                .unwrap()
            });
        prop_oneof![
            1 => prop::collection::vec(term, 0..3)
                .prop_map(|node_selector_terms| NodeSelector { node_selector_terms }),
            2 => pinned,
        ]
    }

    proptest! {
        /// Allocations pinned to a node by name ([`pinned_name`], [`pin`]) allow, by name and
        /// by snapshot index, exactly the nodes their selectors match.
        #[test]
        fn pinned_allocations_allow_what_their_selectors_match(
            selectors in prop::collection::vec(selector(), 1..4),
            at in 0usize..4,
        ) {
            let nodes: Vec<Node> = (0..3).map(node).collect();
            let snapshot = crate::snapshot::Snapshot::from_objects(nodes.clone(), Vec::new()).unwrap();
            let mut pinned = None;
            let mut rest = Vec::new();
            for s in &selectors {
                match pinned_name(s) {
                    Some(name) => pin(&mut pinned, name, &snapshot),
                    None => rest.push(s),
                }
            }
            let probe = std::collections::BTreeMap::new();
            let target = match nodes.get(at) {
                Some(n) => TargetNode::from(n),
                // A node without a name (kube ignores matchFields for it).
                None => TargetNode { name: "", labels: &probe },
            };
            let matches = |s: &NodeSelector| allocator::node_selector_matches(s, target).unwrap_or(false);
            let expected = selectors.iter().all(matches);
            let by_name = pinned.as_ref().is_none_or(|p: &PinnedNode| p.allows(target.name))
                && rest.iter().all(|s| matches(s));
            prop_assert_eq!(by_name, expected);
            if let Some(p) = &pinned && rest.is_empty() && at < nodes.len() {
                prop_assert_eq!(p.allows_index(at as u32), expected);
            }
        }
    }
}
