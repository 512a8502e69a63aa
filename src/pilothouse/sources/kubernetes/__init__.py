"""Reading a Kubernetes API server: the client, informers, the ``k8s://`` custom-resource
source and the mesh config from the ``istio`` ConfigMap."""
