// Command perf is the benchmark peer: kube's scheduler_perf workloads, read from kube's own
// performance-config.yaml files and templates, through kube-scheduler v1.34 in process.
//
//	perf list   -scheduler-perf DIR
//	perf export -scheduler-perf DIR -out DIR TESTCASE/WORKLOAD...
//	perf time   [-parallelism N] [-percentage P] [-measure N] [-churn-interval D] -out FILE CASE_DIR
//
// DIR is test/integration/scheduler_perf of the k8s.io/kubernetes module (`go list -m -f
// '{{.Dir}}' k8s.io/kubernetes` in reference/). `export` writes each workload as a case folder
// (OUT/TESTCASE_WORKLOAD: nodes.json, objects.json, pods.json with the init pods then the
// measured pods, config.yaml when the test case names one, churn.json for pod churn,
// workload.json), the objects kube's
// scheduler_perf creates, in its order. `time` runs kube-scheduler on such a folder: the init
// pods untimed, then each measured pod timed through one scheduling cycle as kube's
// schedulingCycle runs it (SchedulePod, then assume, Reserve and Permit on the node found).
// A measured pod that fits nowhere runs the PostFilter plugins (preemption) in the timed part;
// when they nominate a node, the victims are taken out of the cache untimed (kube's informer
// would), and the pod's retry on its nominated node is timed too. A placed pod with
// ResourceClaims then goes through the PreBind plugins untimed: DynamicResources writes its
// claims' allocations and reservedFor, as in a live run, so later pods see those devices in
// use. In a steady-state workload (workload.json's steadyState), each placed measured pod then
// leaves kube's cache and its claims are deleted through the API, untimed, as scheduler_perf
// deletes each pod once scheduled and kube's resourceclaim controller its claims. A workload
// with pod churn (workload.json's churn, the pods in churn.json) lets the churn pods in on the
// side's own clock, scheduled and timed as the measured pods, their time counted in the next
// measured pod's (see churner). The timings
// (and each measured pod's node) go to FILE as JSON, for scripts/scheduler-perf.py.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"sched-lease/reference/internal/kube"
	"sched-lease/reference/internal/perf"
)

const version = "v1.34.4"

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  perf list   -scheduler-perf DIR
  perf export -scheduler-perf DIR -out DIR TESTCASE/WORKLOAD...
  perf time   [-parallelism N] [-percentage P] [-measure N] [-churn-interval D] -out FILE CASE_DIR
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "list":
		err = list(os.Args[2:])
	case "export":
		err = export(os.Args[2:])
	case "time":
		err = timeCase(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "perf %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func list(args []string) error {
	fs := flag.NewFlagSet("list", flag.ExitOnError)
	dir := fs.String("scheduler-perf", "", "test/integration/scheduler_perf of the k8s.io/kubernetes module")
	_ = fs.Parse(args)
	cases, err := perf.ReadTestCases(*dir)
	if err != nil {
		return err
	}
	for _, tc := range cases {
		for _, w := range tc.Workloads {
			fmt.Printf("%s/%s\t%s\t%v\n", tc.Name, w.Name, tc.File, w.Labels)
		}
	}
	return nil
}

// folderName is the case folder of a workload: TestCase_Workload, slashes replaced.
func folderName(name string) string {
	return strings.ReplaceAll(name, "/", "_")
}

func export(args []string) error {
	fs := flag.NewFlagSet("export", flag.ExitOnError)
	dir := fs.String("scheduler-perf", "", "test/integration/scheduler_perf of the k8s.io/kubernetes module")
	out := fs.String("out", "", "where the case folders go")
	_ = fs.Parse(args)
	if *dir == "" || *out == "" || fs.NArg() == 0 {
		usage()
	}
	cases, err := perf.ReadTestCases(*dir)
	if err != nil {
		return err
	}
	for _, name := range fs.Args() {
		tc, w, err := perf.Find(cases, name)
		if err != nil {
			return err
		}
		built, err := perf.Build(tc, w)
		if err != nil {
			return err
		}
		target := filepath.Join(*out, folderName(name))
		if err := built.Write(target, tc.File, version); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "perf export: %s: %d nodes, %d init pods, %d measured pods%s -> %s\n",
			name, len(built.Nodes), built.InitPods, built.MeasuredPods, unsupported(built.Unsupported), target)
	}
	return nil
}

func unsupported(ops []string) string {
	if len(ops) == 0 {
		return ""
	}
	return fmt.Sprintf(" (not reproduced: %s)", strings.Join(ops, ", "))
}

// Timings is the JSON `time` writes; scripts/scheduler-perf.py reads it beside sched-core's.
type Timings struct {
	Side          string  `json:"side"`
	Version       string  `json:"version"`
	Workload      string  `json:"workload"`
	Parallelism   int     `json:"parallelism"`
	Percentage    int     `json:"percentage"`
	GoMaxProcs    int     `json:"gomaxprocs"`
	Nodes         int     `json:"nodes"`
	InitPods      int     `json:"initPods"`
	InitSeconds   float64 `json:"initSeconds"`
	Nanos         []int64 `json:"nanos"`
	Unschedulable int     `json:"unschedulable"`
	Preemptions   int     `json:"preemptions"`
	Victims       int     `json:"victims"`
	// Feature gates of the workload that kube v1.34 does not let be set (locked), as name=value.
	GatesNotSet []string `json:"gatesNotSet"`
	// The node of each measured pod, in order ("" for a pod left unschedulable): the script
	// compares them with sched-core's.
	Placements []string `json:"placements"`
	// ResourceClaims written for placed pods (init and measured), by PreBind.
	ClaimsWritten int `json:"claimsWritten"`
	// Churn pods that entered while the measured pods were scheduled, and how many of them
	// were placed.
	ChurnPods   int `json:"churnPods"`
	ChurnPlaced int `json:"churnPlaced"`
	// The clock reached a tick past the last of churn.json's pods.
	ChurnExhausted bool `json:"churnExhausted"`
}

// churner reproduces kube's churn op of pods (mode create) on the side's own clock: the
// measured pods' and churn pods' summed cycle times since the first measured pod. Whenever
// that clock passes the next tick (every IntervalMillis, the first one interval in, as kube's
// ticker), the tick's pods enter and are scheduled at once (kube's churn pods outrank the
// measured ones: priority 10), and their time counts in the next measured pod's. The clock
// leaves out binding and the API, which kube's wall clock in scheduler_perf has: fewer
// ticks than a live run, for either side.
type churner struct {
	meta      *perf.ChurnMeta
	pods      []*v1.Pod
	clock     time.Duration
	next      int // ticks entered
	entered   int
	placed    int
	exhausted bool
}

func newChurner(meta *perf.ChurnMeta, pods []*v1.Pod) *churner {
	return &churner{meta: meta, pods: pods}
}

// due schedules the churn pods whose tick the clock has reached, returning their time.
func (c *churner) due(r *runner) (time.Duration, error) {
	if c.meta == nil {
		return 0, nil
	}
	interval := time.Duration(c.meta.IntervalMillis) * time.Millisecond
	if c.meta.Interval > 0 {
		interval = c.meta.Interval
	}
	var spent time.Duration
	for c.clock >= time.Duration(c.next+1)*interval {
		if c.next >= c.meta.Ticks {
			// The file's pods are all in: the run says so (the script refuses it).
			c.exhausted = true
			break
		}
		for _, p := range c.pods[c.next*c.meta.PodsPerTick : (c.next+1)*c.meta.PodsPerTick] {
			o, err := r.schedule(p)
			if err != nil {
				return 0, err
			}
			c.entered++
			if o.placed {
				c.placed++
			}
			spent += o.timed
			c.clock += o.timed
		}
		c.next++
	}
	return spent, nil
}

func timeCase(args []string) error {
	fs := flag.NewFlagSet("time", flag.ExitOnError)
	parallelism := fs.Int("parallelism", 1, "kube's parallelism")
	percentage := fs.Int("percentage", 0, "percentage of nodes to score where the configuration sets none (0: adaptive, as scheduler_perf runs)")
	measure := fs.Int("measure", 0, "time at most this many measured pods (0: all)")
	out := fs.String("out", "", "the timings file")
	churnInterval := fs.Duration("churn-interval", 0, "the churn interval instead of the workload's (tests: a tiny one lets every churn pod in after the first measured pod)")
	_ = fs.Parse(args)
	if *out == "" || fs.NArg() != 1 {
		usage()
	}
	dir := fs.Arg(0)
	meta, err := perf.ReadMeta(dir)
	if err != nil {
		return err
	}
	if meta.Churn != nil && *churnInterval > 0 {
		meta.Churn.IntervalMillis = 0
		meta.Churn.Interval = *churnInterval
	}
	// Gates v1.34 has locked (SchedulerQueueingHints is GA) keep their value: they decide how
	// pods are requeued, which a cycle timed here does not do.
	var locked []string
	for name, on := range meta.FeatureGates {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{name: on}); err != nil {
			locked = append(locked, fmt.Sprintf("%s=%v", name, on))
		}
	}
	c, err := kube.ReadCase(dir)
	if err != nil {
		return err
	}
	// Churn pods are in kube's informers from the start, pending, as the API server would
	// hold them once created: a cycle (and preemption, which reads the pod from its lister)
	// then sees them as in a live run.
	objects := c.Objects()
	var churn []*v1.Pod
	if meta.Churn != nil {
		list, err := kube.ReadList(filepath.Join(dir, perf.ChurnFile))
		if err != nil {
			return err
		}
		for i, obj := range list {
			p, ok := obj.(*v1.Pod)
			if !ok {
				return fmt.Errorf("%s: items[%d]: a %T, not a pod", perf.ChurnFile, i, obj)
			}
			churn = append(churn, p)
			objects = append(objects, p)
		}
	}
	pct := int32(*percentage)
	inst, err := kube.Start(c.Config, objects, kube.Options{Percentage: &pct, Parallelism: int32(*parallelism), Verbosity: 2})
	if err != nil {
		return err
	}
	defer inst.Stop()
	r := &runner{inst: inst, placed: map[string]*v1.Pod{}}
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" {
			r.placed[kube.PodKey(p)] = p
		}
	}
	pending := make([]*v1.Pod, 0, len(c.Pods))
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" {
			pending = append(pending, p)
		}
	}
	if meta.InitPods > len(pending) {
		return fmt.Errorf("workload.json says %d init pods, pods.json has %d pending pods", meta.InitPods, len(pending))
	}
	t := Timings{
		Side: "kube-scheduler", Version: version, Workload: meta.TestCase + "/" + meta.Workload,
		Parallelism: *parallelism, Percentage: *percentage, GoMaxProcs: runtime.GOMAXPROCS(0),
		Nodes: len(c.Nodes), InitPods: meta.InitPods, GatesNotSet: locked,
	}
	start := time.Now()
	for _, p := range pending[:meta.InitPods] {
		if _, err := r.schedule(p); err != nil {
			return err
		}
	}
	t.InitSeconds = time.Since(start).Seconds()
	measured := pending[meta.InitPods:]
	if *measure > 0 && *measure < len(measured) {
		measured = measured[:*measure]
	}
	r.preemptions, r.victims = 0, 0
	ch := newChurner(meta.Churn, churn)
	for _, p := range measured {
		before, err := ch.due(r)
		if err != nil {
			return err
		}
		o, err := r.schedule(p)
		if err != nil {
			return err
		}
		ch.clock += o.timed
		t.Nanos = append(t.Nanos, (before + o.timed).Nanoseconds())
		t.Placements = append(t.Placements, o.node)
		if !o.placed {
			t.Unschedulable++
		} else if meta.SteadyState {
			if err := r.remove(p); err != nil {
				return err
			}
		}
	}
	t.Preemptions, t.Victims = r.preemptions, r.victims
	t.ClaimsWritten = r.claimsWritten
	t.ChurnPods, t.ChurnPlaced, t.ChurnExhausted = ch.entered, ch.placed, ch.exhausted
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(data, '\n'), 0o644)
}

type runner struct {
	inst *kube.Instance
	// Pods in kube's cache by key (bound at the start, or assumed here).
	placed      map[string]*v1.Pod
	preemptions int
	victims     int
	// ResourceClaims written by PreBind (placed pods' claims).
	claimsWritten int
}

type outcome struct {
	placed bool
	timed  time.Duration
	// The node the pod was placed on, if placed.
	node string
}

// cycle is one scheduling cycle as kube's schedulingCycle runs it, without the queue: the
// pod's node found and the pod assumed there (Reserve, Permit), or the PostFilter outcome.
func (r *runner) cycle(ctx context.Context, fw framework.Framework, pod *v1.Pod) (node string, nominated string, state *framework.CycleState, err error) {
	state = framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	result, err := r.inst.Sched.SchedulePod(ctx, fw, state, pod)
	if err == nil {
		if err := r.inst.Assume(ctx, fw, state, pod, result.SuggestedHost); err != nil {
			return "", "", nil, err
		}
		return result.SuggestedHost, "", state, nil
	}
	var fitErr *framework.FitError
	if !errors.As(err, &fitErr) {
		return "", "", nil, err
	}
	if !fw.HasPostFilterPlugins() {
		return "", "", nil, nil
	}
	res, st := fw.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	if st.IsSuccess() && res != nil && res.NominatingInfo != nil {
		return "", res.NominatedNodeName, nil, nil
	}
	return "", "", nil, nil
}

// preBindClaims writes a placed pod's ResourceClaims (untimed) as kube's binding cycle does
// before the bind: the profile's PreBind plugins, of which DynamicResources writes each
// claim's allocation and the pod in its reservedFor through the API, assumes the written
// claim in its cache (as the informer's update would bring it) and drops the allocation it
// held in flight since Reserve. Later pods then see the devices in use as in a live run.
// Pods without claims skip it, so the other workloads run as before.
func (r *runner) preBindClaims(ctx context.Context, fw framework.Framework, state *framework.CycleState, pod *v1.Pod, node string) error {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = node
	if st := fw.RunPreBindPlugins(ctx, state, assumed, node); !st.IsSuccess() {
		return fmt.Errorf("prebind on %s: %s", node, st.Message())
	}
	r.claimsWritten += len(pod.Spec.ResourceClaims)
	return nil
}

// schedule runs one pod: a cycle, and after a preemption the victims' removal (untimed) and
// the retry on the nominated node.
func (r *runner) schedule(pod *v1.Pod) (outcome, error) {
	ctx := r.inst.Context()
	fw := r.inst.Framework(pod)
	if fw == nil {
		return outcome{}, fmt.Errorf("%s: no profile %q", kube.PodKey(pod), pod.Spec.SchedulerName)
	}
	start := time.Now()
	node, nominated, state, err := r.cycle(ctx, fw, pod)
	timed := time.Since(start)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w", kube.PodKey(pod), err)
	}
	if node != "" {
		if err := r.preBindClaims(ctx, fw, state, pod, node); err != nil {
			return outcome{}, fmt.Errorf("%s: %w", kube.PodKey(pod), err)
		}
		r.assumed(pod, node)
		return outcome{placed: true, timed: timed, node: node}, nil
	}
	if nominated == "" {
		return outcome{timed: timed}, nil
	}
	// Preemption: wait for kube's asynchronous victim deletion, then take the victims out of
	// the cache as the informer's delete events would.
	r.preemptions++
	if _, err := r.inst.Capture.WaitPreemption(kube.PodKey(pod), 30*time.Second); err != nil {
		return outcome{}, err
	}
	logger := klog.FromContext(ctx)
	for _, key := range r.inst.TakeDeleted() {
		victim, ok := r.placed[key]
		if !ok {
			return outcome{}, fmt.Errorf("kube deleted %s, which is not in its cache", key)
		}
		if err := r.inst.Sched.Cache.ForgetPod(logger, victim); err != nil {
			if err := r.inst.Sched.Cache.RemovePod(logger, victim); err != nil {
				return outcome{}, fmt.Errorf("removing victim %s: %w", key, err)
			}
		}
		delete(r.placed, key)
		r.victims++
	}
	retry := pod.DeepCopy()
	retry.Status.NominatedNodeName = nominated
	start = time.Now()
	node, _, state, err = r.cycle(ctx, fw, retry)
	timed += time.Since(start)
	if err != nil {
		return outcome{}, fmt.Errorf("%s (retry on %s): %w", kube.PodKey(pod), nominated, err)
	}
	if node != "" {
		if err := r.preBindClaims(ctx, fw, state, retry, node); err != nil {
			return outcome{}, fmt.Errorf("%s: %w", kube.PodKey(pod), err)
		}
		r.assumed(pod, node)
	}
	return outcome{placed: node != "", timed: timed, node: node}, nil
}

// remove deletes a placed pod of a steady-state workload (untimed), as scheduler_perf deletes
// each pod once it is scheduled, and the claims kube's resourceclaim controller made for it
// (deleted with it): the pod leaves kube's cache, each claim the API, and remove waits until
// kube's DRA manager no longer has the claim nor counts its devices as allocated.
func (r *runner) remove(pod *v1.Pod) error {
	ctx := r.inst.Context()
	logger := klog.FromContext(ctx)
	key := kube.PodKey(pod)
	placed, ok := r.placed[key]
	if !ok {
		return fmt.Errorf("%s is not in kube's cache", key)
	}
	if err := r.inst.Sched.Cache.ForgetPod(logger, placed); err != nil {
		if err := r.inst.Sched.Cache.RemovePod(logger, placed); err != nil {
			return fmt.Errorf("removing %s: %w", key, err)
		}
	}
	delete(r.placed, key)
	fw := r.inst.Framework(pod)
	claims := fw.SharedDRAManager().ResourceClaims()
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName == nil {
			continue
		}
		name := *st.ResourceClaimName
		claim, err := claims.Get(pod.Namespace, name)
		if err != nil {
			return fmt.Errorf("%s: claim %s: %w", key, name, err)
		}
		var devices []structured.DeviceID
		if a := claim.Status.Allocation; a != nil {
			for _, res := range a.Devices.Results {
				devices = append(devices, structured.MakeDeviceID(res.Driver, res.Pool, res.Device))
			}
		}
		if err := r.inst.Client.ResourceV1().ResourceClaims(pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("%s: deleting claim %s: %w", key, name, err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			_, err := claims.Get(pod.Namespace, name)
			gone := err != nil
			// The claim tracker refuses a listing that raced with an informer event
			// ("conflicting concurrent modification"); kube's PreFilter asks again, and so
			// does this loop.
			allocated, lerr := claims.ListAllAllocatedDevices()
			if lerr != nil {
				gone = false
			}
			for _, d := range devices {
				if allocated.Has(d) {
					gone = false
				}
			}
			if gone {
				break
			}
			if time.Now().After(deadline) {
				if lerr != nil {
					return fmt.Errorf("%s: claim %s: listing kube's allocated devices: %w", key, name, lerr)
				}
				return fmt.Errorf("%s: claim %s still in kube's DRA manager a minute after its deletion", key, name)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

func (r *runner) assumed(pod *v1.Pod, node string) {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	r.placed[kube.PodKey(p)] = p
}
