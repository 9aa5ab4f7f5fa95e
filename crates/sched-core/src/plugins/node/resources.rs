//! PodFitsResources: does the node have room for the pod's requests and one more pod?

use crate::fast_path::{FastFilter, Sealed};
use crate::framework::{
    CycleContext, KubeVersion, PluginError, Predicate, Prepared, Reason, ResourceSet,
};
use crate::model::Resources;
use crate::snapshot::NodeRef;
use crate::snapshot::{NodeSummary, flags};

use super::util::is_extended_resource_name;

/// kube's `PodFitsResources` predicate (framework plugin `NodeResourcesFit`, filter part).
///
/// A node fits when it can take one more pod (pods on it + 1 <= allocatable `pods`, checked
/// even for a pod that requests nothing: "Too many pods") and, unless the pod requests no CPU,
/// memory, ephemeral storage or scalar resource, each request is at most allocatable minus what
/// the node's pods already request ("Insufficient cpu", "Insufficient memory",
/// "Insufficient ephemeral-storage", "Insufficient `<name>`" for extended resources, hugepages
/// and other scalars). Every lacking resource is reported, as kube does.
///
/// kube v1.34 checks CPU, memory and ephemeral storage only when the pod requests them (more
/// than 0), so a node whose pods already request more than it has stays feasible for a pod
/// that requests none of that resource; v1.20 compared every one of them once the pod
/// requested anything. The plugin follows the version of its profile
/// ([`crate::framework::KubeVersion`]).
///
/// Argument (optional): extended resources to ignore, by full name (kube's
/// `IgnoredResources`, which the legacy policy fills from extenders' `ignoredByScheduler`
/// managed resources) or by the group before the `/` (`IgnoredResourceGroups`). Only extended
/// resources can be ignored; `kubernetes.io/` names and hugepages are always checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFitsResources {
    ignored_resources: Vec<String>,
    ignored_resource_groups: Vec<String>,
}

/// What PodFitsResources computed for the pod.
#[derive(Debug, Default)]
pub struct FitState {
    /// The pod requests nothing: only the pod count is checked.
    zero_request: bool,
    /// kube v1.34's guard: CPU, memory and ephemeral storage are checked only when the pod
    /// requests them.
    only_requested: bool,
    /// Bits of the scalar requests to check (ignored extended resources are left out).
    scalar_mask: u64,
    /// Indices into the pod's scalar requests to check.
    scalars: Vec<usize>,
}

impl FitState {
    /// Whether the check needs more than the node's summary (scalar requests to compare).
    #[inline]
    pub(crate) fn reads_node_info(&self) -> bool {
        !self.zero_request && self.scalar_mask != 0
    }

    /// The check as a [`FastFilter`], when the summary says it all (no scalar request).
    pub(crate) fn fast_filter(&self, req: &Resources) -> Option<FastFilter> {
        if self.reads_node_info() {
            return None;
        }
        // A resource left unchecked passes every node, however over-committed: `i64::MIN`.
        let checked = |v: i64| {
            if self.only_requested && v <= 0 {
                i64::MIN
            } else {
                v
            }
        };
        Some(FastFilter::fits((!self.zero_request).then_some((
            checked(req.milli_cpu),
            checked(req.memory),
            checked(req.ephemeral_storage),
        ))))
    }
}

impl PodFitsResources {
    /// The predicate with nothing ignored.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ignores these extended resources (full names such as `example.com/foo`).
    #[must_use]
    pub fn with_ignored_resources(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.ignored_resources = names.into_iter().collect();
        self
    }

    /// Ignores extended resources whose name starts with one of these groups and a `/`
    /// (e.g. `example.com` ignores `example.com/foo`).
    #[must_use]
    pub fn with_ignored_resource_groups(
        mut self,
        groups: impl IntoIterator<Item = String>,
    ) -> Self {
        self.ignored_resource_groups = groups.into_iter().collect();
        self
    }

    pub(crate) fn state(&self, cx: &CycleContext<'_>) -> FitState {
        let req = cx.requests();
        let mut scalars = Vec::new();
        let mut mask = 0u64;
        for (i, (name, _)) in req.scalar.iter().enumerate() {
            if is_extended_resource_name(name) {
                let group = name.split('/').next().unwrap_or("");
                if self.ignored_resources.iter().any(|r| r == name)
                    || (!self.ignored_resource_groups.is_empty()
                        && self.ignored_resource_groups.iter().any(|g| g == group))
                {
                    continue;
                }
            }
            scalars.push(i);
            mask |= ResourceSet::scalar_bit(i);
        }
        FitState {
            zero_request: req.is_zero_request(),
            only_requested: cx.kube_version() >= KubeVersion::V1_34,
            scalar_mask: mask,
            scalars,
        }
    }

    /// The scalar-resource part of [`PodFitsResources::check`], out of line: the common pod
    /// requests no scalar resource.
    #[inline(never)]
    fn lacking_scalars(cx: &CycleContext<'_>, st: &FitState, node: NodeRef<'_>) -> u64 {
        let req = cx.requests();
        let s = node.summary();
        let mut lacking = 0u64;
        let has_scalars = s.has(flags::SCALAR_RESOURCES);
        for &i in &st.scalars {
            let Some((name, want)) = req.scalar.get(i) else {
                continue;
            };
            let free = if has_scalars {
                let info = node.info();
                info.allocatable()
                    .scalar(name)
                    .wrapping_sub(info.requested().scalar(name))
            } else {
                0
            };
            if *want > free {
                lacking |= ResourceSet::scalar_bit(i);
            }
        }
        lacking
    }

    /// The part of [`PodFitsResources::check`] that reads only the node's summary (pod count,
    /// CPU, memory, ephemeral storage), as lacking [`ResourceSet`] bits.
    #[inline]
    pub(crate) fn lacking_in_summary(req: &Resources, st: &FitState, s: &NodeSummary) -> u64 {
        // Go's int64 arithmetic wraps; so does this, and it never panics on absurd input.
        let mut lacking = 0u64;
        if i64::from(s.pod_count) + 1 > s.alloc_pods {
            lacking |= ResourceSet::PODS;
        }
        if !st.zero_request {
            // v1.34 checks a resource only when the pod requests it; v1.20 checks each.
            let checked = |v: i64| !st.only_requested || v > 0;
            if checked(req.milli_cpu)
                && req.milli_cpu > s.alloc_milli_cpu.wrapping_sub(s.req_milli_cpu)
            {
                lacking |= ResourceSet::CPU;
            }
            if checked(req.memory) && req.memory > s.alloc_memory.wrapping_sub(s.req_memory) {
                lacking |= ResourceSet::MEMORY;
            }
            if checked(req.ephemeral_storage)
                && req.ephemeral_storage > s.alloc_ephemeral.wrapping_sub(s.req_ephemeral)
            {
                lacking |= ResourceSet::EPHEMERAL_STORAGE;
            }
        }
        lacking
    }

    #[inline]
    pub(crate) fn check(
        &self,
        cx: &CycleContext<'_>,
        st: &FitState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let mut lacking = Self::lacking_in_summary(cx.requests(), st, node.summary());
        if st.reads_node_info() {
            lacking |= Self::lacking_scalars(cx, st, node);
        }
        if lacking == 0 {
            Ok(())
        } else {
            Err(Reason::Insufficient(ResourceSet(lacking)))
        }
    }
}

impl Predicate for PodFitsResources {
    type State = FitState;

    fn name(&self) -> &str {
        "PodFitsResources"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        Ok(Prepared::Run(self.state(cx)))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        {
            let st = state;
            self.check(cx, st, node)
        }
    }

    fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        _: Sealed,
    ) -> Option<FastFilter> {
        state.fast_filter(cx.requests())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::{Node, Pod};

    const EXT_A: &str = "example.com/aaa";
    const EXT_B: &str = "example.com/bbb";
    const K8S_A: &str = "kubernetes.io/something";
    const K8S_B: &str = "subdomain.kubernetes.io/something";
    const HUGE_A: &str = "hugepages-2Mi";

    /// kube's `framework.Resource` in the test tables: milli-CPU, memory, scalars.
    #[derive(Clone, Copy, Default)]
    struct R<'a> {
        cpu: i64,
        mem: i64,
        eph: i64,
        scalar: Option<(&'a str, i64)>,
    }

    fn r(cpu: i64, mem: i64) -> R<'static> {
        R {
            cpu,
            mem,
            ..R::default()
        }
    }

    fn rs<'a>(cpu: i64, mem: i64, name: &'a str, v: i64) -> R<'a> {
        R {
            cpu,
            mem,
            eph: 0,
            scalar: Some((name, v)),
        }
    }

    fn scalar_only(name: &str, v: i64) -> R<'_> {
        rs(0, 0, name, v)
    }

    /// kube's `Resource.ResourceList()`: cpu, memory and ephemeral storage always present.
    fn to_container(x: R<'_>) -> crate::model::Container {
        let cpu = format!("{}m", x.cpu);
        let mem = x.mem.to_string();
        let eph = x.eph.to_string();
        let mut pairs: Vec<(&str, &str)> =
            vec![("cpu", &cpu), ("memory", &mem), ("ephemeral-storage", &eph)];
        let sv;
        if let Some((n, v)) = x.scalar {
            sv = v.to_string();
            pairs.push((n, &sv));
        }
        container(&pairs)
    }

    fn resource_pod(usage: &[R<'_>]) -> Pod {
        let mut p = pod();
        p.spec.containers = usage.iter().map(|u| to_container(*u)).collect();
        p
    }

    fn init_pod(mut p: Pod, usage: &[R<'_>]) -> Pod {
        p.spec.init_containers = usage.iter().map(|u| to_container(*u)).collect();
        p
    }

    /// makeAllocatableResources(milliCPU, memory, pods, extendedA, storage, hugePageA).
    fn alloc_node(cpu: i64, mem: i64, pods: i64, ext_a: i64, storage: i64, huge_a: i64) -> Node {
        let mut n = node("machine");
        let cpu = format!("{cpu}m");
        let (mem, pods, ext_a, storage, huge_a) = (
            mem.to_string(),
            pods.to_string(),
            ext_a.to_string(),
            storage.to_string(),
            huge_a.to_string(),
        );
        n.status.allocatable = list(&[
            ("cpu", &cpu),
            ("memory", &mem),
            ("pods", &pods),
            (EXT_A, &ext_a),
            ("ephemeral-storage", &storage),
            (HUGE_A, &huge_a),
        ]);
        n.status.capacity = n.status.allocatable.clone();
        n
    }

    fn run(p: &PodFitsResources, pod: &Pod, node: Node, existing: Pod) -> Vec<String> {
        let snap = snapshot(vec![node], vec![(0, existing)]);
        match filter(p, pod, &snap, 0) {
            Ok(()) => vec![],
            Err(reason) => messages(reason, pod, &snap, 0),
        }
    }

    fn ins(name: &str) -> String {
        format!("Insufficient {name}")
    }

    // kube: noderesources/fit_test.go TestEnoughRequests.
    #[test]
    fn enough_requests() {
        let cases: Vec<(&str, Pod, Pod, Vec<String>)> = vec![
            (
                "no resources requested always fits",
                pod(),
                resource_pod(&[r(10, 20)]),
                vec![],
            ),
            (
                "too many resources fails",
                resource_pod(&[r(1, 1)]),
                resource_pod(&[r(10, 20)]),
                vec![ins("cpu"), ins("memory")],
            ),
            (
                "too many resources fails due to init container cpu",
                init_pod(resource_pod(&[r(1, 1)]), &[r(3, 1)]),
                resource_pod(&[r(8, 19)]),
                vec![ins("cpu")],
            ),
            (
                "too many resources fails due to highest init container cpu",
                init_pod(resource_pod(&[r(1, 1)]), &[r(3, 1), r(2, 1)]),
                resource_pod(&[r(8, 19)]),
                vec![ins("cpu")],
            ),
            (
                "too many resources fails due to init container memory",
                init_pod(resource_pod(&[r(1, 1)]), &[r(1, 3)]),
                resource_pod(&[r(9, 19)]),
                vec![ins("memory")],
            ),
            (
                "too many resources fails due to highest init container memory",
                init_pod(resource_pod(&[r(1, 1)]), &[r(1, 3), r(1, 2)]),
                resource_pod(&[r(9, 19)]),
                vec![ins("memory")],
            ),
            (
                "init container fits because it's the max, not sum, of containers and init containers",
                init_pod(resource_pod(&[r(1, 1)]), &[r(1, 1)]),
                resource_pod(&[r(9, 19)]),
                vec![],
            ),
            (
                "multiple init containers fit because it's the max, not sum, of containers and init containers",
                init_pod(resource_pod(&[r(1, 1)]), &[r(1, 1), r(1, 1)]),
                resource_pod(&[r(9, 19)]),
                vec![],
            ),
            (
                "both resources fit",
                resource_pod(&[r(1, 1)]),
                resource_pod(&[r(5, 5)]),
                vec![],
            ),
            (
                "one resource memory fits",
                resource_pod(&[r(2, 1)]),
                resource_pod(&[r(9, 5)]),
                vec![ins("cpu")],
            ),
            (
                "one resource cpu fits",
                resource_pod(&[r(1, 2)]),
                resource_pod(&[r(5, 19)]),
                vec![ins("memory")],
            ),
            (
                "equal edge case",
                resource_pod(&[r(5, 1)]),
                resource_pod(&[r(5, 19)]),
                vec![],
            ),
            (
                "equal edge case for init container",
                init_pod(resource_pod(&[r(4, 1)]), &[r(5, 1)]),
                resource_pod(&[r(5, 19)]),
                vec![],
            ),
            (
                "extended resource fits",
                resource_pod(&[scalar_only(EXT_A, 1)]),
                resource_pod(&[R::default()]),
                vec![],
            ),
            (
                "extended resource fits for init container",
                init_pod(resource_pod(&[R::default()]), &[scalar_only(EXT_A, 1)]),
                resource_pod(&[R::default()]),
                vec![],
            ),
            (
                "extended resource capacity enforced",
                resource_pod(&[rs(1, 1, EXT_A, 10)]),
                resource_pod(&[rs(0, 0, EXT_A, 0)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource capacity enforced for init container",
                init_pod(resource_pod(&[R::default()]), &[rs(1, 1, EXT_A, 10)]),
                resource_pod(&[rs(0, 0, EXT_A, 0)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource allocatable enforced",
                resource_pod(&[rs(1, 1, EXT_A, 1)]),
                resource_pod(&[rs(0, 0, EXT_A, 5)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource allocatable enforced for init container",
                init_pod(resource_pod(&[R::default()]), &[rs(1, 1, EXT_A, 1)]),
                resource_pod(&[rs(0, 0, EXT_A, 5)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource allocatable enforced for multiple containers",
                resource_pod(&[rs(1, 1, EXT_A, 3), rs(1, 1, EXT_A, 3)]),
                resource_pod(&[rs(0, 0, EXT_A, 2)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource allocatable admits multiple init containers",
                init_pod(
                    resource_pod(&[R::default()]),
                    &[rs(1, 1, EXT_A, 3), rs(1, 1, EXT_A, 3)],
                ),
                resource_pod(&[rs(0, 0, EXT_A, 2)]),
                vec![],
            ),
            (
                "extended resource allocatable enforced for multiple init containers",
                init_pod(
                    resource_pod(&[R::default()]),
                    &[rs(1, 1, EXT_A, 6), rs(1, 1, EXT_A, 3)],
                ),
                resource_pod(&[rs(0, 0, EXT_A, 2)]),
                vec![ins(EXT_A)],
            ),
            (
                "extended resource allocatable enforced for unknown resource",
                resource_pod(&[rs(1, 1, EXT_B, 1)]),
                resource_pod(&[r(0, 0)]),
                vec![ins(EXT_B)],
            ),
            (
                "extended resource allocatable enforced for unknown resource for init container",
                init_pod(resource_pod(&[R::default()]), &[rs(1, 1, EXT_B, 1)]),
                resource_pod(&[r(0, 0)]),
                vec![ins(EXT_B)],
            ),
            (
                "kubernetes.io resource capacity enforced",
                resource_pod(&[rs(1, 1, K8S_A, 10)]),
                resource_pod(&[r(0, 0)]),
                vec![ins(K8S_A)],
            ),
            (
                "kubernetes.io resource capacity enforced for init container",
                init_pod(resource_pod(&[R::default()]), &[rs(1, 1, K8S_B, 10)]),
                resource_pod(&[r(0, 0)]),
                vec![ins(K8S_B)],
            ),
            (
                "hugepages resource capacity enforced",
                resource_pod(&[rs(1, 1, HUGE_A, 10)]),
                resource_pod(&[rs(0, 0, HUGE_A, 0)]),
                vec![ins(HUGE_A)],
            ),
            (
                "hugepages resource capacity enforced for init container",
                init_pod(resource_pod(&[R::default()]), &[rs(1, 1, HUGE_A, 10)]),
                resource_pod(&[rs(0, 0, HUGE_A, 0)]),
                vec![ins(HUGE_A)],
            ),
            (
                "hugepages resource allocatable enforced for multiple containers",
                resource_pod(&[rs(1, 1, HUGE_A, 3), rs(1, 1, HUGE_A, 3)]),
                resource_pod(&[rs(0, 0, HUGE_A, 2)]),
                vec![ins(HUGE_A)],
            ),
        ];
        let p = PodFitsResources::new();
        for (name, pod, existing, want) in cases {
            let got = run(&p, &pod, alloc_node(10, 20, 32, 5, 20, 5), existing);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn skips_ignored_extended_resources() {
        let pod = resource_pod(&[rs(1, 1, EXT_B, 1)]);
        let node = || alloc_node(10, 20, 32, 5, 20, 5);
        let p = PodFitsResources::new().with_ignored_resources(["example.com/bbb".to_string()]);
        assert!(run(&p, &pod, node(), resource_pod(&[r(0, 0)])).is_empty());
        let p = PodFitsResources::new().with_ignored_resource_groups(["example.com".to_string()]);
        assert!(run(&p, &pod, node(), resource_pod(&[r(0, 0)])).is_empty());
        // kubernetes.io names and hugepages are not extended resources: never ignored.
        let p = PodFitsResources::new().with_ignored_resources([K8S_A.to_string()]);
        let pod = resource_pod(&[rs(1, 1, K8S_A, 1)]);
        assert_eq!(
            run(&p, &pod, node(), resource_pod(&[r(0, 0)])),
            vec![ins(K8S_A)]
        );
    }

    #[test]
    fn requests_plus_overhead() {
        let p = PodFitsResources::new();
        let mut fits = resource_pod(&[r(1, 1)]);
        fits.spec.overhead = list(&[("cpu", "3m"), ("memory", "13")]);
        let node = || alloc_node(10, 20, 32, 5, 20, 5);
        assert!(run(&p, &fits, node(), resource_pod(&[r(5, 5)])).is_empty());
        let mut no = resource_pod(&[r(1, 1)]);
        no.spec.overhead = list(&[("cpu", "1m"), ("memory", "15")]);
        assert_eq!(
            run(&p, &no, node(), resource_pod(&[r(5, 5)])),
            vec![ins("memory")]
        );
    }

    // kube: TestNotEnoughRequests (allocatable pods = 1, one pod already there).
    #[test]
    fn not_enough_pods() {
        let p = PodFitsResources::new();
        let cases = [
            (pod(), r(10, 20)),
            (resource_pod(&[r(1, 1)]), r(5, 5)),
            (resource_pod(&[r(5, 1)]), r(5, 19)),
            (init_pod(resource_pod(&[r(5, 1)]), &[r(5, 1)]), r(5, 19)),
        ];
        for (i, (pod, existing)) in cases.into_iter().enumerate() {
            let got = run(
                &p,
                &pod,
                alloc_node(10, 20, 1, 0, 0, 0),
                resource_pod(&[existing]),
            );
            assert_eq!(got, vec!["Too many pods".to_string()], "case {i}");
        }
    }

    // kube: TestStorageRequests.
    #[test]
    fn storage_requests() {
        let p = PodFitsResources::new();
        let node = || alloc_node(10, 20, 32, 5, 20, 5);
        let eph = |v| R {
            eph: v,
            ..R::default()
        };
        assert_eq!(
            run(
                &p,
                &resource_pod(&[r(1, 1)]),
                node(),
                resource_pod(&[r(10, 10)])
            ),
            vec![ins("cpu")]
        );
        assert!(
            run(
                &p,
                &resource_pod(&[r(1, 1)]),
                node(),
                resource_pod(&[r(2, 10)])
            )
            .is_empty()
        );
        assert_eq!(
            run(
                &p,
                &resource_pod(&[eph(25)]),
                node(),
                resource_pod(&[r(2, 2)])
            ),
            vec![ins("ephemeral-storage")]
        );
        assert!(
            run(
                &p,
                &resource_pod(&[eph(10)]),
                node(),
                resource_pod(&[r(2, 2)])
            )
            .is_empty()
        );
    }

    #[test]
    fn absurd_quantities_do_not_panic() {
        let mut n = node("huge");
        n.status.allocatable = list(&[("cpu", "9223372036854775807m"), ("pods", "10")]);
        let mut existing = pod();
        existing.spec.containers = vec![container(&[("cpu", "-5")])];
        let snap = snapshot(vec![n], vec![(0, existing)]);
        let p = PodFitsResources::new();
        // Go's wrapping arithmetic: allocatable - requested overflows to a negative number.
        assert_eq!(
            filter(&p, &resource_pod(&[r(1, 0)]), &snap, 0),
            Err(Reason::Insufficient(ResourceSet(ResourceSet::CPU)))
        );
    }
}
