//! Loading Kubernetes objects from JSON as `kubectl get ... -o json` writes it, by kind.
//!
//! A file is a `List` (`kind: List`, any kinds mixed), a typed List (`NodeList`, `PodList`,
//! ...), a JSON array of objects, or one object. Each item's `kind` routes it; an item without
//! one takes its typed List's kind, or the file's [`Role`]'s. The document is split into
//! borrowed items first and each item deserialized straight into the model types; only an item
//! that fails is read a second time, to name the bad field's path.

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::load_error::{LoadError, LoadErrorKind, Position, short};
use super::objects::nullable;
use super::{
    ClusterObjects, CsiDriver, CsiNode, CsiStorageCapacity, DeviceClass, LabelSelector, Namespace,
    Node, NodeSpec, NodeStatus, ObjectMeta, PersistentVolume, PersistentVolumeClaim, Pod,
    PodDisruptionBudget, PodGroup, PodSpec, PodStatus, ResourceClaim, ResourceClaimTemplate,
    ResourceList, ResourceSlice, SchedulingWorkload, StorageClass, Workload, WorkloadKind,
};

/// What a file is expected to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Nodes only (`kubectl get nodes -o json`): any other kind is an error.
    Nodes,
    /// Pods only (`kubectl get pods -A -o json`): any other kind is an error.
    Pods,
    /// Any kinds (`kubectl get nodes,pods,services,replicasets -A -o json`): nodes, pods and
    /// the workloads spreading reads are kept, other kinds counted.
    Mixed,
}

impl Role {
    /// "this file holds nodes", for messages.
    pub(crate) fn holds(self) -> &'static str {
        match self {
            Role::Nodes => "this file holds nodes",
            Role::Pods => "this file holds pods",
            Role::Mixed => "this file holds mixed objects",
        }
    }
}

/// Reads a file of Kubernetes objects (see [`load_bytes`]); errors name the file as given.
///
/// # Errors
/// [`LoadErrorKind::Io`] when the file cannot be read, else as [`load_bytes`].
pub fn load_file(path: impl AsRef<Path>, role: Role) -> Result<ClusterObjects, LoadError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LoadError::new(&name, LoadErrorKind::Io(e)))?;
    load_bytes(&name, &bytes, role)
}

/// Loads Kubernetes objects from JSON bytes; `file` names them in errors (may be empty).
///
/// A leading UTF-8 byte order mark is skipped. Every item must have a name; in a
/// [`Role::Nodes`] or [`Role::Pods`] file every item must be of that kind.
///
/// ```
/// use sched_core::model::{Role, load_bytes};
/// let json = br#"{"apiVersion":"v1","kind":"List","items":[
///   {"kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}},
///   {"kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[]}},
///   {"kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}]}"#;
/// let objects = load_bytes("cluster.json", json, Role::Mixed)?;
/// assert_eq!((objects.nodes.len(), objects.pods.len()), (1, 1));
/// assert_eq!(objects.other_kinds["ConfigMap"], 1);
/// let err = load_bytes("pods.json", json, Role::Pods).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"pods.json: items[0]: expected a Pod (this file holds pods), found a Node "n1""#
/// );
/// # Ok::<(), sched_core::model::LoadError>(())
/// ```
///
/// # Errors
/// A [`LoadError`] naming the file, the item (index and name) and the field.
pub fn load_bytes(file: &str, bytes: &[u8], role: Role) -> Result<ClusterObjects, LoadError> {
    let text = decode(file, bytes)?;
    let mut out = ClusterObjects::default();
    let ctx = Ctx { file, role };
    let json_err = |e: serde_json::Error| LoadError::new(file, json_error(&e));
    match text.bytes().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(json_err)?;
            out.reserve(role, items.len());
            for (i, item) in items.iter().enumerate() {
                ctx.route(&mut out, None, Position(Some(i)), item.get())?;
            }
        }
        Some(b'{') => {
            let doc: ListDoc<'_> = serde_json::from_str(text).map_err(json_err)?;
            match doc.items {
                Some(items) => {
                    let list_kind = doc.kind.as_deref().and_then(item_kind_of_list);
                    out.reserve(role, items.len());
                    for (i, item) in items.iter().enumerate() {
                        ctx.route(&mut out, list_kind, Position(Some(i)), item.get())?;
                    }
                }
                None => ctx.route(&mut out, None, Position(None), text)?,
            }
        }
        _ => {
            let v: serde_json::Value = serde_json::from_str(text).map_err(json_err)?;
            let found = match v {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                _ => "something else",
            };
            return Err(LoadError::new(
                file,
                LoadErrorKind::Shape {
                    found: found.into(),
                },
            ));
        }
    }
    Ok(out)
}

/// The text of the bytes: a UTF-8 byte order mark skipped, UTF-16 and bad UTF-8 refused.
pub(crate) fn decode<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str, LoadError> {
    let (body, skipped) = match bytes {
        [0xEF, 0xBB, 0xBF, rest @ ..] => (rest, 3),
        [0xFE, 0xFF, ..] | [0xFF, 0xFE, ..] => {
            return Err(LoadError::new(
                file,
                LoadErrorKind::Utf16 {
                    big_endian: bytes[0] == 0xFE,
                },
            ));
        }
        _ => (bytes, 0),
    };
    std::str::from_utf8(body).map_err(|e| {
        let at = e.valid_up_to();
        let line = body[..at].iter().filter(|b| **b == b'\n').count() + 1;
        LoadError::new(
            file,
            LoadErrorKind::InvalidUtf8 {
                offset: at + skipped,
                line,
            },
        )
    })
}

fn json_error(e: &serde_json::Error) -> LoadErrorKind {
    let mut message = e.to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    LoadErrorKind::Json {
        message,
        line: e.line(),
        column: e.column(),
    }
}

/// `PodList` -> `Pod`; `List` and anything else -> none.
fn item_kind_of_list(kind: &str) -> Option<&str> {
    kind.strip_suffix("List").filter(|k| !k.is_empty())
}

/// The top of a document: its kind and, for a List, its items (`null` items: none).
#[derive(Deserialize)]
struct ListDoc<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    items: Option<Vec<&'a RawValue>>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<&'de RawValue>>, D::Error> {
    Ok(Some(Option::deserialize(d)?.unwrap_or_default()))
}

/// An item's kind and name, read without allocating (unless escaped).
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<PeekMeta<'a>>,
}

#[derive(Deserialize)]
struct PeekMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
}

impl Peek<'_> {
    fn name(&self) -> String {
        let meta = self.metadata.as_ref();
        let name = meta.and_then(|m| m.name.as_deref()).unwrap_or("");
        match meta.and_then(|m| m.namespace.as_deref()) {
            Some(ns) if !ns.is_empty() => short(&format!("{ns}/{name}")),
            _ => short(name),
        }
    }
}

fn display_name(meta: &ObjectMeta) -> String {
    if meta.namespace.is_empty() {
        short(&meta.name)
    } else {
        short(&format!("{}/{}", meta.namespace, meta.name))
    }
}

#[derive(Deserialize)]
struct NodeItem<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "nullable")]
    metadata: ObjectMeta,
    #[serde(default, deserialize_with = "nullable")]
    spec: NodeSpec,
    #[serde(default, deserialize_with = "nullable")]
    status: NodeStatus,
}

#[derive(Deserialize)]
struct PodItem<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "nullable")]
    metadata: ObjectMeta,
    #[serde(default, deserialize_with = "nullable")]
    spec: PodSpec,
    #[serde(default, deserialize_with = "nullable")]
    status: PodStatus,
}

/// The name and namespace of a workload.
#[derive(Default, Deserialize)]
#[serde(default)]
struct WorkloadMeta {
    #[serde(deserialize_with = "nullable")]
    name: String,
    #[serde(deserialize_with = "nullable")]
    namespace: String,
}

/// A Service or ReplicationController: `spec.selector` is a plain map.
#[derive(Default, Deserialize)]
#[serde(default)]
struct MapSelectorItem {
    #[serde(deserialize_with = "nullable")]
    metadata: WorkloadMeta,
    #[serde(deserialize_with = "nullable")]
    spec: MapSelectorSpec,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct MapSelectorSpec {
    #[serde(deserialize_with = "nullable")]
    selector: std::collections::BTreeMap<String, String>,
}

/// A ReplicaSet or StatefulSet: `spec.selector` is a label selector.
#[derive(Default, Deserialize)]
#[serde(default)]
struct SelectorItem {
    #[serde(deserialize_with = "nullable")]
    metadata: WorkloadMeta,
    #[serde(deserialize_with = "nullable")]
    spec: SelectorSpec,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct SelectorSpec {
    #[serde(deserialize_with = "nullable")]
    selector: LabelSelector,
}

fn workload_kind(kind: &str) -> Option<WorkloadKind> {
    Some(match kind {
        "Service" => WorkloadKind::Service,
        "ReplicationController" => WorkloadKind::ReplicationController,
        "ReplicaSet" => WorkloadKind::ReplicaSet,
        "StatefulSet" => WorkloadKind::StatefulSet,
        _ => return None,
    })
}

fn workload_kind_name(kind: WorkloadKind) -> &'static str {
    match kind {
        WorkloadKind::Service => "Service",
        WorkloadKind::ReplicationController => "ReplicationController",
        WorkloadKind::ReplicaSet => "ReplicaSet",
        WorkloadKind::StatefulSet => "StatefulSet",
    }
}

struct Ctx<'f> {
    file: &'f str,
    role: Role,
}

impl Ctx<'_> {
    fn err(&self, kind: LoadErrorKind) -> LoadError {
        LoadError::new(self.file, kind)
    }

    /// Puts one item where its kind belongs.
    fn route(
        &self,
        out: &mut ClusterObjects,
        list_kind: Option<&str>,
        at: Position,
        raw: &str,
    ) -> Result<(), LoadError> {
        match self.role {
            Role::Nodes => {
                let node = self.node(list_kind, at, raw)?;
                out.push_node(node, self.file, at.0);
            }
            Role::Pods => {
                let pod = self.pod(list_kind, at, raw)?;
                out.push_pod(pod, self.file, at.0);
            }
            Role::Mixed => {
                let peek = self.peek(at, raw)?;
                let item_kind = peek.kind.as_deref().filter(|k| !k.is_empty());
                let Some(kind) = item_kind.or(list_kind) else {
                    return Err(self.err(LoadErrorKind::MissingKind { at }));
                };
                match kind {
                    "Node" => out.push_node(self.node(Some("Node"), at, raw)?, self.file, at.0),
                    "Pod" => out.push_pod(self.pod(Some("Pod"), at, raw)?, self.file, at.0),
                    "Namespace" => {
                        let ns: Namespace = serde_json::from_str(raw)
                            .map_err(|e| self.field_error::<Namespace>("Namespace", at, raw, e))?;
                        if ns.metadata.name.is_empty() {
                            return Err(self.err(LoadErrorKind::EmptyName {
                                kind: "Namespace",
                                at,
                            }));
                        }
                        out.namespaces.push(ns);
                    }
                    "PersistentVolume" => {
                        let pv: PersistentVolume = self.named(kind, at, raw)?;
                        out.storage.persistent_volumes.push(pv);
                    }
                    "PersistentVolumeClaim" => {
                        let pvc: PersistentVolumeClaim = self.named(kind, at, raw)?;
                        out.storage.persistent_volume_claims.push(pvc);
                    }
                    "StorageClass" => {
                        let sc: StorageClass = self.named(kind, at, raw)?;
                        out.storage.storage_classes.push(sc);
                    }
                    "CSINode" => {
                        let cn: CsiNode = self.named(kind, at, raw)?;
                        out.storage.csi_nodes.push(cn);
                    }
                    "CSIDriver" => {
                        let d: CsiDriver = self.named(kind, at, raw)?;
                        out.storage.csi_drivers.push(d);
                    }
                    "CSIStorageCapacity" => {
                        let c: CsiStorageCapacity = self.named(kind, at, raw)?;
                        out.storage.csi_storage_capacities.push(c);
                    }
                    "PodDisruptionBudget" => {
                        let pdb: PodDisruptionBudget = self.named(kind, at, raw)?;
                        out.pdbs.push(pdb);
                    }
                    "PodGroup" => {
                        let g: PodGroup = self.named(kind, at, raw)?;
                        out.pod_groups.push(g);
                    }
                    // kube's Workload API: its gang pod groups join Coscheduling's groups.
                    "Workload" => {
                        let w: SchedulingWorkload = self.named(kind, at, raw)?;
                        out.pod_groups.extend(w.pod_groups());
                    }
                    "DeviceClass" => {
                        let c: DeviceClass = self.named(kind, at, raw)?;
                        out.dra.device_classes.push(c);
                    }
                    "ResourceSlice" => {
                        let s: ResourceSlice = self.named(kind, at, raw)?;
                        out.dra.resource_slices.push(s);
                    }
                    "ResourceClaim" => {
                        let c: ResourceClaim = self.named(kind, at, raw)?;
                        out.dra.resource_claims.push(c);
                    }
                    "ResourceClaimTemplate" => {
                        let t: ResourceClaimTemplate = self.named(kind, at, raw)?;
                        out.dra.resource_claim_templates.push(t);
                    }
                    other => match workload_kind(other) {
                        Some(kind) => out.workloads.push(self.workload(kind, at, raw)?),
                        None => *out.other_kinds.entry(other.to_string()).or_default() += 1,
                    },
                }
            }
        }
        Ok(())
    }

    /// A storage object of `kind`: a bad field or an empty name is an error naming it.
    fn named<T: DeserializeOwned + HasMeta>(
        &self,
        kind: &str,
        at: Position,
        raw: &str,
    ) -> Result<T, LoadError> {
        let obj: T =
            serde_json::from_str(raw).map_err(|e| self.field_error::<T>(kind, at, raw, e))?;
        if obj.meta().name.is_empty() {
            let kind = match kind {
                "PersistentVolume" => "PersistentVolume",
                "PersistentVolumeClaim" => "PersistentVolumeClaim",
                "StorageClass" => "StorageClass",
                "PodDisruptionBudget" => "PodDisruptionBudget",
                "CSIDriver" => "CSIDriver",
                "CSIStorageCapacity" => "CSIStorageCapacity",
                "DeviceClass" => "DeviceClass",
                "ResourceSlice" => "ResourceSlice",
                "ResourceClaim" => "ResourceClaim",
                "ResourceClaimTemplate" => "ResourceClaimTemplate",
                "PodGroup" => "PodGroup",
                _ => "CSINode",
            };
            return Err(self.err(LoadErrorKind::EmptyName { kind, at }));
        }
        Ok(obj)
    }

    fn peek<'a>(&self, at: Position, raw: &'a str) -> Result<Peek<'a>, LoadError> {
        serde_json::from_str(raw).map_err(|e| self.field_error::<Peek<'_>>("object", at, raw, e))
    }

    /// The field error of an item that failed to deserialize, its path found by reading it again.
    fn field_error<'a, T: Deserialize<'a>>(
        &self,
        kind: &str,
        at: Position,
        raw: &'a str,
        first: serde_json::Error,
    ) -> LoadError {
        let name = serde_json::from_str::<Peek<'_>>(raw)
            .map(|p| p.name())
            .unwrap_or_default();
        let mut de = serde_json::Deserializer::from_str(raw);
        let (field, message) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(e) => (e.path().to_string(), e.into_inner().to_string()),
            Ok(_) => (String::from("."), first.to_string()),
        };
        let mut message = match message.rfind(" at line ") {
            Some(cut) => message[..cut].to_string(),
            None => message,
        };
        // serde names the private item structs; say what they are.
        for private in [
            "NodeItem",
            "PodItem",
            "PeekMeta",
            "Peek",
            "MapSelectorItem",
            "MapSelectorSpec",
            "SelectorItem",
            "SelectorSpec",
            "WorkloadMeta",
        ] {
            message = message.replace(&format!("struct {private}"), "an object");
        }
        self.err(LoadErrorKind::Field {
            kind: kind.to_string(),
            at,
            name,
            field,
            message,
        })
    }

    /// An error for an item that is not of the expected kind, if it is not.
    fn check_kind(
        &self,
        kind: Option<&str>,
        expected: &'static str,
        at: Position,
        name: impl FnOnce() -> String,
    ) -> Result<(), LoadError> {
        match kind {
            Some(found) if !found.is_empty() && found != expected => {
                Err(self.err(LoadErrorKind::WrongKind {
                    at,
                    expected,
                    role: self.role,
                    found: short(found),
                    name: name(),
                }))
            }
            _ => Ok(()),
        }
    }

    /// The failure of an item that did not deserialize as `expected`: its kind if wrong, else
    /// the bad field.
    fn explain<'a, T: Deserialize<'a>>(
        &self,
        list_kind: Option<&str>,
        expected: &'static str,
        at: Position,
        raw: &'a str,
        first: serde_json::Error,
    ) -> LoadError {
        if let Ok(peek) = serde_json::from_str::<Peek<'_>>(raw)
            && let Err(e) = self.check_kind(
                peek.kind.as_deref().filter(|k| !k.is_empty()).or(list_kind),
                expected,
                at,
                || peek.name(),
            )
        {
            return e;
        }
        self.field_error::<T>(expected, at, raw, first)
    }

    fn node(&self, list_kind: Option<&str>, at: Position, raw: &str) -> Result<Node, LoadError> {
        let item: NodeItem<'_> = serde_json::from_str(raw)
            .map_err(|e| self.explain::<NodeItem<'_>>(list_kind, "Node", at, raw, e))?;
        self.check_kind(
            item.kind.as_deref().filter(|k| !k.is_empty()).or(list_kind),
            "Node",
            at,
            || display_name(&item.metadata),
        )?;
        let node = Node {
            metadata: item.metadata,
            spec: item.spec,
            status: item.status,
        };
        self.finish("Node", at, node)
    }

    fn pod(&self, list_kind: Option<&str>, at: Position, raw: &str) -> Result<Pod, LoadError> {
        let item: PodItem<'_> = serde_json::from_str(raw)
            .map_err(|e| self.explain::<PodItem<'_>>(list_kind, "Pod", at, raw, e))?;
        self.check_kind(
            item.kind.as_deref().filter(|k| !k.is_empty()).or(list_kind),
            "Pod",
            at,
            || display_name(&item.metadata),
        )?;
        let pod = Pod {
            metadata: item.metadata,
            spec: item.spec,
            status: item.status,
        };
        self.finish("Pod", at, pod)
    }

    /// The checks after deserializing: a name, values the API server would accept.
    fn finish<T: Validate + HasMeta>(
        &self,
        kind: &'static str,
        at: Position,
        obj: T,
    ) -> Result<T, LoadError> {
        if obj.meta().name.is_empty() {
            return Err(self.err(LoadErrorKind::EmptyName { kind, at }));
        }
        match obj.invalid_field() {
            None => Ok(obj),
            Some((field, message)) => Err(self.err(LoadErrorKind::Field {
                kind: kind.to_string(),
                at,
                name: display_name(obj.meta()),
                field,
                message,
            })),
        }
    }

    fn workload(&self, kind: WorkloadKind, at: Position, raw: &str) -> Result<Workload, LoadError> {
        let kind_name = workload_kind_name(kind);
        fn parse<T: DeserializeOwned>(
            ctx: &Ctx<'_>,
            kind_name: &str,
            at: Position,
            raw: &str,
        ) -> Result<T, LoadError> {
            serde_json::from_str(raw).map_err(|e| ctx.field_error::<T>(kind_name, at, raw, e))
        }
        let (meta, selector) = match kind {
            WorkloadKind::Service | WorkloadKind::ReplicationController => {
                let item: MapSelectorItem = parse(self, kind_name, at, raw)?;
                let selector = LabelSelector {
                    match_labels: item.spec.selector,
                    ..LabelSelector::default()
                };
                (item.metadata, selector)
            }
            _ => {
                let item: SelectorItem = parse(self, kind_name, at, raw)?;
                (item.metadata, item.spec.selector)
            }
        };
        if meta.name.is_empty() {
            return Err(self.err(LoadErrorKind::EmptyName {
                kind: kind_name,
                at,
            }));
        }
        Ok(Workload {
            kind,
            namespace: if meta.namespace.is_empty() {
                "default".into()
            } else {
                meta.namespace
            },
            name: meta.name,
            selector,
        })
    }
}

/// Objects with metadata.
pub(crate) trait HasMeta {
    fn meta(&self) -> &ObjectMeta;
}

impl HasMeta for Node {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl HasMeta for Pod {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

macro_rules! has_meta {
    ($($t:ty),*) => {$(
        impl HasMeta for $t {
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
        }
    )*};
}
has_meta!(
    PodDisruptionBudget,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
    DeviceClass,
    ResourceSlice,
    ResourceClaim,
    ResourceClaimTemplate,
    PodGroup,
    SchedulingWorkload
);

/// Objects whose values Kubernetes' API validation would refuse.
pub(crate) trait Validate {
    /// `(field path, message)` of the first value the API server would refuse.
    fn invalid_field(&self) -> Option<(String, String)>;
}

fn negative_in(list: &ResourceList, path: &str) -> Option<(String, String)> {
    list.iter()
        .find(|(_, q)| q.value() < 0 || q.milli_value() < 0)
        .map(|(name, q)| {
            (
                format!("{path}.{name}"),
                format!("must be greater than or equal to 0, got {:?}", q.as_str()),
            )
        })
}

impl Validate for Node {
    fn invalid_field(&self) -> Option<(String, String)> {
        negative_in(&self.status.capacity, "status.capacity")
            .or_else(|| negative_in(&self.status.allocatable, "status.allocatable"))
    }
}

impl Validate for Pod {
    fn invalid_field(&self) -> Option<(String, String)> {
        let containers = |list: &[super::Container], field: &str| {
            list.iter().enumerate().find_map(|(i, c)| {
                let base = format!("spec.{field}[{i}].resources");
                negative_in(&c.resources.requests, &format!("{base}.requests"))
                    .or_else(|| negative_in(&c.resources.limits, &format!("{base}.limits")))
            })
        };
        containers(&self.spec.containers, "containers")
            .or_else(|| containers(&self.spec.init_containers, "initContainers"))
            .or_else(|| negative_in(&self.spec.overhead, "spec.overhead"))
    }
}

/// Loads nodes from a NodeList (or `List`) JSON document, a JSON array of nodes, or one Node.
/// Every item must be a Node (see [`load_bytes`] with [`Role::Nodes`]).
///
/// ```
/// let nodes = sched_core::model::load_node_list(r#"{"kind":"NodeList","items":[
///   {"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}]}"#)?;
/// assert_eq!(nodes[0].name(), "n1");
/// # Ok::<(), sched_core::model::LoadError>(())
/// ```
///
/// # Errors
/// As [`load_bytes`], without a file name.
pub fn load_node_list(json: &str) -> Result<Vec<Node>, LoadError> {
    Ok(load_bytes("", json.as_bytes(), Role::Nodes)?.nodes)
}

/// Loads pods from a PodList (or `List`) JSON document, a JSON array of pods, or one Pod.
/// Every item must be a Pod (see [`load_bytes`] with [`Role::Pods`]).
///
/// # Errors
/// As [`load_bytes`], without a file name.
pub fn load_pod_list(json: &str) -> Result<Vec<Pod>, LoadError> {
    Ok(load_bytes("", json.as_bytes(), Role::Pods)?.pods)
}

/// Parses one Node object.
///
/// # Errors
/// As [`load_bytes`], without a file name.
pub fn parse_node(json: &str) -> Result<Node, LoadError> {
    let text = decode("", json.as_bytes())?;
    let raw: &RawValue =
        serde_json::from_str(text).map_err(|e| LoadError::new("", json_error(&e)))?;
    Ctx {
        file: "",
        role: Role::Nodes,
    }
    .node(None, Position(None), raw.get())
}

/// Parses one Pod object.
///
/// # Errors
/// As [`load_bytes`], without a file name.
pub fn parse_pod(json: &str) -> Result<Pod, LoadError> {
    let text = decode("", json.as_bytes())?;
    let raw: &RawValue =
        serde_json::from_str(text).map_err(|e| LoadError::new("", json_error(&e)))?;
    Ctx {
        file: "",
        role: Role::Pods,
    }
    .pod(None, Position(None), raw.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_kinds_are_routed_in_mixed_files() {
        let objects = load_bytes(
            "cluster.json",
            br#"{"kind":"List","items":[
                {"kind":"PersistentVolume","metadata":{"name":"pv1",
                  "labels":{"topology.kubernetes.io/zone":"z1"}},
                 "spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce"],
                  "storageClassName":"fast","claimRef":{"namespace":"ns","name":"c1"},
                  "csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1"},
                  "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                    {"key":"topology.kubernetes.io/zone","operator":"In","values":["z1"]}]}]}}},
                 "status":{"phase":"Bound"}},
                {"kind":"PersistentVolumeClaim","metadata":{"name":"c1","namespace":"ns"},
                 "spec":{"accessModes":["ReadWriteOncePod"],"resources":{"requests":{"storage":"1Gi"}},
                  "storageClassName":"fast","volumeName":"pv1"},"status":{"phase":"Bound"}},
                {"kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"ebs.csi.aws.com",
                 "volumeBindingMode":"WaitForFirstConsumer",
                 "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["z1"]}]}]},
                {"kind":"CSINode","metadata":{"name":"n1"},
                 "spec":{"drivers":[{"name":"ebs.csi.aws.com","nodeID":"i-1","allocatable":{"count":25}}]}}
            ]}"#,
            Role::Mixed,
        )
        .unwrap();
        let st = &objects.storage;
        assert_eq!(st.persistent_volumes[0].storage(), 10 << 30);
        assert_eq!(
            st.persistent_volumes[0]
                .spec
                .csi
                .as_ref()
                .unwrap()
                .volume_handle,
            "vol-1"
        );
        assert_eq!(st.persistent_volume_claims[0].class(), "fast");
        assert_eq!(st.persistent_volume_claims[0].requested_storage(), 1 << 30);
        assert_eq!(
            st.storage_classes[0].binding_mode(),
            crate::model::VolumeBindingMode::WaitForFirstConsumer
        );
        assert_eq!(st.csi_nodes[0].limit_of("ebs.csi.aws.com"), Some(25));
        assert!(objects.other_kinds.is_empty());
        let cluster = objects.into_cluster().unwrap();
        assert_eq!(cluster.storage.persistent_volumes.len(), 1);
    }

    #[test]
    fn storage_errors_name_file_item_and_field() {
        let err = load_bytes(
            "pv.json",
            br#"[{"kind":"PersistentVolume","metadata":{"name":"pv1"},
                  "spec":{"capacity":{"storage":"10Qi"}}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("pv.json: items[0]: PersistentVolume \"pv1\""),
            "{err}"
        );
        assert!(err.contains("spec.capacity.storage"), "{err}");
        let err = load_bytes(
            "pvc.json",
            br#"[{"kind":"PersistentVolumeClaim","metadata":{"name":"c","namespace":"ns"},
                  "spec":{"accessModes":["ReadWriteSometimes"]}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("PersistentVolumeClaim \"ns/c\""), "{err}");
        assert!(err.contains("spec.accessModes[0]"), "{err}");
        let err = load_bytes(
            "sc.json",
            br#"[{"kind":"StorageClass","metadata":{}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("StorageClass has an empty metadata.name"),
            "{err}"
        );
    }

    #[test]
    fn csi_drivers_and_storage_capacities_are_routed_in_mixed_files() {
        let objects = load_bytes(
            "csi.json",
            br#"{"kind":"List","items":[
                {"kind":"CSIDriver","apiVersion":"storage.k8s.io/v1",
                 "metadata":{"name":"hostpath.csi.k8s.io"},
                 "spec":{"storageCapacity":true,"attachRequired":false}},
                {"kind":"CSIDriver","metadata":{"name":"ebs.csi.aws.com"},"spec":{}},
                {"kind":"CSIStorageCapacity","apiVersion":"storage.k8s.io/v1",
                 "metadata":{"name":"csisc-1","namespace":"kube-system"},
                 "storageClassName":"fast",
                 "nodeTopology":{"matchLabels":{"topology.hostpath.csi/node":"n1"}},
                 "capacity":"100Gi","maximumVolumeSize":"10Gi"},
                {"kind":"CSIStorageCapacity","metadata":{"name":"csisc-2","namespace":"kube-system"},
                 "storageClassName":"fast"}
            ]}"#,
            Role::Mixed,
        )
        .unwrap();
        let st = &objects.storage;
        assert_eq!(st.csi_drivers.len(), 2);
        assert!(st.csi_drivers[0].storage_capacity());
        assert!(!st.csi_drivers[1].storage_capacity());
        let c = &st.csi_storage_capacities[0];
        assert_eq!(c.key(), "kube-system/csisc-1");
        assert_eq!(c.storage_class_name, "fast");
        assert_eq!(
            c.node_topology.as_ref().unwrap().match_labels["topology.hostpath.csi/node"],
            "n1"
        );
        assert_eq!(c.capacity.as_ref().unwrap().value(), 100 << 30);
        assert_eq!(c.volume_limit().unwrap().value(), 10 << 30);
        let bare = &st.csi_storage_capacities[1];
        assert!(bare.node_topology.is_none() && bare.volume_limit().is_none());
        assert!(objects.other_kinds.is_empty());
        let cluster = objects.into_cluster().unwrap();
        assert_eq!(cluster.storage.csi_storage_capacities.len(), 2);
    }

    #[test]
    fn csi_errors_name_file_item_and_field() {
        let err = load_bytes(
            "capacity.json",
            br#"[{"kind":"CSIStorageCapacity","metadata":{"name":"ok","namespace":"ns"},
                  "storageClassName":"fast","capacity":"1Gi"},
                 {"kind":"CSIStorageCapacity","metadata":{"name":"c","namespace":"ns"},
                  "storageClassName":"fast","maximumVolumeSize":"12Zi"}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("capacity.json: items[1]: CSIStorageCapacity \"ns/c\""),
            "{err}"
        );
        assert!(err.contains("maximumVolumeSize"), "{err}");
        let err = load_bytes(
            "drivers.json",
            br#"[{"kind":"CSIDriver","metadata":{"name":"d"},"spec":{"storageCapacity":"yes"}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("drivers.json: items[0]: CSIDriver \"d\""),
            "{err}"
        );
        assert!(err.contains("spec.storageCapacity"), "{err}");
        let err = load_bytes(
            "drivers.json",
            br#"[{"kind":"CSIDriver","metadata":{},"spec":{}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("CSIDriver has an empty metadata.name"),
            "{err}"
        );
        let err = load_bytes(
            "capacity.json",
            br#"[{"kind":"CSIStorageCapacity","metadata":{"namespace":"ns"}}]"#,
            Role::Mixed,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("CSIStorageCapacity has an empty metadata.name"),
            "{err}"
        );
    }

    #[test]
    fn bad_quantity_names_object_and_field() {
        let err = load_node_list(
            r#"{"items":[{"metadata":{"name":"ok"}},
                {"metadata":{"name":"n2"},"status":{"allocatable":{"cpu":"4x"}}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("items[1]: Node \"n2\""), "{text}");
        assert!(text.contains("status.allocatable.cpu"), "{text}");
        assert!(text.contains("\"4x\""), "{text}");
    }

    #[test]
    fn bad_enum_names_pod_and_field() {
        let err = load_pod_list(
            r#"{"kind":"PodList","items":[{"metadata":{"name":"p","namespace":"ns"},
               "spec":{"tolerations":[{"key":"k","effect":"Sometimes"}]}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Pod \"ns/p\""), "{text}");
        assert!(text.contains("spec.tolerations[0].effect"), "{text}");
    }

    #[test]
    fn negative_quantities_are_refused_like_the_api_server() {
        let err = load_pod_list(
            r#"{"items":[{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[
               {"name":"a"},{"name":"b","resources":{"requests":{"cpu":"-50T"}}}]}}]}"#,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("spec.containers[1].resources.requests.cpu"),
            "{text}"
        );
        assert!(
            text.contains("must be greater than or equal to 0"),
            "{text}"
        );
        let err = load_node_list(
            r#"[{"metadata":{"name":"n"},"status":{"allocatable":{"memory":"-1"}}}]"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("status.allocatable.memory"),
            "{err}"
        );
    }

    #[test]
    fn wrong_shape_is_an_error() {
        assert!(matches!(
            load_pod_list("[1]").unwrap_err().kind(),
            LoadErrorKind::Field { .. }
        ));
        assert!(matches!(
            load_pod_list("3").unwrap_err().kind(),
            LoadErrorKind::Shape { .. }
        ));
        assert!(matches!(
            load_pod_list(r#"{"kind":"Node","metadata":{"name":"x"}}"#)
                .unwrap_err()
                .kind(),
            LoadErrorKind::WrongKind { .. }
        ));
        assert!(matches!(
            load_pod_list("{").unwrap_err().kind(),
            LoadErrorKind::Json { .. }
        ));
        assert!(matches!(
            parse_pod("{").unwrap_err().kind(),
            LoadErrorKind::Json { .. }
        ));
    }

    #[test]
    fn byte_order_marks_and_bad_utf8() {
        let nodes = load_bytes(
            "n.json",
            b"\xEF\xBB\xBF[{\"metadata\":{\"name\":\"n\"}}]",
            Role::Nodes,
        )
        .unwrap();
        assert_eq!(nodes.nodes.len(), 1);
        let err = load_bytes("n.json", b"\xFF\xFE[\x00]\x00", Role::Nodes).unwrap_err();
        assert!(err.to_string().contains("UTF-16"), "{err}");
        let err = load_bytes(
            "n.json",
            b"[\n{\"metadata\":{\"name\":\"\xC3\"}}]",
            Role::Nodes,
        )
        .unwrap_err();
        assert!(
            matches!(
                err.kind(),
                LoadErrorKind::InvalidUtf8 {
                    offset: 23,
                    line: 2
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn item_kind_comes_from_the_item_then_the_typed_list() {
        let err = load_bytes(
            "pods.json",
            br#"{"kind":"PodList","items":[{"metadata":{"name":"p","namespace":"ns"}}]}"#,
            Role::Nodes,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"pods.json: items[0]: expected a Node (this file holds nodes), found a Pod "ns/p""#
        );
        let err = load_bytes("x.json", br#"[{"metadata":{"name":"p"}}]"#, Role::Mixed).unwrap_err();
        assert!(
            matches!(err.kind(), LoadErrorKind::MissingKind { .. }),
            "{err}"
        );
        let err = load_bytes("x.json", br#"[{"metadata":{"name":""}}]"#, Role::Nodes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.json: items[0]: Node has an empty metadata.name"
        );
    }

    #[test]
    fn type_errors_name_the_field_in_kubernetes_terms() {
        let err = load_pod_list(r#"[1]"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "items[0]: Pod \"\": field `.`: invalid type: integer `1`, expected an object"
        );
        let err = load_pod_list(
            r#"[{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":{}}}]"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "items[0]: Pod \"ns/p\": field `spec.containers`: invalid type: map, expected a sequence"
        );
    }

    #[test]
    fn huge_names_are_cut_short() {
        let name = "x".repeat(10_000);
        let json = format!(r#"[{{"kind":"Pod","metadata":{{"name":"{name}"}}}}]"#);
        let err = load_bytes("n.json", json.as_bytes(), Role::Nodes).unwrap_err();
        assert!(err.to_string().len() < 300, "{err}");
    }
}
