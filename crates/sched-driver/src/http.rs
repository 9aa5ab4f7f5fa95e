//! The HTTP client of remote extenders (a configuration's `extenders`): hyper 1 over rustls,
//! asynchronous, each exchange bounded by the extender's `httpTimeout`. The driver sends a
//! parked pod's [`ExtenderCall`](sched_core::extender::ExtenderCall) and a binder extender's
//! bind on tasks; a preempt verb goes through [`BlockingTransport`], within the engine's
//! attempt (preemption is synchronous).

use std::collections::HashMap;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sched_core::extender::{
    ExtenderConfig, ExtenderError, ExtenderRequest, RemoteExtender, Transport,
};

/// The largest reply read.
const MAX_REPLY_BYTES: usize = 1 << 30;

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One client per remote extender, by name (`urlPrefix`).
#[derive(Clone, Default)]
pub(crate) struct ExtenderClients {
    by_name: HashMap<String, HttpClient>,
}

impl std::fmt::Debug for ExtenderClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

impl ExtenderClients {
    /// Clients for `extenders` (kube's `makeTransport` for each).
    pub(crate) fn new<'a>(
        extenders: impl Iterator<Item = &'a RemoteExtender>,
    ) -> Result<ExtenderClients, ExtenderError> {
        let mut by_name = HashMap::new();
        for e in extenders {
            let config = e.config();
            by_name.insert(config.url_prefix.clone(), client(config)?);
        }
        Ok(ExtenderClients { by_name })
    }

    /// kube's `send`: POSTs the request's body; the reply's bytes when the status is 200.
    pub(crate) async fn send(&self, req: &ExtenderRequest) -> Result<Vec<u8>, ExtenderError> {
        let transport = |message: String| ExtenderError::Transport {
            verb: req.verb.clone(),
            url: req.url.clone(),
            message,
        };
        let client = self
            .by_name
            .get(&req.extender)
            .ok_or_else(|| transport("no client for this extender".into()))?;
        let request = hyper::Request::post(&req.url)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(req.body.clone())))
            .map_err(|e| transport(e.to_string()))?;
        let exchange = async {
            let resp = client
                .request(request)
                .await
                .map_err(|e| transport(error_text(&e)))?;
            let code = resp.status().as_u16();
            if code != 200 {
                return Err(ExtenderError::Status {
                    verb: req.verb.clone(),
                    url: req.url.clone(),
                    code,
                });
            }
            let body = Limited::new(resp.into_body(), MAX_REPLY_BYTES)
                .collect()
                .await
                .map_err(|e| transport(e.to_string()))?;
            Ok(body.to_bytes().to_vec())
        };
        tokio::time::timeout(req.timeout, exchange)
            .await
            .map_err(|_| ExtenderError::Timeout {
                verb: req.verb.clone(),
                url: req.url.clone(),
                timeout: req.timeout,
            })?
    }
}

/// Sends a request from the engine's thread (tokio's blocking pool), waiting for the reply:
/// the preempt verb, which preemption's dry run calls in the attempt.
pub(crate) struct BlockingTransport {
    pub(crate) clients: Arc<ExtenderClients>,
}

impl Transport for BlockingTransport {
    fn send(&self, request: &ExtenderRequest) -> Result<Vec<u8>, ExtenderError> {
        let rt = tokio::runtime::Handle::try_current().map_err(|e| ExtenderError::Transport {
            verb: request.verb.clone(),
            url: request.url.clone(),
            message: format!("no tokio runtime: {e}"),
        })?;
        rt.block_on(self.clients.send(request))
    }
}

fn error_text(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

fn config_error(config: &ExtenderConfig, message: String) -> ExtenderError {
    ExtenderError::Config {
        extender: config.url_prefix.clone(),
        message,
    }
}

fn read_pem(
    config: &ExtenderConfig,
    data: &[u8],
    file: &str,
    what: &str,
) -> Result<Vec<u8>, ExtenderError> {
    if !data.is_empty() {
        return Ok(data.to_vec());
    }
    std::fs::read(file).map_err(|e| config_error(config, format!("reading {what} {file:?}: {e}")))
}

fn certificates(
    config: &ExtenderConfig,
    pem: &[u8],
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, ExtenderError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(config, format!("{what}: {e}")))?;
    if certs.is_empty() {
        return Err(config_error(config, format!("{what}: no PEM certificate")));
    }
    Ok(certs)
}

/// kube's `makeTransport` over rustls: `enableHTTPS` without a CA does not verify the
/// server, as kube's client does; `insecure`, `caFile`/`caData` and a client certificate are
/// used; `serverName` is refused (the URL's host is the name checked).
fn tls_config(config: &ExtenderConfig) -> Result<ClientConfig, ExtenderError> {
    let tls = config.tls_config.clone().unwrap_or_default();
    if !tls.server_name.is_empty() {
        return Err(config_error(
            config,
            "tlsConfig.serverName is not supported by this client".into(),
        ));
    }
    let has_ca = !tls.ca_file.is_empty() || !tls.ca_data.is_empty();
    let has_cert = !tls.cert_file.is_empty() || !tls.cert_data.is_empty();
    let has_key = !tls.key_file.is_empty() || !tls.key_data.is_empty();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(config, e.to_string()))?;
    let insecure = tls.insecure || (config.enable_https && !has_ca);
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        if has_ca {
            let pem = read_pem(config, &tls.ca_data, &tls.ca_file, "the CA")?;
            for c in certificates(config, &pem, "CA")? {
                roots
                    .add(c)
                    .map_err(|e| config_error(config, format!("CA: {e}")))?;
            }
        } else {
            // The system's roots (kube's default transport).
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
        }
        builder.with_root_certificates(roots)
    };
    if has_cert != has_key {
        return Err(config_error(
            config,
            "a client certificate needs both a certificate and a key".into(),
        ));
    }
    if has_cert {
        let cert = read_pem(
            config,
            &tls.cert_data,
            &tls.cert_file,
            "the client certificate",
        )?;
        let key = read_pem(config, &tls.key_data, &tls.key_file, "the client key")?;
        let chain = certificates(config, &cert, "client certificate")?;
        let key = PrivateKeyDer::from_pem_slice(&key)
            .map_err(|e| config_error(config, format!("client key: {e}")))?;
        builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| config_error(config, format!("client certificate: {e}")))
    } else {
        Ok(builder.with_no_client_auth())
    }
}

fn client(config: &ExtenderConfig) -> Result<HttpClient, ExtenderError> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(config)?)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

/// Accepts any server certificate (`insecure`, or `enableHTTPS` without a CA, as kube).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
