"""Generated protobuf modules for istio.meta (from proto/, do not edit)."""
