//! Counts per topology domain of the pods that pod affinity terms count, kept current as pods
//! and nodes come and go, so that InterPodAffinity reads a count per node instead of matching
//! every pod of the cluster for every pod it schedules (kube's PreFilter and PreScore state,
//! kept incrementally).
//!
//! Two kinds of counts, each per topology key and per value of that key (a domain):
//! - per **term group** (pods with equal [`PodInfo::affinity_id`]: the same pod affinity terms,
//!   and the same namespace where a term defaults to it): how many of the group's pods are in
//!   each domain of every topology key its terms name. Existing pods' terms act on the
//!   incoming pod through these: the plugin decides once per group whether a term matches the
//!   pod, then reads the group's count for the node's domain.
//! - per **matcher** (the selector and namespaces of a term, or the conjunction of a pod's
//!   required affinity terms, as some pod in the snapshot has them): how many pods matching it
//!   are in each domain of the keys those pods' terms use. An incoming pod whose terms are
//!   written as an existing pod's (replicas of one workload) reads its counts from there;
//!   other pods' terms are matched against every pod as before. A pod's topology spread
//!   constraints register matchers too (the pods of its namespace that the constraint's
//!   selector matches, pods being deleted left out, per domain of its topology key), so that
//!   PodTopologySpread reads the counts of its replicas' constraints instead of counting
//!   every node's pods.
//!
//! Domains are dense per key: every topology key in use has a column with each node's domain,
//! so reading a count is two array loads. Matchers and groups live while a pod in the snapshot
//! has them (reference counts), so adding and removing a pod are exact inverses.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::FixedState;

use super::intern::{Interner, LabelIds, Sym};
use super::namespaces::NamespaceLabels;
use super::node_info::{NodeInfo, PodInfo};
use super::selector::CompiledSelector;
use crate::model::{LabelSelector, Pod, PodAffinity, PodAffinityTerm};

/// A node without the topology key.
const NO_DOMAIN: u32 = u32::MAX;

/// Where the counts of one group or matcher for one topology key live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountsRef {
    slot: u32,
    id: u32,
}

/// A topology key's domains: per node its domain, per domain its value and node count.
#[derive(Clone, Debug, Default)]
struct KeyColumn {
    key: Sym,
    /// Per node (snapshot order): its domain, [`NO_DOMAIN`] without the label.
    node_domain: Vec<u32>,
    domain_of: HashMap<Sym, u32, FixedState>,
    /// Per domain: its value and its nodes (none: free, on `free`).
    domains: Vec<(Sym, Vec<u32>)>,
    free: Vec<u32>,
    /// The nodes with the key.
    with_key: u32,
}

impl KeyColumn {
    /// The domain of the node at `node` with these labels, adding the node to it.
    fn enter(&mut self, labels: &LabelIds, node: u32) -> u32 {
        let Some(value) = labels.get(self.key) else {
            return NO_DOMAIN;
        };
        let d = match self.domain_of.get(&value) {
            Some(&d) => d,
            None => {
                let d = match self.free.pop() {
                    Some(d) => {
                        self.domains[d as usize].0 = value;
                        d
                    }
                    None => {
                        self.domains.push((value, Vec::new()));
                        (self.domains.len() - 1) as u32
                    }
                };
                self.domain_of.insert(value, d);
                d
            }
        };
        self.domains[d as usize].1.push(node);
        self.with_key += 1;
        d
    }

    /// Takes the node at `node` out of its domain `d`; a domain left without nodes is freed
    /// (no pod can be counted in it then, so its counts are 0 when it is reused).
    fn leave(&mut self, d: u32, node: u32) {
        if d == NO_DOMAIN {
            return;
        }
        let (value, nodes) = &mut self.domains[d as usize];
        if let Some(at) = nodes.iter().position(|&n| n == node) {
            nodes.swap_remove(at);
            self.with_key -= 1;
        }
        if nodes.is_empty() {
            let value = *value;
            self.domain_of.remove(&value);
            self.free.push(d);
        }
    }
}

/// Pods per domain of one key.
#[derive(Clone, Debug, Default)]
struct DomainCounts {
    slot: u32,
    per_domain: Vec<u32>,
    total: u64,
    /// The node flag ([`AFFINITY_FLAGS`]) set on the nodes of every domain with a pod, if
    /// this count has one.
    flag: u32,
}

/// The [`super::NodeFree`] flag bits the index sets: one per count that a required term reads
/// (the first 16 such counts), on the nodes whose domain holds a counted pod, so that the
/// fused filter pass can check required terms as flags.
pub(crate) const AFFINITY_FLAGS: u32 = 0xffff_0000;

const _: () = assert!(AFFINITY_FLAGS & 0xffff == 0);

/// Per node, the [`AFFINITY_FLAGS`] set, and which nodes changed since the snapshot last
/// copied them into its filter rows.
#[derive(Clone, Debug, Default)]
struct NodeFlags {
    flags: Vec<u32>,
    dirty: Vec<u32>,
}

impl NodeFlags {
    fn set(&mut self, nodes: &[u32], flag: u32, on: bool) {
        for &n in nodes {
            let f = &mut self.flags[n as usize];
            if on {
                *f |= flag;
            } else {
                *f &= !flag;
            }
            self.dirty.push(n);
        }
    }
}

/// Counts one pod more (or less) in domain `d` of `c`, whose key's column is `col`.
fn bump(c: &mut DomainCounts, col: &KeyColumn, flags: &mut NodeFlags, d: u32, up: bool) {
    if d == NO_DOMAIN {
        return;
    }
    let di = d as usize;
    if di >= c.per_domain.len() {
        c.per_domain.resize(di + 1, 0);
    }
    if up {
        c.per_domain[di] += 1;
        c.total += 1;
        if c.flag != 0 && c.per_domain[di] == 1 {
            flags.set(&col.domains[di].1, c.flag, true);
        }
    } else {
        c.per_domain[di] = c.per_domain[di].saturating_sub(1);
        c.total = c.total.saturating_sub(1);
        if c.flag != 0 && c.per_domain[di] == 0 {
            flags.set(&col.domains[di].1, c.flag, false);
        }
    }
}

/// The pods sharing one [`PodInfo::affinity_id`].
#[derive(Clone, Debug)]
struct TermGroup {
    id: Sym,
    pods: u32,
    namespace: String,
    affinity: Option<PodAffinity>,
    anti_affinity: Option<PodAffinity>,
    /// Each distinct topology key of its terms, with the group's counts for it.
    keys: Vec<(Sym, u32)>,
}

/// The namespaces of a tracked term: every namespace, these names, or these names and the
/// namespaces whose labels a (non-empty) `namespaceSelector` matches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NsSpec {
    All,
    Names(Vec<String>),
    Selected {
        names: Vec<String>,
        selector: LabelSelector,
    },
}

impl NsSpec {
    /// The namespaces as interned ids (`None`: every namespace), the selected ones as
    /// `namespaces` labels them now.
    fn resolve(&self, namespaces: &NamespaceLabels, interner: &mut Interner) -> Option<Vec<Sym>> {
        match self {
            NsSpec::All => None,
            NsSpec::Names(names) => Some(names.iter().map(|n| interner.intern(n)).collect()),
            NsSpec::Selected { names, selector } => {
                let mut ids: Vec<Sym> = names.iter().map(|n| interner.intern(n)).collect();
                for (n, labels) in namespaces.iter() {
                    if selector.matches(labels) {
                        let id = interner.intern(n);
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
                Some(ids)
            }
        }
    }
}

/// A term's pod selection as written: what pods it counts, whatever its topology key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SpecTerm {
    namespaces: NsSpec,
    selector: Option<LabelSelector>,
    /// Pods being deleted left out (a spread constraint's selection; pod affinity terms
    /// count them).
    live: bool,
}

impl SpecTerm {
    /// The selection of `term` of a pod in `owner`.
    fn of(term: &PodAffinityTerm, owner: &str) -> Option<SpecTerm> {
        let namespaces = match &term.namespace_selector {
            Some(s) if s.match_labels.is_empty() && s.match_expressions.is_empty() => NsSpec::All,
            Some(s) => NsSpec::Selected {
                names: term.namespaces.clone(),
                selector: s.clone(),
            },
            None if term.namespaces.is_empty() => NsSpec::Names(vec![owner.to_string()]),
            None => NsSpec::Names(term.namespaces.clone()),
        };
        Some(SpecTerm {
            namespaces,
            selector: term.label_selector.clone(),
            live: false,
        })
    }

    /// The selection of a spread constraint of a pod in `owner` with this (merged) selector:
    /// the pods of `owner` it matches, pods being deleted left out.
    fn spread(selector: &LabelSelector, owner: &str) -> SpecTerm {
        SpecTerm {
            namespaces: NsSpec::Names(vec![owner.to_string()]),
            selector: Some(selector.clone()),
            live: true,
        }
    }

    /// Whether this is the selection of a spread constraint with `selector` in `owner`.
    fn is_spread(&self, selector: &LabelSelector, owner: &str) -> bool {
        self.live
            && matches!(&self.namespaces, NsSpec::Names(n) if n.len() == 1 && n[0] == owner)
            && self.selector.as_ref() == Some(selector)
    }

    /// Whether `term` of a pod in `owner` selects as this one does.
    fn same_as(&self, term: &PodAffinityTerm, owner: &str) -> bool {
        let ns_same = match (&self.namespaces, &term.namespace_selector) {
            (NsSpec::All, Some(s)) => s.match_labels.is_empty() && s.match_expressions.is_empty(),
            (NsSpec::Names(names), None) if term.namespaces.is_empty() => {
                names.len() == 1 && names[0] == owner
            }
            (NsSpec::Names(names), None) => *names == term.namespaces,
            (NsSpec::Selected { names, selector }, Some(s)) => {
                *names == term.namespaces && selector == s
            }
            _ => false,
        };
        !self.live && ns_same && self.selector == term.label_selector
    }
}

/// Hashes the selection of a conjunction of terms as [`SpecTerm::of`] normalizes it (`None` when
/// one is not tracked).
fn spec_hash(terms: &[PodAffinityTerm], owner: &str) -> Option<u64> {
    let mut h = FixedState::default().build_hasher();
    for t in terms {
        match &t.namespace_selector {
            Some(s) if s.match_labels.is_empty() && s.match_expressions.is_empty() => h.write_u8(1),
            Some(s) => {
                h.write_u8(10);
                for n in &t.namespaces {
                    n.hash(&mut h);
                }
                hash_selector(&mut h, Some(s));
            }
            None if t.namespaces.is_empty() => {
                h.write_u8(2);
                owner.hash(&mut h);
            }
            None => {
                h.write_u8(2);
                for n in &t.namespaces {
                    n.hash(&mut h);
                }
            }
        }
        hash_selector(&mut h, t.label_selector.as_ref());
        h.write_u8(7);
    }
    Some(h.finish())
}

/// Hashes the selection of a spread constraint ([`SpecTerm::spread`]).
fn spread_hash(selector: &LabelSelector, owner: &str) -> u64 {
    let mut h = FixedState::default().build_hasher();
    h.write_u8(8);
    owner.hash(&mut h);
    hash_selector(&mut h, Some(selector));
    h.finish()
}

fn hash_selector(h: &mut impl Hasher, selector: Option<&LabelSelector>) {
    match selector {
        None => h.write_u8(3),
        Some(s) => {
            h.write_u8(4);
            for (k, v) in &s.match_labels {
                k.hash(h);
                v.hash(h);
            }
            h.write_u8(5);
            for r in &s.match_expressions {
                r.key.hash(h);
                r.operator.hash(h);
                for v in &r.values {
                    v.hash(h);
                }
                h.write_u8(6);
            }
        }
    }
}

/// A conjunction of term selections some pod in the snapshot has, with its counts.
#[derive(Clone, Debug)]
struct Matcher {
    hash: u64,
    spec: Vec<SpecTerm>,
    /// Per term: all namespaces, or these interned ones; and the selector.
    compiled: Vec<(Option<Vec<Sym>>, CompiledSelector)>,
    /// Pods being deleted left out ([`SpecTerm::live`]).
    live: bool,
    /// Whether a term selects namespaces by their labels ([`NsSpec::Selected`]), so that the
    /// namespaces it covers change with them.
    by_labels: bool,
    /// Pods that registered it (once per use).
    refs: u32,
    /// Per topology key: how many registrations use it, the counts, and how many of those
    /// registrations are of required terms (the count has a node flag while there are some).
    keys: Vec<(Sym, u32, u32, u32)>,
}

impl Matcher {
    #[inline]
    fn matches(&self, p: &PodInfo) -> bool {
        (!self.live || !p.pod().is_terminating())
            && self.compiled.iter().all(|(ns, sel)| {
                ns.as_ref()
                    .is_none_or(|ids| ids.contains(&p.namespace_id()))
                    && sel.matches(p.labels())
            })
    }
}

/// A term group as the plugins read it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupView<'a> {
    index: &'a AffinityIndex,
    group: &'a TermGroup,
}

impl<'a> GroupView<'a> {
    /// The namespace of the group's pods (what a term without namespaces covers).
    pub(crate) fn namespace(&self) -> &'a str {
        &self.group.namespace
    }

    /// The group's pod affinity.
    pub(crate) fn affinity(&self) -> Option<&'a PodAffinity> {
        self.group.affinity.as_ref()
    }

    /// The group's pod anti-affinity.
    pub(crate) fn anti_affinity(&self) -> Option<&'a PodAffinity> {
        self.group.anti_affinity.as_ref()
    }

    /// The group's counts for a topology key its terms name.
    pub(crate) fn counts(&self, key: Option<Sym>) -> Option<CountsRef> {
        let key = key?;
        self.group
            .keys
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, id)| self.index.counts_ref(id))
    }
}

/// Puts `item` in a freed slot of `slots` (its index from `free`), else in a new one; returns
/// the index.
fn put_in_free_slot<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<u32>, item: T) -> u32 {
    match free.pop() {
        Some(i) => {
            slots[i as usize] = Some(item);
            i
        }
        None => {
            slots.push(Some(item));
            (slots.len() - 1) as u32
        }
    }
}

/// The counts per topology domain of a [`super::Snapshot`] (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(crate) struct AffinityIndex {
    columns: Vec<KeyColumn>,
    node_flags: NodeFlags,
    /// The [`AFFINITY_FLAGS`] bits some count has.
    used_flags: u32,
    slot_of: HashMap<Sym, u32, FixedState>,
    counts: Vec<DomainCounts>,
    free_counts: Vec<u32>,
    groups: Vec<Option<TermGroup>>,
    free_groups: Vec<u32>,
    group_of: HashMap<Sym, u32, FixedState>,
    matchers: Vec<Option<Matcher>>,
    free_matchers: Vec<u32>,
    matcher_of: HashMap<u64, Vec<u32>, FixedState>,
}

/// The term conjunctions a pod registers as matchers, each with its topology keys: its
/// required affinity terms together, and every other term alone.
/// The second argument says whether the terms are required (the filter reads them).
fn for_each_spec(pod: &Pod, mut f: impl FnMut(&[PodAffinityTerm], bool)) {
    let Some(a) = pod.spec.affinity.as_ref() else {
        return;
    };
    if let Some(pa) = &a.pod_affinity {
        if !pa.required.is_empty() {
            f(&pa.required, true);
        }
        for t in &pa.preferred {
            f(std::slice::from_ref(&t.pod_affinity_term), false);
        }
    }
    if let Some(pa) = &a.pod_anti_affinity {
        for t in &pa.required {
            f(std::slice::from_ref(t), true);
        }
        for t in &pa.preferred {
            f(std::slice::from_ref(&t.pod_affinity_term), false);
        }
    }
}

/// Every term of an affinity, required then preferred.
fn terms_of(a: Option<&PodAffinity>) -> impl Iterator<Item = &PodAffinityTerm> {
    a.into_iter().flat_map(|a| {
        a.required
            .iter()
            .chain(a.preferred.iter().map(|t| &t.pod_affinity_term))
    })
}

/// The selections a pod's own spread constraints count, with their topology keys: each
/// constraint with a `labelSelector`, merged with its `matchLabelKeys` as kube v1.34 does
/// ([`TopologySpreadConstraint::selector_for`]).
fn spread_selections(pod: &Pod) -> impl Iterator<Item = (Cow<'_, LabelSelector>, &str)> {
    pod.spec.topology_spread_constraints.iter().filter_map(|c| {
        let selector = if c.match_label_keys.is_empty() {
            Cow::Borrowed(c.label_selector.as_ref()?)
        } else {
            Cow::Owned(c.selector_for(pod)?)
        };
        Some((selector, c.topology_key.as_str()))
    })
}

impl AffinityIndex {
    // ----- reading (the plugins) -----

    /// The counts per domain of `key` of the pods in `owner` that `selector` matches, pods
    /// being deleted left out (a spread constraint's selection); `None` when no pod in the
    /// snapshot has a spread constraint with this selection and key.
    pub(crate) fn spread_counts(
        &self,
        selector: &LabelSelector,
        owner: &str,
        key: Option<Sym>,
    ) -> Option<CountsRef> {
        let key = key?;
        let m = self.find_spread(selector, owner, spread_hash(selector, owner))?;
        self.matchers[m as usize]
            .as_ref()?
            .keys
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|&(_, _, id, _)| self.counts_ref(id))
    }

    /// A count's domains (those with a node), each with its value and count.
    pub(crate) fn domains(&self, c: CountsRef) -> impl Iterator<Item = (Sym, u32)> + '_ {
        let per_domain = &self.counts[c.id as usize].per_domain;
        self.columns[c.slot as usize]
            .domains
            .iter()
            .enumerate()
            .filter(|(_, (_, nodes))| !nodes.is_empty())
            .map(|(d, &(value, _))| (value, per_domain.get(d).copied().unwrap_or(0)))
    }

    /// The count in the domain with this value, `None` when no node has it.
    pub(crate) fn count_of_value(&self, c: CountsRef, value: Sym) -> Option<u32> {
        let d = *self.columns[c.slot as usize].domain_of.get(&value)?;
        Some(
            self.counts[c.id as usize]
                .per_domain
                .get(d as usize)
                .copied()
                .unwrap_or(0),
        )
    }

    /// The number of nodes with a count's topology key.
    pub(crate) fn nodes_with_key(&self, c: CountsRef) -> usize {
        self.columns[c.slot as usize].with_key as usize
    }

    /// The groups of terms of the pods in the snapshot.
    pub(crate) fn groups(&self) -> impl Iterator<Item = GroupView<'_>> {
        self.groups
            .iter()
            .flatten()
            .map(|group| GroupView { index: self, group })
    }

    /// The counts of the pods that `terms` (all of them) select, as a pod in `owner` has them,
    /// per domain of `key`; `None` when no pod in the snapshot has the terms so with that key.
    pub(crate) fn matcher_counts(
        &self,
        terms: &[PodAffinityTerm],
        owner: &str,
        key: Option<Sym>,
        by_snapshot_labels: bool,
    ) -> Option<CountsRef> {
        let key = key?;
        if !by_snapshot_labels
            && terms.iter().any(|t| {
                t.namespace_selector
                    .as_ref()
                    .is_some_and(|s| !s.match_labels.is_empty() || !s.match_expressions.is_empty())
            })
        {
            return None;
        }
        let hash = spec_hash(terms, owner)?;
        let candidates = self.matcher_of.get(&hash)?;
        for &m in candidates {
            let Some(matcher) = &self.matchers[m as usize] else {
                continue;
            };
            if matcher.spec.len() == terms.len()
                && matcher
                    .spec
                    .iter()
                    .zip(terms)
                    .all(|(s, t)| s.same_as(t, owner))
            {
                return matcher
                    .keys
                    .iter()
                    .find(|(k, ..)| *k == key)
                    .map(|&(_, _, id, _)| self.counts_ref(id));
            }
        }
        None
    }

    /// Fills in the slot of a reference from its counts.
    fn counts_ref(&self, id: u32) -> CountsRef {
        CountsRef {
            slot: self.counts[id as usize].slot,
            id,
        }
    }

    /// The number of counted pods in all domains.
    pub(crate) fn total(&self, c: CountsRef) -> u64 {
        self.counts[c.id as usize].total
    }

    /// A count's columns: per node its domain ([`u32::MAX`] without the key), and per domain
    /// the count (shorter than the number of domains when the last ones hold no pod), so that
    /// `counts.get(domains[node] as usize)` is the node's count or `None` for 0.
    #[inline]
    pub(crate) fn columns(&self, c: CountsRef) -> (&[u32], &[u32]) {
        (
            &self.columns[c.slot as usize].node_domain,
            &self.counts[c.id as usize].per_domain,
        )
    }

    /// The count in the domain of the node at `node`, `None` when the node lacks the key.
    #[inline]
    pub(crate) fn count(&self, c: CountsRef, node: usize) -> Option<u32> {
        let d = self.columns[c.slot as usize].node_domain[node];
        if d == NO_DOMAIN {
            return None;
        }
        Some(
            self.counts[c.id as usize]
                .per_domain
                .get(d as usize)
                .copied()
                .unwrap_or(0),
        )
    }

    /// The node flag of a count ([`AFFINITY_FLAGS`]), 0 when it has none.
    pub(crate) fn flag(&self, c: CountsRef) -> u32 {
        self.counts[c.id as usize].flag
    }

    /// The [`AFFINITY_FLAGS`] of the node at `node`.
    pub(crate) fn node_flags(&self, node: usize) -> u32 {
        self.node_flags.flags.get(node).copied().unwrap_or(0)
    }

    /// The nodes whose flags changed since the last call.
    pub(crate) fn take_dirty(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.node_flags.dirty)
    }

    /// Gives the returned dirty list back, emptied, so that its room is reused.
    pub(crate) fn give_back(&mut self, mut dirty: Vec<u32>) {
        dirty.clear();
        if self.node_flags.dirty.is_empty() {
            self.node_flags.dirty = dirty;
        }
    }

    // ----- keeping current (the snapshot) -----

    /// The slot of a topology key, made (with every node's domain) when new.
    fn slot(&mut self, key: Sym, infos: &[NodeInfo]) -> u32 {
        if let Some(&s) = self.slot_of.get(&key) {
            return s;
        }
        let mut col = KeyColumn {
            key,
            ..KeyColumn::default()
        };
        col.node_domain = infos
            .iter()
            .enumerate()
            .map(|(n, i)| col.enter(i.labels(), n as u32))
            .collect();
        let s = self.columns.len() as u32;
        self.columns.push(col);
        self.slot_of.insert(key, s);
        s
    }

    fn new_counts(&mut self, slot: u32) -> u32 {
        let c = DomainCounts {
            slot,
            ..DomainCounts::default()
        };
        match self.free_counts.pop() {
            Some(id) => {
                self.counts[id as usize] = c;
                id
            }
            None => {
                self.counts.push(c);
                (self.counts.len() - 1) as u32
            }
        }
    }

    /// Gives a count a node flag, if one is free, and sets it on the nodes of every domain
    /// with a pod.
    fn want_flag(&mut self, id: u32) {
        let c = &mut self.counts[id as usize];
        let free = AFFINITY_FLAGS & !self.used_flags;
        if c.flag != 0 || free == 0 {
            return;
        }
        c.flag = 1 << free.trailing_zeros();
        self.used_flags |= c.flag;
        let col = &self.columns[c.slot as usize];
        for (d, &n) in c.per_domain.iter().enumerate() {
            if n > 0 {
                self.node_flags.set(&col.domains[d].1, c.flag, true);
            }
        }
    }

    /// Takes a count's node flag back, clearing it on every node.
    fn release_flag(&mut self, id: u32) {
        let c = &mut self.counts[id as usize];
        if c.flag == 0 {
            return;
        }
        let col = &self.columns[c.slot as usize];
        for (d, &n) in c.per_domain.iter().enumerate() {
            if n > 0 {
                self.node_flags.set(&col.domains[d].1, c.flag, false);
            }
        }
        self.used_flags &= !c.flag;
        c.flag = 0;
    }

    fn free_counts(&mut self, id: u32) {
        self.release_flag(id);
        self.counts[id as usize] = DomainCounts::default();
        self.free_counts.push(id);
    }

    /// The flags of the node at `node` from the counts (after its domains changed).
    fn recompute_node_flags(&mut self, node: usize) {
        let mut f = 0;
        for c in &self.counts {
            if c.flag != 0 {
                let d = self.columns[c.slot as usize].node_domain[node];
                if d != NO_DOMAIN && c.per_domain.get(d as usize).is_some_and(|&n| n > 0) {
                    f |= c.flag;
                }
            }
        }
        self.node_flags.flags[node] = f;
        self.node_flags.dirty.push(node as u32);
    }

    /// A node joined at the end of the order (with no pods).
    pub(crate) fn add_node(&mut self, info: &NodeInfo) {
        let n = self.node_flags.flags.len() as u32;
        for col in &mut self.columns {
            let d = col.enter(info.labels(), n);
            col.node_domain.push(d);
        }
        self.node_flags.flags.push(0);
        // Its domains may hold pods already.
        self.recompute_node_flags(n as usize);
    }

    /// The node at `i` leaves (its pods must have left the index first).
    pub(crate) fn remove_node(&mut self, i: usize) {
        let gone = i as u32;
        for col in &mut self.columns {
            let d = col.node_domain.remove(i);
            col.leave(d, gone);
            for (_, nodes) in &mut col.domains {
                for n in nodes.iter_mut() {
                    if *n > gone {
                        *n -= 1;
                    }
                }
            }
        }
        self.node_flags.flags.remove(i);
        self.node_flags.dirty.clear();
    }

    /// The node at `i` has new labels: its pods move to their new domains.
    pub(crate) fn relabel_node(&mut self, i: usize, info: &NodeInfo) {
        for p in info.pods() {
            self.count_pod(p, i, false);
        }
        for col in &mut self.columns {
            let d = col.node_domain[i];
            col.leave(d, i as u32);
            col.node_domain[i] = col.enter(info.labels(), i as u32);
        }
        for p in info.pods() {
            self.count_pod(p, i, true);
        }
        self.recompute_node_flags(i);
    }

    /// The namespaces' labels changed: every matcher that selects namespaces by their labels
    /// covers the namespaces they select now, its counts recounted where that changed.
    pub(crate) fn relabel_namespaces(
        &mut self,
        infos: &[NodeInfo],
        namespaces: &NamespaceLabels,
        interner: &mut Interner,
    ) {
        for m in 0..self.matchers.len() {
            let Some(matcher) = self.matchers[m].as_ref().filter(|m| m.by_labels) else {
                continue;
            };
            let compiled: Vec<_> = matcher
                .spec
                .iter()
                .zip(&matcher.compiled)
                .map(|(s, (_, sel))| (s.namespaces.resolve(namespaces, interner), sel.clone()))
                .collect();
            if compiled == matcher.compiled {
                continue;
            }
            self.count_selected(m, None, infos, false);
            if let Some(matcher) = self.matchers[m].as_mut() {
                matcher.compiled = compiled;
            }
            self.count_selected(m, None, infos, true);
        }
    }

    /// Counts (or uncounts) every pod the matcher at `m` selects in each of its counts, or in
    /// the count `only`.
    fn count_selected(&mut self, m: usize, only: Option<u32>, infos: &[NodeInfo], up: bool) {
        let AffinityIndex {
            columns,
            node_flags,
            counts,
            matchers,
            ..
        } = self;
        let Some(matcher) = matchers[m].as_ref() else {
            return;
        };
        for (node, info) in infos.iter().enumerate() {
            for p in info.pods() {
                if matcher.matches(p) {
                    for &(_, _, id, _) in &matcher.keys {
                        if only.is_some_and(|o| o != id) {
                            continue;
                        }
                        let c = &mut counts[id as usize];
                        let col = &columns[c.slot as usize];
                        bump(c, col, node_flags, col.node_domain[node], up);
                    }
                }
            }
        }
    }

    /// A pod joins the node at `node`: its terms are registered (a new matcher counts the
    /// pods already here), then the pod is counted. Call before the pod is on the node.
    pub(crate) fn add_pod(
        &mut self,
        p: &PodInfo,
        node: usize,
        infos: &[NodeInfo],
        namespaces: &NamespaceLabels,
        interner: &mut Interner,
    ) {
        let owner = p.pod().metadata.namespace.as_str();
        if p.has_affinity() {
            for_each_spec(p.pod(), |terms, required| {
                self.register(terms, required, owner, infos, namespaces, interner)
            });
            if !self.group_of.contains_key(&p.affinity_id()) {
                self.new_group(p, infos, interner);
            }
        }
        for (selector, key) in spread_selections(p.pod()) {
            self.register_spread(&selector, key, owner, infos, namespaces, interner);
        }
        self.count_pod(p, node, true);
    }

    /// A pod leaves the node at `node` (the reverse of [`AffinityIndex::add_pod`]).
    pub(crate) fn remove_pod(&mut self, p: &PodInfo, node: usize, interner: &Interner) {
        self.count_pod(p, node, false);
        let owner = p.pod().metadata.namespace.as_str();
        for (selector, key) in spread_selections(p.pod()) {
            self.unregister_spread(&selector, key, owner, interner);
        }
        if p.has_affinity() {
            for_each_spec(p.pod(), |terms, required| {
                self.unregister(terms, required, owner, interner)
            });
            if let Some(&g) = self.group_of.get(&p.affinity_id())
                && self.groups[g as usize]
                    .as_ref()
                    .is_some_and(|g| g.pods == 0)
            {
                self.drop_group(g);
            }
        }
    }

    /// Counts (or uncounts) a pod on the node at `node` in its group and in every matcher
    /// that selects it.
    fn count_pod(&mut self, p: &PodInfo, node: usize, up: bool) {
        let AffinityIndex {
            columns,
            node_flags,
            counts,
            groups,
            group_of,
            matchers,
            ..
        } = self;
        if p.has_affinity()
            && let Some(&g) = group_of.get(&p.affinity_id())
            && let Some(group) = groups[g as usize].as_mut()
        {
            if up {
                group.pods += 1;
            } else {
                group.pods = group.pods.saturating_sub(1);
            }
            for &(_, id) in &group.keys {
                let c = &mut counts[id as usize];
                let col = &columns[c.slot as usize];
                bump(c, col, node_flags, col.node_domain[node], up);
            }
        }
        for m in matchers.iter().flatten() {
            if m.matches(p) {
                for &(_, _, id, _) in &m.keys {
                    let c = &mut counts[id as usize];
                    let col = &columns[c.slot as usize];
                    bump(c, col, node_flags, col.node_domain[node], up);
                }
            }
        }
    }

    fn new_group(&mut self, p: &PodInfo, infos: &[NodeInfo], interner: &mut Interner) {
        let pod = p.pod();
        let a = pod.spec.affinity.as_ref();
        let affinity = a.and_then(|a| a.pod_affinity.clone());
        let anti_affinity = a.and_then(|a| a.pod_anti_affinity.clone());
        let mut keys: Vec<(Sym, u32)> = Vec::new();
        for t in terms_of(affinity.as_ref()).chain(terms_of(anti_affinity.as_ref())) {
            let key = interner.intern(&t.topology_key);
            if keys.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let slot = self.slot(key, infos);
            keys.push((key, self.new_counts(slot)));
        }
        // The filter reads the counts of required anti-affinity terms: those get node flags.
        for t in anti_affinity.iter().flat_map(|a| &a.required) {
            let key = interner.intern(&t.topology_key);
            if let Some(&(_, id)) = keys.iter().find(|(k, _)| *k == key) {
                self.want_flag(id);
            }
        }
        let group = TermGroup {
            id: p.affinity_id(),
            pods: 0,
            namespace: pod.metadata.namespace.clone(),
            affinity,
            anti_affinity,
            keys,
        };
        let g = put_in_free_slot(&mut self.groups, &mut self.free_groups, group);
        self.group_of.insert(p.affinity_id(), g);
    }

    fn drop_group(&mut self, g: u32) {
        if let Some(group) = self.groups[g as usize].take() {
            for (_, id) in group.keys {
                self.free_counts(id);
            }
            self.group_of.remove(&group.id);
            self.free_groups.push(g);
        }
    }

    fn find_matcher(&self, terms: &[PodAffinityTerm], owner: &str, hash: u64) -> Option<u32> {
        self.matcher_of.get(&hash)?.iter().copied().find(|&m| {
            self.matchers[m as usize].as_ref().is_some_and(|matcher| {
                matcher.spec.len() == terms.len()
                    && matcher
                        .spec
                        .iter()
                        .zip(terms)
                        .all(|(s, t)| s.same_as(t, owner))
            })
        })
    }

    /// Registers a pod's use of a conjunction of terms (with their topology keys);
    /// `required`: the filter reads it (its counts get node flags).
    fn register(
        &mut self,
        terms: &[PodAffinityTerm],
        required: bool,
        owner: &str,
        infos: &[NodeInfo],
        namespaces: &NamespaceLabels,
        interner: &mut Interner,
    ) {
        let Some(hash) = spec_hash(terms, owner) else {
            return;
        };
        let m = match self.find_matcher(terms, owner, hash) {
            Some(m) => m,
            None => {
                let spec = terms
                    .iter()
                    .filter_map(|t| SpecTerm::of(t, owner))
                    .collect();
                self.new_matcher(hash, spec, namespaces, interner)
            }
        };
        if let Some(matcher) = self.matchers[m as usize].as_mut() {
            matcher.refs += 1;
        }
        for t in terms {
            let key = interner.intern(&t.topology_key);
            self.use_key(m, key, required, infos);
        }
    }

    /// Registers a spread constraint of a pod in `owner` with this (merged) selector and
    /// topology key.
    fn register_spread(
        &mut self,
        selector: &LabelSelector,
        key: &str,
        owner: &str,
        infos: &[NodeInfo],
        namespaces: &NamespaceLabels,
        interner: &mut Interner,
    ) {
        let hash = spread_hash(selector, owner);
        let m = match self.find_spread(selector, owner, hash) {
            Some(m) => m,
            None => self.new_matcher(
                hash,
                vec![SpecTerm::spread(selector, owner)],
                namespaces,
                interner,
            ),
        };
        if let Some(matcher) = self.matchers[m as usize].as_mut() {
            matcher.refs += 1;
        }
        let key = interner.intern(key);
        self.use_key(m, key, false, infos);
    }

    fn find_spread(&self, selector: &LabelSelector, owner: &str, hash: u64) -> Option<u32> {
        self.matcher_of.get(&hash)?.iter().copied().find(|&m| {
            self.matchers[m as usize].as_ref().is_some_and(|matcher| {
                matcher.spec.len() == 1 && matcher.spec[0].is_spread(selector, owner)
            })
        })
    }

    /// A matcher for this selection, with no use yet.
    fn new_matcher(
        &mut self,
        hash: u64,
        spec: Vec<SpecTerm>,
        namespaces: &NamespaceLabels,
        interner: &mut Interner,
    ) -> u32 {
        let compiled = spec
            .iter()
            .map(|s| {
                (
                    s.namespaces.resolve(namespaces, interner),
                    CompiledSelector::compile_interning(s.selector.as_ref(), interner),
                )
            })
            .collect();
        let matcher = Matcher {
            hash,
            live: spec.iter().any(|s| s.live),
            by_labels: spec
                .iter()
                .any(|s| matches!(s.namespaces, NsSpec::Selected { .. })),
            spec,
            compiled,
            refs: 0,
            keys: Vec::new(),
        };
        let m = put_in_free_slot(&mut self.matchers, &mut self.free_matchers, matcher);
        self.matcher_of.entry(hash).or_default().push(m);
        m
    }

    /// One use more of matcher `m` with topology key `key`: a new key counts the pods already
    /// in the snapshot.
    fn use_key(&mut self, m: u32, key: Sym, required: bool, infos: &[NodeInfo]) {
        let Some(matcher) = self.matchers[m as usize].as_mut() else {
            return;
        };
        let id = match matcher.keys.iter_mut().find(|(k, ..)| *k == key) {
            Some(entry) => {
                entry.1 += 1;
                entry.3 += u32::from(required);
                entry.2
            }
            None => {
                let slot = self.slot(key, infos);
                let id = self.new_counts(slot);
                if let Some(matcher) = self.matchers[m as usize].as_mut() {
                    matcher.keys.push((key, 1, id, u32::from(required)));
                }
                self.count_selected(m as usize, Some(id), infos, true);
                id
            }
        };
        if required {
            self.want_flag(id);
        }
    }

    /// The reverse of [`AffinityIndex::register`].
    fn unregister(
        &mut self,
        terms: &[PodAffinityTerm],
        required: bool,
        owner: &str,
        interner: &Interner,
    ) {
        let Some(hash) = spec_hash(terms, owner) else {
            return;
        };
        let Some(m) = self.find_matcher(terms, owner, hash) else {
            return;
        };
        for t in terms {
            // The key was interned when the pod registered.
            self.release_key(m, interner.get(&t.topology_key), required);
        }
        self.release_use(m);
    }

    /// The reverse of [`AffinityIndex::register_spread`].
    fn unregister_spread(
        &mut self,
        selector: &LabelSelector,
        key: &str,
        owner: &str,
        interner: &Interner,
    ) {
        let Some(m) = self.find_spread(selector, owner, spread_hash(selector, owner)) else {
            return;
        };
        self.release_key(m, interner.get(key), false);
        self.release_use(m);
    }

    /// One use less of matcher `m` with topology key `key` (the reverse of
    /// [`AffinityIndex::use_key`]).
    fn release_key(&mut self, m: u32, key: Option<Sym>, required: bool) {
        let Some(matcher) = self.matchers[m as usize].as_mut() else {
            return;
        };
        let Some(pos) = matcher.keys.iter().position(|(k, ..)| Some(*k) == key) else {
            return;
        };
        let entry = &mut matcher.keys[pos];
        entry.1 -= 1;
        let id = entry.2;
        let unflag = required && {
            entry.3 -= 1;
            entry.3 == 0
        };
        let freed = entry.1 == 0;
        if freed {
            matcher.keys.swap_remove(pos);
        }
        if unflag {
            self.release_flag(id);
        }
        if freed {
            self.free_counts(id);
        }
    }

    /// One registration less of matcher `m`, dropped with its counts after the last.
    fn release_use(&mut self, m: u32) {
        let Some(matcher) = self.matchers[m as usize].as_mut() else {
            return;
        };
        matcher.refs -= 1;
        if matcher.refs > 0 {
            return;
        }
        if let Some(matcher) = self.matchers[m as usize].take() {
            for (_, _, id, _) in matcher.keys {
                self.free_counts(id);
            }
            if let Some(list) = self.matcher_of.get_mut(&matcher.hash) {
                list.retain(|&x| x != m);
                if list.is_empty() {
                    self.matcher_of.remove(&matcher.hash);
                }
            }
        }
        self.free_matchers.push(m);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The index against a recount from the nodes' and pods' strings.

    use std::collections::BTreeMap;

    use super::*;
    use crate::plugins::interpod::selector;

    /// Pods per (topology key, value), from label strings.
    type Dump = BTreeMap<(String, String), u32>;

    /// A matcher as the pods' terms call for it: its selection, uses, and uses per key.
    type ExpectedMatcher = (Vec<SpecTerm>, u32, BTreeMap<String, u32>);

    fn recount(infos: &[NodeInfo], key: &str, mut counted: impl FnMut(&PodInfo) -> bool) -> Dump {
        let mut out = Dump::new();
        for info in infos {
            if let Some(v) = info.node().metadata.labels.get(key) {
                for p in info.pods() {
                    if counted(p) {
                        *out.entry((key.to_string(), v.clone())).or_insert(0) += 1;
                    }
                }
            }
        }
        out
    }

    fn dump(index: &AffinityIndex, id: u32, interner: &Interner) -> Result<Dump, String> {
        let c = &index.counts[id as usize];
        let col = &index.columns[c.slot as usize];
        let key = interner.resolve(col.key).to_string();
        let mut out = Dump::new();
        for (d, &n) in c.per_domain.iter().enumerate() {
            if n > 0 {
                out.insert(
                    (key.clone(), interner.resolve(col.domains[d].0).to_string()),
                    n,
                );
            }
        }
        let sum: u64 = c.per_domain.iter().map(|&n| u64::from(n)).sum();
        if sum != c.total {
            return Err(format!("total {} but domains sum to {sum}", c.total));
        }
        Ok(out)
    }

    fn selects(spec: &[SpecTerm], p: &Pod, namespaces: &NamespaceLabels) -> bool {
        spec.iter().all(|t| {
            let ns = &p.metadata.namespace;
            let ns_ok = match &t.namespaces {
                NsSpec::All => true,
                NsSpec::Names(n) => n.contains(ns),
                NsSpec::Selected { names, selector } => {
                    names.contains(ns)
                        || namespaces
                            .labels_of(ns)
                            .is_some_and(|l| selector::matches(selector, l))
                }
            };
            ns_ok
                && !(t.live && p.is_terminating())
                && selector::matches_opt(t.selector.as_ref(), &p.metadata.labels)
        })
    }

    /// What the index holds, by content (not by slot, id or flag bit): per group and per
    /// matcher, its pods or uses, and per key its uses, counts and whether it has a flag.
    pub(crate) fn canonical(index: &AffinityIndex, interner: &Interner) -> String {
        canonical_with(index, interner, true)
    }

    /// [`canonical`], with or without which counts hold a node flag (flags go to counts as
    /// they are created, so several removals and re-adds may hand them out differently).
    pub(crate) fn canonical_with(
        index: &AffinityIndex,
        interner: &Interner,
        with_flags: bool,
    ) -> String {
        let mut groups = BTreeMap::new();
        for g in index.groups.iter().flatten() {
            let keys: BTreeMap<_, _> = g
                .keys
                .iter()
                .map(|&(k, id)| {
                    let c = &index.counts[id as usize];
                    (
                        interner.resolve(k).to_string(),
                        (dump(index, id, interner).ok(), with_flags && c.flag != 0),
                    )
                })
                .collect();
            groups.insert(interner.resolve(g.id).to_string(), (g.pods, keys));
        }
        let mut matchers = BTreeMap::new();
        for m in index.matchers.iter().flatten() {
            let keys: BTreeMap<_, _> = m
                .keys
                .iter()
                .map(|&(k, refs, id, required)| {
                    let c = &index.counts[id as usize];
                    (
                        interner.resolve(k).to_string(),
                        (
                            refs,
                            required,
                            dump(index, id, interner).ok(),
                            with_flags && c.flag != 0,
                        ),
                    )
                })
                .collect();
            matchers.insert(format!("{:?}", m.spec), (m.refs, keys));
        }
        format!("{groups:#?}\n{matchers:#?}")
    }

    /// Checks every group, matcher, count and node flag of the index against a recount
    /// (`row_flags(n)`: the flags of node `n`'s filter row).
    pub(crate) fn check(
        index: &AffinityIndex,
        infos: &[NodeInfo],
        namespaces: &NamespaceLabels,
        interner: &Interner,
        row_flags: impl Fn(usize) -> u32,
    ) -> Result<(), String> {
        // Groups: one per affinity id of the pods, with their number and counts.
        let mut expected: BTreeMap<Sym, u32> = BTreeMap::new();
        for p in infos.iter().flat_map(|i| i.pods()) {
            if p.has_affinity() {
                *expected.entry(p.affinity_id()).or_insert(0) += 1;
            }
        }
        for g in index.groups.iter().flatten() {
            if expected.remove(&g.id) != Some(g.pods) {
                return Err(format!(
                    "group {:?}: {} pods",
                    interner.resolve(g.id),
                    g.pods
                ));
            }
            for &(k, id) in &g.keys {
                let want = recount(infos, interner.resolve(k), |p| p.affinity_id() == g.id);
                let have = dump(index, id, interner)?;
                if want != have {
                    return Err(format!("group counts {have:?}, recount {want:?}"));
                }
            }
        }
        if !expected.is_empty() {
            return Err(format!("{} groups missing", expected.len()));
        }
        // Matchers: one per distinct tracked selection the pods have, with its uses per key.
        let mut specs: BTreeMap<String, ExpectedMatcher> = BTreeMap::new();
        for p in infos.iter().flat_map(|i| i.pods()) {
            let owner = p.pod().metadata.namespace.as_str();
            for_each_spec(p.pod(), |terms, _| {
                let spec: Option<Vec<SpecTerm>> =
                    terms.iter().map(|t| SpecTerm::of(t, owner)).collect();
                let Some(spec) = spec else { return };
                let e = specs
                    .entry(format!("{spec:?}"))
                    .or_insert_with(|| (spec, 0, BTreeMap::new()));
                e.1 += 1;
                for t in terms {
                    *e.2.entry(t.topology_key.clone()).or_insert(0) += 1;
                }
            });
            for (sel, key) in spread_selections(p.pod()) {
                let spec = vec![SpecTerm::spread(&sel, owner)];
                let e = specs
                    .entry(format!("{spec:?}"))
                    .or_insert_with(|| (spec, 0, BTreeMap::new()));
                e.1 += 1;
                *e.2.entry(key.to_string()).or_insert(0) += 1;
            }
        }
        let live: Vec<&Matcher> = index.matchers.iter().flatten().collect();
        if live.len() != specs.len() {
            return Err(format!("{} matchers, {} expected", live.len(), specs.len()));
        }
        for m in live {
            let Some((spec, refs, keys)) = specs.get(&format!("{:?}", m.spec)) else {
                return Err(format!("matcher {:?} not expected", m.spec));
            };
            let have_keys: BTreeMap<String, u32> = m
                .keys
                .iter()
                .map(|&(k, r, ..)| (interner.resolve(k).to_string(), r))
                .collect();
            if m.refs != *refs || have_keys != *keys {
                return Err(format!(
                    "matcher {:?}: uses {} {have_keys:?}",
                    m.spec, m.refs
                ));
            }
            for &(k, _, id, _) in &m.keys {
                let want = recount(infos, interner.resolve(k), |p| {
                    selects(spec, p.pod(), namespaces)
                });
                let have = dump(index, id, interner)?;
                if want != have {
                    return Err(format!(
                        "matcher {spec:?} counts {have:?}, recount {want:?}"
                    ));
                }
            }
        }
        // Columns: each node's domain is its label value.
        for col in &index.columns {
            let with_key = infos
                .iter()
                .filter(|i| {
                    i.node()
                        .metadata
                        .labels
                        .contains_key(interner.resolve(col.key))
                })
                .count();
            if col.with_key as usize != with_key {
                return Err(format!(
                    "{} nodes with the key, {with_key} expected",
                    col.with_key
                ));
            }
            for (n, info) in infos.iter().enumerate() {
                let want = info.node().metadata.labels.get(interner.resolve(col.key));
                let d = col.node_domain[n];
                let have = (d != NO_DOMAIN).then(|| interner.resolve(col.domains[d as usize].0));
                if want.map(String::as_str) != have {
                    return Err(format!("node {n}: domain {have:?}, label {want:?}"));
                }
                if d != NO_DOMAIN && !col.domains[d as usize].1.contains(&(n as u32)) {
                    return Err(format!("node {n} missing from its domain"));
                }
            }
        }
        // Flags: distinct per count, set exactly where the count is positive.
        let mut used = 0;
        for c in &index.counts {
            if c.flag != 0 {
                if used & c.flag != 0 {
                    return Err("a flag on two counts".into());
                }
                used |= c.flag;
            }
        }
        if used != index.used_flags {
            return Err(format!(
                "used flags {:x}, counts have {used:x}",
                index.used_flags
            ));
        }
        for n in 0..infos.len() {
            let mut want = 0;
            for c in &index.counts {
                let d = if c.flag == 0 {
                    NO_DOMAIN
                } else {
                    index.columns[c.slot as usize].node_domain[n]
                };
                if d != NO_DOMAIN && c.per_domain.get(d as usize).is_some_and(|&x| x > 0) {
                    want |= c.flag;
                }
            }
            if index.node_flags(n) != want || row_flags(n) & AFFINITY_FLAGS != want {
                return Err(format!(
                    "node {n}: flags {:x}, row {:x}, expected {want:x}",
                    index.node_flags(n),
                    row_flags(n)
                ));
            }
        }
        Ok(())
    }
}
