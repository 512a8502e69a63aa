"""Generated protobuf modules for k8s.gateway (from proto/, do not edit)."""
