//! Which objects kustomize's `namespace` leaves alone. kustomize does not know what a cluster
//! is made of: an object is cluster-scoped only when its exact apiVersion and kind are listed as
//! cluster-scoped in its built-in OpenAPI data (`kyaml/openapi/openapi.go`,
//! `precomputedIsNamespaceScoped`, read through `IsCertainlyClusterScoped`, kustomize v5.5.0).
//! Every other object, a cluster-scoped custom kind (ClusterIssuer, ClusterSecretStore) or a
//! built-in kind at a version the table does not list among them, is given the namespace.

/// The (apiVersion, kind) pairs kustomize v5.5.0 holds cluster-scoped.
#[rustfmt::skip]
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("apiregistration.k8s.io/v1beta1", "APIService"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration"),
    ("networking.k8s.io/v1", "IngressClass"),
    ("networking.k8s.io/v1beta1", "IngressClass"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("node.k8s.io/v1beta1", "RuntimeClass"),
    ("policy/v1beta1", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1beta1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.k8s.io/v1beta1", "PriorityClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("storage.k8s.io/v1beta1", "CSIDriver"),
    ("storage.k8s.io/v1beta1", "CSINode"),
    ("storage.k8s.io/v1beta1", "StorageClass"),
    ("storage.k8s.io/v1beta1", "VolumeAttachment"),
    ("v1", "ComponentStatus"),
    ("v1", "Namespace"),
    ("v1", "Node"),
    ("v1", "NodeProxyOptions"),
    ("v1", "PersistentVolume"),
];

/// Whether kustomize leaves the object's `metadata.namespace` alone.
pub(super) fn certainly_cluster_scoped(api_version: &str, kind: &str) -> bool {
    CLUSTER_SCOPED
        .iter()
        .any(|(a, k)| *a == api_version && *k == kind)
}

#[cfg(test)]
mod tests {
    use super::certainly_cluster_scoped;

    #[test]
    fn the_version_counts() {
        assert!(certainly_cluster_scoped(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole"
        ));
        assert!(!certainly_cluster_scoped(
            "rbac.authorization.k8s.io/v1alpha1",
            "ClusterRole"
        ));
        assert!(!certainly_cluster_scoped(
            "cert-manager.io/v1",
            "ClusterIssuer"
        ));
        assert!(!certainly_cluster_scoped(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy"
        ));
    }
}
