//! [`ExtenderConfig`]: one entry of a configuration's `extenders` (kube's `Extender`).

use std::time::Duration;

/// One extender of a `KubeSchedulerConfiguration` (kube's `Extender`), as
/// [`crate::config::SchedulerConfiguration`] reads it, or built in code.
///
/// ```
/// use std::time::Duration;
/// use sched_core::extender::ExtenderConfig;
/// let c = ExtenderConfig::new("http://127.0.0.1:8888/scheduler")
///     .filter_verb("filter")
///     .prioritize_verb("prioritize", 2)
///     .http_timeout(Duration::from_secs(1))
///     .managed_resource("example.com/gpu", false);
/// assert_eq!(c.weight, 2);
/// assert_eq!(c.managed_resource_names(), ["example.com/gpu"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtenderConfig {
    /// `urlPrefix`: the verbs are POSTed to `urlPrefix/verb`.
    pub url_prefix: String,
    /// `filterVerb` (empty: the extender does not filter).
    pub filter_verb: String,
    /// `preemptVerb` (empty: the extender does not take part in preemption).
    pub preempt_verb: String,
    /// `prioritizeVerb` (empty: the extender does not score).
    pub prioritize_verb: String,
    /// `weight`: the extender's scores are multiplied by it (positive when it scores).
    pub weight: i64,
    /// `bindVerb` (empty: the extender does not bind; at most one extender binds).
    pub bind_verb: String,
    /// `enableHTTPS`: as in kube, without a CA (`caFile`, `caData`) the server's certificate
    /// is not verified.
    pub enable_https: bool,
    /// `tlsConfig`.
    pub tls_config: Option<ExtenderTlsConfig>,
    /// `httpTimeout`; zero means kube's default of 5 seconds.
    pub http_timeout: Duration,
    /// `nodeCacheCapable`: send and receive node names instead of Node objects.
    pub node_cache_capable: bool,
    /// `managedResources`: the extender is asked only about pods that request or limit one
    /// of them (all pods when empty).
    pub managed_resources: Vec<ManagedResource>,
    /// `ignorable`: an error of this extender is skipped instead of failing the attempt.
    pub ignorable: bool,
}

/// An extended resource an extender manages (kube's `ExtenderManagedResource`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManagedResource {
    /// `name`: an extended resource name (`example.com/gpu`).
    pub name: String,
    /// `ignoredByScheduler`: NodeResourcesFit does not check the resource (a configuration
    /// puts it in every profile's `ignoredResources`, as kube does).
    pub ignored_by_scheduler: bool,
}

/// `tlsConfig` of an extender (kube's `ExtenderTLSConfig`). The `*Data` fields hold the
/// decoded PEM bytes (base64 in the configuration, as kube's `[]byte`).
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtenderTlsConfig {
    /// `insecure`: do not verify the server's certificate.
    pub insecure: bool,
    /// `serverName` (SNI and certificate name); refused by the HTTP clients (`HttpExtender`
    /// and sched-driver's), which check the URL's host instead.
    pub server_name: String,
    /// `certFile`: client certificate (PEM).
    pub cert_file: String,
    /// `keyFile`: client key (PEM).
    pub key_file: String,
    /// `caFile`: trusted root certificates (PEM).
    pub ca_file: String,
    /// `certData`: client certificate (PEM), takes precedence over `certFile`.
    pub cert_data: Vec<u8>,
    /// `keyData`: client key (PEM), takes precedence over `keyFile`.
    pub key_data: Vec<u8>,
    /// `caData`: trusted root certificates (PEM), takes precedence over `caFile`.
    pub ca_data: Vec<u8>,
}

impl std::fmt::Debug for ExtenderTlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("ExtenderTlsConfig")
            .field("insecure", &self.insecure)
            .field("server_name", &self.server_name)
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .field("ca_file", &self.ca_file)
            .field("cert_data", &self.cert_data.len())
            .field("key_data", &"<redacted>")
            .field("ca_data", &self.ca_data.len())
            .finish()
    }
}

impl ExtenderTlsConfig {
    /// An empty TLS configuration (verify with the system's web roots).
    pub fn new() -> ExtenderTlsConfig {
        ExtenderTlsConfig::default()
    }

    /// Sets `insecure`.
    #[must_use]
    pub fn insecure(mut self, insecure: bool) -> ExtenderTlsConfig {
        self.insecure = insecure;
        self
    }

    /// Sets `caData` (PEM).
    #[must_use]
    pub fn ca_data(mut self, pem: impl Into<Vec<u8>>) -> ExtenderTlsConfig {
        self.ca_data = pem.into();
        self
    }

    /// Sets `certData` and `keyData` (PEM).
    #[must_use]
    pub fn client_cert(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> ExtenderTlsConfig {
        self.cert_data = cert_pem.into();
        self.key_data = key_pem.into();
        self
    }
}

impl ExtenderConfig {
    /// An extender at `url_prefix` with no verbs (it neither filters, scores nor binds).
    pub fn new(url_prefix: impl Into<String>) -> ExtenderConfig {
        ExtenderConfig {
            url_prefix: url_prefix.into(),
            ..ExtenderConfig::default()
        }
    }

    /// Sets `filterVerb`.
    #[must_use]
    pub fn filter_verb(mut self, verb: impl Into<String>) -> ExtenderConfig {
        self.filter_verb = verb.into();
        self
    }

    /// Sets `prioritizeVerb` and `weight`.
    #[must_use]
    pub fn prioritize_verb(mut self, verb: impl Into<String>, weight: i64) -> ExtenderConfig {
        self.prioritize_verb = verb.into();
        self.weight = weight;
        self
    }

    /// Sets `bindVerb`.
    #[must_use]
    pub fn bind_verb(mut self, verb: impl Into<String>) -> ExtenderConfig {
        self.bind_verb = verb.into();
        self
    }

    /// Sets `preemptVerb`.
    #[must_use]
    pub fn preempt_verb(mut self, verb: impl Into<String>) -> ExtenderConfig {
        self.preempt_verb = verb.into();
        self
    }

    /// Sets `httpTimeout` (zero: kube's default of 5 seconds).
    #[must_use]
    pub fn http_timeout(mut self, timeout: Duration) -> ExtenderConfig {
        self.http_timeout = timeout;
        self
    }

    /// Sets `nodeCacheCapable`.
    #[must_use]
    pub fn node_cache_capable(mut self, on: bool) -> ExtenderConfig {
        self.node_cache_capable = on;
        self
    }

    /// Sets `ignorable`.
    #[must_use]
    pub fn ignorable(mut self, on: bool) -> ExtenderConfig {
        self.ignorable = on;
        self
    }

    /// Sets `enableHTTPS` and `tlsConfig`.
    #[must_use]
    pub fn https(mut self, tls: Option<ExtenderTlsConfig>) -> ExtenderConfig {
        self.enable_https = true;
        self.tls_config = tls;
        self
    }

    /// Adds a managed resource.
    #[must_use]
    pub fn managed_resource(
        mut self,
        name: impl Into<String>,
        ignored_by_scheduler: bool,
    ) -> ExtenderConfig {
        self.managed_resources.push(ManagedResource {
            name: name.into(),
            ignored_by_scheduler,
        });
        self
    }

    /// The managed resources' names.
    pub fn managed_resource_names(&self) -> Vec<String> {
        self.managed_resources
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    /// The timeout an HTTP client uses: `httpTimeout`, or 5 seconds when it is zero.
    pub fn effective_timeout(&self) -> Duration {
        if self.http_timeout.is_zero() {
            super::DEFAULT_EXTENDER_TIMEOUT
        } else {
            self.http_timeout
        }
    }
}

/// Go's `time.ParseDuration` for the non-negative durations of a configuration ("5s",
/// "1m30s", "250ms", "1.5h", "0"). `None` when the text is not a valid Go duration or is
/// negative.
pub(crate) fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        nanos = nanos.checked_add(whole.checked_mul(scale)?)?;
        if !frac.is_empty() {
            // Go truncates the fraction toward zero at nanosecond precision.
            let digits = &frac[..frac.len().min(30)];
            let f: u128 = digits.parse().ok()?;
            let denom = 10u128.checked_pow(digits.len() as u32)?;
            nanos = nanos.checked_add(f.checked_mul(scale)? / denom)?;
        }
        rest = after;
    }
    // Go's durations are int64 nanoseconds.
    if nanos > i64::MAX as u128 {
        return None;
    }
    Some(Duration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration(".5s"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_go_duration("1h2m3.5s"),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(parse_go_duration("10us"), Some(Duration::from_micros(10)));
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(parse_go_duration("5x"), None);
        assert_eq!(parse_go_duration(""), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("s"), None);
        assert_eq!(parse_go_duration("3000000h"), None);
    }
}
