package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"     // v1 defaulting, as the API server applies it
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource.k8s.io/v1 defaulting (a request's count)
	testutils "k8s.io/kubernetes/test/utils"
	"sigs.k8s.io/yaml"
)

// Built is a workload's objects in the order scheduler_perf creates them.
type Built struct {
	TestCase string
	Workload string
	// Nodes, as the API server stores them after the prepare strategies ran.
	Nodes []*v1.Node
	// Namespaces, CSINodes, PersistentVolumes and their claims, DeviceClasses, ResourceSlices,
	// ResourceClaimTemplates and ResourceClaims (those of createAny, and those kube's
	// resourceclaim controller makes from the templates the pods name).
	Objects []runtime.Object
	// Pods in creation order: the init pods, then the measured pods.
	Pods []*v1.Pod
	// How many of Pods are init pods (scheduled untimed before the measured ones).
	InitPods int
	// How many are measured pods (those of an op that collects metrics).
	MeasuredPods int
	// The test case's scheduler configuration file, if it names one.
	ConfigPath string
	// Feature gates of the test case and the workload.
	FeatureGates map[string]bool
	// Ops this reproduction does not run (churn of nodes or services, ...), by op code.
	Unsupported []string
	// The measured pods come from a steady-state op: each is deleted, with the claims made
	// for it, once placed, so the cluster stays as the init ops left it.
	SteadyState bool
	// A churn op of pods in mode create, if the workload has one.
	Churn *ChurnPods
}

// ChurnPods is a churn op of mode create whose templates are all pods: every IntervalMillis,
// one pod of each template enters the cluster while the measured pods are scheduled.
type ChurnPods struct {
	IntervalMillis int64
	// Ticks at most (kube's Number; 0: no limit).
	Limit int
	// The pods of one tick, as the templates give them (namespace set, no name).
	Templates []*v1.Pod
}

// churnTicksMin is how many ticks of churn pods the export writes at least (churn.json): time
// decides how many each side schedules, 200 ticks stand for 40 s of scheduling at kube's
// 200 ms interval. Workloads with more measured pods get one tick per 10 measured pods.
const churnTicksMin = 200

type builder struct {
	tc        *TestCase
	w         *Workload
	out       *Built
	client    *fake.Clientset
	nodeIndex int
	podIndex  int
	measuring bool
	haveNS    map[string]bool
	// ResourceClaimTemplates by namespace/name, for the claims of the pods naming them.
	claimTemplates map[string]*resourceapi.ResourceClaimTemplate
	// Claims made from templates so far (their names' suffix).
	claimIndex int
}

// Build turns a workload into its objects.
func Build(tc *TestCase, w *Workload) (*Built, error) {
	b := &builder{
		tc:     tc,
		w:      w,
		out:    &Built{TestCase: tc.Name, Workload: w.Name, FeatureGates: map[string]bool{}},
		client: fake.NewClientset(),
		haveNS: map[string]bool{},

		claimTemplates: map[string]*resourceapi.ResourceClaimTemplate{},
	}
	for k, v := range tc.FeatureGates {
		b.out.FeatureGates[k] = v
	}
	for k, v := range w.FeatureGates {
		b.out.FeatureGates[k] = v
	}
	if tc.SchedulerConfigPath != "" {
		b.out.ConfigPath = tc.path(tc.SchedulerConfigPath)
	}
	for i, o := range tc.WorkloadTemplate {
		if err := b.op(i, o); err != nil {
			return nil, fmt.Errorf("%s/%s: op %d (%s): %w", tc.Name, w.Name, i, o.Opcode, err)
		}
	}
	// CSINodes made by the node strategies.
	csiNodes, err := b.client.StorageV1().CSINodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range csiNodes.Items {
		n := csiNodes.Items[i]
		n.ManagedFields = nil
		b.out.Objects = append(b.out.Objects, &n)
	}
	return b.out, nil
}

func (b *builder) op(index int, o Op) error {
	switch o.Opcode {
	case "createNodes":
		var op CreateNodes
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.createNodes(index, &op)
	case "createNamespaces":
		var op CreateNamespaces
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.createNamespaces(&op)
	case "createPods":
		var op CreatePods
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.createPods(index, &op)
	case "createPodSets":
		var op CreatePodSets
		if err := decode(o, &op); err != nil {
			return err
		}
		count := op.Count
		if op.CountParam != "" {
			var err error
			if count, err = b.w.param(op.CountParam); err != nil {
				return err
			}
		}
		for i := 0; i < count; i++ {
			pods := op.CreatePodsOp
			ns := fmt.Sprintf("%s-%d", op.NamespacePrefix, i)
			pods.Namespace = &ns
			if err := b.createPods(index, &pods); err != nil {
				return err
			}
		}
		return nil
	case "createAny":
		var op CreateAny
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.createAny(&op)
	case "createResourceDriver":
		var op CreateResourceDriver
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.createResourceDriver(&op)
	case "allocResourceClaims":
		var op AllocResourceClaims
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.allocResourceClaims(&op)
	case "churn":
		var op Churn
		if err := decode(o, &op); err != nil {
			return err
		}
		return b.churn(index, &op)
	case "barrier", "sleep":
		// Sequential scheduling already waits for every pod.
		return nil
	case "startCollectingMetrics":
		b.measuring = true
		return nil
	case "stopCollectingMetrics":
		b.measuring = false
		return nil
	default:
		b.out.Unsupported = append(b.out.Unsupported, o.Opcode)
		return nil
	}
}

// renderTemplate is kube's getSpecFromTextTemplateFile: a Go text/template with Index and
// Count and the functions div and mod, decoded strictly.
func renderTemplate(path string, index, count int, into any) error {
	data, err := renderText(path, index, count)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, into)
}

func newTemplate(text string) (*template.Template, error) {
	funcs := template.FuncMap{
		"div": func(a, b int) int { return a / b },
		"mod": func(a, b int) int { return a % b },
	}
	return template.New("object").Funcs(funcs).Parse(text)
}

func readSpec(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, into)
}

// makeBaseNode is kube's base node (scheduler_perf util.go) when no template is named.
func makeBaseNode(prefix string) *v1.Node {
	var n v1.Node
	n.GenerateName = prefix
	n.Status.Capacity = v1.ResourceList{}
	n.Status.Allocatable = v1.ResourceList{}
	for _, rl := range []v1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		rl[v1.ResourcePods] = mustQuantity("110")
		rl[v1.ResourceCPU] = mustQuantity("4")
		rl[v1.ResourceMemory] = mustQuantity("32Gi")
	}
	n.Status.Phase = v1.NodeRunning
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return &n
}

func (b *builder) createNodes(index int, op *CreateNodes) error {
	count := op.Count
	if op.CountParam != "" {
		var err error
		if count, err = b.w.param(op.CountParam); err != nil {
			return err
		}
	}
	var strategy testutils.PrepareNodeStrategy = &testutils.TrivialNodePrepareStrategy{}
	switch {
	case op.NodeAllocatableStrategy != nil:
		strategy = op.NodeAllocatableStrategy
	case op.LabelNodePrepareStrategy != nil:
		strategy = op.LabelNodePrepareStrategy
	case op.UniqueNodeLabelStrategy != nil:
		strategy = op.UniqueNodeLabelStrategy
	}
	ctx := context.Background()
	names := make([]string, 0, count)
	for i := 0; i < count; i++ {
		node := makeBaseNode(fmt.Sprintf("node-%d-", index))
		if op.NodeTemplatePath != nil {
			node = &v1.Node{}
			if err := renderTemplate(b.tc.path(*op.NodeTemplatePath), i, count, node); err != nil {
				return fmt.Errorf("node template: %w", err)
			}
		}
		// kube names a node GenerateName + 5 random characters; here the characters count up,
		// so runs are alike.
		if node.Name == "" {
			node.Name = fmt.Sprintf("%s%05d", node.GenerateName, b.nodeIndex)
		}
		b.nodeIndex++
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels["kubernetes.io/hostname"] = node.Name
		legacyscheme.Scheme.Default(node)
		if _, err := b.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
		names = append(names, node.Name)
	}
	for _, name := range names {
		node, err := b.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := testutils.DoPrepareNode(ctx, b.client, node, strategy); err != nil {
			return err
		}
		node, err = b.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.ManagedFields = nil
		b.out.Nodes = append(b.out.Nodes, node)
	}
	return nil
}

func (b *builder) namespace(name string, spec *v1.Namespace) {
	if b.haveNS[name] {
		return
	}
	b.haveNS[name] = true
	ns := &v1.Namespace{}
	if spec != nil {
		ns = spec.DeepCopy()
	}
	ns.Name = name
	legacyscheme.Scheme.Default(ns)
	b.out.Objects = append(b.out.Objects, ns)
}

func (b *builder) createNamespaces(op *CreateNamespaces) error {
	count := op.Count
	if op.CountParam != "" {
		var err error
		if count, err = b.w.param(op.CountParam); err != nil {
			return err
		}
	}
	var spec *v1.Namespace
	if op.NamespaceTemplatePath != nil {
		spec = &v1.Namespace{}
		if err := readSpec(b.tc.path(*op.NamespaceTemplatePath), spec); err != nil {
			return err
		}
	}
	for i := 0; i < count; i++ {
		b.namespace(fmt.Sprintf("%s-%d", op.Prefix, i), spec)
	}
	return nil
}

// churn keeps a churn op of mode create whose templates are all pods (kube's Unschedulable and
// PreemptionAsync); any other churn (recreate, nodes, services) is named as not reproduced.
func (b *builder) churn(index int, op *Churn) error {
	if op.Mode != "create" {
		b.out.Unsupported = append(b.out.Unsupported, "churn (mode "+op.Mode+")")
		return nil
	}
	if b.out.Churn != nil {
		b.out.Unsupported = append(b.out.Unsupported, "a second churn op")
		return nil
	}
	namespace := fmt.Sprintf("namespace-%d", index)
	if op.Namespace != nil {
		namespace = *op.Namespace
	}
	c := &ChurnPods{IntervalMillis: op.IntervalMilliseconds, Limit: op.Number}
	if c.IntervalMillis == 0 {
		c.IntervalMillis = 500
	}
	for _, path := range op.TemplatePaths {
		data, err := os.ReadFile(b.tc.path(path))
		if err != nil {
			return err
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("churn template %s: %w", path, err)
		}
		if head.Kind != "Pod" {
			b.out.Unsupported = append(b.out.Unsupported, "churn of "+head.Kind)
			return nil
		}
		pod := &v1.Pod{}
		if err := yaml.UnmarshalStrict(data, pod); err != nil {
			return fmt.Errorf("churn template %s: %w", path, err)
		}
		pod.Namespace = namespace
		c.Templates = append(c.Templates, pod)
	}
	b.namespace(namespace, nil)
	b.out.Churn = c
	return nil
}

// churnPods lists the churn pods the export writes: one of each template per tick, named
// after the template's generateName and the tick.
func (c *ChurnPods) pods(measured int) []*v1.Pod {
	ticks := max(churnTicksMin, measured/10)
	if c.Limit > 0 {
		ticks = min(ticks, c.Limit)
	}
	var out []*v1.Pod
	for tick := 0; tick < ticks; tick++ {
		for _, t := range c.Templates {
			pod := t.DeepCopy()
			pod.Name = fmt.Sprintf("%s%06d", pod.GenerateName, tick)
			legacyscheme.Scheme.Default(pod)
			out = append(out, pod)
		}
	}
	return out
}

// makeBasePod is kube's base pod (scheduler_perf util.go) when no template is named.
func makeBasePod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-"}, Spec: testutils.MakePodSpec()}
}

// steadyPodsPerSecond is how many pods a steady-state op's duration stands for: kube's
// scheduler_perf keeps creating pods for the duration and deletes each once it is scheduled;
// sequentially, each measured pod is deleted (with the claims made for it) once placed, and
// the duration becomes this many pods per second of it (kube's threshold for
// SteadyStateClusterResourceClaimTemplate/empty_500nodes is 64 pods/s, typically above 81).
const steadyPodsPerSecond = 100

func (b *builder) createPods(index int, op *CreatePods) error {
	count := op.Count
	if op.CountParam != "" {
		var err error
		if count, err = b.w.param(op.CountParam); err != nil {
			return err
		}
	}
	if op.SteadyState {
		if !op.CollectMetrics || b.out.MeasuredPods > 0 {
			return fmt.Errorf("a steady-state op is reproduced only as the measured pods")
		}
		duration := op.Duration
		if op.DurationParam != "" {
			v, ok := b.w.Params[strings.TrimPrefix(op.DurationParam, "$")].(string)
			if !ok {
				return fmt.Errorf("duration parameter %s is not a string", op.DurationParam)
			}
			duration = v
		}
		d, err := time.ParseDuration(duration)
		if err != nil {
			return fmt.Errorf("steady state duration %q: %w", duration, err)
		}
		count = int(d.Seconds() * steadyPodsPerSecond)
		b.out.SteadyState = true
	}
	namespace := fmt.Sprintf("namespace-%d", index)
	if op.Namespace != nil {
		namespace = *op.Namespace
	}
	b.namespace(namespace, nil)
	templatePath := op.PodTemplatePath
	if templatePath == nil {
		templatePath = b.tc.DefaultPodTemplatePath
	}
	var pvTemplate *v1.PersistentVolume
	var pvcTemplate *v1.PersistentVolumeClaim
	if op.PersistentVolumeClaimTemplatePath != nil {
		pvTemplate = &v1.PersistentVolume{}
		pvcTemplate = &v1.PersistentVolumeClaim{}
		if op.PersistentVolumeTemplatePath == nil {
			return fmt.Errorf("a claim template without a volume template")
		}
		if err := readSpec(b.tc.path(*op.PersistentVolumeTemplatePath), pvTemplate); err != nil {
			return err
		}
		if err := readSpec(b.tc.path(*op.PersistentVolumeClaimTemplatePath), pvcTemplate); err != nil {
			return err
		}
	}
	measured := op.CollectMetrics || b.measuring
	for i := 0; i < count; i++ {
		pod := makeBasePod()
		if templatePath != nil {
			pod = &v1.Pod{}
			if err := renderTemplate(b.tc.path(*templatePath), i, count, pod); err != nil {
				return fmt.Errorf("pod template: %w", err)
			}
		}
		pod = pod.DeepCopy()
		pod.Namespace = namespace
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%06d", pod.GenerateName, b.podIndex)
		}
		b.podIndex++
		if pvcTemplate != nil {
			// kube's testutils.CreatePodWithPersistentVolume with bindVolume: a claim
			// "pvc-<i>" bound to a volume "<namespace>-vol-<i>", and the pod using the claim.
			pvcName := fmt.Sprintf("pvc-%d", i)
			pvc := pvcTemplate.DeepCopy()
			pvc.Name = pvcName
			pvc.Namespace = namespace
			pv := pvTemplate.DeepCopy()
			volumeID := fmt.Sprintf("vol-%d", i)
			pv.Name = volumeID
			if pv.Spec.CSI != nil {
				pv.Spec.CSI.VolumeHandle = volumeID
			} else if pv.Spec.AWSElasticBlockStore != nil {
				pv.Spec.AWSElasticBlockStore.VolumeID = volumeID
			}
			pv.Name = fmt.Sprintf("%s-%s", namespace, pv.Name)
			if pv.Spec.CSI != nil {
				pv.Spec.CSI.VolumeHandle = pv.Name
			}
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: pvcName, APIVersion: "v1"}
			pv.Status.Phase = v1.VolumeBound
			pvc.Spec.VolumeName = pv.Name
			pvc.Status.Phase = v1.ClaimBound
			legacyscheme.Scheme.Default(pvc)
			legacyscheme.Scheme.Default(pv)
			b.out.Objects = append(b.out.Objects, pvc, pv)
			pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvcName}}}}
		}
		if err := b.claimsFromTemplates(pod); err != nil {
			return err
		}
		legacyscheme.Scheme.Default(pod)
		b.out.Pods = append(b.out.Pods, pod)
		if measured {
			b.out.MeasuredPods++
		} else if b.out.MeasuredPods == 0 {
			b.out.InitPods++
		} else {
			b.out.Unsupported = append(b.out.Unsupported, "pods created after the measured ones")
		}
	}
	return nil
}

// Meta is workload.json: what the case folder of a workload holds.
type Meta struct {
	TestCase     string          `json:"testCase"`
	Workload     string          `json:"workload"`
	File         string          `json:"file"`
	InitPods     int             `json:"initPods"`
	MeasuredPods int             `json:"measuredPods"`
	Nodes        int             `json:"nodes"`
	FeatureGates map[string]bool `json:"featureGates"`
	Unsupported  []string        `json:"unsupported"`
	KubeVersion  string          `json:"kubeVersion"`
	// Each measured pod is deleted with the claims made for it once placed (kube's
	// steady-state createPods).
	SteadyState bool `json:"steadyState"`
	// Pods entering while the measured pods are scheduled (kube's churn op), if any; the
	// pods themselves are in churn.json.
	Churn *ChurnMeta `json:"churn,omitempty"`
}

// ChurnMeta is workload.json's churn: every IntervalMillis of a side's scheduling time, the
// next PodsPerTick pods of churn.json enter; the file holds Ticks ticks.
type ChurnMeta struct {
	IntervalMillis int64 `json:"intervalMillis"`
	PodsPerTick    int   `json:"podsPerTick"`
	Ticks          int   `json:"ticks"`
	// Interval, when set, replaces IntervalMillis (perf time's -churn-interval; not written).
	Interval time.Duration `json:"-"`
}

// ChurnFile is the file of a case folder holding its churn pods, in the order they enter.
const ChurnFile = "churn.json"

// Write writes the workload as a case folder: nodes.json, objects.json, pods.json (init pods,
// then measured pods, all pending), config.yaml when the test case names one, churn.json when
// it has pod churn, and workload.json (Meta).
func (built *Built) Write(dir, file, kubeVersion string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nodes := make([]runtime.Object, 0, len(built.Nodes))
	for _, n := range built.Nodes {
		nodes = append(nodes, n)
	}
	pods := make([]runtime.Object, 0, len(built.Pods))
	for _, p := range built.Pods {
		pods = append(pods, p)
	}
	for name, objects := range map[string][]runtime.Object{"nodes.json": nodes, "objects.json": built.Objects, "pods.json": pods} {
		if err := writeList(filepath.Join(dir, name), objects); err != nil {
			return err
		}
	}
	config := filepath.Join(dir, "config.yaml")
	_ = os.Remove(config)
	if built.ConfigPath != "" {
		data, err := os.ReadFile(built.ConfigPath)
		if err != nil {
			return err
		}
		if err := os.WriteFile(config, data, 0o644); err != nil {
			return err
		}
	}
	meta := Meta{
		TestCase: built.TestCase, Workload: built.Workload, File: file,
		InitPods: built.InitPods, MeasuredPods: built.MeasuredPods, Nodes: len(built.Nodes),
		FeatureGates: built.FeatureGates, Unsupported: built.Unsupported, KubeVersion: kubeVersion,
		SteadyState: built.SteadyState,
	}
	churnPath := filepath.Join(dir, ChurnFile)
	_ = os.Remove(churnPath)
	if c := built.Churn; c != nil {
		pods := c.pods(built.MeasuredPods)
		list := make([]runtime.Object, 0, len(pods))
		for _, p := range pods {
			list = append(list, p)
		}
		if err := writeList(churnPath, list); err != nil {
			return err
		}
		meta.Churn = &ChurnMeta{IntervalMillis: c.IntervalMillis, PodsPerTick: len(c.Templates), Ticks: len(pods) / len(c.Templates)}
	}
	if meta.Unsupported == nil {
		meta.Unsupported = []string{}
	}
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "workload.json"), append(data, '\n'), 0o644)
}

// ReadMeta reads a case folder's workload.json.
func ReadMeta(dir string) (*Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s/workload.json: %w", dir, err)
	}
	return &m, nil
}
