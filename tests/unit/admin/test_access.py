"""AccessPolicy: loopback clients only (unless allowed), local Host names, no cross-site writes."""

from __future__ import annotations

from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from pilothouse.admin.access import AccessPolicy, is_loopback
from pilothouse.boundary.host_names import ServerNames


def request(
    method: str = "GET",
    *,
    peer: str = "127.0.0.1",
    host: str = "127.0.0.1:15014",
    origin: str | None = None,
) -> web.Request:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 40000) if name == "peername" else default
    )
    headers = {"Host": host}
    if origin is not None:
        headers["Origin"] = origin
    return make_mocked_request(method, "/admin/knobs", headers=headers, transport=transport)


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True),
     ("10.0.0.1", False), ("::ffff:10.0.0.1", False), ("fe80::1%eth0", False), ("", False),
     (None, False), ("not an address", False)],
)  # fmt: skip
def test_is_loopback(address: str | None, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_loopback_clients_pass_and_others_are_told_how_to_open_it() -> None:
    policy = AccessPolicy()
    assert policy.refusal(request()) is None
    assert policy.refusal(request(peer="::1", host="[::1]:15014")) is None
    refused = policy.refusal(request(peer="10.1.2.3"))
    assert refused == (
        "/admin/knobs answers only clients on this host; 10.1.2.3 is not "
        "(set PILOTHOUSE_ADMIN_ALLOW_REMOTE=true to allow it)"
    )
    assert AccessPolicy(allow_remote=True).refusal(request(peer="10.1.2.3")) is None


def test_a_host_name_that_is_not_this_hosts_is_refused_as_dns_rebinding() -> None:
    refused = AccessPolicy().refusal(request(host="attacker.example:15014"))
    assert refused is not None and "DNS rebinding" in refused
    assert AccessPolicy().refusal(request(host="localhost:15014")) is None
    # opening the admin API to other hosts does not open it to other web pages
    remote = AccessPolicy(allow_remote=True)
    refused = remote.refusal(request(peer="10.1.2.3", host="istiod.istio-system:15014"))
    assert refused is not None and "PILOTHOUSE_ADMIN_HOST_NAMES" in refused
    named = AccessPolicy(
        allow_remote=True, names=ServerNames.of_this_host(extra=["istiod.istio-system"])
    )
    assert named.refusal(request(peer="10.1.2.3", host="istiod.istio-system:15014")) is None


@pytest.mark.parametrize("allow_remote", [False, True])
def test_cross_site_writes_are_refused_and_same_origin_ones_pass(allow_remote: bool) -> None:
    policy = AccessPolicy(allow_remote=allow_remote)
    same = request("PUT", host="127.0.0.1:9876", origin="http://127.0.0.1:9876")
    assert policy.refusal(same) is None
    assert policy.refusal(request("POST")) is None, "curl sends no Origin"
    for origin in ("http://evil.example", "http://127.0.0.1:9999", "null", "garbage"):
        refused = policy.refusal(request("POST", host="127.0.0.1:9876", origin=origin))
        assert refused is not None and refused.startswith("cross-site request refused"), origin
    # reading is not a change: the browser keeps another site from reading the answer
    assert policy.refusal(request("GET", origin="http://evil.example")) is None
