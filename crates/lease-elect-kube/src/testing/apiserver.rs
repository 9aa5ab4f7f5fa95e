//! A real Kubernetes API server for tests (feature `testing`): how to reach one
//! ([`Connection`]: URL, bearer token and CA file, as `scripts/servers.sh` exports them) and one
//! of a test's own ([`KubeApiServer`]): `kube-apiserver` on an `etcd` of its own, both child
//! processes started from the binaries in `$KUBE_REFERENCE_BIN` (kube-apiserver v1.34.4 and
//! etcd v3.6.4, built from `reference/` by `scripts/reference.sh`), on free loopback ports, which
//! a test can kill and start again with their data.
//!
//! The API server serves TLS with the certificate it generates in its directory on first start
//! (valid for 127.0.0.1, signed by a CA of its own; both are in `certs/apiserver.crt`, the file
//! clients trust) and authenticates one static bearer token, made at start, of the group
//! `system:masters`. Its service-account signing key is made by `openssl`.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lease_elect::testing::process::{
    ServerCommand, ServerProcess, StopSignal, free_port, wait_for_port,
};

/// The variable holding the API server's URL (`https://127.0.0.1:PORT`).
pub const URL_VAR: &str = "LEASE_ELECT_KUBE_URL";
/// The variable holding its bearer token.
pub const TOKEN_VAR: &str = "LEASE_ELECT_KUBE_TOKEN";
/// The variable holding the PEM file of the certificates a client trusts.
pub const CA_VAR: &str = "LEASE_ELECT_KUBE_CA";
/// The variable holding the endpoint of the API server's etcd.
pub const ETCD_VAR: &str = "LEASE_ELECT_KUBE_ETCD_ENDPOINT";
/// The variable holding the directory of the `kube-apiserver` and `etcd` binaries.
pub const BIN_VAR: &str = "KUBE_REFERENCE_BIN";

/// Where a real API server is and how to authenticate to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// A PEM file of the certificates to trust (the serving certificate's CA).
    pub ca_file: PathBuf,
}

impl Connection {
    /// The server of `scripts/servers.sh`: [`URL_VAR`], [`TOKEN_VAR`], [`CA_VAR`].
    ///
    /// # Errors
    /// Naming every variable that is not set.
    pub fn from_env() -> Result<Connection, String> {
        let get = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
        let (url, token, ca) = (get(URL_VAR), get(TOKEN_VAR), get(CA_VAR));
        match (url, token, ca) {
            (Some(url), Some(token), Some(ca)) => Ok(Connection {
                url,
                token,
                ca_file: PathBuf::from(ca),
            }),
            (url, token, ca) => {
                let missing: Vec<&str> = [(URL_VAR, url), (TOKEN_VAR, token), (CA_VAR, ca)]
                    .into_iter()
                    .filter(|(_, v)| v.is_none())
                    .map(|(var, _)| var)
                    .collect();
                Err(format!(
                    "no Kubernetes API server: {} not set (scripts/servers.sh starts \
                     kube-apiserver v1.34.4 and sets them)",
                    missing.join(", ")
                ))
            }
        }
    }

    /// The same server through another URL (a proxy in front of it): token and CA stay.
    #[must_use]
    pub fn with_url(&self, url: impl Into<String>) -> Connection {
        Connection {
            url: url.into(),
            ..self.clone()
        }
    }

    /// The connection as one command-line argument: `url|token|ca-file`.
    #[must_use]
    pub fn to_target(&self) -> String {
        format!("{}|{}|{}", self.url, self.token, self.ca_file.display())
    }

    /// Reads what [`to_target`](Self::to_target) wrote.
    ///
    /// # Errors
    /// When `target` does not have three parts.
    pub fn from_target(target: &str) -> Result<Connection, String> {
        let mut parts = target.splitn(3, '|');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(url), Some(token), Some(ca)) if !url.is_empty() && !token.is_empty() => {
                Ok(Connection {
                    url: url.to_owned(),
                    token: token.to_owned(),
                    ca_file: PathBuf::from(ca),
                })
            }
            _ => Err(format!("not `url|token|ca-file`: {target}")),
        }
    }

    /// A kubeconfig (as JSON, which kubeconfig readers take as YAML) reaching the server
    /// with this token and CA file, its context's namespace `namespace`: for a process
    /// started with `--kubeconfig`.
    #[must_use]
    pub fn kubeconfig(&self, namespace: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {
                "server": self.url,
                "certificate-authority": self.ca_file.display().to_string(),
            }}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "test", "context": {
                "cluster": "test", "user": "admin", "namespace": namespace,
            }}],
            "current-context": "test",
        })
    }

    /// A client configuration: this server, trusting the CA file, with the bearer token, the
    /// default namespace `namespace`, and `timeout` as connect and read timeout.
    ///
    /// # Errors
    /// When the CA file cannot be read or the URL does not parse.
    pub async fn config(
        &self,
        namespace: &str,
        timeout: Option<Duration>,
    ) -> Result<kube::Config, String> {
        // A kubeconfig (JSON is YAML), so kube reads the CA file as it reads a user's.
        let kubeconfig = self.kubeconfig(namespace);
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string())
            .map_err(|e| format!("kubeconfig: {e}"))?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| format!("client configuration for {}: {e}", self.url))?;
        config.connect_timeout = timeout;
        config.read_timeout = timeout;
        Ok(config)
    }

    /// A client of this server; see [`config`](Self::config).
    ///
    /// # Errors
    /// As [`config`](Self::config), or when the client cannot be built.
    pub async fn client(
        &self,
        namespace: &str,
        timeout: Option<Duration>,
    ) -> Result<kube::Client, String> {
        let config = self.config(namespace, timeout).await?;
        kube::Client::try_from(config).map_err(|e| format!("kube client: {e}"))
    }

    /// Waits until the server answers `ok` on `/readyz`, at most `limit`; returns how long
    /// that took.
    ///
    /// # Errors
    /// When it did not within `limit` (with the last answer or error).
    pub async fn wait_ready(&self, limit: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        let mut client = None;
        let mut last = String::from("no answer yet");
        loop {
            // The CA file appears when the server has generated its certificate.
            if client.is_none() && self.ca_file.exists() {
                match self.client("default", Some(Duration::from_secs(2))).await {
                    Ok(c) => client = Some(c),
                    Err(e) => last = e,
                }
            }
            if let Some(c) = &client {
                let request = http::Request::get("/readyz")
                    .body(Vec::new())
                    .map_err(|e| e.to_string())?;
                match c.request_text(request).await {
                    Ok(text) if text.trim() == "ok" => return Ok(start.elapsed()),
                    Ok(text) => last = text,
                    Err(e) => last = e.to_string(),
                }
            }
            if start.elapsed() >= limit {
                return Err(format!("{} not ready within {limit:?}: {last}", self.url));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The directory of the `kube-apiserver` and `etcd` binaries: [`BIN_VAR`].
///
/// # Errors
/// When it is not set or a binary is missing, naming the file and how to build it.
pub fn binaries() -> Result<PathBuf, String> {
    let build = "build them with `bash scripts/reference.sh` (scripts/servers.sh sets \
                 KUBE_REFERENCE_BIN)";
    let dir = std::env::var_os(BIN_VAR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("{BIN_VAR} is not set: no kube-apiserver and etcd; {build}"))?;
    for name in ["kube-apiserver", "etcd"] {
        let file = dir.join(name);
        if !file.is_file() {
            return Err(format!("{} is missing; {build}", file.display()));
        }
    }
    Ok(dir)
}

/// `kube-apiserver` and its `etcd`, started for one test on free loopback ports, with their
/// data in a temporary directory (removed when this is dropped or the test process ends).
/// Both are stopped with `SIGKILL` (a crash); their data survives for a restart.
pub struct KubeApiServer {
    // Dropped in this order: the API server first, then its etcd (which removes the directory).
    apiserver: ServerProcess,
    etcd: ServerProcess,
    etcd_port: u16,
    connection: Connection,
    etcd_endpoint: String,
    dir: PathBuf,
}

impl std::fmt::Debug for KubeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeApiServer")
            .field("url", &self.connection.url)
            .field("etcd", &self.etcd_endpoint)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// How long a fresh server may take to become ready (about 3 s on an idle 2-core machine).
const START_LIMIT: Duration = Duration::from_secs(60);

impl KubeApiServer {
    /// Starts etcd and kube-apiserver from [`binaries`] and waits until the API server is
    /// ready (again on other ports when a port was taken meanwhile, three tries).
    ///
    /// # Errors
    /// When a binary is missing, `openssl` fails, or the server does not become ready.
    pub async fn start() -> Result<KubeApiServer, String> {
        let bin = binaries()?;
        let mut last = String::new();
        for _ in 0..3 {
            let b = bin.clone();
            let server = tokio::task::spawn_blocking(move || Self::spawn(&b))
                .await
                .map_err(|e| e.to_string())??;
            // A port taken between `free_port` and the server's bind ends the server at once,
            // and it would never be ready: give up on it as soon as its log says so.
            let ready = tokio::select! {
                r = server.connection.wait_ready(START_LIMIT) => r.map(|_| ()),
                busy = server.port_taken() => Err(busy),
            };
            match ready {
                Ok(()) => return Ok(server),
                Err(e) => last = format!("{e}; log: {}", server.log_tail()),
            }
        }
        Err(last)
    }

    /// Resolves once a log of the server or its etcd says that a port was taken.
    async fn port_taken(&self) -> String {
        loop {
            for log in ["kube-apiserver.log", "etcd.log"] {
                let text = std::fs::read_to_string(self.dir.join(log)).unwrap_or_default();
                if let Some(line) = text.lines().find(|l| l.contains("address already in use")) {
                    return format!("{log}: {line}");
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn spawn(bin: &Path) -> Result<KubeApiServer, String> {
        let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("kube-apiserver"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let key = dir.join("sa.key");
        let out = std::process::Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&key)
            .arg("2048")
            .output()
            .map_err(|e| format!("openssl (Debian package openssl): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "openssl genrsa: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let token = random_token()?;
        std::fs::write(
            dir.join("tokens.csv"),
            format!("{token},lease-elect-admin,lease-elect-admin,system:masters\n"),
        )
        .map_err(|e| e.to_string())?;
        let (etcd_port, peer_port, port) = (free_port(), free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let path = |p: &str| dir.join(p).display().to_string();
        let etcd = ServerProcess::start(
            ServerCommand::new(bin.join("etcd"))
                .args([
                    "--name",
                    "kube",
                    "--data-dir",
                    &path("etcd"),
                    "--listen-client-urls",
                    &client_url,
                    "--advertise-client-urls",
                    &client_url,
                    "--listen-peer-urls",
                    &peer_url,
                    "--initial-advertise-peer-urls",
                    &peer_url,
                    "--initial-cluster",
                    &format!("kube={peer_url}"),
                    "--unsafe-no-fsync",
                    "--log-level",
                    "error",
                ])
                .log(dir.join("etcd.log"))
                .stop_signal(StopSignal::Kill)
                .remove_on_exit(&dir),
        )
        .map_err(|e| format!("start etcd: {e}"))?;
        let apiserver = ServerProcess::start(
            ServerCommand::new(bin.join("kube-apiserver"))
                .args([
                    format!("--etcd-servers={client_url}"),
                    "--bind-address=127.0.0.1".to_owned(),
                    format!("--secure-port={port}"),
                    format!("--cert-dir={}", path("certs")),
                    format!("--token-auth-file={}", path("tokens.csv")),
                    "--authorization-mode=RBAC".to_owned(),
                    "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
                    format!("--service-account-key-file={}", path("sa.key")),
                    format!("--service-account-signing-key-file={}", path("sa.key")),
                    "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
                    "--disable-admission-plugins=ServiceAccount".to_owned(),
                ])
                .log(dir.join("kube-apiserver.log"))
                .stop_signal(StopSignal::Kill),
        )
        .map_err(|e| format!("start kube-apiserver: {e}"))?;
        Ok(KubeApiServer {
            apiserver,
            etcd,
            etcd_port,
            connection: Connection {
                url: format!("https://127.0.0.1:{port}"),
                token,
                ca_file: dir.join("certs").join("apiserver.crt"),
            },
            etcd_endpoint: client_url,
            dir,
        })
    }

    /// How to reach the API server.
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The endpoint of its etcd (`http://127.0.0.1:PORT`).
    #[must_use]
    pub fn etcd_endpoint(&self) -> &str {
        &self.etcd_endpoint
    }

    /// Kills kube-apiserver (`SIGKILL`) and waits until it is gone. Blocks briefly.
    pub fn kill(&mut self) {
        self.apiserver.stop();
    }

    /// Starts kube-apiserver again and waits until it is ready, at most `limit`; returns how
    /// long that took from the start.
    ///
    /// # Errors
    /// When it cannot be started or does not become ready.
    pub async fn restart(&mut self, limit: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        self.apiserver
            .restart()
            .map_err(|e| format!("restart kube-apiserver: {e}"))?;
        self.connection
            .wait_ready(limit.saturating_sub(start.elapsed()))
            .await
            .map_err(|e| format!("{e}; log: {}", self.log_tail()))?;
        Ok(start.elapsed())
    }

    /// Kills the API server's etcd (`SIGKILL`) and waits until it is gone; the API server
    /// stays up. Blocks briefly.
    pub fn kill_etcd(&mut self) {
        self.etcd.stop();
    }

    /// Starts etcd again (its data kept) and waits until it accepts connections, at most
    /// `limit`.
    ///
    /// # Errors
    /// When it cannot be started or does not listen within `limit`.
    pub fn restart_etcd(&mut self, limit: Duration) -> Result<(), String> {
        self.etcd
            .restart()
            .map_err(|e| format!("restart etcd: {e}"))?;
        wait_for_port(self.etcd_port, limit).map_err(|e| format!("etcd did not start: {e}"))
    }

    /// The last lines of kube-apiserver's log, for error messages.
    #[must_use]
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("kube-apiserver.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }
}

/// 24 random bytes from the system, in hex.
fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
