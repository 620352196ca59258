//! The API groups of well-known kinds, for checks that compare a written group with the real
//! one. Kinds not listed here are never judged.

/// `(kind, groups it is served from)`; `""` is the core group. The first group is the one
/// Kubernetes (or the project that owns the name) serves; the ones after it belong to custom
/// resources of well-known projects that reuse the name (Knative's `Service`, KubeVela's
/// `Application`, OpenKruise's `StatefulSet`, `DaemonSet` and `Rollout`, Volcano's `Job`), so a
/// kind with more than one group here has no single answer.
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
    ("Service", &["", "serving.knative.dev"]),
    ("ServiceAccount", &[""]),
    ("ControllerRevision", &["apps"]),
    ("DaemonSet", &["apps", "apps.kruise.io"]),
    ("Deployment", &["apps"]),
    ("ReplicaSet", &["apps"]),
    ("StatefulSet", &["apps", "apps.kruise.io"]),
    ("CronJob", &["batch"]),
    ("Job", &["batch", "batch.volcano.sh"]),
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
    ("Application", &["argoproj.io", "core.oam.dev"]),
    ("ApplicationSet", &["argoproj.io"]),
    ("AppProject", &["argoproj.io"]),
    ("Rollout", &["argoproj.io", "rollouts.kruise.io"]),
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

/// API groups no Kubernetes release that Argo CD supports serves any more, with the release
/// that dropped their last kind. A custom resource cannot take them over: a CRD's group must
/// contain a dot.
pub static DEAD_GROUPS: &[(&str, &str)] = &[(
    "extensions",
    "Deployments, DaemonSets, ReplicaSets, NetworkPolicies and PodSecurityPolicies left it in Kubernetes 1.16, Ingresses in 1.22",
)];

/// Whether `s` is an API version (`v1`, `v2beta2`, `v1alpha1`) rather than a group.
pub fn is_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    let level = tail
        .strip_prefix("alpha")
        .or_else(|| tail.strip_prefix("beta"));
    match level {
        None => tail.is_empty(),
        Some(n) => !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0'),
    }
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

#[cfg(test)]
mod tests {
    use super::is_version;

    #[test]
    fn versions_are_told_from_groups() {
        for v in ["v1", "v2", "v1beta1", "v2beta2", "v1alpha1", "v10"] {
            assert!(is_version(v), "{v}");
        }
        for g in [
            "",
            "apps",
            "v",
            "v0",
            "v1beta",
            "v1gamma1",
            "vault.io",
            "v1.example.com",
            "v01",
        ] {
            assert!(!is_version(g), "{g}");
        }
    }
}
