{{/*
stockade.ctx: normalises what a named template was given into the dict (index . 1), with the keys Values,
Chart, Release and Capabilities of stockade's own chart. The input (index . 0) is this chart's context (`.`),
or from a parent chart (dict "root" $ "values" $.Values.stockade): Chart comes from the parent's
.Subcharts.stockade (so image tags default to stockade's appVersion and names to stockade's), Values from
"values" (default: the subchart's own). Other keys of a dict input (e.g. "native") are copied too.
Usage: {{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}} then $c.Values.uids.agent
*/}}
{{- define "stockade.ctx" -}}
{{- $in := index . 0 -}}
{{- $out := index . 1 -}}
{{- if hasKey $in "root" -}}
{{- $root := $in.root -}}
{{- $sub := $root -}}
{{- if and (hasKey $root "Subcharts") $root.Subcharts (hasKey $root.Subcharts "stockade") -}}
{{- $sub = index $root.Subcharts "stockade" -}}
{{- end -}}
{{- range $k, $v := $in -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- $_ := set $out "Values" (default $sub.Values $in.values) -}}
{{- $_ := set $out "Chart" $sub.Chart -}}
{{- $_ := set $out "Release" $root.Release -}}
{{- $_ := set $out "Capabilities" $root.Capabilities -}}
{{- else -}}
{{- $_ := set $out "Values" $in.Values -}}
{{- $_ := set $out "Chart" $in.Chart -}}
{{- $_ := set $out "Release" $in.Release -}}
{{- $_ := set $out "Capabilities" $in.Capabilities -}}
{{- end -}}
{{- end -}}

{{/*
stockade.name: the chart name, or nameOverride (the app.kubernetes.io/name label). Usage: {{ include "stockade.name" . }}
*/}}
{{- define "stockade.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
stockade.fullname: release-scoped base name for every object: fullnameOverride, else the release name when it
contains the name (nameOverride or the chart name), else "<release>-<name>"; 63 characters at most. Usage: {{ include "stockade.fullname" . }}
*/}}
{{- define "stockade.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
stockade.labels: the app.kubernetes.io/* labels of every object. Usage: {{ include "stockade.labels" . | nindent 4 }}
*/}}
{{- define "stockade.labels" -}}
app.kubernetes.io/name: {{ include "stockade.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
stockade.selectorLabels: the stable subset used in selectors. Usage: {{ include "stockade.selectorLabels" . | nindent 6 }}
*/}}
{{- define "stockade.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stockade.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
stockade.image: "[image.registry/]repository@digest" when a digest is given, else "repository:tag" with the tag defaulting to the chart appVersion. Usage: {{ include "stockade.image" (list . .Values.images.init) }}
*/}}
{{- define "stockade.image" -}}
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
stockade.validate: fails the render with a clear message on values the schema cannot express. Usage: {{ include "stockade.validate" . }}
*/}}
{{- define "stockade.validate" -}}
{{- if eq (int .Values.uids.agent) (int .Values.uids.sidecar) -}}
{{- fail "uids.agent and uids.sidecar must differ: the sidecar's traffic is exempt by UID" -}}
{{- end -}}
{{- $p := .Values.ports -}}
{{- if ne (len (uniq (list (int $p.proxy) (int $p.dns) (int $p.admin) (int $p.api)))) 4 -}}
{{- fail "ports.proxy, ports.dns, ports.admin and ports.api must be four different ports" -}}
{{- end -}}
{{- if and (not .Values.policy.existingConfigMap) (not .Values.policy.spec) -}}
{{- fail "set policy.spec (inline policy) or policy.existingConfigMap" -}}
{{- end -}}
{{- /* 0.3 moved the cluster-wide pieces to helm/stockade-system: say so instead of ignoring old values */ -}}
{{- if hasKey .Values "admissionPolicy" -}}
{{- fail "admissionPolicy: the admission policy moved to the stockade-system chart (one per cluster: helm install stockade-system helm/stockade-system --set admissionPolicy.enabled=true); remove admissionPolicy from this release's values (docs/upgrading.md)" -}}
{{- end -}}
{{- if hasKey .Values.seccomp "installer" -}}
{{- fail "seccomp.installer: the seccomp installer moved to the stockade-system chart (one per cluster: helm/stockade-system, values seccompInstaller.*); remove seccomp.installer from this release's values (docs/upgrading.md)" -}}
{{- end -}}
{{- if and (include "stockade.trustOn" .) (hasKey (.Values.sidecar.settings | default dict) "trust-dir") -}}
{{- fail "sidecar.settings.trust-dir: trust.enabled already gives the sidecar --trust-dir (the directory the agent mounts); set trust.enabled=false to manage the trust files yourself" -}}
{{- end -}}
{{- /* secrets: the sidecar alone holds the real values, through sidecar.apiSecrets' mounts; a valueFile
outside them would leave the sidecar with no value (every swap refused) or, worse, point at a file the
operator meant to mount some other way. Checked on the inline policy only (existingConfigMap: not seen). */ -}}
{{- if not .Values.policy.existingConfigMap -}}
{{- $placeholders := list -}}
{{- range $i, $s := (get (.Values.policy.spec | default dict) "secrets" | default list) -}}
{{- $placeholders = append $placeholders (toString (default (printf "stockade-secret-%v" $s.name) $s.placeholder)) -}}
{{- $covered := false -}}
{{- range $.Values.sidecar.apiSecrets -}}
{{- if hasPrefix (printf "/var/run/stockade/secrets/%s/" .name) (toString $s.valueFile) -}}{{- $covered = true -}}{{- end -}}
{{- end -}}
{{- if not $covered -}}
{{- fail (printf "policy.spec.secrets[%d].valueFile: %s is in no Secret mounted into the sidecar: add sidecar.apiSecrets {name: NAME, secretName: ...} and point valueFile at /var/run/stockade/secrets/NAME/<key>" $i (toString $s.valueFile)) -}}
{{- end -}}
{{- end -}}
{{- range $n, $v := (.Values.agent.secretEnv | default dict) -}}
{{- if not (has (toString $v) $placeholders) -}}
{{- fail (printf "agent.secretEnv.%s: %s is the placeholder of no policy.spec.secrets entry (%s)" $n (toString $v) (ternary "the policy has none" (join ", " $placeholders) (empty $placeholders))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.seccomp.enabled .Values.policy.existingConfigMap (not .Values.seccomp.profileName) -}}
{{- fail "policy.existingConfigMap with seccomp.enabled: set seccomp.profileName to the output of `stockade-policy seccomp --print-name --policy <that policy.yaml>` and label that ConfigMap stockade.dev/seccomp-profile=true so the stockade-system installer serves the profile (docs/install.md)" -}}
{{- end -}}
{{- end -}}

{{/*
stockade.policyConfigMap: name of the ConfigMap holding policy.yaml. Usage: {{ include "stockade.policyConfigMap" . }}
*/}}
{{- define "stockade.policyConfigMap" -}}
{{- default (printf "%s-policy" (include "stockade.fullname" .)) .Values.policy.existingConfigMap -}}
{{- end -}}

{{/*
stockade.policyYaml: the policy file rendered from values; the chart owns version, UIDs and ports so the
init, the sidecar and the pod spec cannot disagree. Usage: {{ include "stockade.policyYaml" . | nindent 4 }}
*/}}
{{- define "stockade.policyYaml" -}}
version: 1
agent: { uid: {{ int .Values.uids.agent }} }
sidecar: { uid: {{ int .Values.uids.sidecar }} }
ports: { proxy: {{ int .Values.ports.proxy }}, dns: {{ int .Values.ports.dns }}, admin: {{ int .Values.ports.admin }}, api: {{ int .Values.ports.api }} }
{{ omit .Values.policy.spec "version" "agent" "sidecar" "ports" | toYaml }}
{{- end -}}

{{/*
stockade.nativeSidecar: "true" when the sidecar runs as a native sidecar: sidecar.native auto on a Kubernetes
version >= 1.29 (.Capabilities.KubeVersion: the cluster's for install and upgrade, --kube-version or helm's
default for `helm template`), or true. sidecar.native true on an older version fails the render, naming the
version, rather than render a pod that version would run with no sidecar gate (an init container with
restartPolicy: Always needs 1.29). Usage: {{ if eq (include "stockade.nativeSidecar" .) "true" }}
*/}}
{{- define "stockade.nativeSidecar" -}}
{{- $n := toString .Values.sidecar.native -}}
{{- $v := .Capabilities.KubeVersion.Version -}}
{{- $has := semverCompare ">=1.29.0-0" $v -}}
{{- if .Values.sidecar.startFirst -}}
false
{{- else if eq $n "auto" -}}
{{- $has -}}
{{- else if and (eq $n "true") (not $has) -}}
{{- fail (printf "sidecar.native=true needs Kubernetes >= 1.29 (a native sidecar is an init container with restartPolicy: Always), and this render is for Kubernetes %s: pass the cluster's version to `helm template --kube-version` (without it helm renders for its default version), or set sidecar.native to auto or false" $v) -}}
{{- else -}}
{{- eq $n "true" -}}
{{- end -}}
{{- end -}}

{{/*
stockade.shapeComment: a YAML comment saying which sidecar shape the render chose and for which Kubernetes
version, so a `helm template` run without --kube-version shows what it assumed. Usage: {{ include "stockade.shapeComment" . }}
*/}}
{{- define "stockade.shapeComment" -}}
{{- $native := eq (include "stockade.nativeSidecar" .) "true" -}}
# stockade: {{ if $native }}native sidecar{{ else if .Values.sidecar.startFirst }}classic sidecar first in containers (sidecar.startFirst){{ else }}classic sidecar{{ end }} (sidecar.native={{ .Values.sidecar.native }}), rendered for Kubernetes {{ .Capabilities.KubeVersion.Version }}
{{- end -}}

{{/*
stockade.initContainer: the stockade-init container (first init container). Another chart may include it
in its own pod spec's initContainers. Usage: {{ include "stockade.initContainer" . | nindent 8 }}, or from a
parent chart {{ include "stockade.initContainer" (dict "root" . "values" .Values.stockade) | nindent 8 }}
*/}}
{{- define "stockade.initContainer" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}}
{{- /* init.inSidecar: the native sidecar's own entry applies the rules (stockade.sidecarContainer) */ -}}
{{- with $c -}}
{{- if (.Values.cni | default dict).enabled -}}
{{- include "stockade.validateContainer" . -}}
{{- else if not .Values.init.inSidecar -}}
- name: stockade-init
  image: {{ include "stockade.image" (list . .Values.images.init) }}
  imagePullPolicy: {{ .Values.images.init.pullPolicy }}
  args: [{{ include "stockade.initArgs" . }}]
  securityContext:
    # root inside the pod's own network namespace: nftables needs uid 0 with NET_ADMIN.
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      # NET_ADMIN: the init programs the pod netns's nftables (one netlink batch), nothing else.
      add: [NET_ADMIN]
      drop: [ALL]
    seccompProfile:
      type: RuntimeDefault
  resources: {{- toYaml .Values.init.resources | nindent 4 }}
  volumeMounts:
    - name: stockade-policy
      mountPath: /etc/stockade
      readOnly: true
    - name: stockade-run
      mountPath: /run/stockade
{{- end }}
{{- end -}}
{{- end -}}

{{/*
stockade.validateContainer: CNI mode's first init container (cni.enabled): the node's stockade-cni has
programmed the netns before any container; `stockade-sidecar validate`, as the agent UID with no capability,
proves the redirect by probes that must arrive at its own listeners, checks the plugin's marker against the
policy, and writes the marker the sidecar's /readyz reads. A pod whose netns has no redirect fails here.
Usage: as stockade.initContainer (which renders it in CNI mode), with the normalised context.
*/}}
{{- define "stockade.validateContainer" -}}
{{- if .Values.init.inSidecar -}}
{{- fail "cni.enabled and init.inSidecar: in CNI mode the node's plugin programs the netns and no container of the pod has NET_ADMIN; turn one off" -}}
{{- end -}}
{{- if .Values.policy.existingConfigMap -}}
{{- fail "cni.enabled needs the chart's own policy (policy.spec): the pod's stockade.io/netns-policy annotation, which the node's plugin reads, carries it, and the chart cannot read policy.existingConfigMap" -}}
{{- end -}}
{{- $agent := int .Values.uids.agent -}}
- name: stockade-validate
  image: {{ include "stockade.image" (list . .Values.images.sidecar) }}
  imagePullPolicy: {{ .Values.images.sidecar.pullPolicy }}
  command: ["/usr/local/bin/stockade-sidecar", "validate", "--policy", "/etc/stockade/policy.yaml",
    "--marker", "/run/stockade/init.marker", "--timeout-ms", "{{ int .Values.cni.validateTimeoutMs }}"]
  securityContext:
    # The agent's UID: the redirect applies to its sockets only. No capability at all.
    runAsUser: {{ $agent }}
    runAsGroup: {{ $agent }}
    runAsNonRoot: true
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
    seccompProfile:
      type: RuntimeDefault
  resources: {{- toYaml .Values.init.resources | nindent 4 }}
  volumeMounts:
    - name: stockade-policy
      mountPath: /etc/stockade
      readOnly: true
    - name: stockade-run
      mountPath: /run/stockade
{{- end -}}

{{/*
stockade.cniAnnotations: CNI mode's pod annotation, the policy the node's stockade-cni builds the netns
ruleset from (cni/kube.h); nothing in CNI mode off. Usage: inside a pod's metadata.annotations (indent 4 or 8).
*/}}
{{- define "stockade.cniAnnotations" -}}
{{- if (.Values.cni | default dict).enabled }}
stockade.io/netns-policy: {{ printf "%s\n" (include "stockade.policyYaml" .) | quote }}
{{- end }}
{{- end -}}

{{/*
stockade.initArgs: stockade-init's arguments (policy, marker, the agent's seccomp profile), shared by the
init container and, with init.inSidecar, the sidecar's entry. Usage: {{ include "stockade.initArgs" $c }}
(the normalised context) inside a flow list.
*/}}
{{- define "stockade.initArgs" -}}
"--policy", "/etc/stockade/policy.yaml", "--marker", "/run/stockade/init.marker"
{{- /* the init refuses to start the pod when the agent's profile is not its policy's section's */}}
{{- if .Values.seccomp.enabled }}, "--seccomp-profile", {{ include "stockade.seccompProfileName" . | quote }}{{ end }}
{{- end -}}

{{/*
stockade.sidecarContainer: the stockade-sidecar container. For a native sidecar include it in
initContainers (it carries restartPolicy: Always and the postStart hook `wait-ready`, or a startupProbe when
sidecar.holdAgentUntilReady is false); for a classic one in containers (neither: nothing gates the agent;
with sidecar.startFirst it carries the hook and belongs first in containers, before the agent). With
init.inSidecar (native only: the render fails otherwise) its entry is stockade-init, which applies the rules
and then execs the sidecar as the sidecar UID with no capability left.
Usage: {{ include "stockade.sidecarContainer" (dict "root" . "native" true) | nindent 8 }}; from a parent chart
add "values" .Values.stockade (without "native", sidecar.native decides, as for the chart's own pods).
*/}}
{{- define "stockade.sidecarContainer" -}}
{{- $ := dict -}}{{- include "stockade.ctx" (list . $) -}}
{{- $native := ternary .native (eq (include "stockade.nativeSidecar" $) "true") (hasKey . "native") -}}
{{- $inSidecar := $.Values.init.inSidecar -}}
{{- if and $inSidecar (not $native) -}}
{{- fail (printf "init.inSidecar needs the native sidecar (sidecar.native true or auto on Kubernetes >= 1.29, sidecar.startFirst false): a classic sidecar's failed postStart hook does not stop the kubelet from starting the agent, so the agent could run with no rules (fail open)") -}}
{{- end -}}
{{- $sidecarUid := int $.Values.uids.sidecar -}}
- name: stockade-sidecar
  image: {{ include "stockade.image" (list $ $.Values.images.sidecar) }}
  imagePullPolicy: {{ $.Values.images.sidecar.pullPolicy }}
  {{- if $native }}
  restartPolicy: Always
  {{- end }}
  {{- if $inSidecar }}
  # init.inSidecar: stockade-init programs the pod netns (every start: a restart replaces the table in one
  # batch, no gap), writes the marker, drops to the sidecar UID for good (no groups, no capabilities,
  # no_new_privs; read back before the exec) and only then execs the sidecar with the args below. On any
  # failure it exits non-zero and the sidecar never runs, so the agent never starts.
  command: ["/usr/local/bin/stockade-init", {{ include "stockade.initArgs" $ }},
    "--exec-as", "{{ $sidecarUid }}:{{ $sidecarUid }}", "--", "/usr/local/bin/stockade-sidecar"]
  {{- end }}
  args:
    - --policy=/etc/stockade/policy.yaml
    - --marker=/run/stockade/init.marker
    - --admin-addr=0.0.0.0:{{ int $.Values.ports.admin }}
    - --log-level={{ $.Values.sidecar.logLevel }}
    {{- if include "stockade.trustOn" $ }}
    - --trust-dir={{ include "stockade.trustDir" $ }}
    {{- end }}
    {{- range $name, $value := $.Values.sidecar.settings }}
    {{- /* YAML numbers arrive as float64: print 3600000, not 3.6e+06 */}}
    - {{ printf "--%s=%v" $name (ternary (int64 $value) $value (kindIs "float64" $value)) | quote }}
    {{- end }}
  env:
    - name: STOCKADE_DRAIN_SECONDS
      value: {{ $.Values.sidecar.drainSeconds | quote }}
    {{- with $.Values.sidecar.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: admin
      containerPort: {{ int $.Values.ports.admin }}
      protocol: TCP
  securityContext:
    {{- if $inSidecar }}
    # Root only for the entry (stockade-init): the sidecar itself runs as the sidecar UID with no
    # capability. A `kubectl exec` into this container is root with these capabilities (docs/operating.md).
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      # NET_ADMIN: the entry programs the pod netns's nftables; SETUID, SETGID: it then drops to the
      # sidecar UID; SETPCAP: it empties the capability bounding set before that.
      add: [NET_ADMIN, SETUID, SETGID, SETPCAP]
      drop: [ALL]
    {{- else }}
    # Its own UID: nftables exempts it, and no other container may use it (admission policy).
    runAsUser: {{ $sidecarUid }}
    runAsGroup: {{ $sidecarUid }}
    runAsNonRoot: true
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
    {{- end }}
    seccompProfile:
      type: RuntimeDefault
  {{- if or (and $native $.Values.sidecar.holdAgentUntilReady) (and (not $native) $.Values.sidecar.startFirst) }}
  lifecycle:
    # The kubelet starts the agent once this hook returns: wait-ready polls the sidecar's own /readyz
    # every 5 ms (a startupProbe could not look more often than once a second). It fails after
    # readyTimeoutSeconds, naming what is missing; the kubelet then restarts the sidecar.
    postStart:
      exec:
        command:
          - /usr/local/bin/stockade-sidecar
          - wait-ready
          - --admin-addr=127.0.0.1:{{ int $.Values.ports.admin }}
          - --timeout-ms={{ mul (int $.Values.sidecar.readyTimeoutSeconds) 1000 }}
          {{- if $inSidecar }}
          {{- /* the hook runs with the container's user and capabilities (root, NET_ADMIN): drop first */}}
          - --as={{ $sidecarUid }}:{{ $sidecarUid }}
          {{- end }}
  {{- else if $native }}
  startupProbe:
    httpGet: { path: /readyz, port: admin }
    periodSeconds: 1
    failureThreshold: {{ int $.Values.sidecar.readyTimeoutSeconds }}
  {{- end }}
  livenessProbe:
    httpGet: { path: /healthz, port: admin }
    periodSeconds: {{ int $.Values.sidecar.probes.periodSeconds }}
    timeoutSeconds: 2
    failureThreshold: {{ int $.Values.sidecar.probes.failureThreshold }}
  readinessProbe:
    httpGet: { path: /readyz, port: admin }
    periodSeconds: {{ int $.Values.sidecar.probes.periodSeconds }}
    timeoutSeconds: 2
    failureThreshold: 1
  resources: {{- toYaml $.Values.sidecar.resources | nindent 4 }}
  volumeMounts:
    - name: stockade-policy
      mountPath: /etc/stockade
      readOnly: true
    - name: stockade-run
      mountPath: /run/stockade
      {{- /* with init.inSidecar the entry writes the marker there */}}
      readOnly: {{ not $inSidecar }}
    {{- range $.Values.sidecar.apiSecrets }}
    - name: stockade-secret-{{ .name }}
      mountPath: /var/run/stockade/secrets/{{ .name }}
      readOnly: true
    {{- end }}
    {{- if include "stockade.trustOn" $ }}
    # the sidecar writes the agent's trust files here at start, before it is ready
    - name: stockade-trust
      mountPath: {{ include "stockade.trustDir" $ }}
    {{- end }}
{{- end -}}

{{/*
stockade.agentSecurityContext: the agent container's securityContext (Pod Security "restricted"), also given
to the workload's own init containers (workload.initContainers). The extras come from agent.securityContext,
or from the dict's "securityContext" key when given (an init container's own).
Usage: securityContext: {{- include "stockade.agentSecurityContext" . | nindent 10 }} (or the parent-chart dict)
*/}}
{{- define "stockade.agentSecurityContext" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}}
{{- $extra := $c.Values.agent.securityContext -}}
{{- if hasKey $c "securityContext" -}}{{- $extra = $c.securityContext -}}{{- end -}}
{{- with $c -}}
runAsUser: {{ int .Values.uids.agent }}
runAsGroup: {{ int .Values.uids.agent }}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
{{- if .Values.seccomp.enabled }}
  type: Localhost
  localhostProfile: {{ include "stockade.seccompProfileName" . }}
{{- else }}
  type: RuntimeDefault
{{- end }}
{{- /* agent.securityContext extras: never the sandbox's own fields above */}}
{{- with omit ($extra | default dict) "runAsUser" "runAsGroup" "runAsNonRoot" "allowPrivilegeEscalation" "readOnlyRootFilesystem" "capabilities" "seccompProfile" "privileged" "procMount" }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
stockade.podVolumes: the volumes stockade's containers use (policy, init marker, API secrets).
Usage: volumes: {{- include "stockade.podVolumes" . | nindent 8 }} (or the parent-chart dict)
*/}}
{{- define "stockade.podVolumes" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}}
{{- with $c -}}
- name: stockade-policy
  configMap:
    name: {{ include "stockade.policyConfigMap" . }}
- name: stockade-run
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- range .Values.sidecar.apiSecrets }}
- name: stockade-secret-{{ .name }}
  secret:
    secretName: {{ .secretName }}
    # Files are root-owned (no fsGroup, which would hand the group to the agent too): 0444 lets the
    # sidecar UID read them; only the sidecar mounts this volume, so the agent cannot reach them.
    defaultMode: 0444
{{- end }}
{{- if include "stockade.trustOn" . }}
- name: stockade-trust
  emptyDir:
    medium: Memory
    sizeLimit: 4Mi
{{- end }}
{{- end -}}
{{- end -}}

{{/*
stockade.trustOn: "true" when the agent gets the sidecar's trust files (trust.enabled), else empty.
stockade.trustDir: where the sidecar writes them and the agent containers mount them (read-only).
Usage: {{ if include "stockade.trustOn" $c }} with the normalised context.
*/}}
{{- define "stockade.trustOn" -}}
{{- if (.Values.trust | default dict).enabled -}}true{{- end -}}
{{- end -}}

{{- define "stockade.trustDir" -}}
/run/stockade-trust
{{- end -}}

{{/*
stockade.agentEnv: the environment stockade adds to an agent container after its own (env): the trust
variables (trust.enabled; each skipped when the container sets it: theirs wins), then the credential
placeholders of agent.secretEnv (a name the container sets too fails the render: one of the two would be
lost, and the container's might be the real token). Empty when there is none. The same list and order as
`stockade-policy inject` (policy/k8s/inject.c add_agent_env). Args: root (a chart context or the
parent-chart dict), env (the container's env list), what (the container, for messages).
Usage: {{- with include "stockade.agentEnv" (dict "root" . "env" $env "what" "agent.env") }}{{ . | nindent 6 }}{{- end }}
*/}}
{{- define "stockade.agentEnv" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list .root $c) -}}
{{- $have := list -}}
{{- range .env -}}{{- $have = append $have (toString .name) -}}{{- end -}}
{{- $out := list -}}
{{- if include "stockade.trustOn" $c -}}
{{- $d := include "stockade.trustDir" $c -}}
{{- $bundle := printf "%s/bundle.pem" $d -}}
{{- range $n := list "SSL_CERT_FILE" "REQUESTS_CA_BUNDLE" "CURL_CA_BUNDLE" "GIT_SSL_CAINFO" "PIP_CERT" "AWS_CA_BUNDLE" -}}
{{- if not (has $n $have) -}}{{- $out = append $out (dict "name" $n "value" $bundle) -}}{{- end -}}
{{- end -}}
{{- /* Node adds NODE_EXTRA_CA_CERTS to its own roots: the pod CA alone */ -}}
{{- if not (has "NODE_EXTRA_CA_CERTS" $have) -}}
{{- $out = append $out (dict "name" "NODE_EXTRA_CA_CERTS" "value" (printf "%s/ca.pem" $d)) -}}
{{- end -}}
{{- /* the JVM reads no PEM bundle: the PKCS#12 store, its password public (sidecar/inspect/trust.h) */ -}}
{{- if not (has "JAVA_TOOL_OPTIONS" $have) -}}
{{- $out = append $out (dict "name" "JAVA_TOOL_OPTIONS" "value" (printf "-Djavax.net.ssl.trustStore=%s/truststore.p12 -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit" $d)) -}}
{{- end -}}
{{- end -}}
{{- range $n := keys ($c.Values.agent.secretEnv | default dict) | sortAlpha -}}
{{- if has $n $have -}}
{{- fail (printf "agent.secretEnv.%s: %s sets %s too; the placeholder and that value cannot both be given (remove it there)" $n $.what $n) -}}
{{- end -}}
{{- $out = append $out (dict "name" $n "value" (toString (get $c.Values.agent.secretEnv $n))) -}}
{{- end -}}
{{- if $out -}}{{- toYaml $out -}}{{- end -}}
{{- end -}}

{{/*
stockade.agentTrustMount: the read-only mount of the trust files an agent container gets (trust.enabled),
else empty: a directory, not a subPath, so files the sidecar replaces reach the agent.
Usage: {{- with include "stockade.agentTrustMount" . }}{{ . | nindent 6 }}{{- end }}
*/}}
{{- define "stockade.agentTrustMount" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}}
{{- if include "stockade.trustOn" $c -}}
- name: stockade-trust
  mountPath: {{ include "stockade.trustDir" $c }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
stockade.podSpec: the whole wrapped pod spec (init, sidecar, agent). Usage: {{ include "stockade.podSpec" . | nindent 6 }}
*/}}
{{- define "stockade.podSpec" -}}
{{- $native := eq (include "stockade.nativeSidecar" .) "true" -}}
{{- with .Values.workload.nodeName }}
nodeName: {{ . }}
{{- end }}
{{- if eq .Values.workload.kind "Pod" }}
restartPolicy: Never
{{- else if eq .Values.workload.kind "Job" }}
restartPolicy: Never
{{- end }}
terminationGracePeriodSeconds: {{ int .Values.workload.terminationGracePeriodSeconds }}
automountServiceAccountToken: {{ .Values.workload.automountServiceAccountToken | default false }}
enableServiceLinks: false
{{- with .Values.workload.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.workload.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.workload.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.workload.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.workload.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.workload.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with .Values.workload.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.agent.dnsPolicy }}
dnsPolicy: {{ . }}
{{- end }}
{{- with .Values.agent.dnsConfig }}
dnsConfig: {{- toYaml . | nindent 2 }}
{{- end }}
securityContext: {{- include "stockade.podSecurityContext" . | nindent 2 }}
initContainers:
{{- include "stockade.initContainer" . | nindent 2 }}
{{- if $native }}
{{- include "stockade.sidecarContainer" (dict "root" . "native" true) | nindent 2 }}
{{- end }}
{{- include "stockade.workloadInitContainers" . }}
containers:
{{- if and (not $native) .Values.sidecar.startFirst }}
{{- if eq .Values.workload.kind "Job" }}
{{- fail "sidecar.startFirst: a Job's pod would never complete (its classic sidecar keeps running); use the native sidecar" }}
{{- end }}
{{- include "stockade.sidecarContainer" (dict "root" . "native" false) | nindent 2 }}
{{- end }}
  - name: {{ .Values.agent.name }}
    image: {{ printf "%s:%s" .Values.agent.image.repository .Values.agent.image.tag }}
    imagePullPolicy: {{ .Values.agent.image.pullPolicy }}
    {{- with .Values.agent.command }}
    command: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.agent.args }}
    args: {{- toYaml . | nindent 6 }}
    {{- end }}
    env:
      - name: HOME
        value: /home/agent
      {{- with .Values.agent.env }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with include "stockade.agentEnv" (dict "root" . "env" (prepend (.Values.agent.env | default list) (dict "name" "HOME")) "what" "agent.env") }}
      {{- . | nindent 6 }}
      {{- end }}
    {{- with .Values.agent.envFrom }}
    envFrom: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.agent.ports }}
    ports: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.agent.livenessProbe }}
    livenessProbe: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.agent.readinessProbe }}
    readinessProbe: {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.agent.startupProbe }}
    startupProbe: {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext: {{- include "stockade.agentSecurityContext" . | nindent 6 }}
    {{- with .Values.agent.resources }}
    resources: {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      {{- range $i, $d := .Values.agent.writableDirs }}
      - name: agent-writable-{{ $i }}
        mountPath: {{ $d }}
      {{- end }}
      {{- with .Values.agent.volumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with include "stockade.agentTrustMount" . }}
      {{- . | nindent 6 }}
      {{- end }}
{{- if not (or $native .Values.sidecar.startFirst) }}
{{- include "stockade.sidecarContainer" (dict "root" . "native" false) | nindent 2 }}
{{- end }}
volumes:
{{- include "stockade.podVolumes" . | nindent 2 }}
{{- range $i, $d := .Values.agent.writableDirs }}
  - name: agent-writable-{{ $i }}
    emptyDir: {}
{{- end }}
{{- with .Values.agent.volumes }}
{{- toYaml . | nindent 2 }}
{{- end }}
{{- if include "stockade.anyInitNeedsTmp" . }}
  - name: agent-tmp
    emptyDir: {}
{{- end }}
{{- end -}}

{{/*
stockade.vapApiVersion: ValidatingAdmissionPolicy is GA (v1) from Kubernetes 1.30; 1.29 has v1beta1
(behind its feature gate). Usage: apiVersion: {{ include "stockade.vapApiVersion" . }}
*/}}
{{- define "stockade.vapApiVersion" -}}
{{- if semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version -}}
admissionregistration.k8s.io/v1
{{- else -}}
admissionregistration.k8s.io/v1beta1
{{- end -}}
{{- end -}}

{{/*
stockade.podRestartPart: what of the policy only a new pod can apply — the init's kernel rules (UIDs, ports,
loopback, exempt UIDs, direct and udp cidr rules) and the agent's seccomp profile (loaded when the container
starts). The pod template's checksum/policy covers this and nothing else, so editing an egress host rule
reloads live in the running sidecar instead of rolling every pod. A direct rule's position is part of it
because the sidecar's netns hash (policy/format.c) counts it: a reload that moves one is refused as needing a pod. Usage: {{ include "stockade.podRestartPart" . | sha256sum }}
*/}}
{{- define "stockade.podRestartPart" -}}
uids: {{ int .Values.uids.agent }}/{{ int .Values.uids.sidecar }}
ports: {{ int .Values.ports.proxy }}/{{ int .Values.ports.dns }}/{{ int .Values.ports.admin }}/{{ int .Values.ports.api }}
loopback: {{ toJson (get .Values.policy.spec "loopback") }}
exemptUids: {{ toJson (get .Values.policy.spec "exemptUids") }}
seccomp: {{ toJson (get .Values.policy.spec "seccomp") }}
{{- range $i, $r := (get .Values.policy.spec "egress") }}
{{- if and (kindIs "map" $r) (hasKey $r "cidr") (or (get $r "direct") (eq (toString (get $r "protocol")) "udp")) }}
direct[{{ $i }}]: {{ toJson $r }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
stockade.podLabels: the labels of a pod template — the selector labels only: a chart or app version label
there would roll every pod on each chart upgrade. Usage: {{ include "stockade.podLabels" . | nindent 8 }}
*/}}
{{- define "stockade.podLabels" -}}
{{ include "stockade.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
stockade.seccompProfileName: the agent's Localhost profile file name — seccomp.profileName when set, else
"stockade-" + the first 16 hex digits of the SHA-256 of the canonical seccomp section + ".json", the name
`stockade-policy inject`, `stockade-policy seccomp --print-name` and the stockade-system installer compute
(policy/seccomp/name.h owns the canonical form: sorted, unique, comma-joined names; "/1" the generator's
revision). Different sections get different files, so releases never overwrite each other's profile.
Usage: {{ include "stockade.seccompProfileName" . }} (or the parent-chart dict)
*/}}
{{- define "stockade.seccompProfileName" -}}
{{- $c := dict -}}{{- include "stockade.ctx" (list . $c) -}}
{{- with $c -}}
{{- if .Values.seccomp.profileName -}}
{{- .Values.seccomp.profileName -}}
{{- else -}}
{{- $s := get (.Values.policy.spec | default dict) "seccomp" | default dict -}}
{{- $allow := get $s "allow" | default list -}}
{{- $deny := get $s "deny" | default list -}}
{{- $canon := printf "stockade-seccomp/1\nallow=%s\ndeny=%s\n" (join "," (sortAlpha (uniq $allow))) (join "," (sortAlpha (uniq $deny))) -}}
{{- printf "stockade-%s.json" (sha256sum $canon | trunc 16) -}}
{{- end -}}
{{- end -}}
{{- end -}}


{{/*
stockade.podSecurityContext: the pod-level securityContext: workload.podSecurityContext merged with what the
sandbox needs (seccompProfile RuntimeDefault). A value that would weaken the sandbox fails the render, saying
why: another seccompProfile (the pod default for any container that names none), root or the sidecar's UID
in runAsUser or runAsGroup, root or the sidecar's GID in fsGroup or supplementalGroups (a group handed to
every container, the agent's too), an Unconfined AppArmor profile, a net.* sysctl (the network namespace
is stockade-init's to program). Usage: securityContext: {{- include "stockade.podSecurityContext" . | nindent 2 }}
*/}}
{{- define "stockade.podSecurityContext" -}}
{{- $u := .Values.workload.podSecurityContext | default dict -}}
{{- $side := int .Values.uids.sidecar -}}
{{- $why := "docs/operating.md, Init containers of the workload" -}}
{{- with $u.seccompProfile -}}
{{- if or (ne (toString .type) "RuntimeDefault") (ne (len .) 1) -}}
{{- fail (printf "workload.podSecurityContext.seccompProfile: only {type: RuntimeDefault} (the chart's own) is accepted, got %s: it is the profile of every container that names none; the agent's own Localhost profile is set per container (seccomp.*)" (toJson .)) -}}
{{- end -}}
{{- end -}}
{{- range $k := list "runAsUser" "runAsGroup" "fsGroup" -}}
{{- if hasKey $u $k -}}
{{- $id := int (get $u $k) -}}
{{- if or (eq $id 0) (eq $id $side) -}}
{{- fail (printf "workload.podSecurityContext.%s: %d is %s, which no container of the pod may get (%s)" $k $id (ternary "root" "the sidecar's UID/GID (uids.sidecar), whose traffic is exempt from the rules" (eq $id 0)) $why) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $u.supplementalGroups -}}
{{- if or (eq (int .) 0) (eq (int .) $side) -}}
{{- fail (printf "workload.podSecurityContext.supplementalGroups: %d is %s; a supplemental group reaches every container, the agent's too (%s)" (int .) (ternary "root's group" "the sidecar's GID (uids.sidecar)" (eq (int .) 0)) $why) -}}
{{- end -}}
{{- end -}}
{{- with $u.appArmorProfile -}}
{{- if eq (toString .type) "Unconfined" -}}
{{- fail (printf "workload.podSecurityContext.appArmorProfile: Unconfined would lift the runtime's AppArmor profile from every container (%s)" $why) -}}
{{- end -}}
{{- end -}}
{{- range $u.sysctls -}}
{{- if hasPrefix "net." (toString .name) -}}
{{- fail (printf "workload.podSecurityContext.sysctls: %s is a network sysctl, and the pod's network namespace is stockade-init's to program (nftables redirects and drops the agent's traffic there)" .name) -}}
{{- end -}}
{{- end -}}
{{- toYaml (merge (dict "seccompProfile" (dict "type" "RuntimeDefault")) (deepCopy $u)) -}}
{{- end -}}

{{/*
stockade.workloadInitContainers: the workload's own init containers (workload.initContainers), each with the
agent's securityContext (the agent UID, no capabilities, the agent's seccomp profile; their own
securityContext only for extra fields, as agent.securityContext) so their traffic goes through the sidecar
as the agent's does. podSpec puts them after stockade-init and, for a native sidecar, after the sidecar:
the kubelet starts them only once the sidecar is ready (its postStart hook or startupProbe), so they have
the agent's egress. With a classic sidecar (Kubernetes < 1.29, sidecar.native false or startFirst) they run
before the sidecar exists: the rules are in place, so they have no egress at all (fail closed).
Usage: {{- include "stockade.workloadInitContainers" . }} inside initContainers (indent 2).
*/}}
{{- define "stockade.workloadInitContainers" -}}
{{- $ := . -}}
{{- range $i, $c := .Values.workload.initContainers -}}
{{- if or (hasPrefix "stockade-" (toString $c.name)) (eq (toString $c.name) (toString $.Values.agent.name)) -}}
{{- fail (printf "workload.initContainers[%d].name: %s is the name of %s; rename it" $i $c.name (ternary "the agent container (agent.name)" "a stockade container (stockade-* names are stockade's)" (eq (toString $c.name) (toString $.Values.agent.name)))) -}}
{{- end -}}
{{- range $c.volumeMounts -}}
{{- if hasPrefix "stockade-" (toString .name) -}}
{{- fail (printf "workload.initContainers[%d].volumeMounts: %s is a stockade volume (the policy, the init's marker, the API secrets): only stockade's init and sidecar mount them" $i .name) -}}
{{- end -}}
{{- end -}}
{{- $sc := include "stockade.agentSecurityContext" (dict "root" $ "securityContext" ($c.securityContext | default dict)) | fromYaml -}}
{{- $out := merge (dict "securityContext" $sc) (omit $c "securityContext") -}}
{{- if include "stockade.initNeedsTmp" (dict "root" $ "container" $c "securityContext" $sc) -}}
{{- $_ := set $out "volumeMounts" (append ($c.volumeMounts | default list) (dict "name" "agent-tmp" "mountPath" "/tmp")) -}}
{{- end -}}
{{- /* the agent's trust files and placeholders: its traffic goes through the sidecar as the agent's does */ -}}
{{- with include "stockade.agentTrustMount" $ -}}
{{- $_ := set $out "volumeMounts" (concat ($out.volumeMounts | default list) (fromYamlArray .)) -}}
{{- end -}}
{{- with include "stockade.agentEnv" (dict "root" $ "env" ($c.env | default list) "what" (printf "workload.initContainers[%d].env" $i)) -}}
{{- $_ := set $out "env" (concat ($c.env | default list) (fromYamlArray .)) -}}
{{- end -}}
{{- list $out | toYaml | nindent 2 -}}
{{- end -}}
{{- end -}}

{{/*
stockade.initNeedsTmp: "true" when a workload init container has a read-only root (the agent's
securityContext) and no mount at /tmp, so it gets the pod's emptyDir agent-tmp there (programs such as
Python's tempfile fail without a writable /tmp), as `stockade-policy inject` does (policy/k8s/inject.c
give_tmp); not when agent.volumes already has a volume of that name. Args: root, container, securityContext.
stockade.anyInitNeedsTmp: "true" when one of workload.initContainers does (podSpec adds the volume).
*/}}
{{- define "stockade.initNeedsTmp" -}}
{{- $has := false -}}
{{- range .container.volumeMounts -}}
{{- if has (toString .mountPath) (list "/tmp" "/tmp/") -}}{{- $has = true -}}{{- end -}}
{{- end -}}
{{- range .root.Values.agent.volumes -}}
{{- if eq (toString .name) "agent-tmp" -}}{{- $has = true -}}{{- end -}}
{{- end -}}
{{- if and (not $has) .securityContext.readOnlyRootFilesystem -}}true{{- end -}}
{{- end -}}

{{- define "stockade.anyInitNeedsTmp" -}}
{{- $ := . -}}
{{- range $c := .Values.workload.initContainers -}}
{{- $sc := include "stockade.agentSecurityContext" (dict "root" $ "securityContext" ($c.securityContext | default dict)) | fromYaml -}}
{{- include "stockade.initNeedsTmp" (dict "root" $ "container" $c "securityContext" $sc) -}}
{{- end -}}
{{- end -}}
