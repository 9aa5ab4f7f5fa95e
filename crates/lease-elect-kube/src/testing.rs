//! A small Kubernetes API server on loopback that serves `coordination.k8s.io/v1` Leases the
//! way the real one does for the calls a lease lock makes: `GET`, `POST` (create, 409
//! AlreadyExists), `PUT` and `DELETE` with a `resourceVersion` precondition.
//!
//! `PUT` follows the real server's update path (the generic registry's `Update` with the Lease
//! strategy): 409 Conflict on a stale `resourceVersion`; a PUT that changes nothing is a no-op
//! that keeps the `resourceVersion` (and sends no watch event); a PUT to a missing Lease
//! creates it (the Lease strategy allows create-on-update), unless the body carries
//! `metadata.uid`, which is then a failed UID precondition: 409 Conflict. A server started
//! with [`ApiServer::start_v1_20`] drops the spec fields it does not know (`strategy`,
//! `preferredHolder`, added in Kubernetes 1.31), as an older API server's decoding does. `resourceVersion`s come from
//! one counter, as etcd revisions do. Watches (`?watch=true`) on one Lease by
//! `fieldSelector=metadata.name=..`, from a `resourceVersion` (replaying later changes) or from
//! now (an `ADDED` event for the current object first), streamed as JSON lines until the
//! client goes away. Plain HTTP/1.1 with keep-alive; no auth, no field validation beyond what
//! the lock relies on.
//!
//! It can be stopped (every connection dropped, the port closed) and started again on the same
//! port with the same data, for the fault tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

struct Store {
    leases: HashMap<(String, String), Value>,
    revision: u64,
    uid: u64,
    /// Every change, for watches that start from an older `resourceVersion`.
    history: Vec<Event>,
    events: tokio::sync::broadcast::Sender<Event>,
    /// Drop the spec fields a 1.20 API server does not know.
    v1_20: bool,
}

/// A change of one Lease, as a watch reports it.
#[derive(Clone)]
struct Event {
    revision: u64,
    namespace: String,
    name: String,
    kind: &'static str,
    object: Value,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            leases: HashMap::new(),
            revision: 0,
            uid: 0,
            history: Vec::new(),
            events: tokio::sync::broadcast::channel(1024).0,
            v1_20: false,
        }
    }
}

impl Store {
    fn record(&mut self, namespace: &str, name: &str, kind: &'static str, object: Value) {
        let event = Event {
            revision: self.revision,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            kind,
            object,
        };
        self.history.push(event.clone());
        let _ = self.events.send(event);
    }
}

/// The fake API server.
pub struct ApiServer {
    store: Arc<Mutex<Store>>,
    port: u16,
    tasks: Option<JoinSet<()>>,
}

const PREFIX: &str = "/apis/coordination.k8s.io/v1/namespaces/";

impl ApiServer {
    /// Starts the server on a free loopback port.
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
    pub fn set_spec_field(&self, namespace: &str, name: &str, field: &str, value: Value) {
        let mut store = self.store.lock().expect("store");
        store.revision += 1;
        let rv = store.revision.to_string();
        let lease = store
            .leases
            .get_mut(&(namespace.to_owned(), name.to_owned()))
            .expect("the Lease exists");
        lease["spec"][field] = value;
        lease["metadata"]["resourceVersion"] = Value::String(rv);
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

/// Streams the changes of one Lease until the client goes away (then closes the connection).
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
    let namespace = path
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix("/leases"))
        .unwrap_or_default()
        .to_owned();
    let name = param("fieldSelector")
        .and_then(|f| f.strip_prefix("metadata.name=").map(str::to_owned))
        .unwrap_or_default();
    let from: Option<u64> = param("resourceVersion")
        .filter(|rv| !rv.is_empty() && rv != "0")
        .and_then(|rv| rv.parse().ok());
    let matches = |e: &Event| e.namespace == namespace && (name.is_empty() || e.name == name);
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
                .leases
                .iter()
                .filter(|((ns, n), _)| *ns == namespace && (name.is_empty() || *n == name))
                .map(|((ns, n), lease)| Event {
                    revision: store.revision,
                    namespace: ns.clone(),
                    name: n.clone(),
                    kind: "ADDED",
                    object: lease.clone(),
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

fn handle(store: &Mutex<Store>, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return status(404, "NotFound", format!("unknown path {path}"));
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let mut store = store.lock().expect("store");
    match (method, segments.as_slice()) {
        ("GET", [ns, "leases", name]) => {
            match store.leases.get(&((*ns).to_owned(), (*name).to_owned())) {
                Some(lease) => (200, lease.clone()),
                None => status(
                    404,
                    "NotFound",
                    format!("leases.coordination.k8s.io \"{name}\" not found"),
                ),
            }
        }
        ("POST", [ns, "leases"]) => {
            let Ok(mut lease) = serde_json::from_slice::<Value>(body) else {
                return status(400, "BadRequest", "invalid JSON".to_owned());
            };
            let Some(name) = lease["metadata"]["name"].as_str().map(str::to_owned) else {
                return status(422, "Invalid", "metadata.name: Required value".to_owned());
            };
            if let Some(e) = invalid(&lease) {
                return e;
            }
            drop_unknown_fields(&store, &mut lease);
            let key = ((*ns).to_owned(), name.clone());
            if store.leases.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    format!("leases.coordination.k8s.io \"{name}\" already exists"),
                );
            }
            store.revision += 1;
            store.uid += 1;
            let meta = &mut lease["metadata"];
            meta["namespace"] = Value::String((*ns).to_owned());
            meta["resourceVersion"] = Value::String(store.revision.to_string());
            meta["uid"] = Value::String(format!("00000000-0000-0000-0000-{:012}", store.uid));
            meta["creationTimestamp"] = Value::String("2026-11-21T12:00:00Z".to_owned());
            lease["kind"] = Value::String("Lease".to_owned());
            lease["apiVersion"] = Value::String("coordination.k8s.io/v1".to_owned());
            store.leases.insert(key, lease.clone());
            store.record(ns, &name, "ADDED", lease.clone());
            (201, lease)
        }
        ("PUT", [ns, "leases", name]) => {
            let Ok(mut lease) = serde_json::from_slice::<Value>(body) else {
                return status(400, "BadRequest", "invalid JSON".to_owned());
            };
            if let Some(e) = invalid(&lease) {
                return e;
            }
            drop_unknown_fields(&store, &mut lease);
            let key = ((*ns).to_owned(), (*name).to_owned());
            let revision = store.revision + 1;
            if !store.leases.contains_key(&key) {
                // Create-on-update, unless the body names the object it meant (its uid).
                if let Some(uid) = lease["metadata"]["uid"].as_str().filter(|u| !u.is_empty()) {
                    return status(
                        409,
                        "Conflict",
                        format!(
                            "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": \
                             Precondition failed: UID in precondition: {uid}, UID in object meta: "
                        ),
                    );
                }
                store.revision = revision;
                store.uid += 1;
                let uid = store.uid;
                let meta = &mut lease["metadata"];
                meta["name"] = Value::String((*name).to_owned());
                meta["namespace"] = Value::String((*ns).to_owned());
                meta["resourceVersion"] = Value::String(revision.to_string());
                meta["uid"] = Value::String(format!("00000000-0000-0000-0000-{uid:012}"));
                meta["creationTimestamp"] = Value::String("2026-11-21T12:00:00Z".to_owned());
                lease["kind"] = Value::String("Lease".to_owned());
                lease["apiVersion"] = Value::String("coordination.k8s.io/v1".to_owned());
                store.leases.insert(key, lease.clone());
                store.record(ns, name, "ADDED", lease.clone());
                return (201, lease);
            }
            let current = store.leases.get_mut(&key).expect("checked above");
            let expected = lease["metadata"]["resourceVersion"].as_str();
            if expected != current["metadata"]["resourceVersion"].as_str() {
                return status(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": \
                         the object has been modified; please apply your changes to the latest \
                         version and try again"
                    ),
                );
            }
            // The server owns these.
            for field in ["uid", "creationTimestamp", "namespace"] {
                lease["metadata"][field] = current["metadata"][field].clone();
            }
            lease["kind"] = Value::String("Lease".to_owned());
            lease["apiVersion"] = Value::String("coordination.k8s.io/v1".to_owned());
            lease["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            if without_nulls(&lease) == without_nulls(current) {
                // Nothing changed: the real server skips the write and keeps the version.
                return (200, current.clone());
            }
            lease["metadata"]["resourceVersion"] = Value::String(revision.to_string());
            *current = lease.clone();
            store.revision = revision;
            store.record(ns, name, "MODIFIED", lease.clone());
            (200, lease)
        }
        ("DELETE", [ns, "leases", name]) => {
            let options: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let key = ((*ns).to_owned(), (*name).to_owned());
            let Some(current) = store.leases.get(&key) else {
                return status(
                    404,
                    "NotFound",
                    format!("leases.coordination.k8s.io \"{name}\" not found"),
                );
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
            let mut gone = store.leases.remove(&key).unwrap_or(Value::Null);
            gone["metadata"]["resourceVersion"] = Value::String(store.revision.to_string());
            store.record(ns, name, "DELETED", gone);
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
fn drop_unknown_fields(store: &Store, lease: &mut Value) {
    if store.v1_20
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

/// The API server's validation of a Lease spec, for the fields the lock writes.
fn invalid(lease: &Value) -> Option<(u16, Value)> {
    let spec = &lease["spec"];
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
