"""Generated protobuf modules for istio.networking (from proto/, do not edit)."""
