//! PodDisruptionBudgets as preemption weighs them (kube's `filterPodsWithPDBViolation`).

use crate::model::{Pod, PodDisruptionBudget};
use crate::plugins::interpod::selector;

/// Whether `pdb` covers `pod`, as kube's preemption decides: same namespace, a selector that
/// is set, valid and not empty, and that matches the pod's labels.
pub fn covers(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if pdb.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    let Some(sel) = &pdb.spec.selector else {
        // A nil selector selects nothing.
        return false;
    };
    if selector::validate(sel).is_err() || selector::is_empty(sel) {
        return false;
    }
    selector::matches(sel, &pod.metadata.labels)
}

/// Splits `pods` into those whose deletion would violate a PodDisruptionBudget and the others
/// (kube's `filterPodsWithPDBViolation`), each in the given order. Each budget starts at its
/// `status.disruptionsAllowed` and loses one per covered pod, in order; a pod that takes a
/// budget below zero violates it. Pods listed in a budget's `status.disruptedPods` were
/// already counted by the API server and take nothing from it; pods without labels match no
/// budget.
///
/// ```
/// use sched_core::model::{Pod, PodDisruptionBudget};
/// use sched_core::scheduler::pdb::split_by_violation;
///
/// let pdb: PodDisruptionBudget = serde_json::from_str(r#"{"metadata":{"namespace":"ns"},
///     "spec":{"selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":1}}"#)?;
/// let web = |name: &str| -> Pod {
///     serde_json::from_str(&format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns",
///         "labels":{{"app":"web"}}}}}}"#)).unwrap()
/// };
/// let pods = [web("a"), web("b")];
/// let (violating, other) = split_by_violation(&pods, &[pdb]);
/// assert_eq!(violating.len(), 1); // the budget allows one: the second pod violates it
/// assert_eq!(violating[0].metadata.name, "b");
/// assert_eq!(other[0].metadata.name, "a");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn split_by_violation<'p>(
    pods: &'p [Pod],
    pdbs: &[PodDisruptionBudget],
) -> (Vec<&'p Pod>, Vec<&'p Pod>) {
    let flags = violation_flags(pods.iter(), pdbs);
    let (mut violating, mut other) = (Vec::new(), Vec::new());
    for (pod, violated) in pods.iter().zip(flags) {
        if violated {
            violating.push(pod);
        } else {
            other.push(pod);
        }
    }
    (violating, other)
}

/// For each pod in order, whether deleting it (after the ones before it) violates a budget:
/// kube's `filterPodsWithPDBViolation`, each budget's `disruptionsAllowed` counted down per
/// matching pod (pods in its `disruptedPods` not counted).
pub(crate) fn violation_flags<'p>(
    pods: impl Iterator<Item = &'p Pod>,
    pdbs: &[PodDisruptionBudget],
) -> Vec<bool> {
    let mut allowed: Vec<i64> = pdbs
        .iter()
        .map(|p| i64::from(p.status.disruptions_allowed))
        .collect();
    pods.map(|pod| {
        let mut violated = false;
        if !pod.metadata.labels.is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if !covers(pdb, pod) {
                    continue;
                }
                if pdb.status.disrupted_pods.contains_key(&pod.metadata.name) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        violated
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(
        ns: &str,
        selector: Option<&str>,
        allowed: i32,
        disrupted: &[&str],
    ) -> PodDisruptionBudget {
        let mut p = PodDisruptionBudget::default();
        p.metadata.namespace = ns.into();
        p.metadata.name = "b".into();
        p.spec.selector = selector.map(|s| serde_json::from_str(s).unwrap());
        p.status.disruptions_allowed = allowed;
        for d in disrupted {
            p.status.disrupted_pods.insert(d.to_string(), String::new());
        }
        p
    }

    fn pod(name: &str, ns: &str, app: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.namespace = ns.into();
        if let Some(a) = app {
            p.metadata.labels.insert("app".into(), a.into());
        }
        p
    }

    fn names(v: &[&Pod]) -> Vec<String> {
        v.iter().map(|p| p.metadata.name.clone()).collect()
    }

    #[test]
    fn budgets_count_down_per_covered_pod() {
        let sel = Some(r#"{"matchLabels":{"app":"foo"}}"#);
        let pods = [
            pod("p1", "ns", Some("foo")),
            pod("p2", "ns", Some("foo")),
            pod("p3", "ns", Some("foo")),
        ];
        // disruptionsAllowed 1: the first is fine, the others violate.
        let (v, o) = split_by_violation(&pods, &[pdb("ns", sel, 1, &[])]);
        assert_eq!(
            (names(&v), names(&o)),
            (vec!["p2".into(), "p3".into()], vec!["p1".to_string()])
        );
        // A pod in disruptedPods takes nothing: p2 is free, p1 takes the one allowed.
        let (v, o) = split_by_violation(&pods, &[pdb("ns", sel, 1, &["p2"])]);
        assert_eq!(names(&v), ["p3"]);
        assert_eq!(names(&o), ["p1", "p2"]);
        // Other namespace, nil selector, empty selector, invalid selector: no budget applies.
        for b in [
            pdb("other", sel, 0, &[]),
            pdb("ns", None, 0, &[]),
            pdb("ns", Some("{}"), 0, &[]),
            pdb(
                "ns",
                Some(r#"{"matchExpressions":[{"key":"app","operator":"In"}]}"#),
                0,
                &[],
            ),
        ] {
            let (v, _) = split_by_violation(&pods, &[b]);
            assert!(v.is_empty());
        }
        // Unlabelled pods match nothing, even an expression that holds for missing labels.
        let doesnt = Some(r#"{"matchExpressions":[{"key":"x","operator":"DoesNotExist"}]}"#);
        let bare = [pod("q", "ns", None)];
        let (v, _) = split_by_violation(&bare, &[pdb("ns", doesnt, 0, &[])]);
        assert!(v.is_empty());
        let labelled = [pod("q", "ns", Some("a"))];
        let (v, _) = split_by_violation(&labelled, &[pdb("ns", doesnt, 0, &[])]);
        assert_eq!(names(&v), ["q"]);
    }
}
