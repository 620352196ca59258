//! The API groups of well-known kinds, for checks that compare a written group with the real
//! one. Kinds not listed here are never judged.

/// `(kind, groups it is served from)`; `""` is the core group.
static KINDS: &[(&str, &[&str])] = &[
    ("Binding", &[""]),
    ("ConfigMap", &[""]),
    ("Endpoints", &[""]),
    ("Event", &["", "events.k8s.io"]),
    ("LimitRange", &[""]),
    ("Namespace", &[""]),
    ("Node", &[""]),
    ("PersistentVolume", &[""]),
    ("PersistentVolumeClaim", &[""]),
    ("Pod", &[""]),
    ("PodTemplate", &[""]),
    ("ReplicationController", &[""]),
    ("ResourceQuota", &[""]),
    ("Secret", &[""]),
    ("Service", &[""]),
    ("ServiceAccount", &[""]),
    ("ControllerRevision", &["apps"]),
    ("DaemonSet", &["apps"]),
    ("Deployment", &["apps"]),
    ("ReplicaSet", &["apps"]),
    ("StatefulSet", &["apps"]),
    ("CronJob", &["batch"]),
    ("Job", &["batch"]),
    ("HorizontalPodAutoscaler", &["autoscaling"]),
    ("Ingress", &["networking.k8s.io"]),
    ("IngressClass", &["networking.k8s.io"]),
    ("NetworkPolicy", &["networking.k8s.io"]),
    ("PodDisruptionBudget", &["policy"]),
    ("ClusterRole", &["rbac.authorization.k8s.io"]),
    ("ClusterRoleBinding", &["rbac.authorization.k8s.io"]),
    ("Role", &["rbac.authorization.k8s.io"]),
    ("RoleBinding", &["rbac.authorization.k8s.io"]),
    ("StorageClass", &["storage.k8s.io"]),
    ("VolumeAttachment", &["storage.k8s.io"]),
    ("CSIDriver", &["storage.k8s.io"]),
    ("PriorityClass", &["scheduling.k8s.io"]),
    (
        "MutatingWebhookConfiguration",
        &["admissionregistration.k8s.io"],
    ),
    (
        "ValidatingWebhookConfiguration",
        &["admissionregistration.k8s.io"],
    ),
    ("CustomResourceDefinition", &["apiextensions.k8s.io"]),
    ("APIService", &["apiregistration.k8s.io"]),
    ("Lease", &["coordination.k8s.io"]),
    ("CertificateSigningRequest", &["certificates.k8s.io"]),
    ("Application", &["argoproj.io"]),
    ("ApplicationSet", &["argoproj.io"]),
    ("AppProject", &["argoproj.io"]),
    ("Rollout", &["argoproj.io"]),
    ("ExternalSecret", &["external-secrets.io"]),
    ("SecretStore", &["external-secrets.io"]),
    ("ClusterSecretStore", &["external-secrets.io"]),
    ("SealedSecret", &["bitnami.com"]),
    ("Certificate", &["cert-manager.io"]),
    ("Issuer", &["cert-manager.io"]),
    ("ClusterIssuer", &["cert-manager.io"]),
    ("ServiceMonitor", &["monitoring.coreos.com"]),
    ("PrometheusRule", &["monitoring.coreos.com"]),
    ("PodMonitor", &["monitoring.coreos.com"]),
    ("ScaledObject", &["keda.sh"]),
    ("VirtualService", &["networking.istio.io"]),
    ("DestinationRule", &["networking.istio.io"]),
];

pub fn groups_of(kind: &str) -> Option<&'static [&'static str]> {
    KINDS.iter().find(|(k, _)| *k == kind).map(|(_, g)| *g)
}

/// Whether a value is a glob pattern (Argo CD matches group and kind with gobwas/glob).
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// A minimal glob match (`*`, `?`) for comparing a written group pattern with a real group.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Character classes and alternatives are rare here; treat them as matching anything.
    pattern.contains(['[', '{']) || go(&p, &t)
}

/// Kinds that live outside any namespace. Anything else, custom resources included, is taken
/// as namespaced, the assumption kustomize makes too.
pub fn is_cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace"
            | "Node"
            | "PersistentVolume"
            | "StorageClass"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "CustomResourceDefinition"
            | "APIService"
            | "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "PriorityClass"
            | "IngressClass"
            | "RuntimeClass"
            | "CSIDriver"
            | "CSINode"
            | "VolumeAttachment"
            | "CertificateSigningRequest"
            | "PodSecurityPolicy"
            | "ComponentStatus"
            | "FlowSchema"
            | "PriorityLevelConfiguration"
            | "ClusterIssuer"
            | "ClusterSecretStore"
            | "ClusterExternalSecret"
    )
}
