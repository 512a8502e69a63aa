"""Proxyless gRPC apps (clients, xDS-enabled servers) and backends for the e2e tests."""
