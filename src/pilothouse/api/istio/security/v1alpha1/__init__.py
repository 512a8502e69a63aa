"""Generated protobuf modules for istio.security.v1alpha1 (from proto/, do not edit)."""
