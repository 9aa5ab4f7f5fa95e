//! Coordinated leader election (Kubernetes' KEP-4355), over any lock: candidates register
//! with their versions and the strategy they ask for, a coordinator reads the strategy from
//! them, picks the leader by it and writes the election's record: it creates the record for
//! the pick, gives a released or expired lease to the pick, and asks a live holder that is not
//! the pick to step down (`preferredHolder`). Coordinated electors
//! ([`ElectionConfigBuilder::coordinated`](crate::ElectionConfigBuilder::coordinated)) never
//! create the record nor take a free or expired lease themselves, so the first acquisition and
//! a take-over after a crash are the strategy's choice too; every elector honours
//! `preferredHolder` (see
//! [`LeaderElector::try_acquire_or_renew`](crate::LeaderElector::try_acquire_or_renew): the
//! holder steps down and releases, the preferred candidate takes over at once).
//!
//! This module holds the parts that do not depend on a backend: [`Candidate`] and
//! [`CandidateVersion`], the strategies ([`pick_strategy`], [`Strategy::pick`]), the registry
//! interface ([`CandidateStore`]) with an in-memory registry ([`MemoryCandidates`]) and one in
//! a directory ([`FileCandidates`]), and the [`Coordinator`], which is meant to run as the
//! leader's work of an election of its own (so exactly one coordinator writes at a time). The
//! backend crates have registries on their servers: `PostgresCandidates`, `EtcdCandidates`,
//! `RedisCandidates` and `LeaseCandidates` (LeaseCandidate objects).
//!
//! Where this differs from kube's coordinator (`pkg/controlplane/controller/leaderelection`,
//! as read in the revisions described in `docs/backends.md`): expiry of the election's lease is judged by the coordinator's own clock since it
//! last saw the holder write, not by `renewTime` against its wall clock; candidates renew
//! their registration well within the registry's time to live instead of every 5 minutes, so
//! the coordinator does not ping them (kube sets `pingTime` and waits 5 s for the renewals) and
//! a live registration counts as kube's acknowledged one; equal versions are ordered by
//! identity, not by the LeaseCandidate's creation time; an expired lease whose holder is still
//! the pick is written again for it (a fresh version the holder may take up), where kube leaves
//! it; a candidate whose versions do not parse is a corrupt registration (an error), where kube
//! skips it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::{Clock, Instant, LeaderElectionRecord, LeaderGuard, LockError, ResourceLock};

/// A `major.minor[.patch]` version, as in `binaryVersion` and `emulationVersion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CandidateVersion(pub u64, pub u64, pub u64);

/// A version string that is not `major.minor[.patch]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a major.minor[.patch] version: {0:?}")]
pub struct BadVersion(pub String);

impl FromStr for CandidateVersion {
    type Err = BadVersion;

    fn from_str(s: &str) -> Result<Self, BadVersion> {
        let bad = || BadVersion(s.to_owned());
        let mut parts = s.trim_start_matches('v').split('.');
        let mut next = |required: bool| -> Result<u64, BadVersion> {
            match parts.next() {
                Some(p) => p.parse().map_err(|_| bad()),
                None if required => Err(bad()),
                None => Ok(0),
            }
        };
        let v = CandidateVersion(next(true)?, next(true)?, next(false)?);
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(v)
    }
}

impl fmt::Display for CandidateVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// A candidate of a coordinated election (a LeaseCandidate's spec): its identity, versions
/// and the strategy it asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Candidate {
    /// The elector's identity.
    pub identity: String,
    /// The version the candidate emulates.
    pub emulation_version: CandidateVersion,
    /// The candidate's binary version.
    pub binary_version: CandidateVersion,
    /// The strategy the candidate asks for (LeaseCandidate's `spec.strategy`, a
    /// `CoordinatedLeaseStrategy` name such as `OldestEmulationVersion`); the coordinator
    /// reads the election's strategy from the candidates ([`pick_strategy`]).
    pub strategy: String,
}

/// A candidate's registration that cannot be read, or a strategy name that cannot be
/// stored (empty, or with white space).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad candidate {identity:?}: {detail}")]
pub struct BadCandidate {
    /// The candidate's identity.
    pub identity: String,
    /// What is wrong.
    pub detail: String,
}

impl Candidate {
    /// A candidate asking for [`Strategy::OldestEmulationVersion`].
    ///
    /// ```
    /// use lease_elect::coordinated::Candidate;
    ///
    /// let c = Candidate::new("kube-scheduler-a", "1.33".parse()?, "1.34".parse()?);
    /// assert_eq!(c.strategy, "OldestEmulationVersion");
    /// assert_eq!(c.to_spec(), "1.33.0 1.34.0 OldestEmulationVersion");
    /// let c = c.with_strategy("example.com/custom")?;
    /// assert_eq!(Candidate::from_spec("kube-scheduler-a", &c.to_spec())?, c);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn new(
        identity: impl Into<String>,
        emulation_version: CandidateVersion,
        binary_version: CandidateVersion,
    ) -> Self {
        Candidate {
            identity: identity.into(),
            emulation_version,
            binary_version,
            strategy: Strategy::OldestEmulationVersion.name().to_owned(),
        }
    }

    /// The same candidate asking for `strategy`.
    ///
    /// # Errors
    /// [`BadCandidate`] when the name is empty or contains white space.
    pub fn with_strategy(mut self, strategy: impl Into<String>) -> Result<Self, BadCandidate> {
        let strategy = strategy.into();
        if strategy.is_empty() || strategy.contains(char::is_whitespace) {
            return Err(BadCandidate {
                identity: self.identity,
                detail: format!("strategy {strategy:?} is empty or contains white space"),
            });
        }
        self.strategy = strategy;
        Ok(self)
    }

    /// The registration text the file, etcd and Redis registries store:
    /// `<emulation version> <binary version> <strategy>`.
    #[must_use]
    pub fn to_spec(&self) -> String {
        format!(
            "{} {} {}",
            self.emulation_version, self.binary_version, self.strategy
        )
    }

    /// Reads a registration written by [`to_spec`](Self::to_spec).
    ///
    /// # Errors
    /// [`BadCandidate`] when it has not three fields or a version does not parse.
    pub fn from_spec(identity: &str, spec: &str) -> Result<Self, BadCandidate> {
        let bad = |detail: String| BadCandidate {
            identity: identity.to_owned(),
            detail,
        };
        let fields: Vec<&str> = spec.split(' ').collect();
        let [e, b, strategy] = fields[..] else {
            return Err(bad(format!(
                "expected \"<emulation> <binary> <strategy>\", found {spec:?}"
            )));
        };
        let version = |v: &str| v.parse().map_err(|e: BadVersion| bad(e.to_string()));
        Candidate::new(identity, version(e)?, version(b)?).with_strategy(strategy)
    }
}

/// How the coordinator picks the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// KEP-4355's `OldestEmulationVersion`: the oldest emulation version, then the oldest
    /// binary version, then the smallest identity (kube takes the oldest LeaseCandidate
    /// object by creation time there; our registries keep no creation time, and the identity
    /// gives every coordinator the same answer). During a rolling upgrade the not yet
    /// upgraded candidates lead.
    OldestEmulationVersion,
}

impl Strategy {
    /// The name written as the record's `strategy`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Strategy::OldestEmulationVersion => "OldestEmulationVersion",
        }
    }

    /// The strategy of this name, `None` for a name this crate does not implement (kube's
    /// coordinator leaves such elections to another controller).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        (name == "OldestEmulationVersion").then_some(Strategy::OldestEmulationVersion)
    }

    /// The candidate this strategy makes leader, `None` when there is none.
    #[must_use]
    pub fn pick(self, candidates: &[Candidate]) -> Option<&Candidate> {
        match self {
            Strategy::OldestEmulationVersion => candidates.iter().min_by(|a, b| {
                (a.emulation_version, a.binary_version, &a.identity).cmp(&(
                    b.emulation_version,
                    b.binary_version,
                    &b.identity,
                ))
            }),
        }
    }
}

/// The candidates do not agree on the strategy ([`pick_strategy`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// There is no candidate to read a strategy from.
    #[error("no candidates")]
    NoCandidates,
    /// Two candidates at the highest binary version ask for different strategies (kube's
    /// message).
    #[error(
        "candidates {first:?}, {second:?} at same binary version but received differing strategies {first_strategy}, {second_strategy}"
    )]
    Conflict {
        /// The candidate whose strategy was taken first.
        first: String,
        /// The candidate that disagrees.
        second: String,
        /// The first one's strategy.
        first_strategy: String,
        /// The second one's strategy.
        second_strategy: String,
    },
}

/// The election's strategy, read from its candidates as kube's coordinator reads it
/// (`pickBestStrategy`): the strategy of the candidate with the highest binary version; two
/// candidates at that version with different strategies are a conflict, and no election
/// happens. As in kube, candidates are taken in the order given and a disagreement is only
/// seen against the highest binary version met so far (the coordinator passes them sorted
/// by identity).
///
/// ```
/// use lease_elect::coordinated::{Candidate, StrategyError, pick_strategy};
///
/// let old = Candidate::new("a", "1.32".parse()?, "1.32".parse()?);
/// let new = Candidate::new("b", "1.32".parse()?, "1.33".parse()?).with_strategy("foo.com/bar")?;
/// assert_eq!(pick_strategy(&[old.clone(), new])?, "foo.com/bar"); // the newest binary decides
/// let same = Candidate::new("c", "1.32".parse()?, "1.32".parse()?).with_strategy("foo.com/bar")?;
/// assert!(matches!(pick_strategy(&[old, same]), Err(StrategyError::Conflict { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`StrategyError`] when there is no candidate or the candidates disagree.
pub fn pick_strategy(candidates: &[Candidate]) -> Result<&str, StrategyError> {
    let (first, rest) = candidates
        .split_first()
        .ok_or(StrategyError::NoCandidates)?;
    let mut chosen = first;
    for c in rest {
        match chosen.binary_version.cmp(&c.binary_version) {
            std::cmp::Ordering::Less => chosen = c,
            std::cmp::Ordering::Equal if c.strategy != chosen.strategy => {
                return Err(StrategyError::Conflict {
                    first: chosen.identity.clone(),
                    second: c.identity.clone(),
                    first_strategy: chosen.strategy.clone(),
                    second_strategy: c.strategy.clone(),
                });
            }
            _ => {}
        }
    }
    Ok(&chosen.strategy)
}

/// Where candidates register: a candidate renews its registration periodically and removes it
/// when it stops; the coordinator lists the live ones.
#[async_trait]
pub trait CandidateStore: Send + Sync {
    /// Registers `candidate`, or renews its registration.
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError>;
    /// Removes the registration of `identity`.
    async fn deregister(&self, identity: &str) -> Result<(), LockError>;
    /// The candidates whose registration is live.
    async fn candidates(&self) -> Result<Vec<Candidate>, LockError>;
}

/// Registers `candidate` in `store` now and again every `every` on `clock`, forever (run it
/// beside the elector, and [`CandidateStore::deregister`] before the elector releases;
/// [`run_candidate`] does both). Keep
/// `every` well below the registry's time to live. Failed registrations are logged and
/// retried at the next period.
pub async fn keep_registered(
    store: &dyn CandidateStore,
    candidate: &Candidate,
    clock: &dyn Clock,
    every: Duration,
) {
    loop {
        if let Err(e) = store.register(candidate).await {
            tracing::warn!(error = %e, identity = %candidate.identity, "candidate registration failed");
        }
        clock.sleep(every).await;
    }
}

/// Runs `elector` (configured
/// [`coordinated`](crate::ElectionConfigBuilder::coordinated)) as a registered candidate
/// until `shutdown` resolves: keeps `candidate` registered in `store` every `every` (as
/// [`keep_registered`]) and runs elections one after another (a lost term is followed by a
/// new attempt). On `shutdown` it leaves in the order that hands the lease on at once:
///
/// 1. stop renewing the registration and deregister;
/// 2. then cancel the elector, which releases a lease it holds (with
///    [`release_on_cancel`](crate::ElectionConfigBuilder::release_on_cancel)).
///
/// The other order lets the coordinator see the released lease while the leaving
/// candidate is still registered and give the lease back to it; the next leader then waits
/// a whole lease for that grant to expire.
///
/// # Errors
/// The deregistration's error (the elector was stopped and released all the same; the
/// registration then lapses after the registry's time to live).
pub async fn run_candidate<C: crate::LeaderCallbacks + ?Sized>(
    elector: &crate::LeaderElector,
    callbacks: &C,
    store: &dyn CandidateStore,
    candidate: &Candidate,
    clock: &dyn Clock,
    every: Duration,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LockError> {
    let (leave, left) = tokio::sync::watch::channel(false);
    let registration = async {
        tokio::select! {
            biased;
            () = shutdown => {}
            () = keep_registered(store, candidate, clock, every) => {}
        }
        let deregistered = store.deregister(&candidate.identity).await;
        let _ = leave.send(true);
        deregistered
    };
    let elections = async {
        loop {
            let mut left = left.clone();
            let leaving = async move {
                let _ = left.wait_for(|l| *l).await;
            };
            if elector.run(callbacks, leaving).await == crate::RunOutcome::Cancelled {
                break;
            }
        }
    };
    let (deregistered, ()) = tokio::join!(registration, elections);
    deregistered
}

/// An in-memory [`CandidateStore`] shared by clones: a registration lives for `ttl` after
/// its last renewal on `clock`.
#[derive(Clone)]
pub struct MemoryCandidates {
    entries: Arc<Mutex<BTreeMap<String, (Candidate, Instant)>>>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
}

impl fmt::Debug for MemoryCandidates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCandidates")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl MemoryCandidates {
    /// An empty registry whose registrations live `ttl` on `clock`.
    #[must_use]
    pub fn new(clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        MemoryCandidates {
            entries: Arc::default(),
            clock,
            ttl,
        }
    }
}

#[async_trait]
impl CandidateStore for MemoryCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        let now = self.clock.now();
        crate::elector::locked(&self.entries)
            .insert(candidate.identity.clone(), (candidate.clone(), now));
        Ok(())
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        crate::elector::locked(&self.entries).remove(identity);
        Ok(())
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let now = self.clock.now();
        Ok(crate::elector::locked(&self.entries)
            .values()
            .filter(|(_, at)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(c, _)| c.clone())
            .collect())
    }
}

/// A [`CandidateStore`] in a directory, for electors on one machine (beside
/// [`FileLock`](crate::FileLock)): one file per candidate, `<identity>.candidate`, holding
/// `<emulation version> <binary version>`, live for a time to live after its last write (by the
/// file's modification time on the wall clock). The file holds [`Candidate::to_spec`]. Identities
/// must be valid file names.
#[derive(Clone, Debug)]
pub struct FileCandidates {
    dir: std::path::PathBuf,
    ttl: Duration,
}

impl FileCandidates {
    /// The candidates in `dir` (created when missing), each live for `ttl`.
    #[must_use]
    pub fn new(dir: impl Into<std::path::PathBuf>, ttl: Duration) -> Self {
        FileCandidates {
            dir: dir.into(),
            ttl,
        }
    }

    fn io(e: std::io::Error) -> LockError {
        LockError::retryable(e)
    }
}

#[async_trait]
impl CandidateStore for FileCandidates {
    async fn register(&self, candidate: &Candidate) -> Result<(), LockError> {
        std::fs::create_dir_all(&self.dir).map_err(Self::io)?;
        let path = self.dir.join(format!("{}.candidate", candidate.identity));
        let tmp = self
            .dir
            .join(format!(".{}.candidate.tmp", candidate.identity));
        std::fs::write(&tmp, candidate.to_spec()).map_err(Self::io)?;
        std::fs::rename(&tmp, &path).map_err(Self::io)
    }

    async fn deregister(&self, identity: &str) -> Result<(), LockError> {
        match std::fs::remove_file(self.dir.join(format!("{identity}.candidate"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(e)),
            _ => Ok(()),
        }
    }

    async fn candidates(&self) -> Result<Vec<Candidate>, LockError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Self::io(e)),
        };
        let now = std::time::SystemTime::now();
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(Self::io)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(identity) = name.strip_suffix(".candidate") else {
                continue;
            };
            if identity.starts_with('.') {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(Self::io)?;
            if now.duration_since(modified).unwrap_or_default() >= self.ttl {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).map_err(Self::io)?;
            out.push(
                Candidate::from_spec(identity, &text).map_err(|e| LockError::Corrupt {
                    detail: format!("candidate file {name:?}: {text:?}"),
                    source: Some(Box::new(e)),
                })?,
            );
        }
        Ok(out)
    }
}

/// What a [`Coordinator`] pass can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoordinatorError {
    /// The lock or the registry failed; a conflict means the record changed meanwhile (the
    /// next pass tries again).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The candidates disagree on the strategy: no election until they agree.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A lease duration the record cannot carry (under 1 s, a fraction of a second, or more
    /// than `u32::MAX` seconds).
    #[error("bad coordinator lease duration {0:?}: whole seconds, at least 1")]
    LeaseDuration(Duration),
}

#[derive(Debug, Default)]
struct Observed {
    /// The version last read and when this coordinator first saw it.
    version: Option<(crate::Version, Instant)>,
    /// The largest `leaderTransitions` seen.
    max_transitions: Option<u64>,
}

/// The coordinator of a coordinated election (the part of kube's leader-election controller
/// that runs in the API server): it reads the strategy from the live candidates
/// ([`pick_strategy`]), picks the leader by it and writes the election's record:
///
/// - no record: creates it with the pick as holder (the first acquisition);
/// - a record without holder (released), or one that has not changed for its lease duration
///   on the coordinator's own clock (its holder crashed): the pick becomes the holder, with a
///   fresh renew time and the coordinator's lease duration, `preferredHolder` cleared;
/// - a live holder that is not the pick: `preferredHolder` = the pick (the holder steps
///   down, the pick takes over); a live holder that is the pick: `preferredHolder` cleared.
///
/// Coordinated electors ([`ElectionConfigBuilder::coordinated`](crate::ElectionConfigBuilder::coordinated))
/// never take a free or expired lease themselves, so every term starts with the strategy's
/// choice. A candidate is live while its registration is (the registry's time to live):
/// a candidate that crashed without deregistering drops out after it, as kube's ignores a
/// LeaseCandidate that did not renew within the election window after a ping. Run it as the
/// leader's work of an election of its own ([`run`](Self::run)), so one coordinator writes
/// at a time.
pub struct Coordinator {
    lock: Arc<dyn ResourceLock>,
    candidates: Arc<dyn CandidateStore>,
    clock: Arc<dyn Clock>,
    lease_seconds: u32,
    observed: Mutex<Observed>,
}

impl fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("lock", &self.lock.describe())
            .field("lease_seconds", &self.lease_seconds)
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// The lease duration a coordinator writes by default: kube's 5 s.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(5);

    /// A coordinator of the election on `lock` (any handle of it) among the candidates in
    /// `candidates`, judging expiry on a [`TokioClock`](crate::TokioClock) and writing
    /// [`DEFAULT_LEASE_DURATION`](Self::DEFAULT_LEASE_DURATION).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use lease_elect::coordinated::{Candidate, CandidateStore, Coordinator, MemoryCandidates};
    /// use lease_elect::{MemoryLock, MemoryStore, ResourceLock, TokioClock};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
    /// let store = MemoryStore::new("kube-scheduler");
    /// let candidates = MemoryCandidates::new(Arc::new(TokioClock::new()), Duration::from_secs(10));
    /// candidates.register(&Candidate::new("b", "1.33".parse()?, "1.33".parse()?)).await?;
    /// candidates.register(&Candidate::new("a", "1.34".parse()?, "1.34".parse()?)).await?;
    /// let coordinator = Coordinator::new(
    ///     Arc::new(MemoryLock::new(&store, "coordinator")),
    ///     Arc::new(candidates),
    /// );
    /// assert_eq!(coordinator.reconcile().await?.as_deref(), Some("b")); // creates the record
    /// let (record, _) = MemoryLock::new(&store, "b").get().await?.expect("created");
    /// assert_eq!(record.holder_identity, "b");
    /// assert_eq!(record.strategy.as_deref(), Some("OldestEmulationVersion"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn new(lock: Arc<dyn ResourceLock>, candidates: Arc<dyn CandidateStore>) -> Self {
        Coordinator {
            lock,
            candidates,
            clock: Arc::new(crate::TokioClock::new()),
            lease_seconds: 5,
            observed: Mutex::default(),
        }
    }

    /// Judges expiry on `clock` (a [`SimClock`](crate::SimClock) in simulations).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The lease duration written with an assigned holder: how long the others wait for the
    /// pick to take the lease up before the coordinator assigns it again.
    ///
    /// # Errors
    /// [`CoordinatorError::LeaseDuration`] unless whole seconds, at least 1.
    pub fn with_lease_duration(mut self, lease: Duration) -> Result<Self, CoordinatorError> {
        let secs = u32::try_from(lease.as_secs()).ok().filter(|s| *s > 0);
        match secs {
            Some(secs) if lease.subsec_nanos() == 0 => {
                self.lease_seconds = secs;
                Ok(self)
            }
            _ => Err(CoordinatorError::LeaseDuration(lease)),
        }
    }

    /// One pass (kube's `reconcileElectionStep`, see the type's docs). Returns the pick,
    /// `None` when there is no live candidate or the strategy is not one this crate
    /// implements (the record's `strategy` is still written then; kube leaves such
    /// elections to another controller).
    ///
    /// # Errors
    /// [`CoordinatorError`]: the lock's or the registry's error, or candidates that disagree
    /// on the strategy (nothing is written then).
    pub async fn reconcile(&self) -> Result<Option<String>, CoordinatorError> {
        let mut candidates = self.candidates.candidates().await?;
        if candidates.is_empty() {
            return Ok(None);
        }
        candidates.sort_by(|a, b| a.identity.cmp(&b.identity));
        let strategy = pick_strategy(&candidates)?.to_owned();
        let pick = Strategy::from_name(&strategy)
            .and_then(|s| s.pick(&candidates))
            .map(|c| c.identity.clone());
        let now = self.clock.now();
        let wall = self.clock.wall();
        let Some((record, version)) = self.lock.get().await? else {
            let Some(pick) = pick else {
                return Ok(None);
            };
            let transitions = crate::elector::locked(&self.observed)
                .max_transitions
                .map_or(0, |t| t.saturating_add(1));
            let record = LeaderElectionRecord {
                holder_identity: pick.clone(),
                lease_duration_seconds: self.lease_seconds,
                acquire_time: None,
                renew_time: Some(wall),
                leader_transitions: transitions,
                strategy: Some(strategy),
                preferred_holder: None,
            };
            let v = self.lock.create(&record).await?;
            self.observe(&record, v, now);
            tracing::info!(lock = %self.lock.describe(), holder = %pick, "coordinator created the lease");
            return Ok(Some(pick));
        };
        let first_seen = self.observe(&record, version.clone(), now);
        let expired = now >= first_seen + record.lease_duration();
        let mut updated = LeaderElectionRecord {
            strategy: Some(strategy),
            ..record.clone()
        };
        if let Some(pick) = &pick {
            if !record.is_held() || expired {
                updated.holder_identity.clone_from(pick);
                updated.preferred_holder = None;
                updated.lease_duration_seconds = self.lease_seconds;
                updated.acquire_time = None;
                updated.renew_time = Some(wall);
            } else if record.holder_identity == *pick {
                updated.preferred_holder = None;
            } else {
                updated.preferred_holder = Some(pick.clone());
            }
        }
        if updated == record {
            return Ok(pick);
        }
        let v = self.lock.update(&version, &updated).await?;
        // Expiry runs from the holder's last write: a write that only changes
        // `preferredHolder` or `strategy` does not renew the holder's lease.
        let since = if updated.holder_identity == record.holder_identity
            && updated.renew_time == record.renew_time
        {
            first_seen
        } else {
            now
        };
        self.observe(&updated, v, since);
        tracing::info!(
            lock = %self.lock.describe(),
            holder = %updated.holder_identity,
            preferred = ?updated.preferred_holder,
            expired,
            "coordinator wrote the lease"
        );
        Ok(pick)
    }

    /// Records a read or written version (first seen at `now` when it is new); returns when
    /// this coordinator first saw it.
    fn observe(
        &self,
        record: &LeaderElectionRecord,
        version: crate::Version,
        now: Instant,
    ) -> Instant {
        let mut o = crate::elector::locked(&self.observed);
        o.max_transitions = Some(o.max_transitions.map_or(record.leader_transitions, |t| {
            t.max(record.leader_transitions)
        }));
        match &o.version {
            Some((v, at)) if *v == version => *at,
            _ => {
                o.version = Some((version, now));
                now
            }
        }
    }

    /// Reconciles every `period` on `clock` while `guard`'s term lasts: the leader's work of
    /// the coordinators' own election. Errors are logged and retried.
    pub async fn run(&self, guard: &LeaderGuard, clock: &dyn Clock, period: Duration) {
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::debug!(error = %e, "coordinator pass failed");
            }
            tokio::select! {
                biased;
                () = guard.lost() => return,
                () = clock.sleep(period) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, emulation: &str, binary: &str) -> Candidate {
        Candidate::new(id, emulation.parse().unwrap(), binary.parse().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn registrations_expire_unless_kept() {
        let clock: Arc<dyn Clock> = Arc::new(crate::TokioClock::new());
        let store = MemoryCandidates::new(Arc::clone(&clock), Duration::from_secs(10));
        let kept = c("kept", "1.33", "1.33");
        store.register(&c("once", "1.33", "1.33")).await.unwrap();
        let task = {
            let (store, kept, clock) = (store.clone(), kept.clone(), Arc::clone(&clock));
            tokio::spawn(async move {
                keep_registered(&store, &kept, &*clock, Duration::from_secs(3)).await;
            })
        };
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(store.candidates().await.unwrap(), vec![kept]);
        task.abort();
    }

    #[test]
    fn versions_parse() {
        assert_eq!("1.33".parse(), Ok(CandidateVersion(1, 33, 0)));
        assert_eq!("v1.34.2".parse(), Ok(CandidateVersion(1, 34, 2)));
        for bad in ["", "1", "1.x", "1.2.3.4"] {
            assert!(bad.parse::<CandidateVersion>().is_err(), "{bad}");
        }
    }

    #[test]
    fn oldest_emulation_then_binary_then_identity() {
        let s = Strategy::OldestEmulationVersion;
        let pick = |cs: &[Candidate]| s.pick(cs).map(|c| c.identity.clone());
        assert_eq!(pick(&[]), None);
        assert_eq!(
            pick(&[c("a", "1.34", "1.34"), c("b", "1.33", "1.34")]),
            Some("b".into())
        );
        assert_eq!(
            pick(&[c("a", "1.33", "1.34"), c("b", "1.33", "1.33")]),
            Some("b".into())
        );
        assert_eq!(
            pick(&[c("b", "1.33", "1.33"), c("a", "1.33", "1.33")]),
            Some("a".into())
        );
    }

    /// kube's `TestPickBestLeaderOldestEmulationVersion` (election_test.go), all 5 cases. The
    /// creation-timestamp case is decided by the identity here (candidate1 is both the older
    /// object and the smaller identity, so kube's expected pick stands).
    #[test]
    fn kube_pick_best_leader_oldest_emulation_version() {
        let s = Strategy::OldestEmulationVersion;
        let pick = |cs: &[Candidate]| s.pick(cs).map(|c| c.identity.clone());
        let cases: [(&str, Vec<Candidate>, Option<&str>); 5] = [
            ("empty", vec![], None),
            (
                "single candidate",
                vec![c("candidate1", "0.1.0", "0.1.0")],
                Some("candidate1"),
            ),
            (
                "multiple candidates, different emulation versions",
                vec![
                    c("candidate1", "0.1.0", "0.1.0"),
                    c("candidate2", "0.2.0", "0.2.0"),
                ],
                Some("candidate1"),
            ),
            (
                "multiple candidates, same emulation versions, different binary versions",
                vec![
                    c("candidate1", "0.1.0", "0.1.0"),
                    c("candidate2", "0.1.0", "0.2.0"),
                ],
                Some("candidate1"),
            ),
            (
                "multiple candidates, same emulation versions, same binary versions, different creation timestamps",
                vec![
                    c("candidate1", "0.1.0", "0.1.0"),
                    c("candidate2", "0.1.0", "0.1.0"),
                ],
                Some("candidate1"),
            ),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(pick(&candidates).as_deref(), want, "{name}");
        }
    }

    /// kube's `TestCompare`: the 5 cases whose versions a registry can hold (a missing
    /// version is kube's zero version, 0.0.0). Not ported: "invalid lhs/rhs version" (a
    /// registry refuses a version that does not parse) and "identical versions earlier
    /// timestamp" (no creation time; the identity decides).
    #[test]
    fn kube_compare() {
        let s = Strategy::OldestEmulationVersion;
        // -1: lhs better, 1: rhs better.
        let compare = |lhs: Candidate, rhs: Candidate| {
            if s.pick(&[lhs.clone(), rhs]) == Some(&lhs) {
                -1
            } else {
                1
            }
        };
        let cases = [
            (
                "no lhs version",
                ("0.0.0", "0.0.0"),
                ("1.20.0", "1.21.0"),
                -1,
            ),
            (
                "no rhs version",
                ("1.20.0", "1.21.0"),
                ("0.0.0", "0.0.0"),
                1,
            ),
            (
                "lhs less than rhs",
                ("1.19.0", "1.20.0"),
                ("1.20.0", "1.20.0"),
                -1,
            ),
            (
                "rhs less than lhs",
                ("1.20.0", "1.20.0"),
                ("1.19.0", "1.20.0"),
                1,
            ),
            (
                "lhs less than rhs, lexographical order check",
                ("1.2.0", "1.20.0"),
                ("1.19.0", "1.20.0"),
                -1,
            ),
        ];
        for (name, (le, lb), (re, rb), want) in cases {
            assert_eq!(compare(c("lhs", le, lb), c("rhs", re, rb)), want, "{name}");
        }
    }

    /// kube's `TestPickBestStrategy`, all 7 cases (a missing binary version is 0.0.0).
    #[test]
    fn kube_pick_best_strategy() {
        const OEV: &str = "OldestEmulationVersion";
        let cand = |name: &str, binary: &str, strategy: &str| {
            c(name, "0.0.0", binary).with_strategy(strategy).unwrap()
        };
        let cases: [(&str, Vec<Candidate>, Option<&str>); 7] = [
            (
                "single candidate, single preferred strategy",
                vec![cand("candidate1", "0.0.0", OEV)],
                Some(OEV),
            ),
            (
                "multiple candidates, different preferred strategies should fail",
                vec![
                    cand("candidate1", "0.0.0", OEV),
                    cand("candidate2", "0.0.0", "foo.com/bar"),
                ],
                None,
            ),
            (
                "multiple candidates, different preferred strategy different binary version should resolve",
                vec![
                    cand("candidate1", "1.32.0", OEV),
                    cand("candidate2", "1.31.0", "foo.com/bar"),
                ],
                Some(OEV),
            ),
            (
                "multiple candidates, different preferred strategy different binary version should resolve, order agnostic",
                vec![
                    cand("candidate2", "1.31.0", "foo.com/bar"),
                    cand("candidate1", "1.32.0", OEV),
                ],
                Some(OEV),
            ),
            (
                "multiple candidates, different preferred strategy different binary version string comparison check",
                vec![
                    cand("candidate1", "1.1.10", OEV),
                    cand("candidate2", "1.1.2", "foo.com/bar"),
                ],
                Some(OEV),
            ),
            (
                "multiple candidates, same preferred strategy",
                vec![
                    cand("candidate1", "1.31.0", OEV),
                    cand("candidate2", "1.31.0", OEV),
                ],
                Some(OEV),
            ),
            (
                "multiple candidates, conflicting preferred strategy",
                vec![
                    cand("candidate1", "1.31.0", OEV),
                    cand("candidate2", "1.31.0", "foo.com/bar"),
                ],
                None,
            ),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(pick_strategy(&candidates).ok(), want, "{name}");
        }
        assert_eq!(pick_strategy(&[]), Err(StrategyError::NoCandidates));
    }

    /// kube's `TestValidLeaseCandidateForOldestEmulationVersion`, all 3 cases, as the
    /// registration text a registry reads back: kube skips such a candidate, a registry here
    /// refuses it.
    #[test]
    fn kube_valid_lease_candidate_for_oldest_emulation_version() {
        let cases = [
            (
                "valid emulation and binary versions",
                "0.1.0 0.1.0 OldestEmulationVersion",
                true,
            ),
            (
                "invalid emulation version",
                "invalid 0.1.0 OldestEmulationVersion",
                false,
            ),
            (
                "invalid binary version",
                "0.1.0 invalid OldestEmulationVersion",
                false,
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(Candidate::from_spec("c", spec).is_ok(), want, "{name}");
        }
        assert!(
            Candidate::from_spec("c", "1.33 1.33").is_err(),
            "no strategy"
        );
        assert!(
            Candidate::new("c", CandidateVersion(1, 33, 0), CandidateVersion(1, 33, 0))
                .with_strategy("two words")
                .is_err()
        );
    }
}
