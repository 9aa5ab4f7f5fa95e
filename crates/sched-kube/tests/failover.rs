//! Three replicas of `sched-kube-scheduler` (child processes) on a real kube-apiserver
//! v1.34.4: 1,000 pods of two priorities arrive over time on 10 nodes, the last tenth of
//! higher priority and arriving on a full cluster, so that they preempt; the leader is
//! killed with SIGKILL a third of the way in and the API server is restarted two thirds in. The test plays the Deployment (an exited replica is started
//! again) and the kubelets (a pod whose graceful deletion began is removed).

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use lease_elect_kube::testing::apiserver::KubeApiServer;

const PODS: usize = 1000;
const NODES: usize = 10;
const NODE_CPU_MILLIS: u64 = 10_000;

/// The replicas, kept at three.
struct Replicas {
    dir: PathBuf,
    kubeconfig: PathBuf,
    config: PathBuf,
    running: Vec<(String, Child)>,
    started: usize,
    exits: Vec<String>,
}

impl Replicas {
    /// No replica yet: a folder of their own, with a kubeconfig for `server` and a
    /// configuration electing through the Lease `default/failover` with this lease and
    /// renew deadline (seconds).
    fn new(server: &KubeApiServer, name: &str, (lease, renew): (u32, u32)) -> (Replicas, PathBuf) {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig.json");
        fs::write(&kubeconfig, server.connection().kubeconfig(NS).to_string()).unwrap();
        let config = dir.join("config.yaml");
        fs::write(
            &config,
            format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
                 leaderElection:\n  leaseDuration: {lease}s\n  renewDeadline: {renew}s\n  \
                 retryPeriod: 500ms\n  resourceNamespace: default\n  resourceName: failover\n\
                 profiles:\n- schedulerName: sched-kube\n"
            ),
        )
        .unwrap();
        let replicas = Replicas {
            dir: dir.clone(),
            kubeconfig,
            config,
            running: Vec::new(),
            started: 0,
            exits: Vec::new(),
        };
        (replicas, dir)
    }

    fn spawn(&mut self) {
        let identity = format!("replica-{}", self.started);
        self.started += 1;
        let log = fs::File::create(self.dir.join(format!("{identity}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sched-kube-scheduler"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--config")
            .arg(&self.config)
            .args(["--identity", &identity, "--address", "127.0.0.1:0"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start sched-kube-scheduler");
        self.running.push((identity, child));
    }

    /// Starts a replica for each one that exited.
    fn keep_three(&mut self) {
        let mut exited = Vec::new();
        self.running
            .retain_mut(|(id, child)| match child.try_wait() {
                Ok(Some(status)) => {
                    exited.push(format!("{id} ({status})"));
                    false
                }
                _ => true,
            });
        self.exits.extend(exited);
        while self.running.len() < 3 {
            self.spawn();
        }
    }

    fn kill(&mut self, identity: &str) -> bool {
        let Some(i) = self.running.iter().position(|(id, _)| id == identity) else {
            return false;
        };
        let (_, mut child) = self.running.remove(i);
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        true
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for i in 0..self.started {
            let path = self.dir.join(format!("replica-{i}.log"));
            let text = fs::read_to_string(&path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            out.push_str(&format!("--- replica-{i}\n"));
            for l in tail.into_iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }
}

impl Drop for Replicas {
    fn drop(&mut self) {
        for (_, child) in &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn leader(client: &Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), NS)
        .get_opt("failover")
        .await
        .ok()??;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

fn cpu_millis(p: &k8s_openapi::api::core::v1::Pod) -> u64 {
    let spec = p.spec.as_ref().unwrap();
    spec.containers
        .iter()
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
        .map(|q| q.0.trim_end_matches('m').parse::<u64>().unwrap())
        .sum()
}

/// Creates, retrying while the API server is away.
async fn create_retrying(
    client: &Client,
    name: &str,
    cpu: &str,
    class: &str,
    labels: &[(&str, &str)],
) {
    let start = Instant::now();
    loop {
        let pod = pod_json(name, "sched-kube", cpu, Some(class), labels);
        match Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), NS)
            .create(&PostParams::default(), &pod)
            .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 409 => return,
            Err(e) => {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "create {name}: {e}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pod_is_bound_once_through_a_sigkill_and_an_api_server_restart() {
    let (mut server, client) = server().await;
    create_priority_classes(&client).await;
    for i in 0..NODES {
        create_node(
            &client,
            &format!("node-{i}"),
            &(NODE_CPU_MILLIS / 1000).to_string(),
        )
        .await;
    }
    // Protects the `app=protected` pods: with no disruption controller, no disruption is
    // allowed, so preemption must take other victims.
    let pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "protected", "namespace": NS},
        "spec": {"minAvailable": 1000, "selector": {"matchLabels": {"app": "protected"}}},
    }))
    .unwrap();
    Api::<PodDisruptionBudget>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pdb)
        .await
        .unwrap();

    let (mut replicas, dir) = Replicas::new(&server, "sched-kube-failover", (4, 3));
    replicas.keep_three();
    let kubelet = kubelet_stand_in(client.clone());

    // Arrivals: 900 low-priority pods (100m, one in sixteen protected by the PDB) take
    // 90 of the 100 CPUs, then 100 high-priority ones (150m) need 15: about 5 CPUs of
    // low pods must go. Every 50th low pod is deleted right after it is created (while it
    // is being scheduled or bound).
    let mut high = HashSet::new();
    let mut protected = HashSet::new();
    let mut deleted = HashSet::new();
    let mut killed = None;
    for i in 0..PODS {
        let name = format!("pod-{i:04}");
        if i >= PODS - PODS / 10 {
            create_retrying(&client, &name, "150m", "high", &[("app", "high")]).await;
            high.insert(name);
        } else if i % 16 == 0 {
            create_retrying(&client, &name, "100m", "low", &[("app", "protected")]).await;
            protected.insert(name);
        } else {
            create_retrying(&client, &name, "100m", "low", &[("app", "low")]).await;
            if i % 50 == 1 {
                let _ = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), NS)
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await;
                deleted.insert(name);
            }
        }
        if i == PODS / 3 {
            // A Lease that never existed is taken only after a lease duration (lease-elect
            // waits out a record that may have been deleted under a live leader).
            let l = eventually(Duration::from_secs(20), "a leader", || leader(&client)).await;
            assert!(replicas.kill(&l), "{l} is not one of ours");
            killed = Some(l);
        }
        if i == 2 * PODS / 3 {
            server
                .restart(Duration::from_secs(60))
                .await
                .unwrap_or_else(|e| panic!("restart kube-apiserver: {e}"));
        }
        if i % 20 == 0 {
            replicas.keep_three();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Settled: every pod bound and nothing changes for 5 s.
    let start = Instant::now();
    let mut last: Option<(usize, usize)> = None;
    let mut stable_since = Instant::now();
    let all = loop {
        replicas.keep_three();
        let all = match tokio::time::timeout(Duration::from_secs(5), pods(&client)).await {
            Ok(all) => all,
            Err(_) => continue,
        };
        let bound = all.values().filter(|p| node_of(p).is_some()).count();
        let high_bound = high
            .iter()
            .filter(|h| all.get(*h).and_then(node_of).is_some())
            .count();
        let now = (bound, all.len());
        if last != Some(now) {
            last = Some(now);
            stable_since = Instant::now();
        }
        if high_bound == high.len() && stable_since.elapsed() > Duration::from_secs(5) {
            break all;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "not settled: {high_bound}/{} high pods bound, {bound} of {} pods bound; exits {:?}\n{}",
            high.len(),
            all.len(),
            replicas.exits,
            replicas.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    kubelet.abort();

    // The leader changed, to a replica that was not killed.
    let now_leader = leader(&client).await.expect("a leader");
    assert_ne!(Some(&now_leader), killed.as_ref());

    // No node over its CPU; no free room left while a pod waits (nothing leaked).
    let mut used: HashMap<&str, u64> = HashMap::new();
    for p in all.values() {
        if let Some(n) = node_of(p) {
            *used.entry(n).or_default() += cpu_millis(p);
        }
    }
    for (n, u) in &used {
        assert!(
            *u <= NODE_CPU_MILLIS,
            "{n} holds {u}m of {NODE_CPU_MILLIS}m"
        );
    }
    let pending: Vec<&String> = all
        .iter()
        .filter(|(_, p)| node_of(p).is_none())
        .map(|(n, _)| n)
        .collect();
    // Every pod still there is bound: those deleted early left nothing reserved behind, and
    // preemption made room for every high-priority pod.
    assert!(
        pending.is_empty(),
        "{} pods were never bound: {:?}",
        pending.len(),
        &pending[..pending.len().min(5)]
    );

    // Preemption took only unprotected low pods, and took some (the pods need ~105% of
    // the cluster).
    let victims: Vec<String> = (0..PODS)
        .map(|i| format!("pod-{i:04}"))
        .filter(|n| !all.contains_key(n) && !deleted.contains(n))
        .collect();
    assert!(!victims.is_empty(), "no preemption happened");
    for v in &victims {
        assert!(!high.contains(v), "high-priority {v} was deleted");
        assert!(!protected.contains(v), "{v} was preempted despite its PDB");
    }

    // Bound at most once: at most one Scheduled event per pod.
    let scheduled = events(&client, "Scheduled").await;
    let mut per_pod: BTreeMap<String, usize> = BTreeMap::new();
    for e in &scheduled {
        let uid = e
            .regarding
            .as_ref()
            .and_then(|r| r.uid.clone())
            .unwrap_or_default();
        *per_pod.entry(uid).or_default() += 1;
    }
    let twice: Vec<_> = per_pod.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "pods bound twice: {twice:?}");
    eprintln!(
        "{} pods bound, {} pending, {} preempted, {} deleted early; leader {killed:?} killed, \
         now {now_leader}; replica exits {:?}",
        all.len() - pending.len(),
        pending.len(),
        victims.len(),
        deleted.len(),
        replicas.exits
    );
    drop(replicas);
    let _ = fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_lease_and_a_standby_leads_at_once() {
    let (server, client) = server().await;
    // A long lease: a hand-over within it can only come from a release.
    let (mut replicas, dir) = Replicas::new(&server, "sched-kube-sigterm", (30, 20));
    replicas.spawn();
    // The first term waits out a lease that never existed (30 s here); write the Lease
    // released so that it starts at once.
    let lease: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "failover", "namespace": NS},
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 30},
    }))
    .unwrap();
    Api::<Lease>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let first = eventually(Duration::from_secs(20), "a leader", || leader(&client)).await;
    replicas.spawn();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, child) = replicas
        .running
        .iter_mut()
        .find(|(id, _)| *id == first)
        .unwrap();
    let pid = child.id().to_string();
    let sent = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the leader exited with {status} after SIGTERM\n{}",
        replicas.logs()
    );
    let next = eventually(Duration::from_secs(10), "a new leader", || {
        let client = client.clone();
        let first = first.clone();
        async move { leader(&client).await.filter(|l| *l != first) }
    })
    .await;
    let took = sent.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "{next} led {took:?} after SIGTERM (the lease is 30 s)"
    );
    drop(replicas);
    let _ = fs::remove_dir_all(&dir);
}
