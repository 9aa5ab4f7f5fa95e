//! The pools a node can reach: kube's `GatherPools` and `nodeMatches` (v1.34,
//! `structured/internal/experimental/pools_experimental.go`).

use std::collections::HashMap;

use crate::model::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, ResourceSlice};

use super::TargetNode;

/// One pool (driver and pool name) with the slices of its newest generation.
#[derive(Debug)]
pub(super) struct Pool<'a> {
    pub(super) driver: &'a str,
    pub(super) name: &'a str,
    pub(super) slices: Vec<&'a ResourceSlice>,
    /// Fewer slices of the newest generation than `resourceSliceCount` says.
    pub(super) incomplete: bool,
    /// Why the pool cannot be used (a device name twice), when it cannot.
    pub(super) invalid: Option<String>,
}

/// kube's `nodeMatches`: a node name, all nodes or a node selector, in that order of
/// precedence; none of them matches no node.
pub(super) fn node_matches(
    node: &TargetNode<'_>,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> bool {
    match (node_name.filter(|n| !n.is_empty()), all_nodes, selector) {
        (Some(name), _, _) => node.name == name,
        (None, true, _) => true,
        (None, false, Some(selector)) => selector_matches(selector, node),
        (None, false, None) => false,
    }
}

/// kube's node selector semantics: terms ORed, a term's requirements ANDed, an empty term
/// matches nothing, `matchFields` reads `metadata.name` only.
fn selector_matches(selector: &NodeSelector, node: &TargetNode<'_>) -> bool {
    selector.node_selector_terms.iter().any(|term| {
        if term.match_expressions.is_empty() && term.match_fields.is_empty() {
            return false;
        }
        term.match_expressions
            .iter()
            .all(|r| requirement_matches(r, node.labels.get(&r.key).map(String::as_str)))
            && term
                .match_fields
                .iter()
                .all(|r| r.key == "metadata.name" && requirement_matches(r, Some(node.name)))
    })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let listed = |v: &str| r.values.iter().any(|x| x == v);
    match r.operator {
        NodeSelectorOperator::In => value.is_some_and(listed),
        NodeSelectorOperator::NotIn => !value.is_some_and(listed),
        NodeSelectorOperator::Exists => value.is_some(),
        NodeSelectorOperator::DoesNotExist => value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(v), [bound]) = (value, r.values.as_slice()) else {
                return false;
            };
            let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                return false;
            };
            if r.operator == NodeSelectorOperator::Gt {
                v > bound
            } else {
                v < bound
            }
        }
    }
}

/// kube's `GatherPools` with partitionable devices off: the slices local to `node`, for all
/// nodes, or whose node selector matches it, grouped by pool, only the newest generation of
/// each pool kept. Slices with `perDeviceNodeSelection` set are left out (that field belongs
/// to DRAPartitionableDevices, off in v1.34).
///
/// kube collects the pools in a Go map and so searches them in a random order; here they
/// come in the order their first slice has in `slices`, which makes the search repeatable.
pub(super) fn gather_pools<'a>(
    slices: &'a [ResourceSlice],
    node: &TargetNode<'_>,
) -> Vec<Pool<'a>> {
    let mut pools: Vec<Pool<'a>> = Vec::new();
    let mut index: HashMap<(&'a str, &'a str), usize> = HashMap::new();
    for slice in slices {
        let spec = &slice.spec;
        if spec.per_device_node_selection.is_some() {
            continue;
        }
        let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty());
        let all_nodes = spec.all_nodes.unwrap_or(false);
        if node_name.is_none() && !all_nodes && spec.node_selector.is_none() {
            continue;
        }
        if !node_matches(node, node_name, all_nodes, spec.node_selector.as_ref()) {
            continue;
        }
        let key = (spec.driver.as_str(), spec.pool.name.as_str());
        match index.get(&key) {
            None => {
                index.insert(key, pools.len());
                pools.push(Pool {
                    driver: key.0,
                    name: key.1,
                    slices: vec![slice],
                    incomplete: false,
                    invalid: None,
                });
            }
            Some(&i) => {
                let pool = &mut pools[i];
                let generation = pool.slices[0].spec.pool.generation;
                if spec.pool.generation < generation {
                    continue;
                }
                if spec.pool.generation > generation {
                    pool.slices.clear();
                }
                pool.slices.push(slice);
            }
        }
    }
    for pool in &mut pools {
        pool.incomplete = i64::try_from(pool.slices.len()).ok()
            != Some(pool.slices[0].spec.pool.resource_slice_count);
        pool.invalid =
            duplicate_device(&pool.slices).map(|name| format!("duplicate device name {name}"));
    }
    pools
}

/// The first device name that a pool's slices list twice.
fn duplicate_device<'a>(slices: &[&'a ResourceSlice]) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    slices
        .iter()
        .flat_map(|s| s.spec.devices.iter())
        .map(|d| d.name.as_str())
        .find(|name| !seen.insert(*name))
}
