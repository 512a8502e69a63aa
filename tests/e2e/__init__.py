"""End-to-end tests: real Envoy, real gRPC xDS clients and real local upstreams."""
