//! [`MultiLock`]: client-go's lock for migrating an election from one lock to another.

use async_trait::async_trait;

use crate::{ElectionEvent, LeaderElectionRecord, LockError, ResourceLock, Version};

/// The holder a [`MultiLock`] reports when its two records name different holders
/// (client-go's `resourcelock.UnknownLeader`).
pub const UNKNOWN_LEADER: &str = "leaderelection.k8s.io/unknown";

/// Two records of a [`MultiLock`] disagree, found by [`MultiLock::verify`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MultiLockError {
    /// The primary and the secondary name different holders.
    #[error("the primary names holder {primary:?} but the secondary names {secondary:?}")]
    HolderMismatch {
        /// The primary's holder.
        primary: String,
        /// The secondary's holder.
        secondary: String,
    },
    /// The primary exists and the secondary does not (or the other way round).
    #[error("only the {present} record exists")]
    OneMissing {
        /// `"primary"` or `"secondary"`.
        present: &'static str,
    },
}

/// A lock over two [`ResourceLock`]s, with client-go's `MultiLock` semantics: every write
/// goes to both, the primary is read, and the secondary is created when it is missing. Used to
/// move an election from one lock to another without downtime (client-go's
/// `endpointsleases` and `configmapsleases`: an Endpoints or ConfigMap annotation as the
/// primary, a Lease as the secondary); here any two locks, for example Redis to PostgreSQL.
///
/// # Semantics
/// - [`get`](ResourceLock::get) reads the primary; no primary is no record. Then it reads the
///   secondary. When the secondary is missing, the primary's record is returned (a lock held
///   by an elector that knows only the primary). When both exist but name different holders,
///   the primary's record is returned with the holder replaced by [`UNKNOWN_LEADER`], as
///   client-go does: electors treat the lock as held by an unknown leader and take it over
///   only after seeing both records unchanged for the lease duration. (A typed error instead
///   would stop the election for good after a crash between the two writes; use
///   [`verify`](MultiLock::verify) to get [`MultiLockError`] during a migration.)
/// - The version is both versions together, so a change of either record is a change of the
///   lock (client-go compares the concatenation of the two raw records).
/// - [`create`](ResourceLock::create) creates the primary, then the secondary. A conflict on
///   the primary is a conflict. (client-go ignores AlreadyExists on the primary, which it
///   reaches only when its `Get` failed on a missing secondary; this lock returns the primary
///   record then and goes through `update` instead.)
/// - [`update`](ResourceLock::update) updates the primary from its expected version, then
///   the secondary from its expected version, or creates the secondary when it was missing.
///   client-go reads the secondary again and overwrites it whatever it holds; this lock
///   compares and swaps it too, so an elector that already writes only the secondary (the
///   last stage of a migration) is never overwritten by a stale one. When the primary was
///   written but the secondary write fails, the error is returned and the two records then
///   disagree until the next successful write: electors see [`UNKNOWN_LEADER`] meanwhile.
/// - [`delete`](ResourceLock::delete) deletes the primary, then the secondary.
/// - [`wait_for_change`](ResourceLock::wait_for_change) resolves when either lock reports a
///   change.
/// - `identity` and `describe` are the primary's (as in client-go), `describe` prefixed by
///   `multi:` and followed by the secondary's. Events are recorded on both.
///
/// Versions carry no [sequence](Version::sequence), so fencing tokens come from
/// `leaderTransitions`, which both records share (see [`FencingToken`](crate::FencingToken)).
///
/// # Migration procedure (old lock A to new lock B)
/// 1. Run every replica with A alone (the starting point).
/// 2. Roll out `MultiLock::new(A, B)`: A primary, B secondary. While old replicas (A alone)
///    and new ones run side by side, both read A, so they agree on the leader; new replicas
///    keep B in step. Wait until every replica runs the multi-lock and one of them has renewed
///    (B then exists and names the same holder as A; [`verify`](MultiLock::verify) says so).
/// 3. Roll out B alone. Replicas of step 2 (which read A and write both) and of step 3 (B
///    alone) never lead together: a leader of step 3 renews B, so a step-2 replica sees the
///    version change and waits; a step-2 leader writes B too, so a step-3 replica waits.
/// 4. When no replica uses A any more, delete A's record.
///
/// Never skip step 2 and never run step 1 and step 3 replicas at the same time: they read
/// different records and could both lead. client-go's `configmapsleases` migration is this
/// procedure with a ConfigMap annotation lock as A and a Lease lock as B (both in
/// `lease-elect-kube`).
pub struct MultiLock<P, S> {
    primary: P,
    secondary: S,
}

impl<P: ResourceLock, S: ResourceLock> MultiLock<P, S> {
    /// A lock writing `primary` and `secondary` and reading `primary`.
    ///
    /// Both should be handles of the same participant: the identity is the primary's.
    #[must_use]
    pub fn new(primary: P, secondary: S) -> Self {
        MultiLock { primary, secondary }
    }

    /// The primary lock.
    #[must_use]
    pub fn primary(&self) -> &P {
        &self.primary
    }

    /// The secondary lock.
    #[must_use]
    pub fn secondary(&self) -> &S {
        &self.secondary
    }

    /// Reads both records and checks that they agree on the holder (what step 2 of the
    /// migration waits for). `Ok(None)` when neither exists.
    ///
    /// # Errors
    /// [`MultiLockError`] (as a permanent [`LockError::Backend`] source) when they disagree
    /// or only one exists; the locks' errors when a read fails.
    pub async fn verify(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        let primary = self.primary.get().await?;
        let secondary = self.secondary.get().await?;
        match (primary, secondary) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(LockError::permanent(MultiLockError::OneMissing {
                present: "primary",
            })),
            (None, Some(_)) => Err(LockError::permanent(MultiLockError::OneMissing {
                present: "secondary",
            })),
            (Some((p, _)), Some((s, _))) if p.holder_identity != s.holder_identity => {
                Err(LockError::permanent(MultiLockError::HolderMismatch {
                    primary: p.holder_identity,
                    secondary: s.holder_identity,
                }))
            }
            (Some((p, _)), Some(_)) => Ok(Some(p)),
        }
    }
}

impl<P, S> std::fmt::Debug for MultiLock<P, S>
where
    P: ResourceLock,
    S: ResourceLock,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLock")
            .field("primary", &self.primary.describe())
            .field("secondary", &self.secondary.describe())
            .finish()
    }
}

/// One lock's version inside a combined tag: `#<sequence>` or `=<tag>`.
fn part(v: &Version) -> String {
    match v.sequence() {
        Some(s) => format!("#{s}"),
        None => format!("={}", v.tag()),
    }
}

fn unpart(text: &str) -> Option<Version> {
    if let Some(s) = text.strip_prefix('#') {
        s.parse().ok().map(Version::from_sequence)
    } else {
        text.strip_prefix('=').map(Version::new)
    }
}

/// The combined version: a JSON array of the primary's part and, when the secondary exists,
/// the secondary's.
fn combine(primary: &Version, secondary: Option<&Version>) -> Version {
    let mut parts = vec![part(primary)];
    parts.extend(secondary.map(part));
    Version::new(serde_json::to_string(&parts).unwrap_or_default())
}

/// The two versions in a combined one; `None` when the tag is not one of ours (a version of
/// another lock, which cannot be the current one).
fn split(v: &Version) -> Option<(Version, Option<Version>)> {
    let parts: Vec<String> = serde_json::from_str(v.tag()).ok()?;
    match parts.as_slice() {
        [p] => Some((unpart(p)?, None)),
        [p, s] => Some((unpart(p)?, Some(unpart(s)?))),
        _ => None,
    }
}

fn foreign(v: &Version) -> LockError {
    LockError::Conflict(format!("{v:?} is not a version of a multi-lock"))
}

#[async_trait]
impl<P: ResourceLock, S: ResourceLock> ResourceLock for MultiLock<P, S> {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        let Some((mut primary, pv)) = self.primary.get().await? else {
            return Ok(None);
        };
        let Some((secondary, sv)) = self.secondary.get().await? else {
            return Ok(Some((primary, combine(&pv, None))));
        };
        if primary.holder_identity != secondary.holder_identity {
            UNKNOWN_LEADER.clone_into(&mut primary.holder_identity);
        }
        Ok(Some((primary, combine(&pv, Some(&sv)))))
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        let pv = self.primary.create(record).await?;
        let sv = self.secondary.create(record).await?;
        Ok(combine(&pv, Some(&sv)))
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        let (pe, se) = split(expected).ok_or_else(|| foreign(expected))?;
        let pv = self.primary.update(&pe, record).await?;
        let sv = match se {
            Some(se) => self.secondary.update(&se, record).await?,
            None => self.secondary.create(record).await?,
        };
        Ok(combine(&pv, Some(&sv)))
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        let (pe, se) = split(expected).ok_or_else(|| foreign(expected))?;
        self.primary.delete(&pe).await?;
        if let Some(se) = se {
            self.secondary.delete(&se).await?;
        }
        Ok(())
    }

    async fn wait_for_change(&self, seen: Option<&Version>) {
        let (pe, se) = match seen.map(split) {
            None => (None, None),
            Some(Some((p, s))) => (Some(p), s),
            // Not a version of ours: it has changed.
            Some(None) => return,
        };
        tokio::select! {
            () = self.primary.wait_for_change(pe.as_ref()) => {}
            () = self.secondary.wait_for_change(se.as_ref()) => {}
        }
    }

    fn identity(&self) -> &str {
        self.primary.identity()
    }

    fn describe(&self) -> String {
        format!(
            "multi:{}+{}",
            self.primary.describe(),
            self.secondary.describe()
        )
    }

    fn record_event(&self, event: &ElectionEvent) {
        self.primary.record_event(event);
        self.secondary.record_event(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_versions_round_trip() {
        for (p, s) in [
            (Version::new("12"), Some(Version::from_sequence(7))),
            (Version::from_sequence(3), None),
            (Version::new("a\",b]=#"), Some(Version::new(""))),
        ] {
            let v = combine(&p, s.as_ref());
            let (p2, s2) = split(&v).expect("ours");
            assert_eq!((p2, s2), (p, s));
        }
        assert!(split(&Version::new("12")).is_none());
        assert!(split(&Version::from_sequence(4)).is_none());
    }
}
