{{/*
agent-platform.wrap: the stockade parts of a pod spec around the containers given in "containers" (a list of
container maps); "root" is this chart's context. Each container gets stockade's agent securityContext, the
sidecar's trust files (read-only) and their variables, and the credential placeholders (stockade.agentEnv).
Usage: {{ include "agent-platform.wrap" (dict "root" . "containers" (list $c)) | nindent 6 }}
*/}}
{{- define "agent-platform.wrap" -}}
{{- $s := dict "root" .root "values" .root.Values.stockade -}}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  seccompProfile:
    type: RuntimeDefault
initContainers:
  {{- include "stockade.initContainer" $s | nindent 2 }}
  {{- include "stockade.sidecarContainer" $s | nindent 2 }}
containers:
{{- range .containers }}
  {{- $c := omit . "securityContext" }}
  {{- with include "stockade.agentTrustMount" $s }}
  {{- $_ := set $c "volumeMounts" (concat ($c.volumeMounts | default list) (fromYamlArray .)) }}
  {{- end }}
  {{- with include "stockade.agentEnv" (dict "root" $s "env" ($c.env | default list) "what" (printf "%s's env" $c.name)) }}
  {{- $_ := set $c "env" (concat ($c.env | default list) (fromYamlArray .)) }}
  {{- end }}
  - {{- toYaml $c | nindent 4 }}
    securityContext: {{- include "stockade.agentSecurityContext" $s | nindent 6 }}
{{- end }}
volumes:
  {{- include "stockade.podVolumes" $s | nindent 2 }}
  - name: scratch
    emptyDir: {}
{{- end -}}
