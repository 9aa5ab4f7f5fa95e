//! Host crate for the workspace's examples and benchmarks; it has no API of its own.
