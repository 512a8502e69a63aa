"""Telemetry: where it applies and what each access-logging, tracing and metrics entry
says, checked as istiod's ``ValidateTelemetry`` checks them.

A provider name is checked for its form by :func:`validate_telemetry` (not empty);
whether the mesh defines it is a question for the mesh config, which a kind's validator
is not given: :func:`check_telemetry_providers` answers it where a mesh config is at hand
(``pilothouse validate --mesh FILE``), and the effective telemetry
(:mod:`pilothouse.push.telemetry`) skips an unknown provider and ``/debug/telemetryz``
names it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pilothouse.api.istio.telemetry.v1alpha1.telemetry_pb2 import (
    AccessLogging,
    Metrics,
    ProviderRef,
    Telemetry,
    Tracing,
)
from pilothouse.config.telemetry_providers import (
    LOG_PROVIDERS,
    TRACING_PROVIDERS,
    MeshTelemetry,
    UnappliedProvider,
)
from pilothouse.config.validation.policy_target import check_policy_target
from pilothouse.config.validation.report import Report


def validate_telemetry(spec: Telemetry, report: Report) -> None:
    """The selector or targetRefs (never both), then each entry: a sampling percentage
    within 0–100, custom tags that say what their value is, provider names that are not
    empty, a filter expression that is not blank, a positive reporting interval."""
    check_policy_target(
        spec.selector if spec.HasField("selector") else None,
        spec.targetRef if spec.HasField("targetRef") else None,
        spec.targetRefs,
        report,
    )
    for index, tracing in enumerate(spec.tracing):
        _check_tracing(tracing, f"spec.tracing[{index}]", report)
    for index, metrics in enumerate(spec.metrics):
        _check_metrics(metrics, f"spec.metrics[{index}]", report)
    for index, logging in enumerate(spec.access_logging):
        _check_access_logging(logging, f"spec.accessLogging[{index}]", report)


def _check_providers(providers: Sequence[ProviderRef], path: str, report: Report) -> None:
    for index, provider in enumerate(providers):
        if not provider.name.strip():
            report.error(f"{path}.providers[{index}].name", "a provider needs a name")


def _check_tracing(tracing: Tracing, path: str, report: Report) -> None:
    _check_providers(tracing.providers, path, report)
    if len(tracing.providers) > 1:
        report.warn(
            f"{path}.providers",
            "only the first provider is used (one tracing provider per proxy)",
        )
    if tracing.HasField("random_sampling_percentage"):
        value = tracing.random_sampling_percentage.value
        if not 0.0 <= value <= 100.0:
            report.error(
                f"{path}.randomSamplingPercentage",
                f"{value:g} is not a percentage between 0 and 100",
            )
    for name in sorted(tracing.custom_tags):
        tag = tracing.custom_tags[name]
        where = f"{path}.customTags[{name}]"
        if not name:
            report.error(f"{path}.customTags", "a custom tag needs a name")
        kind = tag.WhichOneof("type")
        if kind is None:
            report.error(where, "one of literal, environment, header or formatter is required")
        elif kind == "literal" and not tag.literal.value:
            report.error(f"{where}.literal.value", "value is required")
        elif kind == "environment" and not tag.environment.name:
            report.error(f"{where}.environment.name", "name is required")
        elif kind == "header" and not tag.header.name:
            report.error(f"{where}.header.name", "name is required")
        elif kind == "formatter" and not tag.formatter.value:
            report.error(f"{where}.formatter.value", "value is required")


def _check_metrics(metrics: Metrics, path: str, report: Report) -> None:
    _check_providers(metrics.providers, path, report)
    if metrics.HasField("reporting_interval"):
        interval = metrics.reporting_interval.ToTimedelta().total_seconds()
        if interval <= 0:
            report.error(f"{path}.reportingInterval", "must be greater than 0s")
    for index, override in enumerate(metrics.overrides):
        where = f"{path}.overrides[{index}]"
        if override.match.WhichOneof("metric_match") == "custom_metric" and (
            not override.match.custom_metric.strip()
        ):
            report.error(f"{where}.match.customMetric", "must not be empty")
        for tag in sorted(override.tag_overrides):
            value = override.tag_overrides[tag]
            if not tag:
                report.error(f"{where}.tagOverrides", "a tag override needs a tag name")
            if value.operation == value.UPSERT and not value.value:
                report.error(
                    f"{where}.tagOverrides[{tag}].value", "UPSERT needs a value expression"
                )
            if value.operation == value.REMOVE and value.value:
                report.error(f"{where}.tagOverrides[{tag}].value", "REMOVE takes no value")


def _check_access_logging(logging: AccessLogging, path: str, report: Report) -> None:
    _check_providers(logging.providers, path, report)
    if logging.HasField("filter") and not logging.filter.expression.strip():
        report.error(f"{path}.filter.expression", "an access-log filter needs an expression")


def check_telemetry_providers(spec: Telemetry, mesh: MeshTelemetry, report: Report) -> None:
    """The providers ``spec`` names against the mesh config's: a name the mesh does not
    define, or a provider of another purpose (a tracer named for access logging), is an
    error naming the field; one pilothouse accepts and does not apply is a warning."""
    named: list[tuple[str, Sequence[ProviderRef], tuple[type, ...]]] = [
        *((f"accessLogging[{i}]", e.providers, LOG_PROVIDERS)
          for i, e in enumerate(spec.access_logging)),
        *((f"tracing[{i}]", e.providers, TRACING_PROVIDERS) for i, e in enumerate(spec.tracing)),
        *((f"metrics[{i}]", e.providers, ()) for i, e in enumerate(spec.metrics)),
    ]  # fmt: skip
    for where, providers, kinds in named:
        purpose = where.partition("[")[0]
        for position, ref in enumerate(providers):
            path = f"spec.{where}.providers[{position}].name"
            found = mesh.provider(ref.name)
            if not ref.name.strip():
                continue  # validate_telemetry says so
            if found is None:
                message = f"provider {ref.name!r} is not defined in the mesh config's"
                report.error(path, message + " extensionProviders")
            elif purpose == "metrics":
                continue  # metrics are accepted and not applied, whatever the provider
            elif isinstance(found, UnappliedProvider):
                message = f"provider {ref.name!r} ({found.type}): accepted; not applied"
                report.warn(path, message + " by pilothouse")
            elif not isinstance(found, kinds):
                report.error(path, f"provider {ref.name!r} cannot be used for {purpose}")
