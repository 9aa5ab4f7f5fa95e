//! Fault tests for lease-elect on real servers.
//!
//! - [`store::FencedStore`]: an append-only store on loopback that refuses a fencing token
//!   lower than the highest it accepted, and keeps every write attempt for the judge
//!   ([`store::Verdict`]): overlapping terms and accepted stale writes must both be zero.
//! - [`proxy::Proxy`]: a loopback TCP proxy that adds latency, blackholes or resets the
//!   connections of one election node.
//! - [`node::Node`]: election nodes (the `fault_node` binary) as child processes, which can be
//!   killed, paused and resumed.
//!
//! The scenarios themselves are in `tests/faults.rs`.

pub mod node;
pub mod proxy;
pub mod servers;
pub mod store;

/// Microseconds since the Unix epoch: the time base shared by the nodes, the store and the
/// test (one machine, one wall clock).
#[must_use]
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
