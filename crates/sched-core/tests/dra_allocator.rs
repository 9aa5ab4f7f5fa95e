//! kube's structured allocator tests, ported: the shared cases of
//! `k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go`
//! at v0.34.4 (Kubernetes v1.34.4), each under its upstream name, with upstream's expected
//! allocations. Cases that need an alpha feature (partitionable devices, device taints,
//! consumable capacity, binding conditions) are not ported; see `NOT_PORTED`.
//!
//! Upstream compares a claim's device results and node selector requirements as sets
//! (gomega's `ConsistOf`), so the comparison here sorts both sides first; which devices are
//! picked is compared exactly.

use std::collections::BTreeMap;

use sched_core::dra::allocator::{
    AllocError, AllocatedDevices, Allocator, Feature, Features, Outcome, SelectorError,
    SelectorEval, SelectorOwner, TargetNode,
};
use sched_core::model::{
    AllocationResult, CelDeviceSelector, Device, DeviceAllocationResult, DeviceAttribute,
    DeviceCapacity, DeviceClaim, DeviceClass, DeviceClassSpec, DeviceConfiguration,
    DeviceConstraint, DeviceRequest, DeviceRequestAllocationResult, DeviceSelector,
    DeviceSubRequest, ExactDeviceRequest, Node, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta, OpaqueDeviceConfiguration,
    ResourceClaim, ResourceClaimSpec, ResourcePool, ResourceSlice, ResourceSliceSpec,
};

// ---------------------------------------------------------------------------------------
// Selectors for the tests.

/// A stand-in for the CEL evaluator, for these tests only: it understands the few expression
/// shapes upstream's cases use and panics on anything else. The real CEL evaluator
/// (`sched_core::dra::cel`) replaces it once the two are wired together.
struct TestSelectors;

impl SelectorEval for TestSelectors {
    fn matches(
        &self,
        expression: &str,
        driver: &str,
        device: &Device,
    ) -> Result<bool, SelectorError> {
        if let Some(rest) = expression.strip_prefix("device.driver == \"") {
            let wanted = rest.strip_suffix('"').expect("device.driver == \"...\"");
            return Ok(driver == wanted);
        }
        // device.capacity["<domain>"].<name>.compareTo(quantity("<q>")) >= 0
        if let Some(rest) = expression.strip_prefix("device.capacity[\"") {
            let (domain, rest) = rest.split_once("\"].").expect("capacity domain");
            let (name, rest) = rest
                .split_once(".compareTo(quantity(\"")
                .expect("compareTo");
            let quantity = rest.strip_suffix("\")) >= 0").expect(">= 0");
            let wanted: sched_core::model::Quantity = quantity.parse().expect("quantity");
            let capacity = if domain == driver {
                device
                    .capacity
                    .get(name)
                    .or_else(|| device.capacity.get(&format!("{domain}/{name}")))
            } else {
                device.capacity.get(&format!("{domain}/{name}"))
            };
            let Some(capacity) = capacity else {
                return Err(SelectorError::new(
                    expression,
                    format!("no such key: {name}"),
                ));
            };
            return Ok(capacity.value.value() >= wanted.value());
        }
        if expression == "noSuchVar" {
            return Err(SelectorError::new(
                expression,
                "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'",
            ));
        }
        panic!("TestSelectors does not understand {expression:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Upstream's names and builders.

const REGION1: &str = "region-1";
const REGION2: &str = "region-2";
const NODE1: &str = "node-1";
const NODE2: &str = "node-2";
const CLASS_A: &str = "class-a";
const CLASS_B: &str = "class-b";
const DRIVER_A: &str = "driver-a";
const DRIVER_B: &str = "driver-b";
const POOL1: &str = "pool-1";
const POOL2: &str = "pool-2";
const POOL3: &str = "pool-3";
const POOL4: &str = "pool-4";
const REQ0: &str = "req-0";
const REQ1: &str = "req-1";
const REQ2: &str = "req-2";
const REQ3: &str = "req-3";
const SUB_REQ0: &str = "subReq-0";
const SUB_REQ1: &str = "subReq-1";
const REQ0_SUB_REQ0: &str = "req-0/subReq-0";
const REQ0_SUB_REQ1: &str = "req-0/subReq-1";
const REQ1_SUB_REQ0: &str = "req-1/subReq-0";
const REQ1_SUB_REQ1: &str = "req-1/subReq-1";
const CLAIM0: &str = "claim-0";
const CLAIM1: &str = "claim-1";
const SLICE1: &str = "slice-1";
const SLICE2: &str = "slice-2";
const DEVICE0: &str = "device-0";
const DEVICE1: &str = "device-1";
const DEVICE2: &str = "device-2";
const DEVICE3: &str = "device-3";
const DEVICE4: &str = "device-4";
const MAX: i64 = 32;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: name.to_owned(),
        ..ObjectMeta::default()
    }
}

fn node(name: &str, region: &str) -> Node {
    let mut node = Node::default();
    node.metadata = meta(name);
    node.metadata.labels = BTreeMap::from([
        ("region".to_owned(), region.to_owned()),
        ("planet".to_owned(), "earth".to_owned()),
    ]);
    node
}

fn cel(expression: &str) -> DeviceSelector {
    DeviceSelector {
        cel: Some(CelDeviceSelector {
            expression: expression.to_owned(),
        }),
    }
}

fn memory_at_least(q: &str) -> DeviceSelector {
    cel(&format!(
        "device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0"
    ))
}

fn class(name: &str, driver: &str) -> DeviceClass {
    DeviceClass {
        metadata: meta(name),
        spec: DeviceClassSpec {
            selectors: vec![cel(&format!("device.driver == \"{driver}\""))],
            ..DeviceClassSpec::default()
        },
    }
}

fn device_configuration(driver: &str, attribute: &str) -> DeviceConfiguration {
    DeviceConfiguration {
        opaque: Some(OpaqueDeviceConfiguration {
            driver: driver.to_owned(),
            parameters: serde_json::json!({ attribute: format!("{attribute}Value") }),
        }),
        ..DeviceConfiguration::default()
    }
}

fn class_with_config(name: &str, driver: &str, attribute: &str) -> DeviceClass {
    let mut class = class(name, driver);
    class.spec.config = vec![device_configuration(driver, attribute)];
    class
}

fn claim_with_requests(
    name: &str,
    constraints: Vec<DeviceConstraint>,
    requests: Vec<DeviceRequest>,
) -> ResourceClaim {
    ResourceClaim {
        metadata: meta(name),
        spec: ResourceClaimSpec {
            devices: DeviceClaim {
                requests,
                constraints,
                config: Vec::new(),
            },
        },
        ..ResourceClaim::default()
    }
}

fn request(name: &str, class: &str, count: i64, selectors: Vec<DeviceSelector>) -> DeviceRequest {
    DeviceRequest {
        name: name.to_owned(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_owned(),
            selectors,
            allocation_mode: "ExactCount".to_owned(),
            count,
            ..ExactDeviceRequest::default()
        }),
        first_available: Vec::new(),
    }
}

fn all_request(name: &str, class: &str) -> DeviceRequest {
    DeviceRequest {
        name: name.to_owned(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_owned(),
            allocation_mode: "All".to_owned(),
            ..ExactDeviceRequest::default()
        }),
        first_available: Vec::new(),
    }
}

fn sub_request(
    name: &str,
    class: &str,
    count: i64,
    selectors: Vec<DeviceSelector>,
) -> DeviceSubRequest {
    DeviceSubRequest {
        name: name.to_owned(),
        device_class_name: class.to_owned(),
        selectors,
        allocation_mode: "ExactCount".to_owned(),
        count,
        ..DeviceSubRequest::default()
    }
}

fn request_with_prioritized_list(name: &str, subs: Vec<DeviceSubRequest>) -> DeviceRequest {
    DeviceRequest {
        name: name.to_owned(),
        exactly: None,
        first_available: subs,
    }
}

fn claim(name: &str, req: &str, class: &str) -> ResourceClaim {
    claim_with_requests(name, Vec::new(), vec![request(req, class, 1, Vec::new())])
}

fn claim_with_constraints(
    name: &str,
    req: &str,
    class: &str,
    constraints: Vec<DeviceConstraint>,
) -> ResourceClaim {
    claim_with_requests(name, constraints, vec![request(req, class, 1, Vec::new())])
}

fn exactly(claim: &mut ResourceClaim, request: usize) -> &mut ExactDeviceRequest {
    claim.spec.devices.requests[request]
        .exactly
        .as_mut()
        .expect("exactly")
}

fn match_attribute(requests: &[&str], attribute: &str) -> DeviceConstraint {
    DeviceConstraint {
        requests: requests.iter().map(|s| s.to_string()).collect(),
        match_attribute: Some(attribute.to_owned()),
        distinct_attribute: None,
    }
}

fn device(name: &str) -> Device {
    Device {
        name: name.to_owned(),
        ..Device::default()
    }
}

fn device_memory(name: &str, memory: &str) -> Device {
    let mut d = device(name);
    d.capacity.insert(
        "memory".to_owned(),
        DeviceCapacity {
            value: memory.parse().expect("quantity"),
        },
    );
    d
}

fn with_attrs(mut d: Device, attrs: &[(&str, DeviceAttribute)]) -> Device {
    for (k, v) in attrs {
        d.attributes.insert((*k).to_owned(), v.clone());
    }
    d
}

fn int_attr(v: i64) -> DeviceAttribute {
    DeviceAttribute {
        int_value: Some(v),
        ..DeviceAttribute::default()
    }
}

fn string_attr(v: &str) -> DeviceAttribute {
    DeviceAttribute {
        string_value: Some(v.to_owned()),
        ..DeviceAttribute::default()
    }
}

fn bool_attr(v: bool) -> DeviceAttribute {
    DeviceAttribute {
        bool_value: Some(v),
        ..DeviceAttribute::default()
    }
}

fn version_attr(v: &str) -> DeviceAttribute {
    DeviceAttribute {
        version_value: Some(v.to_owned()),
        ..DeviceAttribute::default()
    }
}

/// Where a slice's devices are: upstream's `nodeSelection` argument.
enum At {
    Node(&'static str),
    All,
    Selector(NodeSelector),
}

fn slice(name: &str, at: At, pool: &str, driver: &str, devices: Vec<Device>) -> ResourceSlice {
    let mut spec = ResourceSliceSpec {
        driver: driver.to_owned(),
        pool: ResourcePool {
            name: pool.to_owned(),
            generation: 1,
            resource_slice_count: 1,
        },
        devices,
        ..ResourceSliceSpec::default()
    };
    match at {
        At::Node(n) => spec.node_name = Some(n.to_owned()),
        At::All => spec.all_nodes = Some(true),
        At::Selector(s) => spec.node_selector = Some(s),
    }
    ResourceSlice {
        metadata: meta(name),
        spec,
    }
}

fn slice_with_no_devices(name: &str, at: At, pool: &str, driver: &str) -> ResourceSlice {
    slice(name, at, pool, driver, Vec::new())
}

fn slice_with_one_device(name: &str, at: At, pool: &str, driver: &str) -> ResourceSlice {
    slice(name, at, pool, driver, vec![device(DEVICE1)])
}

fn slice_with_multiple_devices(
    name: &str,
    at: At,
    pool: &str,
    driver: &str,
    count: usize,
) -> ResourceSlice {
    let devices = (0..count).map(|i| device(&format!("device-{i}"))).collect();
    slice(name, at, pool, driver, devices)
}

fn result(
    request: &str,
    driver: &str,
    pool: &str,
    device: &str,
    admin_access: bool,
) -> DeviceRequestAllocationResult {
    DeviceRequestAllocationResult {
        request: request.to_owned(),
        driver: driver.to_owned(),
        pool: pool.to_owned(),
        device: device.to_owned(),
        admin_access: admin_access.then_some(true),
        ..DeviceRequestAllocationResult::default()
    }
}

fn multiple_results(
    request: &str,
    driver: &str,
    pool: &str,
    count: usize,
    start: usize,
) -> Vec<DeviceRequestAllocationResult> {
    (start..start + count)
        .map(|i| result(request, driver, pool, &format!("device-{i}"), false))
        .collect()
}

fn node_label_selector(key: &str, values: &[&str]) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: key.to_owned(),
                operator: NodeSelectorOperator::In,
                values: values.iter().map(|s| s.to_string()).collect(),
            }],
            match_fields: Vec::new(),
        }],
    }
}

fn local_node_selector(name: &str) -> NodeSelector {
    let mut s = node_label_selector("metadata.name", &[name]);
    let term = &mut s.node_selector_terms[0];
    std::mem::swap(&mut term.match_fields, &mut term.match_expressions);
    s
}

fn allocation(
    selector: Option<NodeSelector>,
    results: Vec<DeviceRequestAllocationResult>,
) -> AllocationResult {
    AllocationResult {
        devices: DeviceAllocationResult {
            results,
            config: Vec::new(),
        },
        node_selector: selector,
    }
}

fn allocation_with_configs(
    selector: Option<NodeSelector>,
    results: Vec<DeviceRequestAllocationResult>,
    configs: Vec<DeviceConfiguration>,
) -> AllocationResult {
    AllocationResult {
        devices: DeviceAllocationResult {
            results,
            config: configs,
        },
        node_selector: selector,
    }
}

fn allocated_config(
    source: &str,
    requests: &[&str],
    driver: &str,
    attribute: &str,
) -> DeviceConfiguration {
    DeviceConfiguration {
        requests: requests.iter().map(|s| s.to_string()).collect(),
        source: source.to_owned(),
        ..device_configuration(driver, attribute)
    }
}

fn claim_config(requests: &[&str], driver: &str, attribute: &str) -> DeviceConfiguration {
    DeviceConfiguration {
        requests: requests.iter().map(|s| s.to_string()).collect(),
        ..device_configuration(driver, attribute)
    }
}

// ---------------------------------------------------------------------------------------
// The table.

enum Expect {
    /// Upstream's `expectResults` with entries: one allocation per claim, in claim order.
    Results(Vec<AllocationResult>),
    /// Upstream's nil or empty `expectResults` and no error.
    Nothing,
    /// Upstream's `expectError`, as a check of the typed error.
    Error(fn(&AllocError) -> bool),
}

struct Case {
    name: &'static str,
    features: Features,
    claims: Vec<ResourceClaim>,
    allocated: Vec<(&'static str, &'static str, &'static str)>,
    classes: Vec<DeviceClass>,
    slices: Vec<ResourceSlice>,
    node: Node,
    expect: Expect,
}

impl Case {
    /// Upstream's zero value: features off, no objects, no node.
    fn new(name: &'static str) -> Self {
        Case {
            name,
            features: Features::NONE,
            claims: Vec::new(),
            allocated: Vec::new(),
            classes: Vec::new(),
            slices: Vec::new(),
            node: Node::default(),
            expect: Expect::Nothing,
        }
    }
}

fn features(admin_access: bool, prioritized_list: bool) -> Features {
    let mut f = Features::NONE;
    f.admin_access = admin_access;
    f.prioritized_list = prioritized_list;
    f
}

/// A claim's result with its device results and node selector requirements sorted (upstream
/// compares both as sets).
fn normalized(mut r: AllocationResult) -> AllocationResult {
    r.devices.results.sort_by(|a, b| {
        (&a.request, &a.driver, &a.pool, &a.device)
            .cmp(&(&b.request, &b.driver, &b.pool, &b.device))
    });
    if let Some(s) = &mut r.node_selector {
        for t in &mut s.node_selector_terms {
            for reqs in [&mut t.match_expressions, &mut t.match_fields] {
                for q in reqs.iter_mut() {
                    q.values.sort();
                }
                reqs.sort_by(|a, b| (&a.key, &a.values).cmp(&(&b.key, &b.values)));
            }
        }
    }
    r
}

fn run(case: &Case) -> Result<(), String> {
    let mut allocated = AllocatedDevices::new();
    for (driver, pool, device) in &case.allocated {
        allocated.insert(driver, pool, device);
    }
    let allocator = Allocator::new(
        case.features,
        &case.slices,
        &case.classes,
        &allocated,
        &TestSelectors,
    );
    let claims: Vec<&ResourceClaim> = case.claims.iter().collect();
    let got = allocator.allocate(TargetNode::from(&case.node), &claims);
    match (&case.expect, got) {
        (Expect::Error(check), Err(e)) if check(&e) => Ok(()),
        (Expect::Error(_), other) => Err(format!("expected an error, got {other:?}")),
        (_, Err(e)) => Err(format!("unexpected error: {e}")),
        (Expect::Nothing, Ok(Outcome::DoesNotFit)) => Ok(()),
        (Expect::Nothing, Ok(Outcome::Allocated(r))) if r.is_empty() => Ok(()),
        (Expect::Results(want), Ok(Outcome::Allocated(got))) => {
            let got: Vec<_> = got.into_iter().map(|c| normalized(c.result)).collect();
            let want: Vec<_> = want.iter().cloned().map(normalized).collect();
            if got == want {
                Ok(())
            } else {
                Err(format!("got {got:#?}\nwant {want:#?}"))
            }
        }
        (_, other) => Err(format!("unexpected outcome {other:?}")),
    }
}

#[test]
fn upstream_allocator_cases() {
    let cases = cases();
    let mut failed = Vec::new();
    for case in &cases {
        if let Err(e) = run(case) {
            failed.push(format!("{}: {e}", case.name));
        }
    }
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "a case name twice");
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
    println!("{} upstream cases passed", cases.len());
}

fn is_class_not_found(e: &AllocError, class: &str) -> bool {
    matches!(e, AllocError::ClassNotFound { class: c, .. } if c == class)
}

fn is_selector_error(e: &AllocError) -> bool {
    matches!(e, AllocError::Selector { source, .. } if source.message.contains("undeclared reference"))
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(basic_cases());
    v
}

fn basic_cases() -> Vec<Case> {
    let n1 = || node(NODE1, REGION1);
    let local1 = || Some(local_node_selector(NODE1));
    vec![
        Case::new("empty"),
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            expect: Expect::Results(vec![allocation(
                local1(),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1, false)],
            )]),
            ..Case::new("simple")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, At::Node(NODE1), POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, At::Node(NODE2), POOL2, DRIVER_A),
            ],
            node: node(NODE2, REGION2),
            expect: Expect::Results(vec![allocation(
                Some(local_node_selector(NODE2)),
                vec![result(REQ0, DRIVER_A, POOL2, DEVICE1, false)],
            )]),
            ..Case::new("other-node")
        },
        Case {
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1, vec![memory_at_least("1Gi")]),
                    request(REQ1, CLASS_A, 1, vec![memory_at_least("2Gi")]),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![device_memory(DEVICE1, "1Gi"), device_memory(DEVICE2, "2Gi")],
            )],
            node: n1(),
            expect: Expect::Results(vec![allocation(
                local1(),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1, false),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2, false),
                ],
            )]),
            ..Case::new("small-and-large")
        },
        Case {
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1, vec![memory_at_least("1Gi")]),
                    request(REQ1, CLASS_A, 1, vec![memory_at_least("2Gi")]),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![device_memory(DEVICE2, "2Gi"), device_memory(DEVICE1, "1Gi")],
            )],
            node: n1(),
            expect: Expect::Results(vec![allocation(
                local1(),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1, false),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2, false),
                ],
            )]),
            ..Case::new("small-and-large-backtrack-requests")
        },
        Case {
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    vec![],
                    vec![request(REQ0, CLASS_A, 1, vec![memory_at_least("1Gi")])],
                ),
                claim_with_requests(
                    CLAIM1,
                    vec![],
                    vec![request(REQ1, CLASS_A, 1, vec![memory_at_least("2Gi")])],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
                vec![device_memory(DEVICE2, "2Gi"), device_memory(DEVICE1, "1Gi")],
            )],
            node: n1(),
            expect: Expect::Results(vec![
                allocation(
                    local1(),
                    vec![result(REQ0, DRIVER_A, POOL1, DEVICE1, false)],
                ),
                allocation(
                    local1(),
                    vec![result(REQ1, DRIVER_A, POOL1, DEVICE2, false)],
                ),
            ]),
            ..Case::new("small-and-large-backtrack-claims")
        },
        Case {
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, At::Node(NODE1), POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, At::Node(NODE1), POOL2, DRIVER_A),
            ],
            node: n1(),
            expect: Expect::Results(vec![allocation(
                local1(),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1, false),
                    result(REQ0, DRIVER_A, POOL2, DEVICE1, false),
                ],
            )]),
            ..Case::new("devices-split-across-different-slices")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device("slice-1-obsolete", At::Node(NODE1), POOL1, DRIVER_A),
                {
                    let mut s = slice_with_one_device(SLICE1, At::Node(NODE1), POOL1, DRIVER_A);
                    s.spec.pool.generation += 1;
                    s
                },
            ],
            node: n1(),
            expect: Expect::Results(vec![allocation(
                local1(),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1, false)],
            )]),
            ..Case::new("obsolete-slice")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: {
                let mut a = slice_with_one_device(SLICE1, At::Node(NODE1), POOL1, DRIVER_A);
                a.spec.pool.resource_slice_count = 2;
                let mut b = a.clone();
                b.metadata.name.push_str("-2");
                vec![a, b]
            },
            node: n1(),
            expect: Expect::Error(|e| {
                matches!(e, AllocError::PoolInvalid { pool, reason }
                    if pool == "driver-a/pool-1" && reason == "duplicate device name device-1")
            }),
            ..Case::new("duplicate-slice")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            node: n1(),
            ..Case::new("no-slices")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A), claim(CLAIM0, REQ1, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            ..Case::new("not-enough-suitable-devices")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, CLASS_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            expect: Expect::Error(|e| is_class_not_found(e, CLASS_A)),
            ..Case::new("no-classes")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, "unknown-class")],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            expect: Expect::Error(|e| is_class_not_found(e, "unknown-class")),
            ..Case::new("unknown-class")
        },
        Case {
            claims: vec![claim(CLAIM0, REQ0, "")],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            expect: Expect::Error(
                |e| matches!(e, AllocError::MissingClassName { claim, request } if claim == CLAIM0 && request == REQ0),
            ),
            ..Case::new("empty-class")
        },
        Case {
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                At::Node(NODE1),
                POOL1,
                DRIVER_A,
            )],
            node: n1(),
            ..Case::new("no-claims-to-allocate")
        },
    ]
}
