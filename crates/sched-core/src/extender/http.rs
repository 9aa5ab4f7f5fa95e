//! [`HttpExtender`]: kube's HTTP extender (`HTTPExtender`) over a blocking ureq client.

use std::time::Duration;

use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};

use super::wire::{self, ExtenderArgs, ExtenderBindingArgs, HostPriority};
use super::{Extender, ExtenderConfig, ExtenderError, FilterResult, NodeVictims, interested_in};
use crate::model::{Node, Pod};
use crate::snapshot::Snapshot;

/// The largest reply read (a NodeList of thousands of nodes fits; a runaway reply does not
/// exhaust memory).
const MAX_REPLY_BYTES: u64 = 1 << 30;

/// kube's HTTP extender: POSTs kube's JSON to `urlPrefix/verb` with `httpTimeout` (5 s when
/// unset) for the whole exchange, and reads the reply as kube does.
///
/// ```no_run
/// use std::time::Duration;
/// use sched_core::extender::{Extender, ExtenderConfig, HttpExtender};
/// use sched_core::model::{Node, Pod};
/// let ext = HttpExtender::new(
///     &ExtenderConfig::new("http://127.0.0.1:8888/scheduler")
///         .filter_verb("filter")
///         .http_timeout(Duration::from_millis(500)),
/// )?;
/// let node = Node::default();
/// let result = ext.filter(&Pod::default(), &[&node])?;
/// # Ok::<(), sched_core::extender::ExtenderError>(())
/// ```
///
/// TLS: `enableHTTPS` without `caFile`/`caData` does not verify the server's certificate,
/// as kube's client does; `insecure`, `caFile`/`caData` and a client certificate
/// (`certFile`/`certData`, `keyFile`/`keyData`) are used; `serverName` is refused
/// ([`ExtenderError::Config`]), the client having no way to set it.
pub struct HttpExtender {
    config: ExtenderConfig,
    managed: Vec<String>,
    timeout: Duration,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpExtender")
            .field("config", &self.config)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn read_pem(data: &[u8], file: &str, what: &str, prefix: &str) -> Result<Vec<u8>, ExtenderError> {
    if !data.is_empty() {
        return Ok(data.to_vec());
    }
    std::fs::read(file).map_err(|e| ExtenderError::Config {
        extender: prefix.to_string(),
        message: format!("reading {what} {file:?}: {e}"),
    })
}

fn certificates(
    pem: &[u8],
    what: &str,
    prefix: &str,
) -> Result<Vec<Certificate<'static>>, ExtenderError> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(ExtenderError::Config {
                    extender: prefix.to_string(),
                    message: format!("{what}: {e}"),
                });
            }
        }
    }
    if certs.is_empty() {
        return Err(ExtenderError::Config {
            extender: prefix.to_string(),
            message: format!("{what}: no PEM certificate"),
        });
    }
    Ok(certs)
}

/// kube's `makeTransport` for ureq.
fn tls_config(config: &ExtenderConfig) -> Result<Option<TlsConfig>, ExtenderError> {
    let prefix = config.url_prefix.as_str();
    let tls = config.tls_config.clone().unwrap_or_default();
    if !tls.server_name.is_empty() {
        return Err(ExtenderError::Config {
            extender: prefix.to_string(),
            message: "tlsConfig.serverName is not supported by this client".into(),
        });
    }
    let has_ca = !tls.ca_file.is_empty() || !tls.ca_data.is_empty();
    let has_cert = !tls.cert_file.is_empty() || !tls.cert_data.is_empty();
    let has_key = !tls.key_file.is_empty() || !tls.key_data.is_empty();
    if !config.enable_https && config.tls_config.is_none() {
        return Ok(None);
    }
    let mut b = TlsConfig::builder();
    // kube: with enableHTTPS and no CA, the server is not verified.
    let insecure = tls.insecure || (config.enable_https && !has_ca);
    b = b.disable_verification(insecure);
    if has_ca {
        let pem = read_pem(&tls.ca_data, &tls.ca_file, "the CA", prefix)?;
        b = b.root_certs(RootCerts::new_with_certs(&certificates(
            &pem, "CA", prefix,
        )?));
    }
    if has_cert != has_key {
        return Err(ExtenderError::Config {
            extender: prefix.to_string(),
            message: "a client certificate needs both a certificate and a key".into(),
        });
    }
    if has_cert {
        let cert = read_pem(
            &tls.cert_data,
            &tls.cert_file,
            "the client certificate",
            prefix,
        )?;
        let key = read_pem(&tls.key_data, &tls.key_file, "the client key", prefix)?;
        let chain = certificates(&cert, "client certificate", prefix)?;
        let key = PrivateKey::from_pem(&key).map_err(|e| ExtenderError::Config {
            extender: prefix.to_string(),
            message: format!("client key: {e}"),
        })?;
        b = b.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(Some(b.build()))
}

impl HttpExtender {
    /// The extender of `config` (kube's `NewHTTPExtender`).
    ///
    /// # Errors
    /// [`ExtenderError::Config`] for TLS settings this client cannot use or certificate files
    /// it cannot read.
    pub fn new(config: &ExtenderConfig) -> Result<HttpExtender, ExtenderError> {
        let timeout = config.effective_timeout();
        let mut b = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false);
        if let Some(tls) = tls_config(config)? {
            b = b.tls_config(tls);
        }
        Ok(HttpExtender {
            managed: config.managed_resource_names(),
            config: config.clone(),
            timeout,
            agent: b.build().into(),
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &ExtenderConfig {
        &self.config
    }

    /// kube's `send`: POST `body` to `urlPrefix/verb`; the reply's bytes when the status is
    /// 200.
    fn send(&self, verb: &str, body: &[u8]) -> Result<Vec<u8>, ExtenderError> {
        let url = format!("{}/{verb}", self.config.url_prefix.trim_end_matches('/'));
        let fail = |e: ureq::Error| match e {
            ureq::Error::Timeout(_) => ExtenderError::Timeout {
                verb: verb.to_string(),
                url: url.clone(),
                timeout: self.timeout,
            },
            other => ExtenderError::Transport {
                verb: verb.to_string(),
                url: url.clone(),
                message: other.to_string(),
            },
        };
        let mut resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body)
            .map_err(fail)?;
        let code = resp.status().as_u16();
        if code != 200 {
            return Err(ExtenderError::Status {
                verb: verb.to_string(),
                url,
                code,
            });
        }
        resp.body_mut()
            .with_config()
            .limit(MAX_REPLY_BYTES)
            .read_to_vec()
            .map_err(fail)
    }

    fn decode<T>(&self, verb: &str, r: Result<T, wire::WireError>) -> Result<T, ExtenderError> {
        r.map_err(|source| ExtenderError::Decode {
            verb: verb.to_string(),
            url: format!("{}/{verb}", self.config.url_prefix.trim_end_matches('/')),
            source,
        })
    }
}

impl Extender for HttpExtender {
    configured_extender!();

    fn filter(&self, pod: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
        let verb = self.config.filter_verb.as_str();
        if verb.is_empty() {
            return Ok(FilterResult::all(nodes));
        }
        let cache_capable = self.config.node_cache_capable;
        let reply = self.send(verb, &ExtenderArgs::to_json(pod, nodes, cache_capable))?;
        super::remote::filter_reply(&self.config, nodes, &reply)
    }

    fn prioritize(
        &self,
        pod: &Pod,
        nodes: &[&Node],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        let verb = self.config.prioritize_verb.as_str();
        if verb.is_empty() {
            let zero = nodes
                .iter()
                .map(|n| HostPriority {
                    host: n.metadata.name.clone(),
                    score: 0,
                })
                .collect();
            return Ok((zero, 0));
        }
        let body = ExtenderArgs::to_json(pod, nodes, self.config.node_cache_capable);
        let reply = self.send(verb, &body)?;
        super::remote::prioritize_reply(&self.config, &reply)
    }

    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        let verb = self.config.bind_verb.as_str();
        if verb.is_empty() {
            return Err(ExtenderError::NotBinder(self.config.url_prefix.clone()));
        }
        let reply = self.send(verb, &binding.to_json())?;
        let error = self.decode(verb, wire::binding_result_from_json(&reply))?;
        if error.is_empty() {
            Ok(())
        } else {
            Err(ExtenderError::Reply(error))
        }
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
        let verb = self.config.preempt_verb.as_str();
        if verb.is_empty() {
            return Err(ExtenderError::Other(format!(
                "preempt verb is not defined for extender {} but run into ProcessPreemption",
                self.config.url_prefix
            )));
        }
        let body = wire::preemption_args_json(pod, victims, self.config.node_cache_capable);
        let reply = self.send(verb, &body)?;
        // The extender always answers with UIDs; kube resolves them on the snapshot.
        super::remote::preempt_reply(&self.config, &reply, snapshot)
    }
}
