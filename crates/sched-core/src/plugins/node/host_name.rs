//! HostName: a pod that names its node runs only there.

use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::snapshot::NodeRef;

/// kube's `HostName` predicate (legacy `PodFitsHost`; framework plugin `NodeName`). No
/// argument.
///
/// When `spec.nodeName` is set, only the node of that name passes; failure:
/// "node(s) didn't match the requested node name". Pods without a node name skip it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostName;

impl HostName {
    /// The predicate.
    pub fn new() -> Self {
        HostName
    }
}

/// Per-pod state: the snapshot index of the named node (`None` if it is not in the snapshot).
#[derive(Debug, Default)]
pub struct HostNameState(pub(crate) Option<usize>);

impl HostName {
    pub(crate) fn state(cx: &CycleContext<'_>) -> Option<HostNameState> {
        let name = &cx.pod().spec.node_name;
        if name.is_empty() {
            None
        } else {
            Some(HostNameState(cx.snapshot().index_of(name)))
        }
    }

    pub(crate) fn check(st: &HostNameState, node: NodeRef<'_>) -> Result<(), Reason> {
        if st.0 == Some(node.index()) {
            Ok(())
        } else {
            Err(Reason::NodeNameMismatch)
        }
    }
}

impl Predicate for HostName {
    type State = HostNameState;

    fn name(&self) -> &str {
        "HostName"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        Ok(match Self::state(cx) {
            None => Prepared::Skip,
            Some(st) => Prepared::Run(st),
        })
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        {
            let st = state;
            Self::check(st, node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    // kube: nodename/node_name_test.go TestNodeName.
    #[test]
    fn node_name() {
        let snap = snapshot(vec![node("foo"), node("bar")], vec![]);
        // No host specified: fits everywhere.
        assert_eq!(filter_all(&HostName, &pod(), &snap), vec![Ok(()), Ok(())]);
        assert!(skips(&HostName, &pod(), &snap));
        // Host matches.
        let mut p = pod();
        p.spec.node_name = "foo".into();
        assert_eq!(filter(&HostName, &p, &snap, 0), Ok(()));
        // Host doesn't match.
        assert_eq!(
            filter(&HostName, &p, &snap, 1),
            Err(Reason::NodeNameMismatch)
        );
        // A node not in the snapshot matches nothing.
        p.spec.node_name = "gone".into();
        assert_eq!(
            filter_all(&HostName, &p, &snap),
            vec![Err(Reason::NodeNameMismatch), Err(Reason::NodeNameMismatch)]
        );
        assert_eq!(
            messages(Reason::NodeNameMismatch, &p, &snap, 1),
            vec!["node(s) didn't match the requested node name"]
        );
    }
}
