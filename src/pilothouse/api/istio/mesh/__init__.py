"""Generated protobuf modules for istio.mesh (from proto/, do not edit)."""
