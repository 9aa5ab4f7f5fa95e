//! The differential suite: random cases ([`generator`]) through kube-scheduler itself
//! ([`Oracle`]) and through sched-core ([`replay`]), every pending pod classified, and each
//! difference either documented ([`documented`]) or reported.
//!
//! ```text
//! seed -> GenCase -> case folder -> oracle (kube v1.34.4) -> oracle.json
//!                                -> Case::read -> replay (sched-core) -> PodResult per pod
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::case::Case;
use crate::documented::{self, Documented};
use crate::generator::{self, GenCase};
use crate::oracle::{Oracle, OracleFile, OracleRunError};
use crate::replay::{Class, PodResult, replay};

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The seeds: one case each.
    pub seeds: Range<u64>,
    /// Where the case folders go (`case-<seed>` each; rewritten on every run).
    pub dir: PathBuf,
    /// kube's percentage of nodes to score (100: every node; 0: kube's adaptive default).
    pub percentage: u32,
    /// Oracle processes and replay threads at once.
    pub workers: usize,
}

/// A pod whose two answers differ, outside the documented differences.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The case's seed.
    pub seed: u64,
    /// The pod and what differs.
    pub result: PodResult,
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Cases run.
    pub cases: usize,
    /// Pending pods compared.
    pub pods: usize,
    /// Pods per class (before documented differences are set apart).
    pub classes: BTreeMap<Class, usize>,
    /// Pods per documented difference.
    pub documented: BTreeMap<&'static str, usize>,
    /// Differences no documentation covers.
    pub findings: Vec<Finding>,
    /// Cases that could not be run (the oracle or the replay failed on them).
    pub errors: Vec<(u64, String)>,
}

impl Summary {
    /// Whether every pod agrees or differs only as documented, and every case ran.
    pub fn clean(&self) -> bool {
        self.findings.is_empty() && self.errors.is_empty()
    }
}

/// A run that could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DifferentialError {
    /// A case folder could not be written.
    #[error("{dir}: {source}")]
    Write {
        /// The folder.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
}

/// The folder of a seed's case.
pub fn case_dir(dir: &Path, seed: u64) -> PathBuf {
    dir.join(format!("case-{seed:05}"))
}

/// Generates the cases of `settings.seeds`, runs kube on them, replays them through sched-core
/// and sums up.
pub fn run(oracle: &Oracle, settings: &Settings) -> Result<Summary, DifferentialError> {
    let seeds: Vec<u64> = settings.seeds.clone().collect();
    let mut dirs = Vec::with_capacity(seeds.len());
    for &seed in &seeds {
        let dir = case_dir(&settings.dir, seed);
        let _ = std::fs::remove_file(dir.join("oracle.json"));
        generator::generate(seed)
            .write(&dir)
            .map_err(|source| DifferentialError::Write {
                dir: dir.display().to_string(),
                source,
            })?;
        dirs.push(dir);
    }
    let workers = settings.workers.max(1);
    let per_worker = dirs.len().div_ceil(workers).max(1);
    // kube on every case, `workers` processes at a time. A failing case does not stop the
    // others: its folder has no oracle.json and it is reported below.
    let oracle_errors: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .chunks(per_worker)
            .map(|chunk| s.spawn(move || oracle.run(chunk, settings.percentage)))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("an oracle worker panicked".into()),
            })
            .collect()
    });
    let outcomes: Vec<(u64, Result<Explained, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .chunks(per_worker)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&seed| (seed, replay_dir(&case_dir(&settings.dir, seed))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut summary = Summary {
        cases: seeds.len(),
        ..Summary::default()
    };
    for (seed, outcome) in outcomes {
        match outcome {
            Ok(results) => {
                for (result, doc) in results {
                    summary.pods += 1;
                    *summary.classes.entry(result.class).or_default() += 1;
                    if let Some(doc) = doc {
                        *summary.documented.entry(doc.id).or_default() += 1;
                    } else if !result.class.agrees() {
                        summary.findings.push(Finding { seed, result });
                    }
                }
            }
            Err(e) => summary.errors.push((seed, e)),
        }
    }
    if summary.errors.is_empty() {
        for e in oracle_errors {
            summary.errors.push((u64::MAX, e));
        }
    }
    Ok(summary)
}

/// Each pod's result, with the documented difference that explains it, if any.
pub type Explained = Vec<(PodResult, Option<&'static Documented>)>;

/// Replays one case folder against its `oracle.json`, each difference matched against the
/// documented ones.
pub fn replay_dir(dir: &Path) -> Result<Vec<(PodResult, Option<&'static Documented>)>, String> {
    let case = Case::read(dir).map_err(|e| e.to_string())?;
    let oracle = OracleFile::read(&dir.join("oracle.json")).map_err(|e| e.to_string())?;
    let results = replay(&case, &oracle).map_err(|e| e.to_string())?;
    Ok(results
        .into_iter()
        .zip(&oracle.pods)
        .map(|(result, answer)| {
            let doc = if result.class.agrees() {
                None
            } else {
                documented::explain(&result, answer, &case)
            };
            (result, doc)
        })
        .collect())
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} cases, {} pending pods compared with kube-scheduler",
            self.cases, self.pods
        )?;
        for (class, n) in &self.classes {
            let pct = 100.0 * *n as f64 / self.pods.max(1) as f64;
            writeln!(f, "  {:<10} {n:>6}  {pct:5.1}%", class.as_str())?;
        }
        if !self.documented.is_empty() {
            writeln!(f, "documented differences:")?;
            for (id, n) in &self.documented {
                writeln!(f, "  {id}: {n} pods")?;
            }
        }
        if !self.findings.is_empty() {
            writeln!(
                f,
                "{} pods differ outside the documented differences:",
                self.findings.len()
            )?;
            for finding in self.findings.iter().take(20) {
                writeln!(f, "seed {}: {}", finding.seed, finding.result)?;
            }
            if self.findings.len() > 20 {
                writeln!(f, "... and {} more", self.findings.len() - 20)?;
            }
        }
        for (seed, e) in &self.errors {
            if *seed == u64::MAX {
                writeln!(f, "oracle: {e}")?;
            } else {
                writeln!(f, "seed {seed}: {e}")?;
            }
        }
        Ok(())
    }
}

/// Shrinks a case while `still` holds for the replay of the smaller case: removes the
/// configuration, pods after the first one `still` names, objects, running pods, pending pods
/// and nodes (with their pods), one at a time, as long as anything goes. Each step writes the
/// case to `dir` and runs the oracle on it. Returns the smallest case found.
pub fn shrink(
    oracle: &Oracle,
    mut case: GenCase,
    dir: &Path,
    percentage: u32,
    still: &dyn Fn(&[PodResult]) -> bool,
) -> Result<GenCase, OracleRunError> {
    let holds = |c: &GenCase| -> Result<bool, OracleRunError> {
        if c.write(dir).is_err() {
            return Ok(false);
        }
        oracle.run(&[dir.to_path_buf()], percentage)?;
        Ok(replay_dir(dir).is_ok_and(|r| {
            let results: Vec<PodResult> = r.into_iter().map(|(p, _)| p).collect();
            still(&results)
        }))
    };
    loop {
        let mut progress = false;
        if case.config.is_some() {
            let mut c = case.clone();
            c.config = None;
            if holds(&c)? {
                case = c;
                progress = true;
            }
        }
        for list in [List::Objects, List::Pods, List::Nodes] {
            let mut i = list.len(&case);
            while i > 0 {
                i -= 1;
                if i >= list.len(&case) {
                    continue;
                }
                let c = list.without(&case, i);
                if !c.nodes.is_empty() && c.pending() > 0 && holds(&c)? {
                    case = c;
                    progress = true;
                }
            }
        }
        if !progress {
            break;
        }
    }
    case.write(dir).ok();
    oracle.run(&[dir.to_path_buf()], percentage)?;
    Ok(case)
}

#[derive(Clone, Copy)]
enum List {
    Objects,
    Pods,
    Nodes,
}

impl List {
    fn len(self, c: &GenCase) -> usize {
        match self {
            List::Objects => c.objects.len(),
            List::Pods => c.pods.len(),
            List::Nodes => c.nodes.len(),
        }
    }

    fn without(self, c: &GenCase, i: usize) -> GenCase {
        let mut c = c.clone();
        match self {
            List::Objects => {
                c.objects.remove(i);
            }
            List::Pods => {
                c.pods.remove(i);
            }
            List::Nodes => {
                let node = c.nodes.remove(i);
                let name = node["metadata"]["name"].clone();
                c.pods.retain(|p| p["spec"]["nodeName"] != name);
                c.objects
                    .retain(|o| !(o["kind"] == "CSINode" && o["metadata"]["name"] == name));
            }
        }
        c
    }
}
