//! A case through sched-core's v1.34 path, pod by pod, against kube-scheduler's answers.
//!
//! [`replay`] schedules the pending pods of a [`Case`] in the order of its [`OracleFile`]:
//! each with the profile its `schedulerName` names (the case's configuration compiled with
//! [`Registry::v1_34`]) with the percentage of nodes to score the configuration sets (the
//! profile's, else the global one), else the one the oracle says kube used (every node when it
//! says none), on one thread. It compares sched-core's answer with kube's, the nodes each
//! search evaluated included:
//!
//! 1. a gated pod must be gated on both sides (scheduling gates);
//! 2. the feasible nodes, as sets;
//! 3. when kube scored: every score plugin's weighted score per node (a plugin kube skipped in
//!    PreScore counts 0, as it adds nothing), the totals, and the nodes tied at the top;
//! 4. when nothing fits: the FitError text and each node's reasons, as sets;
//! 5. then the profile's PostFilter plugins ([`sched_core::scheduler::post_filter`]:
//!    DynamicResources', then DefaultPreemption with the case's PodDisruptionBudgets) against
//!    kube's `postFilter`: the status code and message, the FitError text after PostFilter,
//!    and the nomination. kube picks among equally good candidate nodes at random, so its
//!    node must be one of the candidates sched-core finds equally good
//!    ([`preemption::best_candidates`]: with at most 100 nodes where preemption might help,
//!    every one of them is tried), and its victims sched-core's on that node.
//!
//! Pending pods with a `status.nominatedNodeName` are nominated there, as kube's queue
//! nominates the pods it takes in (not gated ones), until kube places them: a pod is tried on
//! its nominated node first (the only node feasible if it fits there, nothing scored), and
//! every search and preemption's dry run counts the pods nominated to a node of at least the
//! pod's priority as if they ran there ([`Nominator`]).
//!
//! Then the pod is assumed on kube's `chosen` node, whatever sched-core would have picked, and
//! VolumeBinding's and DynamicResources' reserve run for it as kube's Reserve does (taking the
//! PersistentVolumes kube's took where several of the smallest fit: kube picks among them in
//! a Go map's order; the claims' allocations stay in flight: kube's oracle binds nothing), so
//! both sides go on from the same cluster. Preemption is recorded, not applied, on both
//! sides: the victims stay and the preemptor is not nominated. Each pod gets a [`PodResult`]: a [`Class`] and one line per
//! difference.
//!
//! The same function serves the recorded fixtures (`tests/fixtures.rs`) and generated cases.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use sched_core::config::{ConfigError, DEFAULT_SCHEDULER_NAME, Registry};
use sched_core::framework::KubeVersion;
use sched_core::model::{PersistentVolumeClaim, Pod, PodDisruptionBudget, PodKey};
use sched_core::plugins::volume;
use sched_core::profile::{BuildError, Cache, FitError, Profile, ScheduleError};
use sched_core::scheduler::Nominator;
use sched_core::scheduler::post_filter::{Code, PostFilterPlugins, run_post_filter};
use sched_core::scheduler::preemption::{self, Candidate, Environment, Outcome};
use sched_core::snapshot::{Snapshot, VolumeBinderId};

use crate::case::{Case, CaseError};
use crate::oracle::{NodeScores, OracleFile, PodAnswer};

/// How sched-core's answer for a pod compares with kube's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Class {
    /// The same answer: feasible nodes, scores, ties, or FitError and reasons.
    Exact,
    /// Gated by its scheduling gates on both sides.
    Gated,
    /// The search for feasible nodes started elsewhere or evaluated other nodes (with a
    /// percentage of nodes to score below 100: kube's rotating start index).
    Evaluated,
    /// Different feasible nodes (one side may have none).
    Feasible,
    /// The same feasible nodes, different scores or totals, the same nodes tied at the top.
    Scores,
    /// The same feasible nodes, different nodes tied at the top (the placement can differ).
    TieSet,
    /// Nothing fits on either side, explained differently (FitError text or a node's reasons).
    Wording,
    /// Nothing fits on either side, and PostFilter (preemption) decided differently: the
    /// nomination, the victims, the status or its message.
    Preemption,
    /// Gated on one side only.
    Gating,
    /// One side failed with an error (sched-core's, or one kube recorded), or the pod could not
    /// be replayed (not a pending pod of the case, no profile of its name, not assumed).
    Error,
}

impl Class {
    /// Whether the two sides agree ([`Class::Exact`] or [`Class::Gated`]).
    pub fn agrees(self) -> bool {
        matches!(self, Class::Exact | Class::Gated)
    }

    /// The class's name as cases write it (`tie-set`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Exact => "exact",
            Class::Gated => "gated",
            Class::Evaluated => "evaluated",
            Class::Feasible => "feasible",
            Class::Scores => "scores",
            Class::TieSet => "tie-set",
            Class::Wording => "wording",
            Class::Preemption => "preemption",
            Class::Gating => "gating",
            Class::Error => "error",
        }
    }

    /// Which class wins when a pod differs in several ways: the one that says most about
    /// the placement.
    fn rank(self) -> u8 {
        match self {
            Class::Exact => 0,
            Class::Gated => 1,
            Class::Wording => 2,
            Class::Preemption => 3,
            Class::Scores => 4,
            Class::TieSet => 5,
            Class::Evaluated => 6,
            Class::Feasible => 7,
            Class::Gating => 8,
            Class::Error => 9,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The replay of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodResult {
    /// `namespace/name`.
    pub pod: String,
    /// How the two sides compare.
    pub class: Class,
    /// One line per difference (the node, ours against kube's); empty when they agree.
    pub details: Vec<String>,
    /// When sched-core's preemption nominates the pod: the nodes it finds equally good (kube
    /// picks one of them at random), each with its victims (`namespace/name`, sorted).
    pub nominations: BTreeMap<String, Vec<String>>,
}

impl PodResult {
    fn new(pod: &str) -> PodResult {
        PodResult {
            pod: pod.to_string(),
            class: Class::Exact,
            details: Vec::new(),
            nominations: BTreeMap::new(),
        }
    }

    /// Records a difference of this class (the pod keeps its most telling class).
    fn differ(&mut self, class: Class, detail: String) {
        if class.rank() > self.class.rank() {
            self.class = class;
        }
        self.details.push(detail);
    }
}

impl fmt::Display for PodResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pod, self.class)?;
        for d in &self.details {
            write!(f, "\n    {d}")?;
        }
        Ok(())
    }
}

/// A case that could not be set up for replay (before any pod is scheduled).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The case's snapshot could not be built.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// The configuration does not compile into profiles.
    #[error("{case}: {source}")]
    Config {
        /// The case.
        case: String,
        /// Why.
        #[source]
        source: ConfigError,
    },
    /// A profile could not be built.
    #[error("{case}: profile {profile:?}: {source}")]
    Profile {
        /// The case.
        case: String,
        /// The scheduler name.
        profile: String,
        /// Why.
        #[source]
        source: BuildError,
    },
}

/// The seed of the tie-breaking generator. Ties are compared as sets and the replay follows
/// kube's pick, so it only needs to be fixed.
const SEED: u64 = 1;

/// Replays `case` against kube's answers in `oracle`: one [`PodResult`] per entry of
/// `oracle.pods`, in order (see the [module documentation](self)).
///
/// # Errors
/// [`ReplayError`] when the case cannot be set up: its snapshot, its configuration or a
/// profile. A pod that cannot be replayed is a [`Class::Error`] result instead.
pub fn replay(case: &Case, oracle: &OracleFile) -> Result<Vec<PodResult>, ReplayError> {
    let config = case.configuration();
    // kube ran with this percentage where the configuration sets none, when the oracle
    // records it (0: adaptive), else 100.
    let percentage = oracle
        .meta
        .percentage_of_nodes_to_score
        .map_or(100, |p| u32::try_from(p).unwrap_or(0));
    let registry = Registry::v1_34();
    let mut profiles: Vec<Slot> = Vec::new();
    let builders = config
        .builders(&registry)
        .map_err(|source| ReplayError::Config {
            case: case.name.clone(),
            source,
        })?;
    for (name, builder) in builders {
        // A percentage the configuration sets (the profile's, else the global one) is kube's.
        let configured = config
            .profiles
            .iter()
            .find(|p| p.scheduler_name == name)
            .and_then(|p| p.percentage_of_nodes_to_score)
            .or(config.percentage_of_nodes_to_score);
        let profile = builder
            .threads(1)
            .seed(SEED)
            .percentage_of_nodes_to_score(configured.unwrap_or(percentage))
            .build()
            .map_err(|source| ReplayError::Profile {
                case: case.name.clone(),
                profile: name.clone(),
                source,
            })?;
        let post_filter = config
            .profiles
            .iter()
            .find(|p| p.scheduler_name == name)
            .map(|p| PostFilterPlugins::of(p, &registry))
            .unwrap_or_default();
        profiles.push(Slot {
            name,
            profile,
            post_filter,
        });
    }
    // kube-scheduler keeps one round-robin start index for all its profiles; so does one
    // cache shared by the profiles here.
    let mut cache = Cache::seeded(SEED);
    let mut snapshot = case.snapshot_with_node_order(&oracle.meta.node_order)?;
    let pending: HashMap<PodKey, &Pod> =
        case.cluster.pending.iter().map(|p| (p.key(), p)).collect();
    // kube's queue nominates the pending pods it takes in (of its profiles, past PreEnqueue:
    // no scheduling gate, and, where the profile runs DynamicResources, every claim found) to
    // their status's nominatedNodeName; a pod leaves the nominator when it is assumed. The
    // oracle applies no PostFilter result, so nothing else changes the nominations.
    let mut nominator = Nominator::new();
    for pod in &case.cluster.pending {
        let name = match pod.spec.scheduler_name.as_str() {
            "" => DEFAULT_SCHEDULER_NAME,
            n => n,
        };
        let Some(slot) = profiles.iter().find(|s| s.name == name) else {
            continue;
        };
        let claims_found = pod.spec.resource_claims.is_empty()
            || !slot.profile.runs_dynamic_resources()
            || sched_core::plugins::dra::pod_claims(pod, snapshot.dra()).is_ok();
        if pod.spec.scheduling_gates.is_empty() && claims_found {
            nominator.add(pod.clone(), None);
        }
    }
    let world = World {
        pdbs: &case.cluster.pdbs,
    };

    let mut results = Vec::with_capacity(oracle.pods.len());
    for answer in &oracle.pods {
        let mut result = PodResult::new(&answer.pod);
        let Some(pod) = pending.get(answer.pod.as_str()).copied() else {
            result.differ(
                Class::Error,
                "not a pending pod of the case (pods.json)".to_string(),
            );
            results.push(result);
            continue;
        };
        let wanted = match pod.spec.scheduler_name.as_str() {
            "" => DEFAULT_SCHEDULER_NAME,
            n => n,
        };
        match profiles.iter().find(|s| s.name == wanted) {
            None => {
                let known: Vec<&str> = profiles.iter().map(|s| s.name.as_str()).collect();
                result.differ(
                    Class::Error,
                    format!(
                        "ours: no profile {wanted:?} (profiles: {}); kube: {}",
                        known.join(", "),
                        kube_outcome(answer)
                    ),
                );
            }
            Some(slot) => {
                let start = cache.next_start_index();
                let ours = attempt(slot, &mut cache, pod, &mut snapshot, &nominator, &world);
                compare(&ours, answer, oracle.records_post_filter(), &mut result);
                let search = Search {
                    start,
                    next: cache.next_start_index(),
                    evaluated: ours.evaluated(slot, &cache, pod, &snapshot),
                };
                compare_search(&search, answer, &mut result);
            }
        }
        if let Some(chosen) = answer.chosen.as_deref().filter(|c| !c.is_empty()) {
            nominator.delete(&answer.pod);
            // kube's VolumeBinding of the pod's profile reserves, in its own volume binder.
            let binder = profiles
                .iter()
                .find(|s| s.name == wanted)
                .and_then(|s| s.profile.volume_binder());
            if let Err(e) = assume(&mut snapshot, binder, pod, chosen, answer.volumes.as_ref()) {
                result.differ(Class::Error, e);
            }
        }
        results.push(result);
    }
    Ok(results)
}

/// A profile of the case: its scheduler name, the compiled profile and its PostFilter
/// plugins.
struct Slot {
    name: String,
    profile: Profile,
    post_filter: PostFilterPlugins,
}

/// What PostFilter reads besides the profile, the snapshot and the nominations.
struct World<'a> {
    pdbs: &'a [PodDisruptionBudget],
}

/// Places `pod` on `node` as kube did: assumed in the snapshot, then the VolumeBinding reserve
/// of the pod's profile, for that profile's volume binder `binder` (the PersistentVolumes it
/// matched there and the claims to provision: kube's volume binder of each profile has its own
/// assume caches). Of the smallest PVs that fit a claim, kube takes the first its assume cache
/// lists, in a Go map's order: with `kube_volumes` (what kube's Reserve took, claim -> PV)
/// the replay takes the same ones, and it is a difference when they are not among those
/// sched-core's VolumeBinding finds equally good, or when either side binds other claims.
/// A profile without VolumeBinding reserves no volumes. The pod's
/// ResourceClaims are then allocated on the node and kept in flight (DynamicResources'
/// Reserve; kube's oracle runs no PreBind that would write them).
fn assume(
    snapshot: &mut Snapshot,
    binder: Option<VolumeBinderId>,
    pod: &Pod,
    node: &str,
    kube_volumes: Option<&BTreeMap<String, String>>,
) -> Result<(), String> {
    let mut placed = pod.clone();
    placed.spec.node_name = node.to_string();
    snapshot
        .assume(placed, node)
        .map_err(|e| format!("assuming the pod on kube's node {node}: {e}"))?;
    if let Some(binder) = binder {
        let pick = |claim: &PersistentVolumeClaim| {
            kube_volumes
                .and_then(|v| {
                    v.get(&format!(
                        "{}/{}",
                        claim.metadata.namespace, claim.metadata.name
                    ))
                })
                .map(String::as_str)
        };
        let assumed =
            volume::assume_volumes_picking(snapshot, binder, pod, node, KubeVersion::V1_34, &pick)
                .map_err(|r| {
                    format!(
                        "reserving the pod's volumes on kube's node {node}: VolumeBinding fails \
                         there ({r:?})"
                    )
                })?;
        if let Some(kube) = kube_volumes {
            let ours: BTreeMap<String, String> = assumed
                .bindings()
                .iter()
                .filter_map(|pv| {
                    let c = pv.spec.claim_ref.as_ref()?;
                    Some((
                        format!("{}/{}", c.namespace, c.name),
                        pv.metadata.name.clone(),
                    ))
                })
                .collect();
            if &ours != kube {
                return Err(format!(
                    "VolumeBinding's Reserve on {node}: kube bound {kube:?}, sched-core {ours:?}"
                ));
            }
        }
    }
    // DynamicResources' Reserve: the claims' allocations stay in flight, as in kube's oracle,
    // which runs no PreBind (nor binds): a later pod sharing such a claim meets it "in the
    // process of being allocated", as it does in kube while the first pod's binding cycle
    // has not written the claim yet.
    let info = snapshot
        .get(node)
        .ok_or_else(|| format!("kube's node {node} is not in the snapshot"))?;
    let bindings = sched_core::plugins::dra::allocate_on(snapshot.dra(), pod, info.node())
        .map_err(|e| format!("allocating the pod's claims on kube's node {node}: {e}"))?;
    let dra = snapshot.dra_mut();
    for b in bindings {
        if let Some(allocation) = b.allocation {
            dra.set_pending(&b.namespace, &b.name, allocation);
        }
    }
    Ok(())
}

/// sched-core's answer for a pod.
#[derive(Debug)]
enum Ours {
    /// Some node fits: the feasible nodes and, when scoring ran, each one's scores.
    Placed {
        feasible: BTreeSet<String>,
        scored: bool,
        scores: BTreeMap<String, NodeScores>,
    },
    /// Nothing fits, and what PostFilter did (`None`: the profile has no PostFilter plugin).
    Unschedulable(FitError, Option<OursPostFilter>),
    /// Held by its scheduling gates.
    Gated(Vec<String>),
    /// Another error.
    Failed(String),
}

impl Ours {
    /// The nodes sched-core's search evaluated for `pod` (the last cycle's of `cache`; the
    /// nominated node alone when the pod fits there), by name.
    fn evaluated(
        &self,
        slot: &Slot,
        cache: &Cache,
        pod: &Pod,
        snapshot: &Snapshot,
    ) -> BTreeSet<String> {
        match self {
            Ours::Placed {
                feasible,
                scored: false,
                ..
            } if feasible.len() == 1
                && feasible.contains(pod.status.nominated_node_name.as_str()) =>
            {
                feasible.clone()
            }
            Ours::Placed { .. } | Ours::Unschedulable(..) => slot
                .profile
                .last_evaluated(cache)
                .into_iter()
                .map(|i| snapshot.node_infos()[i].name().to_string())
                .collect(),
            Ours::Gated(_) | Ours::Failed(_) => BTreeSet::new(),
        }
    }
}

/// Where sched-core's search for a pod started and ended, and what it evaluated.
struct Search {
    /// The start index before the pod.
    start: usize,
    /// The start index after it.
    next: usize,
    /// The nodes evaluated.
    evaluated: BTreeSet<String>,
}

/// sched-core's search against kube's, when kube recorded its own (the start index before and
/// after the pod, the nodes its search processed): they must be the same.
fn compare_search(ours: &Search, kube: &PodAnswer, result: &mut PodResult) {
    if kube.gated.is_some() || kube.error.is_some() {
        return;
    }
    if let Some(k) = kube.start_index
        && k != ours.start
    {
        result.differ(
            Class::Evaluated,
            format!("search start: ours node {}, kube node {k}", ours.start),
        );
    }
    if let Some(k) = kube.next_start_index
        && k != ours.next
    {
        result.differ(
            Class::Evaluated,
            format!("next search start: ours node {}, kube node {k}", ours.next),
        );
    }
    if let Some(k) = &kube.evaluated {
        let theirs: BTreeSet<String> = k.iter().cloned().collect();
        if theirs != ours.evaluated {
            let only_ours: BTreeSet<String> = ours.evaluated.difference(&theirs).cloned().collect();
            let only_kube: BTreeSet<String> = theirs.difference(&ours.evaluated).cloned().collect();
            result.differ(
                Class::Evaluated,
                format!(
                    "evaluated: {} nodes ours, {} kube; only ours {}; only kube {}",
                    ours.evaluated.len(),
                    theirs.len(),
                    list(&only_ours),
                    list(&only_kube)
                ),
            );
        }
    }
}

/// sched-core's PostFilter outcome for a pod.
#[derive(Debug)]
struct OursPostFilter {
    code: Code,
    message: String,
    /// The FitError text before PostFilter.
    fit_error_before: String,
    /// The FitError text after PostFilter.
    fit_error: String,
    /// When preemption nominates: the candidates kube could pick as well (equally good), each
    /// node with its victims (`namespace/name`, sorted).
    nominations: BTreeMap<String, Vec<String>>,
}

fn attempt(
    slot: &Slot,
    cache: &mut Cache,
    pod: &Pod,
    snapshot: &mut Snapshot,
    nominator: &Nominator,
    world: &World<'_>,
) -> Ours {
    let profile = &slot.profile;
    // kube tries a pod's nominated node first (after its gates and PreFilter): if the pod
    // fits there beside the pods nominated there, that node is the only one feasible and
    // nothing is scored.
    let nominated = pod.status.nominated_node_name.as_str();
    if pod.spec.scheduling_gates.is_empty()
        && !nominated.is_empty()
        && let Some(index) = snapshot.index_of(nominated)
        && let Ok(Ok(())) = nominator.fits(profile, snapshot, pod, index)
    {
        return Ours::Placed {
            feasible: BTreeSet::from([nominated.to_string()]),
            scored: false,
            scores: BTreeMap::from([(nominated.to_string(), NodeScores::default())]),
        };
    }
    match nominator.schedule(profile, cache, pod, snapshot) {
        Ok(_) => {
            let table = profile.last_scores(cache);
            let mut feasible = BTreeSet::new();
            let mut scores = BTreeMap::new();
            for i in 0..table.len() {
                let (index, total, per) = table.row(i);
                let node = snapshot.node_infos()[index].name().to_string();
                let plugins = table
                    .priorities()
                    .iter()
                    .zip(&per)
                    .map(|((name, weight), score)| (name.to_string(), score * weight))
                    .collect();
                feasible.insert(node.clone());
                scores.insert(node, NodeScores { plugins, total });
            }
            Ours::Placed {
                feasible,
                scored: table.scored(),
                scores,
            }
        }
        Err(ScheduleError::Unschedulable(fit)) => {
            let post_filter = (!slot.post_filter.is_empty())
                .then(|| post_filter(slot, pod, &fit, snapshot, nominator, world));
            Ours::Unschedulable(fit, post_filter)
        }
        Err(ScheduleError::SchedulingGated { gates, .. }) => Ours::Gated(gates),
        Err(ScheduleError::PreEnqueue {
            plugin, message, ..
        }) => Ours::Gated(vec![format!("{plugin}: {message}")]),
        Err(e) => Ours::Failed(e.to_string()),
    }
}

/// The profile's PostFilter plugins for `pod`, which `fit` says fits nowhere, with every
/// candidate node preemption finds recorded (the dry run starts at the first node where
/// preemption might help; with 100 of them or fewer it tries them all, as kube does).
fn post_filter(
    slot: &Slot,
    pod: &Pod,
    fit: &FitError,
    snapshot: &mut Snapshot,
    nominator: &Nominator,
    world: &World<'_>,
) -> OursPostFilter {
    let found: RefCell<Vec<Candidate>> = RefCell::new(Vec::new());
    let record = |_: &Pod, _: &Snapshot, candidates: Vec<Candidate>| {
        found.borrow_mut().clone_from(&candidates);
        Ok(candidates)
    };
    let env = Environment::new(nominator)
        .pdbs(world.pdbs)
        .candidates(&record);
    let out = run_post_filter(
        &slot.post_filter,
        &slot.profile,
        snapshot,
        pod,
        fit,
        &mut |_| 0,
        &env,
    );
    let mut nominations = BTreeMap::new();
    if let Some(Ok(Outcome::Preempt(_))) = &out.preemption {
        let found = found.borrow();
        for c in preemption::best_candidates(&found) {
            let mut victims: Vec<String> = c.victim_keys().into_iter().map(String::from).collect();
            victims.sort();
            nominations.insert(c.node.clone(), victims);
        }
    }
    OursPostFilter {
        code: out.code,
        fit_error_before: fit.to_string(),
        fit_error: out.explain(fit).to_string(),
        message: out.message,
        nominations,
    }
}

/// kube's outcome in a few words, for details.
fn kube_outcome(answer: &PodAnswer) -> String {
    if let Some(e) = &answer.error {
        return format!("error: {e}");
    }
    if let Some(g) = &answer.gated {
        return format!("gated ({g})");
    }
    match (&answer.chosen, &answer.fit_error) {
        (Some(c), _) => format!("placed on {c} ({} feasible)", answer.feasible.len()),
        (None, Some(f)) => format!("unschedulable: {f}"),
        (None, None) => "no node".to_string(),
    }
}

fn ours_outcome(ours: &Ours) -> String {
    match ours {
        Ours::Placed { feasible, .. } => format!("{} feasible", feasible.len()),
        Ours::Unschedulable(fit, _) => format!("unschedulable: {fit}"),
        Ours::Gated(gates) => format!("gated ({})", gates.join(", ")),
        Ours::Failed(e) => format!("error: {e}"),
    }
}

/// `post_filter_recorded`: whether kube's answers record the PostFilter outcome (files of the
/// project's oracle do; the older recorded cases do not, and their PostFilter is not compared).
fn compare(ours: &Ours, kube: &PodAnswer, post_filter_recorded: bool, result: &mut PodResult) {
    if let Some(e) = &kube.error {
        result.differ(
            Class::Error,
            format!("kube failed: {e}; ours: {}", ours_outcome(ours)),
        );
        return;
    }
    match (ours, &kube.gated) {
        (Ours::Gated(_), Some(_)) => {
            result.class = Class::Gated;
            return;
        }
        (Ours::Gated(gates), None) => {
            result.differ(
                Class::Gating,
                format!(
                    "ours: gated ({}); kube: {}",
                    gates.join(", "),
                    kube_outcome(kube)
                ),
            );
            return;
        }
        (_, Some(g)) => {
            result.differ(
                Class::Gating,
                format!("ours: {}; kube: gated ({g})", ours_outcome(ours)),
            );
            return;
        }
        (_, None) => {}
    }
    let kube_feasible: BTreeSet<String> = kube.feasible.iter().cloned().collect();
    match ours {
        Ours::Failed(e) => {
            result.differ(
                Class::Error,
                format!("ours failed: {e}; kube: {}", kube_outcome(kube)),
            );
        }
        // Gating was compared above.
        Ours::Gated(_) => {}
        Ours::Unschedulable(fit, post_filter) => {
            if !kube_feasible.is_empty() {
                result.differ(
                    Class::Feasible,
                    format!(
                        "ours: nothing fits ({fit}); kube: {} feasible ({})",
                        kube_feasible.len(),
                        list(&kube_feasible)
                    ),
                );
                return;
            }
            compare_fit_error(fit, kube, result);
            if post_filter_recorded {
                compare_post_filter(post_filter.as_ref(), kube, result);
            }
        }
        Ours::Placed {
            feasible,
            scored,
            scores,
        } => {
            if *feasible != kube_feasible {
                let only_ours: BTreeSet<&String> = feasible.difference(&kube_feasible).collect();
                let only_kube: BTreeSet<&String> = kube_feasible.difference(feasible).collect();
                for n in only_ours {
                    result.differ(
                        Class::Feasible,
                        format!(
                            "{n}: feasible for ours, not for kube{}",
                            kube_reasons(kube, n)
                        ),
                    );
                }
                for n in only_kube {
                    result.differ(
                        Class::Feasible,
                        format!("{n}: feasible for kube, not for ours"),
                    );
                }
                return;
            }
            if kube.scored || *scored {
                compare_scores(*scored, scores, kube, result);
            }
        }
    }
}

/// kube's reasons for a node, when it recorded them (it does only when nothing fits).
fn kube_reasons(kube: &PodAnswer, node: &str) -> String {
    match kube.reasons.get(node) {
        Some(r) => format!(" ({})", r.join("; ")),
        None if kube.feasible.is_empty() => format!(" ({})", kube_outcome(kube)),
        None => String::new(),
    }
}

fn compare_scores(
    scored: bool,
    scores: &BTreeMap<String, NodeScores>,
    kube: &PodAnswer,
    result: &mut PodResult,
) {
    if scored != kube.scored {
        result.differ(
            Class::Scores,
            format!("scoring ran: ours {scored}, kube {}", kube.scored),
        );
    }
    let empty = NodeScores::default();
    for (node, theirs) in &kube.scores {
        let mine = scores.get(node).unwrap_or(&empty);
        // A plugin kube skipped in PreScore (or one a side does not have) adds 0.
        let names: BTreeSet<&String> = mine.plugins.keys().chain(theirs.plugins.keys()).collect();
        for name in names {
            let a = mine.plugins.get(name).copied().unwrap_or(0);
            let b = theirs.plugins.get(name).copied().unwrap_or(0);
            if a != b {
                result.differ(Class::Scores, format!("{node}: {name} ours {a}, kube {b}"));
            }
        }
        if mine.total != theirs.total {
            result.differ(
                Class::Scores,
                format!("{node}: total ours {}, kube {}", mine.total, theirs.total),
            );
        }
    }
    let top = |s: &BTreeMap<String, NodeScores>| -> BTreeSet<String> {
        let max = s.values().map(|n| n.total).max();
        s.iter()
            .filter(|(_, n)| Some(n.total) == max)
            .map(|(name, _)| name.clone())
            .collect()
    };
    let ours_tied = top(scores);
    let kube_tied: BTreeSet<String> = kube.tied.iter().cloned().collect();
    if ours_tied != kube_tied {
        result.differ(
            Class::TieSet,
            format!(
                "tied at the top: ours {}, kube {}",
                list(&ours_tied),
                list(&kube_tied)
            ),
        );
    }
}

fn compare_fit_error(fit: &FitError, kube: &PodAnswer, result: &mut PodResult) {
    let text = fit.to_string();
    match &kube.fit_error {
        Some(k) if *k == text => {}
        Some(k) => result.differ(
            Class::Wording,
            format!("FitError: ours {text:?}, kube {k:?}"),
        ),
        None => result.differ(
            Class::Wording,
            format!("FitError: ours {text:?}, kube recorded none"),
        ),
    }
    let ours: BTreeMap<&str, BTreeSet<&str>> = fit
        .failures()
        .iter()
        .map(|f| {
            (
                f.node.as_str(),
                f.messages.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let theirs: BTreeMap<&str, BTreeSet<&str>> = kube
        .reasons
        .iter()
        .map(|(n, r)| (n.as_str(), r.iter().map(String::as_str).collect()))
        .collect();
    let none = BTreeSet::new();
    let nodes: BTreeSet<&str> = ours.keys().chain(theirs.keys()).copied().collect();
    for node in nodes {
        let a = ours.get(node).unwrap_or(&none);
        let b = theirs.get(node).unwrap_or(&none);
        if a != b {
            result.differ(
                Class::Wording,
                format!("{node}: reasons ours {a:?}, kube {b:?}"),
            );
        }
    }
}

/// kube's PostFilter outcome against sched-core's: the status code and message, the FitError
/// text after PostFilter, and the nomination (kube's node one of those sched-core finds
/// equally good, with the same victims there).
fn compare_post_filter(ours: Option<&OursPostFilter>, kube: &PodAnswer, result: &mut PodResult) {
    if let Some(o) = ours {
        result.nominations.clone_from(&o.nominations);
    }
    let (ours, theirs) = match (ours, &kube.post_filter) {
        (None, None) => return,
        (Some(o), Some(k)) => (o, k),
        (Some(o), None) => {
            result.differ(
                Class::Preemption,
                format!(
                    "PostFilter: ours ran ({} {:?}), kube ran none",
                    o.code, o.message
                ),
            );
            return;
        }
        (None, Some(k)) => {
            result.differ(
                Class::Preemption,
                format!(
                    "PostFilter: ours ran none, kube's {} {:?}",
                    k.code, k.message
                ),
            );
            return;
        }
    };
    if ours.code.as_str() != theirs.code {
        result.differ(
            Class::Preemption,
            format!("PostFilter code: ours {}, kube {}", ours.code, theirs.code),
        );
    }
    if ours.message != theirs.message {
        result.differ(
            Class::Preemption,
            format!(
                "PostFilter message: ours {:?}, kube {:?}",
                ours.message, theirs.message
            ),
        );
    }
    // The FitError after PostFilter is the one before with PostFilter's message: compared
    // when the one before agrees (a difference there is a wording one, reported above).
    let before_agrees = kube.fit_error.as_deref() == Some(ours.fit_error_before.as_str());
    match &theirs.fit_error {
        _ if !before_agrees => {}
        Some(k) if *k == ours.fit_error => {}
        k => result.differ(
            Class::Preemption,
            format!(
                "FitError after PostFilter: ours {:?}, kube {k:?}",
                ours.fit_error
            ),
        ),
    }
    let ours_nodes: BTreeSet<String> = ours.nominations.keys().cloned().collect();
    match theirs.nominated_node.as_deref().filter(|n| !n.is_empty()) {
        None if ours.nominations.is_empty() => {
            if !theirs.victims.is_empty() {
                result.differ(
                    Class::Preemption,
                    format!(
                        "kube deleted {} without nominating",
                        theirs.victims.join(", ")
                    ),
                );
            }
        }
        None => result.differ(
            Class::Preemption,
            format!("nominated: ours one of {}, kube none", list(&ours_nodes)),
        ),
        Some(node) => match ours.nominations.get(node) {
            None => result.differ(
                Class::Preemption,
                format!(
                    "nominated: ours {}, kube {node} (victims {})",
                    if ours_nodes.is_empty() {
                        "none".to_string()
                    } else {
                        format!("one of {}", list(&ours_nodes))
                    },
                    theirs.victims.join(", ")
                ),
            ),
            Some(victims) => {
                let mut kube_victims = theirs.victims.clone();
                kube_victims.sort();
                if *victims != kube_victims {
                    result.differ(
                        Class::Preemption,
                        format!(
                            "{node}: victims ours {}, kube {}",
                            victims.join(", "),
                            kube_victims.join(", ")
                        ),
                    );
                }
            }
        },
    }
}

fn list(nodes: &BTreeSet<String>) -> String {
    if nodes.is_empty() {
        return "none".to_string();
    }
    nodes.iter().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_telling_class_wins() {
        let mut r = PodResult::new("ns/p");
        r.differ(Class::Wording, "a".into());
        r.differ(Class::TieSet, "b".into());
        r.differ(Class::Scores, "c".into());
        assert_eq!(r.class, Class::TieSet);
        assert_eq!(r.details.len(), 3);
        assert!(!r.class.agrees());
        assert_eq!(r.to_string(), "ns/p: tie-set\n    a\n    b\n    c");
    }
}
