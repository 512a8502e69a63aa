"""Generators: (proxy, scope, push context, watched names) → encoded resources, one per type URL."""
