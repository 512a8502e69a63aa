"""Generated protobuf modules for k8s (from proto/, do not edit)."""
