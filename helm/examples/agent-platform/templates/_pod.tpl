{{/*
agent-platform.wrap: the stockade parts of a pod spec around the containers given in "containers" (a list of
container maps); "root" is this chart's context. Each container gets stockade's agent securityContext.
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
  - {{- toYaml (omit . "securityContext") | nindent 4 }}
    securityContext: {{- include "stockade.agentSecurityContext" $s | nindent 6 }}
{{- end }}
volumes:
  {{- include "stockade.podVolumes" $s | nindent 2 }}
  - name: scratch
    emptyDir: {}
{{- end -}}
