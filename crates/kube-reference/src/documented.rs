//! The differences from kube-scheduler v1.34 that sched-core keeps on purpose, each written in
//! the README and pinned by a test (`tests/documented.rs`) that names it. The differential
//! suite sets apart a pod whose difference one of these explains; any other difference fails
//! the suite.

use crate::case::Case;
use crate::oracle::PodAnswer;
use crate::replay::PodResult;

/// A documented difference.
#[derive(Debug)]
pub struct Documented {
    /// Its name, as the README and its test give it.
    pub id: &'static str,
    /// What differs and why, in a sentence.
    pub summary: &'static str,
    /// Whether it explains this pod's difference.
    pub applies: fn(&PodResult, &PodAnswer, &Case) -> bool,
}

/// Every documented difference.
pub const DOCUMENTED: &[Documented] = &[];

/// The documented difference that explains a pod's difference, if one does.
pub fn explain(result: &PodResult, answer: &PodAnswer, case: &Case) -> Option<&'static Documented> {
    DOCUMENTED
        .iter()
        .find(|d| (d.applies)(result, answer, case))
}
