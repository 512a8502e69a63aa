"""Generated protobuf modules for istio.security (from proto/, do not edit)."""
