//! The pools a node can reach: kube's `GatherPools` and `nodeMatches` (v1.34,
//! `structured/internal/experimental/pools_experimental.go`).

use std::collections::HashMap;

use crate::model::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, ResourceSlice};

use super::{AllocError, TargetNode};

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

/// Where the slices are, so that a node's pools are gathered without reading every slice:
/// the positions (in the slice list it was built from, ascending) of the slices local to
/// each node (`spec.nodeName`), and of all the others (all nodes, a node selector, per-device
/// selection). Built once per change of the slices ([`crate::snapshot::DraIndex`] keeps one);
/// [`super::Allocator::with_slice_index`] uses it.
///
/// It also numbers the nodes that have slices of their own (0, 1, ... in the order of their
/// first slice) and says which nodes can reach each pool, which is what the DRA index needs to
/// know whose remembered Filter answers a change of the devices in use concerns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceIndex {
    /// Per node: its number and its own slices.
    by_node: HashMap<String, (u32, Vec<u32>), foldhash::fast::FixedState>,
    others: Vec<u32>,
    /// Per driver and pool: who can reach the pool's slices.
    pools: HashMap<String, HashMap<String, PoolReach>>,
    /// Some slice that is not a node's own has a node selector: what a node reaches depends
    /// on its labels.
    by_labels: bool,
}

/// Who can reach a pool's slices ([`SliceIndex::pool_reach`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolReach {
    /// The nodes (by [`SliceIndex::node_id`]) with slices of the pool of their own.
    pub nodes: Vec<u32>,
    /// Some slice of the pool is not a node's own: any node may reach it.
    pub shared: bool,
}

impl SliceIndex {
    /// The index of `slices`.
    pub fn new(slices: &[ResourceSlice]) -> SliceIndex {
        let mut index = SliceIndex::default();
        for (i, slice) in slices.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let spec = &slice.spec;
            let reach = index
                .pools
                .entry(spec.driver.clone())
                .or_default()
                .entry(spec.pool.name.clone())
                .or_default();
            match spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                Some(node) => {
                    let next = u32::try_from(index.by_node.len()).unwrap_or(u32::MAX);
                    let (id, own) = index
                        .by_node
                        .entry(node.to_owned())
                        .or_insert_with(|| (next, Vec::new()));
                    own.push(i);
                    if !reach.nodes.contains(id) {
                        reach.nodes.push(*id);
                    }
                }
                None => {
                    reach.shared = true;
                    index.by_labels |= spec.node_selector.is_some();
                    index.others.push(i);
                }
            }
        }
        index
    }

    /// The number of `node`, when it has slices of its own (below [`SliceIndex::node_count`]).
    pub fn node_id(&self, node: &str) -> Option<u32> {
        self.by_node.get(node).map(|(id, _)| *id)
    }

    /// How many nodes have slices of their own.
    pub fn node_count(&self) -> usize {
        self.by_node.len()
    }

    /// Who can reach the pool `driver/pool`; `None` when no slice belongs to it.
    pub fn pool_reach(&self, driver: &str, pool: &str) -> Option<&PoolReach> {
        self.pools.get(driver)?.get(pool)
    }

    /// Whether what a node reaches may depend on its labels (a slice that is not a node's own
    /// has a node selector): otherwise only on its name.
    pub fn depends_on_labels(&self) -> bool {
        self.by_labels
    }

    /// The positions of the slices `node` may reach, ascending: its own and the others.
    fn reachable<'a>(&'a self, node: &str) -> impl Iterator<Item = usize> + 'a {
        let own = self
            .by_node
            .get(node)
            .map_or(&[][..], |(_, s)| s.as_slice());
        let (mut a, mut b) = (own.iter().peekable(), self.others.iter().peekable());
        std::iter::from_fn(move || {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => None,
            };
            next.map(|&i| i as usize)
        })
    }
}

/// The slice positions a node's pools are gathered from (no allocation per node).
enum Positions<R> {
    /// Those a [`SliceIndex`] says the node may reach.
    Reachable(R),
    /// Every slice.
    All(std::ops::Range<usize>),
}

impl<R: Iterator<Item = usize>> Iterator for Positions<R> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Positions::Reachable(r) => r.next(),
            Positions::All(r) => r.next(),
        }
    }
}

/// kube's `nodeMatches`: a node name, all nodes or a node selector, in that order of
/// precedence; none of them matches no node. `Err` describes a malformed node selector
/// (kube's `nodeaffinity.NewNodeSelector` refuses it).
pub(super) fn node_matches(
    node: &TargetNode<'_>,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> Result<bool, String> {
    match (node_name.filter(|n| !n.is_empty()), all_nodes, selector) {
        (Some(name), _, _) => Ok(node.name == name),
        (None, true, _) => Ok(true),
        (None, false, Some(selector)) => selector_matches(selector, node),
        (None, false, None) => Ok(false),
    }
}

/// kube's `nodeaffinity.NodeSelector`: empty terms are left out, the others ORed, a term's
/// requirements ANDed; `matchFields` reads the node's fields, of which there is only
/// `metadata.name` (an unknown field reads as empty).
fn selector_matches(selector: &NodeSelector, node: &TargetNode<'_>) -> Result<bool, String> {
    let terms = selector
        .node_selector_terms
        .iter()
        .filter(|t| !(t.match_expressions.is_empty() && t.match_fields.is_empty()));
    for term in terms.clone() {
        for r in &term.match_expressions {
            check_label_requirement(r)?;
        }
        for r in &term.match_fields {
            if !matches!(
                r.operator,
                NodeSelectorOperator::In | NodeSelectorOperator::NotIn
            ) {
                return Err(format!(
                    "matchFields operator {:?} not supported",
                    r.operator
                ));
            }
            if r.values.len() != 1 {
                return Err(format!(
                    "matchFields {}: values must have one element",
                    r.key
                ));
            }
        }
    }
    Ok(terms.into_iter().any(|term| {
        term.match_expressions
            .iter()
            .all(|r| r.matches_value(node.labels.get(&r.key).map(String::as_str)))
            // kube ignores matchFields for a node without a name.
            && (node.name.is_empty()
                || term.match_fields.iter().all(|r| {
                    let value = if r.key == "metadata.name" { node.name } else { "" };
                    (value == r.values[0]) == (r.operator == NodeSelectorOperator::In)
                }))
    }))
}

/// The checks of kube's `labels.NewRequirement` on the values of a requirement (not the
/// syntax of keys and values).
fn check_label_requirement(r: &NodeSelectorRequirement) -> Result<(), String> {
    let n = r.values.len();
    match r.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn if n == 0 => Err(format!(
            "{}: for 'in', 'notin' operators, values set can't be empty",
            r.key
        )),
        NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist if n != 0 => {
            Err(format!(
                "{}: values set must be empty for exists and does not exist",
                r.key
            ))
        }
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt
            if n != 1 || r.values[0].parse::<i64>().is_err() =>
        {
            Err(format!(
                "{}: for 'Gt', 'Lt' operators, exactly one integer value is required",
                r.key
            ))
        }
        _ => Ok(()),
    }
}

/// kube's `GatherPools` with partitionable devices off: the slices local to `node`, for all
/// nodes, or whose node selector matches it, grouped by pool, only the newest generation of
/// each pool kept. Slices with `perDeviceNodeSelection` set are left out (that field belongs
/// to DRAPartitionableDevices, off in v1.34).
///
/// A malformed node selector of a slice this node has to check is an error, as in kube.
///
/// kube collects the pools in a Go map and so searches them in a random order; here they
/// come in the order their first slice has in `slices`, which makes the search repeatable.
///
/// With `reach`, only the slices it says the node may reach are read (the same pools, found
/// without reading every node's slices).
pub(super) fn gather_pools<'a>(
    slices: &'a [ResourceSlice],
    reach: Option<&SliceIndex>,
    node: &TargetNode<'_>,
) -> Result<Vec<Pool<'a>>, AllocError> {
    let mut pools: Vec<Pool<'a>> = Vec::new();
    let positions = match reach {
        Some(r) => Positions::Reachable(r.reachable(node.name)),
        None => Positions::All(0..slices.len()),
    };
    for slice in positions.filter_map(|i| slices.get(i)) {
        let spec = &slice.spec;
        if spec.per_device_node_selection.is_some() {
            continue;
        }
        let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty());
        let all_nodes = spec.all_nodes.unwrap_or(false);
        if node_name.is_none() && !all_nodes && spec.node_selector.is_none() {
            continue;
        }
        let matches = node_matches(node, node_name, all_nodes, spec.node_selector.as_ref())
            .map_err(|message| AllocError::InvalidNodeSelector {
                slice: slice.metadata.name.clone(),
                message,
            })?;
        if !matches {
            continue;
        }
        let key = (spec.driver.as_str(), spec.pool.name.as_str());
        // A node reaches few pools: a scan beats hashing.
        match pools.iter().position(|p| (p.driver, p.name) == key) {
            None => {
                pools.push(Pool {
                    driver: key.0,
                    name: key.1,
                    slices: vec![slice],
                    incomplete: false,
                    invalid: None,
                });
            }
            Some(i) => {
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
    Ok(pools)
}

/// Up to this many devices, a pool's names are checked for repeats by comparing each with
/// those before it (no set to build for each node's few devices).
const SCAN_DUPLICATES: usize = 32;

/// The first device name that a pool's slices list twice.
fn duplicate_device<'a>(slices: &[&'a ResourceSlice]) -> Option<&'a str> {
    let names = || {
        slices
            .iter()
            .flat_map(|s| s.spec.devices.iter())
            .map(|d| d.name.as_str())
    };
    if slices.iter().map(|s| s.spec.devices.len()).sum::<usize>() <= SCAN_DUPLICATES {
        return names()
            .enumerate()
            .find(|&(i, name)| names().take(i).any(|earlier| earlier == name))
            .map(|(_, name)| name);
    }
    let mut seen = std::collections::HashSet::with_hasher(foldhash::fast::FixedState::default());
    names().find(|name| !seen.insert(*name))
}
