#!/usr/bin/env python3
"""kube-scheduler v1.34.4 and sched-core on kube's own scheduler_perf workloads, in one run.

    python3 scripts/scheduler-perf.py [--short] [--measure N] [--rounds R]
                                      [--percentage P] [--parallelism 1,2] [WORKLOAD...]

Each workload (TestCase/Workload of kube's test/integration/scheduler_perf/**/
performance-config.yaml, read from the k8s.io/kubernetes module that reference/go.mod pins) is
exported once by `perf export` (reference/cmd/perf): the nodes, namespaces, volumes and pods
kube's scheduler_perf creates from its templates, in its order, as a case folder under
target/scheduler-perf/. Both schedulers then run that same folder: kube-scheduler in process
(`perf time`, at each --parallelism) and sched-core's engine on one thread (the kube-reference
crate's `perf`), the init pods untimed and each measured pod timed through its scheduling
cycle (see reference/cmd/perf and crates/kube-reference/src/perf.rs for what is timed). The
runs alternate kube and sched-core per workload and round (interleaved), and a round's numbers
are kept only as a whole. The table gives per workload the median and p99 per pod and the pods
per second (pods divided by their summed time) of each side, and kube's median over
sched-core's; with several rounds, each cell is the median over rounds. The machine is printed
first.

--short runs the 500-node variants with 200 measured pods (what CI runs); the default is the
5000-node variants (1000 nodes for PreemptionBasic, which has no 5000) with all measured pods.
kube's DRA workloads (dra/performance-config.yaml) run at their largest, 5000pods_500nodes, and
with --short at `fast` (2 nodes, 10 pods); the steady-state one at empty_500nodes, half_500nodes
and full_500nodes (--short: fast), each measured pod deleted with its claim once placed, on both
sides (half and full: the init claims allocated at export by kube's structured allocator, as
kube's allocResourceClaims op does). Unschedulable and
PreemptionAsync (kube's misc/performance-config.yaml) add pod churn: every 200 ms of a side's
own scheduling time, a high-priority pod enters (one that fits no node; one that preempts) and
is scheduled, its time counted in the next measured pod's.

Both sides record each measured pod's node. After the table, a line per workload where the
sides differ in what fits (unschedulable pods, preemptions, victims) and, for a DRA workload,
how many measured pods each side placed, how many on the same node as kube's (kube breaks
score ties at random), the largest number of measured pods on one node, and the claims each
side wrote; for a workload with churn, how many churn pods entered on each side. With --check,
a DRA workload where the placed counts or the claims written differ makes the exit status 1.
Exit status: 0, or 1 when a run fails (its output is shown), a side's clock went past the churn
pods exported, or a --check fails.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FULL = [
    "SchedulingBasic/5000Nodes",
    "SchedulingSecrets/5000Nodes",
    "SchedulingNodeAffinity/5000Nodes",
    "SchedulingPodAntiAffinity/5000Nodes",
    "SchedulingPodAffinity/5000Nodes",
    "SchedulingPreferredPodAffinity/5000Nodes",
    "SchedulingPreferredPodAntiAffinity/5000Nodes",
    "TopologySpreading/5000Nodes",
    "PreferredTopologySpreading/5000Nodes",
    "MixedSchedulingBasePod/5000Nodes",
    "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes",
    "SchedulingPreferredAffinityWithNSSelector/5000Nodes",
    "SchedulingInTreePVs/5000Nodes",
    "SchedulingCSIPVs/5000Nodes",
    "PreemptionBasic/1000Nodes",
    # Pod churn: an unschedulable high-priority pod every 200 ms of each side's scheduling
    # time beside the measured pods (see reference/cmd/perf: churner).
    "Unschedulable/5kNodes/100Init/1kPods",
    # ... and a pod every 200 ms that preempts three low-priority pods to fit.
    "PreemptionAsync/5000Nodes_AsyncPreemptionEnabled",
    # kube's dra/performance-config.yaml (DynamicResourceAllocation): the largest workloads.
    "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
    "SchedulingWithResourceClaim/5000pods_500nodes",
    # Steady state: each measured pod deleted with its claim once placed (see
    # reference/internal/perf: 100 pods per second of kube's duration).
    "SteadyStateClusterResourceClaimTemplate/empty_500nodes",
    # ... on devices half and all but ten taken by init claims (kube's allocResourceClaims).
    "SteadyStateClusterResourceClaimTemplate/half_500nodes",
    "SteadyStateClusterResourceClaimTemplate/full_500nodes",
]
# Their smallest variants (2 nodes, 10 pods; 200 steady-state pods), which --short runs.
DRA_SHORT = [
    "SchedulingWithResourceClaimTemplate/fast",
    "SchedulingWithResourceClaim/fast",
    "SteadyStateClusterResourceClaimTemplate/fast",
]
SHORT_MEASURE = 200


def short_list():
    return [w.rsplit("/", 1)[0] + "/500Nodes" if "/5000Nodes" in w else w for w in FULL
            if "/5000Nodes" in w] + ["PreemptionBasic/1000Nodes", "Unschedulable/500Nodes/10Init/1kPods",
                                          "PreemptionAsync/500Nodes"] + DRA_SHORT


def run(cmd, **kw):
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(f"scheduler-perf: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}\n")
        sys.exit(1)
    return p.stdout


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu})"


def stats(t):
    n = sorted(t["nanos"])
    if not n:
        return None
    median = n[len(n) // 2]
    p99 = n[min(len(n) - 1, int(len(n) * 0.99))]
    total = sum(n)
    return {"median": median, "p99": p99, "rate": len(n) / (total / 1e9) if total else 0.0,
            "pods": len(n), "unschedulable": t.get("unschedulable", 0),
            "preemptions": t.get("preemptions", 0), "victims": t.get("victims", 0),
            "churn": t.get("churnPods", 0), "churn placed": t.get("churnPlaced", 0),
            "churn exhausted": t.get("churnExhausted", False)}


def agreement(kube, ours):
    """Where the first kube run and sched-core's first run put the measured pods."""
    k, o = kube.get("placements") or [], ours.get("placements") or []
    per_node = lambda ps: max((ps.count(n) for n in set(ps) if n), default=0)
    return {"pods": len(k), "kube placed": sum(1 for n in k if n), "ours placed": sum(1 for n in o if n),
            "same node": sum(1 for a, b in zip(k, o) if a and a == b),
            "kube most on a node": per_node(k), "ours most on a node": per_node(o),
            "kube claims": kube.get("claimsWritten", 0), "ours claims": ours.get("claimsWritten", 0)}


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--measure", type=int, default=0, help="measured pods per run (0: all)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--percentage", type=int, default=0, help="0: adaptive, as scheduler_perf runs")
    ap.add_argument("--parallelism", default="1,2", help="kube's parallelism values")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "scheduler-perf"))
    ap.add_argument("--json", help="also write every run's numbers here")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a DRA workload's sides place a different number of pods")
    args = ap.parse_args()
    workloads = args.workloads or (short_list() if args.short else FULL)
    measure = args.measure or (SHORT_MEASURE if args.short else 0)
    parallelism = [int(p) for p in args.parallelism.split(",") if p]

    bindir = os.environ.get("KUBE_REFERENCE_BIN", os.path.join(ROOT, "target", "reference", "bin"))
    kube_perf = os.path.join(bindir, "perf")
    if not os.path.exists(kube_perf):
        sys.stderr.write(f"scheduler-perf: missing {kube_perf}: build it with `bash scripts/reference.sh`\n")
        sys.exit(1)
    run(["cargo", "build", "--release", "--quiet", "-p", "kube-reference", "--bin", "perf"])
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ours_perf = os.path.join(target, "release", "perf")
    module = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
                            cwd=os.path.join(ROOT, "reference"), capture_output=True, text=True)
    if module.returncode != 0:
        sys.stderr.write(f"scheduler-perf: go list k8s.io/kubernetes in reference/ failed:\n{module.stderr}")
        sys.exit(1)
    scheduler_perf = os.path.join(module.stdout.strip(), "test", "integration", "scheduler_perf")
    os.makedirs(args.out, exist_ok=True)
    run([kube_perf, "export", "-scheduler-perf", scheduler_perf, "-out", args.out] + workloads)

    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d')}")
    print(f"kube-scheduler v1.34.4 in process (reference/go.mod) vs sched-core's engine on 1 thread; "
          f"percentage of nodes to score: {args.percentage or 'adaptive'}; rounds: {args.rounds}; "
          f"measured pods: {measure or 'all'}")
    results = {}
    for w in workloads:
        folder = os.path.join(args.out, w.replace("/", "_"))
        meta = json.load(open(os.path.join(folder, "workload.json")))
        rounds = {f"kube p{p}": [] for p in parallelism}
        rounds["sched-core"] = []
        for r in range(args.rounds):
            for p in parallelism:
                out = os.path.join(folder, f"kube-p{p}-{r}.json")
                cmd = [kube_perf, "time", f"-parallelism={p}", f"-percentage={args.percentage}", "-out", out]
                if measure:
                    cmd.append(f"-measure={measure}")
                run(cmd + [folder])
                rounds[f"kube p{p}"].append(stats(json.load(open(out))))
                if r == 0 and p == parallelism[0]:
                    kube_first = json.load(open(out))
            out = os.path.join(folder, f"sched-core-{r}.json")
            cmd = [ours_perf, "--percentage", str(args.percentage), "--out", out]
            if measure:
                cmd += ["--measure", str(measure)]
            run(cmd + [folder])
            rounds["sched-core"].append(stats(json.load(open(out))))
            if r == 0:
                ours_first = json.load(open(out))
        results[w] = {"meta": meta, "rounds": rounds, "agree": agreement(kube_first, ours_first)}

    def med(side, key):
        vals = [s[key] for s in side if s]
        return statistics.median(vals) if vals else 0

    head = ["workload", "nodes"]
    for p in parallelism:
        head += [f"kube p{p} median", f"kube p{p} p99"]
    head += ["sched-core median", "sched-core p99", "sched-core pods/s"]
    head += [f"p{p} / ours" for p in parallelism]
    rows = [head]
    notes = []
    failed = []
    exhausted = []
    for w, r in results.items():
        ours = r["rounds"]["sched-core"]
        row = [w, str(r["meta"]["nodes"])]
        for p in parallelism:
            k = r["rounds"][f"kube p{p}"]
            row += [fmt_ns(med(k, "median")), fmt_ns(med(k, "p99"))]
        row += [fmt_ns(med(ours, "median")), fmt_ns(med(ours, "p99")), f"{med(ours, 'rate'):,.0f}"]
        for p in parallelism:
            k = r["rounds"][f"kube p{p}"]
            om = med(ours, "median")
            row.append(f"{med(k, 'median') / om:,.0f}x" if om else "-")
        rows.append(row)
        k1 = r["rounds"][f"kube p{parallelism[0]}"][0]
        o1 = ours[0]
        if k1 and o1 and (k1["unschedulable"], k1["preemptions"], k1["victims"]) != (
                o1["unschedulable"], o1["preemptions"], o1["victims"]):
            notes.append(f"{w}: kube left {k1['unschedulable']} unschedulable, {k1['preemptions']} preemptions, "
                         f"{k1['victims']} victims; sched-core {o1['unschedulable']}, {o1['preemptions']}, "
                         f"{o1['victims']}")
        elif k1 and (k1["preemptions"] or k1["unschedulable"]):
            notes.append(f"{w}: both sides: {k1['unschedulable']} unschedulable, {k1['preemptions']} preemptions, "
                         f"{k1['victims']} victims")
        if any(s and s.get("churn exhausted") for side in r["rounds"].values() for s in side):
            notes.append(f"{w}: a side's clock went past the churn pods exported (churn.json): not comparable")
            exhausted.append(w)
        if r["meta"].get("churn") and k1 and o1:
            c = r["meta"]["churn"]
            notes.append(f"{w}: churn pods entered (every {c['intervalMillis']} ms of each side's scheduling time, "
                         f"counted in the next measured pod's time): kube {k1['churn']} ({k1['churn placed']} placed), "
                         f"sched-core {o1['churn']} ({o1['churn placed']} placed)")
        a = r["agree"]
        if r["meta"].get("featureGates", {}).get("DynamicResourceAllocation"):
            notes.append(f"{w}: placed {a['kube placed']} of {a['pods']} measured pods (kube) and "
                         f"{a['ours placed']} (sched-core), {a['same node']} on the same node; at most "
                         f"{a['kube most on a node']} and {a['ours most on a node']} on one node; claims written "
                         f"(init and measured) {a['kube claims']} and {a['ours claims']}")
            if (a["kube placed"], a["kube claims"]) != (a["ours placed"], a["ours claims"]):
                failed.append(w)
        if r["meta"].get("unsupported"):
            notes.append(f"{w}: ops not reproduced: {', '.join(r['meta']['unsupported'])}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    print("| " + " | ".join(h.ljust(widths[i]) for i, h in enumerate(rows[0])) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows[1:]:
        print("| " + " | ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)) + " |")
    for n in notes:
        print(f"- {n}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if exhausted:
        sys.stderr.write(f"scheduler-perf: churn pods ran out: {', '.join(exhausted)}\n")
        sys.exit(1)
    if args.check and failed:
        sys.stderr.write(f"scheduler-perf: the sides place a different number of pods: {', '.join(failed)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
