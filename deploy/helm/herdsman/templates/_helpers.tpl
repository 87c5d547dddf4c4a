{{/* Names, labels and the values several templates share. */}}

{{- define "herdsman.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "herdsman.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: include "herdsman.selector" (list $ "gateway") */}}
{{- define "herdsman.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "herdsman.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "herdsman.secretName" -}}
{{- default (printf "%s-secrets" (include "herdsman.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "herdsman.dataClaim" -}}
{{- default (printf "%s-data" (include "herdsman.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{- define "herdsman.postgresHost" -}}
{{- printf "%s-postgresql" (include "herdsman.fullname" .) -}}
{{- end -}}

{{- define "herdsman.redisHost" -}}
{{- printf "%s-redis" (include "herdsman.fullname" .) -}}
{{- end -}}

{{/* config.yaml: what the deployment needs, with .Values.config merged over it. */}}
{{- define "herdsman.config" -}}
{{- $sandbox := dict "namespace" .Release.Namespace "image" .Values.sandbox.image "data_claim" (include "herdsman.dataClaim" .) "run_as_user" 1000 "name_prefix" "herdsman" -}}
{{- if .Values.sandbox.skillsClaim -}}
{{- $_ := set $sandbox "skills_claim" .Values.sandbox.skillsClaim -}}
{{- end -}}
{{- $keys := list "$HERDSMAN_API_KEY" (dict "key" "$HERDSMAN_ADMIN_KEY" "role" "admin" "user" "ops") -}}
{{- $base := dict
  "home" "/data"
  "sandbox" (dict "provider" "kubernetes" "kubernetes" $sandbox)
  "checkpointer" (dict "type" "postgres" "url" "$DATABASE_URL")
  "memory" (dict "store" "postgres" "url" "$DATABASE_URL")
  "gateway" (dict "host" "0.0.0.0" "port" (int .Values.gateway.port) "api_keys" $keys "stream_bridge" "redis" "redis_url" "$REDIS_URL" "cors_origins" (list))
-}}
{{- toYaml (mustMergeOverwrite $base (deepCopy .Values.config)) -}}
{{- end -}}

{{/* The pod spec shared by gateways and workers (same image, config, secrets and volume). */}}
{{- define "herdsman.podSpec" -}}
{{- $root := index . 0 -}}
{{- $part := index . 1 -}}
serviceAccountName: {{ include "herdsman.fullname" $root }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  runAsGroup: 1000
  fsGroup: 1000
  seccompProfile:
    type: RuntimeDefault
containers:
  - name: {{ $part.name }}
    image: {{ include "herdsman.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    {{- with $part.command }}
    command:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $part.args }}
    args:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    env:
      - name: HERDSMAN_CONFIG
        value: /etc/herdsman/config.yaml
      - name: HOME
        value: /data
    envFrom:
      - secretRef:
          name: {{ include "herdsman.secretName" $root }}
    {{- with $part.ports }}
    ports:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $part.probes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    resources:
      {{- toYaml $part.resources | nindent 6 }}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
      - name: config
        mountPath: /etc/herdsman
        readOnly: true
      - name: data
        mountPath: /data
      - name: tmp
        mountPath: /tmp
volumes:
  - name: config
    configMap:
      name: {{ include "herdsman.fullname" $root }}-config
  - name: data
    persistentVolumeClaim:
      claimName: {{ include "herdsman.dataClaim" $root }}
  - name: tmp
    emptyDir: {}
{{- with $part.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
