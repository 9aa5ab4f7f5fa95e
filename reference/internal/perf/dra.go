package perf

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Dynamic resource allocation ops: createAny (of the kinds DRA workloads create),
// createResourceDriver (kube's test driver's ResourceSlices, scheduler_perf dra.go) and the
// claims kube's resourceclaim controller makes for pods that name a ResourceClaimTemplate.

// podClaimAnnotation is the annotation kube's resourceclaim controller puts on a claim it
// makes from a template (pkg/controller/resourceclaim: podResourceClaimAnnotation).
const podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"

// createAny is kube's createAny (create.go): Count objects from a text template with Index
// and Count. The kinds the DRA workloads create are handled; another kind is recorded as not
// reproduced.
func (b *builder) createAny(op *CreateAny) error {
	count := 1
	if op.Count != nil {
		count = *op.Count
	}
	if op.CountParam != "" {
		var err error
		if count, err = b.w.param(op.CountParam); err != nil {
			return err
		}
	}
	if op.Namespace != "" {
		// scheduler_perf creates the namespaces an op requires before it runs.
		b.namespace(op.Namespace, nil)
	}
	for i := 0; i < count; i++ {
		data, err := renderText(b.tc.path(op.TemplatePath), i, count)
		if err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
		json, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(json, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
		namespaced := true
		switch o := obj.(type) {
		case *resourceapi.DeviceClass:
			namespaced = false
		case *resourceapi.ResourceClaimTemplate:
			o.Namespace = op.Namespace
			b.claimTemplates[op.Namespace+"/"+o.Name] = o
		case *resourceapi.ResourceClaim:
			o.Namespace = op.Namespace
		default:
			b.out.Unsupported = append(b.out.Unsupported, "createAny("+gvk.Kind+")")
			return nil
		}
		if namespaced != (op.Namespace != "") {
			return fmt.Errorf("%s: %s with namespace %q", op.TemplatePath, gvk.Kind, op.Namespace)
		}
		legacyscheme.Scheme.Default(obj)
		b.out.Objects = append(b.out.Objects, obj)
	}
	return nil
}

// renderText is renderTemplate without the decoding.
func renderText(path string, index, count int) ([]byte, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tmpl, err := newTemplate(string(content))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]any{"Index": index, "Count": count}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// createResourceDriver is kube's createResourceDriverOp: one ResourceSlice per node whose
// name matches the glob, in the order the API server lists nodes (by name).
func (b *builder) createResourceDriver(op *CreateResourceDriver) error {
	capacity := op.MaxClaimsPerNode
	if op.MaxClaimsPerNodeParam != "" {
		var err error
		if capacity, err = b.w.param(op.MaxClaimsPerNodeParam); err != nil {
			return err
		}
	}
	var names []string
	for _, n := range b.out.Nodes {
		match, err := filepath.Match(op.Nodes, n.Name)
		if err != nil {
			return fmt.Errorf("nodes %q: %w", op.Nodes, err)
		}
		if match {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		slice := resourceSlice(op.DriverName, name, capacity)
		legacyscheme.Scheme.Default(slice)
		b.out.Objects = append(b.out.Objects, slice)
	}
	return nil
}

// resourceSlice is scheduler_perf's resourceSlice (dra.go, v1.34.4): the node's pool, one
// slice, `capacity` devices instance-0... with the same attributes and capacity.
func resourceSlice(driverName, nodeName string, capacity int) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driverName,
			NodeName: ptr.To(nodeName),
			Pool:     resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 1},
		},
	}
	for i := 0; i < capacity; i++ {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("instance-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model":                {StringValue: ptr.To("A100")},
				"family":               {StringValue: ptr.To("GPU")},
				"driverVersion":        {VersionValue: ptr.To("1.2.3")},
				"dra.example.com/numa": {IntValue: ptr.To(int64(i))},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: resource.MustParse("1Gi")},
			},
		})
	}
	return slice
}

// claimsFromTemplates makes the claims kube's resourceclaim controller creates for a pod's
// entries that name a ResourceClaimTemplate (pkg/controller/resourceclaim handleClaim,
// v1.34.4): the template's spec, labels and annotations plus the pod-claim-name annotation,
// the pod as controlling owner, and the pod's status.resourceClaimStatuses naming them.
//
// Where this departs from a live run: scheduler_perf runs that controller beside the
// scheduler, so a pod is created without claims and the scheduler first sees it held at
// DynamicResources' PreEnqueue until the controller's claim and status patch arrive; here both
// are there before the pod is scheduled. The API server's generated name suffix (5 random
// characters) is a counter. A pod with claims gets the UID kube's case reader would give it
// (Pod-namespace-name), written out so that owner references and reservedFor entries name the
// same pod on both sides.
func (b *builder) claimsFromTemplates(pod *v1.Pod) error {
	if len(pod.Spec.ResourceClaims) > 0 && pod.UID == "" {
		// A claim's owner and its reservedFor name the pod by UID.
		pod.UID = types.UID(fmt.Sprintf("Pod-%s-%s", pod.Namespace, pod.Name))
	}
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		template, ok := b.claimTemplates[pod.Namespace+"/"+*pc.ResourceClaimTemplateName]
		if !ok {
			return fmt.Errorf("pod %s/%s: resource claim template %q not created before it", pod.Namespace, pod.Name, *pc.ResourceClaimTemplateName)
		}
		annotations := map[string]string{}
		for k, v := range template.Spec.ObjectMeta.Annotations {
			annotations[k] = v
		}
		annotations[podClaimAnnotation] = pc.Name
		generateName := pod.Name + "-" + pc.Name + "-"
		const maxBaseLen = 57
		if len(generateName) > maxBaseLen {
			generateName = pod.Name[0:len(pod.Name)*maxBaseLen/len(generateName)] +
				"-" +
				pc.Name[0:len(pc.Name)*maxBaseLen/len(generateName)]
		}
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:         fmt.Sprintf("%s%05d", generateName, b.claimIndex),
				GenerateName: generateName,
				Namespace:    pod.Namespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion:         "v1",
					Kind:               "Pod",
					Name:               pod.Name,
					UID:                pod.UID,
					Controller:         ptr.To(true),
					BlockOwnerDeletion: ptr.To(true),
				}},
				Annotations: annotations,
				Labels:      template.Spec.ObjectMeta.Labels,
			},
			Spec: *template.Spec.Spec.DeepCopy(),
		}
		b.claimIndex++
		legacyscheme.Scheme.Default(claim)
		b.out.Objects = append(b.out.Objects, claim)
		pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{
			Name:              pc.Name,
			ResourceClaimName: ptr.To(claim.Name),
		})
	}
	return nil
}

// allocResourceClaims is kube's allocResourceClaimsOp (scheduler_perf dra.go, v1.34.4): each
// claim of the namespace without an allocation is allocated by the structured allocator, with
// the DRA features as the feature gates have them, on the first node of a shuffled order that
// can take it, the claims allocated before it counting as devices in use. kube shuffles with
// the global math/rand; here the shuffle is seeded, so that an export is reproducible. A claim
// no node can take fails the export, as it fails kube's run.
func (b *builder) allocResourceClaims(op *AllocResourceClaims) error {
	var slices []*resourceapi.ResourceSlice
	var classes deviceClasses
	var claims []*resourceapi.ResourceClaim
	for _, o := range b.out.Objects {
		switch o := o.(type) {
		case *resourceapi.ResourceSlice:
			slices = append(slices, o)
		case *resourceapi.DeviceClass:
			classes = append(classes, o)
		case *resourceapi.ResourceClaim:
			claims = append(claims, o)
		}
	}
	gates := utilfeature.DefaultFeatureGate
	allocatorFeatures := structured.Features{
		PrioritizedList:      gates.Enabled(features.DRAPrioritizedList),
		AdminAccess:          gates.Enabled(features.DRAAdminAccess),
		DeviceTaints:         gates.Enabled(features.DRADeviceTaints),
		PartitionableDevices: gates.Enabled(features.DRAPartitionableDevices),
		ConsumableCapacity:   gates.Enabled(features.DRAConsumableCapacity),
	}
	celCache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: allocatorFeatures.ConsumableCapacity})
	nodes := append([]*v1.Node(nil), b.out.Nodes...)
	rng := rand.New(rand.NewSource(1))
	ctx := context.Background()
	// The devices the claims allocated so far hold.
	inUse := sets.New[structured.DeviceID]()
	for _, c := range claims {
		if c.Status.Allocation != nil {
			for _, r := range c.Status.Allocation.Devices.Results {
				inUse.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
			}
		}
	}
claims:
	for i, claim := range claims {
		if claim.Namespace != op.Namespace || claim.Status.Allocation != nil {
			continue
		}
		state := structured.AllocatedState{
			AllocatedDevices:         inUse.Clone(),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
			AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
		}
		allocator, err := structured.NewAllocator(ctx, allocatorFeatures, state, classes, slices, celCache)
		if err != nil {
			return fmt.Errorf("allocResourceClaims: claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		for _, node := range nodes {
			result, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return fmt.Errorf("allocResourceClaims: claim %s/%s on node %s: %w", claim.Namespace, claim.Name, node.Name, err)
			}
			if result != nil {
				claim.Status.Allocation = &result[0]
				for _, r := range result[0].Devices.Results {
					inUse.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
				}
				continue claims
			}
		}
		return fmt.Errorf("allocResourceClaims: could not allocate claim %d out of %d (%s/%s)", i, len(claims), claim.Namespace, claim.Name)
	}
	return nil
}

// deviceClasses lists the DeviceClasses created so far for the structured allocator.
type deviceClasses []*resourceapi.DeviceClass

func (d deviceClasses) List() ([]*resourceapi.DeviceClass, error) {
	return d, nil
}

func (d deviceClasses) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range d {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("device class %q not found", name)
}
