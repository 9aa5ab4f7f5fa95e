//! The per-node numbers the scheduler's fused passes read, kept by the snapshot beside each
//! node's [`NodeSummary`] and derived from it on every change: [`NodeFree`] (what a node has
//! free, 32 bytes, for filtering) and [`LoadColumns`] (requested and allocatable CPU and
//! memory as `f64` columns, for the scoring kernel). Crate-private: the layout is free to
//! change.

use super::NodeSummary;

/// Capacities in `1..=2^46`: every ratio below 1 is then at least `2^-46` from 1, and every
/// product in the quotient corrections below 2^53.
pub(crate) const EXACT_CAPACITY: i64 = 1 << 46;

/// Requests (a node's, a pod's) in `0..=2^52`: their sums are below 2^53, exact in `f64`.
pub(crate) const EXACT_REQUEST: i64 = 1 << 52;

/// What a node has free, as the fast filters read it: 32 bytes, two nodes per cache line.
/// The snapshot keeps one per node, derived from its [`NodeSummary`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
#[non_exhaustive]
pub(crate) struct NodeFree {
    /// Allocatable minus requested milli-CPU (wrapping, as the resource check computes it).
    pub free_milli_cpu: i64,
    /// Allocatable minus requested memory bytes (wrapping).
    pub free_memory: i64,
    /// Allocatable minus requested ephemeral storage bytes (wrapping).
    pub free_ephemeral: i64,
    /// Allocatable pods minus pods on the node, saturated to the `i32` range (which keeps its
    /// comparison with 1 exact).
    pub free_pods: i32,
    /// The summary's [`crate::snapshot::flags`], and in the high 16 bits the affinity
    /// index's flags (a node whose domain holds a pod that a required pod affinity term
    /// counts).
    pub flags: u32,
}

const _: () = assert!(std::mem::size_of::<NodeFree>() == 32);

impl NodeFree {
    /// The free numbers of a summary.
    pub fn of(s: &NodeSummary) -> NodeFree {
        let free_pods = s
            .alloc_pods
            .saturating_sub(i64::from(s.pod_count))
            .clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        NodeFree {
            free_milli_cpu: s.alloc_milli_cpu.wrapping_sub(s.req_milli_cpu),
            free_memory: s.alloc_memory.wrapping_sub(s.req_memory),
            free_ephemeral: s.alloc_ephemeral.wrapping_sub(s.req_ephemeral),
            free_pods,
            flags: s.flags,
        }
    }
}

/// What the nodes have requested and allocatable, as the fast scores read it: one column
/// per number and resource (CPU, then memory), index-aligned with the snapshot's nodes, in
/// `f64`, so that scoring runs over consecutive nodes in SIMD lanes. The snapshot keeps it,
/// derived from each node's [`NodeSummary`].
///
/// A node's numbers are exact when it is in the exact range: allocatable in `1..=2^46` and
/// requested in `0..=2^52` for both resources. Outside it, its allocatable reads -1 and its
/// reciprocals 0, and scoring uses kube's formulas on the summary's integers.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LoadColumns {
    /// Non-zero requested milli-CPU and memory bytes.
    pub(crate) nz: [Vec<f64>; 2],
    /// Requested (actual) milli-CPU and memory bytes.
    pub(crate) req: [Vec<f64>; 2],
    /// Allocatable milli-CPU and memory bytes; -1 outside the exact range (a sign bit the
    /// kernel reads in one instruction).
    pub(crate) alloc: [Vec<f64>; 2],
    /// `1 / alloc`, so that scoring multiplies where kube divides (and corrects the result
    /// where that could differ); zero outside the exact range.
    pub(crate) inv: [Vec<f64>; 2],
}

impl LoadColumns {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nz[0].len()
    }

    /// The numbers of a summary.
    fn numbers(s: &NodeSummary) -> [[f64; 2]; 4] {
        let exact = (1..=EXACT_CAPACITY).contains(&s.alloc_milli_cpu)
            && (1..=EXACT_CAPACITY).contains(&s.alloc_memory)
            && (0..=EXACT_REQUEST).contains(&s.nz_milli_cpu)
            && (0..=EXACT_REQUEST).contains(&s.nz_memory)
            && (0..=EXACT_REQUEST).contains(&s.req_milli_cpu)
            && (0..=EXACT_REQUEST).contains(&s.req_memory);
        let alloc = [s.alloc_milli_cpu as f64, s.alloc_memory as f64];
        let nz = [s.nz_milli_cpu as f64, s.nz_memory as f64];
        let req = [s.req_milli_cpu as f64, s.req_memory as f64];
        if exact {
            [nz, req, alloc, [1.0 / alloc[0], 1.0 / alloc[1]]]
        } else {
            [nz, req, [-1.0; 2], [0.0; 2]]
        }
    }

    /// Appends a node.
    pub(crate) fn push(&mut self, s: &NodeSummary) {
        let [nz, req, alloc, inv] = Self::numbers(s);
        for r in 0..2 {
            self.nz[r].push(nz[r]);
            self.req[r].push(req[r]);
            self.alloc[r].push(alloc[r]);
            self.inv[r].push(inv[r]);
        }
    }

    /// Sets node `i` from its summary.
    pub(crate) fn set(&mut self, i: usize, s: &NodeSummary) {
        let [nz, req, alloc, inv] = Self::numbers(s);
        for r in 0..2 {
            self.nz[r][i] = nz[r];
            self.req[r][i] = req[r];
            self.alloc[r][i] = alloc[r];
            self.inv[r][i] = inv[r];
        }
    }

    /// Removes node `i`.
    pub(crate) fn remove(&mut self, i: usize) {
        for r in 0..2 {
            self.nz[r].remove(i);
            self.req[r].remove(i);
            self.alloc[r].remove(i);
            self.inv[r].remove(i);
        }
    }

    /// Reserves room for `n` more nodes.
    pub(crate) fn reserve(&mut self, n: usize) {
        for c in [&mut self.nz, &mut self.req, &mut self.alloc, &mut self.inv] {
            c[0].reserve(n);
            c[1].reserve(n);
        }
    }
}
