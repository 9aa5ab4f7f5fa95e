//! The fenced append-only store and the judge.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

/// One write attempt as the store saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The writer's identity.
    pub identity: String,
    /// The fencing token it wrote with.
    pub token: u64,
    /// When the writer's guard last said the term was valid before this write (µs since
    /// the epoch, the writer's clock: the same machine's).
    pub checked_us: u64,
    /// Whether the store accepted it.
    pub accepted: bool,
}

#[derive(Default)]
struct State {
    max: Option<(u64, String)>,
    attempts: Vec<Attempt>,
}

/// An append-only store on a loopback port. A write `W <identity> <token> <checked_us>` is
/// accepted when its token is above every accepted token, or equal to the highest and from
/// the same identity; the reply is `OK` or `NO`.
#[derive(Clone)]
pub struct FencedStore {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FencedStore {
    /// Starts the store on a free loopback port.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> FencedStore {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the store");
        let addr = listener.local_addr().expect("store address");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let (read, mut write) = socket.into_split();
                    let mut lines = BufReader::new(read).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let ok = accept(&state, &line);
                        if write
                            .write_all(if ok { b"OK\n" } else { b"NO\n" })
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                });
            }
        });
        FencedStore { addr, state }
    }

    /// The store's address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every attempt so far.
    #[must_use]
    pub fn attempts(&self) -> Vec<Attempt> {
        lock(&self.state).attempts.clone()
    }

    /// The verdict over every attempt so far.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        Verdict::of(&self.attempts())
    }

    /// The first accepted write after `since_us` by a term that started after `since_us`.
    #[must_use]
    pub fn first_new_term_write_after(&self, since_us: u64) -> Option<u64> {
        let attempts = self.attempts();
        let mut first: BTreeMap<(String, u64), u64> = BTreeMap::new();
        for a in &attempts {
            first
                .entry((a.identity.clone(), a.token))
                .and_modify(|t| *t = (*t).min(a.checked_us))
                .or_insert(a.checked_us);
        }
        attempts
            .iter()
            .filter(|a| {
                a.accepted
                    && a.checked_us > since_us
                    && first[&(a.identity.clone(), a.token)] > since_us
            })
            .map(|a| a.checked_us)
            .min()
    }

    /// The last attempt's writer, if any attempt was made.
    #[must_use]
    pub fn last_writer(&self) -> Option<String> {
        lock(&self.state)
            .attempts
            .last()
            .map(|a| a.identity.clone())
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn accept(state: &Mutex<State>, line: &str) -> bool {
    let mut parts = line.split_whitespace();
    let (Some("W"), Some(identity), Some(token), Some(checked)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(token), Ok(checked_us)) = (token.parse::<u64>(), checked.parse::<u64>()) else {
        return false;
    };
    let mut st = lock(state);
    let accepted = match &st.max {
        None => true,
        Some((max, owner)) => token > *max || (token == *max && owner == identity),
    };
    if accepted {
        st.max = Some((token, identity.to_owned()));
    }
    st.attempts.push(Attempt {
        identity: identity.to_owned(),
        token,
        checked_us,
        accepted,
    });
    accepted
}

/// What the judge found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Write attempts (accepted or not).
    pub attempts: usize,
    /// Accepted writes.
    pub accepted: usize,
    /// Terms (distinct identity and token) that wrote.
    pub terms: usize,
    /// Pairs of terms of different identities whose guards were both valid at overlapping
    /// times (from the first to the last valid check of each term's writes).
    pub overlaps: usize,
    /// The longest such overlap, in microseconds.
    pub max_overlap_us: u64,
    /// Accepted writes of a term made after a later-started term of another identity had
    /// written: the store let a deposed leader through.
    pub stale_accepted: usize,
}

impl Verdict {
    /// Judges a list of attempts.
    #[must_use]
    pub fn of(attempts: &[Attempt]) -> Verdict {
        let mut terms: BTreeMap<(String, u64), (u64, u64)> = BTreeMap::new();
        for a in attempts {
            let e = terms
                .entry((a.identity.clone(), a.token))
                .or_insert((a.checked_us, a.checked_us));
            e.0 = e.0.min(a.checked_us);
            e.1 = e.1.max(a.checked_us);
        }
        let list: Vec<_> = terms.iter().collect();
        let mut overlaps = 0;
        let mut max_overlap_us = 0;
        for (i, ((ia, _), (fa, la))) in list.iter().enumerate() {
            for ((ib, _), (fb, lb)) in &list[i + 1..] {
                if ia != ib && fa <= lb && fb <= la {
                    overlaps += 1;
                    max_overlap_us = max_overlap_us.max(la.min(lb) - fa.max(fb));
                }
            }
        }
        let stale_accepted = attempts
            .iter()
            .filter(|a| a.accepted)
            .filter(|a| {
                let (first, _) = terms[&(a.identity.clone(), a.token)];
                list.iter()
                    .any(|((id, _), (f, _))| *id != a.identity && *f > first && *f < a.checked_us)
            })
            .count();
        Verdict {
            attempts: attempts.len(),
            accepted: attempts.iter().filter(|a| a.accepted).count(),
            terms: terms.len(),
            overlaps,
            max_overlap_us,
            stale_accepted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(id: &str, token: u64, t: u64, accepted: bool) -> Attempt {
        Attempt {
            identity: id.into(),
            token,
            checked_us: t,
            accepted,
        }
    }

    #[test]
    fn judges_overlaps_and_stale_writes() {
        let clean = [a("x", 1, 0, true), a("x", 1, 10, true), a("y", 2, 20, true)];
        let v = Verdict::of(&clean);
        assert_eq!((v.overlaps, v.stale_accepted, v.terms), (0, 0, 2));
        // y led from 5 to 8 while x still wrote at 10, with a token that does not fence x out.
        let bad = [
            a("x", 1, 0, true),
            a("y", 1, 5, false),
            a("y", 1, 8, false),
            a("x", 1, 10, true),
        ];
        let v = Verdict::of(&bad);
        assert_eq!((v.overlaps, v.stale_accepted, v.max_overlap_us), (1, 1, 3));
    }
}
