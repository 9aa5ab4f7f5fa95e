//! Dynamic resource allocation objects (`resource.k8s.io/v1`, Kubernetes 1.34): DeviceClass,
//! ResourceSlice, ResourceClaim and ResourceClaimTemplate, with Kubernetes' own JSON field
//! names, as `kubectl get deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates
//! -A -o json` writes them.
//!
//! The fields are those kube-scheduler's DynamicResources plugin and its structured allocator
//! read. Driver configuration (`config[].opaque.parameters`) is kept as JSON: the scheduler
//! copies it into an allocation, never reads it. Fields of devices that only the kubelet and
//! the drivers read (`status.devices`, binding conditions) are not kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::objects::nullable;
use super::{NodeSelector, ObjectMeta, Quantity};

/// A class of devices (`DeviceClass`, cluster-scoped): the selectors every device allocated
/// for a request of the class must pass, and configuration for the driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceClass {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// The class.
    pub spec: DeviceClassSpec,
}

/// `spec` of a [`DeviceClass`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceClassSpec {
    /// Every selector must accept a device of this class.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// Configuration for the drivers of allocated devices.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceConfiguration>,
    /// The extended resource (`example.com/gpu`) pods may request through this class
    /// (alpha in 1.34, `DRAExtendedResource`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

/// One selector of a class or a request (`selectors[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceSelector {
    /// A CEL expression over the device; the only kind of selector in `v1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

/// `cel` of a [`DeviceSelector`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CelDeviceSelector {
    /// The expression: it sees `device.driver`, `device.attributes`, `device.capacity` and
    /// `device.allowMultipleAllocations`, and must evaluate to a bool.
    #[serde(deserialize_with = "nullable")]
    pub expression: String,
}

/// Configuration for a driver (`config[]` of a class, claim or allocation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceConfiguration {
    /// The requests it applies to (claims only; all when empty).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Where an allocation's configuration came from (`FromClass` or `FromClaim`; allocations
    /// only).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub source: String,
    /// The driver's own parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// `opaque` of a [`DeviceConfiguration`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OpaqueDeviceConfiguration {
    /// The driver they are for.
    #[serde(deserialize_with = "nullable")]
    pub driver: String,
    /// The parameters, as given.
    pub parameters: serde_json::Value,
}

/// The devices of one driver in one pool, or part of them (`ResourceSlice`, cluster-scoped).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSlice {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// The slice.
    pub spec: ResourceSliceSpec,
}

/// `spec` of a [`ResourceSlice`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSliceSpec {
    /// The driver (a DNS subdomain, `gpu.example.com`).
    #[serde(deserialize_with = "nullable")]
    pub driver: String,
    /// The pool the slice belongs to.
    pub pool: ResourcePool,
    /// The node whose devices these are (exactly one of `nodeName`, `nodeSelector`,
    /// `allNodes` and `perDeviceNodeSelection`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The nodes that can reach these devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// Every node can reach these devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Each device says which nodes can reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    /// The devices.
    #[serde(deserialize_with = "nullable")]
    pub devices: Vec<Device>,
    /// Counters the devices of the pool consume from (partitionable devices).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub shared_counters: Vec<CounterSet>,
}

/// `pool` of a [`ResourceSliceSpec`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourcePool {
    /// The pool's name, unique per driver.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Slices of an older generation than the pool's newest are ignored.
    #[serde(deserialize_with = "nullable")]
    pub generation: i64,
    /// How many slices the pool's newest generation has: a pool with fewer is incomplete.
    #[serde(deserialize_with = "nullable")]
    pub resource_slice_count: i64,
}

/// A named set of counters (`sharedCounters[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CounterSet {
    /// The set's name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The counters by name.
    #[serde(deserialize_with = "nullable")]
    pub counters: BTreeMap<String, Counter>,
}

/// One counter. (`value` is required).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counter {
    /// How much there is, or how much a device consumes.
    pub value: Quantity,
}

/// One device of a [`ResourceSlice`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Device {
    /// The device's name, unique in its pool.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Attributes by (qualified) name: `model`, `gpu.example.com/memoryType`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    /// Capacities by (qualified) name.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    /// What the device consumes from its pool's counter sets.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    /// With `perDeviceNodeSelection`: the node that reaches the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// With `perDeviceNodeSelection`: the nodes that reach the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// With `perDeviceNodeSelection`: every node reaches the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Taints, which a request must tolerate.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<DeviceTaint>,
    /// Whether the device may be allocated to more than one claim at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
    /// The device selectors already evaluated on this device, kept with it (not part of the
    /// object: not read, written or compared).
    #[serde(skip)]
    pub selector_memo: SelectorMemo,
}

/// Results of device selectors evaluated on one [`Device`], by the compiled selector's id
/// (`crate::dra::cel::CompiledSelector::id`), for the driver of the first evaluation. A
/// slice's devices do not change (an update replaces the slice, and its devices start
/// without results), so a result holds as long as the device does. Ignored by serde and by
/// comparison; a clone keeps the results.
#[derive(Default)]
pub struct SelectorMemo(std::sync::Mutex<MemoEntries>);

/// The driver the results are for, and each selector's result.
#[derive(Clone, Default)]
struct MemoEntries {
    driver: Option<String>,
    results: Vec<(u32, bool)>,
}

impl SelectorMemo {
    /// Forgets every result (the device's fields may have changed since).
    pub fn clear(&self) {
        if let Ok(mut m) = self.0.lock() {
            *m = MemoEntries::default();
        }
    }

    /// The result of selector `id` for `driver`, if evaluated before.
    pub fn get(&self, driver: &str, id: u32) -> Option<bool> {
        let m = self.0.lock().ok()?;
        if m.driver.as_deref() != Some(driver) {
            return None;
        }
        m.results.iter().find(|(i, _)| *i == id).map(|&(_, r)| r)
    }

    /// Keeps the result of selector `id` for `driver` (only for the driver of the first
    /// result kept).
    pub fn put(&self, driver: &str, id: u32, result: bool) {
        let Ok(mut m) = self.0.lock() else { return };
        match m.driver.as_deref() {
            None => m.driver = Some(driver.to_owned()),
            Some(d) if d != driver => return,
            Some(_) => {}
        }
        if !m.results.iter().any(|(i, _)| *i == id) {
            m.results.push((id, result));
        }
    }
}

impl Clone for SelectorMemo {
    fn clone(&self) -> Self {
        let entries = self.0.lock().map(|m| m.clone()).unwrap_or_default();
        SelectorMemo(std::sync::Mutex::new(entries))
    }
}

impl PartialEq for SelectorMemo {
    fn eq(&self, _: &SelectorMemo) -> bool {
        true
    }
}

impl std::fmt::Debug for SelectorMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SelectorMemo")
    }
}

/// One attribute's value: exactly one of the four is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceAttribute {
    /// An integer.
    #[serde(rename = "int", skip_serializing_if = "Option::is_none")]
    pub int_value: Option<i64>,
    /// A bool.
    #[serde(rename = "bool", skip_serializing_if = "Option::is_none")]
    pub bool_value: Option<bool>,
    /// A string.
    #[serde(rename = "string", skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    /// A semantic version (`1.2.3`).
    #[serde(rename = "version", skip_serializing_if = "Option::is_none")]
    pub version_value: Option<String>,
}

/// One capacity of a device. (`value` is required).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCapacity {
    /// How much the device has.
    pub value: Quantity,
}

/// What a device consumes from one counter set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceCounterConsumption {
    /// The counter set.
    #[serde(deserialize_with = "nullable")]
    pub counter_set: String,
    /// The amounts by counter name.
    #[serde(deserialize_with = "nullable")]
    pub counters: BTreeMap<String, Counter>,
}

/// A taint of a device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceTaint {
    /// The key.
    #[serde(deserialize_with = "nullable")]
    pub key: String,
    /// The value.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    /// `NoSchedule` or `NoExecute`.
    #[serde(deserialize_with = "nullable")]
    pub effect: String,
}

/// A toleration of device taints in a request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceToleration {
    /// The key (empty with `Exists`: every key).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub key: String,
    /// `Equal` (the default) or `Exists`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub operator: String,
    /// The value, with `Equal`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    /// The effect (empty: every effect).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub effect: String,
    /// How long a `NoExecute` taint is tolerated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// A claim for devices (`ResourceClaim`, namespaced).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaim {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// What is claimed.
    pub spec: ResourceClaimSpec,
    /// The allocation and the pods it is reserved for.
    pub status: ResourceClaimStatus,
}

/// `spec` of a [`ResourceClaim`] (and of a template's claims).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimSpec {
    /// The devices claimed.
    pub devices: DeviceClaim,
}

/// `spec.devices` of a claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceClaim {
    /// The requests; all must be satisfied.
    #[serde(deserialize_with = "nullable")]
    pub requests: Vec<DeviceRequest>,
    /// Constraints across the requests' devices.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<DeviceConstraint>,
    /// Configuration for the drivers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceConfiguration>,
}

/// One request of a claim: exactly one of `exactly` and `firstAvailable`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceRequest {
    /// The request's name, unique in the claim.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// One way to satisfy it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    /// Alternatives in order of preference (prioritized list, beta and on in 1.34).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub first_available: Vec<DeviceSubRequest>,
}

/// `exactly` of a [`DeviceRequest`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExactDeviceRequest {
    /// The class of the devices.
    #[serde(deserialize_with = "nullable")]
    pub device_class_name: String,
    /// Selectors the devices must pass besides the class's.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// `ExactCount` (the default) or `All`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub allocation_mode: String,
    /// How many devices with `ExactCount` (default 1).
    #[serde(deserialize_with = "nullable")]
    pub count: i64,
    /// Admin access: the devices may be in use by others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// Tolerated device taints.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// Capacity requested from devices that can be shared (alpha in 1.34).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// One alternative of `firstAvailable`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceSubRequest {
    /// The alternative's name (results name it `request/alternative`).
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The class of the devices.
    #[serde(deserialize_with = "nullable")]
    pub device_class_name: String,
    /// Selectors besides the class's.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// `ExactCount` (the default) or `All`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub allocation_mode: String,
    /// How many devices with `ExactCount` (default 1).
    #[serde(deserialize_with = "nullable")]
    pub count: i64,
    /// Tolerated device taints.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// Capacity requested from devices that can be shared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// `capacity` of a request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CapacityRequirements {
    /// Amounts by capacity name.
    #[serde(deserialize_with = "nullable")]
    pub requests: BTreeMap<String, Quantity>,
}

/// A constraint across the devices of some requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceConstraint {
    /// The requests it covers (all when empty).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Every device must have this attribute, with one value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<String>,
    /// Every device must have this attribute, each with another value (alpha in 1.34).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<String>,
}

/// `status` of a [`ResourceClaim`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimStatus {
    /// The allocation, once made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    /// The pods (or other consumers) the claim is reserved for.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
}

/// One consumer of a claim (`status.reservedFor[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimConsumerReference {
    /// The consumer's API group (empty for pods).
    #[serde(
        rename = "apiGroup",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_group: String,
    /// The consumer's resource (`pods`).
    #[serde(deserialize_with = "nullable")]
    pub resource: String,
    /// The consumer's name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The consumer's uid.
    #[serde(deserialize_with = "nullable")]
    pub uid: String,
}

/// `status.allocation` of a claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AllocationResult {
    /// The allocated devices.
    pub devices: DeviceAllocationResult,
    /// The nodes that can reach every allocated device (none: all nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
}

/// `devices` of an [`AllocationResult`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceAllocationResult {
    /// One entry per allocated device.
    #[serde(deserialize_with = "nullable")]
    pub results: Vec<DeviceRequestAllocationResult>,
    /// The configuration of the class and the claim, for the drivers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceConfiguration>,
}

/// One allocated device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceRequestAllocationResult {
    /// The request (`request` or `request/alternative`).
    #[serde(deserialize_with = "nullable")]
    pub request: String,
    /// The device's driver.
    #[serde(deserialize_with = "nullable")]
    pub driver: String,
    /// The device's pool.
    #[serde(deserialize_with = "nullable")]
    pub pool: String,
    /// The device's name.
    #[serde(deserialize_with = "nullable")]
    pub device: String,
    /// Allocated with admin access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// The tolerations the request had.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// For a device shared by several allocations: this allocation's share.
    #[serde(rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// For a device shared by several allocations: the capacity this one consumes.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub consumed_capacity: BTreeMap<String, Quantity>,
}

/// A template for the claims of pods (`ResourceClaimTemplate`, namespaced).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimTemplate {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// The claims' metadata and spec.
    pub spec: ResourceClaimTemplateSpec,
}

/// `spec` of a [`ResourceClaimTemplate`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimTemplateSpec {
    /// Labels and annotations for the claims made from it.
    pub metadata: ObjectMeta,
    /// The claims' spec.
    pub spec: ResourceClaimSpec,
}

/// The dynamic resource allocation objects of loaded files.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct DraObjects {
    /// DeviceClasses.
    pub device_classes: Vec<DeviceClass>,
    /// ResourceSlices.
    pub resource_slices: Vec<ResourceSlice>,
    /// ResourceClaims.
    pub resource_claims: Vec<ResourceClaim>,
    /// ResourceClaimTemplates.
    pub resource_claim_templates: Vec<ResourceClaimTemplate>,
}

impl DraObjects {
    /// Adds `other`'s objects after these.
    pub fn extend(&mut self, other: DraObjects) {
        self.device_classes.extend(other.device_classes);
        self.resource_slices.extend(other.resource_slices);
        self.resource_claims.extend(other.resource_claims);
        self.resource_claim_templates
            .extend(other.resource_claim_templates);
    }

    /// Whether no object was loaded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.device_classes.is_empty()
            && self.resource_slices.is_empty()
            && self.resource_claims.is_empty()
            && self.resource_claim_templates.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Role, load_bytes};

    /// A GPU cluster as `kubectl get deviceclasses,resourceslices,resourceclaimtemplates,
    /// resourceclaims,pods -A -o json` writes it (fields from the API's v1 types).
    const GPUS: &str = r#"{"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu.example.com"},
       "spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.example.com'"}}],
               "config":[{"opaque":{"driver":"gpu.example.com","parameters":{"sharing":"none"}}}]}},
      {"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"node-1-gpu"},
       "spec":{"driver":"gpu.example.com","nodeName":"node-1",
               "pool":{"name":"node-1","generation":1,"resourceSliceCount":1},
               "devices":[
                 {"name":"gpu-0","attributes":{"model":{"string":"A100"},"index":{"int":0},
                   "driverVersion":{"version":"1.2.3"},"mig":{"bool":false}},
                  "capacity":{"memory":{"value":"80Gi"}}},
                 {"name":"gpu-1","attributes":{"model":{"string":"A100"},"index":{"int":1}},
                  "capacity":{"memory":{"value":"80Gi"}},
                  "taints":[{"key":"broken","effect":"NoSchedule"}]}]}},
      {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
       "metadata":{"name":"two-gpus","namespace":"train"},
       "spec":{"spec":{"devices":{
         "requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.example.com","count":2,
           "selectors":[{"cel":{"expression":"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}}],
         "constraints":[{"requests":["gpus"],"matchAttribute":"gpu.example.com/model"}]}}}},
      {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
       "metadata":{"name":"shared","namespace":"train"},
       "spec":{"devices":{"requests":[{"name":"any","firstAvailable":[
         {"name":"big","deviceClassName":"gpu.example.com","allocationMode":"All"},
         {"name":"small","deviceClassName":"gpu.example.com"}]}]}},
       "status":{"allocation":{"devices":{"results":[
           {"request":"any/small","driver":"gpu.example.com","pool":"node-1","device":"gpu-0"}]},
         "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
           {"key":"metadata.name","operator":"In","values":["node-1"]}]}]}},
         "reservedFor":[{"resource":"pods","name":"a","uid":"u-1"}]}},
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"train"},
       "spec":{"containers":[],"resourceClaims":[
         {"name":"gpus","resourceClaimTemplateName":"two-gpus"},
         {"name":"shared","resourceClaimName":"shared"}]},
       "status":{"resourceClaimStatuses":[{"name":"gpus","resourceClaimName":"a-gpus-x7k2p"}]}}
    ]}"#;

    #[test]
    fn a_gpu_cluster_loads_by_kind() {
        let objects = load_bytes("gpus.json", GPUS.as_bytes(), Role::Mixed).unwrap();
        assert!(objects.other_kinds.is_empty(), "{:?}", objects.other_kinds);
        let dra = &objects.dra;
        assert_eq!(dra.device_classes.len(), 1);
        let class = &dra.device_classes[0].spec;
        assert_eq!(
            class.selectors[0].cel.as_ref().unwrap().expression,
            "device.driver == 'gpu.example.com'"
        );
        let config = class.config[0].opaque.as_ref().unwrap();
        assert_eq!(config.parameters["sharing"], "none");

        let slice = &dra.resource_slices[0].spec;
        assert_eq!(slice.node_name.as_deref(), Some("node-1"));
        assert_eq!(
            (slice.pool.generation, slice.pool.resource_slice_count),
            (1, 1)
        );
        let gpu0 = &slice.devices[0];
        assert_eq!(
            gpu0.attributes["model"].string_value.as_deref(),
            Some("A100")
        );
        assert_eq!(gpu0.attributes["index"].int_value, Some(0));
        assert_eq!(
            gpu0.attributes["driverVersion"].version_value.as_deref(),
            Some("1.2.3")
        );
        assert_eq!(gpu0.attributes["mig"].bool_value, Some(false));
        assert_eq!(gpu0.capacity["memory"].value.value(), 80 << 30);
        assert_eq!(slice.devices[1].taints[0].effect, "NoSchedule");

        let template = &dra.resource_claim_templates[0];
        assert_eq!(template.metadata.namespace, "train");
        let request = &template.spec.spec.devices.requests[0];
        let exactly = request.exactly.as_ref().unwrap();
        assert_eq!(
            (exactly.device_class_name.as_str(), exactly.count),
            ("gpu.example.com", 2)
        );
        assert_eq!(
            template.spec.spec.devices.constraints[0]
                .match_attribute
                .as_deref(),
            Some("gpu.example.com/model")
        );

        let claim = &dra.resource_claims[0];
        let alternatives = &claim.spec.devices.requests[0].first_available;
        assert_eq!(alternatives.len(), 2);
        assert_eq!(alternatives[0].allocation_mode, "All");
        let allocation = claim.status.allocation.as_ref().unwrap();
        assert_eq!(allocation.devices.results[0].request, "any/small");
        assert_eq!(allocation.devices.results[0].device, "gpu-0");
        assert!(allocation.node_selector.is_some());
        assert_eq!(claim.status.reserved_for[0].uid, "u-1");

        let pod = &objects.pods[0];
        assert_eq!(pod.spec.resource_claims.len(), 2);
        assert_eq!(
            pod.spec.resource_claims[0]
                .resource_claim_template_name
                .as_deref(),
            Some("two-gpus")
        );
        assert_eq!(
            pod.spec.resource_claims[1].resource_claim_name.as_deref(),
            Some("shared")
        );
        assert_eq!(
            pod.status.resource_claim_statuses[0]
                .resource_claim_name
                .as_deref(),
            Some("a-gpus-x7k2p")
        );

        // Kept through the cluster, and through several files.
        let mut more = load_bytes("gpus.json", GPUS.as_bytes(), Role::Mixed).unwrap();
        more.pods.clear();
        let mut all = objects.clone();
        all.extend(more);
        let cluster = all.into_cluster().unwrap();
        assert_eq!(cluster.dra.resource_slices.len(), 2);
        assert_eq!(cluster.dra.device_classes.len(), 2);
        assert!(cluster.report.to_string().is_empty(), "{}", cluster.report);
    }

    #[test]
    fn bad_dra_objects_are_errors_naming_file_item_and_field() {
        let cases: [(&str, &str, &str); 4] = [
            (
                r#"[{"kind":"ResourceSlice","metadata":{"name":"s"},"spec":{"devices":[
                    {"name":"d","capacity":{"memory":{"value":"80Qi"}}}]}}]"#,
                "items[0]: ResourceSlice \"s\"",
                "spec.devices[0].capacity.memory.value",
            ),
            (
                r#"[{"kind":"ResourceSlice","metadata":{"name":"s"},"spec":{"devices":[
                    {"name":"d","capacity":{"memory":{}}}]}}]"#,
                "items[0]: ResourceSlice \"s\"",
                "spec.devices[0].capacity.memory",
            ),
            (
                r#"[{"kind":"ResourceClaim","metadata":{"name":"c","namespace":"ns"},
                    "spec":{"devices":{"requests":[{"name":"r","exactly":{"count":"two"}}]}}}]"#,
                "items[0]: ResourceClaim \"ns/c\"",
                "spec.devices.requests[0].exactly.count",
            ),
            (
                r#"[{"kind":"DeviceClass","metadata":{"name":"g"},
                    "spec":{"selectors":[{"cel":{"expression":7}}]}}]"#,
                "items[0]: DeviceClass \"g\"",
                "spec.selectors[0].cel.expression",
            ),
        ];
        for (json, item, field) in cases {
            let err = load_bytes("dra.json", json.as_bytes(), Role::Mixed)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(&format!("dra.json: {item}")), "{err}");
            assert!(err.contains(field), "{field}: {err}");
        }
        let err = load_bytes(
            "dra.json",
            br#"[{"kind":"ResourceClaimTemplate","metadata":{"namespace":"ns"}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "dra.json: items[0]: ResourceClaimTemplate has an empty metadata.name"
        );
    }
}
