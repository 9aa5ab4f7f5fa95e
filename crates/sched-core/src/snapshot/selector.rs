//! Label selectors compiled to interned ids ([`CompiledSelector`]), so that matching many pods
//! compares integers. The string form and validation live in
//! [`crate::plugins::interpod::selector`], which re-exports this type.

use std::collections::BTreeMap;

use super::intern::{Interner, LabelIds, Sym};
use crate::model::{LabelSelector, LabelSelectorOperator};

/// One requirement over interned ids. A key or value the interner never saw is on no pod.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Req {
    /// The label is present with one of the values.
    In(Option<Sym>, Vec<Sym>),
    /// The label is absent or has none of the values.
    NotIn(Option<Sym>, Vec<Sym>),
    /// The label is present.
    Exists(Option<Sym>),
    /// The label is absent.
    DoesNotExist(Option<Sym>),
}

impl Req {
    #[inline]
    fn matches(&self, labels: &LabelIds) -> bool {
        let get = |k: &Option<Sym>| k.and_then(|k| labels.get(k));
        match self {
            Req::In(k, vals) => get(k).is_some_and(|v| vals.contains(&v)),
            Req::NotIn(k, vals) => get(k).is_none_or(|v| !vals.contains(&v)),
            Req::Exists(k) => get(k).is_some(),
            Req::DoesNotExist(k) => get(k).is_none(),
        }
    }
}

/// A label selector resolved to interned ids, for matching many pods without touching strings.
///
/// Build it with [`CompiledSelector::compile`] (from a [`LabelSelector`]) or
/// [`CompiledSelector::from_map`] (a Service or ReplicationController selector), combine with
/// [`CompiledSelector::and`], then call [`CompiledSelector::matches`] per pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompiledSelector {
    nothing: bool,
    reqs: Vec<Req>,
}

impl CompiledSelector {
    /// A selector that matches every pod (kube's `labels.Everything()`).
    pub fn everything() -> Self {
        CompiledSelector::default()
    }

    /// A selector that matches no pod (kube's `labels.Nothing()`).
    pub fn nothing() -> Self {
        CompiledSelector {
            nothing: true,
            reqs: Vec::new(),
        }
    }

    /// Compiles a selector; `None` matches nothing, an empty selector everything.
    pub fn compile(sel: Option<&LabelSelector>, interner: &Interner) -> Self {
        let Some(sel) = sel else {
            return CompiledSelector::nothing();
        };
        let mut out = CompiledSelector::from_map(&sel.match_labels, interner);
        for r in &sel.match_expressions {
            let key = interner.get(&r.key);
            let vals = || -> Vec<Sym> { r.values.iter().filter_map(|v| interner.get(v)).collect() };
            out.reqs.push(match r.operator {
                LabelSelectorOperator::In => Req::In(key, vals()),
                LabelSelectorOperator::NotIn => Req::NotIn(key, vals()),
                LabelSelectorOperator::Exists => Req::Exists(key),
                LabelSelectorOperator::DoesNotExist => Req::DoesNotExist(key),
            });
        }
        out
    }

    /// [`CompiledSelector::compile`] after interning every key and value the selector names,
    /// so that it stays right when pods with those labels join later (the snapshot's own
    /// selectors, kept across updates, are compiled this way).
    pub(crate) fn compile_interning(sel: Option<&LabelSelector>, interner: &mut Interner) -> Self {
        if let Some(sel) = sel {
            for (k, v) in &sel.match_labels {
                interner.intern(k);
                interner.intern(v);
            }
            for r in &sel.match_expressions {
                interner.intern(&r.key);
                for v in &r.values {
                    interner.intern(v);
                }
            }
        }
        CompiledSelector::compile(sel, interner)
    }

    /// A selector of `key = value` requirements (kube's `labels.Set.AsSelector()`); an empty
    /// map gives a selector without requirements.
    pub fn from_map(map: &BTreeMap<String, String>, interner: &Interner) -> Self {
        CompiledSelector {
            nothing: false,
            reqs: map
                .iter()
                .map(|(k, v)| Req::In(interner.get(k), interner.get(v).into_iter().collect()))
                .collect(),
        }
    }

    /// Adds the requirements of `other` (kube's `selector.Add(other.Requirements()...)`).
    /// Adding a "nothing" selector adds no requirement, as in kube where `Nothing()` has no
    /// requirements to add.
    pub fn and(&mut self, other: &CompiledSelector) {
        if !other.nothing {
            self.reqs.extend(other.reqs.iter().cloned());
        }
    }

    /// Whether this selector matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// kube's `selector.Empty()`: no requirements (a "nothing" selector is not empty).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.reqs.is_empty()
    }

    /// Whether a pod with these interned labels matches.
    #[inline]
    pub fn matches(&self, labels: &LabelIds) -> bool {
        !self.nothing && self.reqs.iter().all(|r| r.matches(labels))
    }
}
