"""Generated protobuf modules for istio.networking.v1alpha3 (from proto/, do not edit)."""
