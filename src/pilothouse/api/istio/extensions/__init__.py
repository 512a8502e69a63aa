"""Generated protobuf modules for istio.extensions (from proto/, do not edit)."""
