//! kube's structured allocator (v1.34, `k8s.io/dynamic-resource-allocation/structured`): which
//! devices of the ResourceSlices a node can reach satisfy a pod's ResourceClaims.
//!
//! With v1.34's default feature gates kube-scheduler passes `AdminAccess`, `PrioritizedList`
//! and `DeviceStatus` (DRAResourceClaimDeviceStatus, beta) to `structured.NewAllocator`; only
//! the `experimental` implementation supports `DeviceStatus`, so that is the one kube runs and
//! the one ported here, with the alpha gates off (DRADeviceTaints, DRAPartitionableDevices,
//! DRAConsumableCapacity, DRADeviceBindingConditions), as kube behaves with them off: a
//! request with `capacity` or a `distinctAttribute` constraint is refused with
//! [`AllocError::FeatureDisabled`], devices consuming counters are never picked, slices with
//! `perDeviceNodeSelection` are left out and device taints are ignored. (Binding conditions
//! are not in [`crate::model::Device`], so devices that carry them are not told apart.)
//!
//! The search is kube's: claims in order, requests in order, a request's devices one by one,
//! each tried against the pools' devices in order (pools in the order their first slice comes
//! in the input, where kube's Go map order is random), backtracking when a later device finds
//! no candidate; the first complete solution wins. `firstAvailable` alternatives are tried in
//! order, the first that leads to a solution is kept. Incomplete pools are searched as kube
//! searches them; only a request for `All` devices is refused while a pool is incomplete. The
//! allocator never evaluates CEL itself: selectors go through a [`SelectorEval`], and an
//! evaluation error stops the allocation with [`AllocError::Selector`], as in kube.

mod output;
mod pools;
mod search;

pub use pools::{PoolReach, SliceIndex};

use std::collections::{HashMap, HashSet};

use crate::model::{AllocationResult, DeviceClass, Node, ResourceClaim, ResourceSlice};

/// The most devices one claim's allocation may hold (kube's `AllocationResultsMaxSize`).
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// The feature gates that change what the allocator accepts (kube's `structured.Features`,
/// of those this port implements). [`Features::default`] is kube v1.34's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Features {
    /// DRAAdminAccess (beta, on in v1.34): requests may ask for admin access.
    pub admin_access: bool,
    /// DRAPrioritizedList (beta, on in v1.34): requests may list `firstAvailable` alternatives.
    pub prioritized_list: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features::V1_34
    }
}

impl Features {
    /// kube v1.34's defaults: admin access and prioritized lists on.
    pub const V1_34: Features = Features {
        admin_access: true,
        prioritized_list: true,
    };
    /// Every gate off (kube's `Features{}`).
    pub const NONE: Features = Features {
        admin_access: false,
        prioritized_list: false,
    };
}

/// A feature gate a claim needs and that is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Feature {
    /// DRAAdminAccess: `adminAccess` on a request.
    AdminAccess,
    /// DRAPrioritizedList: `firstAvailable` on a request.
    PrioritizedList,
    /// DRAConsumableCapacity (alpha, off): `capacity` on a request, `distinctAttribute`.
    ConsumableCapacity,
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Feature::AdminAccess => "DRAAdminAccess",
            Feature::PrioritizedList => "DRAPrioritizedList",
            Feature::ConsumableCapacity => "DRAConsumableCapacity",
        })
    }
}

/// The node the claims are allocated for: its name and labels.
#[derive(Clone, Copy, Debug)]
pub struct TargetNode<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.labels`.
    pub labels: &'a std::collections::BTreeMap<String, String>,
}

impl<'a> From<&'a Node> for TargetNode<'a> {
    fn from(node: &'a Node) -> Self {
        TargetNode {
            name: &node.metadata.name,
            labels: &node.metadata.labels,
        }
    }
}

/// The devices that other claims already hold (kube's `AllocatedState.AllocatedDevices`),
/// by driver, pool and device name. Devices allocated with admin access do not belong here
/// (kube leaves them out: they do not make a device busy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatedDevices {
    /// foldhash: the search looks every candidate device up here (SipHash over the three
    /// names was a visible share of an allocation).
    by_driver: HashMap<String, HashMap<String, HashSet<String, Fast>, Fast>, Fast>,
}

/// The hasher of [`AllocatedDevices`]' maps.
type Fast = foldhash::fast::FixedState;

impl AllocatedDevices {
    /// No device allocated.
    #[must_use]
    pub fn new() -> Self {
        AllocatedDevices::default()
    }

    /// Marks one device as allocated.
    pub fn insert(&mut self, driver: &str, pool: &str, device: &str) {
        self.by_driver
            .entry(driver.to_owned())
            .or_default()
            .entry(pool.to_owned())
            .or_default()
            .insert(device.to_owned());
    }

    /// Marks one device as free again.
    pub fn remove(&mut self, driver: &str, pool: &str, device: &str) {
        let Some(pools) = self.by_driver.get_mut(driver) else {
            return;
        };
        if let Some(devices) = pools.get_mut(pool) {
            devices.remove(device);
            if devices.is_empty() {
                pools.remove(pool);
            }
        }
        if pools.is_empty() {
            self.by_driver.remove(driver);
        }
    }

    /// Marks the devices of an allocation as allocated, except those held with admin access
    /// (as kube gathers its allocated state).
    pub fn insert_allocation(&mut self, allocation: &AllocationResult) {
        for r in &allocation.devices.results {
            if r.admin_access != Some(true) {
                self.insert(&r.driver, &r.pool, &r.device);
            }
        }
    }

    /// Whether no device is allocated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_driver.is_empty()
    }

    /// The allocated devices of the pool `driver/pool`, if any (looked up once per pool, not
    /// once per device).
    fn pool_devices(&self, driver: &str, pool: &str) -> Option<&HashSet<String, Fast>> {
        self.by_driver.get(driver)?.get(pool)
    }

    /// Whether the device is allocated.
    #[must_use]
    pub fn contains(&self, driver: &str, pool: &str, device: &str) -> bool {
        self.by_driver
            .get(driver)
            .and_then(|pools| pools.get(pool))
            .is_some_and(|devices| devices.contains(device))
    }
}

/// Why a selector could not be evaluated (a CEL compile or runtime error), worded as kube's
/// allocator words it (`CEL runtime error: no such key: healthy`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("CEL {stage} error: {message}")]
pub struct SelectorError {
    /// The expression.
    pub expression: String,
    /// Whether it failed to compile or at run time.
    pub stage: SelectorStage,
    /// What went wrong.
    pub message: String,
}

/// When a selector failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectorStage {
    /// It did not compile (or its cost is over the limit).
    Compile,
    /// It failed while evaluated on a device.
    Runtime,
}

impl std::fmt::Display for SelectorStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SelectorStage::Compile => "compile",
            SelectorStage::Runtime => "runtime",
        })
    }
}

impl SelectorError {
    /// A runtime error of `expression`, described by `message` (e.g. a CEL error's text).
    pub fn new(expression: &str, message: impl std::fmt::Display) -> Self {
        SelectorError::at(SelectorStage::Runtime, expression, message)
    }

    /// An error of `expression` at `stage`.
    pub fn at(stage: SelectorStage, expression: &str, message: impl std::fmt::Display) -> Self {
        SelectorError {
            expression: expression.to_owned(),
            stage,
            message: message.to_string(),
        }
    }
}

/// Evaluates a device selector's CEL expression for one device. kube's allocator treats an
/// error (compile or runtime) as fatal for the whole allocation, and so does this one.
pub trait SelectorEval {
    /// Whether `device` of `driver` passes `expression`.
    fn matches(
        &self,
        expression: &str,
        driver: &str,
        device: &crate::model::Device,
    ) -> Result<bool, SelectorError>;
}

/// Whose selector failed to evaluate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectorOwner {
    /// A DeviceClass, by name.
    Class(String),
    /// A claim's request, by the claim's `namespace/name`.
    Claim(String),
}

impl std::fmt::Display for SelectorOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectorOwner::Class(name) => write!(f, "class {name}"),
            SelectorOwner::Claim(name) => write!(f, "claim {name}"),
        }
    }
}

/// Why the claims could not be allocated at all: kube's fatal errors (invalid input), as
/// opposed to [`Outcome::DoesNotFit`]. Claims are named `namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The request needs a feature gate that is off.
    #[error("claim {claim}, request {request}: needs the {feature} feature, which is disabled")]
    FeatureDisabled {
        /// The claim.
        claim: String,
        /// The request (or `request/alternative`).
        request: String,
        /// The gate.
        feature: Feature,
    },
    /// A request is neither `exactly` nor `firstAvailable`.
    #[error("claim {claim}, request {request}: neither exactly nor firstAvailable is set")]
    UnsupportedRequest {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
    },
    /// A selector without a CEL expression.
    #[error(
        "claim {claim}, request {request}, selector #{index}: CEL expression empty (unsupported selector type?)"
    )]
    EmptySelector {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The selector's index.
        index: usize,
    },
    /// A request without a device class.
    #[error("claim {claim}, request {request}: missing device class name")]
    MissingClassName {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
    },
    /// The request's class does not exist.
    #[error("claim {claim}, request {request}: could not retrieve device class {class}")]
    ClassNotFound {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The class.
        class: String,
    },
    /// An allocation mode other than `ExactCount` and `All`.
    #[error("claim {claim}, request {request}: unsupported count mode {mode}")]
    UnsupportedAllocationMode {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The mode.
        mode: String,
    },
    /// The claim asks for more devices than an allocation may hold.
    #[error(
        "claim {claim}: number of requested devices {count} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
    )]
    TooManyDevices {
        /// The claim.
        claim: String,
        /// The least number of devices it asks for.
        count: usize,
    },
    /// A request for all devices while a pool has fewer slices than it announces.
    #[error(
        "claim {claim}, request {request}: asks for all devices, but resource pool {pool} is currently being updated"
    )]
    PoolIncomplete {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The pool, `driver/pool`.
        pool: String,
    },
    /// A request for all devices while a pool is invalid.
    #[error(
        "claim {claim}, request {request}: asks for all devices, but resource pool {pool} is currently invalid"
    )]
    PoolInvalidForAll {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The pool, `driver/pool`.
        pool: String,
    },
    /// The search reached an invalid pool (a device name twice).
    #[error("pool {pool} is invalid: {reason}")]
    PoolInvalid {
        /// The pool, `driver/pool`.
        pool: String,
        /// Why.
        reason: String,
    },
    /// A constraint of no known kind.
    #[error("claim {claim}, constraint #{index}: empty constraint (unsupported constraint type?)")]
    EmptyConstraint {
        /// The claim.
        claim: String,
        /// The constraint's index.
        index: usize,
    },
    /// A request for all devices whose devices break a constraint of the claim.
    #[error(
        "claim {claim}, request {request}: cannot add device {device} because a claim constraint would not be satisfied"
    )]
    ConstraintUnsatisfiable {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The device, `driver/pool/device`.
        device: String,
    },
    /// A selector could not be evaluated.
    #[error("{owner}: selector #{index}: {source}")]
    Selector {
        /// The class or claim.
        owner: SelectorOwner,
        /// The selector's index in its list.
        index: usize,
        /// The evaluator's error.
        source: SelectorError,
    },
    /// A slice's node selector is malformed (kube: "failed to perform node selection").
    #[error("failed to perform node selection for slice {slice}: {message}")]
    InvalidNodeSelector {
        /// The slice.
        slice: String,
        /// What is wrong.
        message: String,
    },
    /// A slice's node selector has several terms, which an allocation cannot merge.
    #[error(
        "create NodeSelector for claim {claim}: unsupported ResourceSlice.NodeSelector with {terms} terms"
    )]
    UnsupportedNodeSelector {
        /// The claim.
        claim: String,
        /// The number of terms.
        terms: usize,
    },
}

/// What the allocator found for a pod's claims.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// Every claim has an allocation, in the order of the claims given.
    Allocated(Vec<ClaimAllocation>),
    /// No way to allocate every claim on this node (kube's nil result).
    DoesNotFit,
}

/// One claim's allocation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ClaimAllocation {
    /// The result, as kube writes it into `status.allocation` (without a timestamp).
    pub result: AllocationResult,
    /// The claim already had it (`status.allocation`), left as it was.
    pub existing: bool,
}

/// How much searching an allocation took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Steps of the search: kube's `NumAllocateOneInvocations`, the calls of its
    /// `allocateOne`, which this search makes in the same number.
    pub search_steps: u64,
}

/// kube's `structured.Allocator` over a fixed state: the slices, classes and allocated
/// devices. One allocator serves any number of [`Allocator::allocate`] calls.
pub struct Allocator<'a, S: ?Sized> {
    features: Features,
    slices: &'a [ResourceSlice],
    reach: Option<&'a SliceIndex>,
    classes: &'a [DeviceClass],
    allocated: &'a AllocatedDevices,
    selectors: &'a S,
}

impl<'a, S: SelectorEval + ?Sized> Allocator<'a, S> {
    /// An allocator over these slices, classes and allocated devices, evaluating selectors
    /// with `selectors`.
    pub fn new(
        features: Features,
        slices: &'a [ResourceSlice],
        classes: &'a [DeviceClass],
        allocated: &'a AllocatedDevices,
        selectors: &'a S,
    ) -> Self {
        Allocator {
            features,
            slices,
            reach: None,
            classes,
            allocated,
            selectors,
        }
    }

    /// The same allocator, reading only the slices `index` (built from this allocator's
    /// slices) says a node may reach: the same answers, without reading every node's slices.
    #[must_use]
    pub fn with_slice_index(mut self, index: &'a SliceIndex) -> Self {
        self.reach = Some(index);
        self
    }

    /// Allocates `claims` (one pod's) for `node`. Claims that already have an allocation keep
    /// it and are not searched; their devices (except admin-access ones) count as in use for
    /// the others, as they do in kube's allocated state. The rest are searched together, as
    /// kube's `Allocate` does: either all of them fit or none gets an allocation.
    pub fn allocate(
        &self,
        node: TargetNode<'_>,
        claims: &[&ResourceClaim],
    ) -> Result<Outcome, AllocError> {
        self.allocate_with_stats(node, claims).0
    }

    /// [`Allocator::allocate`], with how much searching it took.
    pub fn allocate_with_stats(
        &self,
        node: TargetNode<'_>,
        claims: &[&ResourceClaim],
    ) -> (Result<Outcome, AllocError>, Stats) {
        let mut stats = Stats::default();
        let outcome = self.allocate_counting(node, claims, &mut stats.search_steps);
        (outcome, stats)
    }

    fn allocate_counting(
        &self,
        node: TargetNode<'_>,
        claims: &[&ResourceClaim],
        steps: &mut u64,
    ) -> Result<Outcome, AllocError> {
        let mut to_allocate = Vec::new();
        // This pod's claims that are allocated already: their devices are busy too, kept
        // apart from the shared set so that it is not copied.
        let mut own = AllocatedDevices::new();
        for claim in claims {
            match &claim.status.allocation {
                Some(existing) => own.insert_allocation(existing),
                None => to_allocate.push(*claim),
            }
        }
        let Some(solved) = search::run(self, &own, node, &to_allocate, steps)? else {
            return Ok(Outcome::DoesNotFit);
        };
        let mut found = output::build(&solved, node.name)?;
        let mut out = Vec::with_capacity(claims.len());
        let mut next = found.drain(..);
        for claim in claims {
            match &claim.status.allocation {
                Some(existing) => out.push(ClaimAllocation {
                    result: existing.clone(),
                    existing: true,
                }),
                None => out.push(ClaimAllocation {
                    result: next.next().unwrap_or_default(),
                    existing: false,
                }),
            }
        }
        Ok(Outcome::Allocated(out))
    }
}

/// Whether `node` matches `selector` (kube's `nodeaffinity.NodeSelector`, as an allocation's
/// or a slice's node selector is read). `Err` describes a malformed selector.
pub fn node_selector_matches(
    selector: &crate::model::NodeSelector,
    node: TargetNode<'_>,
) -> Result<bool, String> {
    pools::node_matches(&node, None, false, Some(selector))
}

/// A claim's name for errors: `namespace/name`, or `name` without a namespace.
fn claim_name(claim: &ResourceClaim) -> String {
    if claim.metadata.namespace.is_empty() {
        claim.metadata.name.clone()
    } else {
        format!("{}/{}", claim.metadata.namespace, claim.metadata.name)
    }
}
