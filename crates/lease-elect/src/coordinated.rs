//! Coordinated leader election (Kubernetes' KEP-4355), over any lock: candidates register, a
//! coordinator picks the leader by a strategy and writes it as the record's
//! `preferredHolder`, and electors honour it (see
//! [`LeaderElector::try_acquire_or_renew`](crate::LeaderElector::try_acquire_or_renew): the
//! holder steps down and releases, the preferred candidate takes over at once).
//!
//! This module holds the parts that do not depend on a backend: [`Candidate`] and
//! [`CandidateVersion`], the strategy ([`Strategy::pick`]), the registry interface
//! ([`CandidateStore`]) with an in-memory registry ([`MemoryCandidates`]) and one in a
//! directory ([`FileCandidates`]), and the
//! [`Coordinator`], which is meant to run as the leader's work of an election of its own
//! (so exactly one coordinator writes at a time). The backend crates have registries on their
//! servers: `PostgresCandidates`, `EtcdCandidates`, `RedisCandidates` and `LeaseCandidates`
//! (LeaseCandidate objects).

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

/// A candidate of a coordinated election (a LeaseCandidate's spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The elector's identity.
    pub identity: String,
    /// The version the candidate emulates.
    pub emulation_version: CandidateVersion,
    /// The candidate's binary version.
    pub binary_version: CandidateVersion,
}

/// How the coordinator picks the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// KEP-4355's `OldestEmulationVersion`: the oldest emulation version, then the oldest
    /// binary version, then the smallest identity. During a rolling upgrade the not yet
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
/// beside the elector, and [`CandidateStore::deregister`] when the elector stops). Keep
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
/// file's modification time on the wall clock). Identities must be valid file names.
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
        let text = format!(
            "{} {}",
            candidate.emulation_version, candidate.binary_version
        );
        std::fs::write(&tmp, text).map_err(Self::io)?;
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
            let corrupt = |source: Option<crate::BoxError>| LockError::Corrupt {
                detail: format!("candidate file {name:?}: {text:?}"),
                source,
            };
            let (e, b) = text.split_once(' ').ok_or_else(|| corrupt(None))?;
            out.push(Candidate {
                identity: identity.to_owned(),
                emulation_version: e.parse().map_err(|e| corrupt(Some(Box::new(e))))?,
                binary_version: b.parse().map_err(|e| corrupt(Some(Box::new(e))))?,
            });
        }
        Ok(out)
    }
}

/// Writes the strategy's pick as the `preferredHolder` of the election's record.
pub struct Coordinator {
    lock: Arc<dyn ResourceLock>,
    candidates: Arc<dyn CandidateStore>,
    strategy: Strategy,
}

impl fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("lock", &self.lock.describe())
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// A coordinator of the election on `lock` (any handle of it) among the candidates in
    /// `candidates`.
    #[must_use]
    pub fn new(
        lock: Arc<dyn ResourceLock>,
        candidates: Arc<dyn CandidateStore>,
        strategy: Strategy,
    ) -> Self {
        Coordinator {
            lock,
            candidates,
            strategy,
        }
    }

    /// One pass: picks the leader among the live candidates and, when the record's
    /// `preferredHolder` or `strategy` differ, writes them with a compare-and-swap (the holder
    /// and everything else unchanged). Returns the pick. Writes nothing while there is no
    /// record or no candidate.
    ///
    /// # Errors
    /// The lock's or the registry's error; a conflict when the record changed meanwhile (the
    /// next pass tries again).
    pub async fn reconcile(&self) -> Result<Option<String>, LockError> {
        let candidates = self.candidates.candidates().await?;
        let Some(best) = self.strategy.pick(&candidates).map(|c| c.identity.clone()) else {
            return Ok(None);
        };
        let Some((record, version)) = self.lock.get().await? else {
            return Ok(Some(best));
        };
        let strategy = Some(self.strategy.name().to_owned());
        if record.preferred_holder.as_deref() == Some(best.as_str()) && record.strategy == strategy
        {
            return Ok(Some(best));
        }
        let updated = LeaderElectionRecord {
            preferred_holder: Some(best.clone()),
            strategy,
            ..record
        };
        self.lock.update(&version, &updated).await?;
        tracing::info!(lock = %self.lock.describe(), preferred = %best, "coordinator set the preferred holder");
        Ok(Some(best))
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
        Candidate {
            identity: id.to_owned(),
            emulation_version: emulation.parse().unwrap(),
            binary_version: binary.parse().unwrap(),
        }
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
}
