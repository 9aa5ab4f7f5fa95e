//! Prometheus metrics of electors (feature `metrics`).
//!
//! The metrics go through [`prometheus-client`](https://docs.rs/prometheus-client), the
//! Prometheus project's own Rust client: it encodes OpenMetrics text as Prometheus scrapes it,
//! keeps its metrics in a registry the application owns (no process-global state, so several
//! elections, tests and libraries do not collide), and depends on nothing beyond a few small
//! crates. The `prometheus` crate (the older TiKV client) needs a global default registry or
//! `protobuf`; the `metrics` facade needs a recorder installed process-wide and an exporter
//! crate on top. With `prometheus-client` a library can hand out its metric families and let
//! the application register them where it serves `/metrics`.
//!
//! # The metrics
//! All carry the label `name`: the election's [name](crate::ElectionConfigBuilder::name).
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `leader_election_master_status` | gauge | 1 while this elector leads, 0 otherwise (client-go's name and meaning; here also 0 before the elector first leads, where client-go has no sample yet) |
//! | `leader_election_slowpath_total` | counter | renewals by the leader that had to read the record first because the optimistic write failed (client-go's name and meaning) |
//! | `leader_election_transitions_total` | counter | leadership terms this elector started; summed over an election's replicas, the number of times leadership changed hands |
//! | `leader_election_renew_duration_seconds` | histogram | how long the leader's successful renewals took, on the elector's clock |
//! | `leader_election_renew_failures_total` | counter | renewal attempts of the leader that did not renew: an error, a timeout, or another holder found |
//!
//! ```
//! use lease_elect::{ElectionConfig, ElectionMetrics, LeaderElector, MemoryLock, MemoryStore};
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let metrics = ElectionMetrics::new();
//! metrics.register(&mut registry);
//! let store = MemoryStore::new("example");
//! let config = ElectionConfig::builder()
//!     .lock(MemoryLock::new(&store, "a"))
//!     .name("my-controller")
//!     .metrics(&metrics)
//!     .build()?;
//! let _elector = LeaderElector::new(config);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry)?;
//! assert!(text.contains("leader_election_master_status{name=\"my-controller\"} 0"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

#[cfg(feature = "metrics")]
pub use enabled::ElectionMetrics;

/// What the elector reports; does nothing without the feature or without metrics configured.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    #[cfg(feature = "metrics")]
    inner: Option<(ElectionMetrics, enabled::NameLabel)>,
}

impl Hooks {
    #[cfg(feature = "metrics")]
    pub(crate) fn new(metrics: Option<ElectionMetrics>, name: &str) -> Self {
        Hooks {
            inner: metrics.map(|m| {
                (
                    m,
                    enabled::NameLabel {
                        name: name.to_owned(),
                    },
                )
            }),
        }
    }

    /// The elector leads (`true`) or does not.
    pub(crate) fn leading(&self, on: bool) {
        #[cfg(feature = "metrics")]
        if let Some((m, l)) = &self.inner {
            m.master_status.get_or_create(l).set(i64::from(on));
        }
        #[cfg(not(feature = "metrics"))]
        let _ = on;
    }

    /// A term started.
    pub(crate) fn transition(&self) {
        #[cfg(feature = "metrics")]
        if let Some((m, l)) = &self.inner {
            m.transitions.get_or_create(l).inc();
        }
    }

    /// The leader renewed through a read (client-go's slow path).
    pub(crate) fn slowpath(&self) {
        #[cfg(feature = "metrics")]
        if let Some((m, l)) = &self.inner {
            m.slowpath.get_or_create(l).inc();
        }
    }

    /// A renewal succeeded after `took`.
    pub(crate) fn renewed(&self, took: Duration) {
        #[cfg(feature = "metrics")]
        if let Some((m, l)) = &self.inner {
            m.renew_duration
                .get_or_create(l)
                .observe(took.as_secs_f64());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = took;
    }

    /// A renewal attempt did not renew.
    pub(crate) fn renew_failed(&self) {
        #[cfg(feature = "metrics")]
        if let Some((m, l)) = &self.inner {
            m.renew_failures.get_or_create(l).inc();
        }
    }
}

#[cfg(feature = "metrics")]
mod enabled {
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
    use prometheus_client::registry::Registry;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    pub(crate) struct NameLabel {
        pub(crate) name: String,
    }

    fn renew_histogram() -> Histogram {
        // 1 ms to about 16 s.
        Histogram::new(exponential_buckets(0.001, 2.0, 15))
    }

    /// The metric families of electors: create one, [`register`](Self::register) it where
    /// the application serves its metrics, and hand it to every elector's configuration
    /// ([`ElectionConfigBuilder::metrics`](crate::ElectionConfigBuilder::metrics)). Electors
    /// of different elections share it and are told apart by the `name` label. Cheap to
    /// clone; clones share the families. See the [module docs](crate::metrics) for the
    /// metrics.
    #[derive(Clone, Debug)]
    pub struct ElectionMetrics {
        pub(super) master_status: Family<NameLabel, Gauge>,
        pub(super) slowpath: Family<NameLabel, Counter>,
        pub(super) transitions: Family<NameLabel, Counter>,
        pub(super) renew_duration: Family<NameLabel, Histogram, fn() -> Histogram>,
        pub(super) renew_failures: Family<NameLabel, Counter>,
    }

    impl Default for ElectionMetrics {
        fn default() -> Self {
            Self::new()
        }
    }

    impl ElectionMetrics {
        /// New, empty metric families.
        #[must_use]
        pub fn new() -> Self {
            ElectionMetrics {
                master_status: Family::default(),
                slowpath: Family::default(),
                transitions: Family::default(),
                renew_duration: Family::new_with_constructor(renew_histogram as fn() -> Histogram),
                renew_failures: Family::default(),
            }
        }

        /// Registers the families in `registry` (a counter's `_total` suffix is added by the
        /// encoder).
        pub fn register(&self, registry: &mut Registry) {
            registry.register(
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
                self.master_status.clone(),
            );
            registry.register(
                "leader_election_slowpath",
                "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name",
                self.slowpath.clone(),
            );
            registry.register(
                "leader_election_transitions",
                "Total number of leadership terms this elector started",
                self.transitions.clone(),
            );
            registry.register(
                "leader_election_renew_duration_seconds",
                "Duration of the leader's successful lease renewals",
                self.renew_duration.clone(),
            );
            registry.register(
                "leader_election_renew_failures",
                "Total number of the leader's renewal attempts that did not renew the lease",
                self.renew_failures.clone(),
            );
        }
    }
}
