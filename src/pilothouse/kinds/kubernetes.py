"""Plain Kubernetes kinds found beside Istio config in manifests, and not served.

A mesh's files often hold the Deployments, ConfigMaps and Namespaces of the same
application. ``validate`` counts them as skipped instead of failing, as it does any
object outside Istio's API groups (the sources and ``apply`` still reject them: they
store Istio config only). ``Pod`` keys also name a
sidecar's own Pod in the push that completes it again (:mod:`pilothouse.push.pod_sidecars`,
sent to that sidecar alone). The Kubernetes ``Service`` has its own module
(:mod:`pilothouse.kinds.service`): the registry's services are named by its keys.
"""

from __future__ import annotations

from pilothouse.config.schema import PlainKind
from pilothouse.kinds.kind import Kind


def _plain(kind: str, *api_versions: str) -> Kind:
    return Kind(name=kind, plain=PlainKind(kind, api_versions))


KINDS: tuple[Kind, ...] = (
    _plain("Namespace", "v1"),
    _plain("Pod", "v1"),
    _plain("ConfigMap", "v1"),
    _plain("Secret", "v1"),
    _plain("ServiceAccount", "v1"),
    _plain("Endpoints", "v1"),
    _plain("PersistentVolumeClaim", "v1"),
    _plain("Deployment", "apps/v1"),
    _plain("StatefulSet", "apps/v1"),
    _plain("DaemonSet", "apps/v1"),
    _plain("ReplicaSet", "apps/v1"),
    _plain("Job", "batch/v1"),
    _plain("CronJob", "batch/v1"),
    _plain("EndpointSlice", "discovery.k8s.io/v1"),
    _plain("Ingress", "networking.k8s.io/v1"),
    _plain("NetworkPolicy", "networking.k8s.io/v1"),
    _plain("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaling/v1"),
    _plain("PodDisruptionBudget", "policy/v1"),
    _plain("Role", "rbac.authorization.k8s.io/v1"),
    _plain("RoleBinding", "rbac.authorization.k8s.io/v1"),
    _plain("ClusterRole", "rbac.authorization.k8s.io/v1"),
    _plain("ClusterRoleBinding", "rbac.authorization.k8s.io/v1"),
)
"""Kubernetes kinds a manifest may hold beside Istio config (each: its apiVersions)."""
