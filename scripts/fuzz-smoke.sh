#!/usr/bin/env bash
# Fuzz smoke run for CI: replays every saved regression input, then runs each cargo-fuzz target
# for a short time over its committed seed corpus. Fails if any regression or fuzz run crashes.
#
#   scripts/fuzz-smoke.sh                      # every target, 20 s each
#   FUZZ_SECONDS=60 scripts/fuzz-smoke.sh      # longer runs
#   FUZZ_TARGETS="quantity policy" scripts/fuzz-smoke.sh
#
# Environment:
#   FUZZ_SECONDS    seconds per target (default 20)
#   FUZZ_TARGETS    space-separated targets (default: all of `cargo fuzz list`)
#   FUZZ_SANITIZER  cargo-fuzz sanitizer (default none: both crates forbid unsafe code;
#                   use "address" to also check the unsafe code of dependencies)
#   FUZZ_PROFILE    dev (default: unoptimized, so that building sched-core with coverage
#                   instrumentation in one codegen unit takes minutes, not the 25 an
#                   optimized build takes on 2 cores) or release (faster fuzzing, for long runs)
#   FUZZ_KEEP       set to 1 to keep the scratch directory (new corpus entries, crash inputs)
#
# cargo-fuzz needs nightly-only compiler flags; on the stable toolchain they are enabled with
# RUSTC_BOOTSTRAP=1. The committed corpus is copied to a scratch directory first, so the
# run never writes into the repository. Crash inputs are printed (base64) and kept in the
# scratch directory, whose path is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR=never
seconds="${FUZZ_SECONDS:-20}"
sanitizer="${FUZZ_SANITIZER:-none}"
profile="--${FUZZ_PROFILE:-dev}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# Scratch space on tmpfs when there is one: the file_lock target writes and fsyncs a lock
# file on every input (it uses $TMPDIR).
if [[ -d /dev/shm && -w /dev/shm ]]; then
    scratch="$(mktemp -d -p /dev/shm fuzz-smoke.XXXXXX)"
else
    scratch="$(mktemp -d -t fuzz-smoke.XXXXXX)"
fi
if [[ "${FUZZ_KEEP:-0}" != 1 ]]; then
    trap 'rm -rf "$scratch"' EXIT
fi
export TMPDIR="$scratch"

if [[ -n "${FUZZ_TARGETS:-}" ]]; then
    read -r -a targets <<<"$FUZZ_TARGETS"
else
    mapfile -t targets < <(cargo fuzz list)
fi

start=$(date +%s)
echo "== building ${#targets[@]} fuzz targets (sanitizer: $sanitizer, ${profile#--})"
cargo fuzz build "$profile" --sanitizer "$sanitizer"

failures=()
summary=()

show_crashes() { # dir
    local f
    for f in "$1"/*; do
        [[ -f "$f" ]] || continue
        echo "   crash input $f (base64): $(base64 -w0 "$f")"
    done
}

for t in "${targets[@]}"; do
    corpus="$scratch/corpus/$t"
    artifacts="$scratch/artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    if [[ -d "fuzz/corpus/$t" ]]; then
        cp -R "fuzz/corpus/$t/." "$corpus/"
    fi

    # 1. Regressions: every saved crash input must now pass.
    regressions_ok=1
    if [[ -d "fuzz/regressions/$t" ]]; then
        for input in "fuzz/regressions/$t"/*; do
            [[ -f "$input" ]] || continue
            log="$scratch/$t.regression.log"
            if cargo fuzz run "$profile" --sanitizer "$sanitizer" "$t" "$input" -- \
                -artifact_prefix="$artifacts/" >"$log" 2>&1; then
                echo "ok   $t regression $(basename "$input")"
            else
                regressions_ok=0
                failures+=("$t: regression $input")
                echo "FAIL $t regression $input"
                grep -m1 -A3 "panicked at" "$log" | sed 's/^/   /' || tail -n 20 "$log"
            fi
        done
    fi
    # Regressions that pass are good seeds too (a failing one would stop the run at once).
    if [[ $regressions_ok == 1 && -d "fuzz/regressions/$t" ]]; then
        cp -R "fuzz/regressions/$t/." "$corpus/"
    fi

    # 2. Fuzz for a while from the seeds.
    log="$scratch/$t.fuzz.log"
    if cargo fuzz run "$profile" --sanitizer "$sanitizer" "$t" "$corpus" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
        summary+=("$(printf '%-14s %3s s  %10s runs  %8s exec/s' "$t" "$seconds" "${execs:-?}" "${rate:-?}")")
        echo "ok   $t fuzzed ${seconds}s: ${execs:-?} runs, ${rate:-?} exec/s"
    else
        failures+=("$t: fuzzing crashed")
        echo "FAIL $t fuzzing crashed or failed"
        if ! grep -m1 -A2 "panicked at" "$log" | sed 's/^/   /'; then
            tail -n 30 "$log" | sed 's/^/   | /'
        fi
        grep -m1 "^SUMMARY\|ERROR: libFuzzer" "$log" | sed 's/^/   /' || true
        show_crashes "$artifacts"
    fi
done

echo
echo "== fuzz smoke summary ($(($(date +%s) - start)) s in all)"
for line in "${summary[@]}"; do
    echo "   $line"
done
if ((${#failures[@]})); then
    echo "== ${#failures[@]} failure(s):"
    for f in "${failures[@]}"; do
        echo "   $f"
    done
    if [[ "${FUZZ_KEEP:-0}" == 1 ]]; then
        echo "   scratch directory kept: $scratch"
    fi
    exit 1
fi
echo "== all fuzz targets passed"
