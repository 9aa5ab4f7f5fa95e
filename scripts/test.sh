#!/usr/bin/env bash
# Runs every test of the workspace, real servers included:
#   - builds kube v1.34.4 from the Go module in reference/ (scripts/reference.sh: the
#     kube-scheduler oracle of the differential suite, the benchmark peer, kube-apiserver and
#     etcd), checking every binary and module file by name, and runs gofmt and go vet on it;
#   - installs (Debian packages) and starts PostgreSQL, etcd, Redis and kube-apiserver on
#     loopback in a temporary directory (scripts/servers.sh), and stops them on exit;
#   - formatting, the module layering check (scripts/check-layers.py), clippy with warnings
#     as errors, every unit/integration/property/doc test,
#     sched-core's scoring-kernel tests again optimized (the vector builds exist only with
#     optimizations), and rustdoc without warnings.
# A backend test whose server is missing fails; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# This script starts every server the tests use, so a backend test that cannot find its
# server is a failure here, never a skip (see lease_elect::testing::process::server_missing).
export CI="${CI:-1}"
# A one-off build gains nothing from incremental state, which is a third of a test build's size.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Each step says how long the script had run when it began.
started=$(date +%s)
step() { printf '\n==> [%4d s] %s\n' "$(( $(date +%s) - started ))" "$*"; }

step "building kube v1.34.4 from reference/ (kube-scheduler oracle, benchmark peer, kube-apiserver, etcd)"
# shellcheck source=scripts/reference.sh
source scripts/reference.sh

step "gofmt and go vet (reference/)"
kube_reference_lint

step "starting PostgreSQL, etcd, Redis and kube-apiserver (with its own etcd) on loopback"
# shellcheck source=scripts/servers.sh
source scripts/servers.sh
trap lease_elect_servers_stop EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "module layers (docs/architecture.md): imports go one way, no circles"
python3 scripts/check-layers.py

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (unit, integration, property, multi-process, real-server and doc tests)"
# The output is kept so that a failure is summed up at the very end, where a truncated log
# still shows it.
test_log=$(mktemp)
status=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$test_log" || status=$?
if [[ $status -ne 0 ]]; then
  step "cargo test failed (exit $status); the failures:"
  grep -E -A6 'FAILED|panicked at|^error' "$test_log" | head -n 200 || true
  rm -f "$test_log"
  exit "$status"
fi
rm -f "$test_log"

step "scoring kernel, optimized (its vector builds exist only with optimizations)"
cargo test --release -p sched-core --lib profile::kernel::
cargo test --release -p sched-core --test fast_path

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
