"""Retries and fault injection on HTTP routes."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    HTTPFaultInjection,
    HTTPRetry,
)
from pilothouse.config.validation.quantities import (
    check_duration,
    check_fractional_percent,
    check_whole_percent,
)
from pilothouse.config.validation.report import Report

# Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on conditions.
RETRY_CONDITIONS = frozenset(
    {
        "5xx",
        "gateway-error",
        "reset",
        "reset-before-request",
        "connect-failure",
        "envoy-ratelimited",
        "retriable-4xx",
        "refused-stream",
        "retriable-status-codes",
        "retriable-headers",
        "http3-post-connect-failure",
        "cancelled",
        "deadline-exceeded",
        "internal",
        "resource-exhausted",
        "unavailable",
    }
)

GRPC_STATUS_NAMES = frozenset(
    {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    }
)


def check_http_status(status: int, path: str, report: Report) -> None:
    if not 200 <= status <= 599:
        report.error(path, f"HTTP status {status} must be in 200..599")


def check_retries(retries: HTTPRetry, path: str, report: Report) -> None:
    if retries.attempts < 0:
        report.error(f"{path}.attempts", f"attempts {retries.attempts} must not be negative")
    elif retries.attempts == 0 and (
        retries.HasField("per_try_timeout")
        or retries.retry_on
        or retries.HasField("retry_remote_localities")
    ):
        report.error(
            f"{path}.attempts",
            "retry settings are given but attempts is 0, which disables retries",
        )
    if retries.HasField("per_try_timeout"):
        check_duration(retries.per_try_timeout, f"{path}.perTryTimeout", report)
    if retries.HasField("backoff"):
        check_duration(retries.backoff, f"{path}.backoff", report)
    if retries.retry_on:
        for condition in retries.retry_on.split(","):
            condition = condition.strip()
            if condition in RETRY_CONDITIONS:
                continue
            if condition.isdigit() and 100 <= int(condition) <= 599:
                continue
            report.error(
                f"{path}.retryOn",
                f"{condition!r} is not an Envoy retry condition or an HTTP status code",
            )


def check_fault(fault: HTTPFaultInjection, path: str, report: Report) -> None:
    if not fault.HasField("delay") and not fault.HasField("abort"):
        report.error(path, "fault injection needs a delay, an abort, or both")
    if fault.HasField("delay"):
        _check_delay(fault, f"{path}.delay", report)
    if fault.HasField("abort"):
        _check_abort(fault, f"{path}.abort", report)


def _check_delay(fault: HTTPFaultInjection, path: str, report: Report) -> None:
    delay = fault.delay
    if delay.HasField("percentage"):
        check_fractional_percent(delay.percentage.value, f"{path}.percentage.value", report)
    if delay.percent:
        report.warn(f"{path}.percent", "percent is deprecated; use percentage")
        check_whole_percent(delay.percent, f"{path}.percent", report)
    kind = delay.WhichOneof("http_delay_type")
    if kind == "fixed_delay":
        check_duration(delay.fixed_delay, f"{path}.fixedDelay", report)
    elif kind == "exponential_delay":
        report.error(f"{path}.exponentialDelay", "exponentialDelay is not supported")
    else:
        report.warn(path, "delay without fixedDelay has no effect")


def _check_abort(fault: HTTPFaultInjection, path: str, report: Report) -> None:
    abort = fault.abort
    if abort.HasField("percentage"):
        check_fractional_percent(abort.percentage.value, f"{path}.percentage.value", report)
    kind = abort.WhichOneof("error_type")
    if kind == "http_status":
        check_http_status(abort.http_status, f"{path}.httpStatus", report)
    elif kind == "grpc_status":
        if abort.grpc_status not in GRPC_STATUS_NAMES:
            report.error(
                f"{path}.grpcStatus",
                f"gRPC status {abort.grpc_status!r} is not a gRPC status code name such as "
                "UNAVAILABLE",
            )
    elif kind == "http2_error":
        report.error(f"{path}.http2Error", "HTTP/2 error aborts are not supported")
    else:
        report.warn(path, "abort without httpStatus or grpcStatus has no effect")
