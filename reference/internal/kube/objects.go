// Package kube runs kube-scheduler v1.34 in process on a set of Kubernetes objects: the objects
// go into a fake clientset, kube's informers feed kube's scheduler as they would from an API
// server, and the caller drives scheduling one pod at a time (see Instance).
package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// maxItemText bounds how much of a bad item an error quotes.
const maxItemText = 200

// ReadList reads a file of Kubernetes objects as kubectl writes them: a `List` (items carry
// their own apiVersion and kind), a typed list such as `NodeList` (items may leave kind out),
// an array, or one object. Every item is decoded into its typed Go object; an item of a kind
// the client-go scheme does not know, or one that does not decode, is an error naming the file
// and the item. Nothing is dropped silently.
func ReadList(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeList(filepath.Base(path), data)
}

// DecodeList is ReadList on bytes; name is used in errors.
func DecodeList(name string, data []byte) ([]runtime.Object, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	var items []json.RawMessage
	var itemGVK *schema.GroupVersionKind
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array of objects: %w", name, err)
		}
	default:
		var head struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(trimmed, &head); err != nil {
			return nil, fmt.Errorf("%s: not a Kubernetes object or list: %w", name, err)
		}
		switch {
		case head.Kind == "List" || (head.Kind == "" && head.Items != nil):
			items = head.Items
		case len(head.Kind) > 4 && head.Kind[len(head.Kind)-4:] == "List":
			items = head.Items
			gv, err := schema.ParseGroupVersion(head.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("%s: apiVersion %q: %w", name, head.APIVersion, err)
			}
			gvk := gv.WithKind(head.Kind[:len(head.Kind)-4])
			itemGVK = &gvk
		default:
			items = []json.RawMessage{trimmed}
		}
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	objects := make([]runtime.Object, 0, len(items))
	for i, raw := range items {
		obj, _, err := decoder.Decode(raw, itemGVK, nil)
		if err != nil {
			text := string(raw)
			if len(text) > maxItemText {
				text = text[:maxItemText] + "..."
			}
			return nil, fmt.Errorf("%s: items[%d]: %w (item: %s)", name, i, err, text)
		}
		objects = append(objects, obj)
	}
	return objects, nil
}

// FillMeta gives every object what the API server would have given it when the file leaves it
// out: a UID derived from its kind, namespace and name (kube's cache keys pods by UID) and a
// resourceVersion (kube's assume cache compares them).
func FillMeta(objects []runtime.Object) error {
	for _, obj := range objects {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if m.GetResourceVersion() == "" {
			m.SetResourceVersion("1")
		}
		if m.GetUID() == "" {
			kinds, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil || len(kinds) == 0 {
				return fmt.Errorf("%s: no kind known for %T", m.GetName(), obj)
			}
			kind := kinds[0].Kind
			m.SetUID(types.UID(fmt.Sprintf("%s-%s-%s", kind, m.GetNamespace(), m.GetName())))
		}
	}
	return nil
}

// PodKey is `namespace/name`.
func PodKey(p *v1.Pod) string {
	return p.Namespace + "/" + p.Name
}
