"""The service registry: services and endpoints from ServiceEntry and WorkloadEntry, and from
a Kubernetes cluster's Services, EndpointSlices and Pods (``registry.kubernetes``)."""
