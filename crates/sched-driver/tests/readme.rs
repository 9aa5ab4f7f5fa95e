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

#[test]
fn the_readme_example_is_the_doc_tested_one() {
    let lib = include_str!("../src/lib.rs");
    let docs: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let open = docs.iter().position(|l| *l == "```").expect("doc example");
    let close = open + 1 + docs[open + 1..].iter().position(|l| *l == "```").unwrap();
    let shown: Vec<String> = docs[open + 1..close]
        .iter()
        .filter(|l| !(l.starts_with("# ") || **l == "#"))
        .map(|l| (*l).to_owned())
        .collect();
    let readme = include_str!("../../../README.md");
    assert_eq!(
        rust_block_after(readme, "## The scheduling driver"),
        shown,
        "README.md's driver example differs from sched-driver's crate docs"
    );
}
