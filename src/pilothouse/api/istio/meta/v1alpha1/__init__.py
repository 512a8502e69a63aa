"""Generated protobuf modules for istio.meta.v1alpha1 (from proto/, do not edit)."""
