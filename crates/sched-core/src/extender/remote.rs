//! Extenders the engine does not call itself: [`RemoteExtender`] (a configuration's HTTP
//! extender, as the engine knows it) and [`ExtenderCall`], the filter and prioritize calls of
//! one parked pod, sequenced without I/O: the caller sends each [`ExtenderRequest`] however
//! it sends HTTP (the driver: asynchronously, with the extender's `httpTimeout`) and feeds
//! the reply back, then hands the finished call to
//! [`crate::scheduler::Scheduler::extender_reply`].

use std::sync::Arc;
use std::time::Duration;

use super::wire::{self, ExtenderArgs, ExtenderBindingArgs, ExtenderFilterResult, HostPriority};
use super::{
    Extender, ExtenderConfig, ExtenderError, FilterResult, NodeVictims, convert_to_victims,
    interested_in,
};
use crate::model::{Node, Pod};
use crate::snapshot::Snapshot;

/// A configuration's HTTP extender as the scheduling engine knows it: what it is interested
/// in and which verbs it has. The engine never calls it: the filter and prioritize calls of a
/// pod it is interested in go out as [`crate::scheduler::Step::CallExtenders`], its bind
/// verb as [`crate::scheduler::Step::Bind`]'s `extender_binder`
/// ([`super::ExtenderBinder::remote`]). Its preempt verb is called through the transport
/// given with [`RemoteExtender::with_preempt_transport`], if any (preemption is synchronous).
#[derive(Clone)]
pub struct RemoteExtender {
    config: ExtenderConfig,
    managed: Vec<String>,
    preempt: Option<Arc<dyn Transport>>,
}

impl std::fmt::Debug for RemoteExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteExtender")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Sends one request and waits for its reply (a blocking transport, for the preempt verb).
pub trait Transport: Send + Sync {
    /// POSTs `request` and returns the reply's body when the status is 200.
    ///
    /// # Errors
    /// Transport failures, timeouts, other statuses, as [`ExtenderError`].
    fn send(&self, request: &ExtenderRequest) -> Result<Vec<u8>, ExtenderError>;
}

impl RemoteExtender {
    /// The extender of `config`.
    pub fn new(config: &ExtenderConfig) -> RemoteExtender {
        RemoteExtender {
            managed: config.managed_resource_names(),
            config: config.clone(),
            preempt: None,
        }
    }

    /// The same extender, its preempt verb sent through `transport`.
    #[must_use]
    pub fn with_preempt_transport(mut self, transport: Arc<dyn Transport>) -> RemoteExtender {
        self.preempt = Some(transport);
        self
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &ExtenderConfig {
        &self.config
    }

    /// The request of `verb` with `body`.
    pub fn request(&self, verb: &str, body: Vec<u8>) -> ExtenderRequest {
        ExtenderRequest {
            extender: self.config.url_prefix.clone(),
            verb: verb.to_string(),
            url: format!("{}/{verb}", self.config.url_prefix.trim_end_matches('/')),
            body,
            timeout: self.config.effective_timeout(),
        }
    }

    /// The bind request of `args`, `None` without a bind verb.
    pub fn bind_request(&self, args: &ExtenderBindingArgs) -> Option<ExtenderRequest> {
        let verb = self.config.bind_verb.as_str();
        (!verb.is_empty()).then(|| self.request(verb, args.to_json()))
    }

    /// Reads the bind verb's reply as kube does.
    ///
    /// # Errors
    /// A malformed reply, or the reply's own error.
    pub fn bind_reply(&self, reply: &[u8]) -> Result<(), ExtenderError> {
        let verb = self.config.bind_verb.as_str();
        let error = decode(&self.config, verb, wire::binding_result_from_json(reply))?;
        if error.is_empty() {
            Ok(())
        } else {
            Err(ExtenderError::Reply(error))
        }
    }
}

fn decode<T>(
    config: &ExtenderConfig,
    verb: &str,
    r: Result<T, wire::WireError>,
) -> Result<T, ExtenderError> {
    r.map_err(|source| ExtenderError::Decode {
        verb: verb.to_string(),
        url: format!("{}/{verb}", config.url_prefix.trim_end_matches('/')),
        source,
    })
}

/// kube's reading of a filter reply for the `nodes` sent.
pub(crate) fn filter_reply(
    config: &ExtenderConfig,
    nodes: &[&Node],
    reply: &[u8],
) -> Result<FilterResult, ExtenderError> {
    let verb = config.filter_verb.as_str();
    let result = decode(config, verb, ExtenderFilterResult::from_json(reply))?;
    if !result.error.is_empty() {
        return Err(ExtenderError::Reply(result.error));
    }
    let feasible = match (config.node_cache_capable, result.node_names, result.nodes) {
        (true, Some(names), _) => {
            for n in &names {
                if !nodes.iter().any(|x| x.metadata.name == *n) {
                    return Err(ExtenderError::UnknownNode {
                        extender: config.url_prefix.clone(),
                        node: n.clone(),
                    });
                }
            }
            names
        }
        (_, _, Some(names)) => names,
        _ => Vec::new(),
    };
    Ok(FilterResult {
        feasible,
        failed: result.failed_nodes,
        failed_and_unresolvable: result.failed_and_unresolvable_nodes,
    })
}

/// kube's reading of a prioritize reply: the scores and the configured weight.
pub(crate) fn prioritize_reply(
    config: &ExtenderConfig,
    reply: &[u8],
) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
    let verb = config.prioritize_verb.as_str();
    let list = decode(config, verb, HostPriority::list_from_json(reply))?;
    Ok((list, config.weight))
}

/// kube's reading of a preempt reply: the victims, resolved on `snapshot`.
pub(crate) fn preempt_reply(
    config: &ExtenderConfig,
    reply: &[u8],
    snapshot: &Snapshot,
) -> Result<NodeVictims, ExtenderError> {
    let verb = config.preempt_verb.as_str();
    let meta = decode(config, verb, wire::preemption_result_from_json(reply))?;
    convert_to_victims(&meta, snapshot, &config.url_prefix)
}

fn not_here(name: &str) -> ExtenderError {
    ExtenderError::Other(format!(
        "extender {name} is called by the engine's caller (Step::CallExtenders), not in the engine"
    ))
}

impl Extender for RemoteExtender {
    configured_extender!();

    fn filter(&self, _: &Pod, _: &[&Node]) -> Result<FilterResult, ExtenderError> {
        Err(not_here(self.name()))
    }

    fn prioritize(&self, _: &Pod, _: &[&Node]) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        Err(not_here(self.name()))
    }

    fn bind(&self, _: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        Err(not_here(self.name()))
    }

    fn supports_preemption(&self) -> bool {
        !self.config.preempt_verb.is_empty()
    }

    fn process_preemption(
        &self,
        pod: &Pod,
        victims: &NodeVictims,
        snapshot: &Snapshot,
    ) -> Result<NodeVictims, ExtenderError> {
        let Some(transport) = &self.preempt else {
            return Err(not_here(self.name()));
        };
        let body = wire::preemption_args_json(pod, victims, self.config.node_cache_capable);
        let reply = transport.send(&self.request(&self.config.preempt_verb, body))?;
        preempt_reply(&self.config, &reply, snapshot)
    }

    fn remote(&self) -> Option<&RemoteExtender> {
        Some(self)
    }
}

/// One HTTP request of an extender: POST `body` (kube's JSON) to `url`, within `timeout`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtenderRequest {
    /// The extender's name (its `urlPrefix`).
    pub extender: String,
    /// The verb's name as configured.
    pub verb: String,
    /// `urlPrefix/verb`.
    pub url: String,
    /// The JSON body.
    pub body: Vec<u8>,
    /// The extender's `httpTimeout` (5 s when unset), for the whole exchange.
    pub timeout: Duration,
}

/// What one extender of a call answered.
#[derive(Debug)]
pub(crate) struct RemoteReply {
    /// Its position in the engine's list of extenders.
    pub(crate) position: usize,
    /// The filter's result; `None` when it was not asked (no filter verb, or the call
    /// stopped before it).
    pub(crate) filter: Option<Result<FilterResult, ExtenderError>>,
    /// The prioritize result; `None` when it was not asked.
    pub(crate) prioritize: Option<Result<(Vec<HostPriority>, i64), ExtenderError>>,
}

/// The identity of an [`ExtenderCall`], unique within an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtenderCallId(pub u64);

/// The remote extenders' calls for one parked pod, in kube's order: each filtering extender
/// in turn narrows the nodes that passed the filter plugins (an ignorable extender's error
/// passes over it, another's ends the call), then each prioritizing extender scores the nodes
/// left when more than one is. Without I/O: take [`ExtenderCall::next_request`], send it,
/// give its reply to [`ExtenderCall::answer`], until no request is left; then give the call
/// to [`crate::scheduler::Scheduler::extender_reply`].
#[derive(Debug)]
pub struct ExtenderCall {
    id: ExtenderCallId,
    pod: Pod,
    nodes: Vec<Node>,
    extenders: Vec<(usize, RemoteExtender)>,
    /// Positions in `nodes` of the nodes still feasible.
    left: Vec<usize>,
    /// The next extender, in the filter pass then the prioritize pass.
    next: usize,
    prioritizing: bool,
    stopped: bool,
    /// The request sent and not yet answered: (extender index in `extenders`, prioritize).
    sent: Option<(usize, bool)>,
    pub(crate) replies: Vec<RemoteReply>,
}

impl ExtenderCall {
    pub(crate) fn new(
        id: ExtenderCallId,
        pod: Pod,
        nodes: Vec<Node>,
        extenders: Vec<(usize, RemoteExtender)>,
    ) -> ExtenderCall {
        let replies = extenders
            .iter()
            .map(|(position, _)| RemoteReply {
                position: *position,
                filter: None,
                prioritize: None,
            })
            .collect();
        ExtenderCall {
            id,
            left: (0..nodes.len()).collect(),
            pod,
            nodes,
            extenders,
            next: 0,
            prioritizing: false,
            stopped: false,
            sent: None,
            replies,
        }
    }

    /// The call's identity.
    pub fn id(&self) -> ExtenderCallId {
        self.id
    }

    /// The pod.
    pub fn pod(&self) -> &Pod {
        &self.pod
    }

    /// `namespace/name` of the pod.
    pub fn pod_key(&self) -> crate::model::PodKey {
        self.pod.key()
    }

    /// The nodes that passed the filter plugins, sent to the first extender.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The extenders called, in order.
    pub fn extenders(&self) -> impl Iterator<Item = &RemoteExtender> {
        self.extenders.iter().map(|(_, e)| e)
    }

    /// The names of the nodes no extender has rejected so far.
    pub fn feasible(&self) -> impl Iterator<Item = &str> {
        self.left
            .iter()
            .map(|&i| self.nodes[i].metadata.name.as_str())
    }

    /// The next request to send, `None` when the call is over (or a request is unanswered).
    pub fn next_request(&mut self) -> Option<ExtenderRequest> {
        if self.sent.is_some() || self.stopped {
            return None;
        }
        if !self.prioritizing {
            while self.next < self.extenders.len() {
                let k = self.next;
                self.next += 1;
                let (_, e) = &self.extenders[k];
                if !Extender::is_filter(e) {
                    continue;
                }
                if self.left.is_empty() {
                    self.stopped = true;
                    return None;
                }
                let nodes: Vec<&Node> = self.left.iter().map(|&i| &self.nodes[i]).collect();
                let body = ExtenderArgs::to_json(&self.pod, &nodes, e.config().node_cache_capable);
                self.sent = Some((k, false));
                return Some(e.request(&e.config().filter_verb, body));
            }
            self.prioritizing = true;
            self.next = 0;
        }
        // kube scores only when more than one node is left.
        if self.left.len() < 2 {
            return None;
        }
        while self.next < self.extenders.len() {
            let k = self.next;
            self.next += 1;
            let (_, e) = &self.extenders[k];
            if !Extender::is_prioritizer(e) {
                continue;
            }
            let nodes: Vec<&Node> = self.left.iter().map(|&i| &self.nodes[i]).collect();
            let body = ExtenderArgs::to_json(&self.pod, &nodes, e.config().node_cache_capable);
            self.sent = Some((k, true));
            return Some(e.request(&e.config().prioritize_verb, body));
        }
        None
    }

    /// The reply to the last request: its body (status 200), or why there is none.
    pub fn answer(&mut self, reply: Result<Vec<u8>, ExtenderError>) {
        let Some((k, prioritize)) = self.sent.take() else {
            return;
        };
        let e = &self.extenders[k].1;
        if prioritize {
            self.replies[k].prioritize =
                Some(reply.and_then(|body| prioritize_reply(e.config(), &body)));
            return;
        }
        let nodes: Vec<&Node> = self.left.iter().map(|&i| &self.nodes[i]).collect();
        let result = reply.and_then(|body| filter_reply(e.config(), &nodes, &body));
        let result = result.and_then(|r| {
            // Only nodes it was given may pass.
            match r
                .feasible
                .iter()
                .find(|n| !nodes.iter().any(|x| x.metadata.name == **n))
            {
                Some(n) => Err(ExtenderError::UnknownNode {
                    extender: e.name().to_string(),
                    node: n.clone(),
                }),
                None => Ok(r),
            }
        });
        match &result {
            Ok(r) => {
                let kept: std::collections::HashSet<&str> =
                    r.feasible.iter().map(String::as_str).collect();
                let nodes = &self.nodes;
                self.left
                    .retain(|&i| kept.contains(nodes[i].metadata.name.as_str()));
            }
            Err(_) if Extender::is_ignorable(e) => {}
            Err(_) => self.stopped = true,
        }
        self.replies[k].filter = Some(result);
    }

    /// Whether every request was sent and answered.
    pub fn is_done(&self) -> bool {
        self.sent.is_none() && (self.stopped || self.peek_done())
    }

    fn peek_done(&self) -> bool {
        let filters_left = !self.prioritizing
            && self.extenders[self.next.min(self.extenders.len())..]
                .iter()
                .any(|(_, e)| Extender::is_filter(e));
        if filters_left {
            return self.left.is_empty();
        }
        let from = if self.prioritizing { self.next } else { 0 };
        self.left.len() < 2
            || !self.extenders[from.min(self.extenders.len())..]
                .iter()
                .any(|(_, e)| Extender::is_prioritizer(e))
    }

    /// The reply of the extender at `position` in the engine's list, if it was in the call.
    pub(crate) fn reply_of(&mut self, position: usize) -> Option<&mut RemoteReply> {
        self.replies.iter_mut().find(|r| r.position == position)
    }

    /// The names of the nodes sent.
    pub(crate) fn sent_names(&self) -> std::collections::HashSet<&str> {
        self.nodes
            .iter()
            .map(|n| n.metadata.name.as_str())
            .collect()
    }
}
