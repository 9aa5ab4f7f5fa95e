// Command oracle runs kube-scheduler v1.34 in process on case folders and writes, for every
// pending pod, what kube decided and why: the oracle of the project's differential suite.
//
//	oracle [-percentage N] [-parallelism N] [-out FILE] CASE_DIR...
//
// A case folder holds nodes.json (nodes), pods.json (pods in order: pods with spec.nodeName
// run there, the others are pending and scheduled in file order), objects.json (anything
// else: namespaces, workloads, storage objects, PodDisruptionBudgets), and optionally
// config.yaml (a KubeSchedulerConfiguration; kube's default configuration otherwise). kube's
// answers go to CASE_DIR/oracle.json (or -out, with one folder).
//
// Each pending pod in turn goes through kube's own code: the PreEnqueue plugins of the profile
// its schedulerName names (a gated pod is reported and left), then kube's SchedulePod (the
// feasible set, every score plugin's weighted score per node as kube's prioritizeNodes logs
// them, the totals, the tie set and kube's pick; or the FitError with every node's reasons),
// then, for a pod that fits nowhere, the PostFilter plugins (preemption's nominated node and
// the victims kube deleted, recorded without deleting them), and for a pod that fits, kube's
// assume, Reserve and Permit on kube's pick before the next pod (with the PersistentVolume
// VolumeBinding's Reserve assumed for each claim: of the smallest that fit, kube takes the
// first its assume cache lists, in a Go map's order). Preemption is reported, not
// applied: victims stay and the preemptor is not nominated.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"sched-lease/reference/internal/kube"
)

// version is the kube release the module pins (reference/go.mod).
const version = "v1.34.4"

type oracleFile struct {
	Meta meta        `json:"meta"`
	Pods []podAnswer `json:"pods"`
}

type scorePlugin struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight"`
}

type meta struct {
	Side                     string                   `json:"side"`
	Version                  string                   `json:"version"`
	Profiles                 []string                 `json:"profiles"`
	ScorePlugins             map[string][]scorePlugin `json:"scorePlugins"`
	Nodes                    int                      `json:"nodes"`
	BoundPods                int                      `json:"boundPods"`
	PendingPods              int                      `json:"pendingPods"`
	SkippedPods              int                      `json:"skippedPods"`
	Config                   *string                  `json:"config"`
	PercentageOfNodesToScore *int32                   `json:"percentageOfNodesToScore"`
	Parallelism              int32                    `json:"parallelism"`
	NodeOrder                []string                 `json:"nodeOrder"`
}

type nodeScores struct {
	Plugins map[string]int64 `json:"plugins"`
	Total   int64            `json:"total"`
}

type postFilter struct {
	Code          string   `json:"code"`
	Message       string   `json:"message"`
	NominatedNode *string  `json:"nominatedNode"`
	Victims       []string `json:"victims"`
	FitError      string   `json:"fitError"`
}

type podAnswer struct {
	Pod            string                `json:"pod"`
	Gated          *string               `json:"gated,omitempty"`
	Error          *string               `json:"error,omitempty"`
	Feasible       []string              `json:"feasible"`
	Scored         bool                  `json:"scored"`
	Scores         map[string]nodeScores `json:"scores"`
	MaxTotal       *int64                `json:"maxTotal"`
	Tied           []string              `json:"tied"`
	Chosen         *string               `json:"chosen"`
	Volumes        *map[string]string    `json:"volumes,omitempty"`
	EvaluatedNodes *int                  `json:"evaluatedNodes,omitempty"`
	StartIndex     *int                  `json:"startIndex,omitempty"`
	NextStartIndex *int                  `json:"nextStartIndex,omitempty"`
	Evaluated      []string              `json:"evaluated,omitempty"`
	FitError       *string               `json:"fitError,omitempty"`
	Reasons        map[string][]string   `json:"reasons,omitempty"`
	PreFilterMsg   *string               `json:"preFilterMsg,omitempty"`
	PostFilter     *postFilter           `json:"postFilter,omitempty"`
}

func main() {
	percentage := flag.Int("percentage", 100, "percentage of nodes to score where the configuration sets none (0: kube's adaptive default)")
	parallelism := flag.Int("parallelism", 1, "kube's parallelism (1 keeps a search below 100% deterministic)")
	out := flag.String("out", "", "write the answers here instead of CASE_DIR/oracle.json (one case folder only)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: oracle [-percentage N] [-parallelism N] [-out FILE] CASE_DIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || (*out != "" && flag.NArg() != 1) {
		flag.Usage()
		os.Exit(2)
	}
	pct := int32(*percentage)
	failed := 0
	for _, dir := range flag.Args() {
		target := *out
		if target == "" {
			target = filepath.Join(dir, "oracle.json")
		}
		if err := runCase(dir, target, kube.Options{Percentage: &pct, Parallelism: int32(*parallelism)}); err != nil {
			fmt.Fprintf(os.Stderr, "oracle: %s: %v\n", dir, err)
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "oracle: %d of %d cases failed\n", failed, flag.NArg())
		os.Exit(1)
	}
}

func runCase(dir, target string, opts kube.Options) error {
	c, err := kube.ReadCase(dir)
	if err != nil {
		return err
	}
	cfg := c.Config
	if !c.PercentageSet && opts.Percentage != nil {
		// kube's defaulting gave the configuration 0 (adaptive); the file set nothing.
		cfg.PercentageOfNodesToScore = opts.Percentage
	}
	var configName *string
	if c.ConfigFile != "" {
		configName = &c.ConfigFile
	}
	nodes, pods := c.Nodes, c.Pods
	objects := c.Objects()
	inst, err := kube.Start(cfg, objects, opts)
	if err != nil {
		return err
	}
	defer inst.Stop()

	order, err := inst.NodeOrder()
	if err != nil {
		return err
	}
	m := meta{
		Side:         "kube-scheduler",
		Version:      version,
		ScorePlugins: map[string][]scorePlugin{},
		Nodes:        len(nodes),
		Config:       configName,
		Parallelism:  opts.Parallelism,
		NodeOrder:    order,
	}
	// The global percentage (a profile's own, in the configuration, wins for its pods).
	m.PercentageOfNodesToScore = cfg.PercentageOfNodesToScore
	if m.PercentageOfNodesToScore == nil {
		m.PercentageOfNodesToScore = opts.Percentage
	}
	for _, p := range cfg.Profiles {
		m.Profiles = append(m.Profiles, p.SchedulerName)
		fw := inst.Sched.Profiles[p.SchedulerName]
		plugins := []scorePlugin{}
		for _, pl := range fw.ListPlugins().Score.Enabled {
			plugins = append(plugins, scorePlugin{Name: pl.Name, Weight: pl.Weight})
		}
		m.ScorePlugins[p.SchedulerName] = plugins
	}
	answers := []podAnswer{}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			m.BoundPods++
			continue
		}
		fw := inst.Framework(pod)
		if fw == nil || pod.DeletionTimestamp != nil {
			// kube's informer never queues such a pod (no profile serves it, or it is being
			// deleted).
			m.SkippedPods++
			continue
		}
		m.PendingPods++
		a, err := decide(inst, fw, pod)
		if err != nil {
			return fmt.Errorf("%s: %w", kube.PodKey(pod), err)
		}
		answers = append(answers, a)
	}
	data, err := json.MarshalIndent(oracleFile{Meta: m, Pods: answers}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(target, append(data, '\n'), 0o644)
}

// decide runs one pending pod through kube and assumes it where kube put it.
func decide(inst *kube.Instance, fw framework.Framework, pod *v1.Pod) (podAnswer, error) {
	rec := &filterRecorder{Framework: fw}
	a, err := schedule(inst, fw, rec, pod)
	if a.StartIndex != nil {
		a.Evaluated = rec.evaluated(a.Feasible)
	}
	return a, err
}

// schedule is decide with kube's SchedulePod given rec, the profile fw recording its filter
// calls.
func schedule(inst *kube.Instance, fw framework.Framework, rec *filterRecorder, pod *v1.Pod) (podAnswer, error) {
	ctx := inst.Context()
	a := podAnswer{Pod: kube.PodKey(pod), Feasible: []string{}, Tied: []string{}, Scores: map[string]nodeScores{}}
	for _, pl := range fw.PreEnqueuePlugins() {
		if st := pl.PreEnqueue(ctx, pod); !st.IsSuccess() {
			msg := st.Message()
			a.Gated = &msg
			return a, nil
		}
	}
	inst.Capture.ResetScores()
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	start := inst.NextStartNodeIndex()
	a.StartIndex = &start
	result, err := inst.Sched.SchedulePod(ctx, rec, state, pod)
	next := inst.NextStartNodeIndex()
	a.NextStartIndex = &next
	if err != nil {
		var fitErr *framework.FitError
		if !errors.As(err, &fitErr) {
			msg := err.Error()
			a.Error = &msg
			return a, nil
		}
		return a, unschedulable(ctx, inst, fw, state, pod, fitErr, &a)
	}
	host := result.SuggestedHost
	a.Chosen = &host
	evaluated := result.EvaluatedNodes
	a.EvaluatedNodes = &evaluated
	if result.FeasibleNodes == 1 {
		a.Feasible = []string{host}
		a.Scores[host] = nodeScores{Plugins: map[string]int64{}}
		zero := int64(0)
		a.MaxTotal = &zero
		a.Tied = []string{host}
	} else {
		plugins, totals := inst.Capture.Scores()
		if len(totals) != result.FeasibleNodes {
			return a, fmt.Errorf("kube found %d feasible nodes but logged scores for %d", result.FeasibleNodes, len(totals))
		}
		a.Scored = true
		var max int64
		first := true
		for node, total := range totals {
			a.Feasible = append(a.Feasible, node)
			p := plugins[node]
			if p == nil {
				p = map[string]int64{}
			}
			a.Scores[node] = nodeScores{Plugins: p, Total: total}
			if first || total > max {
				max, first = total, false
			}
		}
		a.MaxTotal = &max
		for node, total := range totals {
			if total == max {
				a.Tied = append(a.Tied, node)
			}
		}
		sort.Strings(a.Feasible)
		sort.Strings(a.Tied)
		if sort.SearchStrings(a.Tied, host) == len(a.Tied) || a.Tied[sort.SearchStrings(a.Tied, host)] != host {
			return a, fmt.Errorf("kube picked %s, which is not among the top-scored nodes %v", host, a.Tied)
		}
	}
	if err := inst.Assume(ctx, fw, state, pod, host); err != nil {
		msg := err.Error()
		a.Error = &msg
	}
	volumes := inst.Capture.TakeVolumes(kube.PodKey(pod))
	if volumes == nil {
		volumes = map[string]string{}
	}
	a.Volumes = &volumes
	return a, nil
}

// filterRecorder is the profile as kube's SchedulePod sees it, recording each node kube runs
// the filters on (with nominated pods), in kube's order, and whether the node passed; every
// call goes to the profile itself.
type filterRecorder struct {
	framework.Framework
	mu    sync.Mutex
	calls []filterCall
}

type filterCall struct {
	node   string
	passed bool
}

func (r *filterRecorder) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	st := r.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	r.mu.Lock()
	r.calls = append(r.calls, filterCall{node: info.Node().Name, passed: st.IsSuccess()})
	r.mu.Unlock()
	return st
}

// evaluated lists the nodes kube's search processed, in its order, each once: those that
// failed and the feasible ones it kept (a node that passed after kube had found enough is
// dropped by kube and not counted; a nominated node tried first and again is listed once).
func (r *filterRecorder) evaluated(feasible []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := map[string]bool{}
	for _, n := range feasible {
		kept[n] = true
	}
	seen := map[string]bool{}
	out := []string{}
	for _, c := range r.calls {
		if seen[c.node] || (c.passed && !kept[c.node]) {
			continue
		}
		seen[c.node] = true
		out = append(out, c.node)
	}
	return out
}

// unschedulable fills the answer of a pod that fits nowhere: kube's FitError, every node's
// reasons and the PostFilter outcome.
func unschedulable(ctx context.Context, inst *kube.Instance, fw framework.Framework, state *framework.CycleState, pod *v1.Pod, fitErr *framework.FitError, a *podAnswer) error {
	text := fitErr.Error()
	a.FitError = &text
	if msg := fitErr.Diagnosis.PreFilterMsg; msg != "" {
		a.PreFilterMsg = &msg
	}
	order, err := inst.NodeOrder()
	if err != nil {
		return err
	}
	a.Reasons = map[string][]string{}
	for _, node := range order {
		a.Reasons[node] = append([]string{}, fitErr.Diagnosis.NodeToStatus.Get(node).Reasons()...)
	}
	if !fw.HasPostFilterPlugins() {
		return nil
	}
	inst.TakeDeleted()
	result, st := fw.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	pf := &postFilter{Code: st.Code().String(), Message: st.Message(), Victims: []string{}}
	if result != nil && result.NominatingInfo != nil && result.NominatedNodeName != "" {
		node := result.NominatedNodeName
		pf.NominatedNode = &node
	}
	if st.IsSuccess() && pf.NominatedNode != nil {
		if _, err := inst.Capture.WaitPreemption(kube.PodKey(pod), 30*time.Second); err != nil {
			return err
		}
	}
	pf.Victims = append(pf.Victims, inst.TakeDeleted()...)
	sort.Strings(pf.Victims)
	fitErr.Diagnosis.PostFilterMsg = st.Message()
	pf.FitError = fitErr.Error()
	a.PostFilter = pf
	return nil
}
