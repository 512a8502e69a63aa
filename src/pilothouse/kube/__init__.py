"""Kubernetes: Istio config and the service registry read from a Kubernetes API server."""
