//! Pods bound per second through a real API server: kube-scheduler v1.34.4 and
//! `sched-kube` on the same kube-apiserver, the same nodes and the same pods, in one run.
//!
//! ```text
//! bash scripts/reference.sh    # kube-apiserver, etcd and kube-scheduler v1.34.4
//! python3 scripts/scheduler-perf.py --export-only  # or any run of it: kube's workloads
//! cargo run --release -p sched-kube --example api_throughput -- \
//!     [--workload target/scheduler-perf/SchedulingBasic_5000Nodes] [--rounds 2] [--out FILE]
//! ```
//! The workload folder is one `perf export` wrote from kube's own scheduler_perf files
//! (nodes, namespaces, the init and measured pods). The API server is started once and its
//! nodes created once. Each run then starts one scheduler as a process of its own (kube's
//! with `clientConnection.qps` and `burst` raised to 5,000 so that its client's rate limit
//! does not decide; ours has none), creates the init pods and waits for them to be bound,
//! then creates the measured pods (16 requests in flight) and times from the first create
//! to the last binding seen by a watch. Its pods are deleted before the next run. Runs
//! alternate (kube, ours, ours, kube, ...) so drift on a shared machine falls on both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use lease_elect_kube::testing::apiserver::KubeApiServer;

const IN_FLIGHT: usize = 16;

fn list(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/scheduler-perf.py first)",
            path.display()
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.get("items")
        .cloned()
        .unwrap_or(v)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Runs `f` over `items` with `IN_FLIGHT` at once.
async fn each<T, F, Fut>(items: Vec<T>, f: F)
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = ()>,
{
    futures_util::stream::iter(items.into_iter().map(f))
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Kube,
    Ours,
}

impl Side {
    fn scheduler_name(self) -> &'static str {
        match self {
            Side::Kube => "kube-scheduler-bench",
            Side::Ours => "sched-kube-bench",
        }
    }

    fn start(self, dir: &Path, bin: &Path) -> Child {
        let kubeconfig = dir.join("kubeconfig.json");
        let log = std::fs::File::create(dir.join(format!("{self:?}.log"))).unwrap();
        let config = dir.join(format!("{self:?}.yaml"));
        let mut text = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
             leaderElection:\n  leaderElect: false\n\
             profiles:\n- schedulerName: {}\n",
            self.scheduler_name()
        );
        if self == Side::Kube {
            text.push_str(&format!(
                "clientConnection:\n  kubeconfig: {}\n  qps: 5000\n  burst: 5000\n",
                kubeconfig.display()
            ));
        }
        std::fs::write(&config, text).unwrap();
        let mut cmd = match self {
            Side::Kube => {
                let mut c = Command::new(bin.join("kube-scheduler"));
                c.arg(format!("--config={}", config.display()))
                    .arg("--secure-port=0")
                    .arg("-v=0");
                c
            }
            Side::Ours => {
                let mut c = Command::new(std::env::current_exe().unwrap());
                c.arg("--serve-scheduler").arg(&kubeconfig).arg(&config);
                c
            }
        };
        cmd.stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the scheduler")
    }
}

/// `--serve-scheduler KUBECONFIG CONFIG`: sched-kube as its own process.
fn serve_scheduler(kubeconfig: &str, config: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let cfg = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .unwrap();
        let client = Client::try_from(cfg).unwrap();
        let config = sched_core::config::SchedulerConfiguration::from_file(config).unwrap();
        let s = sched_kube::KubeScheduler::new(client, sched_kube::Options::new(config, "bench"))
            .unwrap();
        s.run(std::future::pending()).await.unwrap();
    });
}

struct Run {
    side: Side,
    pods: usize,
    /// Arrival: from the first create to the last binding.
    seconds: f64,
    /// How long creating the measured pods took (the API server's share of `seconds`).
    create_seconds: f64,
    first_bind_ms: f64,
    /// Backlog: the measured pods all pending when the scheduler starts; from its first
    /// binding to its last.
    backlog_seconds: f64,
}

/// One scheduler, one run: init pods bound, then the measured pods timed.
async fn run_once(
    client: &Client,
    side: Side,
    round: usize,
    init: &[serde_json::Value],
    measured: &[serde_json::Value],
    dir: &Path,
    bin: &Path,
) -> Run {
    let label = format!("r{round}-{}", side.scheduler_name());
    let bound: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watch = {
        let bound = bound.clone();
        let api: Api<Pod> = Api::all(client.clone());
        let cfg = watcher::Config::default().labels(&format!("bench-run={label}"));
        tokio::spawn(async move {
            let mut s = watcher(api, cfg).boxed();
            while let Ok(Some(e)) = s.try_next().await {
                let pods = match e {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => vec![p],
                    _ => vec![],
                };
                for p in pods {
                    if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
                        let name = p.metadata.name.unwrap_or_default();
                        bound
                            .lock()
                            .unwrap()
                            .entry(name)
                            .or_insert_with(Instant::now);
                    }
                }
            }
        })
    };
    let mut child = side.start(dir, bin);
    let make = |p: &serde_json::Value, i: usize, part: &str| {
        let mut p = p.clone();
        p["metadata"]["name"] = format!("{label}-{part}-{i:06}").into();
        p["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("generateName");
        p["metadata"]["labels"] = serde_json::json!({"bench-run": label});
        p["spec"]["schedulerName"] = side.scheduler_name().into();
        p.as_object_mut().unwrap().remove("status");
        serde_json::from_value::<Pod>(p).unwrap()
    };
    let create = |pod: Pod| {
        let client = client.clone();
        async move {
            let ns = pod.metadata.namespace.clone().unwrap();
            Api::<Pod>::namespaced(client, &ns)
                .create(&PostParams::default(), &pod)
                .await
                .unwrap();
        }
    };
    let wait_for = |n: usize| {
        let bound = bound.clone();
        async move {
            let start = Instant::now();
            while bound.lock().unwrap().len() < n {
                assert!(
                    start.elapsed() < Duration::from_secs(600),
                    "{side:?}: not all bound"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    each(
        init.iter()
            .enumerate()
            .map(|(i, p)| make(p, i, "init"))
            .collect(),
        create,
    )
    .await;
    wait_for(init.len()).await;
    let start = Instant::now();
    each(
        measured
            .iter()
            .enumerate()
            .map(|(i, p)| make(p, i, "measured"))
            .collect(),
        create,
    )
    .await;
    let create_seconds = start.elapsed().as_secs_f64();
    wait_for(init.len() + measured.len()).await;
    let span = |part: &str| {
        let times: Vec<Instant> = bound
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n.contains(part))
            .map(|(_, t)| *t)
            .collect();
        let first = times.iter().min().copied().unwrap();
        let last = times.iter().max().copied().unwrap();
        (first, last)
    };
    let (first, last) = span("-measured-");
    let _ = child.kill();
    let _ = child.wait();
    // Backlog: the same pods again, all created before the scheduler starts.
    each(
        measured
            .iter()
            .enumerate()
            .map(|(i, p)| make(p, i, "backlog"))
            .collect(),
        create,
    )
    .await;
    let mut child = side.start(dir, bin);
    wait_for(init.len() + 2 * measured.len()).await;
    let (backlog_first, backlog_last) = span("-backlog-");
    let _ = child.kill();
    let _ = child.wait();
    watch.abort();
    // Clean up for the next run.
    let namespaces: std::collections::BTreeSet<String> = measured
        .iter()
        .chain(init)
        .filter_map(|p| p["metadata"]["namespace"].as_str().map(str::to_owned))
        .collect();
    for ns in namespaces {
        Api::<Pod>::namespaced(client.clone(), &ns)
            .delete_collection(
                &DeleteParams::default().grace_period(0),
                &ListParams::default().labels(&format!("bench-run={label}")),
            )
            .await
            .unwrap();
    }
    Run {
        side,
        pods: measured.len(),
        seconds: (last - start).as_secs_f64(),
        create_seconds,
        first_bind_ms: (first - start).as_secs_f64() * 1e3,
        backlog_seconds: (backlog_last - backlog_first).as_secs_f64(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve-scheduler") {
        return serve_scheduler(&args[2], &args[3]);
    }
    let mut workload = PathBuf::from("target/scheduler-perf/SchedulingBasic_5000Nodes");
    let mut rounds = 2;
    let mut out = PathBuf::from("target/sched-kube-throughput.json");
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workload" => workload = it.next().expect("--workload DIR").into(),
            "--rounds" => rounds = it.next().expect("--rounds N").parse().expect("a number"),
            "--out" => out = it.next().expect("--out FILE").into(),
            other => panic!("unknown argument {other}"),
        }
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let bin = PathBuf::from(
            std::env::var("KUBE_REFERENCE_BIN").unwrap_or_else(|_| "target/reference/bin".into()),
        );
        let server = KubeApiServer::start().await.expect("kube-apiserver");
        let client = server.connection().client("default", None).await.unwrap();
        let dir = std::env::temp_dir().join(format!("sched-kube-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = server.connection().kubeconfig("default").to_string();
        std::fs::write(dir.join("kubeconfig.json"), kubeconfig).unwrap();

        let nodes = list(&workload.join("nodes.json"));
        let pods = list(&workload.join("pods.json"));
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(workload.join("workload.json")).unwrap())
                .unwrap();
        let n_init = info["initPods"].as_u64().unwrap() as usize;
        let (init, measured) = pods.split_at(n_init);
        for ns in list(&workload.join("objects.json")) {
            if ns["kind"] == "Namespace" {
                let ns: Namespace = serde_json::from_value(ns).unwrap();
                Api::<Namespace>::all(client.clone())
                    .create(&PostParams::default(), &ns)
                    .await
                    .unwrap();
            }
        }
        let t = Instant::now();
        let node_count = nodes.len();
        each(nodes, |n| {
            let client = client.clone();
            async move {
                let node: Node = serde_json::from_value(n).unwrap();
                let api = Api::<Node>::all(client);
                let name = node.metadata.name.clone().unwrap();
                api.create(&PostParams::default(), &node).await.unwrap();
                // The not-ready taint the API server adds; no node lifecycle controller runs.
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({"spec": {"taints": null}})),
                )
                .await
                .unwrap();
            }
        })
        .await;
        eprintln!("{node_count} nodes created in {:.1} s", t.elapsed().as_secs_f64());

        let mut runs = Vec::new();
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [Side::Kube, Side::Ours]
            } else {
                [Side::Ours, Side::Kube]
            };
            for side in order {
                let r = run_once(&client, side, round, init, measured, &dir, &bin).await;
                eprintln!(
                    "round {round} {:?}: arriving {} pods in {:.2} s = {:.0} pods/s (created in \
                     {:.2} s, first bound after {:.0} ms); backlog {:.0} pods/s",
                    r.side,
                    r.pods,
                    r.seconds,
                    r.pods as f64 / r.seconds,
                    r.create_seconds,
                    r.first_bind_ms,
                    r.pods as f64 / r.backlog_seconds,
                );
                runs.push(r);
            }
        }
        let median = |side: Side, secs: fn(&Run) -> f64| {
            let mut v: Vec<f64> = runs
                .iter()
                .filter(|r| r.side == side)
                .map(|r| r.pods as f64 / secs(r))
                .collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (kube, ours) = (median(Side::Kube, |r| r.seconds), median(Side::Ours, |r| r.seconds));
        let (kube_b, ours_b) = (
            median(Side::Kube, |r| r.backlog_seconds),
            median(Side::Ours, |r| r.backlog_seconds),
        );
        let case = info["testCase"].as_str().unwrap_or("?");
        println!(
            "| {case}, {node_count} nodes, {} pods | kube-scheduler v1.34.4 | sched-kube | ratio |\n\
             |---|---|---|---|\n\
             | arriving (created 16 at a time) | {kube:.0} pods/s | {ours:.0} pods/s | {:.2}x |\n\
             | backlog (all pending at start) | {kube_b:.0} pods/s | {ours_b:.0} pods/s | {:.2}x |",
            measured.len(),
            ours / kube,
            ours_b / kube_b,
        );
        let json = serde_json::json!({
            "workload": info,
            "runs": runs.iter().map(|r| serde_json::json!({
                "side": format!("{:?}", r.side), "pods": r.pods, "seconds": r.seconds,
                "createSeconds": r.create_seconds, "firstBindMs": r.first_bind_ms,
                "backlogSeconds": r.backlog_seconds,
            })).collect::<Vec<_>>(),
            "kubePodsPerSecond": kube, "oursPodsPerSecond": ours,
            "kubeBacklogPodsPerSecond": kube_b, "oursBacklogPodsPerSecond": ours_b,
        });
        std::fs::write(&out, serde_json::to_string_pretty(&json).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        drop(server);
    });
}
