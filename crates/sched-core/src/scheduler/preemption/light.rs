//! kube's `SelectVictimsOnNode` on a node's numbers, for a pod whose predicates all have a
//! [`FastFilter`] reading only the node's own flags ([`Profile::preemption_plan`]): such
//! predicates decide on what the node has free, so taking a pod off or putting it back is a
//! subtraction or an addition of its requests and one pod slot, and the snapshot is only
//! read. The same victims as the dry run on the snapshot ([`super::victims_on`]): the same
//! pods removed, in the same order of importance, reprieved in the same order, each fit
//! decided by the same conditions on the same numbers.
//!
//! [`Profile::preemption_plan`]: crate::profile::Profile

use super::{Environment, OnNode, more_important_info, priority};
use crate::fast_path::FastFilter;
use crate::model::{Pod, Resources};
use crate::scheduler::pdb::violation_flags;
use crate::snapshot::{NodeFree, NodeSummary, PodInfo, Snapshot};

/// What the dry run reuses from node to node.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Positions (in the node's pods) of the pods that may be removed, then sorted most
    /// important first.
    removable: Vec<usize>,
    /// Whether removing each pod of `removable` violates a PodDisruptionBudget.
    violates: Vec<bool>,
    /// Positions in `removable` of the victims.
    victims: Vec<usize>,
}

/// A node's summary with some of its pods taken off: their requests and their slots freed.
struct Freed {
    summary: NodeSummary,
    /// The node's filter flags (those its pods set are never read).
    flags: u32,
}

impl Freed {
    fn of(snapshot: &Snapshot, index: usize) -> Freed {
        Freed {
            summary: snapshot.summaries()[index],
            flags: snapshot.free()[index].flags,
        }
    }

    /// Takes a pod's requests off, as the node's sums are kept (wrapping).
    fn remove(&mut self, r: &Resources) {
        let s = &mut self.summary;
        s.req_milli_cpu = s.req_milli_cpu.wrapping_sub(r.milli_cpu);
        s.req_memory = s.req_memory.wrapping_sub(r.memory);
        s.req_ephemeral = s.req_ephemeral.wrapping_sub(r.ephemeral_storage);
        s.pod_count = s.pod_count.wrapping_sub(1);
    }

    /// Puts a pod's requests back; `false` (nothing changed) when a sum would pass the
    /// int64 bounds, where the snapshot refuses the pod.
    fn add(&mut self, r: &Resources) -> bool {
        let s = &mut self.summary;
        let (Some(cpu), Some(memory), Some(ephemeral)) = (
            s.req_milli_cpu.checked_add(r.milli_cpu),
            s.req_memory.checked_add(r.memory),
            s.req_ephemeral.checked_add(r.ephemeral_storage),
        ) else {
            return false;
        };
        (s.req_milli_cpu, s.req_memory, s.req_ephemeral) = (cpu, memory, ephemeral);
        s.pod_count = s.pod_count.wrapping_add(1);
        true
    }

    fn passes(&self, filter: &FastFilter) -> bool {
        let mut row = NodeFree::of(&self.summary);
        row.flags = self.flags;
        filter.passes(&row)
    }
}

/// [`super::victims_on`] for the node at `index` on its numbers (`filter`: the pod's
/// predicates, [`Profile::preemption_plan`]); the pods nominated there hold nothing for
/// `pod`, and no PodGroup budget applies. [`OnNode::UnfitUnexplained`] when the pod does
/// not fit with every removable pod gone.
///
/// [`Profile::preemption_plan`]: crate::profile::Profile
pub(super) fn victims_on(
    snapshot: &Snapshot,
    pod: &Pod,
    index: usize,
    env: &Environment<'_>,
    filter: &FastFilter,
    scratch: &mut Scratch,
) -> OnNode {
    let pods: &[PodInfo] = snapshot.node_infos()[index].pods();
    let mut freed = Freed::of(snapshot, index);
    let Scratch {
        removable,
        violates,
        victims,
    } = scratch;
    removable.clear();
    victims.clear();
    let own = priority(pod);
    for (k, p) in pods.iter().enumerate() {
        if p.priority() < own && !env.is_protected(p.key()) {
            removable.push(k);
            freed.remove(p.requests());
        }
    }
    if removable.is_empty() {
        return OnNode::NoVictims;
    }
    if !freed.passes(filter) {
        return OnNode::UnfitUnexplained;
    }
    // Stable, as the snapshot's dry run sorts the pods it took in the node's order.
    removable.sort_by(|&a, &b| more_important_info(&pods[a], &pods[b]));
    violates.clear();
    if env.pdbs.is_empty() {
        violates.resize(removable.len(), false);
    } else {
        violates.extend(violation_flags(
            removable.iter().map(|&k| pods[k].pod()),
            env.pdbs,
        ));
    }
    // The reprieve: budget-violating pods first, then the others, most important first.
    for first in [true, false] {
        for (j, &k) in removable.iter().enumerate() {
            if violates[j] != first {
                continue;
            }
            let requests = pods[k].requests();
            if !freed.add(requests) {
                victims.push(j);
            } else if !freed.passes(filter) {
                freed.remove(requests);
                victims.push(j);
            }
        }
    }
    // Most important first, as kube lists them.
    victims.sort_unstable();
    let violations = victims.iter().filter(|&&j| violates[j]).count();
    let pods = victims
        .iter()
        .map(|&j| pods[removable[j]].pod_arc().clone())
        .collect();
    OnNode::Victims(pods, violations)
}
