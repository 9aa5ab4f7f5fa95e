//! The differential suite from the command line: random cases through kube-scheduler v1.34.4
//! (the oracle of `scripts/reference.sh`) and through sched-core.
//!
//! ```sh
//! cargo run --release -p kube-reference --bin differential -- [--seeds 0..300] \
//!     [--dir target/differential] [--percentage 100] [--workers 2]
//! cargo run --release -p kube-reference --bin differential -- --shrink SEED [--pod NS/NAME]
//! ```
//!
//! Prints how many pods agree per class, the documented differences met, and every other
//! difference; exits 1 when there is one (or a case fails), 2 on bad arguments or a missing
//! oracle. `--shrink SEED` shrinks that case while the pod (the first differing one unless
//! `--pod` names it) still differs the same way, and leaves it in `DIR/shrunk-SEED`.

use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use kube_reference::differential::{self, Settings, case_dir};
use kube_reference::generator;
use kube_reference::oracle::Oracle;
use kube_reference::replay::PodResult;

struct Args {
    settings: Settings,
    shrink: Option<u64>,
    pod: Option<String>,
}

fn usage() -> String {
    "usage: differential [--seeds A..B] [--dir DIR] [--percentage N] [--workers N] \
     [--shrink SEED [--pod NS/NAME]]"
        .into()
}

fn parse_range(v: &str) -> Result<Range<u64>, String> {
    let (a, b) = v
        .split_once("..")
        .ok_or_else(|| format!("--seeds takes A..B, not {v:?}"))?;
    let a = a.parse().map_err(|_| format!("--seeds: bad start {a:?}"))?;
    let b = b.parse().map_err(|_| format!("--seeds: bad end {b:?}"))?;
    if b <= a {
        return Err(format!("--seeds {v}: empty range"));
    }
    Ok(a..b)
}

fn parse_args() -> Result<Args, String> {
    let mut settings = Settings {
        seeds: 0..300,
        dir: PathBuf::from("target/differential"),
        percentage: 100,
        workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let (mut shrink, mut pod) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--seeds" => settings.seeds = parse_range(&value()?)?,
            "--dir" => settings.dir = PathBuf::from(value()?),
            "--percentage" => {
                let v = value()?;
                settings.percentage = v
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("--percentage takes 0..=100, not {v:?}"))?;
            }
            "--workers" => {
                let v = value()?;
                settings.workers = v
                    .parse()
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or_else(|| format!("--workers takes a positive number, not {v:?}"))?;
            }
            "--shrink" => {
                let v = value()?;
                shrink = Some(
                    v.parse()
                        .map_err(|_| format!("--shrink takes a seed, not {v:?}"))?,
                );
            }
            "--pod" => pod = Some(value()?),
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    if pod.is_some() && shrink.is_none() {
        return Err(format!("--pod needs --shrink\n{}", usage()));
    }
    Ok(Args {
        settings,
        shrink,
        pod,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let oracle = match Oracle::locate() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("differential: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.shrink {
        return shrink(&oracle, &args.settings, seed, args.pod.as_deref());
    }
    let started = std::time::Instant::now();
    match differential::run(&oracle, &args.settings) {
        Ok(summary) => {
            print!("{summary}");
            println!("({:.1} s)", started.elapsed().as_secs_f64());
            if summary.clean() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("differential: {e}");
            ExitCode::from(1)
        }
    }
}

fn shrink(oracle: &Oracle, settings: &Settings, seed: u64, pod: Option<&str>) -> ExitCode {
    let case = generator::generate(seed);
    let dir = case_dir(&settings.dir, seed);
    if let Err(e) = case.write(&dir).map_err(|e| e.to_string()).and_then(|()| {
        oracle
            .run(std::slice::from_ref(&dir), settings.percentage)
            .map_err(|e| e.to_string())
    }) {
        eprintln!("differential: seed {seed}: {e}");
        return ExitCode::from(1);
    }
    let results = match differential::replay_dir(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("differential: seed {seed}: {e}");
            return ExitCode::from(1);
        }
    };
    let Some((target, _)) = results
        .into_iter()
        .find(|(r, doc)| !r.class.agrees() && doc.is_none() && pod.is_none_or(|p| r.pod == p))
    else {
        println!("seed {seed}: no pod differs outside the documented differences");
        return ExitCode::SUCCESS;
    };
    println!(
        "seed {seed}: shrinking while {} stays {}",
        target.pod, target.class
    );
    let out = settings.dir.join(format!("shrunk-{seed:05}"));
    let still = |results: &[PodResult]| {
        results
            .iter()
            .any(|r| r.pod == target.pod && r.class == target.class)
    };
    match differential::shrink(oracle, case, &out, settings.percentage, &still) {
        Ok(small) => {
            println!(
                "{}: {} nodes, {} pods ({} pending), {} objects, {}",
                out.display(),
                small.nodes.len(),
                small.pods.len(),
                small.pending(),
                small.objects.len(),
                if small.config.is_some() {
                    "a configuration"
                } else {
                    "no configuration"
                }
            );
            if let Ok(results) = differential::replay_dir(&out) {
                for (r, _) in results.iter().filter(|(r, _)| r.pod == target.pod) {
                    println!("{r}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("differential: {e}");
            ExitCode::from(1)
        }
    }
}
