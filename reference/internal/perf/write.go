package perf

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func mustQuantity(s string) resource.Quantity {
	return resource.MustParse(s)
}

// writeList writes objects as kubectl's List, each item with its apiVersion and kind.
func writeList(path string, objects []runtime.Object) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if _, err := w.WriteString("{\"apiVersion\": \"v1\", \"kind\": \"List\", \"metadata\": {}, \"items\": [\n"); err != nil {
		f.Close()
		return err
	}
	for i, obj := range objects {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			f.Close()
			return fmt.Errorf("%s: no kind for %T", path, obj)
		}
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(kinds[0])
		data, err := json.Marshal(obj)
		if err != nil {
			f.Close()
			return err
		}
		if i > 0 {
			w.WriteString(",\n")
		}
		w.Write(data)
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
