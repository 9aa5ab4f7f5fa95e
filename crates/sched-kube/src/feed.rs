//! The watches: one kube-rs watcher per [`WATCHED`] kind (list, then watch, relisting when
//! the watch expires, with backoff while the API server is away), turned into the engine's
//! [`ClusterEvent`]s.
//!
//! Per kind the feed keeps the keys it has given the engine, so that:
//! - an object seen again is an update, a new one an add;
//! - after a relist (a watch that expired, an API server that came back), the objects that
//!   are gone are deleted from the engine;
//! - a malformed object (one the loader refuses) is reported, counted and skipped; an update
//!   that is malformed leaves the engine with the object's last good version.
//!
//! The watches start with the run, before the election, as kube-scheduler's informers do
//! (its default, `DelayCacheUntilActive: false`): a standby replica's [`Feed`] keeps each
//! watched object's latest state, so a new leader starts from a synced view instead of
//! listing the cluster first.
//!
//! Pods are watched without the terminal ones (kube-scheduler's field selector
//! `status.phase!=Succeeded,status.phase!=Failed`): a pod that finishes leaves the watch, so
//! the engine deletes it and its node has room again.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt as _;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use sched_core::model::PodKey;
use sched_core::scheduler::{ClusterEvent, Object, ObjectKey};
use tokio::sync::mpsc;
use tokio::task::{JoinError, JoinSet};

use crate::kinds::{WATCHED, WatchedKind};

/// What the watches send to the scheduler's loop.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per watched change; boxing would cost an allocation each
pub(crate) enum FeedMsg {
    /// A change for the engine, of the kind at this index of [`WATCHED`].
    Event(usize, ClusterEvent),
    /// The kind at this index has been listed once (or is not served by this API server).
    Synced(usize),
}

/// What the scheduler needs to know of a pod beyond the engine's model: its UID (bindings and
/// deletions carry it as a precondition, events name it), its scheduler name, and since when
/// it has been reported unschedulable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodInfo {
    pub uid: String,
    pub scheduler_name: String,
    /// The `lastTransitionTime` of its `PodScheduled` condition when that is `False`.
    pub unschedulable_since: Option<String>,
}

/// The `lastTransitionTime` of a pod's `PodScheduled=False` condition.
fn unschedulable_since(status: Option<&serde_json::Value>) -> Option<String> {
    let conditions = status?.get("conditions")?.as_array()?;
    let c = conditions
        .iter()
        .find(|c| c.get("type").and_then(|t| t.as_str()) == Some("PodScheduled"))?;
    if c.get("status").and_then(|s| s.as_str()) != Some("False") {
        return None;
    }
    Some(c.get("lastTransitionTime")?.as_str()?.to_owned())
}

/// The pods' [`PodInfo`], kept by the pod watch.
#[derive(Debug, Default)]
pub(crate) struct PodCache(Mutex<HashMap<PodKey, PodInfo>>);

impl PodCache {
    pub(crate) fn get(&self, pod: &PodKey) -> Option<PodInfo> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(pod)
            .cloned()
    }

    fn set(&self, pod: PodKey, info: Option<PodInfo>) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match info {
            Some(i) => m.insert(pod, i),
            None => m.remove(&pod),
        };
    }
}

/// Counters of the watches (served as metrics).
#[derive(Clone, Debug, Default)]
pub(crate) struct FeedStats {
    /// Objects the loader refused.
    pub malformed: Counter,
    /// Watch and list errors (each retried with backoff).
    pub watch_errors: Counter,
    /// Events handed to the engine.
    pub events: Counter,
}

impl FeedStats {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "sched_kube_malformed_objects",
            "Watched objects that could not be read and were skipped",
            self.malformed.clone(),
        );
        registry.register(
            "sched_kube_watch_errors",
            "List and watch errors, each retried with backoff",
            self.watch_errors.clone(),
        );
        registry.register(
            "sched_kube_watch_events",
            "Object changes handed to the scheduling engine",
            self.events.clone(),
        );
    }
}

/// The run's watches and, until a term takes the listing, what they have reported.
pub(crate) struct Feed {
    /// The pods' UIDs and scheduler names, kept by the pod watch.
    pub pods: Arc<PodCache>,
    /// What the watches report.
    pub rx: mpsc::UnboundedReceiver<FeedMsg>,
    /// One task per watched kind (they run until aborted: dropping the set aborts them).
    pub watches: JoinSet<()>,
    /// Each object's latest state, its kind's index in [`WATCHED`] and when it first arrived
    /// (objects deleted are removed): the cluster as the watches see it, before an engine
    /// exists.
    objects: HashMap<ObjectKey, (usize, u64, Object)>,
    /// Arrivals so far: an object keeps its place in the listing when it changes, as in an
    /// informer's store, so a new leader sees nodes and pending pods in the API server's order.
    arrivals: u64,
    /// Which kinds have been listed once.
    synced: Vec<bool>,
}

impl Feed {
    /// Starts one watch per watched kind.
    pub(crate) fn start(client: &Client, stats: &FeedStats) -> Feed {
        let pods = Arc::new(PodCache::default());
        let (tx, rx) = mpsc::unbounded_channel();
        let mut watches = JoinSet::new();
        spawn(client, &pods, stats, &tx, &mut watches);
        Feed {
            pods,
            rx,
            watches,
            objects: HashMap::new(),
            arrivals: 0,
            synced: vec![false; WATCHED.len()],
        }
    }

    /// Takes in the next report of the watches (cancel-safe).
    ///
    /// # Errors
    /// A watch task ended (they run until aborted): its join result.
    pub(crate) async fn absorb_next(&mut self) -> Result<(), Result<(), JoinError>> {
        tokio::select! {
            m = self.rx.recv() => match m {
                Some(FeedMsg::Event(i, e)) => {
                    match e {
                        ClusterEvent::Add(o) | ClusterEvent::Update(o) => {
                            match self.objects.entry(o.key()) {
                                Entry::Occupied(mut e) => e.get_mut().2 = o,
                                Entry::Vacant(e) => {
                                    self.arrivals += 1;
                                    e.insert((i, self.arrivals, o));
                                }
                            }
                        }
                        ClusterEvent::Delete(key) => {
                            self.objects.remove(&key);
                        }
                        other => tracing::error!(?other, "a watch reported an unknown change"),
                    }
                    Ok(())
                }
                Some(FeedMsg::Synced(i)) => {
                    tracing::debug!(kind = WATCHED[i].kind, "listed");
                    self.synced[i] = true;
                    Ok(())
                }
                None => Err(Ok(())),
            },
            Some(ended) = self.watches.join_next() => Err(ended),
        }
    }

    /// Whether every kind has been listed once (kube's cache sync).
    pub(crate) fn is_synced(&self) -> bool {
        self.synced.iter().all(|s| *s)
    }

    /// The cluster as listed, for a new engine: every object as an add, in dependency order
    /// ([`WATCHED`]'s), bound pods before pending ones, otherwise in order of arrival. What
    /// the watches report later goes to the engine as it comes, from [`Feed::rx`]. The map is
    /// freed.
    pub(crate) fn take_listing(&mut self) -> Vec<ClusterEvent> {
        let mut listing: Vec<(usize, u64, Object)> =
            std::mem::take(&mut self.objects).into_values().collect();
        listing.sort_by_key(|(i, arrival, o)| {
            let pending = matches!(o, Object::Pod(p) if p.spec.node_name.is_empty());
            (*i, pending, *arrival)
        });
        listing
            .into_iter()
            .map(|(_, _, o)| ClusterEvent::Add(o))
            .collect()
    }
}

/// Starts one watch per watched kind on `tasks`.
fn spawn(
    client: &Client,
    pods: &Arc<PodCache>,
    stats: &FeedStats,
    tx: &mpsc::UnboundedSender<FeedMsg>,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    for (index, kind) in WATCHED.iter().enumerate() {
        let watch = Watch {
            index,
            kind,
            pods: pods.clone(),
            stats: stats.clone(),
            tx: tx.clone(),
            known: HashSet::new(),
            relisting: None,
            synced: false,
        };
        tasks.spawn(watch.run(client.clone()));
    }
}

/// One kind's watch and what it has told the engine.
struct Watch {
    index: usize,
    kind: &'static WatchedKind,
    pods: Arc<PodCache>,
    stats: FeedStats,
    tx: mpsc::UnboundedSender<FeedMsg>,
    /// The keys the engine has.
    known: HashSet<ObjectKey>,
    /// The keys seen so far in a relist.
    relisting: Option<HashSet<ObjectKey>>,
    synced: bool,
}

impl Watch {
    async fn run(mut self, client: Client) {
        let api: Api<DynamicObject> = Api::all_with(client, &self.kind.api_resource());
        let mut config = watcher::Config::default();
        if self.kind.kind == "Pod" {
            config = config.fields("status.phase!=Succeeded,status.phase!=Failed");
        }
        let mut stream = watcher(api, config).default_backoff().boxed();
        while let Some(item) = stream.next().await {
            let more = match item {
                Ok(event) => self.on_event(event),
                Err(e) => self.on_error(&e),
            };
            if !more {
                return;
            }
        }
    }

    /// Handles one watcher event; false when the engine is gone.
    fn on_event(&mut self, event: watcher::Event<DynamicObject>) -> bool {
        match event {
            watcher::Event::Init => {
                self.relisting = Some(HashSet::new());
                true
            }
            watcher::Event::InitApply(o) => {
                if let Some(seen) = self.relisting.as_mut() {
                    seen.insert(self.kind.key_of(&o));
                }
                self.apply(&o)
            }
            watcher::Event::InitDone => {
                let seen = self.relisting.take().unwrap_or_default();
                let gone: Vec<ObjectKey> = self.known.difference(&seen).cloned().collect();
                for key in gone {
                    if !self.delete(key) {
                        return false;
                    }
                }
                if !self.synced {
                    self.synced = true;
                    return self.tx.send(FeedMsg::Synced(self.index)).is_ok();
                }
                true
            }
            watcher::Event::Apply(o) => self.apply(&o),
            watcher::Event::Delete(o) => self.delete(self.kind.key_of(&o)),
        }
    }

    /// A list or watch error: retried by the watcher with backoff. A kind this API server
    /// does not serve (404 on the first list) counts as listed and empty, so a cluster
    /// without, say, the DRA API still schedules; the watch keeps trying, and picks the kind
    /// up when the API server starts serving it (an upgrade).
    fn on_error(&mut self, e: &watcher::Error) -> bool {
        self.stats.watch_errors.inc();
        let not_served =
            matches!(e, watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404);
        if not_served && !self.synced {
            tracing::warn!(kind = self.kind.kind, "not served by this API server (yet)");
            self.synced = true;
            return self.tx.send(FeedMsg::Synced(self.index)).is_ok();
        }
        tracing::warn!(kind = self.kind.kind, error = %e, "watch failed; retrying with backoff");
        true
    }

    fn apply(&mut self, o: &DynamicObject) -> bool {
        let object = match self.kind.to_object(o) {
            Ok(object) => object,
            Err(e) => {
                self.stats.malformed.inc();
                tracing::error!(error = %e, "malformed object skipped");
                return true;
            }
        };
        let key = object.key();
        if let ObjectKey::Pod(pod) = &key {
            let spec = o.data.get("spec");
            let info = PodInfo {
                uid: o.metadata.uid.clone().unwrap_or_default(),
                scheduler_name: spec
                    .and_then(|s| s.get("schedulerName"))
                    .and_then(|n| n.as_str())
                    .unwrap_or(sched_core::config::DEFAULT_SCHEDULER_NAME)
                    .to_owned(),
                unschedulable_since: unschedulable_since(o.data.get("status")),
            };
            self.pods.set(pod.clone(), Some(info));
        }
        let event = if self.known.insert(key) {
            ClusterEvent::Add(object)
        } else {
            ClusterEvent::Update(object)
        };
        self.send(event)
    }

    fn delete(&mut self, key: ObjectKey) -> bool {
        if !self.known.remove(&key) {
            return true;
        }
        if let ObjectKey::Pod(pod) = &key {
            self.pods.set(pod.clone(), None);
        }
        self.send(ClusterEvent::Delete(key))
    }

    fn send(&self, event: ClusterEvent) -> bool {
        self.stats.events.inc();
        self.tx.send(FeedMsg::Event(self.index, event)).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, cpu: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu}},
        }))
        .unwrap()
    }

    fn watch() -> (Watch, mpsc::UnboundedReceiver<FeedMsg>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let index = WATCHED.iter().position(|k| k.kind == "Node").unwrap();
        let w = Watch {
            index,
            kind: &WATCHED[index],
            pods: Arc::default(),
            stats: FeedStats::default(),
            tx,
            known: HashSet::new(),
            relisting: None,
            synced: false,
        };
        (w, rx)
    }

    fn drain(rx: &mut mpsc::UnboundedReceiver<FeedMsg>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            out.push(match m {
                FeedMsg::Event(_, ClusterEvent::Add(o)) => format!("add {:?}", o.key()),
                FeedMsg::Event(_, ClusterEvent::Update(o)) => format!("update {:?}", o.key()),
                FeedMsg::Event(_, ClusterEvent::Delete(k)) => format!("delete {k:?}"),
                FeedMsg::Event(..) => "other".into(),
                FeedMsg::Synced(_) => "synced".into(),
            });
        }
        out
    }

    fn pod(name: &str, node: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        }))
        .unwrap()
    }

    /// A standby's view: each object's latest state, deleted ones gone, handed to a new leader
    /// in dependency order with bound pods before pending ones.
    #[tokio::test]
    async fn a_standby_keeps_the_latest_state_and_hands_over_a_listing_in_order() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut feed = Feed {
            pods: Arc::default(),
            rx,
            watches: JoinSet::new(),
            objects: HashMap::new(),
            arrivals: 0,
            synced: vec![false; WATCHED.len()],
        };
        let index = |kind: &str| WATCHED.iter().position(|k| k.kind == kind).unwrap();
        let (nodes, pods) = (index("Node"), index("Pod"));
        let object = |i: usize, o: &DynamicObject| WATCHED[i].to_object(o).unwrap();
        let events = [
            (pods, ClusterEvent::Add(object(pods, &pod("pending", "")))),
            (pods, ClusterEvent::Add(object(pods, &pod("a-pending", "")))),
            (pods, ClusterEvent::Add(object(pods, &pod("bound", "n1")))),
            (pods, ClusterEvent::Add(object(pods, &pod("gone", "n1")))),
            (nodes, ClusterEvent::Add(object(nodes, &node("n1", "1")))),
            (nodes, ClusterEvent::Add(object(nodes, &node("n2", "1")))),
            (nodes, ClusterEvent::Add(object(nodes, &node("m3", "1")))),
            (nodes, ClusterEvent::Update(object(nodes, &node("n1", "4")))),
            (
                pods,
                ClusterEvent::Update(object(pods, &pod("pending", ""))),
            ),
            (nodes, ClusterEvent::Delete(ObjectKey::Node("n2".into()))),
            (
                pods,
                ClusterEvent::Delete(ObjectKey::pod(PodKey::new("default", "gone"))),
            ),
        ];
        for (i, e) in events {
            tx.send(FeedMsg::Event(i, e)).unwrap();
            feed.absorb_next().await.unwrap();
        }
        for i in 0..WATCHED.len() {
            assert!(!feed.is_synced());
            tx.send(FeedMsg::Synced(i)).unwrap();
            feed.absorb_next().await.unwrap();
        }
        assert!(feed.is_synced());
        let listing: Vec<String> = feed
            .take_listing()
            .into_iter()
            .map(|e| match e {
                ClusterEvent::Add(Object::Node(n)) => {
                    format!("node {} {:?}", n.name(), n.status.allocatable.get("cpu"))
                }
                ClusterEvent::Add(o) => format!("add {:?}", o.key()),
                other => format!("{other:?}"),
            })
            .collect();
        // Nodes first, then pods, bound before pending; otherwise in order of first arrival
        // (n1 before m3, pending before a-pending), each as last seen.
        assert_eq!(listing.len(), 5, "{listing:?}");
        assert!(listing[0].starts_with("node n1 Some("), "{listing:?}");
        assert!(listing[0].contains('4'), "the latest n1: {listing:?}");
        assert!(listing[1].starts_with("node m3 "), "{listing:?}");
        assert_eq!(
            listing[2..],
            [
                r#"add Pod("default/bound")"#.to_owned(),
                r#"add Pod("default/pending")"#.to_owned(),
                r#"add Pod("default/a-pending")"#.to_owned()
            ]
        );
        assert!(feed.take_listing().is_empty(), "handed over once");
        // The watches gone: the feed says so.
        drop(tx);
        assert!(feed.absorb_next().await.is_err());
    }

    #[test]
    fn a_listing_adds_then_a_relist_deletes_what_is_gone() {
        let (mut w, mut rx) = watch();
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(node("a", "1")),
            watcher::Event::InitApply(node("b", "1")),
            watcher::Event::InitDone,
            watcher::Event::Apply(node("a", "2")),
        ] {
            assert!(w.on_event(e));
        }
        assert_eq!(
            drain(&mut rx),
            [
                r#"add Node("a")"#,
                r#"add Node("b")"#,
                "synced",
                r#"update Node("a")"#
            ]
        );
        // The watch expired; the relist no longer has b.
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(node("a", "2")),
            watcher::Event::InitDone,
        ] {
            assert!(w.on_event(e));
        }
        assert_eq!(
            drain(&mut rx),
            [r#"update Node("a")"#, r#"delete Node("b")"#]
        );
    }

    #[test]
    fn a_malformed_object_is_counted_and_skipped_keeping_the_last_good_one() {
        let (mut w, mut rx) = watch();
        assert!(w.on_event(watcher::Event::Apply(node("a", "1"))));
        assert!(w.on_event(watcher::Event::Apply(node("a", "lots"))));
        assert!(w.on_event(watcher::Event::Apply(node("c", "lots"))));
        assert_eq!(w.stats.malformed.get(), 2);
        assert_eq!(drain(&mut rx), [r#"add Node("a")"#]);
        // Its deletion still reaches the engine; a skipped object's does not.
        assert!(w.on_event(watcher::Event::Delete(node("c", "1"))));
        assert!(w.on_event(watcher::Event::Delete(node("a", "1"))));
        assert_eq!(drain(&mut rx), [r#"delete Node("a")"#]);
    }
}
