"""Test harness for real peers: Envoy processes, local upstreams, an HTTP client, ports, TLS.

Each module holds one idea; import from the module (``tests.e2e.harness.envoy``) rather
than from this package.
"""
