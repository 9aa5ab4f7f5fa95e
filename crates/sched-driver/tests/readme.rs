//! The README's example of the driver is the crate docs' example, which is compiled and run as
//! a doc test: this keeps the two equal (the README shows it without the hidden lines).

fn rust_block_after(text: &str, heading: &str) -> Vec<String> {
    let start = text.find(heading).expect("heading present");
    let rest = &text[start..];
    let open = rest.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let close = rest[open..].find("\n```").expect("block closed");
    rest[open..open + close]
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The first example of a file's `//!` docs, as rustdoc shows it (hidden `# ` lines left out).
fn first_doc_example(source: &str) -> Vec<String> {
    let docs: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let open = docs.iter().position(|l| *l == "```").expect("doc example");
    let close = open + 1 + docs[open + 1..].iter().position(|l| *l == "```").unwrap();
    docs[open + 1..close]
        .iter()
        .filter(|l| !(l.starts_with("# ") || **l == "#"))
        .map(|l| (*l).to_owned())
        .collect()
}

const README: &str = include_str!("../../../README.md");

#[test]
fn the_readme_example_is_the_doc_tested_one() {
    assert_eq!(
        rust_block_after(README, "## The scheduling driver"),
        first_doc_example(include_str!("../src/lib.rs")),
        "README.md's driver example differs from sched-driver's crate docs"
    );
}

#[test]
fn the_readme_engine_example_is_the_doc_tested_one() {
    assert_eq!(
        rust_block_after(README, "### The scheduling engine"),
        first_doc_example(include_str!("../../sched-core/src/scheduler/mod.rs")),
        "README.md's engine example differs from sched-core's scheduler module docs"
    );
}
