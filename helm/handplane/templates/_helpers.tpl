{{- define "handplane.env" -}}
- name: NATS_URL
  value: {{ .Values.nats.url | quote }}
- name: STREAM_REPLICAS
  value: {{ .Values.nats.streamReplicas | quote }}
- name: DATABASE_URL
  valueFrom: { secretKeyRef: { name: {{ .Values.postgres.existingSecret }}, key: DATABASE_URL } }
- name: JWT_SECRET
  valueFrom: { secretKeyRef: { name: {{ .Values.jwt.existingSecret }}, key: JWT_SECRET, optional: true } }
- name: JWKS_URL
  value: {{ .Values.jwt.jwksUrl | quote }}
- name: NODE_ENV
  value: production
{{- range $k, $v := .Values.config }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}
