package kube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"
)

// Case is a case folder: nodes.json (nodes), pods.json (pods in order: pods with
// spec.nodeName run there, the others are pending), objects.json (optional: anything else) and
// config.yaml (optional: a KubeSchedulerConfiguration; kube's defaults without it).
type Case struct {
	Nodes  []*v1.Node
	Pods   []*v1.Pod
	Others []runtime.Object
	// Config is the configuration, defaulted and validated.
	Config *schedconfig.KubeSchedulerConfiguration
	// ConfigFile is "config.yaml" when the case has one.
	ConfigFile string
	// PercentageSet says whether the configuration file sets the global
	// percentageOfNodesToScore (kube's defaulting fills it with 0, adaptive, otherwise).
	PercentageSet bool
}

// ReadCase reads a case folder. An object of a kind the scheduler does not expect in a file
// (a pod in nodes.json) is an error naming the file and the item.
func ReadCase(dir string) (*Case, error) {
	c := &Case{}
	for _, file := range []string{"nodes.json", "pods.json", "objects.json"} {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && file == "objects.json" {
			continue
		}
		objects, err := ReadList(path)
		if err != nil {
			return nil, err
		}
		for i, obj := range objects {
			switch o := obj.(type) {
			case *v1.Node:
				c.Nodes = append(c.Nodes, o)
			case *v1.Pod:
				c.Pods = append(c.Pods, o)
			default:
				if file != "objects.json" {
					return nil, fmt.Errorf("%s: items[%d]: a %T in a file of nodes or pods", file, i, obj)
				}
				c.Others = append(c.Others, obj)
			}
		}
	}
	configPath := filepath.Join(dir, "config.yaml")
	if _, err := os.Stat(configPath); err == nil {
		c.ConfigFile = "config.yaml"
	} else {
		configPath = ""
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	c.Config = cfg
	if configPath != "" {
		if c.PercentageSet, err = setsPercentage(configPath); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// setsPercentage says whether the KubeSchedulerConfiguration file sets percentageOfNodesToScore
// at its top level.
func setsPercentage(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	_, ok := top["percentageOfNodesToScore"]
	return ok, nil
}

// Objects lists every object of the case: nodes, pods, the others.
func (c *Case) Objects() []runtime.Object {
	objects := make([]runtime.Object, 0, len(c.Nodes)+len(c.Pods)+len(c.Others))
	for _, n := range c.Nodes {
		objects = append(objects, n)
	}
	for _, p := range c.Pods {
		objects = append(objects, p)
	}
	return append(objects, c.Others...)
}
