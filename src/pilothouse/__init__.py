"""pilothouse: a service-mesh control plane that reads Istio config and serves xDS and MCP."""

__version__ = "0.1.0"
