{{- define "queryflux.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "queryflux.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.role }}
{{- end -}}

{{- define "queryflux.labels" -}}
{{ include "queryflux.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "queryflux.configSecret" -}}
{{- if .Values.existingConfigSecret -}}
{{- .Values.existingConfigSecret -}}
{{- else -}}
{{- include "queryflux.fullname" . }}-config
{{- end -}}
{{- end -}}

{{- define "queryflux.servicePorts" -}}
{{- range $name, $port := .Values.ports }}
{{- if $port }}
- name: {{ $name | lower | trunc 15 }}
  port: {{ $port }}
  targetPort: {{ $name | lower | trunc 15 }}
{{- end }}
{{- end }}
{{- end -}}

{{- /* The headless Service's name: the full name cut so that the suffix fits in 63. */ -}}
{{- define "queryflux.headlessName" -}}
{{- printf "%s-headless" (include "queryflux.fullname" . | trunc 54 | trimSuffix "-") -}}
{{- end -}}

{{- define "queryflux.probeScheme" -}}
{{- if .Values.tlsSecret }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}
