//! Prometheus metrics of the driver (feature `metrics`), with kube-scheduler's names, label
//! values and buckets (`pkg/scheduler/metrics/metrics.go`).
//!
//! As lease-elect's metrics, they go through
//! [`prometheus-client`](https://docs.rs/prometheus-client): the application owns the
//! registry, creates a [`SchedulerMetrics`], registers it where it serves `/metrics` and hands
//! it to the driver ([`DriverBuilder::metrics`](crate::DriverBuilder::metrics)).
//!
//! # The metrics
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `scheduler_schedule_attempts_total` | counter | `result` (`scheduled`, `unschedulable`, `error`), `profile` | scheduling attempts by their result, as kube counts them: `scheduled` once the binding succeeded, `error` for a failed binding, a Reserve error or a scheduling error, `unschedulable` when no node fits (preemption or not), a Permit plugin rejected or its wait timed out |
//! | `scheduler_scheduling_attempt_duration_seconds` | histogram | `result`, `profile` | an attempt's duration: the scheduling cycle, and for a placed pod also its Permit wait and binding (kube's buckets: 1 ms doubling to about 16 s) |
//! | `scheduler_pending_pods` | gauge | `queue` (`active`, `backoff`, `unschedulable`, `gated`) | pods per queue after the driver's last engine call |
//! | `scheduler_preemption_attempts_total` | counter | | attempts that ran preemption: every `unschedulable` attempt that found no node (kube counts every DefaultPreemption PostFilter run; the engine does not say whether a profile preempts, so a profile without DefaultPreemption is counted too) |
//! | `scheduler_preemption_victims` | histogram | | victims per preemption (kube's buckets 1, 2, 4, ..., 64) |
//! | `scheduler_pod_scheduling_sli_duration_seconds` | histogram | `attempts` | from the first time the driver saw the pod pending to its successful binding, by the attempts it took (kube's buckets: 10 ms doubling to about 88 minutes) |
//!
//! Time is the driver's clock (tokio's, so a paused test runtime gives simulated durations).
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use sched_driver::metrics::SchedulerMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = SchedulerMetrics::new();
//! metrics.register(&mut registry);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry)?;
//! assert!(text.contains("scheduler_preemption_attempts_total 0"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

use sched_core::scheduler::QueueCounts;

#[cfg(feature = "metrics")]
pub use enabled::SchedulerMetrics;

/// An attempt's result (kube's `result` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Scheduled,
    Unschedulable,
    Error,
}

/// What the driver reports; does nothing without the feature or without metrics configured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hooks {
    #[cfg(feature = "metrics")]
    pub(crate) inner: Option<SchedulerMetrics>,
}

impl Hooks {
    /// An attempt of `profile` ended with `outcome` after `took`.
    pub(crate) fn attempt(&self, outcome: Outcome, profile: &str, took: Duration) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            let l = enabled::AttemptLabels {
                result: match outcome {
                    Outcome::Scheduled => "scheduled",
                    Outcome::Unschedulable => "unschedulable",
                    Outcome::Error => "error",
                },
                profile: profile.to_owned(),
            };
            m.attempts.get_or_create(&l).inc();
            m.attempt_duration
                .get_or_create(&l)
                .observe(took.as_secs_f64());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (outcome, profile, took);
    }

    /// Preemption ran; it chose `victims` victims (`None`: it found no node).
    pub(crate) fn preemption(&self, victims: Option<usize>) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.preemption_attempts.inc();
            if let Some(n) = victims {
                m.preemption_victims.observe(n as f64);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = victims;
    }

    /// The queue's sizes.
    pub(crate) fn pending(&self, counts: &QueueCounts) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            for (queue, n) in [
                ("active", counts.active),
                ("backoff", counts.backoff),
                ("unschedulable", counts.unschedulable),
                ("gated", counts.gated),
            ] {
                m.pending
                    .get_or_create(&enabled::QueueLabel { queue })
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = counts;
    }

    /// A pod was bound `took` after the driver first saw it pending, in `attempts` attempts.
    pub(crate) fn scheduled(&self, attempts: u32, took: Duration) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.inner {
            m.sli
                .get_or_create(&enabled::AttemptsLabel {
                    attempts: attempts.to_string(),
                })
                .observe(took.as_secs_f64());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (attempts, took);
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
    pub(crate) struct AttemptLabels {
        pub(crate) result: &'static str,
        pub(crate) profile: String,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    pub(crate) struct QueueLabel {
        pub(crate) queue: &'static str,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    pub(crate) struct AttemptsLabel {
        pub(crate) attempts: String,
    }

    fn attempt_histogram() -> Histogram {
        // kube: ExponentialBuckets(0.001, 2, 15).
        Histogram::new(exponential_buckets(0.001, 2.0, 15))
    }

    fn sli_histogram() -> Histogram {
        // kube: ExponentialBuckets(0.01, 2, 20).
        Histogram::new(exponential_buckets(0.01, 2.0, 20))
    }

    type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

    /// The metric families of a scheduling driver: create one,
    /// [`register`](Self::register) it where the application serves its metrics, and hand it
    /// to the driver ([`DriverBuilder::metrics`](crate::DriverBuilder::metrics)). Cheap to
    /// clone; clones share the families. See the [module docs](crate::metrics).
    #[derive(Clone, Debug)]
    pub struct SchedulerMetrics {
        pub(crate) attempts: Family<AttemptLabels, Counter>,
        pub(crate) attempt_duration: HistogramFamily<AttemptLabels>,
        pub(crate) pending: Family<QueueLabel, Gauge>,
        pub(crate) preemption_attempts: Counter,
        pub(crate) preemption_victims: Histogram,
        pub(crate) sli: HistogramFamily<AttemptsLabel>,
    }

    impl Default for SchedulerMetrics {
        fn default() -> Self {
            Self::new()
        }
    }

    impl SchedulerMetrics {
        /// New, empty metric families.
        #[must_use]
        pub fn new() -> Self {
            SchedulerMetrics {
                attempts: Family::default(),
                attempt_duration: Family::new_with_constructor(
                    attempt_histogram as fn() -> Histogram,
                ),
                pending: Family::default(),
                preemption_attempts: Counter::default(),
                // kube: ExponentialBuckets(1, 2, 7).
                preemption_victims: Histogram::new(exponential_buckets(1.0, 2.0, 7)),
                sli: Family::new_with_constructor(sli_histogram as fn() -> Histogram),
            }
        }

        /// Registers the families in `registry` (a counter's `_total` suffix is added by the
        /// encoder), with kube's help texts.
        pub fn register(&self, registry: &mut Registry) {
            registry.register(
                "scheduler_schedule_attempts",
                "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
                self.attempts.clone(),
            );
            registry.register(
                "scheduler_scheduling_attempt_duration_seconds",
                "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
                self.attempt_duration.clone(),
            );
            registry.register(
                "scheduler_pending_pods",
                "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
                self.pending.clone(),
            );
            registry.register(
                "scheduler_preemption_attempts",
                "Total preemption attempts in the cluster till now",
                self.preemption_attempts.clone(),
            );
            registry.register(
                "scheduler_preemption_victims",
                "Number of selected preemption victims",
                self.preemption_victims.clone(),
            );
            registry.register(
                "scheduler_pod_scheduling_sli_duration_seconds",
                "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.",
                self.sli.clone(),
            );
        }
    }
}
