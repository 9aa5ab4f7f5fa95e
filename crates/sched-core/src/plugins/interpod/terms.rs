//! Pod affinity terms as kube-scheduler processes them (`framework.AffinityTerm`): which
//! namespaces a term covers, its compiled selector and its interned topology key, plus the
//! topology-pair counters both plugins accumulate.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::selector::{self, CompiledSelector, InvalidSelector};
use crate::framework::{PluginError, PluginErrorKind};
use crate::model::{Pod, PodAffinityTerm};
pub use crate::snapshot::NamespaceLabels;
use crate::snapshot::{Interner, LabelIds, PodInfo, Sym};

pub(crate) static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// Whether an existing pod's term (the pod lives in `owner_ns`) matches `pod`, whose namespace
/// has `ns_labels`: kube's `AffinityTerm.Matches(pod, nsLabels)`.
pub(crate) fn existing_term_matches(
    term: &PodAffinityTerm,
    owner_ns: &str,
    pod: &Pod,
    ns_labels: &BTreeMap<String, String>,
) -> bool {
    let ns = pod.metadata.namespace.as_str();
    let in_namespaces = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        ns == owner_ns
    } else {
        term.namespaces.iter().any(|n| n == ns)
    };
    let ns_ok = in_namespaces
        || term
            .namespace_selector
            .as_ref()
            .is_some_and(|s| selector::matches(s, ns_labels));
    ns_ok && selector::matches_opt(term.label_selector.as_ref(), &pod.metadata.labels)
}

/// The namespaces an incoming pod's term covers, after kube merges its `namespaceSelector` into
/// the names (`mergeAffinityTermNamespacesIfNotEmpty`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Namespaces {
    all: bool,
    names: Vec<String>,
    /// The names as interned ids (names the snapshot never saw hold no pod and are left out),
    /// so that existing pods are checked by id.
    ids: Vec<Sym>,
}

impl Namespaces {
    #[inline]
    pub(crate) fn contains(&self, ns: &str) -> bool {
        self.all || self.names.iter().any(|n| n == ns)
    }

    /// Whether the namespace with this interned id is covered.
    #[inline]
    pub(crate) fn contains_id(&self, ns: Sym) -> bool {
        self.all || self.ids.contains(&ns)
    }
}

/// An incoming pod's term, resolved against the snapshot.
#[derive(Clone, Debug)]
pub(crate) struct CompiledTerm {
    pub(crate) namespaces: Namespaces,
    pub(crate) selector: CompiledSelector,
    /// `None` when no node has this label key (the interner never saw it).
    pub(crate) topology_key: Option<Sym>,
    pub(crate) weight: i64,
    /// Whether the incoming pod itself matches the term (for kube's "first pod" rule).
    pub(crate) matches_self: bool,
}

impl CompiledTerm {
    /// kube's `AffinityTerm.Matches(existingPod, nil)` for a processed incoming term.
    #[inline]
    pub(crate) fn matches(&self, p: &PodInfo) -> bool {
        // Labels first: usually the more selective test, and one fewer pointer chase.
        self.selector.matches(p.labels()) && self.namespaces.contains_id(p.namespace_id())
    }
}

fn invalid(plugin: &str, pod: &Pod, what: &str, e: InvalidSelector) -> PluginError {
    PluginError::new(
        plugin,
        PluginErrorKind::InvalidInput(format!("parsing pod {}: {what}: {e}", pod.key())),
    )
    .with_source(e)
}

/// Validates and compiles the incoming pod's terms (`weight` per term), merging namespace
/// selectors against `namespaces`. An invalid selector is kube's "parsing pod" error.
pub(crate) fn compile_terms<'t>(
    plugin: &str,
    what: &str,
    pod: &Pod,
    terms: impl Iterator<Item = (i64, &'t PodAffinityTerm)>,
    interner: &Interner,
    namespaces: &NamespaceLabels,
) -> Result<Vec<CompiledTerm>, PluginError> {
    let mut out = Vec::new();
    for (weight, term) in terms {
        if let Some(s) = &term.label_selector {
            selector::validate(s).map_err(|e| invalid(plugin, pod, what, e))?;
        }
        if let Some(s) = &term.namespace_selector {
            selector::validate(s).map_err(|e| invalid(plugin, pod, what, e))?;
        }
        let ns = &pod.metadata.namespace;
        let mut names = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
            vec![ns.clone()]
        } else {
            term.namespaces.clone()
        };
        let mut all = false;
        if let Some(s) = &term.namespace_selector {
            if selector::is_empty(s) {
                all = true;
            } else {
                names.extend(
                    namespaces
                        .iter()
                        .filter(|(_, l)| selector::matches(s, l))
                        .map(|(n, _)| n.to_string()),
                );
            }
        }
        let ids = names.iter().filter_map(|n| interner.get(n)).collect();
        let namespaces = Namespaces { all, names, ids };
        let matches_self = namespaces.contains(ns)
            && selector::matches_opt(term.label_selector.as_ref(), &pod.metadata.labels);
        out.push(CompiledTerm {
            selector: CompiledSelector::compile(term.label_selector.as_ref(), interner),
            namespaces,
            topology_key: interner.get(&term.topology_key),
            weight,
            matches_self,
        });
    }
    Ok(out)
}

/// Which of a pod's terms (by position) are counted by matching every pod rather than read
/// from the snapshot's counts: a bit set, so that `prepare` allocates nothing for it. Terms
/// at positions from [`CountedHere::MAX`] on are always counted here.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CountedHere(u64);

impl CountedHere {
    /// Positions below this one have a bit of their own; the last bit stands for all the
    /// others (which the callers always mark).
    pub(crate) const MAX: usize = 63;

    /// Marks the term at `k`.
    pub(crate) fn add(&mut self, k: usize) {
        self.0 |= 1 << k.min(Self::MAX);
    }

    /// Whether the term at `k` is counted here.
    pub(crate) fn contains(&self, k: usize) -> bool {
        self.0 & (1 << k.min(Self::MAX)) != 0
    }

    /// Whether no term is.
    pub(crate) fn is_empty(&self) -> bool {
        self.0 == 0
    }
}

/// A fast hasher for pairs of interned ids (the keys are small dense integers).
#[derive(Clone, Copy, Default)]
pub(crate) struct SymHasher(u64);

impl Hasher for SymHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Counts (or weights) per topology pair `(label key, label value)`, as interned ids.
#[derive(Clone, Debug, Default)]
pub(crate) struct PairCounts {
    map: HashMap<(Sym, Sym), i64, BuildHasherDefault<SymHasher>>,
}

impl PairCounts {
    /// Room for `n` pairs, so that filling it does not rehash on the way.
    pub(crate) fn with_capacity(n: usize) -> PairCounts {
        PairCounts {
            map: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
        }
    }

    /// Adds `v` to the pair of `key` and the node's value for it, if the node has the label.
    #[inline]
    pub(crate) fn add(&mut self, node_labels: &LabelIds, key: Option<Sym>, v: i64) {
        if let Some(k) = key
            && let Some(val) = node_labels.get(k)
        {
            *self.map.entry((k, val)).or_insert(0) += v;
        }
    }

    /// The count of a pair (0 when absent).
    #[inline]
    pub(crate) fn get(&self, key: Sym, value: Sym) -> i64 {
        self.map.get(&(key, value)).copied().unwrap_or(0)
    }

    /// The count for the node's value of `key`, or `None` if the node lacks the label.
    #[inline]
    pub(crate) fn for_node(&self, node_labels: &LabelIds, key: Sym) -> Option<i64> {
        node_labels.get(key).map(|v| self.get(key, v))
    }

    /// Whether no pair was ever added.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The distinct keys with an entry, sorted.
    pub(crate) fn keys(&self) -> Vec<Sym> {
        let mut k: Vec<Sym> = self.map.keys().map(|(k, _)| *k).collect();
        k.sort_unstable();
        k.dedup();
        k
    }

    /// The distinct keys with a positive count, sorted.
    pub(crate) fn positive_keys(&self) -> Vec<Sym> {
        let mut k: Vec<Sym> = self
            .map
            .iter()
            .filter(|(_, c)| **c > 0)
            .map(|((k, _), _)| *k)
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    }
}
