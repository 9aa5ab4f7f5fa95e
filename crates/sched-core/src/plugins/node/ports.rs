//! PodFitsHostPorts: are the pod's host ports free on the node?

use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::model::Pod;
use crate::snapshot::NodeRef;
use crate::snapshot::{HostPort, flags};

/// kube's `PodFitsHostPorts` predicate (legacy alias `PodFitsPorts`; framework plugin
/// `NodePorts`). No argument.
///
/// Each host port the pod's containers ask for (host port > 0; protocol defaults to TCP, host
/// IP to `0.0.0.0`) must not be in use on the node by an existing pod with the same protocol
/// and port on the same IP, where `0.0.0.0` on either side conflicts with every IP. The pod's
/// own ports are not checked against each other, as in kube. Failure:
/// "node(s) didn't have free ports for the requested pod ports".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodFitsHostPorts;

impl PodFitsHostPorts {
    /// The predicate.
    pub fn new() -> Self {
        PodFitsHostPorts
    }
}

/// The host ports a pod wants, as kube's `HostPortInfo.CheckConflict` sees them (port > 0).
pub(crate) fn wanted_ports(pod: &Pod) -> Vec<HostPort> {
    let mut ports = HostPort::of_pod(pod);
    ports.retain(|p| p.port > 0);
    ports
}

/// Whether any wanted port conflicts with a port in use on the node.
pub(crate) fn ports_conflict(want: &[HostPort], node: NodeRef<'_>) -> bool {
    if want.is_empty() || !node.summary().has(flags::USED_PORTS) {
        return false;
    }
    let used = node.info().used_ports();
    want.iter()
        .any(|w| used.iter().any(|u| w.conflicts_with(u)))
}

/// Per-pod state: the wanted ports.
#[derive(Debug, Default)]
pub struct PortsState(pub(crate) Vec<HostPort>);

impl Predicate for PodFitsHostPorts {
    type State = PortsState;

    fn name(&self) -> &str {
        "PodFitsHostPorts"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let want = wanted_ports(cx.pod());
        if want.is_empty() {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(PortsState(want)))
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let conflict = {
            let st = state;
            ports_conflict(&st.0, node)
        };
        if conflict {
            Err(Reason::PortsConflict)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::{Container, ContainerPort};

    /// kube's `newPod(host, "PROTO/IP/PORT"...)`.
    fn port_pod(infos: &[&str]) -> Pod {
        let mut p = pod();
        let ports = infos
            .iter()
            .map(|s| {
                let parts: Vec<&str> = s.split('/').collect();
                ContainerPort {
                    protocol: parts[0].into(),
                    host_ip: parts[1].into(),
                    host_port: parts[2].parse().unwrap(),
                    ..ContainerPort::default()
                }
            })
            .collect();
        p.spec.containers = vec![Container {
            ports,
            ..Container::default()
        }];
        p
    }

    fn fits(pod: &Pod, existing: &[&str]) -> Result<(), Reason> {
        let snap = snapshot(vec![node("m1")], vec![(0, port_pod(existing))]);
        filter(&PodFitsHostPorts, pod, &snap, 0)
    }

    /// Name, the pod's ports, the existing pod's ports, the verdict.
    type PortsCase<'a> = (&'a str, &'a [&'a str], &'a [&'a str], Result<(), Reason>);

    // kube: nodeports/node_ports_test.go TestNodePorts.
    #[test]
    fn node_ports() {
        let conflict = Err(Reason::PortsConflict);
        let cases: &[PortsCase<'_>] = &[
            (
                "other port",
                &["UDP/127.0.0.1/8080"],
                &["UDP/127.0.0.1/9090"],
                Ok(()),
            ),
            (
                "same udp port",
                &["UDP/127.0.0.1/8080"],
                &["UDP/127.0.0.1/8080"],
                conflict,
            ),
            (
                "same tcp port",
                &["TCP/127.0.0.1/8080"],
                &["TCP/127.0.0.1/8080"],
                conflict,
            ),
            (
                "different host ip",
                &["TCP/127.0.0.1/8080"],
                &["TCP/127.0.0.2/8080"],
                Ok(()),
            ),
            (
                "different protocol",
                &["UDP/127.0.0.1/8080"],
                &["TCP/127.0.0.1/8080"],
                Ok(()),
            ),
            (
                "second udp port conflict",
                &["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
                &["UDP/127.0.0.1/8080"],
                conflict,
            ),
            (
                "first tcp port conflict",
                &["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
                &["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
                conflict,
            ),
            (
                "first tcp port conflict due to 0.0.0.0 hostIP",
                &["TCP/0.0.0.0/8001"],
                &["TCP/127.0.0.1/8001"],
                conflict,
            ),
            (
                "TCP hostPort conflict due to 0.0.0.0 hostIP",
                &["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
                &["TCP/127.0.0.1/8001"],
                conflict,
            ),
            (
                "second tcp port conflict to 0.0.0.0 hostIP",
                &["TCP/127.0.0.1/8001"],
                &["TCP/0.0.0.0/8001"],
                conflict,
            ),
            (
                "second different protocol",
                &["UDP/127.0.0.1/8001"],
                &["TCP/0.0.0.0/8001"],
                Ok(()),
            ),
            (
                "UDP hostPort conflict due to 0.0.0.0 hostIP",
                &["UDP/127.0.0.1/8001"],
                &["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
                conflict,
            ),
            // Defaults: empty protocol is TCP, empty IP is 0.0.0.0.
            (
                "defaults conflict",
                &["//8001"],
                &["TCP/127.0.0.1/8001"],
                conflict,
            ),
            (
                "default protocol is tcp",
                &["/1.2.3.4/8001"],
                &["UDP//8001"],
                Ok(()),
            ),
        ];
        for (name, want, existing, expected) in cases {
            assert_eq!(fits(&port_pod(want), existing), *expected, "{name}");
        }
    }

    // kube: TestFits.
    #[test]
    fn fits_table() {
        let cases: &[(&[&str], &[&str], bool)] = &[
            (&["TCP/127.0.0.1/80"], &["TCP/127.0.0.1/9090"], true),
            (
                &[
                    "TCP/127.0.0.1/80",
                    "TCP/127.0.1.1/80",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/100",
                ],
                &[
                    "TCP/127.0.0.1/9090",
                    "TCP/127.0.0.1/9191",
                    "TCP/127.0.1.1/8080",
                ],
                true,
            ),
            (&["TCP/127.0.0.1/80"], &["UDP/127.0.0.1/80"], true),
            (&["TCP/127.0.0.1/80"], &["TCP/127.0.0.1/80"], false),
            (
                &[
                    "TCP/127.0.0.1/80",
                    "TCP/127.0.1.1/80",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/100",
                ],
                &[
                    "TCP/127.0.0.1/9090",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/8080",
                ],
                false,
            ),
        ];
        for (i, (want, existing, ok)) in cases.iter().enumerate() {
            assert_eq!(fits(&port_pod(want), existing).is_ok(), *ok, "case {i}");
        }
    }

    #[test]
    fn skips_pod_without_host_ports() {
        let snap = snapshot(vec![node("m1")], vec![]);
        assert!(skips(&PodFitsHostPorts, &pod(), &snap));
        assert!(!skips(&PodFitsHostPorts, &port_pod(&["TCP//80"]), &snap));
        let snap = snapshot(vec![node("m1")], vec![(0, port_pod(&["TCP//80"]))]);
        assert_eq!(
            messages(Reason::PortsConflict, &pod(), &snap, 0),
            vec!["node(s) didn't have free ports for the requested pod ports"]
        );
    }
}
