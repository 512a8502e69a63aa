"""Telemetry providers exist in the mesh config (IST0101), and an access-logging entry
with no provider has a default to fall back on (IST0157 InvalidTelemetryProvider).

A provider is named in ``tracing``, ``metrics`` and ``accessLogging``; the mesh config's
``extensionProviders`` and the built-in ``envoy``, ``prometheus`` and ``stackdriver``
define them. Both checks need the mesh config in force, so they run in ``serve`` (and
``analyze --admin``) and not over files alone, where the mesh config is not known.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    INVALID_TELEMETRY_PROVIDER,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    did_you_mean,
)

SECTIONS = (("tracing", "tracing"), ("metrics", "metrics"), ("access_logging", "accessLogging"))
"""The spec's lists that name providers: (proto field, field as written)."""


def analyze(view: MeshView) -> Iterator[Message]:
    if not view.mesh_known:
        return
    telemetry = view.mesh.telemetry
    known = sorted({provider.name for provider in telemetry.providers})
    for config in view.of_kind("Telemetry"):
        spec: Any = config.spec
        for field, written in SECTIONS:
            for index, entry in enumerate(getattr(spec, field)):
                for at, provider in enumerate(entry.providers):
                    if telemetry.provider(provider.name) is None:
                        close = difflib.get_close_matches(provider.name, known, n=1)
                        yield about(
                            config, REFERENCED_RESOURCE_NOT_FOUND, "provider", provider.name,
                            hint=did_you_mean(close),
                            path=f"spec.{written}[{index}].providers[{at}].name",
                        )  # fmt: skip
        if not telemetry.default_logging:
            for index, entry in enumerate(spec.access_logging):
                disabled = entry.HasField("disabled") and entry.disabled.value
                if not entry.providers and not disabled:
                    yield about(
                        config, INVALID_TELEMETRY_PROVIDER, config.name, config.namespace,
                        path=f"spec.accessLogging[{index}]",
                    )  # fmt: skip
