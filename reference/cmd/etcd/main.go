// Command etcd is etcd v3.6 (go.etcd.io/etcd/server/v3, the version k8s.io/kubernetes v1.34
// requires), built from the module so that the real kube-apiserver of the tests runs on an etcd
// it supports.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
