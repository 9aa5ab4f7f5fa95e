//! GeneralPredicates: resources, host name, host ports and node selector in one predicate.

use crate::fast_path::{FastFilter, Sealed};
use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason, ResourceSet};
use crate::snapshot::HostPort;
use crate::snapshot::NodeRef;

use super::affinity::RequiredState;
use super::host_name::{HostName, HostNameState};
use super::ports::{ports_conflict, wanted_ports};
use super::resources::{FitState, PodFitsResources};

/// kube's legacy `GeneralPredicates`: [`PodFitsResources`], then [`HostName`],
/// [`super::PodFitsHostPorts`] and [`super::MatchNodeSelector`], with their semantics and
/// reasons. No argument (the resource check can be given ignored extended resources with
/// [`GeneralPredicates::with_resources`]).
///
/// kube collects the reasons of all four; the framework keeps one reason per predicate, so the
/// first failing check's reason is returned, in kube's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneralPredicates {
    resources: PodFitsResources,
}

impl GeneralPredicates {
    /// The predicate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses this resource check (e.g. with ignored extended resources).
    #[must_use]
    pub fn with_resources(mut self, resources: PodFitsResources) -> Self {
        self.resources = resources;
        self
    }

    fn state(&self, cx: &CycleContext<'_>) -> GeneralState {
        GeneralState {
            fit: self.resources.state(cx),
            host: HostName::state(cx),
            ports: wanted_ports(cx.pod()),
            selector: RequiredState::compile(cx),
        }
    }

    fn check(
        &self,
        cx: &CycleContext<'_>,
        st: &GeneralState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        self.resources.check(cx, &st.fit, node)?;
        if let Some(host) = &st.host {
            HostName::check(host, node)?;
        }
        if ports_conflict(&st.ports, node) {
            return Err(Reason::PortsConflict);
        }
        if let Some(sel) = &st.selector
            && !sel.matches(cx, node)
        {
            return Err(Reason::NodeSelectorMismatch);
        }
        Ok(())
    }
}

/// Per-pod state of the four checks.
#[derive(Debug, Default)]
pub struct GeneralState {
    fit: FitState,
    host: Option<HostNameState>,
    ports: Vec<HostPort>,
    selector: Option<RequiredState>,
}

impl Predicate for GeneralPredicates {
    type State = GeneralState;

    fn name(&self) -> &str {
        "GeneralPredicates"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        Ok(Prepared::Run(self.state(cx)))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        {
            let st = state;
            self.check(cx, st, node)
        }
    }

    fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        _: Sealed,
    ) -> Option<FastFilter> {
        let st = state;
        if st.host.is_some() || !st.ports.is_empty() || st.selector.is_some() {
            return None;
        }
        st.fit.fast_filter(cx.requests())
    }

    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        let st = state;
        let snapshot = cx.snapshot();
        if st.host.is_none() && st.ports.is_empty() && st.selector.is_none() {
            // Only the resource check has anything to do (the common pod).
            if !st.fit.reads_node_info() {
                // No scalar request either: the summaries say it all.
                let (req, summaries) = (cx.requests(), snapshot.summaries());
                for (o, &i) in out.iter_mut().zip(nodes) {
                    let lacking =
                        PodFitsResources::lacking_in_summary(req, &st.fit, &summaries[i as usize]);
                    *o = if lacking == 0 {
                        Ok(())
                    } else {
                        Err(Reason::Insufficient(ResourceSet(lacking)))
                    };
                }
                return;
            }
            for (o, &i) in out.iter_mut().zip(nodes) {
                *o = self.resources.check(cx, &st.fit, snapshot.node(i as usize));
            }
            return;
        }
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.check(cx, st, snapshot.node(i as usize));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::framework::ResourceSet;
    use crate::model::{Container, ContainerPort, Node, Pod};

    fn machine(name: &str, labels: &[(&str, &str)]) -> Node {
        let mut n = labeled(name, labels);
        n.status.allocatable = list(&[("cpu", "10m"), ("memory", "20"), ("pods", "32")]);
        n
    }

    fn requesting(cpu: &str, mem: &str) -> Pod {
        let mut p = pod();
        p.spec.containers = vec![container(&[("cpu", cpu), ("memory", mem)])];
        p
    }

    fn with_port(mut p: Pod, port: i32) -> Pod {
        p.spec.containers.push(Container {
            ports: vec![ContainerPort {
                host_port: port,
                ..ContainerPort::default()
            }],
            ..Container::default()
        });
        p
    }

    // kube: predicates_test.go TestGeneralPredicates.
    #[test]
    fn general_predicates() {
        let g = GeneralPredicates::new();
        // No resources / port / host: fits.
        let snap = snapshot(
            vec![machine("machine1", &[])],
            vec![(0, requesting("9m", "19"))],
        );
        assert_eq!(filter(&g, &pod(), &snap, 0), Ok(()));
        // Resource fits.
        let snap = snapshot(
            vec![machine("machine1", &[])],
            vec![(0, requesting("5m", "5"))],
        );
        assert_eq!(filter(&g, &requesting("3m", "3"), &snap, 0), Ok(()));
        // Not enough cpu and memory resource.
        let snap = snapshot(
            vec![machine("machine1", &[])],
            vec![(0, requesting("9m", "19"))],
        );
        let got = filter(&g, &requesting("8m", "10"), &snap, 0);
        assert_eq!(
            got,
            Err(Reason::Insufficient(ResourceSet(
                ResourceSet::CPU | ResourceSet::MEMORY
            )))
        );
        assert_eq!(
            messages(got.unwrap_err(), &requesting("8m", "10"), &snap, 0),
            vec!["Insufficient cpu", "Insufficient memory"]
        );
        // Host not match.
        let mut p = pod();
        p.spec.node_name = "machine2".into();
        let snap = snapshot(vec![machine("machine1", &[])], vec![]);
        assert_eq!(filter(&g, &p, &snap, 0), Err(Reason::NodeNameMismatch));
        // Host port conflict.
        let snap = snapshot(
            vec![machine("machine1", &[])],
            vec![(0, with_port(pod(), 123))],
        );
        assert_eq!(
            filter(&g, &with_port(pod(), 123), &snap, 0),
            Err(Reason::PortsConflict)
        );
        // Node selector.
        let mut p = pod();
        p.spec.node_selector = [("a".to_string(), "b".to_string())].into();
        let snap = snapshot(
            vec![
                machine("machine1", &[("a", "c")]),
                machine("machine2", &[("a", "b")]),
            ],
            vec![],
        );
        assert_eq!(
            filter_all(&g, &p, &snap),
            vec![Err(Reason::NodeSelectorMismatch), Ok(())]
        );
        // Resources come first.
        let mut p = with_port(requesting("11m", "1"), 123);
        p.spec.node_name = "other".into();
        let snap = snapshot(
            vec![machine("machine1", &[])],
            vec![(0, with_port(pod(), 123))],
        );
        assert_eq!(
            filter(&g, &p, &snap, 0),
            Err(Reason::Insufficient(ResourceSet(ResourceSet::CPU)))
        );
    }
}
