"""Generated protobuf modules for istio.type.v1beta1 (from proto/, do not edit)."""
