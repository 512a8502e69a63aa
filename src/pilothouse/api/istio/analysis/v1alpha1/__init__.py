"""Generated protobuf modules for istio.analysis.v1alpha1 (from proto/, do not edit)."""
