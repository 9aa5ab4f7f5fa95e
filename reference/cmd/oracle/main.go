package main

import (
	_ "k8s.io/kubernetes/pkg/scheduler"
	_ "k8s.io/client-go/kubernetes/fake"
)

func main() {}
