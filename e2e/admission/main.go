// Command vapcheck evaluates a rendered ValidatingAdmissionPolicy against pods without a cluster, the way
// the API server does: the policy compiled by k8s.io/apiserver's own ValidatingAdmissionPolicy code (its CEL
// environment, libraries, lazily composed `variables`, messageExpression and failure policy), each pod as a
// CREATE of `pods` (or an UPDATE of `pods/ephemeralcontainers`) after the ServiceAccount admission plugin's
// token volume, the first denial's message being the one the API server returns.
//
//	vapcheck -policy RENDERED.yaml [-expect allow|deny:SUBSTRING] [-print] FILE...
//
// The policy file is `helm template` output: the one ValidatingAdmissionPolicy in it is taken. Each FILE
// holds YAML documents: a Pod, or a workload (Deployment, DaemonSet, StatefulSet, Job, CronJob, ReplicaSet)
// whose pod template is taken as the pod its controller would create. A pod's expectation is -expect, or
// else its annotation admission.stockade.dev/expect ("allow", or "deny: SUBSTRING" of the message);
// admission.stockade.dev/operation "ephemeralcontainers" makes it an UPDATE through that subresource
// from the same pod without its ephemeral containers (what `kubectl debug` sends). One line per pod,
// "ok   - ..." or "FAIL - ..." (e2e/lib.sh's), then "N passed, M failed"; exit 1 on any failure.
//
// Before any pod, every expression is also compiled as a new expression (what creating the policy does)
// against the CEL environment of the oldest Kubernetes the chart supports (-compat, default 1.29), so a
// function that version lacks is caught here, not at install.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

const (
	annExpect    = "admission.stockade.dev/expect"
	annOperation = "admission.stockade.dev/operation"
)

var (
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

func main() {
	policyFile := flag.String("policy", "", "helm template output holding the ValidatingAdmissionPolicy")
	expect := flag.String("expect", "", "expectation for every pod: allow, or deny:SUBSTRING (default: each pod's annotation)")
	compat := flag.String("compat", "1.29", "oldest Kubernetes minor whose CEL environment must compile every expression")
	printOnly := flag.Bool("print", false, "print each pod's verdict, expect nothing")
	flag.Parse()
	if *policyFile == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: vapcheck -policy RENDERED.yaml [-expect allow|deny:SUBSTRING] [-print] FILE...")
		os.Exit(2)
	}
	policy, err := loadPolicy(*policyFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vapcheck: %s: %v\n", *policyFile, err)
		os.Exit(2)
	}
	passed, failed := 0, 0
	report := func(ok bool, format string, a ...any) {
		if ok {
			passed++
			fmt.Printf("ok   - "+format+"\n", a...)
		} else {
			failed++
			fmt.Printf("FAIL - "+format+"\n", a...)
		}
	}

	for _, v := range []*version.Version{mustMinor(*compat), environment.DefaultCompatibilityVersion()} {
		errs := compileAsNew(policy, v)
		report(len(errs) == 0, "%s compiles as new expressions in the CEL environment of Kubernetes %d.%d%s",
			policy.Name, v.Major(), v.Minor(), joinErrs(errs))
	}
	validator := compilePolicy(policy)
	if err := validator.CompileError(); err != nil {
		report(false, "%s compiles: %v", policy.Name, err)
	}

	for _, f := range flag.Args() {
		pods, err := loadPods(f)
		if err == nil && len(pods) == 0 {
			err = errors.New("no pod in it")
		}
		if err != nil {
			report(false, "%s: %v", f, err)
			continue
		}
		for _, p := range pods {
			name := f + " " + p.GetName()
			want := *expect
			ann := p.GetAnnotations()
			if want == "" {
				want = ann[annExpect]
			}
			op := ann[annOperation]
			if ann != nil {
				delete(ann, annExpect)
				delete(ann, annOperation)
				p.SetAnnotations(ann)
			}
			got, evalErr := evaluate(validator, policy, p, op)
			switch {
			case evalErr != nil:
				report(false, "%s: evaluation failed: %v", name, evalErr)
			case *printOnly:
				report(true, "%s: %s", name, got)
			case want == "allow":
				report(got == "allow", "%s: admitted%s", name, unless(got == "allow", got))
			case strings.HasPrefix(want, "deny:"):
				sub := strings.TrimSpace(strings.TrimPrefix(want, "deny:"))
				ok := strings.HasPrefix(got, "deny: ") && strings.Contains(got, sub)
				report(ok, "%s: denied with %q%s", name, sub, unless(ok, got))
			default:
				report(false, "%s: no expectation (-expect or annotation %s: allow | deny: SUBSTRING)", name, annExpect)
			}
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// unless: "" when ok, else ": got VERDICT" for the failure line.
func unless(ok bool, got string) string {
	if ok {
		return ""
	}
	return ": got " + got
}

func joinErrs(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return ": " + strings.Join(errs, "; ")
}

func mustMinor(s string) *version.Version {
	v, err := version.ParseMajorMinor(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vapcheck: -compat %q: %v\n", s, err)
		os.Exit(2)
	}
	return v
}

// yamlDocs splits a YAML stream into its non-empty documents, each as JSON.
func yamlDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, j)
	}
}

func loadPolicy(path string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	docs, err := yamlDocs(path)
	if err != nil {
		return nil, err
	}
	var found *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return nil, err
		}
		if tm.Kind != "ValidatingAdmissionPolicy" {
			continue
		}
		if found != nil {
			return nil, errors.New("more than one ValidatingAdmissionPolicy")
		}
		// v1beta1 (1.29) has the same fields as v1; strict: a misspelt field is an error, as in the API server
		found = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := yaml.UnmarshalStrict(d, found); err != nil {
			return nil, err
		}
	}
	if found == nil {
		return nil, errors.New("no ValidatingAdmissionPolicy")
	}
	return found, nil
}

// loadPods reads Pods, and the pod templates of workloads, typed as the API server holds them (a misspelt
// field is an error; the admission code turns them into the unstructured form CEL sees, as it does there).
func loadPods(path string) ([]*corev1.Pod, error) {
	docs, err := yamlDocs(path)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, d := range docs {
		p, err := podsOf(d)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p...)
	}
	return pods, nil
}

// podsOf: the pods of one document (JSON): a Pod, a workload's pod template, or those of a List's items.
func podsOf(d []byte) ([]*corev1.Pod, error) {
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(d); err != nil {
		return nil, err
	}
	var tmpl []string
	switch u.GetKind() {
	case "Pod":
	case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job":
		tmpl = []string{"spec", "template"}
	case "CronJob":
		tmpl = []string{"spec", "jobTemplate", "spec", "template"}
	case "List":
		items, _, _ := unstructured.NestedSlice(u.Object, "items")
		var pods []*corev1.Pod
		for _, it := range items {
			j, err := json.Marshal(it)
			if err != nil {
				return nil, err
			}
			p, err := podsOf(j)
			if err != nil {
				return nil, err
			}
			pods = append(pods, p...)
		}
		return pods, nil
	default:
		return nil, nil
	}
	raw := d
	if tmpl != nil {
		t, ok, err := unstructured.NestedMap(u.Object, tmpl...)
		if err != nil || !ok {
			return nil, fmt.Errorf("%s %s: no pod template", u.GetKind(), u.GetName())
		}
		meta, _ := t["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["name"] = strings.ToLower(u.GetKind()) + "-" + u.GetName()
		if raw, err = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": t["spec"]}); err != nil {
			return nil, err
		}
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(raw, pod); err != nil {
		return nil, fmt.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return []*corev1.Pod{pod}, nil
}

// serviceAccountAdmission does what the API server's ServiceAccount admission plugin does to a new pod
// before any validating admission: the default ServiceAccount, and unless the pod opts out, the projected
// token volume mounted into every container and init container (not the ephemeral ones).
func serviceAccountAdmission(pod *corev1.Pod) {
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return
	}
	const name = "kube-api-access-fxt9q"
	expiry, mode := int64(3607), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiry, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}})
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, mount)
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, mount)
	}
}

// matched: whether the policy's matchConstraints.resourceRules select this request at all (a request they
// do not select is admitted without evaluation).
func matched(policy *admissionregistrationv1.ValidatingAdmissionPolicy, op admissionregistrationv1.OperationType, resource string) bool {
	mc := policy.Spec.MatchConstraints
	if mc == nil {
		return false
	}
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s || x == "*" {
				return true
			}
		}
		return false
	}
	for _, r := range mc.ResourceRules {
		ops := make([]string, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = string(o)
		}
		res := r.Resources
		if in(r.APIGroups, "") && in(r.APIVersions, "v1") && in(ops, string(op)) &&
			(in(res, resource) || (strings.Contains(resource, "/") && in(res, "pods/*"))) {
			return true
		}
	}
	return false
}

// evaluate returns "allow", "allow (not matched)" or "deny: MESSAGE" (the first denial, which is what the
// API server answers). A policy whose evaluation errs denies (failurePolicy Fail): that comes back as an
// error here, since no expression of this policy should ever err on a pod.
func evaluate(v validating.Validator, policy *admissionregistrationv1.ValidatingAdmissionPolicy, in *corev1.Pod, op string) (string, error) {
	pod := *in.DeepCopy()
	var obj, old *corev1.Pod
	operation, resource, sub := admission.Create, "pods", ""
	switch op {
	case "":
		serviceAccountAdmission(&pod)
		obj = &pod
	case "ephemeralcontainers":
		operation, resource, sub = admission.Update, "pods/ephemeralcontainers", "ephemeralcontainers"
		obj = &pod
		old = pod.DeepCopy()
		old.Spec.EphemeralContainers = nil
	default:
		return "", fmt.Errorf("unknown %s %q", annOperation, op)
	}
	if !matched(policy, admissionregistrationv1.OperationType(operation), resource) {
		return "allow (not matched)", nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents", Labels: map[string]string{"stockade.io/enforce": "true"}}}
	pod.Namespace = ns.Name
	var oldObj runtime.Object
	if old != nil {
		old.Namespace = ns.Name
		oldObj = old
	}
	attrs := admission.NewAttributesRecord(obj, oldObj, podGVK, ns.Name, pod.Name, podGVR, sub, operation, nil, false,
		&user.DefaultInfo{Name: "vapcheck"})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podGVK, VersionedObject: admission.NewLazyObject(obj)}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	res := v.Validate(context.Background(), podGVR, va, nil, ns, celconfig.RuntimeCELCostBudget, nil)
	for _, d := range res.Decisions {
		if d.Evaluation == validating.EvalError {
			return "", fmt.Errorf("%s", d.Message)
		}
	}
	for _, d := range res.Decisions {
		if d.Action == validating.ActionDeny {
			return "deny: " + d.Message, nil
		}
	}
	return "allow", nil
}

// compilePolicy is the API server's compilePolicy (k8s.io/apiserver/pkg/admission/plugin/policy/validating,
// plugin.go; unexported there), step for step: variables stored in one composited compiler, then the
// validations, match conditions and message expressions against them.
func compilePolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParam := policy.Spec.ParamKind != nil
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)
	}
	compiler.CompileAndStoreVariables(variables(policy), optionalVars, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mcs := policy.Spec.MatchConditions; len(mcs) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			acc[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(acc, optionalVars, environment.StoredExpressions),
			failurePolicy, "policy", "validate", policy.Name)
	}
	validations, messages := make([]plugincel.ExpressionAccessor, 0), make([]plugincel.ExpressionAccessor, 0)
	for _, val := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: val.Expression, Message: val.Message, Reason: val.Reason})
		if val.MessageExpression != "" {
			messages = append(messages, &validating.MessageExpressionCondition{MessageExpression: val.MessageExpression})
		} else {
			messages = append(messages, nil)
		}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, optionalVars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, optionalVars, environment.StoredExpressions),
		compiler.CompileCondition(messages, expressionOptionalVars, environment.StoredExpressions),
		failurePolicy,
		nil,
	)
}

func variables(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []plugincel.NamedExpressionAccessor {
	out := make([]plugincel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		out[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	return out
}

// compileAsNew compiles every expression of the policy as creating it would (environment.NewExpressions)
// at Kubernetes version v, and returns each compilation error with the expression's place.
func compileAsNew(policy *admissionregistrationv1.ValidatingAdmissionPolicy, v *version.Version) []string {
	var errs []string
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(v))
	if err != nil {
		return []string{err.Error()}
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	msgOpts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil}
	for _, nv := range variables(policy) {
		if r := compiler.CompileAndStoreVariable(nv, opts, environment.NewExpressions); r.Error != nil {
			errs = append(errs, fmt.Sprintf("variables.%s: %s", nv.GetName(), r.Error.Detail))
		}
	}
	check := func(where string, acc plugincel.ExpressionAccessor, o plugincel.OptionalVariableDeclarations) {
		if r := compiler.CompileCELExpression(acc, o, environment.NewExpressions); r.Error != nil {
			errs = append(errs, fmt.Sprintf("%s: %s", where, r.Error.Detail))
		}
	}
	for i, val := range policy.Spec.Validations {
		check(fmt.Sprintf("validations[%d].expression", i), &validating.ValidationCondition{Expression: val.Expression}, opts)
		if val.MessageExpression != "" {
			check(fmt.Sprintf("validations[%d].messageExpression", i), &validating.MessageExpressionCondition{MessageExpression: val.MessageExpression}, msgOpts)
		}
	}
	for i := range policy.Spec.MatchConditions {
		check(fmt.Sprintf("matchConditions[%d]", i), (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]), opts)
	}
	return errs
}
