"""Tests of the generated Istio API modules (pilothouse.api)."""
