"""Generated protobuf modules for istio.mcp.v1alpha1 (from proto/, do not edit)."""
