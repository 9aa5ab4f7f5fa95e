//! The wait-for-a-change piece shared by backends that learn of writes from the server.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

use crate::elector::locked;
use crate::{LockError, Version};

/// What a lock backend needs for [`ResourceLock::wait_for_change`](crate::ResourceLock::wait_for_change)
/// when the server tells it about writes (PostgreSQL `LISTEN`/`NOTIFY`, Redis pub/sub, an etcd
/// or Kubernetes watch): a count of the notifications, whether the feed is connected, and the
/// version the handle's last read returned with the count before that read.
///
/// - The task that follows the feed calls [`connected`](Self::connected) once it listens
///   (which also counts as a change: writes may have happened while nobody listened),
///   [`notify`](Self::notify) for every notification, and
///   [`disconnected`](Self::disconnected) when the feed ends.
/// - The backend's `get` brackets its request with [`before_read`](Self::before_read) and
///   [`after_read`](Self::after_read).
/// - `wait_for_change` is [`wait`](Self::wait) with the backend's read.
///
/// A wait on the version the last read returned, with no notification since, then sends no
/// request at all; otherwise it reads once. While the feed is not connected it waits for it;
/// while the server cannot be reached it never resolves (the elector's timers take over).
#[derive(Debug)]
pub struct ChangeFeed {
    changes: watch::Sender<u64>,
    connected: AtomicBool,
    last_read: Mutex<Option<(Option<Version>, u64)>>,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        Self::new()
    }
}

impl ChangeFeed {
    /// A feed that is not connected yet.
    #[must_use]
    pub fn new() -> Self {
        ChangeFeed {
            changes: watch::channel(0).0,
            connected: AtomicBool::new(false),
            last_read: Mutex::new(None),
        }
    }

    /// The record may have changed (a notification, or anything that makes the last read
    /// stale).
    pub fn notify(&self) {
        self.changes.send_modify(|c| *c = c.wrapping_add(1));
    }

    /// The feed listens now. Counts as a change.
    pub fn connected(&self) {
        self.connected.store(true, Ordering::SeqCst);
        self.notify();
    }

    /// The feed stopped listening. Counts as a change.
    pub fn disconnected(&self) {
        self.connected.store(false, Ordering::SeqCst);
        self.notify();
    }

    /// Whether the feed listens now.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    /// Call before sending a read; pass the result to [`after_read`](Self::after_read).
    #[must_use]
    pub fn before_read(&self) -> Option<u64> {
        self.is_connected().then(|| *self.changes.borrow())
    }

    /// Call after a read that found `found` (`None`: no record).
    pub fn after_read(&self, before: Option<u64>, found: Option<&Version>) {
        if let Some(count) = before {
            *locked(&self.last_read) = Some((found.cloned(), count));
        }
    }

    /// Resolves when the record may have changed from `seen`: at once when `read` finds
    /// another version, else on the next notification. `read` returns the stored version
    /// (and should record it with [`after_read`](Self::after_read), as `get` does).
    pub async fn wait<F, Fut>(&self, seen: Option<&Version>, read: F)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<Version>, LockError>>,
    {
        let mut changes = self.changes.subscribe();
        let mut read = Some(read);
        loop {
            let now = *changes.borrow_and_update();
            if self.is_connected() {
                let fresh = locked(&self.last_read)
                    .as_ref()
                    .is_some_and(|(v, count)| v.as_ref() == seen && *count == now);
                if !fresh && let Some(read) = read.take() {
                    match read().await {
                        Ok(current) if current.as_ref() != seen => return,
                        Ok(_) | Err(LockError::Corrupt { .. }) => {}
                        Err(_) => return std::future::pending().await,
                    }
                }
                if changes.changed().await.is_err() {
                    return std::future::pending().await;
                }
                return;
            }
            // Not listening yet (or reconnecting): wait for the feed.
            if changes.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unchanged_record_is_not_read_again() {
        let feed = ChangeFeed::new();
        feed.connected();
        let v = Version::from_sequence(3);
        let before = feed.before_read();
        feed.after_read(before, Some(&v));
        let waiting = feed.wait(Some(&v), || async { panic!("no read expected") });
        let mut waiting = std::pin::pin!(waiting);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), waiting.as_mut())
                .await
                .is_err()
        );
        feed.notify();
        waiting.await;
    }

    #[tokio::test]
    async fn a_stale_read_reads_once_and_returns_on_a_new_version() {
        let feed = ChangeFeed::new();
        feed.connected();
        let seen = Version::from_sequence(3);
        feed.wait(Some(&seen), || async {
            Ok(Some(Version::from_sequence(4)))
        })
        .await;
    }
}
