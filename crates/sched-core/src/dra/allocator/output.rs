//! The allocation results of a solution, as kube's `Allocate` writes them: the devices, the
//! configuration of the classes and the claim, and the node selector (`createNodeSelector`).

use crate::model::{
    AllocationResult, DeviceAllocationResult, DeviceConfiguration, DeviceRequestAllocationResult,
    NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
};

use super::search::{Picked, Search};
use super::{AllocError, claim_name};

/// kube's `AllocationConfigSourceClass`.
const FROM_CLASS: &str = "FromClass";
/// kube's `AllocationConfigSourceClaim`.
const FROM_CLAIM: &str = "FromClaim";

/// One result per claim of the search, in order.
pub(super) fn build<S: ?Sized>(
    search: &Search<'_, S>,
    node_name: &str,
) -> Result<Vec<AllocationResult>, AllocError> {
    let mut out = Vec::with_capacity(search.claims.len());
    for (c, claim) in search.claims.iter().enumerate() {
        let picked = &search.result[c];
        let results = picked.iter().map(|p| device_result(search, c, p)).collect();
        let config = config(search, c);
        let node_selector = node_selector(search, picked, node_name).map_err(|terms| {
            AllocError::UnsupportedNodeSelector {
                claim: claim_name(claim),
                terms,
            }
        })?;
        out.push(AllocationResult {
            devices: DeviceAllocationResult { results, config },
            node_selector,
        });
    }
    Ok(out)
}

/// The name a result carries: `request`, or `request/alternative`.
fn request_name<S: ?Sized>(search: &Search<'_, S>, c: usize, request: usize, sub: usize) -> String {
    let data = &search.requests[c][request][sub];
    match data.parent {
        Some(parent) => format!("{parent}/{}", data.name),
        None => data.name.to_owned(),
    }
}

fn device_result<S: ?Sized>(
    search: &Search<'_, S>,
    c: usize,
    p: &Picked,
) -> DeviceRequestAllocationResult {
    let candidate = &search.candidates[p.candidate];
    let pool = &search.pools[candidate.pool];
    DeviceRequestAllocationResult {
        request: request_name(search, c, p.request, p.sub),
        driver: pool.driver.to_owned(),
        pool: pool.name.to_owned(),
        device: candidate.device.name.clone(),
        admin_access: p.admin_access.then_some(true),
        ..DeviceRequestAllocationResult::default()
    }
}

/// The classes' configuration (each class's once, naming every request of the class), then
/// the claim's: for all requests, or for those it names (a request, or the alternative used).
fn config<S: ?Sized>(search: &Search<'_, S>, c: usize) -> Vec<DeviceConfiguration> {
    let mut out: Vec<DeviceConfiguration> = Vec::new();
    let mut seen: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
    for (r, alternatives) in search.requests[c].iter().enumerate() {
        let sub = search.selected[c][r];
        let data = &alternatives[if alternatives[0].parent.is_some() {
            sub
        } else {
            0
        }];
        let name = request_name(search, c, r, if data.parent.is_some() { sub } else { 0 });
        let class = data.class;
        if let Some((_, range)) = seen.iter().find(|(n, _)| *n == class.metadata.name) {
            for entry in &mut out[range.clone()] {
                entry.requests.push(name.clone());
            }
            continue;
        }
        let start = out.len();
        for config in &class.spec.config {
            out.push(DeviceConfiguration {
                requests: vec![name.clone()],
                source: FROM_CLASS.to_owned(),
                opaque: config.opaque.clone(),
            });
        }
        seen.push((&class.metadata.name, start..out.len()));
    }
    let claim = search.claims[c];
    let from_claim = |config: &DeviceConfiguration| DeviceConfiguration {
        requests: config.requests.clone(),
        source: FROM_CLAIM.to_owned(),
        opaque: config.opaque.clone(),
    };
    for config in &claim.spec.devices.config {
        if config.requests.is_empty() {
            out.push(from_claim(config));
            continue;
        }
        for (r, request) in claim.spec.devices.requests.iter().enumerate() {
            if config.requests.contains(&request.name) {
                out.push(from_claim(config));
                continue;
            }
            if search.requests[c][r][0].parent.is_none() {
                continue;
            }
            let name = request_name(search, c, r, search.selected[c][r]);
            if config.requests.contains(&name) {
                out.push(from_claim(config));
            }
        }
    }
    out
}

/// kube's `createNodeSelector`: a device of a node-local slice pins the claim to the node;
/// otherwise the requirements of the slices' one-term node selectors, merged without
/// repeats; `None` when nothing restricts the nodes. `Err` carries the number of terms of a
/// slice selector with more than one.
fn node_selector<S: ?Sized>(
    search: &Search<'_, S>,
    picked: &[Picked],
    node_name: &str,
) -> Result<Option<NodeSelector>, usize> {
    let mut term = NodeSelectorTerm::default();
    for p in picked {
        let spec = &search.candidates[p.candidate].slice.spec;
        if spec.node_name.is_some() {
            return Ok(Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: vec![NodeSelectorRequirement {
                        key: "metadata.name".to_owned(),
                        operator: NodeSelectorOperator::In,
                        values: vec![node_name.to_owned()],
                    }],
                    ..NodeSelectorTerm::default()
                }],
            }));
        }
        if let Some(selector) = &spec.node_selector {
            match selector.node_selector_terms.as_slice() {
                [] => {}
                [only] => {
                    add_new(&only.match_fields, &mut term.match_fields);
                    add_new(&only.match_expressions, &mut term.match_expressions);
                }
                terms => return Err(terms.len()),
            }
        }
    }
    if term.match_fields.is_empty() && term.match_expressions.is_empty() {
        return Ok(None);
    }
    Ok(Some(NodeSelector {
        node_selector_terms: vec![term],
    }))
}

/// kube's `addNewNodeSelectorRequirements`: appends the requirements not there yet (same
/// key, operator and set of values).
fn add_new(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for requirement in from {
        let same_values = |other: &NodeSelectorRequirement| {
            requirement.values.iter().all(|v| other.values.contains(v))
                && other.values.iter().all(|v| requirement.values.contains(v))
        };
        let present = to.iter().any(|existing| {
            existing.key == requirement.key
                && existing.operator == requirement.operator
                && same_values(existing)
        });
        if !present {
            to.push(requirement.clone());
        }
    }
}
