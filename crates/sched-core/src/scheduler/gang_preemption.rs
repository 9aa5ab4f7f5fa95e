//! Preemption for a gang as a whole: a member of a PodGroup preempts only if, once every
//! victim the group needs is taken, each member still missing to reach `minMember` has a node.
//!
//! scheduler-plugins' Coscheduling has no PostFilter of this kind: its PostFilter only rejects
//! a group's waiting members when one of them fits nowhere, and kube's DefaultPreemption runs
//! for each member alone, so a gang can evict pods for its first members and still never
//! reach `minMember`. Here, when DefaultPreemption nominates a node for a member of a group
//! that misses more than that member, the engine builds a plan on a copy of the snapshot:
//! the candidate's victims are removed and the member assumed on its node; then the other
//! pending members it needs (in queue order) are each scheduled on the copy, or, where none
//! fits, preempt on it as DefaultPreemption would (their victims removed, the member assumed
//! on the chosen node). If every missing member gets a node, the victims of the whole plan are
//! deleted at once and the member is nominated to its node (the others are placed when their
//! turn comes, on the room made for them); otherwise no pod is deleted and the member is
//! unschedulable, its PostFilter message saying the gang would not fit.

use std::sync::Arc;

use super::preemption::{self, Candidate, Environment, Outcome};
use crate::model::{Pod, PodKey};
use crate::profile::{Profile, ScheduleError};
use crate::snapshot::Snapshot;

/// The pending members a member's group still needs besides it.
#[derive(Clone, Debug)]
pub(crate) struct Missing {
    /// The group, `namespace/name`.
    pub(crate) group: String,
    /// How many members it needs besides the preemptor to reach `minMember`.
    pub(crate) needed: usize,
    /// Its pending members (not gated, not placed), the preemptor left out, in queue order.
    pub(crate) pending: Vec<Pod>,
}

/// A plan that places every missing member: the victims beyond the first candidate's, and
/// the node of each member.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// The other members' victims.
    pub(crate) victims: Vec<Arc<Pod>>,
    /// Each other member and its node.
    pub(crate) nodes: Vec<(PodKey, String)>,
}

/// Why a gang would not fit: the group and what stopped the plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum GangUnfit {
    /// Fewer members are pending than the group misses.
    #[error(
        "the gang {group} would not fit: it misses {needed} more members but {pending} are pending"
    )]
    TooFewPending {
        /// The group, `namespace/name`.
        group: String,
        /// Members it needs besides the preemptor.
        needed: usize,
        /// Members pending.
        pending: usize,
    },
    /// A member finds no node even with lower-priority pods preempted.
    #[error(
        "the gang {group} would not fit: member {member} finds no node even with preemption ({why})"
    )]
    Member {
        /// The group, `namespace/name`.
        group: String,
        /// The member, `namespace/name`.
        member: PodKey,
        /// Why: the member's preemption outcome or error.
        why: String,
    },
}

/// Plans a gang's preemption on a copy of `snapshot`: `first` (DefaultPreemption's choice for
/// the member `preemptor`) taken, then each of `missing.needed` pending members placed or preempting for
/// itself with `args` and `env`. See the module docs.
///
/// # Errors
/// [`GangUnfit`] when some missing member finds no node.
pub(crate) fn plan(
    profile: &Profile,
    snapshot: &Snapshot,
    (preemptor, first): (&Pod, &Candidate),
    missing: &Missing,
    args: (i32, i32),
    offset: &mut dyn FnMut(usize) -> usize,
    env: &Environment<'_>,
) -> Result<Plan, GangUnfit> {
    if missing.pending.len() < missing.needed {
        return Err(GangUnfit::TooFewPending {
            group: missing.group.clone(),
            needed: missing.needed,
            pending: missing.pending.len(),
        });
    }
    let unfit = |member: &Pod, why: String| GangUnfit::Member {
        group: missing.group.clone(),
        member: member.key(),
        why,
    };
    let mut work = snapshot.clone();
    take(&mut work, &first.victims);
    work.assume(preemptor.clone(), &first.node)
        .map_err(|e| unfit(preemptor, e.to_string()))?;
    let mut out = Plan::default();
    let mut cache = profile.create_cache();
    for member in missing.pending.iter().take(missing.needed) {
        let node = match env
            .nominator()
            .schedule(profile, &mut cache, member, &mut work)
        {
            Ok(r) => r.node,
            Err(ScheduleError::Unschedulable(error)) => {
                match preemption::preempt(profile, &mut work, member, &error, args, offset, env) {
                    Ok(Outcome::Preempt(c)) => {
                        take(&mut work, &c.victims);
                        out.victims.extend(c.victims);
                        c.node
                    }
                    Ok(o) => return Err(unfit(member, o.message())),
                    Err(e) => return Err(unfit(member, e.to_string())),
                }
            }
            Err(e) => return Err(unfit(member, e.to_string())),
        };
        work.assume(member.clone(), &node)
            .map_err(|e| unfit(member, e.to_string()))?;
        out.nodes.push((member.key(), node));
    }
    Ok(out)
}

/// Removes `victims` from `snapshot` (those already gone are skipped).
fn take(snapshot: &mut Snapshot, victims: &[Arc<Pod>]) {
    for v in victims {
        let _ = snapshot.remove_pod(&v.key());
    }
}

/// Applies the gang's plan to DefaultPreemption's outcome `out` for one of its members (the
/// profile `state`'s preemption arguments): the plan's victims join the candidate's, and the
/// nodes planned for the other members are returned; or, when the gang would not fit, no
/// victim is taken and the message says why.
pub(crate) fn apply(
    state: &super::Slot,
    snapshot: &Snapshot,
    preemptor: &Pod,
    missing: &Missing,
    offset: &mut dyn FnMut(usize) -> usize,
    env: &Environment<'_>,
    out: &mut super::post_filter::PostFilterOutcome,
) -> Vec<(PodKey, String)> {
    let Some(Ok(Outcome::Preempt(c))) = &mut out.preemption else {
        return Vec::new();
    };
    let args = state.post_filter.preemption_args().unwrap_or((10, 100));
    match plan(
        &state.profile,
        snapshot,
        (preemptor, c),
        missing,
        args,
        offset,
        env,
    ) {
        Ok(plan) => {
            c.victims.extend(plan.victims);
            plan.nodes
        }
        Err(unfit) => {
            out.message = format!("preemption: {unfit}");
            out.preemption = Some(Ok(Outcome::NoCandidate(preemption::NoCandidate {
                num_all_nodes: snapshot.len(),
                failures: Vec::new(),
            })));
            Vec::new()
        }
    }
}
