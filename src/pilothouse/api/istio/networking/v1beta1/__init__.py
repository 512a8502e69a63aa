"""Generated protobuf modules for istio.networking.v1beta1 (from proto/, do not edit)."""
