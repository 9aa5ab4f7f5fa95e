//! The benchmark peer's sched-core side (see `kube_reference::perf`): times sched-core's
//! engine on a workload exported by `reference/cmd/perf export`.
//!
//! ```sh
//! cargo run --release -p kube-reference --bin perf -- [--percentage P] [--measure N] \
//!     --out FILE CASE_DIR
//! ```
//!
//! `scripts/scheduler-perf.sh` runs it beside kube's `perf time` and prints the table.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut percentage, mut measure, mut out, mut dir) = (0u32, None, None, None);
    let usage = "usage: perf [--percentage P] [--measure N] --out FILE CASE_DIR";
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let parsed: Result<(), String> = match a.as_str() {
            "--percentage" => value().and_then(|v| {
                percentage = v
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or(format!("--percentage: {v:?}"))?;
                Ok(())
            }),
            "--measure" => value().and_then(|v| {
                measure = Some(v.parse().map_err(|_| format!("--measure: {v:?}"))?);
                Ok(())
            }),
            "--out" => value().map(|v| out = Some(PathBuf::from(v))),
            _ if dir.is_none() && !a.starts_with('-') => {
                dir = Some(PathBuf::from(&a));
                Ok(())
            }
            _ => Err(format!("unknown argument {a:?}")),
        };
        if let Err(e) = parsed {
            eprintln!("perf: {e}\n{usage}");
            return ExitCode::from(2);
        }
    }
    let (Some(out), Some(dir)) = (out, dir) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    match kube_reference::perf::run(&dir, percentage, measure) {
        Ok(t) => match serde_json::to_string(&t) {
            Ok(json) => match std::fs::write(&out, json + "\n") {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("perf: {}: {e}", out.display());
                    ExitCode::FAILURE
                }
            },
            Err(e) => {
                eprintln!("perf: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("perf: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
