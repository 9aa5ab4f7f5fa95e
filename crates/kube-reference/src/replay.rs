//! A case through sched-core's v1.34 path, pod by pod, against kube-scheduler's answers.
//!
//! [`replay`] schedules the pending pods of a [`Case`] in the order of its [`OracleFile`]:
//! each with the profile its `schedulerName` names (the case's configuration compiled with
//! [`Registry::v1_34`]), every node scored unless the oracle says what percentage kube used,
//! on one thread. It compares sched-core's answer with kube's:
//!
//! 1. a gated pod must be gated on both sides (scheduling gates);
//! 2. the feasible nodes, as sets;
//! 3. when kube scored: every score plugin's weighted score per node (a plugin kube skipped in
//!    PreScore counts 0, as it adds nothing), the totals, and the nodes tied at the top;
//! 4. when nothing fits: the FitError text and each node's reasons, as sets;
//! 5. (PostFilter: kube's preemption outcome is recorded in `post_filter` but not compared
//!    yet: `compare_post_filter` is the place for it.)
//!
//! Then the pod is assumed on kube's `chosen` node, whatever sched-core would have picked, and
//! VolumeBinding's reserve runs for it as kube's Reserve does, so both sides go on from the
//! same cluster. Each pod gets a [`PodResult`]: a [`Class`] and one line per difference.
//!
//! The same function serves the recorded fixtures (`tests/fixtures.rs`) and generated cases.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use sched_core::config::{ConfigError, DEFAULT_SCHEDULER_NAME, Registry};
use sched_core::framework::KubeVersion;
use sched_core::model::Pod;
use sched_core::plugins::volume;
use sched_core::profile::{BuildError, Cache, FitError, Profile, ScheduleError};
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
    /// Different feasible nodes (one side may have none).
    Feasible,
    /// The same feasible nodes, different scores or totals, the same nodes tied at the top.
    Scores,
    /// The same feasible nodes, different nodes tied at the top (the placement can differ).
    TieSet,
    /// Nothing fits on either side, explained differently (FitError text or a node's reasons).
    Wording,
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
            Class::Feasible => "feasible",
            Class::Scores => "scores",
            Class::TieSet => "tie-set",
            Class::Wording => "wording",
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
            Class::Scores => 3,
            Class::TieSet => 4,
            Class::Feasible => 5,
            Class::Gating => 6,
            Class::Error => 7,
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
}

impl PodResult {
    fn new(pod: &str) -> PodResult {
        PodResult {
            pod: pod.to_string(),
            class: Class::Exact,
            details: Vec::new(),
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
    // kube ran with this percentage when the oracle records it (0: adaptive), else 100.
    let percentage = oracle
        .meta
        .percentage_of_nodes_to_score
        .map_or(100, |p| u32::try_from(p).unwrap_or(0));
    let mut profiles: Vec<(String, Profile)> = Vec::new();
    let builders = config
        .builders(&Registry::v1_34())
        .map_err(|source| ReplayError::Config {
            case: case.name.clone(),
            source,
        })?;
    for (name, builder) in builders {
        let profile = builder
            .threads(1)
            .seed(SEED)
            .percentage_of_nodes_to_score(percentage)
            .build()
            .map_err(|source| ReplayError::Profile {
                case: case.name.clone(),
                profile: name.clone(),
                source,
            })?;
        profiles.push((name, profile));
    }
    // kube-scheduler keeps one round-robin start index for all its profiles; so does one
    // cache shared by the profiles here.
    let mut cache = Cache::seeded(SEED);
    let mut snapshot = case.snapshot_with_node_order(&oracle.meta.node_order)?;
    let pending: HashMap<String, &Pod> =
        case.cluster.pending.iter().map(|p| (p.key(), p)).collect();

    let mut results = Vec::with_capacity(oracle.pods.len());
    for answer in &oracle.pods {
        let mut result = PodResult::new(&answer.pod);
        let Some(pod) = pending.get(&answer.pod).copied() else {
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
        match profiles.iter().find(|(name, _)| name == wanted) {
            None => {
                let known: Vec<&str> = profiles.iter().map(|(n, _)| n.as_str()).collect();
                result.differ(
                    Class::Error,
                    format!(
                        "ours: no profile {wanted:?} (profiles: {}); kube: {}",
                        known.join(", "),
                        kube_outcome(answer)
                    ),
                );
            }
            Some((_, profile)) => {
                let ours = attempt(profile, &mut cache, pod, &snapshot);
                compare(&ours, answer, &mut result);
            }
        }
        // kube's VolumeBinding of the pod's profile reserves, in its own volume binder.
        let binder = profiles
            .iter()
            .find(|(name, _)| name == wanted)
            .and_then(|(_, p)| p.volume_binder());
        if let Some(chosen) = answer.chosen.as_deref().filter(|c| !c.is_empty())
            && let Err(e) = assume(&mut snapshot, binder, pod, chosen)
        {
            result.differ(Class::Error, e);
        }
        results.push(result);
    }
    Ok(results)
}

/// Places `pod` on `node` as kube did: assumed in the snapshot, then the VolumeBinding reserve
/// of the pod's profile, for that profile's volume binder `binder` (the PersistentVolumes it
/// matched there and the claims to provision: kube's volume binder of each profile has its own
/// assume caches). A profile without VolumeBinding reserves no volumes.
fn assume(
    snapshot: &mut Snapshot,
    binder: Option<VolumeBinderId>,
    pod: &Pod,
    node: &str,
) -> Result<(), String> {
    let mut placed = pod.clone();
    placed.spec.node_name = node.to_string();
    snapshot
        .assume(placed, node)
        .map_err(|e| format!("assuming the pod on kube's node {node}: {e}"))?;
    if let Some(binder) = binder {
        volume::assume_volumes(snapshot, binder, pod, node, KubeVersion::V1_34).map_err(|r| {
            format!(
                "reserving the pod's volumes on kube's node {node}: VolumeBinding fails there \
                 ({r:?})"
            )
        })?;
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
    /// Nothing fits.
    Unschedulable(FitError),
    /// Held by its scheduling gates.
    Gated(Vec<String>),
    /// Another error.
    Failed(String),
}

fn attempt(profile: &Profile, cache: &mut Cache, pod: &Pod, snapshot: &Snapshot) -> Ours {
    match profile.schedule(cache, pod, snapshot) {
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
        Err(ScheduleError::Unschedulable(fit)) => Ours::Unschedulable(fit),
        Err(ScheduleError::SchedulingGated { gates, .. }) => Ours::Gated(gates),
        Err(e) => Ours::Failed(e.to_string()),
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
        Ours::Unschedulable(fit) => format!("unschedulable: {fit}"),
        Ours::Gated(gates) => format!("gated ({})", gates.join(", ")),
        Ours::Failed(e) => format!("error: {e}"),
    }
}

fn compare(ours: &Ours, kube: &PodAnswer, result: &mut PodResult) {
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
        Ours::Unschedulable(fit) => {
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
            compare_post_filter(fit, kube, result);
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
        .failures
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

/// The place for comparing kube's PostFilter outcome (`kube.post_filter`: DefaultPreemption's
/// nominated node, victims and final FitError) with sched-core's preemption, and for
/// deleting kube's victims so that both sides go on from the same cluster. Not compared yet:
/// the replay checks scheduling decisions only.
fn compare_post_filter(_ours: &FitError, _kube: &PodAnswer, _result: &mut PodResult) {}

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
