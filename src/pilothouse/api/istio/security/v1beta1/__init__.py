"""Generated protobuf modules for istio.security.v1beta1 (from proto/, do not edit)."""
