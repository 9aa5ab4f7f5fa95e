//! [`ProfileBuilder`]: a [`Profile`] assembled in code and validated once.

use std::fmt;
use std::sync::Arc;

use super::Profile;
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{BoxPredicate, BoxPriority, KubeVersion};

/// Why a profile could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A priority weight is zero or negative.
    #[error("priority {name:?} has weight {weight}; weights must be > 0")]
    NonPositiveWeight {
        /// Priority name.
        name: String,
        /// The weight given.
        weight: i64,
    },
    /// The sum of weight x 100 over all priorities overflows.
    #[error(
        "total priority weight overflows: the sum of weight x {MAX_NODE_SCORE} must fit in i64"
    )]
    WeightOverflow,
    /// percentageOfNodesToScore outside 0..=100.
    #[error("percentageOfNodesToScore {0} is out of range 0..=100")]
    Percentage(u32),
    /// Zero threads.
    #[error("threads must be at least 1")]
    ZeroThreads,
    /// Two plugins with one name.
    #[error("{kind} {name:?} is listed twice")]
    Duplicate {
        /// `predicate` or `priority`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// The filtering thread pool could not be started (the operating system refused the
    /// threads). Ask for one thread to filter on the calling thread only.
    #[error("starting {threads} filtering threads: {message}")]
    ThreadPool {
        /// Threads asked for.
        threads: usize,
        /// The thread pool's error.
        message: String,
    },
}

/// Builds a [`Profile`] in code; [`crate::policy::Policy::builder`] starts one from a Policy
/// document. Setters take and return the builder; [`ProfileBuilder::build`] validates.
///
/// ```
/// use sched_core::framework::{predicate_fn, priority_fn};
/// use sched_core::profile::Profile;
/// let profile = Profile::builder()
///     .predicate(predicate_fn("Always", |_, _| Ok(())))
///     .priority(priority_fn("Flat", |_, _| 50), 2)
///     .percentage_of_nodes_to_score(100)
///     .threads(1)
///     .seed(7)
///     .build()?;
/// assert_eq!(profile.priority_weights().collect::<Vec<_>>(), [("Flat", 2)]);
/// # Ok::<(), sched_core::profile::BuildError>(())
/// ```
#[must_use]
pub struct ProfileBuilder {
    predicates: Vec<BoxPredicate>,
    priorities: Vec<(BoxPriority, i64)>,
    always_check_all_predicates: bool,
    percentage_of_nodes_to_score: u32,
    threads: usize,
    parallel_threshold: usize,
    fast_path: bool,
    filter_lead: bool,
    seed: Option<u64>,
    version: KubeVersion,
}

impl fmt::Debug for ProfileBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProfileBuilder")
            .field("predicates", &self.predicates)
            .field("priorities", &self.priorities)
            .field(
                "always_check_all_predicates",
                &self.always_check_all_predicates,
            )
            .field(
                "percentage_of_nodes_to_score",
                &self.percentage_of_nodes_to_score,
            )
            .field("threads", &self.threads)
            .field("fast_path", &self.fast_path)
            .field("seed", &self.seed)
            .field("version", &self.version)
            .finish()
    }
}

impl Default for ProfileBuilder {
    fn default() -> Self {
        ProfileBuilder {
            predicates: Vec::new(),
            priorities: Vec::new(),
            always_check_all_predicates: false,
            percentage_of_nodes_to_score: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            parallel_threshold: 2_000,
            fast_path: true,
            filter_lead: true,
            seed: None,
            version: KubeVersion::default(),
        }
    }
}

impl ProfileBuilder {
    /// An empty pipeline (no predicates, no priorities), adaptive percentage, one filtering
    /// thread per core.
    pub fn new() -> Self {
        ProfileBuilder::default()
    }

    /// Adds a predicate (a plugin, or a [`BoxPredicate`] shared with other profiles);
    /// predicates run in the order added.
    pub fn predicate(mut self, p: impl Into<BoxPredicate>) -> Self {
        self.predicates.push(p.into());
        self
    }

    /// Adds a priority (a plugin, or a [`BoxPriority`]) with a weight (> 0).
    pub fn priority(mut self, p: impl Into<BoxPriority>, weight: i64) -> Self {
        self.priorities.push((p.into(), weight));
        self
    }

    /// Check every predicate on a node even after one failed (kube's alwaysCheckAllPredicates),
    /// so explanations list every reason.
    pub fn always_check_all_predicates(mut self, on: bool) -> Self {
        self.always_check_all_predicates = on;
        self
    }

    /// percentageOfNodesToScore: 0 = adaptive, 100 = all nodes.
    pub fn percentage_of_nodes_to_score(mut self, pct: u32) -> Self {
        self.percentage_of_nodes_to_score = pct;
        self
    }

    /// Number of filtering threads (default: available cores), shared by every worker of the
    /// profile.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// Clusters smaller than this are filtered on the calling thread only (thread hand-off
    /// costs more than it saves there). Default 2,000 nodes.
    pub fn parallel_threshold(mut self, nodes: usize) -> Self {
        self.parallel_threshold = nodes;
        self
    }

    /// Whether built-in plugins may run through the fast path (fused passes over the
    /// snapshot's per-node columns); default on. Off, every plugin runs through its `filter`
    /// and `score`: the decisions are the same, only slower (tests compare the two).
    pub fn fast_path(mut self, on: bool) -> Self {
        self.fast_path = on;
        self
    }

    /// Whether the filter pass may run first, on every node, a predicate that rejected most
    /// nodes of the nodes filtered before (DynamicResources for a pod whose claims are
    /// allocated on one node, NodeResourcesFit for a large pod), leaving the reasons of the
    /// nodes it rejects to be found in order only if no node fits; default on. Off, every
    /// node runs the predicates in order: the decisions and explanations are the same, only
    /// slower (tests compare the two).
    pub fn filter_lead(mut self, on: bool) -> Self {
        self.filter_lead = on;
        self
    }

    /// Seeds the tie-breaking RNG (ChaCha8) of the caches [`Profile::create_cache`] makes,
    /// making runs reproducible. Without a seed each cache is seeded from the OS.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The kube-scheduler release whose reason texts explanations use (default: the current
    /// one, [`KubeVersion::V1_34`]; a legacy Policy sets [`KubeVersion::V1_20`]).
    pub fn kube_version(mut self, version: KubeVersion) -> Self {
        self.version = version;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// A [`BuildError`] for a weight, percentage or thread count out of range, two plugins with
    /// one name, or a thread pool the OS refused.
    pub fn build(self) -> Result<Profile, BuildError> {
        if self.percentage_of_nodes_to_score > 100 {
            return Err(BuildError::Percentage(self.percentage_of_nodes_to_score));
        }
        if self.threads == 0 {
            return Err(BuildError::ZeroThreads);
        }
        let mut total: i64 = 0;
        for (p, w) in &self.priorities {
            if *w <= 0 {
                return Err(BuildError::NonPositiveWeight {
                    name: p.name().to_string(),
                    weight: *w,
                });
            }
            total = w
                .checked_mul(MAX_NODE_SCORE)
                .and_then(|x| total.checked_add(x))
                .ok_or(BuildError::WeightOverflow)?;
        }
        for (i, p) in self.predicates.iter().enumerate() {
            if self.predicates[..i].iter().any(|q| q.name() == p.name()) {
                return Err(BuildError::Duplicate {
                    kind: "predicate",
                    name: p.name().to_string(),
                });
            }
        }
        for (i, (p, _)) in self.priorities.iter().enumerate() {
            if self.priorities[..i]
                .iter()
                .any(|(q, _)| q.name() == p.name())
            {
                return Err(BuildError::Duplicate {
                    kind: "priority",
                    name: p.name().to_string(),
                });
            }
        }
        let pool = if self.threads > 1 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads)
                .thread_name(|i| format!("sched-filter-{i}"))
                .build()
                .map_err(|e| BuildError::ThreadPool {
                    threads: self.threads,
                    message: e.to_string(),
                })?;
            Some(Arc::new(pool))
        } else {
            None
        };
        Ok(Profile {
            predicates: self.predicates,
            priorities: self.priorities,
            always_check_all_predicates: self.always_check_all_predicates,
            percentage_of_nodes_to_score: self.percentage_of_nodes_to_score,
            threads: self.threads,
            parallel_threshold: self.parallel_threshold,
            fast_path: self.fast_path,
            filter_lead: self.filter_lead,
            pool,
            seed: self.seed,
            version: self.version,
        })
    }
}
