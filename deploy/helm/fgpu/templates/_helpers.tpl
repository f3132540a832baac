{{/* The plugins' namespace: .Values.namespace, else the release's. */}}
{{- define "fgpu.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{/* The image reference. */}}
{{- define "fgpu.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "fgpu.labels" -}}
app.kubernetes.io/part-of: fgpu
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The host mounts both plugins share: the agent's state, node.conf, the interposer, /dev. */}}
{{- define "fgpu.hostMounts" -}}
- name: agent-state
  mountPath: {{ .Values.host.agentStateDir }}
  readOnly: true
- name: fgpu-config
  mountPath: {{ .Values.host.configDir }}
  readOnly: true
- name: interposer
  mountPath: {{ .Values.host.interposerDir }}
  readOnly: true
- name: dev
  mountPath: /dev
  readOnly: true
{{- end -}}

{{- define "fgpu.hostVolumes" -}}
- name: agent-state
  hostPath:
    path: {{ .Values.host.agentStateDir }}
    type: Directory
- name: fgpu-config
  hostPath:
    path: {{ .Values.host.configDir }}
    type: Directory
- name: interposer
  hostPath:
    path: {{ .Values.host.interposerDir }}
    type: Directory
- name: dev
  hostPath:
    path: /dev
    type: Directory
{{- end -}}

{{/* Root without capabilities, read-only root filesystem (docs/kubernetes.md "Security"). */}}
{{- define "fgpu.securityContext" -}}
runAsUser: 0
runAsGroup: 0
runAsNonRoot: false
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fgpu.probes" -}}
readinessProbe:
  httpGet:
    path: /metrics
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 3
livenessProbe:
  httpGet:
    path: /metrics
    port: metrics
  initialDelaySeconds: 10
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 6
{{- end -}}
