package kube

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// Capture is a logr sink that takes kube's own structured log lines where they carry what
// kube decided and returns nothing else: per-node scores (kube's prioritizeNodes logs each
// score plugin's weighted score and each node's total at verbosity 10), the PersistentVolume
// VolumeBinding's Reserve assumed for each claim (logged at verbosity 5: kube picks among the
// smallest fitting PVs in the order its assume cache lists them, which is a Go map's) and the
// progress of asynchronous preemption. Reading kube's values from kube's own code path, rather than calling
// the plugins again beside it, keeps the oracle exactly what kube-scheduler does.
type Capture struct {
	mu sync.Mutex
	// node -> plugin -> weighted score
	plugins map[string]map[string]int64
	// node -> total
	totals map[string]int64
	// preemptor (namespace/name) -> victims announced when the async preemption started
	started map[string]int
	// preemptors whose async preemption finished
	finished map[string]bool
	// pod (namespace/name) -> claim (namespace/name) -> PersistentVolume assumed for it
	volumes map[string]map[string]string
	changed *sync.Cond
	// verbosity: log calls above this level are not made
	verbosity int
}

// NewCapture returns an empty capture that takes log calls up to the verbosity.
func NewCapture(verbosity int) *Capture {
	c := &Capture{
		verbosity: verbosity,
		plugins:   map[string]map[string]int64{},
		totals:    map[string]int64{},
		started:   map[string]int{},
		finished:  map[string]bool{},
		volumes:   map[string]map[string]string{},
	}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// Logger is a logger writing into the capture.
func (c *Capture) Logger() logr.Logger {
	return logr.New(sink{c})
}

// ResetScores forgets the scores of the last pod.
func (c *Capture) ResetScores() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plugins = map[string]map[string]int64{}
	c.totals = map[string]int64{}
}

// Scores returns the scores logged since the last reset: per node, each plugin's weighted
// score, and per node the total.
func (c *Capture) Scores() (map[string]map[string]int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plugins, c.totals
}

// TakeVolumes returns the PersistentVolumes VolumeBinding's Reserve assumed for the pod's
// claims (claim namespace/name -> PV name) since the last call for it, and forgets them.
func (c *Capture) TakeVolumes(pod string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.volumes[pod]
	delete(c.volumes, pod)
	return v
}

// WaitPreemption waits until the asynchronous preemption kube started for the preemptor has
// deleted its victims, and returns how many it announced.
func (c *Capture) WaitPreemption(preemptor string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		n, ok := c.started[preemptor]
		if ok && (n == 0 || c.finished[preemptor]) {
			delete(c.started, preemptor)
			delete(c.finished, preemptor)
			return n, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("kube's asynchronous preemption for %s did not finish within %s", preemptor, timeout)
		}
		// Wake up now and then to check the deadline.
		go func() {
			time.Sleep(10 * time.Millisecond)
			c.changed.Broadcast()
		}()
		c.changed.Wait()
	}
}

func (c *Capture) info(msg string, kv []any) {
	switch msg {
	case "Plugin scored node for pod":
		node, _ := value(kv, "node").(string)
		plugin, _ := value(kv, "plugin").(string)
		score, _ := value(kv, "score").(int64)
		c.mu.Lock()
		if c.plugins[node] == nil {
			c.plugins[node] = map[string]int64{}
		}
		c.plugins[node][plugin] = score
		c.mu.Unlock()
	case "Extender scored node for pod":
		// Extenders' scores reach the totals below.
	case "Calculated node's final score for pod":
		node, _ := value(kv, "node").(string)
		score, _ := value(kv, "score").(int64)
		c.mu.Lock()
		c.totals[node] = score
		c.mu.Unlock()
	case "AssumePodVolumes: GetBindVolumeToClaim":
		pod := objectKey(value(kv, "pod"))
		claim := objectKey(value(kv, "PVC"))
		pv := objectName(value(kv, "PV"))
		c.mu.Lock()
		if c.volumes[pod] == nil {
			c.volumes[pod] = map[string]string{}
		}
		c.volumes[pod][claim] = pv
		c.mu.Unlock()
	case "Start the preemption asynchronously":
		n, _ := value(kv, "numVictims").(int)
		c.mu.Lock()
		c.started[objectKey(value(kv, "preemptor"))] = n
		c.changed.Broadcast()
		c.mu.Unlock()
	case "Async Preemption finished completely":
		c.mu.Lock()
		c.finished[objectKey(value(kv, "preemptor"))] = true
		c.changed.Broadcast()
		c.mu.Unlock()
	}
}

func value(kv []any, key string) any {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == key {
			return kv[i+1]
		}
	}
	return nil
}

func objectKey(v any) string {
	switch r := v.(type) {
	case klog.ObjectRef:
		return r.Namespace + "/" + r.Name
	case fmt.Stringer:
		return r.String()
	}
	return fmt.Sprint(v)
}

// objectName is the name of a cluster-scoped object's reference.
func objectName(v any) string {
	if r, ok := v.(klog.ObjectRef); ok {
		return r.Name
	}
	return fmt.Sprint(v)
}

type sink struct{ c *Capture }

func (sink) Init(logr.RuntimeInfo)               {}
func (sink) Enabled(int) bool                    { return true }
func (s sink) Info(_ int, msg string, kv ...any) { s.c.info(msg, kv) }
func (sink) Error(error, string, ...any)         {}
func (s sink) WithValues(...any) logr.LogSink    { return s }
func (s sink) WithName(string) logr.LogSink      { return s }
