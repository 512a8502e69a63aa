"""The Kubernetes service registry: Services, EndpointSlices, Pods, Nodes and Namespaces
read through informers into registry services and endpoints."""
