{{/* Name of a component: <release>-<component>, at most 63 characters. */}}
{{- define "handplane.name" -}}
{{- printf "%s-%s" .root.Release.Name .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "handplane.selectorLabels" -}}
app.kubernetes.io/name: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "handplane.labels" -}}
{{ include "handplane.selectorLabels" . }}
app.kubernetes.io/part-of: handplane
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "handplane.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.repository .component (.root.Values.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}

{{/* The HTTP port variable each control-plane service reads (libs/contracts config). */}}
{{- define "handplane.portEnv" -}}
{{- get (dict "gateway" "GATEWAY_PORT" "agent-runtime" "RUNTIME_PORT" "task-coordinator" "COORDINATOR_PORT" "log-ingestor" "INGESTOR_PORT") . -}}
{{- end -}}

{{- define "handplane.httpPort" -}}
{{- get (dict "gateway" 8080 "agent-runtime" 8081 "task-coordinator" 8082 "log-ingestor" 8083) . -}}
{{- end -}}

{{/* A control-plane service's settings: serviceDefaults overlaid by services.<name>. */}}
{{- define "handplane.serviceValues" -}}
{{- $own := get .root.Values.services .component | default dict -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.serviceDefaults) (deepCopy $own)) -}}
{{- end -}}

{{- define "handplane.natsSecretName" -}}
{{- .Values.nats.external.existingSecret -}}
{{- end -}}

{{- define "handplane.postgresSecretName" -}}
{{- if eq .Values.postgres.mode "bundled" -}}
{{ include "handplane.name" (dict "root" . "component" "postgres") }}
{{- else -}}
{{ .Values.postgres.external.existingSecret | default (include "handplane.name" (dict "root" . "component" "postgres-external")) }}
{{- end -}}
{{- end -}}

{{- define "handplane.jwtSecretName" -}}
{{- .Values.jwt.existingSecret | default (include "handplane.name" (dict "root" . "component" "jwt")) -}}
{{- end -}}

{{- define "handplane.runnerServerSecret" -}}
{{- if eq .Values.runnerTls.mode "existing" -}}{{ .Values.runnerTls.serverSecret }}{{- else -}}{{ include "handplane.name" (dict "root" . "component" "runner-tls-server") }}{{- end -}}
{{- end -}}

{{- define "handplane.runnerClientSecret" -}}
{{- if eq .Values.runnerTls.mode "existing" -}}{{ .Values.runnerTls.clientSecret }}{{- else -}}{{ include "handplane.name" (dict "root" . "component" "runner-tls-client") }}{{- end -}}
{{- end -}}

{{/* The DNS suffix of runner pods: <dashed pod IP>.<this> resolves through the headless Service. */}}
{{- define "handplane.runnerDnsDomain" -}}
{{- printf "%s.%s.svc.%s" (include "handplane.name" (dict "root" . "component" "sandbox-runner")) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* NATS connection, shared by all five services. */}}
{{- define "handplane.natsEnv" -}}
{{- if eq .Values.nats.mode "bundled" }}
- name: NATS_URL
  value: {{ printf "nats://%s:4222" (include "handplane.name" (dict "root" . "component" "nats")) | quote }}
{{- else if .Values.nats.external.existingSecret }}
- name: NATS_URL
  valueFrom: { secretKeyRef: { name: {{ .Values.nats.external.existingSecret | quote }}, key: NATS_URL } }
{{- else }}
- name: NATS_URL
  value: {{ .Values.nats.external.url | quote }}
{{- end }}
- name: STREAM_REPLICAS
  value: {{ .Values.nats.streamReplicas | quote }}
{{- end -}}

{{/* Environment of a control-plane service. */}}
{{- define "handplane.serviceEnv" -}}
{{- $root := .root -}}
- name: NODE_ENV
  value: production
- name: {{ include "handplane.portEnv" .component }}
  value: {{ include "handplane.httpPort" .component | quote }}
{{- include "handplane.natsEnv" $root }}
- name: DATABASE_URL
  valueFrom: { secretKeyRef: { name: {{ include "handplane.postgresSecretName" $root | quote }}, key: DATABASE_URL } }
{{- range $k, $v := $root.Values.config }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- if eq .component "gateway" }}
- name: JWT_SECRET
  valueFrom: { secretKeyRef: { name: {{ include "handplane.jwtSecretName" $root | quote }}, key: JWT_SECRET } }
{{- if $root.Values.jwt.jwksUrl }}
- name: JWKS_URL
  value: {{ $root.Values.jwt.jwksUrl | quote }}
{{- end }}
{{- end }}
{{- if has .component (list "task-coordinator" "log-ingestor") }}
{{- include "handplane.runnerTlsEnv" (dict "dir" "/etc/handplane/runner-tls") }}
{{- end }}
{{- if and $root.Values.metrics.existingSecret (eq .component "gateway") }}
- name: METRICS_TOKEN
  valueFrom: { secretKeyRef: { name: {{ $root.Values.metrics.existingSecret | quote }}, key: METRICS_TOKEN } }
{{- end }}
{{- if and $root.Values.admin.existingSecret (has .component (list "gateway" "task-coordinator")) }}
- name: ADMIN_TOKEN
  valueFrom: { secretKeyRef: { name: {{ $root.Values.admin.existingSecret | quote }}, key: ADMIN_TOKEN } }
{{- end }}
{{- range $k, $v := .values.env }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/* mTLS files of the runner connection (server side in the runner, client side in its callers). */}}
{{- define "handplane.runnerTlsEnv" }}
- name: RUNNER_TLS_CERT
  value: {{ printf "%s/tls.crt" .dir }}
- name: RUNNER_TLS_KEY
  value: {{ printf "%s/tls.key" .dir }}
- name: RUNNER_TLS_CA
  value: {{ printf "%s/ca.crt" .dir }}
{{- end -}}

{{/* Non-root, no capabilities, read-only root filesystem: every container but the documented exceptions. */}}
{{- define "handplane.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities: { drop: [ALL] }
seccompProfile: { type: RuntimeDefault }
{{- end -}}

{{- define "handplane.podAntiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels: {{- include "handplane.selectorLabels" . | nindent 12 }}
{{- end -}}

{{/* Refuses values that would deploy something that cannot work. */}}
{{- define "handplane.validate" -}}
{{- $v := .Values -}}
{{- if and (eq $v.nats.mode "external") (not (or $v.nats.external.url $v.nats.external.existingSecret)) -}}
{{- fail "nats.mode=external needs nats.external.url or nats.external.existingSecret" -}}
{{- end -}}
{{- if and (eq $v.postgres.mode "external") (not (or $v.postgres.external.url $v.postgres.external.existingSecret)) -}}
{{- fail "postgres.mode=external needs postgres.external.url or postgres.external.existingSecret" -}}
{{- end -}}
{{- if and (eq $v.nats.mode "bundled") (gt (int $v.nats.streamReplicas) (int $v.nats.bundled.replicas)) -}}
{{- fail (printf "nats.streamReplicas=%v needs at least that many JetStream servers: set nats.bundled.replicas to %v or more" $v.nats.streamReplicas $v.nats.streamReplicas) -}}
{{- end -}}
{{- if and (eq $v.runnerTls.mode "existing") (not (and $v.runnerTls.serverSecret $v.runnerTls.clientSecret)) -}}
{{- fail "runnerTls.mode=existing needs runnerTls.serverSecret and runnerTls.clientSecret" -}}
{{- end -}}
{{- end -}}
