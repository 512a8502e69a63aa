"""Generated protobuf modules for istio (from proto/, do not edit)."""
