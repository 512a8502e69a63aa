"""Generated protobuf modules for istio.telemetry.v1alpha1 (from proto/, do not edit)."""
