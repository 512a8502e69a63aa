"""Generated protobuf modules for k8s.gateway.v1 (from proto/, do not edit)."""
