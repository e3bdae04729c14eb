{{/*
Named templates of stockade-system. Every name starts with "stockade-system." so this chart and the
per-workload chart (names "stockade.*") can be subcharts of one parent without a clash: Helm's named
templates are global across a chart and its subcharts.
*/}}

{{/*
stockade-system.fullname: release-scoped base name of every object: fullnameOverride, else the release name when it
contains the name (nameOverride or the chart name), else "<release>-<name>"; 63 characters at most. Usage: {{ include "stockade-system.fullname" . }}
*/}}
{{- define "stockade-system.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "stockade-system.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
stockade-system.name: the chart name, or nameOverride (the app.kubernetes.io/name label). Usage: {{ include "stockade-system.name" . }}
*/}}
{{- define "stockade-system.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
stockade-system.labels: the app.kubernetes.io/* labels of every object. Usage: {{ include "stockade-system.labels" . | nindent 4 }}
*/}}
{{- define "stockade-system.labels" -}}
app.kubernetes.io/name: {{ include "stockade-system.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: stockade
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
stockade-system.selectorLabels: the stable subset used in selectors and pod templates (no version label:
it would roll every pod on each chart upgrade). Usage: {{ include "stockade-system.selectorLabels" (list . "seccomp-installer") | nindent 6 }}
*/}}
{{- define "stockade-system.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "stockade-system.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/*
stockade-system.image: "[image.registry/]repository@digest" when a digest is given, else "repository:tag" with the tag
defaulting to the chart appVersion. Usage: {{ include "stockade-system.image" (list . .Values.images.policy) }}
*/}}
{{- define "stockade-system.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- /* a repository without "/" is a name under image.registry; one with "/" is whole (a packaged
chart's RELEASE_REPO, or an operator's own) */ -}}
{{- $repo := $img.repository -}}
{{- if and (not (contains "/" $repo)) $root.Values.image $root.Values.image.registry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" $root.Values.image.registry) $repo -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/*
stockade-system.vapApiVersion: ValidatingAdmissionPolicy is GA (v1) from Kubernetes 1.30; 1.29 has v1beta1
(behind its feature gate). Usage: apiVersion: {{ include "stockade-system.vapApiVersion" . }}
*/}}
{{- define "stockade-system.vapApiVersion" -}}
{{- if semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version -}}
admissionregistration.k8s.io/v1
{{- else -}}
admissionregistration.k8s.io/v1beta1
{{- end -}}
{{- end -}}

{{/*
stockade-system.profilePattern: the RE2 pattern of the profile names the per-workload chart and
`stockade-policy inject` give agent containers: "stockade-" + the first 16 hex digits of the SHA-256 of the
canonical seccomp section + ".json" (docs/install.md#seccomp-profiles). Usage: {{ include "stockade-system.profilePattern" . }}
*/}}
{{- define "stockade-system.profilePattern" -}}
^stockade-[0-9a-f]{16}[.]json$
{{- end -}}

{{/*
stockade-system.installerArgs: the installer container's arguments as a JSON list, rendered once for the
DaemonSet and for the admission policy, which admits the installer's pod only with exactly these (a JSON
list of strings is a CEL list literal). Usage: {{ include "stockade-system.installerArgs" . | fromJsonArray | toYaml }}
*/}}
{{- define "stockade-system.installerArgs" -}}
{{- $args := list "seccomp-install" "--from-cluster" "--dir=/host/seccomp"
  (printf "--selector=%s" .Values.seccompInstaller.labelSelector)
  (printf "--interval=%d" (int .Values.seccompInstaller.intervalSeconds))
  (printf "--grace=%d" (int .Values.seccompInstaller.graceSeconds)) -}}
{{- with .Values.seccompInstaller.apiServer -}}
{{- $args = append $args (printf "--api-server=%s" .) -}}
{{- end -}}
{{- if .Values.seccompInstaller.logDenials -}}
{{- $args = append $args "--log-denials" -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}
