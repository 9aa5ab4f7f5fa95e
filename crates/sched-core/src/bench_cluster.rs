//! Synthetic clusters for benchmarks, demos and tests.
//!
//! [`benchmark_cluster`] is the workload the project's benchmarks and README figures use:
//! every node allocates 32 CPU, 128 GiB and 110 pods, is labelled
//! `kubernetes.io/hostname=node-i` and `topology.kubernetes.io/zone=zone-(i % 3)`, every 10th
//! node is tainted `dedicated=gpu:NoSchedule`, and 10 pods requesting 1 CPU / 2 GiB each run on
//! every node. [`benchmark_pod`] is a new pod requesting 500m / 1 GiB with no affinity.

use crate::model::{Container, Node, NodeCondition, Pod, Quantity, Taint, TaintEffect};

fn quantity(s: &str) -> Quantity {
    // The literals below are valid quantities.
    s.parse().unwrap_or_else(|_| Quantity::from_value(0))
}

/// Node `i` of the benchmark cluster.
pub fn benchmark_node(i: usize) -> Node {
    let mut n = Node::default();
    n.metadata.name = format!("node-{i}");
    let labels = &mut n.metadata.labels;
    labels.insert("kubernetes.io/hostname".into(), format!("node-{i}"));
    labels.insert(
        "topology.kubernetes.io/zone".into(),
        format!("zone-{}", i % 3),
    );
    for (k, v) in [
        ("cpu", "32"),
        ("memory", "128Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "100Gi"),
    ] {
        n.status.capacity.insert(k.into(), quantity(v));
        n.status.allocatable.insert(k.into(), quantity(v));
    }
    n.status.conditions.push(NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
    });
    if i.is_multiple_of(10) {
        n.spec.taints.push(Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
        });
    }
    n
}

fn pod_with(name: String, namespace: &str, cpu: &str, memory: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name;
    p.metadata.namespace = namespace.into();
    p.metadata.labels.insert("app".into(), "bench".into());
    let mut c = Container {
        name: "main".into(),
        image: "registry.example/bench:1.0".into(),
        ..Default::default()
    };
    c.resources.requests.insert("cpu".into(), quantity(cpu));
    c.resources
        .requests
        .insert("memory".into(), quantity(memory));
    p.spec.containers.push(c);
    p
}

/// The benchmark cluster with `nodes` nodes and 10 running pods (1 CPU / 2 GiB) per node.
pub fn benchmark_cluster(nodes: usize) -> (Vec<Node>, Vec<Pod>) {
    let node_list: Vec<Node> = (0..nodes).map(benchmark_node).collect();
    let mut pods = Vec::with_capacity(nodes * 10);
    for i in 0..nodes {
        for j in 0..10 {
            let mut p = pod_with(format!("running-{i}-{j}"), "default", "1", "2Gi");
            p.spec.node_name = format!("node-{i}");
            p.status.phase = "Running".into();
            pods.push(p);
        }
    }
    (node_list, pods)
}

/// New pod `i` of the benchmark: requests 500m CPU and 1 GiB, no affinity, no tolerations.
pub fn benchmark_pod(i: usize) -> Pod {
    let mut p = pod_with(format!("new-{i}"), "default", "500m", "1Gi");
    p.status.phase = "Pending".into();
    p
}

/// A `kubectl get pods -A -o json` document of at least `min_bytes` bytes, as kubectl writes
/// it (a `List` of `Pod` items, pretty-printed with 4 spaces, no `managedFields`): pods of
/// Deployments and DaemonSets with labels, annotations, owner references, two containers with
/// requests, limits, env, probes and volume mounts, tolerations, projected volumes, and a
/// status with conditions and container statuses; one in 20 pods is pending. For the loader's
/// benchmark and memory test.
pub fn kubectl_pods_json(min_bytes: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(min_bytes + 16 * 1024);
    out.push_str("{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n");
    let mut i = 0usize;
    while out.len() < min_bytes {
        if i > 0 {
            out.push_str(",\n");
        }
        let app = ["web", "api", "cart", "search", "worker", "ingest"][i % 6];
        let ns = ["shop", "payments", "search", "data", "kube-system"][i % 5];
        let hash = format!(
            "{:010x}",
            (i as u64 / 7).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24
        );
        let hash = &hash[..10];
        let suffix = format!("{:05x}", (i as u64).wrapping_mul(0x2545_f491) & 0xf_ffff);
        let node = format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i % 7, i % 250);
        let pending = i % 20 == 19;
        let node_line = if pending {
            String::new()
        } else {
            format!("                \"nodeName\": \"{node}\",\n")
        };
        let phase = if pending { "Pending" } else { "Running" };
        let cpu = [100, 250, 500, 1000][i % 4];
        let mem = [128, 256, 512, 1024][(i / 4) % 4];
        let _ = write!(
            out,
            r#"        {{
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {{
                "annotations": {{
                    "kubectl.kubernetes.io/restartedAt": "2026-11-19T08:15:02Z",
                    "prometheus.io/port": "9102",
                    "prometheus.io/scrape": "true"
                }},
                "creationTimestamp": "2026-11-20T11:02:33Z",
                "generateName": "{app}-{hash}-",
                "labels": {{
                    "app": "{app}",
                    "app.kubernetes.io/name": "{app}",
                    "app.kubernetes.io/part-of": "{ns}",
                    "pod-template-hash": "{hash}"
                }},
                "name": "{app}-{hash}-{suffix}",
                "namespace": "{ns}",
                "ownerReferences": [
                    {{
                        "apiVersion": "apps/v1",
                        "blockOwnerDeletion": true,
                        "controller": true,
                        "kind": "ReplicaSet",
                        "name": "{app}-{hash}",
                        "uid": "7c1e4a52-9b0d-4f3e-8a6c-{i:012}"
                    }}
                ],
                "resourceVersion": "{rv}",
                "uid": "0f9c8e7d-3b2a-4a1b-8c2d-{i:012}"
            }},
            "spec": {{
                "affinity": {{
                    "podAntiAffinity": {{
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {{
                                "podAffinityTerm": {{
                                    "labelSelector": {{
                                        "matchLabels": {{
                                            "app": "{app}"
                                        }}
                                    }},
                                    "topologyKey": "kubernetes.io/hostname"
                                }},
                                "weight": 100
                            }}
                        ]
                    }}
                }},
                "containers": [
                    {{
                        "args": [
                            "--port=8080",
                            "--log-level=info"
                        ],
                        "env": [
                            {{
                                "name": "POD_NAME",
                                "valueFrom": {{
                                    "fieldRef": {{
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.name"
                                    }}
                                }}
                            }},
                            {{
                                "name": "GOMAXPROCS",
                                "value": "2"
                            }}
                        ],
                        "image": "registry.example.com/{ns}/{app}:1.{minor}.3",
                        "imagePullPolicy": "IfNotPresent",
                        "livenessProbe": {{
                            "failureThreshold": 3,
                            "httpGet": {{
                                "path": "/healthz",
                                "port": 8080,
                                "scheme": "HTTP"
                            }},
                            "periodSeconds": 10,
                            "successThreshold": 1,
                            "timeoutSeconds": 1
                        }},
                        "name": "{app}",
                        "ports": [
                            {{
                                "containerPort": 8080,
                                "name": "http",
                                "protocol": "TCP"
                            }}
                        ],
                        "resources": {{
                            "limits": {{
                                "memory": "{mem2}Mi"
                            }},
                            "requests": {{
                                "cpu": "{cpu}m",
                                "memory": "{mem}Mi"
                            }}
                        }},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "volumeMounts": [
                            {{
                                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                "name": "kube-api-access-{suffix}",
                                "readOnly": true
                            }}
                        ]
                    }},
                    {{
                        "image": "registry.example.com/mesh/proxy:1.22.1",
                        "imagePullPolicy": "IfNotPresent",
                        "name": "proxy",
                        "resources": {{
                            "requests": {{
                                "cpu": "50m",
                                "memory": "64Mi"
                            }}
                        }},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"
                    }}
                ],
                "dnsPolicy": "ClusterFirst",
                "enableServiceLinks": true,
{node_line}                "preemptionPolicy": "PreemptLowerPriority",
                "priority": 0,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {{}},
                "serviceAccount": "default",
                "serviceAccountName": "default",
                "terminationGracePeriodSeconds": 30,
                "tolerations": [
                    {{
                        "effect": "NoExecute",
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "tolerationSeconds": 300
                    }},
                    {{
                        "effect": "NoExecute",
                        "key": "node.kubernetes.io/unreachable",
                        "operator": "Exists",
                        "tolerationSeconds": 300
                    }}
                ],
                "volumes": [
                    {{
                        "name": "kube-api-access-{suffix}",
                        "projected": {{
                            "defaultMode": 420,
                            "sources": [
                                {{
                                    "serviceAccountToken": {{
                                        "expirationSeconds": 3607,
                                        "path": "token"
                                    }}
                                }},
                                {{
                                    "configMap": {{
                                        "items": [
                                            {{
                                                "key": "ca.crt",
                                                "path": "ca.crt"
                                            }}
                                        ],
                                        "name": "kube-root-ca.crt"
                                    }}
                                }}
                            ]
                        }}
                    }}
                ]
            }},
            "status": {{
                "conditions": [
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2026-11-20T11:02:33Z",
                        "status": "True",
                        "type": "PodScheduled"
                    }},
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2026-11-20T11:02:41Z",
                        "status": "True",
                        "type": "Ready"
                    }}
                ],
                "containerStatuses": [
                    {{
                        "containerID": "containerd://{hash}{suffix}{hash}",
                        "image": "registry.example.com/{ns}/{app}:1.{minor}.3",
                        "imageID": "registry.example.com/{ns}/{app}@sha256:{hash}{hash}{hash}",
                        "lastState": {{}},
                        "name": "{app}",
                        "ready": true,
                        "restartCount": 0,
                        "started": true,
                        "state": {{
                            "running": {{
                                "startedAt": "2026-11-20T11:02:39Z"
                            }}
                        }}
                    }}
                ],
                "hostIP": "10.0.{h}.{l}",
                "phase": "{phase}",
                "podIP": "10.244.{h}.{l}",
                "qosClass": "Burstable",
                "startTime": "2026-11-20T11:02:33Z"
            }}
        }}"#,
            rv = 9_000_000 + i,
            minor = i % 9,
            mem2 = mem * 2,
            h = i % 7,
            l = i % 250,
        );
        i += 1;
    }
    out.push_str("\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n");
    out
}
