//! kube's backtracking search (`allocateOne`, `allocateDevice`, `isSelectable` and the
//! `matchAttribute` constraint of v1.34's `structured/internal/experimental`).
//!
//! Devices are numbered once per call in search order (pool by pool, slice by slice), so the
//! state of the search is vectors indexed by that number: whether another claim holds the
//! device, which of the pod's claims are taking it, and each request's cached selector
//! results.

use crate::model::{
    Device, DeviceAttribute, DeviceClass, DeviceSelector, ResourceClaim, ResourceSlice,
};

use super::pools::{Pool, gather_pools};
use super::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocError, AllocatedDevices, Allocator, Feature, Features,
    SelectorEval, SelectorOwner, TargetNode, claim_name,
};

/// One device of a gathered pool.
pub(super) struct Candidate<'a> {
    pub(super) pool: usize,
    pub(super) slice: &'a ResourceSlice,
    pub(super) device: &'a Device,
    /// Allocated to a claim outside this call.
    allocated: bool,
}

/// A request, or one `firstAvailable` alternative of it, as the search needs it.
pub(super) struct RequestData<'a> {
    /// The request's or alternative's name.
    pub(super) name: &'a str,
    /// The request's name, for an alternative.
    pub(super) parent: Option<&'a str>,
    pub(super) class: &'a DeviceClass,
    selectors: &'a [DeviceSelector],
    all: bool,
    admin_access: bool,
    num_devices: usize,
    /// For `All`: the devices, chosen before the search.
    all_devices: Vec<usize>,
    /// Index into the selector-result cache.
    cache: usize,
}

/// One device picked for a claim.
pub(super) struct Picked {
    pub(super) request: usize,
    pub(super) sub: usize,
    pub(super) candidate: usize,
    pub(super) admin_access: bool,
}

/// Why a branch of the search stopped: a fatal error, or kube's
/// `errAllocationResultMaxSizeExceeded` (the claim would exceed the size limit).
enum Stop {
    MaxSize,
    Fatal(AllocError),
}

impl From<AllocError> for Stop {
    fn from(e: AllocError) -> Self {
        Stop::Fatal(e)
    }
}

/// kube's `matchAttributeConstraint`: every device of the named requests (all requests when
/// none is named) has the attribute, with one value.
struct MatchAttribute<'a> {
    requests: &'a [String],
    attribute: &'a str,
    value: Option<&'a DeviceAttribute>,
    num_devices: usize,
    /// Per candidate, once looked up: its attribute (the search checks the same devices
    /// again and again while it backtracks).
    lookups: Vec<Option<Option<&'a DeviceAttribute>>>,
}

impl<'a> MatchAttribute<'a> {
    fn applies(&self, request: &str, sub: Option<&str>) -> bool {
        if self.requests.is_empty() {
            return true;
        }
        self.requests.iter().any(|name| {
            name == request
                || sub.is_some_and(|sub| {
                    name.len() == request.len() + 1 + sub.len()
                        && name.starts_with(request)
                        && name[request.len()..].starts_with('/')
                        && name.ends_with(sub)
                })
        })
    }

    fn add(
        &mut self,
        request: &str,
        sub: Option<&str>,
        candidate: usize,
        driver: &str,
        device: &'a Device,
    ) -> bool {
        if !self.applies(request, sub) {
            return true;
        }
        let attribute = *self.lookups[candidate]
            .get_or_insert_with(|| lookup_attribute(device, driver, self.attribute));
        let Some(attribute) = attribute else {
            return false;
        };
        if self.num_devices == 0 {
            self.value = Some(attribute);
            self.num_devices = 1;
            return true;
        }
        let Some(first) = self.value else {
            return false;
        };
        let same = if attribute.string_value.is_some() {
            first.string_value.is_some() && first.string_value == attribute.string_value
        } else if attribute.int_value.is_some() {
            first.int_value.is_some() && first.int_value == attribute.int_value
        } else if attribute.bool_value.is_some() {
            first.bool_value.is_some() && first.bool_value == attribute.bool_value
        } else if attribute.version_value.is_some() {
            first.version_value.is_some() && first.version_value == attribute.version_value
        } else {
            false
        };
        if same {
            self.num_devices += 1;
        }
        same
    }

    fn remove(&mut self, request: &str, sub: Option<&str>) {
        if self.applies(request, sub) {
            self.num_devices -= 1;
        }
    }
}

/// kube's `lookupAttribute`: the fully qualified name, else the bare name when the domain is
/// the device's driver.
fn lookup_attribute<'a>(
    device: &'a Device,
    driver: &str,
    name: &str,
) -> Option<&'a DeviceAttribute> {
    if let Some(a) = device.attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    device.attributes.get(id)
}

/// The search over one call's claims.
pub(super) struct Search<'a, S: ?Sized> {
    selectors: &'a S,
    pub(super) claims: &'a [&'a ResourceClaim],
    pub(super) pools: Vec<Pool<'a>>,
    pub(super) candidates: Vec<Candidate<'a>>,
    /// The candidates of each pool, in order.
    pool_ranges: Vec<std::ops::Range<usize>>,
    /// `[claim][request][alternative]`; a plain request has one entry.
    pub(super) requests: Vec<Vec<Vec<RequestData<'a>>>>,
    /// `[claim][request]`: the alternative the solution uses.
    pub(super) selected: Vec<Vec<usize>>,
    constraints: Vec<Vec<MatchAttribute<'a>>>,
    /// Per candidate: the claims (by index) taking it in the current branch.
    allocating: Vec<Vec<usize>>,
    /// Per request or alternative, per candidate: 0 unknown, 1 selectable, 2 not.
    cache: Vec<Vec<u8>>,
    pub(super) result: Vec<Vec<Picked>>,
    /// Calls of [`Search::allocate_one`] (kube's `NumAllocateOneInvocations`).
    invocations: u64,
}

/// Runs kube's search for claims without an allocation: the solved search, `None` when
/// they do not fit. `own` holds the devices of the pod's claims that are allocated already.
pub(super) fn run<'a, S: SelectorEval + ?Sized>(
    allocator: &Allocator<'a, S>,
    own: &AllocatedDevices,
    node: TargetNode<'_>,
    claims: &'a [&'a ResourceClaim],
    invocations: &mut u64,
) -> Result<Option<Search<'a, S>>, AllocError> {
    let (features, classes) = (allocator.features, allocator.classes);
    let pools = gather_pools(allocator.slices, allocator.reach, &node)?;
    let mut candidates = Vec::new();
    let mut pool_ranges = Vec::with_capacity(pools.len());
    for (p, pool) in pools.iter().enumerate() {
        let start = candidates.len();
        let busy = allocator.allocated.pool_devices(pool.driver, pool.name);
        let own_busy = own.pool_devices(pool.driver, pool.name);
        for slice in &pool.slices {
            for device in &slice.spec.devices {
                candidates.push(Candidate {
                    pool: p,
                    slice,
                    device,
                    allocated: busy.is_some_and(|d| d.contains(&device.name))
                        || own_busy.is_some_and(|d| d.contains(&device.name)),
                });
            }
        }
        pool_ranges.push(start..candidates.len());
    }
    let n = candidates.len();
    let mut search = Search {
        selectors: allocator.selectors,
        claims,
        pools,
        candidates,
        pool_ranges,
        requests: Vec::with_capacity(claims.len()),
        selected: Vec::with_capacity(claims.len()),
        constraints: Vec::with_capacity(claims.len()),
        allocating: vec![Vec::new(); n],
        cache: Vec::new(),
        result: Vec::with_capacity(claims.len()),
        invocations: 0,
    };
    for (c, claim) in claims.iter().enumerate() {
        search.prepare_claim(features, classes, c, claim)?;
    }
    let found = search.allocate_one(Indices::default(), false);
    *invocations = search.invocations;
    match found {
        Ok(true) => {}
        Ok(false) | Err(Stop::MaxSize) => return Ok(None),
        Err(Stop::Fatal(e)) => return Err(e),
    }
    Ok(Some(search))
}

/// kube's `deviceIndices`: which device of which request (or alternative) of which claim.
#[derive(Clone, Copy, Default)]
struct Indices {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

/// The fields of `exactly` or of an alternative that validation reads.
struct RequestView<'a> {
    name: &'a str,
    class: &'a str,
    selectors: &'a [DeviceSelector],
    mode: &'a str,
    count: i64,
    admin_access: Option<bool>,
}

impl<'a, S: SelectorEval + ?Sized> Search<'a, S> {
    /// kube's checks of one claim before the search (in `Allocate`), its requests' data and
    /// its constraints.
    fn prepare_claim(
        &mut self,
        features: Features,
        classes: &'a [DeviceClass],
        c: usize,
        claim: &'a ResourceClaim,
    ) -> Result<(), AllocError> {
        let devices = &claim.spec.devices;
        let mut min_devices = 0usize;
        self.requests
            .push(Vec::with_capacity(devices.requests.len()));
        self.selected.push(vec![0; devices.requests.len()]);
        for request in &devices.requests {
            let has_subs = !request.first_available.is_empty();
            if !features.prioritized_list && has_subs {
                return Err(AllocError::FeatureDisabled {
                    claim: claim_name(claim),
                    request: request.name.clone(),
                    feature: Feature::PrioritizedList,
                });
            }
            let capacity = request
                .exactly
                .as_ref()
                .is_some_and(|e| e.capacity.is_some())
                || request.first_available.iter().any(|s| s.capacity.is_some());
            if capacity {
                return Err(AllocError::FeatureDisabled {
                    claim: claim_name(claim),
                    request: request.name.clone(),
                    feature: Feature::ConsumableCapacity,
                });
            }
            let mut datas = Vec::with_capacity(request.first_available.len().max(1));
            if has_subs {
                for sub in &request.first_available {
                    let view = RequestView {
                        name: &sub.name,
                        class: &sub.device_class_name,
                        selectors: &sub.selectors,
                        mode: &sub.allocation_mode,
                        count: sub.count,
                        admin_access: None,
                    };
                    datas.push(self.request_data(
                        features,
                        classes,
                        c,
                        view,
                        Some(&request.name),
                    )?);
                }
                min_devices += datas.iter().map(|d| d.num_devices).min().unwrap_or(0);
            } else {
                let Some(exactly) = &request.exactly else {
                    return Err(AllocError::UnsupportedRequest {
                        claim: claim_name(claim),
                        request: request.name.clone(),
                    });
                };
                let view = RequestView {
                    name: &request.name,
                    class: &exactly.device_class_name,
                    selectors: &exactly.selectors,
                    mode: &exactly.allocation_mode,
                    count: exactly.count,
                    admin_access: exactly.admin_access,
                };
                let data = self.request_data(features, classes, c, view, None)?;
                min_devices += data.num_devices;
                datas.push(data);
            }
            self.requests[c].push(datas);
        }
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(AllocError::TooManyDevices {
                claim: claim_name(claim),
                count: min_devices,
            });
        }
        self.result.push(Vec::with_capacity(min_devices));
        let mut constraints = Vec::with_capacity(devices.constraints.len());
        for (index, constraint) in devices.constraints.iter().enumerate() {
            if let Some(attribute) = &constraint.match_attribute {
                constraints.push(MatchAttribute {
                    requests: &constraint.requests,
                    attribute,
                    value: None,
                    num_devices: 0,
                    lookups: vec![None; self.candidates.len()],
                });
            } else if constraint.distinct_attribute.is_some() {
                return Err(AllocError::FeatureDisabled {
                    claim: claim_name(claim),
                    request: constraint.requests.join(","),
                    feature: Feature::ConsumableCapacity,
                });
            } else {
                return Err(AllocError::EmptyConstraint {
                    claim: claim_name(claim),
                    index,
                });
            }
        }
        self.constraints.push(constraints);
        Ok(())
    }

    /// kube's `validateDeviceRequest`: the class, the count and, for `All`, the devices.
    fn request_data(
        &mut self,
        features: Features,
        classes: &'a [DeviceClass],
        c: usize,
        view: RequestView<'a>,
        parent: Option<&'a str>,
    ) -> Result<RequestData<'a>, AllocError> {
        let claim = self.claims[c];
        let full_name = || match parent {
            Some(p) => format!("{p}/{}", view.name),
            None => view.name.to_owned(),
        };
        if let Some(index) = view.selectors.iter().position(|s| s.cel.is_none()) {
            return Err(AllocError::EmptySelector {
                claim: claim_name(claim),
                request: full_name(),
                index,
            });
        }
        if !features.admin_access && view.admin_access.is_some() {
            return Err(AllocError::FeatureDisabled {
                claim: claim_name(claim),
                request: full_name(),
                feature: Feature::AdminAccess,
            });
        }
        if view.class.is_empty() {
            return Err(AllocError::MissingClassName {
                claim: claim_name(claim),
                request: full_name(),
            });
        }
        let Some(class) = classes.iter().find(|k| k.metadata.name == view.class) else {
            return Err(AllocError::ClassNotFound {
                claim: claim_name(claim),
                request: full_name(),
                class: view.class.to_owned(),
            });
        };
        let cache = self.cache.len();
        self.cache.push(vec![0; self.candidates.len()]);
        let mut data = RequestData {
            name: view.name,
            parent,
            class,
            selectors: view.selectors,
            all: false,
            admin_access: view.admin_access == Some(true),
            num_devices: 0,
            all_devices: Vec::new(),
            cache,
        };
        match view.mode {
            "" | "ExactCount" => {
                // The API's default: one device when the count is not set.
                data.num_devices = match view.count {
                    0 => 1,
                    n => usize::try_from(n).unwrap_or(0),
                };
            }
            "All" => {
                data.all = true;
                for p in 0..self.pools.len() {
                    let pool = &self.pools[p];
                    if pool.incomplete {
                        return Err(AllocError::PoolIncomplete {
                            claim: claim_name(claim),
                            request: full_name(),
                            pool: format!("{}/{}", pool.driver, pool.name),
                        });
                    }
                    if pool.invalid.is_some() {
                        return Err(AllocError::PoolInvalidForAll {
                            claim: claim_name(claim),
                            request: full_name(),
                            pool: format!("{}/{}", pool.driver, pool.name),
                        });
                    }
                    for candidate in self.pool_ranges[p].clone() {
                        if self.selectable(c, class, view.selectors, cache, candidate)? {
                            data.all_devices.push(candidate);
                        }
                    }
                }
                data.num_devices = data.all_devices.len();
            }
            other => {
                return Err(AllocError::UnsupportedAllocationMode {
                    claim: claim_name(claim),
                    request: full_name(),
                    mode: other.to_owned(),
                });
            }
        }
        Ok(data)
    }

    /// kube's `isSelectable`: the class's selectors, then the request's, cached per request.
    fn selectable(
        &mut self,
        c: usize,
        class: &'a DeviceClass,
        selectors: &'a [DeviceSelector],
        cache: usize,
        candidate: usize,
    ) -> Result<bool, AllocError> {
        match self.cache[cache][candidate] {
            1 => return Ok(true),
            2 => return Ok(false),
            _ => {}
        }
        let cand = &self.candidates[candidate];
        let driver = cand.slice.spec.driver.as_str();
        let device = cand.device;
        let pass = self.selectors_match(&class.spec.selectors, driver, device, || {
            SelectorOwner::Class(class.metadata.name.clone())
        })? && self.selectors_match(selectors, driver, device, || {
            SelectorOwner::Claim(claim_name(self.claims[c]))
        })?;
        self.cache[cache][candidate] = if pass { 1 } else { 2 };
        Ok(pass)
    }

    /// kube's `selectorsMatch`: every selector in order; an evaluation error is fatal.
    fn selectors_match(
        &self,
        selectors: &[DeviceSelector],
        driver: &str,
        device: &Device,
        owner: impl Fn() -> SelectorOwner,
    ) -> Result<bool, AllocError> {
        for (index, selector) in selectors.iter().enumerate() {
            let Some(cel) = &selector.cel else {
                continue;
            };
            match self.selectors.matches(&cel.expression, driver, device) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(source) => {
                    return Err(AllocError::Selector {
                        owner: owner(),
                        index,
                        source,
                    });
                }
            }
        }
        Ok(true)
    }

    fn in_use(&self, candidate: usize) -> bool {
        self.candidates[candidate].allocated || !self.allocating[candidate].is_empty()
    }

    fn allocating_for(&self, candidate: usize, claim: usize) -> bool {
        self.allocating[candidate].contains(&claim)
    }

    /// kube's `allocateOne`: finds devices for the device `r` and everything after it.
    fn allocate_one(&mut self, r: Indices, allocate_sub: bool) -> Result<bool, Stop> {
        self.invocations += 1;
        if r.claim >= self.claims.len() {
            return Ok(true);
        }
        if r.request >= self.requests[r.claim].len() {
            let next = Indices {
                claim: r.claim + 1,
                ..Indices::default()
            };
            return match self.allocate_one(next, false) {
                // Another allocation of an earlier claim may let this one use an
                // alternative with fewer devices: not a reason to stop.
                Err(Stop::MaxSize) => Ok(false),
                other => other,
            };
        }
        let alternatives = self.requests[r.claim][r.request].len();
        let is_sub = self.requests[r.claim][r.request][0].parent.is_some();
        if !allocate_sub && is_sub {
            let mut all_exceeded = true;
            for sub in 0..alternatives {
                match self.allocate_one(Indices { sub, ..r }, true) {
                    Err(Stop::MaxSize) => continue,
                    Err(e) => return Err(e),
                    Ok(true) => {
                        self.selected[r.claim][r.request] = sub;
                        return Ok(true);
                    }
                    Ok(false) => all_exceeded = false,
                }
            }
            return if all_exceeded {
                Err(Stop::MaxSize)
            } else {
                Ok(false)
            };
        }

        let data = &self.requests[r.claim][r.request][r.sub];
        let (all, num_devices, admin) = (data.all, data.num_devices, data.admin_access);
        if all && data.all_devices.is_empty() {
            return Ok(false);
        }
        if r.device >= num_devices {
            let next = Indices {
                claim: r.claim,
                request: r.request + 1,
                ..Indices::default()
            };
            return self.allocate_one(next, false);
        }
        if self.result[r.claim].len() + num_devices - r.device > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Stop::MaxSize);
        }

        if all {
            let candidate = data.all_devices[r.device];
            if !self.allocate_device(r, candidate, true)? {
                return Ok(false);
            }
            // kube passes the next device's indices without the alternative's index here
            // (`deviceIndices{claimIndex, requestIndex, deviceIndex + 1}`), so after the first
            // device of an `All` alternative the search goes on with the first alternative's
            // data; kept as kube has it.
            let next = Indices {
                claim: r.claim,
                request: r.request,
                sub: 0,
                device: r.device + 1,
            };
            return match self.allocate_one(next, allocate_sub) {
                Ok(true) => Ok(true),
                other => {
                    self.deallocate(r, candidate);
                    other
                }
            };
        }

        for p in 0..self.pools.len() {
            if let Some(reason) = &self.pools[p].invalid {
                let pool = &self.pools[p];
                return Err(Stop::Fatal(AllocError::PoolInvalid {
                    pool: format!("{}/{}", pool.driver, pool.name),
                    reason: reason.clone(),
                }));
            }
            for candidate in self.pool_ranges[p].clone() {
                if admin && self.allocating_for(candidate, r.claim) {
                    continue;
                }
                if !admin && self.in_use(candidate) {
                    continue;
                }
                let data = &self.requests[r.claim][r.request][r.sub];
                let (class, selectors, cache) = (data.class, data.selectors, data.cache);
                if !self.selectable(r.claim, class, selectors, cache, candidate)? {
                    continue;
                }
                if !self.allocate_device(r, candidate, false)? {
                    continue;
                }
                let next = Indices {
                    device: r.device + 1,
                    ..r
                };
                match self.allocate_one(next, allocate_sub) {
                    Ok(true) => return Ok(true),
                    other => {
                        self.deallocate(r, candidate);
                        other?;
                    }
                }
            }
        }
        Ok(false)
    }

    /// kube's `allocateDevice`: takes `candidate` for the device `r` if it is free and the
    /// claim's constraints allow it. With `must` (an `All` request), a constraint that does
    /// not allow it is an error.
    fn allocate_device(
        &mut self,
        r: Indices,
        candidate: usize,
        must: bool,
    ) -> Result<bool, AllocError> {
        let data = &self.requests[r.claim][r.request][r.sub];
        let admin = data.admin_access;
        let (base, sub) = match data.parent {
            Some(parent) => (parent, Some(data.name)),
            None => (data.name, None),
        };
        if admin && self.allocating_for(candidate, r.claim) {
            return Ok(false);
        }
        if !admin && self.in_use(candidate) {
            return Ok(false);
        }
        let cand = &self.candidates[candidate];
        // Devices that consume counters need DRAPartitionableDevices, off in v1.34.
        if !cand.device.consumes_counters.is_empty() {
            return Ok(false);
        }
        let (driver, device) = (cand.slice.spec.driver.as_str(), cand.device);
        let constraints = &mut self.constraints[r.claim];
        for i in 0..constraints.len() {
            if !constraints[i].add(base, sub, candidate, driver, device) {
                if must {
                    let pool = &self.pools[cand.pool];
                    return Err(AllocError::ConstraintUnsatisfiable {
                        claim: claim_name(self.claims[r.claim]),
                        request: data.name.to_owned(),
                        device: format!("{}/{}/{}", pool.driver, pool.name, device.name),
                    });
                }
                for earlier in &mut constraints[..i] {
                    earlier.remove(base, sub);
                }
                return Ok(false);
            }
        }
        self.allocating[candidate].push(r.claim);
        self.result[r.claim].push(Picked {
            request: r.request,
            sub: r.sub,
            candidate,
            admin_access: admin,
        });
        Ok(true)
    }

    /// Undoes the last [`Search::allocate_device`] of the device `r`.
    fn deallocate(&mut self, r: Indices, candidate: usize) {
        let data = &self.requests[r.claim][r.request][r.sub];
        let (base, sub) = match data.parent {
            Some(parent) => (parent, Some(data.name)),
            None => (data.name, None),
        };
        for constraint in &mut self.constraints[r.claim] {
            constraint.remove(base, sub);
        }
        let claims = &mut self.allocating[candidate];
        if let Some(i) = claims.iter().position(|&c| c == r.claim) {
            claims.swap_remove(i);
        }
        self.result[r.claim].pop();
    }
}
