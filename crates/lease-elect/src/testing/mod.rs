//! The conformance suite every [`ResourceLock`](crate::ResourceLock) backend runs
//! (feature `testing`).
//!
//! It checks the contract written in the trait's docs: compare-and-swap on create and
//! update, fresh versions, faithful records, corruption reported as an error, monotonic
//! sequences, and an election on the backend with a real clock.
