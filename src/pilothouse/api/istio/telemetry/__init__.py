"""Generated protobuf modules for istio.telemetry (from proto/, do not edit)."""
