//! Resource arithmetic: a pod's requests and a node's allocatable, in integers as kube keeps them.

use super::{ContainerStatus, Pod, ResourceList};

/// Name of an extended or other scalar resource (e.g. `nvidia.com/gpu`, `hugepages-2Mi`).
pub type ResourceName = String;

/// CPU assumed for a container that sets no CPU request, when spreading by usage (100m).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory assumed for a container that sets no memory request, when spreading by usage (200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A bundle of resources, as kube-scheduler's `framework.Resource`. Sums saturate at the int64
/// bounds, so absurd requests never panic nor wrap around into a small or negative request;
/// subtraction wraps, and undoes an addition that did not saturate (the snapshot refuses a pod
/// whose requests would saturate a node's sums, see
/// [`SnapshotError::RequestOverflow`](crate::snapshot::SnapshotError::RequestOverflow)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    /// CPU in thousandths of a core.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Number of pods (only meaningful for allocatable).
    pub allowed_pod_number: i64,
    /// Scalar resources (extended resources, hugepages, attachable volumes), sorted by name.
    pub scalar: Vec<(ResourceName, i64)>,
}

/// Whether kube treats `name` as a scalar resource (tracked by name, compared as an integer).
pub(crate) fn is_scalar_resource_name(name: &str) -> bool {
    if name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") {
        return true;
    }
    // kube: extended (qualified, not native, not a quota `requests.` name) or prefixed native
    // (`*kubernetes.io/*`).
    if name.contains("kubernetes.io/") {
        return true;
    }
    name.contains('/') && !name.starts_with("requests.")
}

impl Resources {
    /// The resources of a resource list (`allocatable`, `requests`, ...).
    pub fn from_list(list: &ResourceList) -> Resources {
        let mut r = Resources::default();
        r.add_list(list);
        r
    }

    /// Adds a resource list, as kube's `Resource.Add` (saturating).
    pub fn add_list(&mut self, list: &ResourceList) {
        for (name, q) in list {
            match name.as_str() {
                "cpu" => self.milli_cpu = self.milli_cpu.saturating_add(q.milli_value()),
                "memory" => self.memory = self.memory.saturating_add(q.value()),
                "ephemeral-storage" => {
                    self.ephemeral_storage = self.ephemeral_storage.saturating_add(q.value())
                }
                "pods" => {
                    self.allowed_pod_number = self.allowed_pod_number.saturating_add(q.value())
                }
                n if is_scalar_resource_name(n) => self.add_scalar(n, q.value()),
                _ => {}
            }
        }
    }

    /// Raises each resource to at least the list's value, as kube's `Resource.SetMaxResource`.
    pub fn set_max_list(&mut self, list: &ResourceList) {
        for (name, q) in list {
            match name.as_str() {
                "cpu" => self.milli_cpu = self.milli_cpu.max(q.milli_value()),
                "memory" => self.memory = self.memory.max(q.value()),
                "ephemeral-storage" => {
                    self.ephemeral_storage = self.ephemeral_storage.max(q.value())
                }
                "pods" => self.allowed_pod_number = self.allowed_pod_number.max(q.value()),
                n if is_scalar_resource_name(n) => {
                    let v = q.value();
                    if self.scalar(n) < v {
                        self.set_scalar(n, v);
                    }
                }
                _ => {}
            }
        }
    }

    /// Raises each resource to at least `other`'s, as kube's `maxResourceList`.
    pub fn set_max(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pod_number = self.allowed_pod_number.max(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            if self.scalar(n) < *v {
                self.set_scalar(n, *v);
            }
        }
    }

    /// The amount of a scalar resource (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1,
            Err(_) => 0,
        }
    }

    /// Adds `v` to a scalar resource, saturating.
    pub fn add_scalar(&mut self, name: &str, v: i64) {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1 = self.scalar[i].1.saturating_add(v),
            Err(i) => self.scalar.insert(i, (name.to_string(), v)),
        }
    }

    /// Sets a scalar resource to `v`.
    pub fn set_scalar(&mut self, name: &str, v: i64) {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1 = v,
            Err(i) => self.scalar.insert(i, (name.to_string(), v)),
        }
    }

    /// Adds another bundle (used to keep node sums), saturating.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_add(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            self.add_scalar(n, *v);
        }
    }

    /// Subtracts another bundle. Scalars that reach zero and were absent before stay as zero
    /// entries; use [`Resources::normalized`] to compare bundles.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.wrapping_sub(other.milli_cpu);
        self.memory = self.memory.wrapping_sub(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.wrapping_sub(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .wrapping_sub(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            self.add_scalar(n, v.wrapping_neg());
        }
        self.scalar.retain(|(_, v)| *v != 0);
    }

    /// The same bundle with zero-valued scalar entries dropped.
    pub fn normalized(&self) -> Resources {
        let mut r = self.clone();
        r.scalar.retain(|(_, v)| *v != 0);
        r
    }

    /// Whether adding `other` would push any sum past the int64 bounds.
    pub fn would_overflow(&self, other: &Resources) -> bool {
        self.milli_cpu.checked_add(other.milli_cpu).is_none()
            || self.memory.checked_add(other.memory).is_none()
            || self
                .ephemeral_storage
                .checked_add(other.ephemeral_storage)
                .is_none()
            || self
                .allowed_pod_number
                .checked_add(other.allowed_pod_number)
                .is_none()
            || other
                .scalar
                .iter()
                .any(|(n, v)| self.scalar(n).checked_add(*v).is_none())
    }

    /// Whether nothing is requested (no CPU, memory, ephemeral storage or scalar resource).
    pub fn is_zero_request(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.iter().all(|(_, v)| *v == 0)
    }
}

/// The pod's effective requests, as kube-scheduler computes them for fitting
/// (`resourcehelper.PodRequests`):
/// - each container's requests as resized in place: with a status reporting its resources, the
///   larger of spec, status and allocation (kube v1.34's `InPlacePodVerticalScaling`, on by
///   default; only status and allocation when the resize is `Infeasible`);
/// - the containers' requests summed;
/// - init containers run one after another: while the i-th runs, the native sidecars started
///   before it (init containers with `restartPolicy: Always`) run too, so the pod needs at least
///   `sidecars before i + init container i`; a sidecar's requests also add to the containers'
///   sum, since it keeps running beside them;
/// - the larger of the two, resource by resource;
/// - pod-level `resources.requests` of CPU and memory, when set, replace those sums;
/// - plus the pod overhead.
pub fn pod_requests(pod: &Pod) -> Resources {
    let mut r = aggregate_requests(pod, Resources::from_list);
    if let Some(pod_level) = &pod.spec.resources {
        apply_pod_level(&mut r, &pod_level.requests);
    }
    r.add_list(&pod.spec.overhead);
    r.scalar.retain(|(_, v)| *v != 0);
    r
}

/// The containers' and init containers' requests combined as kube does (see [`pod_requests`]),
/// each container's requests ([`container_requests`]) read through `of`.
fn aggregate_requests(pod: &Pod, of: impl Fn(&ResourceList) -> Resources) -> Resources {
    let mut sum = Resources::default();
    for c in &pod.spec.containers {
        sum.add(&of(&container_requests(pod, c, status_of(pod, &c.name))));
    }
    let mut sidecars = Resources::default();
    let mut init: Option<Resources> = None;
    for c in &pod.spec.init_containers {
        // Only a sidecar's status counts (a plain init container's resources cannot change).
        let status = if c.is_restartable() {
            status_of(pod, &c.name)
        } else {
            None
        };
        let own = of(&container_requests(pod, c, status));
        let running = if c.is_restartable() {
            sum.add(&own);
            sidecars.add(&own);
            sidecars.clone()
        } else {
            let mut running = own;
            running.add(&sidecars);
            running
        };
        match &mut init {
            Some(init) => init.set_max(&running),
            None => init = Some(running),
        }
    }
    // Without init containers kube takes no maximum at all (which matters only for the
    // negative requests the API server refuses).
    if let Some(init) = &init {
        sum.set_max(init);
    }
    sum
}

/// A container's status among the pod's (kube looks both lists up by name, an init
/// container's status winning).
fn status_of<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .init_container_statuses
        .iter()
        .find(|s| s.name == name)
        .or_else(|| {
            pod.status
                .container_statuses
                .iter()
                .find(|s| s.name == name)
        })
}

/// A container's requests as kube v1.34 counts them with in-place resize
/// (`InPlacePodVerticalScaling`, on by default; component-helpers' `determineContainerReqs`):
/// with a status that reports the container's resources, the larger of the spec's requests,
/// the status's and the allocated resources, resource by resource, or only the status's and
/// the allocated ones when the pod's resize is `Infeasible` (the `PodResizePending`
/// condition's reason); the spec's requests otherwise.
fn container_requests<'a>(
    pod: &Pod,
    c: &'a crate::model::Container,
    status: Option<&'a ContainerStatus>,
) -> std::borrow::Cow<'a, ResourceList> {
    use std::borrow::Cow;
    let Some(cs) = status else {
        return Cow::Borrowed(&c.resources.requests);
    };
    let Some(actual) = &cs.resources else {
        return Cow::Borrowed(&c.resources.requests);
    };
    let infeasible = pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodResizePending")
        .is_some_and(|c| c.reason == "Infeasible");
    let mut out = if infeasible {
        actual.requests.clone()
    } else {
        let mut out = c.resources.requests.clone();
        max_into(&mut out, &actual.requests);
        out
    };
    max_into(&mut out, &cs.allocated_resources);
    Cow::Owned(out)
}

/// kube's `max` of resource lists: every resource of either, at the larger quantity.
fn max_into(list: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        let larger = list
            .get(name)
            .is_none_or(|have| (q.milli_value(), q.value()) > (have.milli_value(), have.value()));
        if larger {
            list.insert(name.clone(), q.clone());
        }
    }
}

/// Pod-level CPU and memory requests replace the containers' (kube supports those two).
fn apply_pod_level(r: &mut Resources, pod_level: &ResourceList) {
    if let Some(q) = pod_level.get("cpu") {
        r.milli_cpu = q.milli_value();
    }
    if let Some(q) = pod_level.get("memory") {
        r.memory = q.value();
    }
}

/// The pod's effective limits, computed the same way as [`pod_requests`] over `limits`.
pub fn pod_limits(pod: &Pod) -> Resources {
    let mut r = Resources::default();
    for c in &pod.spec.containers {
        r.add_list(&c.resources.limits);
    }
    for c in &pod.spec.init_containers {
        r.set_max_list(&c.resources.limits);
    }
    r.add_list(&pod.spec.overhead);
    r.scalar.retain(|(_, v)| *v != 0);
    r
}

/// The pod's CPU (milli) and memory (bytes) requests where a container that sets no request
/// counts as 100m CPU and 200 MiB memory (an explicit zero stays zero), combined as
/// [`pod_requests`] combines requests (sidecars, init containers, pod-level requests,
/// overhead): kube's `NonZeroRequested`, what the resource scores read.
pub fn pod_non_zero_requests(pod: &Pod) -> (i64, i64) {
    non_zero_requests(pod, true)
}

/// [`pod_non_zero_requests`] without the pod-level `resources.requests`: the containers'
/// (sidecars and init containers combined as always) plus the overhead. kube v1.34's
/// NodeResourcesFit scorers read a pod's requests this way (kube builds them without
/// pod-level resources), while its filter and NodeResourcesBalancedAllocation apply them.
pub fn pod_container_non_zero_requests(pod: &Pod) -> (i64, i64) {
    non_zero_requests(pod, false)
}

/// Whether the pod sets pod-level CPU or memory requests (the ones kube applies).
pub(crate) fn has_pod_level_requests(pod: &Pod) -> bool {
    pod.spec
        .resources
        .as_ref()
        .is_some_and(|r| r.requests.contains_key("cpu") || r.requests.contains_key("memory"))
}

fn non_zero_requests(pod: &Pod, pod_level: bool) -> (i64, i64) {
    let mut r = aggregate_requests(pod, |req| Resources {
        milli_cpu: req
            .get("cpu")
            .map_or(DEFAULT_MILLI_CPU_REQUEST, |q| q.milli_value()),
        memory: req
            .get("memory")
            .map_or(DEFAULT_MEMORY_REQUEST, |q| q.value()),
        ..Resources::default()
    });
    if pod_level && let Some(pod_level) = &pod.spec.resources {
        apply_pod_level(&mut r, &pod_level.requests);
    }
    if let Some(q) = pod.spec.overhead.get("cpu") {
        r.milli_cpu = r.milli_cpu.saturating_add(q.milli_value());
    }
    if let Some(q) = pod.spec.overhead.get("memory") {
        r.memory = r.memory.saturating_add(q.value());
    }
    (r.milli_cpu, r.memory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, Quantity};

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.parse::<Quantity>().unwrap()))
            .collect()
    }

    fn container(pairs: &[(&str, &str)]) -> Container {
        let mut c = Container::default();
        c.resources.requests = list(pairs);
        c
    }

    /// kube v1.34's `determineContainerReqs`: a running container resized in place counts
    /// the larger of its spec, status and allocated resources; with an `Infeasible` resize,
    /// the spec is left out; without a reported status, the spec alone counts.
    #[test]
    fn resized_containers_count_the_larger_of_spec_status_and_allocation() {
        use crate::model::{ContainerStatus, PodCondition, ResourceRequirements};
        let mut pod = Pod::default();
        let mut c = container(&[("cpu", "2"), ("memory", "1Gi")]);
        c.name = "app".into();
        pod.spec.containers = vec![c];
        let status = |cpu: &str, mem: &str, alloc: &[(&str, &str)]| ContainerStatus {
            name: "app".into(),
            resources: Some(ResourceRequirements {
                requests: list(&[("cpu", cpu), ("memory", mem)]),
                ..ResourceRequirements::default()
            }),
            allocated_resources: list(alloc),
        };
        // Resized down, not yet applied: the spec's cpu, the status's memory.
        pod.status.container_statuses = vec![status("3", "512Mi", &[("cpu", "1")])];
        let r = pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory), (3000, 1 << 30));
        pod.status.container_statuses = vec![status("1", "2Gi", &[("cpu", "1500m")])];
        let r = pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory), (2000, 2 << 30));
        // Infeasible: the status and the allocation only.
        pod.status.conditions.push(PodCondition {
            type_: "PodResizePending".into(),
            status: "True".into(),
            reason: "Infeasible".into(),
        });
        let r = pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory), (1500, 2 << 30));
        // No resources reported: the spec.
        pod.status.container_statuses[0].resources = None;
        let r = pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory), (2000, 1 << 30));
    }

    #[test]
    fn requests_take_max_of_sum_and_init_plus_overhead() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![
            container(&[("cpu", "1"), ("memory", "1Gi")]),
            container(&[("cpu", "500m"), ("nvidia.com/gpu", "1")]),
        ];
        pod.spec.init_containers = vec![
            container(&[("cpu", "2"), ("memory", "512Mi")]),
            container(&[("nvidia.com/gpu", "2")]),
        ];
        pod.spec.overhead = list(&[("cpu", "100m"), ("memory", "10Mi")]);
        let r = pod_requests(&pod);
        assert_eq!(r.milli_cpu, 2100);
        assert_eq!(r.memory, (1 << 30) + 10 * 1024 * 1024);
        assert_eq!(r.scalar("nvidia.com/gpu"), 2);
    }

    #[test]
    fn non_zero_defaults_apply_only_when_unset() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container(&[]), container(&[("cpu", "0")])];
        assert_eq!(
            pod_non_zero_requests(&pod),
            (DEFAULT_MILLI_CPU_REQUEST, 2 * DEFAULT_MEMORY_REQUEST)
        );
    }

    #[test]
    fn huge_requests_saturate_instead_of_wrapping() {
        let big = container(&[("cpu", "9000000000000000"), ("memory", "8E")]);
        let pod = Pod {
            spec: crate::model::PodSpec {
                containers: vec![big.clone(), big],
                ..Default::default()
            },
            ..Default::default()
        };
        let r = pod_requests(&pod);
        assert_eq!((r.milli_cpu, r.memory), (i64::MAX, i64::MAX));
        assert_eq!(pod_non_zero_requests(&pod), (i64::MAX, i64::MAX));
        assert!(!Resources::default().would_overflow(&r));
        assert!(r.would_overflow(&Resources::from_list(&list(&[("cpu", "1m")]))));
    }

    #[test]
    fn scalar_names_follow_kube() {
        assert!(is_scalar_resource_name("nvidia.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(is_scalar_resource_name("attachable-volumes-aws-ebs"));
        assert!(!is_scalar_resource_name("storage"));
        assert!(!is_scalar_resource_name("requests.nvidia.com/gpu"));
    }
}
