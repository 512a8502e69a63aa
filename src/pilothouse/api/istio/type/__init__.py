"""Generated protobuf modules for istio.type (from proto/, do not edit)."""
