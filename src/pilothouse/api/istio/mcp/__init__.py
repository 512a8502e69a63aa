"""Generated protobuf modules for istio.mcp (from proto/, do not edit)."""
