"""Generated protobuf modules for istio.mesh.v1alpha1 (from proto/, do not edit)."""
