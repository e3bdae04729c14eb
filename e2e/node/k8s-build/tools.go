//go:build tools

// Package tools pins the Kubernetes commands the single-node e2e cluster runs, so that `go mod tidy`
// keeps exactly their dependencies and one `go build` produces all of them.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
