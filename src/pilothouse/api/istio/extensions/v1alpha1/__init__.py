"""Generated protobuf modules for istio.extensions.v1alpha1 (from proto/, do not edit)."""
