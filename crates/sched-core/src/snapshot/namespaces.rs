//! Namespace labels, as the `namespaceSelector` of pod affinity terms reads them.

use std::collections::BTreeMap;

use crate::model::Namespace;

/// Namespace labels, for the `namespaceSelector` of pod affinity terms (kube reads them from its
/// namespace lister). A namespace missing here has no labels, and a non-empty
/// `namespaceSelector` of the pod being scheduled selects only namespaces listed here, as in
/// kube when the Namespace object does not exist.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceLabels {
    map: BTreeMap<String, BTreeMap<String, String>>,
}

impl NamespaceLabels {
    /// No namespaces known.
    pub fn new() -> Self {
        NamespaceLabels::default()
    }

    /// Sets the labels of a namespace.
    pub fn insert(&mut self, namespace: impl Into<String>, labels: BTreeMap<String, String>) {
        self.map.insert(namespace.into(), labels);
    }

    /// Forgets a namespace (deleted); returns its labels if it was known.
    pub fn remove(&mut self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.map.remove(namespace)
    }

    /// The labels of a namespace, if it is known.
    pub fn labels_of(&self, namespace: &str) -> Option<&BTreeMap<String, String>> {
        self.map.get(namespace)
    }

    /// Whether no namespace is known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sets the labels of every namespace in `namespaces` (kubectl's Namespace objects).
    pub fn extend_from(&mut self, namespaces: &[Namespace]) {
        for n in namespaces {
            self.insert(n.metadata.name.clone(), n.metadata.labels.clone());
        }
    }

    /// The known namespaces with their labels.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl FromIterator<(String, BTreeMap<String, String>)> for NamespaceLabels {
    fn from_iter<I: IntoIterator<Item = (String, BTreeMap<String, String>)>>(iter: I) -> Self {
        NamespaceLabels {
            map: iter.into_iter().collect(),
        }
    }
}
