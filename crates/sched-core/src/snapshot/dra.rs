//! The dynamic resource allocation objects the scheduler reads (kube's `SharedDRAManager`:
//! DeviceClasses, ResourceSlices and ResourceClaims, with the claims' in-flight allocations),
//! and the devices in use, kept current as claims change.
//!
//! A device is in use while a claim's `status.allocation` or an in-flight allocation (made at
//! Reserve, not yet written by the bind) holds it without admin access, as kube's
//! `ListAllAllocatedDevices` gathers them. Each device keeps a count of its holders, so that a
//! claim update arriving while its allocation is still in flight, or two claims that name the
//! same device, free it only when the last holder lets go. [`DraIndex::recount`] rebuilds the
//! set from scratch; a property test holds the kept set to it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use crate::dra::allocator::{AllocatedDevices, Features, SliceIndex};
use crate::dra::selectors::CelSelectors;
use crate::model::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceClaimConsumerReference,
    ResourceClaimSpec, ResourceSlice,
};

/// A slice entering the index starts without selector results: its devices may be copies of
/// devices evaluated before and changed since.
fn forget_selector_results(slice: &ResourceSlice) {
    for d in &slice.spec.devices {
        d.selector_memo.clear();
    }
}

/// A device: driver, pool and device name.
type DeviceId = (String, String, String);

/// DeviceClasses, ResourceSlices and ResourceClaims by name, in-flight allocations and the
/// devices in use. Shared by snapshot clones until one of them changes it.
#[derive(Clone, Debug, Default)]
pub struct DraIndex {
    /// By name (the allocator reads them as a slice).
    classes: Vec<DeviceClass>,
    /// By name: the allocator searches pools in the order their first slice comes.
    slices: Vec<ResourceSlice>,
    /// Where `slices` are, by node: built on first use after a change of the slices (a
    /// relist of thousands of slices builds it once, not once per slice).
    reach: OnceLock<SliceIndex>,
    /// By `namespace/name`.
    claims: BTreeMap<String, Arc<ResourceClaim>>,
    /// Allocations made at Reserve and not yet written, by claim `namespace/name`.
    pending: HashMap<String, AllocationResult>,
    /// How many allocations (written or in flight) hold each device.
    holders: HashMap<DeviceId, u32>,
    allocated: AllocatedDevices,
    /// Compiled CEL selectors, kept across cycles.
    selectors: Arc<CelSelectors>,
    /// DynamicResources' Filter answers kept between cycles ([`FilterMemo`]).
    memo: FilterMemo,
}

/// How many distinct sets of claim specs [`FilterMemo`] keeps answers for; past that the
/// oldest set is dropped.
const MEMO_KEYS: usize = 16;

/// DynamicResources' Filter answers kept between cycles: per set of claims to allocate (by
/// their specs, in order, and the allocator's features) and per node with slices of its own
/// (by [`SliceIndex::node_id`]), whether the allocator found an allocation. Pods made from one
/// template have claims with one spec, so their Filter on a node gives one answer until
/// something it reads changes:
///
/// - the slices or classes: every answer is dropped;
/// - the devices in use of a pool: the answers of the nodes that can reach the pool are
///   dropped (every answer when the pool has a slice that is not a node's own).
///
/// What else the allocator reads is fixed by the key (the claims' specs; their names only
/// word its errors) or by the node's name. A node's labels are not tracked, so nothing is kept
/// while some slice reaches nodes by a node selector ([`SliceIndex::depends_on_labels`]). A
/// clone of the index starts empty. A property test holds the answers to fresh allocations
/// over random changes.
#[derive(Debug, Default)]
struct FilterMemo {
    entries: RwLock<Vec<MemoEntry>>,
}

impl Clone for FilterMemo {
    fn clone(&self) -> Self {
        FilterMemo::default()
    }
}

#[derive(Debug)]
struct MemoEntry {
    features: Features,
    specs: Vec<ResourceClaimSpec>,
    answers: FilterAnswers,
}

/// A Filter answer [`FilterAnswers`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterAnswer {
    /// The claims can be allocated on the node.
    Fits,
    /// They cannot.
    DoesNotFit,
    /// The allocator failed (kube's Filter `Error`).
    Error,
}

/// The kept Filter answers of one set of claims, per node ([`DraIndex::filter_answers`]).
#[derive(Clone, Debug)]
pub struct FilterAnswers {
    /// Per node number: 0 unknown, else a [`FilterAnswer`] as 1, 2, 3.
    slots: Arc<[AtomicU8]>,
}

impl FilterAnswers {
    fn new(nodes: usize) -> Self {
        FilterAnswers {
            slots: (0..nodes).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    /// The answer kept for `node` of `dra` (the index these answers came from), if any;
    /// else `compute`'s, kept when the node can have one.
    pub fn get_or(
        &self,
        dra: &DraIndex,
        node: &str,
        compute: impl FnOnce() -> FilterAnswer,
    ) -> FilterAnswer {
        let Some(slot) = dra
            .slice_index()
            .node_id(node)
            .and_then(|id| self.slots.get(id as usize))
        else {
            return compute();
        };
        match slot.load(Ordering::Relaxed) {
            1 => FilterAnswer::Fits,
            2 => FilterAnswer::DoesNotFit,
            3 => FilterAnswer::Error,
            _ => {
                let answer = compute();
                let code = match answer {
                    FilterAnswer::Fits => 1,
                    FilterAnswer::DoesNotFit => 2,
                    FilterAnswer::Error => 3,
                };
                slot.store(code, Ordering::Relaxed);
                answer
            }
        }
    }

    fn forget(&self, nodes: &[u32]) {
        for &n in nodes {
            if let Some(slot) = self.slots.get(n as usize) {
                slot.store(0, Ordering::Relaxed);
            }
        }
    }
}

impl DraIndex {
    /// The DeviceClasses, by name.
    pub fn classes(&self) -> &[DeviceClass] {
        &self.classes
    }

    /// The DeviceClass `name`.
    pub fn class(&self, name: &str) -> Option<&DeviceClass> {
        self.classes
            .binary_search_by(|c| c.metadata.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.classes[i])
    }

    /// The ResourceSlices, by name.
    pub fn slices(&self) -> &[ResourceSlice] {
        &self.slices
    }

    /// The ResourceClaim `namespace/name`.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<ResourceClaim>> {
        self.claims.get(&claim_key(namespace, name))
    }

    /// How many ResourceClaims.
    pub fn claim_count(&self) -> usize {
        self.claims.len()
    }

    /// Whether any DRA object is known.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.slices.is_empty() && self.claims.is_empty()
    }

    /// The devices in use: every claim's allocation and every in-flight one, admin access
    /// left out.
    pub fn allocated(&self) -> &AllocatedDevices {
        &self.allocated
    }

    /// The compiled CEL selectors.
    pub fn selectors(&self) -> &CelSelectors {
        &self.selectors
    }

    /// Whether the claim `namespace/name` has an allocation in flight (kube's
    /// `ClaimHasPendingAllocation`).
    pub fn has_pending(&self, namespace: &str, name: &str) -> bool {
        self.pending.contains_key(&claim_key(namespace, name))
    }

    /// The kept Filter answers for allocating `claims` (their specs, in order) with
    /// `features`, to be read with [`FilterAnswers::get_or`] while this index does not change;
    /// `None` when answers cannot be kept (see the memo's rules in `snapshot/dra.rs`).
    pub fn filter_answers(
        &self,
        features: Features,
        claims: &[Arc<ResourceClaim>],
    ) -> Option<FilterAnswers> {
        let reach = self.slice_index();
        if reach.depends_on_labels() {
            return None;
        }
        let same = |e: &MemoEntry| {
            e.features == features
                && e.specs.len() == claims.len()
                && e.specs.iter().zip(claims).all(|(s, c)| *s == c.spec)
        };
        if let Ok(entries) = self.memo.entries.read()
            && let Some(e) = entries.iter().find(|e| same(e))
        {
            return Some(e.answers.clone());
        }
        let mut entries = self.memo.entries.write().ok()?;
        if let Some(e) = entries.iter().find(|e| same(e)) {
            return Some(e.answers.clone());
        }
        if entries.len() >= MEMO_KEYS {
            entries.remove(0);
        }
        let answers = FilterAnswers::new(reach.node_count());
        entries.push(MemoEntry {
            features,
            specs: claims.iter().map(|c| c.spec.clone()).collect(),
            answers: answers.clone(),
        });
        Some(answers)
    }

    /// Drops every kept Filter answer (the slices or classes changed).
    fn forget_answers(&mut self) {
        if let Ok(entries) = self.memo.entries.get_mut() {
            entries.clear();
        }
    }

    /// Drops the kept Filter answers of the nodes that can reach the pool `driver/pool`
    /// (whose devices in use changed).
    fn forget_pool_answers(&mut self, driver: &str, pool: &str) {
        let Ok(entries) = self.memo.entries.get_mut() else {
            return;
        };
        if entries.is_empty() {
            return;
        }
        let reach = self.reach.get_or_init(|| SliceIndex::new(&self.slices));
        match reach.pool_reach(driver, pool) {
            None => {}
            Some(r) if r.shared => entries.clear(),
            Some(r) => {
                for e in entries.iter() {
                    e.answers.forget(&r.nodes);
                }
            }
        }
    }

    /// Takes in a listing's DeviceClasses, ResourceSlices and ResourceClaims (the templates
    /// are not the scheduler's: it reads the claims made from them).
    pub fn load(&mut self, objects: crate::model::DraObjects) {
        for c in objects.device_classes {
            self.upsert_class(c);
        }
        for s in objects.resource_slices {
            forget_selector_results(&s);
            upsert_sorted(&mut self.slices, s, |s| &s.metadata.name);
        }
        self.reach = OnceLock::new();
        self.forget_answers();
        for c in objects.resource_claims {
            self.upsert_claim(c);
        }
    }

    /// Adds or replaces a DeviceClass; `true` if one of that name was known.
    pub fn upsert_class(&mut self, class: DeviceClass) -> bool {
        self.forget_answers();
        upsert_sorted(&mut self.classes, class, |c| &c.metadata.name)
    }

    /// Removes a DeviceClass.
    pub fn remove_class(&mut self, name: &str) -> Option<DeviceClass> {
        self.forget_answers();
        remove_sorted(&mut self.classes, name, |c| &c.metadata.name)
    }

    /// Adds or replaces a ResourceSlice; `true` if one of that name was known.
    pub fn upsert_slice(&mut self, slice: ResourceSlice) -> bool {
        forget_selector_results(&slice);
        let known = upsert_sorted(&mut self.slices, slice, |s| &s.metadata.name);
        self.reach = OnceLock::new();
        self.forget_answers();
        known
    }

    /// Removes a ResourceSlice.
    pub fn remove_slice(&mut self, name: &str) -> Option<ResourceSlice> {
        let removed = remove_sorted(&mut self.slices, name, |s| &s.metadata.name);
        if removed.is_some() {
            self.reach = OnceLock::new();
            self.forget_answers();
        }
        removed
    }

    /// Where the slices are, by node ([`crate::dra::allocator::Allocator::with_slice_index`]).
    pub fn slice_index(&self) -> &SliceIndex {
        self.reach.get_or_init(|| SliceIndex::new(&self.slices))
    }

    /// Adds or replaces a ResourceClaim (its devices in use follow its allocation); `true`
    /// if one of that name was known.
    pub fn upsert_claim(&mut self, claim: ResourceClaim) -> bool {
        let key = claim_key(&claim.metadata.namespace, &claim.metadata.name);
        if let Some(a) = &claim.status.allocation {
            self.hold(a);
        }
        let old = self.claims.insert(key, Arc::new(claim));
        if let Some(a) = old.as_ref().and_then(|c| c.status.allocation.as_ref()) {
            self.release(a);
        }
        old.is_some()
    }

    /// Removes a ResourceClaim; its allocation's devices are free unless an in-flight
    /// allocation still holds them.
    pub fn remove_claim(&mut self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        let old = self.claims.remove(&claim_key(namespace, name))?;
        if let Some(a) = &old.status.allocation {
            self.release(a);
        }
        Some(old)
    }

    /// Records an allocation made at Reserve for the claim `namespace/name` (replacing one in
    /// flight for it).
    pub fn set_pending(&mut self, namespace: &str, name: &str, allocation: AllocationResult) {
        self.hold(&allocation);
        if let Some(old) = self.pending.insert(claim_key(namespace, name), allocation) {
            self.release(&old);
        }
    }

    /// Drops the in-flight allocation of the claim `namespace/name` (Unreserve); returns it.
    pub fn clear_pending(&mut self, namespace: &str, name: &str) -> Option<AllocationResult> {
        let old = self.pending.remove(&claim_key(namespace, name))?;
        self.release(&old);
        Some(old)
    }

    /// After a successful bind (kube's `AssumeClaimAfterAPICall`): the claim `namespace/name`
    /// takes `allocation` (when the bind wrote one) and lists `consumer` in
    /// `status.reservedFor`, as the bind wrote it; its in-flight allocation is dropped. A claim
    /// that went away meanwhile stays away.
    pub fn confirm(
        &mut self,
        namespace: &str,
        name: &str,
        allocation: Option<AllocationResult>,
        consumer: ResourceClaimConsumerReference,
    ) {
        let key = claim_key(namespace, name);
        if let Some(claim) = self.claims.get(&key) {
            let mut claim = ResourceClaim::clone(claim);
            if let Some(a) = allocation {
                claim.status.allocation = Some(a);
            }
            if !claim
                .status
                .reserved_for
                .iter()
                .any(|r| r.uid == consumer.uid)
            {
                claim.status.reserved_for.push(consumer);
            }
            self.upsert_claim(claim);
        }
        self.clear_pending(namespace, name);
    }

    /// The devices in use, counted again from the claims and in-flight allocations.
    pub fn recount(&self) -> AllocatedDevices {
        let mut all = AllocatedDevices::new();
        for claim in self.claims.values() {
            if let Some(a) = &claim.status.allocation {
                all.insert_allocation(a);
            }
        }
        for a in self.pending.values() {
            all.insert_allocation(a);
        }
        all
    }

    fn hold(&mut self, allocation: &AllocationResult) {
        for r in &allocation.devices.results {
            if r.admin_access == Some(true) {
                continue;
            }
            let id = (r.driver.clone(), r.pool.clone(), r.device.clone());
            let n = self.holders.entry(id).or_insert(0);
            *n += 1;
            if *n == 1 {
                self.allocated.insert(&r.driver, &r.pool, &r.device);
                self.forget_pool_answers(&r.driver, &r.pool);
            }
        }
    }

    fn release(&mut self, allocation: &AllocationResult) {
        for r in &allocation.devices.results {
            if r.admin_access == Some(true) {
                continue;
            }
            let id = (r.driver.clone(), r.pool.clone(), r.device.clone());
            if let Some(n) = self.holders.get_mut(&id) {
                *n -= 1;
                if *n == 0 {
                    self.holders.remove(&id);
                    self.allocated.remove(&r.driver, &r.pool, &r.device);
                    self.forget_pool_answers(&r.driver, &r.pool);
                }
            }
        }
    }
}

/// `namespace/name`.
pub(crate) fn claim_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn upsert_sorted<T>(items: &mut Vec<T>, item: T, name: impl Fn(&T) -> &String) -> bool {
    match items.binary_search_by(|x| name(x).cmp(name(&item))) {
        Ok(i) => {
            items[i] = item;
            true
        }
        Err(i) => {
            items.insert(i, item);
            false
        }
    }
}

fn remove_sorted<T>(items: &mut Vec<T>, key: &str, name: impl Fn(&T) -> &String) -> Option<T> {
    let i = items.binary_search_by(|x| name(x).as_str().cmp(key)).ok()?;
    Some(items.remove(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceRequestAllocationResult;
    use proptest::prelude::*;

    /// A slice upserted with devices that carry selector results (copies of evaluated
    /// devices, changed since) starts without them; the slice index follows the slices.
    #[test]
    fn an_upserted_slice_starts_without_selector_results_and_is_indexed() {
        let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1-gpus"},
            "spec": {"driver": "d", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}
        }))
        .unwrap();
        slice.spec.devices[0].selector_memo.put("d", 7, true);
        let mut index = DraIndex::default();
        index.upsert_slice(slice.clone());
        assert_eq!(
            index.slices()[0].spec.devices[0].selector_memo.get("d", 7),
            None
        );
        assert_eq!(*index.slice_index(), SliceIndex::new(index.slices()));
        index.remove_slice("n1-gpus");
        assert_eq!(*index.slice_index(), SliceIndex::new(&[]));
    }

    fn allocation(devices: &[(u8, bool)]) -> AllocationResult {
        let mut a = AllocationResult::default();
        for &(d, admin) in devices {
            a.devices.results.push(DeviceRequestAllocationResult {
                request: "r".into(),
                driver: "gpu.example.com".into(),
                pool: "p".into(),
                device: format!("gpu-{}", d % 6),
                admin_access: admin.then_some(true),
                ..Default::default()
            });
        }
        a
    }

    fn claim(n: u8, devices: Option<&[(u8, bool)]>) -> ResourceClaim {
        let mut c = ResourceClaim::default();
        c.metadata.namespace = "default".into();
        c.metadata.name = format!("c{}", n % 4);
        c.status.allocation = devices.map(allocation);
        c
    }

    #[derive(Clone, Debug)]
    enum Op {
        Upsert(u8, Option<Vec<(u8, bool)>>),
        Remove(u8),
        Pending(u8, Vec<(u8, bool)>),
        Clear(u8),
        Confirm(u8, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        let devices = prop::collection::vec((0u8..6, prop::bool::weighted(0.2)), 0..3);
        prop_oneof![
            (0u8..4, prop::option::of(devices.clone())).prop_map(|(n, d)| Op::Upsert(n, d)),
            (0u8..4).prop_map(Op::Remove),
            (0u8..4, devices).prop_map(|(n, d)| Op::Pending(n, d)),
            (0u8..4).prop_map(Op::Clear),
            (0u8..4, any::<bool>()).prop_map(|(n, w)| Op::Confirm(n, w)),
        ]
    }

    proptest! {
        /// The devices in use, kept as claims and in-flight allocations come and go, are
        /// always those a recount finds.
        #[test]
        fn devices_in_use_match_a_recount(ops in prop::collection::vec(op(), 0..40)) {
            let mut index = DraIndex::default();
            for op in ops {
                match op {
                    Op::Upsert(n, d) => {
                        index.upsert_claim(claim(n, d.as_deref()));
                    }
                    Op::Remove(n) => {
                        index.remove_claim("default", &format!("c{}", n % 4));
                    }
                    Op::Pending(n, d) => {
                        index.set_pending("default", &format!("c{}", n % 4), allocation(&d));
                    }
                    Op::Clear(n) => {
                        index.clear_pending("default", &format!("c{}", n % 4));
                    }
                    Op::Confirm(n, write) => {
                        let name = format!("c{}", n % 4);
                        let a = index.pending.get(&claim_key("default", &name)).cloned();
                        let consumer = ResourceClaimConsumerReference {
                            resource: "pods".into(),
                            name: "p".into(),
                            uid: "u".into(),
                            ..Default::default()
                        };
                        index.confirm("default", &name, a.filter(|_| write), consumer);
                    }
                }
                prop_assert_eq!(index.allocated(), &index.recount());
            }
        }
    }

    #[test]
    fn a_claim_update_during_binding_keeps_the_device_until_both_let_go() {
        let mut index = DraIndex::default();
        index.upsert_claim(claim(0, None));
        index.set_pending("default", "c0", allocation(&[(1, false)]));
        // The bind's write arrives through the informer before the bind reports back.
        index.upsert_claim(claim(0, Some(&[(1, false)])));
        assert!(index.allocated().contains("gpu.example.com", "p", "gpu-1"));
        index.clear_pending("default", "c0");
        assert!(index.allocated().contains("gpu.example.com", "p", "gpu-1"));
        index.remove_claim("default", "c0");
        assert!(index.allocated().is_empty());
    }
}
