//! Built-in predicates and priorities, with kube-scheduler's legacy names and exact semantics.

pub mod dra;
pub mod interpod;
pub mod node;
pub mod resource;
pub mod spread;
pub mod volume;
