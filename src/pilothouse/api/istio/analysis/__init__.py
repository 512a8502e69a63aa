"""Generated protobuf modules for istio.analysis (from proto/, do not edit)."""
