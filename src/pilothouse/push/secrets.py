"""Secret changes as push keys: which SDS secrets of which proxies a change replaces.

A secret change is pushed like an endpoint change, without a new PushContext: a
non-full :class:`~pilothouse.push.request.PushRequest` whose ``configs_updated`` names
the secrets (reason ``secret``, as istiod's ``kind.Secret`` keys). Two kinds of key:

- :func:`secret_key` (kind ``Secret``): a secret every proxy holding it by that name
  gets again, ``ROOTCA`` or a credential ``kubernetes://<name>`` (``-cacert``);
- :func:`workload_certificate_key` (kind ``WorkloadCertificate``): the ``default``
  secret of the proxies whose stream was authenticated as that identity (a new
  certificate was issued for it).

:func:`secret_names` reads such keys for one proxy: the SDS names it must be sent
again. Anything else in the keys (services, configs) is not a secret and is ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final

from pilothouse.config.model import ConfigKey
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.security.identity import SpiffeId

SECRET_KIND: Final = "Secret"
WORKLOAD_CERTIFICATE_KIND: Final = "WorkloadCertificate"
WORKLOAD_SECRET: Final = "default"
"""The SDS name of a workload's own key and certificate chain."""
SECRET_KINDS: Final = frozenset({SECRET_KIND, WORKLOAD_CERTIFICATE_KIND})


def secret_key(name: str) -> ConfigKey:
    """The key of SDS secret ``name`` (``ROOTCA``, ``kubernetes://<name>``...)."""
    return ConfigKey(SECRET_KIND, "", name)


def workload_certificate_key(identity: SpiffeId) -> ConfigKey:
    """The key of the ``default`` secret of the proxies authenticated as ``identity``."""
    return ConfigKey(WORKLOAD_CERTIFICATE_KIND, "", identity.uri)


def secrets_request(keys: Iterable[ConfigKey], start: float) -> PushRequest:
    """The push for changed secrets: not full (no new PushContext), reason ``secret``."""
    return PushRequest.for_configs(keys, TriggerReason.SECRET, start=start, full=False)


@functools.lru_cache(maxsize=64)
def secret_keys(keys: frozenset[ConfigKey]) -> frozenset[ConfigKey]:
    """The secret keys among ``keys``.

    Remembered for the last few key sets: a push asks once per connection with the same
    request's keys (an endpoint push may name thousands of services), and only the
    first of those walks them."""
    return frozenset(key for key in keys if key.kind in SECRET_KINDS)


def has_secrets(keys: frozenset[ConfigKey]) -> bool:
    return bool(secret_keys(keys))


def secret_names(keys: frozenset[ConfigKey], proxy: ProxyIdentity) -> frozenset[str]:
    """The SDS names among ``keys`` that ``proxy`` may hold and must be sent again.

    A proxy without an authenticated caller is sent no secret, so it holds none.
    """
    caller = proxy.caller
    if caller is None:
        return frozenset()
    names: set[str] = set()
    for key in secret_keys(keys):
        if key.kind == SECRET_KIND:
            names.add(key.name)
        elif key.kind == WORKLOAD_CERTIFICATE_KIND and key.name == caller.primary.uri:
            names.add(WORKLOAD_SECRET)
    return frozenset(names)
