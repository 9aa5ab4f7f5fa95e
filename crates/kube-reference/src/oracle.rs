//! What kube-scheduler answered for a case: the `oracle.json` the Go oracle
//! (`reference/cmd/oracle`) writes into a case folder, one entry per pending pod in order.
//!
//! The format is the one of the cases recorded from kube-scheduler v1.34.1 that the project
//! keeps as fixtures (`tests/data/kube-v1.34/`), with the oracle's additions (gated pods, the
//! PostFilter outcome, the node order and the nodes evaluated) as optional fields, so both read
//! with the same types.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The whole of an `oracle.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleFile {
    /// How kube was run.
    pub meta: Meta,
    /// One answer per pending pod, in the order kube scheduled them (the order of `pods.json`).
    pub pods: Vec<PodAnswer>,
}

/// How kube was run on the case.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Meta {
    /// kube's version (`v1.34.4`).
    pub version: String,
    /// The profiles (scheduler names), in the configuration's order.
    pub profiles: Vec<String>,
    /// Each profile's score plugins with their weights, in kube's order.
    pub score_plugins: BTreeMap<String, Vec<ScorePlugin>>,
    /// The number of nodes.
    pub nodes: usize,
    /// Pods bound to a node at the start.
    pub bound_pods: usize,
    /// Pods to schedule.
    pub pending_pods: usize,
    /// The configuration file of the case, when it has one.
    pub config: Option<String>,
    /// The global percentage of nodes to score kube used (0: adaptive; a profile's own in the
    /// configuration wins for its pods). `None` in older files.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Nodes in the order kube's snapshot lists them (its zone-interleaved node tree), which
    /// decides, with a percentage below 100, which nodes a pod's search evaluates.
    pub node_order: Vec<String>,
}

/// A score plugin of a profile and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScorePlugin {
    /// The plugin's name (`NodeResourcesFit`).
    pub name: String,
    /// Its weight in the profile.
    pub weight: i64,
}

/// kube's answer for one pending pod.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAnswer {
    /// `namespace/name`.
    pub pod: String,
    /// Set when a PreEnqueue plugin kept the pod out of the queue (a scheduling gate): the
    /// plugin's message. Nothing else is set then.
    pub gated: Option<String>,
    /// Set when kube failed with an error that is not a FitError (the error's text).
    pub error: Option<String>,
    /// Nodes that passed every filter (of those evaluated).
    pub feasible: Vec<String>,
    /// Whether scoring ran (kube skips it when one node is feasible).
    pub scored: bool,
    /// Per feasible node: each score plugin's weighted, normalized score and the total.
    pub scores: BTreeMap<String, NodeScores>,
    /// The highest total.
    pub max_total: Option<i64>,
    /// The nodes with the highest total.
    pub tied: Vec<String>,
    /// Where kube put the pod (one of `tied`); the replay assumes the pod there.
    pub chosen: Option<String>,
    /// The PersistentVolume VolumeBinding's Reserve assumed for each claim it bound there
    /// (claim `namespace/name` -> PV name): kube takes the first of the smallest PVs that
    /// fit in its assume cache's order (a Go map's), so the replay takes the same one. Set
    /// for a placed pod; `None` otherwise and in older files.
    pub volumes: Option<BTreeMap<String, String>>,
    /// How many nodes kube's search looked at (feasible plus rejected).
    pub evaluated_nodes: Option<usize>,
    /// Where kube's search for feasible nodes started in `meta.nodeOrder` (kube's
    /// `nextStartNodeIndex` before the pod). `None` for a gated pod and in older files.
    pub start_index: Option<usize>,
    /// Where the next pod's search starts (the index after the pod: advanced by the nodes
    /// processed, modulo the number of nodes).
    pub next_start_index: Option<usize>,
    /// The nodes kube's search processed, in its order, each once: the feasible nodes it
    /// kept and those its filters rejected (a nominated node tried first included). `None`
    /// in older files.
    pub evaluated: Option<Vec<String>>,
    /// When nothing fits: kube's FitError text before PostFilter ran.
    pub fit_error: Option<String>,
    /// When nothing fits: every node's reasons.
    pub reasons: BTreeMap<String, Vec<String>>,
    /// When a PreFilter plugin rejected the pod: its message.
    pub pre_filter_msg: Option<String>,
    /// When nothing fits and the profile has PostFilter plugins: their outcome.
    pub post_filter: Option<PostFilter>,
}

/// Per-node scores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeScores {
    /// Score plugin name -> weighted score.
    pub plugins: BTreeMap<String, i64>,
    /// The sum of the weighted scores (and of extenders' scores).
    pub total: i64,
}

/// The PostFilter outcome (kube's DefaultPreemption) for a pod that fits nowhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PostFilter {
    /// PostFilter's status code (`Success`, `Unschedulable`, `Error`).
    pub code: String,
    /// Its message (for an unhelpful preemption, the "preemption: ..." text that kube appends
    /// to the FitError).
    pub message: String,
    /// The node kube nominated, when preemption found one.
    pub nominated_node: Option<String>,
    /// The pods kube deleted for it (`namespace/name`), sorted.
    pub victims: Vec<String>,
    /// The FitError text kube reports after PostFilter (with its "preemption:" part).
    pub fit_error: Option<String>,
}

/// An `oracle.json` that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OracleFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not an oracle answer.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: String,
        /// Why.
        source: serde_json::Error,
    },
}

impl OracleFile {
    /// Whether the answers record kube's PostFilter outcome: the project's oracle writes it
    /// (`postFilter`, for every pod that fits nowhere in a profile with PostFilter plugins)
    /// with the node order (`meta.nodeOrder`); the cases recorded from kube v1.34.1 have
    /// neither.
    pub fn records_post_filter(&self) -> bool {
        !self.meta.node_order.is_empty()
    }

    /// Reads an `oracle.json`.
    pub fn read(path: &Path) -> Result<OracleFile, OracleFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| OracleFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| OracleFileError::Json {
            path: path.display().to_string(),
            source,
        })
    }
}

/// The oracle program (`reference/cmd/oracle`, built by `scripts/reference.sh`).
#[derive(Debug, Clone)]
pub struct Oracle {
    bin: std::path::PathBuf,
}

/// The oracle program is not there.
#[derive(Debug, thiserror::Error)]
#[error(
    "the kube-scheduler oracle is missing: {path} (build it with `bash scripts/reference.sh`; \
     KUBE_REFERENCE_BIN names its directory)"
)]
pub struct OracleMissing {
    /// Where it was looked for.
    pub path: String,
}

/// The oracle failed on cases.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleRunError {
    /// The program could not be started.
    #[error("{bin}: {source}")]
    Spawn {
        /// The program.
        bin: String,
        /// Why.
        source: std::io::Error,
    },
    /// The program failed; its last lines of output say why.
    #[error("{bin} failed ({status}):\n{stderr}")]
    Failed {
        /// The program.
        bin: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The end of its standard error (at most 4 KiB).
        stderr: String,
    },
}

/// Cases given to one oracle process (one scheduler each, built and torn down in turn).
const CASES_PER_PROCESS: usize = 64;

impl Oracle {
    /// The oracle in `$KUBE_REFERENCE_BIN`, else in the workspace's `target/reference/bin`.
    pub fn locate() -> Result<Oracle, OracleMissing> {
        let dir = std::env::var_os("KUBE_REFERENCE_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reference/bin")
            });
        let bin = dir.join("oracle");
        if bin.is_file() {
            Ok(Oracle { bin })
        } else {
            Err(OracleMissing {
                path: bin.display().to_string(),
            })
        }
    }

    /// Runs kube on each case folder, writing its `oracle.json`: every node scored unless
    /// `percentage` says otherwise (0: kube's adaptive default), one thread.
    pub fn run(&self, dirs: &[std::path::PathBuf], percentage: u32) -> Result<(), OracleRunError> {
        for chunk in dirs.chunks(CASES_PER_PROCESS) {
            let out = std::process::Command::new(&self.bin)
                .arg(format!("-percentage={percentage}"))
                .args(chunk)
                .output()
                .map_err(|source| OracleRunError::Spawn {
                    bin: self.bin.display().to_string(),
                    source,
                })?;
            if !out.status.success() {
                let text = String::from_utf8_lossy(&out.stderr);
                let start = text.len().saturating_sub(4096);
                let start = (start..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(text.len());
                return Err(OracleRunError::Failed {
                    bin: self.bin.display().to_string(),
                    status: out.status,
                    stderr: text[start..].to_string(),
                });
            }
        }
        Ok(())
    }
}
