//! kube's PreFilter for one pod: the predicates prepared in order, the node sets some of them
//! narrow the cycle to (`PreFilterResult`) intersected, and a rejection of the pod as a whole.

use std::collections::BTreeSet;

use super::cache::Cache;
use super::{FitError, NodeFailure, Profile, ScheduleError};
use crate::framework::{CycleContext, ErasedState, KubeVersion, Prepared, Reason};

impl Profile {
    /// Prepares every predicate for the pod, in order (kube's `RunPreFilterPlugins`): those
    /// that run go to `active` with their states. The predicates that narrow the nodes
    /// ([`Prepared::RunOn`]) go to the cache's `narrowing`, and the snapshot indices of the
    /// nodes all of them name to its `narrowed` (ascending).
    ///
    /// # Errors
    /// The pod's [`FitError`] when a predicate rejects it ([`Prepared::Reject`]: the
    /// predicates after it are not prepared) or when the narrowed sets have no name in common;
    /// a predicate's error.
    pub(super) fn pre_filter(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &mut Vec<(u16, ErasedState)>,
    ) -> Result<(), ScheduleError> {
        active.clear();
        let s = &mut cache.scratch;
        // A pod rejected here evaluates no node.
        s.feasible.clear();
        s.failures.clear();
        s.narrowing.clear();
        s.narrowed.clear();
        let mut names: Option<BTreeSet<String>> = None;
        for (i, p) in self.predicates.iter().enumerate() {
            match p.prepare(cx)? {
                Prepared::Skip | Prepared::Pass => {}
                Prepared::Run(state) => active.push((i as u16, state)),
                Prepared::RunOn(state, nodes) => {
                    active.push((i as u16, state));
                    s.narrowing.push(i as u16);
                    let merged = match names.take() {
                        None => nodes,
                        Some(mut prev) => {
                            prev.retain(|n| nodes.contains(n));
                            prev
                        }
                    };
                    if merged.is_empty() {
                        let plugins = self.narrowing_names(&s.narrowing);
                        let message = match plugins.as_slice() {
                            [one] => format!("node(s) didn't satisfy plugin {one}"),
                            _ => format!(
                                "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                                plugins.join(" ")
                            ),
                        };
                        let codes = self.narrowing_codes(&s.narrowing);
                        return Err(self.rejection(cx, codes, message));
                    }
                    names = Some(merged);
                }
                Prepared::Reject(r) => {
                    let codes = vec![(p.name().to_string(), r.reason())];
                    return Err(self.rejection(cx, codes, r.message().to_string()));
                }
            }
        }
        if let Some(names) = names {
            let snapshot = cx.snapshot();
            s.narrowed.extend(
                names
                    .iter()
                    .filter_map(|n| snapshot.index_of(n))
                    .map(|i| i as u32),
            );
            s.narrowed.sort_unstable();
        }
        Ok(())
    }

    /// The names of the predicates at `narrowing`, sorted and without repeats (kube's
    /// `sets.List`).
    fn narrowing_names(&self, narrowing: &[u16]) -> Vec<&str> {
        let mut names: Vec<&str> = narrowing
            .iter()
            .map(|&i| self.predicates[i as usize].name())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Each narrowing predicate with [`Reason::OutsidePreFilterResult`].
    fn narrowing_codes(&self, narrowing: &[u16]) -> Vec<(String, Reason)> {
        narrowing
            .iter()
            .map(|&i| {
                (
                    self.predicates[i as usize].name().to_string(),
                    Reason::OutsidePreFilterResult,
                )
            })
            .collect()
    }

    /// Whether the last cycle's predicates narrowed its nodes.
    pub(super) fn narrowed(cache: &Cache) -> bool {
        !cache.scratch.narrowing.is_empty()
    }

    /// The failures of the nodes outside the last cycle's narrowed set, with their snapshot
    /// indices: kube's status of the nodes a `PreFilterResult` leaves out, "node(s) didn't
    /// satisfy plugin(s) [A B]" with the narrowing plugins' names.
    pub(super) fn outside_failures(
        &self,
        cache: &Cache,
        cx: &CycleContext<'_>,
    ) -> Vec<(u32, NodeFailure)> {
        let s = &cache.scratch;
        if s.narrowing.is_empty() {
            return Vec::new();
        }
        let message = format!(
            "node(s) didn't satisfy plugin(s) [{}]",
            self.narrowing_names(&s.narrowing).join(" ")
        );
        let codes = self.narrowing_codes(&s.narrowing);
        let infos = cx.snapshot().node_infos();
        (0..infos.len() as u32)
            .filter(|i| s.narrowed.binary_search(i).is_err())
            .map(|i| {
                (
                    i,
                    NodeFailure {
                        node: infos[i as usize].name().to_string(),
                        codes: codes.clone(),
                        messages: vec![message.clone()],
                    },
                )
            })
            .collect()
    }

    /// The pod's FitError when PreFilter rejects it: every node fails with `codes` and
    /// `message`; a v1.34 profile's summary is the message alone (kube v1.20 counted it on
    /// every node).
    fn rejection(
        &self,
        cx: &CycleContext<'_>,
        codes: Vec<(String, Reason)>,
        message: String,
    ) -> ScheduleError {
        let snapshot = cx.snapshot();
        let failures = snapshot
            .node_infos()
            .iter()
            .map(|info| NodeFailure {
                node: info.name().to_string(),
                codes: codes.clone(),
                messages: vec![message.clone()],
            })
            .collect();
        let mut error = FitError::new(cx.pod().key(), snapshot.len(), failures);
        error.pre_filter_message = (self.version >= KubeVersion::V1_34).then_some(message);
        ScheduleError::Unschedulable(error)
    }
}
