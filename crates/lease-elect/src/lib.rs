//! lease-elect: client-go's leader election over a generic async lock.
//!
//! Start here: implement or pick a [`ResourceLock`], then run a `LeaderElector` on it.
//! Records interoperate with client-go ([`LeaderElectionRecord`]).

mod lock;
mod record;

#[cfg(feature = "testing")]
pub mod testing;

pub use lock::{BoxError, ElectionEvent, FencingToken, LockError, ResourceLock, Version};
pub use record::{LeaderElectionRecord, format_rfc3339, parse_rfc3339};
