//! Benchmarks of the lease-elect lock backends against real servers; no library API.
//!
//! Run with the servers up: `bash scripts/servers.sh cargo bench -p lease-elect-bench`.
