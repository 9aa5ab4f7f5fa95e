//! Gang scheduling: kubernetes-sigs/scheduler-plugins' Coscheduling (`pkg/coscheduling`), as an
//! engine component ([`Scheduler::with_coscheduling`](super::Scheduler::with_coscheduling)).
//!
//! Pods join the [`PodGroup`] named by their [`POD_GROUP_LABEL`](crate::model::POD_GROUP_LABEL)
//! label in their namespace, or, without the label, the pod group of a kube Workload their
//! `spec.workloadRef` names ([`crate::model::SchedulingWorkload`], read into PodGroups). What Coscheduling does at each point, as scheduler-plugins
//! defines it (`coscheduling.go`, `core/core.go`):
//!
//! - **QueueSort** ([`Coscheduling::less`]): priority (higher first), then the group's creation
//!   time (a pod without a group: the time it was first queued), then the pod's
//!   `namespace/name`; so a group's pods leave the queue one after another.
//! - **PreFilter** ([`Coscheduling::pre_filter`]): a pod of a group that failed recently (backed
//!   off by PostFilter) is refused, as is one whose group has fewer pods in total than
//!   `minMember`, or whose `minResources` (plus `minMember` pods) the cluster's free resources
//!   cannot hold ([`check_cluster_resource`]; a group that passed is not checked again for
//!   `permitWaitingTimeSeconds`). The refusal is unresolvable: no preemption for it.
//! - **Permit** ([`Coscheduling::permit`]): the members already assumed or bound, plus this
//!   one, reach `minMember`: every waiting member is allowed, and this one goes on. Otherwise
//!   it waits, at most the group's `scheduleTimeoutSeconds` (else `permitWaitingTimeSeconds`,
//!   60 s by default); the first member to wait moves its siblings to activeQ.
//! - **Unreserve** (any release of a member: its Permit timeout, a rejection, a failed bind, its
//!   deletion): every waiting member of the group is rejected ("rejection in Unreserve") and
//!   goes back to the unschedulable pool; the group must pass the resource check again.
//! - **PostFilter** ([`Coscheduling::post_filter`]): when a member fits nowhere and the group
//!   has fewer than `minMember` members assigned, with more than 10 % of `minMember` missing,
//!   every waiting member is rejected ("optimistic rejection in PostFilter"), and with a
//!   `podGroupBackoffSeconds` the group is backed off (PreFilter refuses it meanwhile).
//!
//! Beyond scheduler-plugins (whose Coscheduling does not guard its groups against preemption
//! nor preempt for a group as a whole):
//!
//! - **Budgets** ([`Coscheduling::budgets`], [`GroupBudgets`]): one preemption takes at most
//!   `placed - minMember` members of a group (none of a group with no more than `minMember`
//!   placed), as a PodDisruptionBudget that may not be broken: on each node, the group's
//!   members beyond its budget are reprieved before the fit check, its most important first;
//!   a node where the preemptor then does not fit is no candidate.
//! - **Preemption for the whole gang** (`scheduler::gang_preemption`): a member that preempts
//!   while its group misses other members to reach `minMember` does so only if, on a copy of
//!   the snapshot with its victims gone, each missing member (pending, in queue order) fits or
//!   finds its own preemption candidate; then every victim of the plan is deleted in one
//!   [`Step::Preempt`](super::Step::Preempt) and the member is nominated. Otherwise nothing is
//!   deleted, and its PostFilter message says "preemption: the gang ... would not fit: ...".
//!
//! Where the engine differs: a group's creation time is the engine time of its first
//! [`Object::PodGroup`](super::Object::PodGroup) add event (the engine's clock is not
//! the API server's); a pod's "initial attempt" time is when it was first queued.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use super::EventMask;
use crate::model::{Pod, PodGroup, PodKey, ResourceList, Resources, pod_group_of};
use crate::snapshot::Snapshot;

/// The plugin name Coscheduling holds pods under at Permit, and rejects them with.
pub const COSCHEDULING: &str = "Coscheduling";

/// The events Coscheduling registers (scheduler-plugins' `EventsToRegister`: a pod added, a
/// PodGroup added or changed): a pod it rejected waits for one of them.
pub const EVENTS: EventMask = EventMask(EventMask::POD_GROUP.0 | EventMask::ASSIGNED_POD_ADD.0);

/// scheduler-plugins' `DefaultWaitTime`: the Permit wait when nothing else is set.
pub const DEFAULT_WAIT_TIME: Duration = Duration::from_secs(60);

/// Coscheduling's arguments (scheduler-plugins' `CoschedulingArgs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoschedulingArgs {
    /// `permitWaitingTimeSeconds` (default 60 s): how long members wait at Permit when their
    /// group sets no `scheduleTimeoutSeconds`, and how long a group that passed PreFilter's
    /// resource check is not checked again.
    pub permit_waiting_time: Duration,
    /// `podGroupBackoffSeconds` (default 0: none): how long PreFilter refuses a group that
    /// PostFilter rejected.
    pub pod_group_backoff: Duration,
}

impl Default for CoschedulingArgs {
    fn default() -> Self {
        CoschedulingArgs {
            permit_waiting_time: DEFAULT_WAIT_TIME,
            pod_group_backoff: Duration::ZERO,
        }
    }
}

impl CoschedulingArgs {
    /// These arguments with `podGroupBackoffSeconds`.
    #[must_use]
    pub fn with_pod_group_backoff(mut self, backoff: Duration) -> CoschedulingArgs {
        self.pod_group_backoff = backoff;
        self
    }

    /// These arguments with `permitWaitingTimeSeconds`.
    #[must_use]
    pub fn with_permit_waiting_time(mut self, wait: Duration) -> CoschedulingArgs {
        self.permit_waiting_time = wait;
        self
    }
}

/// What Coscheduling's Permit says of a pod (scheduler-plugins' `core.Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermitStatus {
    /// The pod has no group label: Coscheduling allows it.
    PodGroupNotSpecified,
    /// The pod names a group that does not exist: rejected ("PodGroup not found").
    PodGroupNotFound,
    /// Fewer than `minMember` members assigned with this one: it waits.
    Wait,
    /// `minMember` reached: it and every waiting member are allowed.
    Success,
}

/// What Coscheduling's PostFilter decided for a pod no node takes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostFilterStatus {
    /// The status message ("" where scheduler-plugins returns a bare Unschedulable).
    pub message: String,
    /// The group whose waiting members are rejected, if it is rejected.
    pub reject_group: Option<String>,
}

/// A PodGroup and when the engine first saw it.
#[derive(Clone, Debug)]
struct Group {
    pod_group: PodGroup,
    created: Duration,
}

/// scheduler-plugins' Coscheduling: the PodGroups, their members, and the caches of groups
/// that passed the resource check and of groups backed off. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Coscheduling {
    args: CoschedulingArgs,
    groups: BTreeMap<String, Group>,
    /// Pods by the group their label names, pending or bound.
    members: HashMap<String, BTreeSet<PodKey>>,
    /// The group each member's label names.
    group_of: HashMap<PodKey, String>,
    /// `permittedPG`: groups that passed the resource check, until then.
    permitted: HashMap<String, Duration>,
    /// `backedOffPG`: groups PreFilter refuses, until then.
    backed_off: HashMap<String, Duration>,
}

impl Coscheduling {
    /// Coscheduling with these arguments.
    pub fn new(args: CoschedulingArgs) -> Coscheduling {
        Coscheduling {
            args,
            ..Coscheduling::default()
        }
    }

    /// The arguments.
    pub fn args(&self) -> &CoschedulingArgs {
        &self.args
    }

    /// Adds or replaces a PodGroup seen at `now`; its creation time is the first add's.
    /// Returns whether it is new.
    pub fn upsert_group(&mut self, pod_group: PodGroup, now: Duration) -> bool {
        let key = pod_group.key();
        match self.groups.get_mut(&key) {
            Some(g) => {
                g.pod_group = pod_group;
                false
            }
            None => {
                self.groups.insert(
                    key,
                    Group {
                        pod_group,
                        created: now,
                    },
                );
                true
            }
        }
    }

    /// Removes the PodGroup `key` (`namespace/name`). Returns whether it was there.
    pub fn remove_group(&mut self, key: &str) -> bool {
        self.permitted.remove(key);
        self.backed_off.remove(key);
        self.groups.remove(key).is_some()
    }

    /// The PodGroup `key`.
    pub fn group(&self, key: &str) -> Option<&PodGroup> {
        self.groups.get(key).map(|g| &g.pod_group)
    }

    /// The PodGroups, in key order.
    pub fn groups(&self) -> impl Iterator<Item = &PodGroup> {
        self.groups.values().map(|g| &g.pod_group)
    }

    /// When the engine first saw the group `key`.
    pub fn created(&self, key: &str) -> Option<Duration> {
        self.groups.get(key).map(|g| g.created)
    }

    /// The pods (`namespace/name`) whose label names the group `key`, in key order.
    pub fn members(&self, key: &str) -> impl Iterator<Item = &PodKey> {
        self.members.get(key).into_iter().flatten()
    }

    /// Records a pod (pending or bound) as a member of the group its label names, or as no
    /// member when it has no label (its label may have changed).
    pub fn note_pod(&mut self, pod: &Pod) {
        let key = pod.key();
        let group = pod_group_of(pod);
        if self.group_of.get(&key) == group.as_ref() {
            return;
        }
        self.forget_pod(&key);
        if let Some(g) = group {
            self.members
                .entry(g.clone())
                .or_default()
                .insert(key.clone());
            self.group_of.insert(key, g);
        }
    }

    /// A pod went away: no longer a member.
    pub fn forget_pod(&mut self, key: &str) {
        if let Some(g) = self.group_of.remove(key)
            && let Some(m) = self.members.get_mut(&g)
        {
            m.remove(key);
            if m.is_empty() {
                self.members.remove(&g);
            }
        }
    }

    /// The group of pod `key` by its label, as recorded.
    pub fn group_of_pod(&self, key: &str) -> Option<&str> {
        self.group_of.get(key).map(String::as_str)
    }

    /// The group's pod and its PodGroup, if the pod has the label and the group exists
    /// (scheduler-plugins' `GetPodGroup`, which gives the name either way).
    fn pod_group(&self, pod: &Pod) -> (Option<String>, Option<&PodGroup>) {
        let Some(key) = pod_group_of(pod) else {
            return (None, None);
        };
        let pg = self.group(&key);
        (Some(key), pg)
    }

    /// scheduler-plugins' `CalculateAssignedPods`: members assumed or bound (in the snapshot),
    /// but `except`.
    pub fn assigned(&self, group: &str, snapshot: &Snapshot, except: Option<&str>) -> usize {
        self.members(group)
            .filter(|k| Some(k.as_str()) != except && snapshot.node_of(k).is_some())
            .count()
    }

    /// Each group's preemption budget: a group may lose at most its placed members (assumed
    /// or bound) less `minMember` to one preemption (an addition to scheduler-plugins, whose
    /// Coscheduling does not guard its groups against preemption).
    pub fn budgets(&self) -> GroupBudgets {
        let mut budgets = GroupBudgets::default();
        for (key, g) in &self.groups {
            let Some(members) = self.members.get(key) else {
                continue;
            };
            let index = budgets.min_member.len();
            budgets
                .min_member
                .push(usize::try_from(g.pod_group.spec.min_member.max(0)).unwrap_or(0));
            budgets.members.push(members.iter().cloned().collect());
            for m in members {
                budgets.group_of.insert(m.clone(), index);
            }
        }
        budgets
    }

    /// scheduler-plugins' QueueSort `Less`: whether `a` (a pod and the time it was first
    /// queued) goes before `b`.
    pub fn less(&self, a: (&Pod, Duration), b: (&Pod, Duration)) -> bool {
        self.sort_key(a.0, a.1) < self.sort_key(b.0, b.1)
    }

    /// The order [`Coscheduling::less`] compares: priority (higher first), the group's
    /// creation time or `queued`, the pod's `namespace/name`.
    pub fn sort_key(&self, pod: &Pod, queued: Duration) -> (Reverse<i32>, Duration, PodKey) {
        let time = pod_group_of(pod)
            .and_then(|g| self.created(&g))
            .unwrap_or(queued);
        (Reverse(pod.spec.priority.unwrap_or(0)), time, pod.key())
    }

    /// scheduler-plugins' PreFilter (`PodGroupManager.PreFilter`): `Err` with its message when
    /// the pod's group failed recently, has fewer pods than `minMember`, or its
    /// `minResources` do not fit the cluster's free resources.
    ///
    /// # Errors
    /// The refusal's message (kube's status reason).
    pub fn pre_filter(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
        now: Duration,
    ) -> Result<(), String> {
        let (Some(key), Some(pg)) = self.pod_group(pod) else {
            return Ok(());
        };
        if self.backed_off.get(&key).is_some_and(|&until| until > now) {
            return Err(format!("podGroup {key} failed recently"));
        }
        let pods = self.members.get(&key).map_or(0, BTreeSet::len);
        let min_member = pg.spec.min_member;
        if (pods as i64) < i64::from(min_member) {
            return Err(format!(
                "pre-filter pod {} cannot find enough sibling pods, current pods number: {pods}, \
                 minMember of group: {min_member}",
                pod.metadata.name
            ));
        }
        let Some(min_resources) = &pg.spec.min_resources else {
            return Ok(());
        };
        if self.permitted.get(&key).is_some_and(|&until| until > now) {
            return Ok(());
        }
        let mut request = min_resources.clone();
        request.insert(
            "pods".to_string(),
            crate::model::Quantity::from_value(i64::from(min_member)),
        );
        check_cluster_resource(snapshot, &request, &key)?;
        self.permitted
            .insert(key, now + self.args.permit_waiting_time);
        Ok(())
    }

    /// scheduler-plugins' Permit (`PodGroupManager.Permit`) for `pod` assumed on a node: the
    /// members assumed or bound besides it, plus it, against `minMember`. With
    /// [`PermitStatus::Wait`], whether it is the first member to wait (no member assigned):
    /// its siblings are then moved to activeQ.
    pub fn permit(&self, pod: &Pod, snapshot: &Snapshot) -> (PermitStatus, bool) {
        let (key, pg) = self.pod_group(pod);
        let Some(key) = key else {
            return (PermitStatus::PodGroupNotSpecified, false);
        };
        let Some(pg) = pg else {
            return (PermitStatus::PodGroupNotFound, false);
        };
        let assigned = self.assigned(&key, snapshot, Some(&pod.key()));
        if assigned as i64 + 1 >= i64::from(pg.spec.min_member) {
            return (PermitStatus::Success, false);
        }
        (PermitStatus::Wait, assigned == 0)
    }

    /// How long a member of `group` waits at Permit (scheduler-plugins' `GetWaitTimeDuration`
    /// with the plugin's `permitWaitingTimeSeconds`).
    pub fn wait_time(&self, group: Option<&PodGroup>) -> Duration {
        let from_group = group
            .and_then(|pg| pg.spec.schedule_timeout_seconds)
            .map(|s| Duration::from_secs(s.max(0) as u64));
        match from_group {
            Some(d) if !d.is_zero() => d,
            _ if !self.args.permit_waiting_time.is_zero() => self.args.permit_waiting_time,
            _ => DEFAULT_WAIT_TIME,
        }
    }

    /// scheduler-plugins' PostFilter for `pod`, which no node takes.
    pub fn post_filter(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
        now: Duration,
    ) -> PostFilterStatus {
        let (Some(key), Some(pg)) = self.pod_group(pod) else {
            return PostFilterStatus {
                message: "can not find pod group".into(),
                reject_group: None,
            };
        };
        let min_member = i64::from(pg.spec.min_member);
        let assigned = self.assigned(&key, snapshot, None) as i64;
        let quiet = PostFilterStatus {
            message: String::new(),
            reject_group: None,
        };
        // Enough members assigned already: do not reject the group.
        if assigned >= min_member {
            return quiet;
        }
        // A gap of at most 10 %: later members may still fill it.
        let not_assigned = (min_member - assigned) as f32 / min_member as f32;
        if not_assigned <= 0.1 {
            return quiet;
        }
        if !self.args.pod_group_backoff.is_zero()
            && self.members.get(&key).map_or(0, BTreeSet::len) as i64 >= min_member
        {
            self.backed_off
                .insert(key.clone(), now + self.args.pod_group_backoff);
        }
        self.permitted.remove(&key);
        PostFilterStatus {
            message: format!(
                "PodGroup {key} gets rejected due to Pod {} is unschedulable even after PostFilter",
                pod.metadata.name
            ),
            reject_group: Some(key),
        }
    }

    /// scheduler-plugins' Unreserve for a member of a group: the group whose waiting members
    /// are to be rejected (it must pass the resource check again), if the group exists.
    pub fn unreserve(&mut self, pod: &Pod) -> Option<String> {
        let (Some(key), Some(_)) = self.pod_group(pod) else {
            return None;
        };
        self.permitted.remove(&key);
        Some(key)
    }
}

/// How many members each PodGroup may lose to one preemption, as PodDisruptionBudgets bound
/// kube's preemption but never broken: a group with `placed` members assumed or bound may lose
/// `placed - minMember` (none when it has no more than `minMember` placed). Preemption reads
/// the placed members from the snapshot it works on, so a plan that took some already leaves
/// the rest a smaller budget. Built by [`Coscheduling::budgets`].
#[derive(Clone, Debug, Default)]
pub struct GroupBudgets {
    /// Each member's group (an index into the other fields).
    group_of: HashMap<PodKey, usize>,
    /// Each group's members, pending or placed.
    members: Vec<Vec<PodKey>>,
    /// Each group's `minMember`.
    min_member: Vec<usize>,
}

impl GroupBudgets {
    /// The group (an index) of the pod `key`, if it is a member of a known group.
    pub fn group_of(&self, key: &str) -> Option<usize> {
        self.group_of.get(key).copied()
    }

    /// Whether no pod is a member of a known group.
    pub fn is_empty(&self) -> bool {
        self.group_of.is_empty()
    }

    /// How many members the group `group` may still lose in `snapshot`, given that `taken`
    /// of its members were taken off it already (and are not in `snapshot`).
    pub fn allowed(&self, group: usize, snapshot: &Snapshot, taken: usize) -> usize {
        let placed = self.members[group]
            .iter()
            .filter(|k| snapshot.node_of(k).is_some())
            .count()
            + taken;
        placed.saturating_sub(self.min_member[group])
    }
}

/// scheduler-plugins' `CheckClusterResource`: whether the free resources of the nodes (their
/// allocatable minus what their pods request, the pods of `group` left out) add up to
/// `request` (a `pods` entry counts pods). `Err` names the gap.
///
/// # Errors
/// "resource gap: ..." with what is missing.
pub fn check_cluster_resource(
    snapshot: &Snapshot,
    request: &ResourceList,
    group: &str,
) -> Result<(), String> {
    // In each resource's integer unit: CPU in millicores, the rest in units.
    let mut left: BTreeMap<&str, i128> = request
        .iter()
        .map(|(name, q)| {
            let v = if name == "cpu" {
                q.milli_value()
            } else {
                q.value()
            };
            (name.as_str(), i128::from(v))
        })
        .filter(|(_, v)| *v > 0)
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    for info in snapshot.node_infos() {
        let mut requested = info.requested().clone();
        let mut pods = info.pods().len() as i64;
        for p in info.pods() {
            if pod_group_of(p.pod()).as_deref() == Some(group) {
                requested = subtract(&requested, p.requests());
                pods -= 1;
            }
        }
        let alloc = info.allocatable();
        left.retain(|name, v| {
            let free: i64 = match *name {
                "cpu" => alloc.milli_cpu - requested.milli_cpu,
                "memory" => alloc.memory - requested.memory,
                "ephemeral-storage" => alloc.ephemeral_storage - requested.ephemeral_storage,
                "pods" => alloc.allowed_pod_number - pods,
                n => scalar(alloc, n) - scalar(&requested, n),
            };
            *v -= i128::from(free);
            *v > 0
        });
        if left.is_empty() {
            return Ok(());
        }
    }
    // As Go prints the quantities left: CPU in cores (or millicores), the rest in units.
    let gap: Vec<String> = left
        .iter()
        .map(|(n, v)| match *n {
            "cpu" if v % 1000 == 0 => format!("{n}:{}", v / 1000),
            "cpu" => format!("{n}:{v}m"),
            _ => format!("{n}:{v}"),
        })
        .collect();
    Err(format!("resource gap: map[{}]", gap.join(" ")))
}

fn scalar(r: &Resources, name: &str) -> i64 {
    r.scalar
        .iter()
        .find(|(n, _)| n.as_str() == name)
        .map_or(0, |(_, v)| *v)
}

fn subtract(a: &Resources, b: &Resources) -> Resources {
    let mut out = a.clone();
    out.milli_cpu -= b.milli_cpu;
    out.memory -= b.memory;
    out.ephemeral_storage -= b.ephemeral_storage;
    for (name, v) in &mut out.scalar {
        *v -= scalar(b, name.as_str());
    }
    out
}
