// Package perf reads kube's scheduler_perf workloads from kube's own files
// (test/integration/scheduler_perf/**/performance-config.yaml and the templates beside them, in
// the k8s.io/kubernetes module) and turns one workload into the objects kube's scheduler_perf
// would create, in order, as a case folder both schedulers can read.
//
// The file format and the op semantics follow kube's test/integration/scheduler_perf
// (scheduler_perf.go: testCase, workload, params, the ops and their patchParams; create.go and
// util.go: templates, base node and pod). Objects are built with kube's own helpers where they
// are exported (test/utils: the node prepare strategies, MakePodSpec) and otherwise as kube's
// helpers build them, sequentially so that the order is the same on every run. The dynamic
// resource allocation ops (createAny of DeviceClasses, ResourceClaimTemplates and
// ResourceClaims, createResourceDriver) follow scheduler_perf's dra.go and create.go, and the
// claims kube's resourceclaim controller would make for pods are written too (dra.go here).
package perf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	testutils "k8s.io/kubernetes/test/utils"
)

// TestCase is one entry of a performance-config.yaml.
type TestCase struct {
	Name                   string
	FeatureGates           map[string]bool
	WorkloadTemplate       []Op
	Workloads              []*Workload
	SchedulerConfigPath    string
	DefaultPodTemplatePath *string
	Labels                 []string

	// Dir is the directory of the file the test case came from: paths are relative to it.
	Dir string `json:"-"`
	// File is that file, relative to scheduler_perf.
	File string `json:"-"`
}

// Workload is one parameterization of a test case.
type Workload struct {
	Name         string
	Params       map[string]any
	Labels       []string
	FeatureGates map[string]bool
	Threshold    float64
}

// Op is one step of a workload template: the op code and its fields as written.
type Op struct {
	Opcode string
	raw    json.RawMessage
}

// UnmarshalJSON keeps the op's fields for later decoding by op code.
func (o *Op) UnmarshalJSON(b []byte) error {
	var head struct{ Opcode string }
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	o.Opcode = head.Opcode
	o.raw = append(json.RawMessage(nil), b...)
	return nil
}

// CreateNodes is kube's createNodesOp.
type CreateNodes struct {
	Opcode                   string
	Count                    int
	CountParam               string
	NodeTemplatePath         *string
	NodeAllocatableStrategy  *testutils.NodeAllocatableStrategy
	LabelNodePrepareStrategy *testutils.LabelNodePrepareStrategy
	UniqueNodeLabelStrategy  *testutils.UniqueNodeLabelStrategy
}

// CreateNamespaces is kube's createNamespacesOp.
type CreateNamespaces struct {
	Opcode                string
	Prefix                string
	Count                 int
	CountParam            string
	NamespaceTemplatePath *string
}

// AllocResourceClaims is kube's allocResourceClaimsOp.
type AllocResourceClaims struct {
	Opcode    string
	Namespace string
}

// CreatePods is kube's createPodsOp.
type CreatePods struct {
	Opcode                            string
	Count                             int
	CountParam                        string
	SteadyState                       bool
	Duration                          string
	DurationParam                     string
	CollectMetrics                    bool
	Namespace                         *string
	PodTemplatePath                   *string
	SkipWaitToCompletion              bool
	PersistentVolumeTemplatePath      *string
	PersistentVolumeClaimTemplatePath *string
}

// Churn is kube's churnOp: objects from the TemplatePaths (static YAML), one of each every
// IntervalMilliseconds (default 500), Number times at most (0: no limit) in mode create; in mode
// recreate the objects of Number ticks back are deleted as new ones come.
type Churn struct {
	Opcode               string
	Mode                 string
	Number               int
	IntervalMilliseconds int64
	Namespace            *string
	TemplatePaths        []string
}

// CreateAny is kube's createAny: objects from a text template (Index and Count), in a
// namespace or cluster-scoped.
type CreateAny struct {
	Opcode       string
	Namespace    string
	TemplatePath string
	Count        *int
	CountParam   string
}

// CreateResourceDriver is kube's createResourceDriverOp: a ResourceSlice for each node whose
// name matches the glob Nodes, with MaxClaimsPerNode devices.
type CreateResourceDriver struct {
	Opcode                string
	DriverName            string
	MaxClaimsPerNode      int
	MaxClaimsPerNodeParam string
	Nodes                 string
}

// CreatePodSets is kube's createPodSetsOp.
type CreatePodSets struct {
	Opcode          string
	Count           int
	CountParam      string
	NamespacePrefix string
	CreatePodsOp    CreatePods
}

// ReadTestCases reads every performance-config.yaml under scheduler_perf (the directory
// test/integration/scheduler_perf of the k8s.io/kubernetes module).
func ReadTestCases(schedulerPerf string) ([]*TestCase, error) {
	var files []string
	err := filepath.WalkDir(schedulerPerf, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "performance-config.yaml" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []*TestCase
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var cases []*TestCase
		if err := yaml.Unmarshal(data, &cases); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		rel, _ := filepath.Rel(schedulerPerf, file)
		for _, tc := range cases {
			tc.Dir = filepath.Dir(file)
			tc.File = rel
		}
		all = append(all, cases...)
	}
	return all, nil
}

// Find returns the test case and workload of a name `TestCase/Workload`.
func Find(cases []*TestCase, name string) (*TestCase, *Workload, error) {
	tcName, wName, ok := strings.Cut(name, "/")
	if !ok {
		return nil, nil, fmt.Errorf("%q: a workload is named TestCase/Workload", name)
	}
	for _, tc := range cases {
		if tc.Name != tcName {
			continue
		}
		for _, w := range tc.Workloads {
			if w.Name == wName {
				return tc, w, nil
			}
		}
		return nil, nil, fmt.Errorf("%s: no workload %q", tcName, wName)
	}
	return nil, nil, fmt.Errorf("no test case %q", tcName)
}

// param is kube's params.get: a workload parameter as an integer (`$name` names it).
func (w *Workload) param(ref string) (int, error) {
	key := strings.TrimPrefix(ref, "$")
	v, ok := w.Params[key]
	if !ok {
		return 0, fmt.Errorf("parameter %s is undefined", key)
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("parameter %s has the wrong type %T", key, v)
	}
	return int(f), nil
}

// decode decodes an op's fields strictly, as kube does.
func decode(o Op, into any) error {
	dec := json.NewDecoder(bytes.NewReader(o.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("op %s: %w", o.Opcode, err)
	}
	return nil
}

// path resolves a template path of the test case (relative to its file's directory).
func (tc *TestCase) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(tc.Dir, p)
}
