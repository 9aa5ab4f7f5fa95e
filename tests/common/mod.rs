//! What the tests of `examples/simulate.rs` share.

use std::process::{Command, Output};

/// Runs the example (built by cargo if needed) with these arguments.
pub fn simulate(args: &[&str]) -> Output {
    Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "simulate", "--"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs")
}
