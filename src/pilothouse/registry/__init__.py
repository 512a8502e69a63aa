"""The service registry: services and endpoints from ServiceEntry and WorkloadEntry."""
