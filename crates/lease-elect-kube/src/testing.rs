//! A small Kubernetes API server on loopback (feature `testing`) that serves
//! `coordination.k8s.io/v1` Leases, `coordination.k8s.io/v1beta1` LeaseCandidates, and core/v1
//! ConfigMaps and Endpoints, the way the real one does for the calls the locks and registries
//! of this crate make: `GET` (one object, or a namespace's list), `POST` (create, 409
//! AlreadyExists), `PUT` and `DELETE` with a `resourceVersion` precondition, and watches.
//!
//! `PUT` follows the real server's update path (the generic registry's `Update` with each
//! kind's strategy): 409 Conflict on a stale `resourceVersion`; a `PUT` without a
//! `resourceVersion` is unconditional for ConfigMaps and Endpoints and 422 Invalid for Leases and
//! LeaseCandidates (each strategy's `AllowUnconditionalUpdate`); a
//! PUT that changes nothing is a no-op that keeps the `resourceVersion` (and sends no watch
//! event). A PUT to a missing object creates it for Leases, LeaseCandidates and Endpoints
//! (their strategies allow create-on-update), unless the body carries `metadata.uid`, which is then a failed UID
//! precondition: 409 Conflict; for ConfigMaps (no create-on-update) it is 404 NotFound. A
//! server started with [`ApiServer::start_v1_20`] drops the Lease spec fields it does not know
//! (`strategy`, `preferredHolder`, added in Kubernetes 1.31), as an older API server's
//! decoding does. `resourceVersion`s come from one counter for all kinds, as etcd revisions
//! do. Watches (`?watch=true`) on one object by `fieldSelector=metadata.name=..`, from a
//! `resourceVersion` (replaying later changes) or from now (an `ADDED` event for the current
//! object first), streamed as JSON lines until the client goes away. Plain HTTP/1.1 with
//! keep-alive; no auth, no field validation beyond what the locks rely on (a Lease's spec
//! numbers and times).
//!
//! It can be stopped (every connection dropped, the port closed) and started again on the same
//! port with the same data, for the fault tests.
//!
//! [`apiserver`] is the real thing: how to reach the kube-apiserver of `scripts/servers.sh`, and
//! kube-apiserver processes of a test's own.

pub mod apiserver;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// A kind of object the server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// `coordination.k8s.io/v1` Lease.
    Lease,
    /// core/v1 ConfigMap.
    ConfigMap,
    /// core/v1 Endpoints.
    Endpoints,
    /// `coordination.k8s.io/v1beta1` LeaseCandidate (coordinated leader election).
    LeaseCandidate,
}

impl Resource {
    const ALL: [Resource; 4] = [
        Resource::Lease,
        Resource::ConfigMap,
        Resource::Endpoints,
        Resource::LeaseCandidate,
    ];

    fn prefix(self) -> &'static str {
        match self {
            Resource::Lease => "/apis/coordination.k8s.io/v1/namespaces/",
            Resource::LeaseCandidate => "/apis/coordination.k8s.io/v1beta1/namespaces/",
            Resource::ConfigMap | Resource::Endpoints => "/api/v1/namespaces/",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Resource::Lease => "leases",
            Resource::ConfigMap => "configmaps",
            Resource::Endpoints => "endpoints",
            Resource::LeaseCandidate => "leasecandidates",
        }
    }

    /// The name in the API server's messages (`leases.coordination.k8s.io`).
    fn qualified(self) -> &'static str {
        match self {
            Resource::Lease => "leases.coordination.k8s.io",
            Resource::LeaseCandidate => "leasecandidates.coordination.k8s.io",
            Resource::ConfigMap => "configmaps",
            Resource::Endpoints => "endpoints",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Resource::Lease => "Lease",
            Resource::ConfigMap => "ConfigMap",
            Resource::Endpoints => "Endpoints",
            Resource::LeaseCandidate => "LeaseCandidate",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Resource::Lease => "coordination.k8s.io/v1",
            Resource::LeaseCandidate => "coordination.k8s.io/v1beta1",
            Resource::ConfigMap | Resource::Endpoints => "v1",
        }
    }

    /// The strategy's `AllowCreateOnUpdate`.
    fn create_on_update(self) -> bool {
        !matches!(self, Resource::ConfigMap)
    }

    /// The strategy's `AllowUnconditionalUpdate`.
    fn unconditional_update(self) -> bool {
        matches!(self, Resource::ConfigMap | Resource::Endpoints)
    }

    /// The resource and the path segments after `namespaces/`, for a path of ours.
    fn route(path: &str) -> Option<(Resource, Vec<&str>)> {
        Resource::ALL.into_iter().find_map(|r| {
            let rest = path.strip_prefix(r.prefix())?;
            let segments: Vec<&str> = rest.split('/').collect();
            (segments.get(1) == Some(&r.plural())).then_some((r, segments))
        })
    }
}

type Key = (Resource, String, String);

struct Store {
    objects: HashMap<Key, Value>,
    revision: u64,
    uid: u64,
    /// Every change, for watches that start from an older `resourceVersion`.
    history: Vec<Event>,
    events: tokio::sync::broadcast::Sender<Event>,
    /// Drop the spec fields a 1.20 API server does not know.
    v1_20: bool,
    /// Every request but watches, as client-go's fake clientset lists actions.
    requests: Vec<String>,
}

/// A change of one object, as a watch reports it.
#[derive(Clone)]
struct Event {
    revision: u64,
    resource: Resource,
    namespace: String,
    name: String,
    kind: &'static str,
    object: Value,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            objects: HashMap::new(),
            revision: 0,
            uid: 0,
            history: Vec::new(),
            events: tokio::sync::broadcast::channel(1024).0,
            v1_20: false,
            requests: Vec::new(),
        }
    }
}

impl Store {
    fn record(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        kind: &'static str,
        object: Value,
    ) {
        let event = Event {
            revision: self.revision,
            resource,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            kind,
            object,
        };
        self.history.push(event.clone());
        let _ = self.events.send(event);
    }
}

/// The fake API server. Dropping it stops it.
pub struct ApiServer {
    store: Arc<Mutex<Store>>,
    port: u16,
    tasks: Option<JoinSet<()>>,
}

impl ApiServer {
    /// Starts the server on a free loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start() -> ApiServer {
        Self::start_with(Store::default()).await
    }

    /// Starts a server that behaves as a Kubernetes 1.20 API server for Leases: it drops the
    /// spec fields added later (`strategy`, `preferredHolder`).
    pub async fn start_v1_20() -> ApiServer {
        Self::start_with(Store {
            v1_20: true,
            ..Store::default()
        })
        .await
    }

    async fn start_with(store: Store) -> ApiServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let mut server = ApiServer {
            store: Arc::new(Mutex::new(store)),
            port,
            tasks: None,
        };
        server.serve(listener);
        server
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops serving: closes the port and every open connection. The data stays.
    pub async fn stop(&mut self) {
        if let Some(mut tasks) = self.tasks.take() {
            tasks.shutdown().await;
        }
    }

    /// Serves again on the same port.
    ///
    /// # Panics
    /// When the port was taken meanwhile.
    pub async fn restart(&mut self) {
        if self.tasks.is_some() {
            return;
        }
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("bind the same port again");
        self.serve(listener);
    }

    /// Replaces a stored Lease's spec field with `value` (to corrupt it), as a write that
    /// bumps the `resourceVersion`.
    ///
    /// # Panics
    /// When the Lease does not exist.
    pub fn set_spec_field(&self, namespace: &str, name: &str, field: &str, value: Value) {
        self.modify(Resource::Lease, namespace, name, |lease| {
            lease["spec"][field] = value;
        });
    }

    /// Changes a stored object with `change` (to corrupt it, or as another client's write),
    /// bumping the `resourceVersion` and sending a `MODIFIED` watch event.
    ///
    /// # Panics
    /// When the object does not exist.
    pub fn modify(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) {
        let mut store = self.store.lock().expect("store");
        store.revision += 1;
        let rv = store.revision.to_string();
        let object = store
            .objects
            .get_mut(&(resource, namespace.to_owned(), name.to_owned()))
            .expect("the object exists");
        change(object);
        object["metadata"]["resourceVersion"] = Value::String(rv);
        let object = object.clone();
        store.record(resource, namespace, name, "MODIFIED", object);
    }

    /// The requests served so far except watches, oldest first, each as client-go's fake
    /// clientset names an action: verb and resource, such as `get configmaps` or
    /// `update leases` (`create` for a `POST`, `update` for a `PUT`).
    #[must_use]
    pub fn requests(&self) -> Vec<String> {
        self.store.lock().expect("store").requests.clone()
    }

    /// Forgets the requests served so far.
    pub fn clear_requests(&self) {
        self.store.lock().expect("store").requests.clear();
    }

    /// A stored object as the server holds it, or `None`.
    #[must_use]
    pub fn object(&self, resource: Resource, namespace: &str, name: &str) -> Option<Value> {
        let store = self.store.lock().expect("store");
        store
            .objects
            .get(&(resource, namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    fn serve(&mut self, listener: TcpListener) {
        let mut tasks = JoinSet::new();
        let store = Arc::clone(&self.store);
        // Connections run inside the accept task's own set, so aborting the accept task
        // (JoinSet::shutdown) drops them all.
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        connections.spawn(connection(stream, Arc::clone(&store)));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        self.tasks = Some(tasks);
    }
}

async fn connection(stream: TcpStream, store: Arc<Mutex<Store>>) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
            return;
        };
        let (method, target) = (method.to_owned(), target.to_owned());
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if read.read_line(&mut header).await.unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if read.read_exact(&mut body).await.is_err() {
            return;
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        if method == "GET" && query.split('&').any(|p| p == "watch=true") {
            watch(path, query, &store, &mut write).await;
            return;
        }
        let (status, reply) = handle(&store, &method, path, &body);
        let text = reply.to_string();
        let response = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            reason(status),
            text.len()
        );
        if write.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Streams the changes of one object until the client goes away (then closes the
/// connection).
async fn watch(
    path: &str,
    query: &str,
    store: &Mutex<Store>,
    write: &mut tokio::net::tcp::OwnedWriteHalf,
) {
    let param = |key: &str| {
        query
            .split('&')
            .find_map(|p| p.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .map(|v| v.replace("%3D", "=").replace("%3d", "="))
    };
    let Some((resource, segments)) = Resource::route(path) else {
        return;
    };
    let namespace = segments[0].to_owned();
    let name = param("fieldSelector")
        .and_then(|f| f.strip_prefix("metadata.name=").map(str::to_owned))
        .unwrap_or_default();
    let from: Option<u64> = param("resourceVersion")
        .filter(|rv| !rv.is_empty() && rv != "0")
        .and_then(|rv| rv.parse().ok());
    let matches = |e: &Event| {
        e.resource == resource && e.namespace == namespace && (name.is_empty() || e.name == name)
    };
    let (backlog, mut live) = {
        let store = store.lock().expect("store");
        let backlog: Vec<Event> = match from {
            Some(rv) => store
                .history
                .iter()
                .filter(|e| e.revision > rv && matches(e))
                .cloned()
                .collect(),
            None => store
                .objects
                .iter()
                .filter(|((r, ns, n), _)| {
                    *r == resource && *ns == namespace && (name.is_empty() || *n == name)
                })
                .map(|((r, ns, n), object)| Event {
                    revision: store.revision,
                    resource: *r,
                    namespace: ns.clone(),
                    name: n.clone(),
                    kind: "ADDED",
                    object: object.clone(),
                })
                .collect(),
        };
        (backlog, store.events.subscribe())
    };
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
    if write.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let line = |e: &Event| format!("{}\n", json!({"type": e.kind, "object": e.object}));
    for e in &backlog {
        if write.write_all(line(e).as_bytes()).await.is_err() {
            return;
        }
    }
    while let Ok(e) = live.recv().await {
        if matches(&e) && write.write_all(line(&e).as_bytes()).await.is_err() {
            return;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        _ => "Error",
    }
}

fn status(code: u16, reason: &str, message: String) -> (u16, Value) {
    (
        code,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code,
        }),
    )
}

fn not_found(resource: Resource, name: &str) -> (u16, Value) {
    status(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", resource.qualified()),
    )
}

/// Sets what the server owns on a new object.
fn stamp_new(store: &mut Store, resource: Resource, ns: &str, name: &str, object: &mut Value) {
    store.revision += 1;
    store.uid += 1;
    let meta = &mut object["metadata"];
    meta["name"] = Value::String(name.to_owned());
    meta["namespace"] = Value::String(ns.to_owned());
    meta["resourceVersion"] = Value::String(store.revision.to_string());
    meta["uid"] = Value::String(format!("00000000-0000-0000-0000-{:012}", store.uid));
    meta["creationTimestamp"] = Value::String("2026-11-21T12:00:00Z".to_owned());
    object["kind"] = Value::String(resource.kind().to_owned());
    object["apiVersion"] = Value::String(resource.api_version().to_owned());
}

fn handle(store: &Mutex<Store>, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let Some((resource, segments)) = Resource::route(path) else {
        return status(404, "NotFound", format!("unknown path {path}"));
    };
    let mut store = store.lock().expect("store");
    let verb = match method {
        "POST" => "create",
        "PUT" => "update",
        other => other,
    };
    store.requests.push(format!(
        "{} {}",
        verb.to_ascii_lowercase(),
        resource.plural()
    ));
    let what = resource.qualified();
    match (method, segments.as_slice()) {
        ("GET", [ns, _, name]) => {
            match store
                .objects
                .get(&(resource, (*ns).to_owned(), (*name).to_owned()))
            {
                Some(object) => (200, object.clone()),
                None => not_found(resource, name),
            }
        }
        ("GET", [ns, _]) => {
            let mut items: Vec<(&String, &Value)> = store
                .objects
                .iter()
                .filter(|((r, n, _), _)| *r == resource && n == ns)
                .map(|((_, _, name), object)| (name, object))
                .collect();
            items.sort_by_key(|(name, _)| *name);
            let items: Vec<Value> = items.into_iter().map(|(_, o)| o.clone()).collect();
            (
                200,
                json!({
                    "kind": format!("{}List", resource.kind()),
                    "apiVersion": resource.api_version(),
                    "metadata": {"resourceVersion": store.revision.to_string()},
                    "items": items,
                }),
            )
        }
        ("POST", [ns, _]) => {
            let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
                return status(400, "BadRequest", "invalid JSON".to_owned());
            };
            let Some(name) = object["metadata"]["name"].as_str().map(str::to_owned) else {
                return status(422, "Invalid", "metadata.name: Required value".to_owned());
            };
            if let Some(e) = invalid(resource, &object) {
                return e;
            }
            drop_unknown_fields(&store, resource, &mut object);
            let key = (resource, (*ns).to_owned(), name.clone());
            if store.objects.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    format!("{what} \"{name}\" already exists"),
                );
            }
            stamp_new(&mut store, resource, ns, &name, &mut object);
            store.objects.insert(key, object.clone());
            store.record(resource, ns, &name, "ADDED", object.clone());
            (201, object)
        }
        ("PUT", [ns, _, name]) => {
            let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
                return status(400, "BadRequest", "invalid JSON".to_owned());
            };
            if let Some(e) = invalid(resource, &object) {
                return e;
            }
            drop_unknown_fields(&store, resource, &mut object);
            let key = (resource, (*ns).to_owned(), (*name).to_owned());
            if !store.objects.contains_key(&key) {
                if !resource.create_on_update() {
                    return not_found(resource, name);
                }
                // Create-on-update, unless the body names the object it meant (its uid).
                if let Some(uid) = object["metadata"]["uid"].as_str().filter(|u| !u.is_empty()) {
                    return status(
                        409,
                        "Conflict",
                        format!(
                            "Operation cannot be fulfilled on {what} \"{name}\": \
                             Precondition failed: UID in precondition: {uid}, UID in object meta: "
                        ),
                    );
                }
                stamp_new(&mut store, resource, ns, name, &mut object);
                store.objects.insert(key, object.clone());
                store.record(resource, ns, name, "ADDED", object.clone());
                return (201, object);
            }
            let revision = store.revision + 1;
            let current = store.objects.get_mut(&key).expect("checked above");
            let expected = object["metadata"]["resourceVersion"]
                .as_str()
                .filter(|rv| !rv.is_empty());
            // No resourceVersion: an unconditional update where the strategy allows one.
            if expected.is_none() && !resource.unconditional_update() {
                return status(
                    422,
                    "Invalid",
                    format!(
                        "{} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: \
                         0x0: must be specified for an update",
                        resource.kind()
                    ),
                );
            }
            if expected
                .is_some_and(|rv| Some(rv) != current["metadata"]["resourceVersion"].as_str())
            {
                return status(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on {what} \"{name}\": \
                         the object has been modified; please apply your changes to the latest \
                         version and try again"
                    ),
                );
            }
            if let Some(uid) = object["metadata"]["uid"].as_str().filter(|u| !u.is_empty())
                && Some(uid) != current["metadata"]["uid"].as_str()
            {
                return status(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on {what} \"{name}\": \
                         Precondition failed: UID in precondition: {uid}"
                    ),
                );
            }
            // The server owns these.
            for field in ["uid", "creationTimestamp", "namespace", "name"] {
                object["metadata"][field] = current["metadata"][field].clone();
            }
            object["kind"] = Value::String(resource.kind().to_owned());
            object["apiVersion"] = Value::String(resource.api_version().to_owned());
            object["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            if without_nulls(&object) == without_nulls(current) {
                // Nothing changed: the real server skips the write and keeps the version.
                return (200, current.clone());
            }
            object["metadata"]["resourceVersion"] = Value::String(revision.to_string());
            *current = object.clone();
            store.revision = revision;
            store.record(resource, ns, name, "MODIFIED", object.clone());
            (200, object)
        }
        ("DELETE", [ns, _, name]) => {
            let options: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let key = (resource, (*ns).to_owned(), (*name).to_owned());
            let Some(current) = store.objects.get(&key) else {
                return not_found(resource, name);
            };
            if let Some(rv) = options["preconditions"]["resourceVersion"].as_str()
                && Some(rv) != current["metadata"]["resourceVersion"].as_str()
            {
                return status(
                    409,
                    "Conflict",
                    format!("Precondition failed: ResourceVersion in precondition: {rv}"),
                );
            }
            store.revision += 1;
            let mut gone = store.objects.remove(&key).unwrap_or(Value::Null);
            gone["metadata"]["resourceVersion"] = Value::String(store.revision.to_string());
            store.record(resource, ns, name, "DELETED", gone);
            (
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            )
        }
        _ => status(405, "MethodNotAllowed", format!("{method} {path}")),
    }
}

/// A 1.20 server decodes into a LeaseSpec without `strategy` and `preferredHolder`: they are
/// gone before anything is stored.
fn drop_unknown_fields(store: &Store, resource: Resource, lease: &mut Value) {
    if store.v1_20
        && resource == Resource::Lease
        && let Some(spec) = lease.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("strategy");
        spec.remove("preferredHolder");
    }
}

/// `value` without `null` object members: the server stores the decoded object, where an
/// absent field and a `null` one are the same.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The API server's validation, for the fields the locks write: a Lease's spec numbers and
/// times; annotations that are strings.
fn invalid(resource: Resource, object: &Value) -> Option<(u16, Value)> {
    if let Some(annotations) = object["metadata"]["annotations"].as_object()
        && let Some((key, _)) = annotations.iter().find(|(_, v)| !v.is_string())
    {
        return Some(status(
            400,
            "BadRequest",
            format!("metadata.annotations.{key}: not a string"),
        ));
    }
    if resource != Resource::Lease {
        return None;
    }
    let spec = &object["spec"];
    for field in ["leaseDurationSeconds", "leaseTransitions"] {
        if let Some(v) = spec.get(field)
            && !v.is_null()
            && v.as_i64().is_none_or(|n| n < 0 || n > i64::from(i32::MAX))
        {
            return Some(status(
                422,
                "Invalid",
                format!("spec.{field}: Invalid value"),
            ));
        }
    }
    if spec["leaseDurationSeconds"].as_i64() == Some(0) {
        return Some(status(
            422,
            "Invalid",
            "spec.leaseDurationSeconds: must be greater than 0".to_owned(),
        ));
    }
    for field in ["acquireTime", "renewTime"] {
        if let Some(t) = spec[field].as_str() {
            // MicroTime: RFC 3339 with exactly six fractional digits, UTC.
            let ok = t.len() == 27 && t.as_bytes()[19] == b'.' && t.ends_with('Z');
            if !ok {
                return Some(status(
                    422,
                    "Invalid",
                    format!("spec.{field}: not a MicroTime: {t}"),
                ));
            }
        }
    }
    None
}
