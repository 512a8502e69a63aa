"""``HTTPRetry`` → Envoy ``RetryPolicy``, with istiod's defaults.

- No ``retries`` on the route: the mesh default policy, or istiod's built-in
  one: 2 retries on ``connect-failure,refused-stream,unavailable,cancelled,
  retriable-status-codes``, ``host_selection_retry_max_attempts: 5`` and the
  ``previous_hosts`` retry host predicate.
- ``attempts <= 0``: no retry policy at all (retries disabled).
- Otherwise the default with the user's fields laid over it: ``attempts`` →
  ``num_retries``; ``retry_on`` replaces the conditions, and any part that is an
  HTTP status code goes to ``retriable_status_codes`` (``retriable-status-codes``
  is added to ``retry_on`` when missing); ``per_try_timeout``; ``backoff`` →
  ``retry_back_off.base_interval``; ``retry_remote_localities: true`` →
  the ``previous_priorities`` retry priority (update frequency 2);
  ``retry_ignore_previous_hosts`` set explicitly keeps (true) or removes (false)
  the ``previous_hosts`` predicate.
- When the route's single destination uses consistent hashing the predicate is
  left out of the default (retrying on another host would defeat the hash).
"""

from __future__ import annotations

import http
import re
from typing import Final

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]
from envoy.extensions.retry.host.previous_hosts.v3 import (  # type: ignore[import-untyped]
    previous_hosts_pb2,
)
from envoy.extensions.retry.priority.previous_priorities.v3 import (  # type: ignore[import-untyped]
    previous_priorities_config_pb2,
)

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2

DEFAULT_RETRY_ON: Final = (
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
)
DEFAULT_NUM_RETRIES: Final = 2
HOST_SELECTION_RETRY_MAX_ATTEMPTS: Final = 5
PREVIOUS_HOSTS: Final = "envoy.retry_host_predicates.previous_hosts"
PREVIOUS_PRIORITIES: Final = "envoy.retry_priorities.previous_priorities"
PREVIOUS_PRIORITIES_UPDATE_FREQUENCY: Final = 2
RETRIABLE_STATUS_CODES: Final = "retriable-status-codes"

_STATUS_CODES: Final = frozenset(int(status) for status in http.HTTPStatus)
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")

RetryPolicy = rc_pb2.RetryPolicy


def default_retry_policy(*, consistent_hash: bool = False) -> rc_pb2.RetryPolicy:
    """istiod's retry policy for routes that set none."""
    policy = RetryPolicy(
        retry_on=DEFAULT_RETRY_ON,
        host_selection_retry_max_attempts=HOST_SELECTION_RETRY_MAX_ATTEMPTS,
    )
    policy.num_retries.value = DEFAULT_NUM_RETRIES
    if not consistent_hash:
        _add_previous_hosts(policy)
    return policy


def retry_policy(
    retries: vs_pb2.HTTPRetry | None, *, consistent_hash: bool = False
) -> rc_pb2.RetryPolicy | None:
    """The Envoy retry policy for a route's ``retries`` (``None`` = retries disabled)."""
    policy = default_retry_policy(consistent_hash=consistent_hash)
    if retries is None:
        return policy
    if retries.attempts <= 0:
        return None
    policy.num_retries.value = retries.attempts
    if retries.retry_on:
        conditions, codes = parse_retry_on(retries.retry_on)
        if codes and RETRIABLE_STATUS_CODES not in conditions:
            conditions = ",".join(part for part in (conditions, RETRIABLE_STATUS_CODES) if part)
        policy.retry_on = conditions
        policy.retriable_status_codes.extend(codes)
    if retries.HasField("per_try_timeout"):
        policy.per_try_timeout.CopyFrom(retries.per_try_timeout)
    if retries.HasField("retry_ignore_previous_hosts"):
        del policy.retry_host_predicate[:]
        if retries.retry_ignore_previous_hosts.value:
            _add_previous_hosts(policy)
    if retries.HasField("retry_remote_localities") and retries.retry_remote_localities.value:
        config = previous_priorities_config_pb2.PreviousPrioritiesConfig(
            update_frequency=PREVIOUS_PRIORITIES_UPDATE_FREQUENCY
        )
        policy.retry_priority.name = PREVIOUS_PRIORITIES
        policy.retry_priority.typed_config.Pack(config)
    if retries.HasField("backoff"):
        policy.retry_back_off.base_interval.CopyFrom(retries.backoff)
    return policy


def parse_retry_on(retry_on: str) -> tuple[str, list[int]]:
    """Split ``retry_on`` into Envoy conditions and HTTP status codes."""
    conditions: list[str] = []
    codes: list[int] = []
    for part in (piece.strip() for piece in retry_on.split(",")):
        if not part:
            continue
        if _INTEGER.fullmatch(part) and int(part) in _STATUS_CODES:
            codes.append(int(part))
        else:
            conditions.append(part)
    return ",".join(conditions), codes


def _add_previous_hosts(policy: rc_pb2.RetryPolicy) -> None:
    predicate = policy.retry_host_predicate.add(name=PREVIOUS_HOSTS)
    predicate.typed_config.Pack(previous_hosts_pb2.PreviousHostsPredicate())
