//! The fast path: what a built-in plugin does for one pod, described as data the scheduler
//! evaluates itself in fused passes over the snapshot's per-node columns.
//!
//! For most pods the built-in predicates and priorities look at nothing but a node's numbers:
//! free CPU, memory and pod slots, a few flags, the non-zero requests. For such a pod a
//! built-in describes its per-node work as a [`FastFilter`] or a [`FastScore`] (through the
//! hidden, sealed `fast_filter` / `fast_score` methods of the plugin traits). The profile then
//! evaluates them itself instead of calling each plugin on each batch of nodes:
//! - filtering is one pass over the snapshot's `NodeFree` rows (32 bytes per node) with all
//!   fast filters combined into one;
//! - scoring is one branch-free kernel (`profile::kernel`) over the snapshot's `LoadColumns`
//!   for the span of consecutive nodes the feasible ones lie in, which the compiler runs in
//!   SIMD lanes (four nodes per instruction where the CPU has AVX2, detected at run time),
//!   compiled for the exact set of formulas present; the results are then gathered in
//!   feasible order, weighted, and offered to the host selection in the same pass.
//!
//! The answers are exactly the plugins' own. A fast filter checks the same conditions as the
//! predicate's `filter` on the same numbers; a node that fails gets its reason from the
//! predicates' `filter` (only when no node fits, the only time reasons are read). The fast
//! scores multiply by per-node reciprocals where kube divides and then make each result
//! exact, or leave the node to kube's own formulas (the kernel's documentation carries the
//! argument). Everything here is crate-private: a custom plugin always runs through its own
//! `filter` and `score`. `tests/fast_path.rs` checks on random clusters that pipelines with and
//! without the fast path decide alike.

use crate::formulas::{
    average_of, balanced_score, balanced_score_v1_34, least_requested_score, most_requested_score,
};
use crate::snapshot::{NodeFree, NodeSummary};

/// Seals the fast-path methods of [`crate::framework::Predicate`] and
/// [`crate::framework::Priority`]: only this crate can name this type, so only the built-in
/// plugins can override those methods or call them.
#[derive(Clone, Copy, Debug)]
pub struct Sealed(());

/// The seal, for the crate's own calls.
pub(crate) const SEALED: Sealed = Sealed(());

/// What a predicate checks for one pod, when that needs only a node's [`NodeFree`]: the node
/// passes exactly when none of `flags` is set, all of `required_flags` are, and the pod's CPU,
/// memory and ephemeral storage requests (and one more pod, when counted) fit in what is free.
/// Several fast filters combine into one with [`FastFilter::and`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastFilter {
    flags: u32,
    required_flags: u32,
    min_free_pods: i32,
    milli_cpu: i64,
    memory: i64,
    ephemeral: i64,
}

impl FastFilter {
    /// Passes every node.
    pub(crate) const ALL: FastFilter = FastFilter {
        flags: 0,
        required_flags: 0,
        min_free_pods: i32::MIN,
        milli_cpu: i64::MIN,
        memory: i64::MIN,
        ephemeral: i64::MIN,
    };

    /// Fails the nodes with any of these summary flags.
    pub(crate) fn without_flags(flags: u32) -> FastFilter {
        FastFilter {
            flags,
            ..FastFilter::ALL
        }
    }

    /// Fails the nodes without all of these flags.
    pub(crate) fn with_flags(flags: u32) -> FastFilter {
        FastFilter {
            flags,
            required_flags: flags,
            ..FastFilter::ALL
        }
    }

    /// PodFitsResources' summary part: one more pod must fit and, unless the pod requests
    /// nothing (`requests` is `None`), its CPU, memory and ephemeral storage requests.
    pub(crate) fn fits(requests: Option<(i64, i64, i64)>) -> FastFilter {
        let (milli_cpu, memory, ephemeral) = requests.unwrap_or((i64::MIN, i64::MIN, i64::MIN));
        FastFilter {
            flags: 0,
            required_flags: 0,
            min_free_pods: 1,
            milli_cpu,
            memory,
            ephemeral,
        }
    }

    /// The filter that passes a node exactly when both pass it, provided no flag is required
    /// by one and forbidden by the other (the combined form would read it as required; the one
    /// filter that requires flags, inter-pod affinity's, never forbids one it requires).
    #[must_use]
    pub fn and(self, other: FastFilter) -> FastFilter {
        FastFilter {
            flags: self.flags | other.flags,
            required_flags: self.required_flags | other.required_flags,
            min_free_pods: self.min_free_pods.max(other.min_free_pods),
            milli_cpu: self.milli_cpu.max(other.milli_cpu),
            memory: self.memory.max(other.memory),
            ephemeral: self.ephemeral.max(other.ephemeral),
        }
    }

    /// Whether the filter reads only flags that a node's pods never set (its conditions,
    /// taints, `unschedulable`, images): then the numbers of a node with some pods taken off
    /// ([`NodeFree::of`] its summary with their requests and count subtracted) say whether a
    /// pod fits there, as preemption's dry run asks.
    pub(crate) fn reads_only_node_flags(&self) -> bool {
        use crate::snapshot::flags::*;
        const NODE: u32 = UNSCHEDULABLE
            | HARD_TAINTS
            | NOT_READY
            | NETWORK_UNAVAILABLE
            | MEMORY_PRESSURE
            | DISK_PRESSURE
            | PID_PRESSURE
            | PREFER_AVOID_PODS
            | IMAGES
            | ANY_TAINTS;
        self.flags & !NODE == 0
    }

    /// Whether the node passes. Branch-free, so a loop over nodes runs at the speed of its
    /// loads.
    #[inline(always)]
    pub(crate) fn passes(&self, n: &NodeFree) -> bool {
        // `flags` holds the required flags too; flipping them first makes "set" pass.
        (((n.flags ^ self.required_flags) & self.flags) == 0)
            & (n.free_pods >= self.min_free_pods)
            & (self.milli_cpu <= n.free_milli_cpu)
            & (self.memory <= n.free_memory)
            & (self.ephemeral <= n.free_ephemeral)
    }
}

/// Which formula a [`FastScore`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FormulaKind {
    /// LeastRequestedPriority.
    LeastRequested,
    /// MostRequestedPriority.
    MostRequested,
    /// BalancedResourceAllocation.
    Balanced,
    /// NodeResourcesBalancedAllocation (kube v1.34: actual requests, fractions capped at 1).
    BalancedV1_34,
}

/// What a priority scores for one pod, when that needs only a node's load numbers (`LoadColumns`) and no
/// normalization: LeastRequestedPriority and MostRequestedPriority with kube's default
/// resources, and BalancedResourceAllocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastScore {
    pub(crate) kind: FormulaKind,
    pub(crate) milli_cpu: i64,
    pub(crate) memory: i64,
}

impl FastScore {
    /// LeastRequestedPriority (cpu and memory, weight 1 each) for a pod with these non-zero
    /// requests.
    pub(crate) fn least_requested(milli_cpu: i64, memory: i64) -> FastScore {
        FastScore {
            kind: FormulaKind::LeastRequested,
            milli_cpu,
            memory,
        }
    }

    /// MostRequestedPriority (cpu and memory, weight 1 each).
    pub(crate) fn most_requested(milli_cpu: i64, memory: i64) -> FastScore {
        FastScore {
            kind: FormulaKind::MostRequested,
            milli_cpu,
            memory,
        }
    }

    /// BalancedResourceAllocation.
    pub(crate) fn balanced(milli_cpu: i64, memory: i64) -> FastScore {
        FastScore {
            kind: FormulaKind::Balanced,
            milli_cpu,
            memory,
        }
    }

    /// NodeResourcesBalancedAllocation over CPU and memory, for a pod with these actual
    /// requests.
    pub(crate) fn balanced_v1_34(milli_cpu: i64, memory: i64) -> FastScore {
        FastScore {
            kind: FormulaKind::BalancedV1_34,
            milli_cpu,
            memory,
        }
    }

    /// The node's final score (0..=100 for any realistic node; kube's formulas, which can
    /// leave that range on absurd input, otherwise).
    pub fn score(&self, s: &NodeSummary) -> i64 {
        // One node: kube's formulas as they are (no kernel, no allocation). The kernel gives
        // the same scores (the tests below compare them).
        if self.kind == FormulaKind::BalancedV1_34 {
            return balanced_v1_34_general(s, self.milli_cpu, self.memory);
        }
        let [l, m, b] = general_scores::<true, true, true>(s, self.milli_cpu, self.memory);
        match self.kind {
            FormulaKind::LeastRequested => l,
            FormulaKind::MostRequested => m,
            FormulaKind::Balanced => b,
            FormulaKind::BalancedV1_34 => unreachable!("handled above"),
        }
    }
}

/// kube v1.34's balanced score by its formula, from the summary's actual requests.
pub(crate) fn balanced_v1_34_general(s: &NodeSummary, pod_milli_cpu: i64, pod_memory: i64) -> i64 {
    balanced_score_v1_34(
        s.req_milli_cpu.wrapping_add(pod_milli_cpu),
        s.alloc_milli_cpu,
        s.req_memory.wrapping_add(pod_memory),
        s.alloc_memory,
    )
}

/// The same scores by kube's formulas as they are, from the summary's integers.
pub(crate) fn general_scores<const LEAST: bool, const MOST: bool, const BALANCED: bool>(
    s: &NodeSummary,
    pod_milli_cpu: i64,
    pod_memory: i64,
) -> [i64; 3] {
    let cpu = s.nz_milli_cpu.wrapping_add(pod_milli_cpu);
    let memory = s.nz_memory.wrapping_add(pod_memory);
    let (cpu_alloc, memory_alloc) = (s.alloc_milli_cpu, s.alloc_memory);
    let mut out = [0; 3];
    if LEAST {
        out[0] = average_of(least_requested_score, cpu, cpu_alloc, memory, memory_alloc);
    }
    if MOST {
        out[1] = average_of(most_requested_score, cpu, cpu_alloc, memory, memory_alloc);
    }
    if BALANCED {
        out[2] = balanced_score(cpu, cpu_alloc, memory, memory_alloc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_is_the_conjunction_of_its_parts() {
        let fit = NodeFree {
            free_milli_cpu: 1000,
            free_memory: 10,
            free_ephemeral: 0,
            free_pods: 1,
            flags: 0b100,
        };
        assert!(FastFilter::ALL.passes(&fit));
        assert!(FastFilter::fits(Some((1000, 10, 0))).passes(&fit));
        assert!(!FastFilter::fits(Some((1001, 10, 0))).passes(&fit));
        assert!(!FastFilter::fits(Some((0, 0, 1))).passes(&fit));
        assert!(FastFilter::fits(None).passes(&fit));
        assert!(!FastFilter::fits(None).passes(&NodeFree {
            free_pods: 0,
            ..fit
        }));
        assert!(!FastFilter::without_flags(0b110).passes(&fit));
        assert!(FastFilter::without_flags(0b010).passes(&fit));
        let both = FastFilter::without_flags(0b010).and(FastFilter::fits(Some((2000, 0, 0))));
        assert!(!both.passes(&fit));
        assert!(both.passes(&NodeFree {
            free_milli_cpu: 2000,
            ..fit
        }));
    }
}
