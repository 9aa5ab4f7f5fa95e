//! Namespace objects: their labels are what a pod affinity term's `namespaceSelector` selects.

use serde::{Deserialize, Serialize};

use super::ObjectMeta;

/// A Namespace (`kubectl get namespaces -o json` items); only its name and labels are read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    /// Name and labels.
    pub metadata: ObjectMeta,
}
