package kube

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// minimalConfig is kube-scheduler's configuration with every field defaulted.
const minimalConfig = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// LoadConfig reads a KubeSchedulerConfiguration as kube-scheduler's --config does (decoded,
// defaulted, validated). An empty path gives kube's default configuration.
func LoadConfig(path string) (*schedconfig.KubeSchedulerConfiguration, error) {
	data := []byte(minimalConfig)
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: not a KubeSchedulerConfiguration but %s", path, gvk)
	}
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	if errs := validation.ValidateKubeSchedulerConfiguration(cfg); errs != nil {
		return nil, fmt.Errorf("%s: %w", path, errs)
	}
	return cfg, nil
}

// Options are the settings an Instance overrides in the configuration.
type Options struct {
	// Percentage of nodes to score for profiles and configurations that do not set one;
	// nil keeps kube's default (0: adaptive).
	Percentage *int32
	// Parallelism of kube's framework (kube's default is 16).
	Parallelism int32
	// Verbosity is kube's -v: log calls up to this level are made (and captured); 0 means 10,
	// the level of kube's per-node score lines, which the oracle reads. Production runs at 2.
	Verbosity int
}

// Instance is a kube-scheduler built on a fake clientset holding the objects it was given,
// its informers started and synced. Drive it one pod at a time with its exported fields
// (Sched.SchedulePod, Sched.Cache, the profiles' frameworks).
type Instance struct {
	// Sched is kube's Scheduler; it is never Run: the caller takes the pods.
	Sched *scheduler.Scheduler
	// Client is the fake clientset behind the informers.
	Client *fake.Clientset
	// Capture receives kube's log lines (contextual and global).
	Capture *Capture
	// Config is the configuration the scheduler was built from.
	Config *schedconfig.KubeSchedulerConfiguration

	cancel context.CancelFunc

	mu      sync.Mutex
	deleted []string // pods deleted through the API (preemption victims), namespace/name
}

// Start builds kube's scheduler on the objects and waits until its caches hold them: nodes
// and bound pods are in the scheduler cache, pending pods in its queue (never popped),
// everything else in the informers the plugins read.
//
// Writes to pods through the API (preemption's status patches and deletions, bindings) are
// recorded and dropped, so the objects stay as given: what kube decides is reported, never
// applied behind the caller's back.
func Start(cfg *schedconfig.KubeSchedulerConfiguration, objects []runtime.Object, opts Options) (*Instance, error) {
	verbosity := opts.Verbosity
	if verbosity == 0 {
		verbosity = 10
	}
	capture := NewCapture(verbosity)
	klog.SetLoggerWithOptions(capture.Logger(), klog.ContextualLogger(true))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), capture.Logger()))

	if err := FillMeta(objects); err != nil {
		cancel()
		return nil, err
	}
	var pending []*v1.Pod
	initial := make([]runtime.Object, 0, len(objects))
	for _, obj := range objects {
		if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName == "" {
			pending = append(pending, pod)
			continue
		}
		initial = append(initial, obj)
	}
	client := fake.NewClientset(initial...)
	inst := &Instance{Client: client, Capture: capture, Config: cfg, cancel: cancel}
	client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.DeleteAction)
		inst.mu.Lock()
		inst.deleted = append(inst.deleted, d.GetNamespace()+"/"+d.GetName())
		inst.mu.Unlock()
		return true, nil, nil
	})
	client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		// Bindings (pods/binding) and evictions: not applied.
		return a.GetSubresource() != "", nil, nil
	})

	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := func(string) events.EventRecorder { return &events.FakeRecorder{} }
	parallelism := opts.Parallelism
	if parallelism <= 0 {
		parallelism = cfg.Parallelism
	}
	percentage := cfg.PercentageOfNodesToScore
	if percentage == nil {
		percentage = opts.Percentage
	}
	sched, err := scheduler.New(ctx, client, factory, nil, profile.RecorderFactory(recorder),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithParallelism(parallelism),
		scheduler.WithPercentageOfNodesToScore(percentage),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-scheduler: %w", err)
	}
	inst.Sched = sched
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Minute)
	defer syncCancel()
	if err := sched.WaitForHandlersSync(syncCtx); err != nil {
		cancel()
		return nil, fmt.Errorf("kube-scheduler's event handlers did not sync: %w", err)
	}
	// Pending pods reach the queue once every other object is in the caches, as pods reach a
	// running scheduler after the objects they name: a pod queued before the DRA manager's
	// cache held its ResourceClaims would fail DynamicResources' PreEnqueue, and kube's queue
	// nominates a pod only when a pod event (not a claim event) lets it in, so its
	// nomination would depend on the order the informers delivered the objects in.
	if err := inst.addPending(ctx, factory, pending); err != nil {
		cancel()
		return nil, err
	}
	return inst, nil
}

// pendingBatch is how many pending pods addPending adds before it waits for the informer: the
// fake clientset's watch channel holds 100 events, and a full one panics.
const pendingBatch = 50

// addPending adds the pending pods to the API's objects, a batch at a time, each batch once
// the informer holds the one before, and waits until kube's queue holds every one a profile
// serves.
func (inst *Instance) addPending(ctx context.Context, factory informers.SharedInformerFactory, pending []*v1.Pod) error {
	lister := factory.Core().V1().Pods().Lister()
	// 5000 pending pods with ResourceClaims (SchedulingWithResourceClaimTemplate/5000pods_500nodes)
	// took over a minute to reach the caches on two cores shared with a build.
	deadline := time.Now().Add(10 * time.Minute)
	wait := func(done func() (bool, string)) error {
		for {
			ok, what := done()
			if ok {
				return nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("adding the pending pods: %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	want := map[types.UID]bool{}
	for start := 0; start < len(pending); start += pendingBatch {
		batch := pending[start:min(start+pendingBatch, len(pending))]
		for _, pod := range batch {
			if err := inst.Client.Tracker().Add(pod); err != nil {
				return fmt.Errorf("adding pod %s: %w", PodKey(pod), err)
			}
			if _, ok := inst.Sched.Profiles[pod.Spec.SchedulerName]; ok {
				want[pod.UID] = true
			}
		}
		err := wait(func() (bool, string) {
			for _, pod := range batch {
				if _, err := lister.Pods(pod.Namespace).Get(pod.Name); err != nil {
					return false, "the informer does not hold pod " + PodKey(pod)
				}
			}
			return true, ""
		})
		if err != nil {
			return err
		}
	}
	return wait(func() (bool, string) {
		queued, _ := inst.Sched.SchedulingQueue.PendingPods()
		n := 0
		for _, pod := range queued {
			if want[pod.UID] {
				n++
			}
		}
		return n == len(want), fmt.Sprintf("kube's queue holds %d of the %d pending pods", n, len(want))
	})
}

// Context is the context kube's calls take: its logger is the capture.
func (inst *Instance) Context() context.Context {
	return klog.NewContext(context.Background(), inst.Capture.Logger())
}

// Stop stops the informers.
func (inst *Instance) Stop() {
	inst.cancel()
}

// NodeOrder lists the nodes in the order kube's snapshot lists them (its node tree, which
// interleaves zones): the order in which a search with a percentage below 100 visits them.
func (inst *Instance) NodeOrder() ([]string, error) {
	snap := internalcache.NewEmptySnapshot()
	if err := inst.Sched.Cache.UpdateSnapshot(klog.Background(), snap); err != nil {
		return nil, err
	}
	infos, err := snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(infos))
	for _, ni := range infos {
		names = append(names, ni.Node().Name)
	}
	return names, nil
}

// NextStartNodeIndex is where kube's next search for feasible nodes starts in the node order
// (the scheduler's unexported nextStartNodeIndex, read, never written: each search advances it
// by the nodes it processed, so successive pods start where the last one stopped).
func (inst *Instance) NextStartNodeIndex() int {
	return int(reflect.ValueOf(inst.Sched).Elem().FieldByName("nextStartNodeIndex").Int())
}

// Framework is the profile a pod names, or nil.
func (inst *Instance) Framework(pod *v1.Pod) framework.Framework {
	return inst.Sched.Profiles[pod.Spec.SchedulerName]
}

// Assume places the pod on the node in kube's cache as kube's scheduling cycle does (the
// pod leaves the nominator), then runs the profile's Reserve and Permit plugins. A failed
// Reserve or Permit is undone as kube undoes it and returned.
func (inst *Instance) Assume(ctx context.Context, fw framework.Framework, state *framework.CycleState, pod *v1.Pod, node string) error {
	logger := klog.FromContext(ctx)
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = node
	if err := inst.Sched.Cache.AssumePod(logger, assumed); err != nil {
		return fmt.Errorf("assume on %s: %w", node, err)
	}
	inst.Sched.SchedulingQueue.DeleteNominatedPodIfExists(assumed)
	if st := fw.RunReservePluginsReserve(ctx, state, assumed, node); !st.IsSuccess() {
		fw.RunReservePluginsUnreserve(ctx, state, assumed, node)
		_ = inst.Sched.Cache.ForgetPod(logger, assumed)
		return fmt.Errorf("reserve on %s: %s", node, st.Message())
	}
	if st := fw.RunPermitPlugins(ctx, state, assumed, node); !st.IsSuccess() && !st.IsWait() {
		fw.RunReservePluginsUnreserve(ctx, state, assumed, node)
		_ = inst.Sched.Cache.ForgetPod(logger, assumed)
		return fmt.Errorf("permit on %s: %s", node, st.Message())
	}
	return nil
}

// TakeDeleted returns the pods deleted through the API since the last call, and forgets them.
func (inst *Instance) TakeDeleted() []string {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	d := inst.deleted
	inst.deleted = nil
	return d
}
