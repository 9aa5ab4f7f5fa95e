//! String interning for label keys and values, zone keys and image names.

use std::collections::HashMap;

/// An interned string: compare ids instead of strings on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

impl Sym {
    /// "No value" (e.g. a node without a zone).
    pub const NONE: Sym = Sym(u32::MAX);
}

impl Default for Sym {
    fn default() -> Self {
        Sym::NONE
    }
}

/// A grow-only string table owned by a [`crate::snapshot::Snapshot`].
#[derive(Clone, Debug, Default)]
pub struct Interner {
    /// foldhash: these maps are hashed on every pod placed (SipHash was a visible share).
    ids: HashMap<Box<str>, Sym, foldhash::fast::RandomState>,
    strings: Vec<Box<str>>,
}

impl Interner {
    /// The id of `s`, adding it if new.
    pub(crate) fn intern(&mut self, s: &str) -> Sym {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = Sym(self.strings.len() as u32);
        self.strings.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    /// The id of `s` if any object in the snapshot ever used it. A string that was never
    /// interned is on no node and no pod, which lets callers answer "matches nothing" at once.
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.ids.get(s).copied()
    }

    /// The string behind an id.
    pub fn resolve(&self, id: Sym) -> &str {
        self.strings.get(id.0 as usize).map_or("", |s| s)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether no string was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

/// Sorted `(key, value)` label ids, looked up by key with a binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelIds(Vec<(Sym, Sym)>);

impl LabelIds {
    /// Interns a label map.
    pub(crate) fn intern<'a>(
        interner: &mut Interner,
        labels: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> LabelIds {
        let mut v: Vec<(Sym, Sym)> = labels
            .into_iter()
            .map(|(k, val)| (interner.intern(k), interner.intern(val)))
            .collect();
        v.sort_unstable();
        LabelIds(v)
    }

    /// The value id of label `key`, if the object has that label.
    #[inline]
    pub fn get(&self, key: Sym) -> Option<Sym> {
        self.0
            .binary_search_by(|(k, _)| k.cmp(&key))
            .ok()
            .map(|i| self.0[i].1)
    }

    /// Whether the object has label `key`.
    #[inline]
    pub fn contains_key(&self, key: Sym) -> bool {
        self.get(key).is_some()
    }

    /// The `(key, value)` pairs, sorted by key.
    pub fn pairs(&self) -> &[(Sym, Sym)] {
        &self.0
    }
}
