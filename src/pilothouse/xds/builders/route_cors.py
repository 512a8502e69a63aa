"""``CorsPolicy`` → the CORS filter's per-route ``CorsPolicy``, as istiod writes it.

- ``allow_origins`` (StringMatch list) → ``allow_origin_string_match``; the
  deprecated ``allow_origin`` strings are exact matches and count only when
  ``allow_origins`` is empty.
- ``allow_methods`` / ``allow_headers`` / ``expose_headers`` → comma-joined
  strings; ``max_age`` → whole seconds as a string; ``allow_credentials`` copied.
- ``filter_enabled`` is 100 %: a route with a policy always applies it.
- ``unmatched_preflights``: ``IGNORE`` → ``forward_not_matching_preflights:
  false``; anything else (``FORWARD``, unspecified) → ``true``, Envoy's behaviour
  before 1.30 that Istio keeps.
"""

from __future__ import annotations

from typing import Final

from envoy.extensions.filters.http.cors.v3 import cors_pb2  # type: ignore[import-untyped]
from envoy.type.matcher.v3 import string_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.route_fault import hundred_percent
from pilothouse.xds.builders.route_match import string_matcher

CORS_FILTER: Final = "envoy.filters.http.cors"


def cors_policy(policy: vs_pb2.CorsPolicy) -> cors_pb2.CorsPolicy:
    """The per-route CORS config for ``policy``."""
    out = cors_pb2.CorsPolicy()
    if len(policy.allow_origins) > 0:
        out.allow_origin_string_match.extend(
            string_matcher(origin) for origin in policy.allow_origins
        )
    else:
        out.allow_origin_string_match.extend(
            string_pb2.StringMatcher(exact=origin) for origin in policy.allow_origin
        )
    out.allow_methods = ",".join(policy.allow_methods)
    out.allow_headers = ",".join(policy.allow_headers)
    out.expose_headers = ",".join(policy.expose_headers)
    if policy.HasField("max_age"):
        out.max_age = str(policy.max_age.seconds)
    if policy.HasField("allow_credentials"):
        out.allow_credentials.value = policy.allow_credentials.value
    out.filter_enabled.default_value.CopyFrom(hundred_percent(100))
    out.forward_not_matching_preflights.value = (
        policy.unmatched_preflights != vs_pb2.CorsPolicy.IGNORE
    )
    return out
