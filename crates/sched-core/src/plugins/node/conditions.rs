//! Node conditions: CheckNodeCondition and the memory, disk and PID pressure predicates.

use crate::fast_path::{FastFilter, Sealed};
use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::model::Node;
use crate::snapshot::NodeRef;
use crate::snapshot::flags;

use super::util::is_best_effort;

/// kube's legacy `CheckNodeCondition` predicate (kube 1.14 to 1.16; no framework plugin). No
/// argument.
///
/// Walks the node's conditions in order: a `Ready` condition whose status is not `True` fails
/// with "node(s) were not ready", a `NetworkUnavailable` condition whose status is not `False`
/// with "node(s) had unavailable network"; then `spec.unschedulable` fails with
/// "node(s) were unschedulable" (tolerations are not consulted, as in the legacy predicate).
/// A node without a Ready condition passes, as it did in kube. kube reports every failing
/// condition; the framework's single reason per predicate keeps the first of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckNodeCondition;

impl CheckNodeCondition {
    /// The predicate.
    pub fn new() -> Self {
        CheckNodeCondition
    }
}

/// The legacy CheckNodeCondition verdict for a node.
pub(crate) fn node_condition(node: &Node) -> Result<(), Reason> {
    for c in &node.status.conditions {
        match c.type_.as_str() {
            "Ready" if c.status != "True" => return Err(Reason::NotReady),
            "NetworkUnavailable" if c.status != "False" => return Err(Reason::NetworkUnavailable),
            _ => {}
        }
    }
    if node.spec.unschedulable {
        return Err(Reason::Unschedulable);
    }
    Ok(())
}

impl Predicate for CheckNodeCondition {
    type State = ();

    fn name(&self) -> &str {
        "CheckNodeCondition"
    }

    fn filter(&self, _cx: &CycleContext<'_>, _: &(), node: NodeRef<'_>) -> Result<(), Reason> {
        node_condition(node.node())
    }
}

/// What a node-pressure predicate checks: a node whose summary has `flag` (its condition is
/// `True`) fails with `reason`, for every pod or only BestEffort ones.
struct Pressure {
    flag: u32,
    reason: Reason,
    best_effort_only: bool,
}

impl Pressure {
    fn applies_to(&self, cx: &CycleContext<'_>) -> bool {
        !self.best_effort_only || is_best_effort(cx.pod())
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Prepared<()> {
        if self.applies_to(cx) {
            Prepared::Run(())
        } else {
            Prepared::Skip
        }
    }

    fn filter(&self, cx: &CycleContext<'_>, node: NodeRef<'_>) -> Result<(), Reason> {
        if node.summary().has(self.flag) && self.applies_to(cx) {
            Err(self.reason)
        } else {
            Ok(())
        }
    }

    fn fast_filter(&self, cx: &CycleContext<'_>) -> FastFilter {
        if self.applies_to(cx) {
            FastFilter::without_flags(self.flag)
        } else {
            FastFilter::ALL
        }
    }
}

/// A node-pressure predicate: a unit struct with its legacy name and its [`Pressure`].
macro_rules! pressure_predicate {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $pressure:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl $ty {
            const PRESSURE: Pressure = $pressure;

            /// The predicate.
            pub fn new() -> Self {
                $ty
            }
        }

        impl Predicate for $ty {
            type State = ();

            fn name(&self) -> &str {
                $name
            }

            fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<()>, PluginError> {
                Ok(Self::PRESSURE.prepare(cx))
            }

            fn filter(
                &self,
                cx: &CycleContext<'_>,
                _: &(),
                node: NodeRef<'_>,
            ) -> Result<(), Reason> {
                Self::PRESSURE.filter(cx, node)
            }

            fn fast_filter(&self, cx: &CycleContext<'_>, _: &(), _: Sealed) -> Option<FastFilter> {
                Some(Self::PRESSURE.fast_filter(cx))
            }
        }
    };
}

pressure_predicate!(
    /// kube's legacy `CheckNodeMemoryPressure` predicate. No argument.
    ///
    /// Only BestEffort pods (no container or init container sets a CPU or memory request or
    /// limit) are kept off a node whose `MemoryPressure` condition is `True`: "node(s) had
    /// memory pressure". Other pods skip it.
    CheckNodeMemoryPressure,
    "CheckNodeMemoryPressure",
    Pressure {
        flag: flags::MEMORY_PRESSURE,
        reason: Reason::MemoryPressure,
        best_effort_only: true,
    }
);

pressure_predicate!(
    /// kube's legacy `CheckNodeDiskPressure` predicate. No argument.
    ///
    /// A node whose `DiskPressure` condition is `True` takes no pod: "node(s) had disk
    /// pressure".
    CheckNodeDiskPressure,
    "CheckNodeDiskPressure",
    Pressure {
        flag: flags::DISK_PRESSURE,
        reason: Reason::DiskPressure,
        best_effort_only: false,
    }
);

pressure_predicate!(
    /// kube's legacy `CheckNodePIDPressure` predicate. No argument.
    ///
    /// A node whose `PIDPressure` condition is `True` takes no pod: "node(s) had pid
    /// pressure".
    CheckNodePIDPressure,
    "CheckNodePIDPressure",
    Pressure {
        flag: flags::PID_PRESSURE,
        reason: Reason::PidPressure,
        best_effort_only: false,
    }
);

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::{NodeCondition, Pod};

    fn with_conditions(name: &str, conds: &[(&str, &str)]) -> Node {
        let mut n = node(name);
        n.status.conditions = conds
            .iter()
            .map(|(t, s)| NodeCondition {
                type_: t.to_string(),
                status: s.to_string(),
            })
            .collect();
        n
    }

    // kube: predicates_test.go TestNodeConditionPredicate.
    #[test]
    fn node_condition_predicate() {
        let mut unschedulable = with_conditions("node6", &[("Ready", "True")]);
        unschedulable.spec.unschedulable = true;
        let nodes = vec![
            // node1 considered
            with_conditions("node1", &[("Ready", "True")]),
            // node2 ignored - node not Ready
            with_conditions("node2", &[("Ready", "False")]),
            // node3 ignored - network unavailable
            with_conditions(
                "node3",
                &[("Ready", "True"), ("NetworkUnavailable", "True")],
            ),
            // node4 considered
            with_conditions(
                "node4",
                &[("Ready", "True"), ("NetworkUnavailable", "False")],
            ),
            // node5 ignored - node not Ready and network unavailable
            with_conditions(
                "node5",
                &[("Ready", "False"), ("NetworkUnavailable", "True")],
            ),
            unschedulable,
            // no conditions: considered
            node("node7"),
            // Unknown counts as not ready / network unavailable.
            with_conditions("node8", &[("NetworkUnavailable", "Unknown")]),
            with_conditions("node9", &[("Ready", "Unknown")]),
            // Pressure conditions are not this predicate's business.
            with_conditions("node10", &[("MemoryPressure", "True"), ("Ready", "True")]),
        ];
        let snap = snapshot(nodes, vec![]);
        let got = filter_all(&CheckNodeCondition, &pod(), &snap);
        assert_eq!(
            got,
            vec![
                Ok(()),
                Err(Reason::NotReady),
                Err(Reason::NetworkUnavailable),
                Ok(()),
                Err(Reason::NotReady),
                Err(Reason::Unschedulable),
                Ok(()),
                Err(Reason::NetworkUnavailable),
                Err(Reason::NotReady),
                Ok(()),
            ]
        );
        assert_eq!(
            messages(Reason::NotReady, &pod(), &snap, 1),
            vec!["node(s) were not ready"]
        );
        assert_eq!(
            messages(Reason::NetworkUnavailable, &pod(), &snap, 2),
            vec!["node(s) had unavailable network"]
        );
    }

    fn best_effort() -> Pod {
        let mut p = pod();
        p.spec.containers = vec![container(&[])];
        p
    }

    fn burstable() -> Pod {
        let mut p = pod();
        p.spec.containers = vec![container(&[("cpu", "100m")])];
        p
    }

    // kube: predicates_test.go TestPodSchedulesOnNodeWithMemoryPressureCondition.
    #[test]
    fn memory_pressure() {
        let snap = snapshot(
            vec![
                with_conditions("no-pressure", &[("MemoryPressure", "False")]),
                with_conditions("pressure", &[("MemoryPressure", "True")]),
            ],
            vec![],
        );
        let p = CheckNodeMemoryPressure;
        // Best-effort pod schedules on node without memory pressure, not on one with it.
        assert_eq!(
            filter_all(&p, &best_effort(), &snap),
            vec![Ok(()), Err(Reason::MemoryPressure)]
        );
        // Non best-effort pods schedule on both, and skip the check.
        assert_eq!(filter_all(&p, &burstable(), &snap), vec![Ok(()), Ok(())]);
        assert!(skips(&p, &burstable(), &snap));
        let mut limits_only = pod();
        let mut c = container(&[]);
        c.resources.limits = list(&[("memory", "1Gi")]);
        limits_only.spec.init_containers = vec![c];
        assert!(skips(&p, &limits_only, &snap));
        // Zero and non-cpu/memory requests keep the pod best-effort.
        let mut zero = pod();
        zero.spec.containers = vec![container(&[("cpu", "0"), ("nvidia.com/gpu", "1")])];
        assert_eq!(filter(&p, &zero, &snap, 1), Err(Reason::MemoryPressure));
        assert_eq!(
            messages(Reason::MemoryPressure, &zero, &snap, 1),
            vec!["node(s) had memory pressure"]
        );
    }

    // kube: predicates_test.go TestPodSchedulesOnNodeWithDiskPressureCondition and
    // TestPodSchedulesOnNodeWithPIDPressureCondition.
    #[test]
    fn disk_and_pid_pressure() {
        let snap = snapshot(
            vec![
                with_conditions("ok", &[("DiskPressure", "False"), ("PIDPressure", "False")]),
                with_conditions("disk", &[("DiskPressure", "True")]),
                with_conditions("pid", &[("PIDPressure", "True")]),
            ],
            vec![],
        );
        assert_eq!(
            filter_all(&CheckNodeDiskPressure, &burstable(), &snap),
            vec![Ok(()), Err(Reason::DiskPressure), Ok(())]
        );
        assert_eq!(
            filter_all(&CheckNodePIDPressure, &best_effort(), &snap),
            vec![Ok(()), Ok(()), Err(Reason::PidPressure)]
        );
        assert_eq!(
            messages(Reason::DiskPressure, &pod(), &snap, 1),
            vec!["node(s) had disk pressure"]
        );
        assert_eq!(
            messages(Reason::PidPressure, &pod(), &snap, 2),
            vec!["node(s) had pid pressure"]
        );
    }
}
