"""The ``k8s://`` config source against the fake API server (a fake: no real API server
can run here).

Istio custom resources in every version users write reach the source's store, validated
by the loader; an invalid one is skipped with a log line naming it; a kind whose CRD is
missing or forbidden does not stop the others; selectors limit what is read;
``--write-status`` puts validation messages in the objects' status, and nothing is
written without it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pilothouse.admin.debug_views import sources_view
from pilothouse.backoff import Backoff
from pilothouse.config.model import ConfigKey
from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import AddressError, build_source, parse_address
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from tests.kube.fake_apiserver import FakeApiServer

VS = "virtualservices.networking.istio.io"
DR = "destinationrules.networking.istio.io"


def obj(kind: str, name: str, namespace: str, spec: dict[str, Any], *, version: str = "v1",
        group: str = "networking.istio.io", **labels: str) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": f"{group}/{version}",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def vs(name: str, namespace: str = "default", host: str = "reviews", **kw: Any) -> dict[str, Any]:
    route = {"route": [{"destination": {"host": host}}]}
    return obj("VirtualService", name, namespace, {"hosts": [host], "http": [route]}, **kw)


def dr(name: str, namespace: str = "default", host: str = "reviews", **kw: Any) -> dict[str, Any]:
    return obj("DestinationRule", name, namespace, {"host": host}, **kw)


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token="t0ken", bookmark_interval=0.5) as server:
        yield server


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


class Running:
    def __init__(self, source: KubeConfigSource) -> None:
        self.source = source
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> KubeConfigSource:
        self.task = asyncio.create_task(self.source.run())
        await until(self.source.has_synced)
        return self.source

    async def __aexit__(self, *_exc: object) -> None:
        self.source.close()
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)


def source(api: FakeApiServer, tmp_path: Path, address: str = "k8s://",
           write_status: bool = False) -> KubeConfigSource:  # fmt: skip
    kube = KubeSettings(str(api.kubeconfig(tmp_path / "kubeconfig")), write_status)
    built = build_source(address, kube=kube)
    assert isinstance(built, KubeConfigSource)
    built._backoff = Backoff(0.05, 0.2)
    built._absent_retry = 0.2
    return built


def names(found: KubeConfigSource, kind: str) -> list[str]:
    return [f"{c.namespace}/{c.name}" for c in found.store.configs(kind)]


async def test_every_version_users_write_arrives_and_follows_changes(
    api: FakeApiServer, tmp_path: Path
) -> None:
    api.create(vs("as-v1"))
    api.create(vs("as-v1beta1", version="v1beta1"))
    api.create(vs("as-v1alpha3", "other", version="v1alpha3"))
    api.create(dr("reviews"))
    strict = {"mtls": {"mode": "STRICT"}}
    security = {"group": "security.istio.io", "version": "v1beta1"}
    api.create(obj("PeerAuthentication", "strict", "istio-system", strict, **security))
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "VirtualService") == [
            "default/as-v1",
            "default/as-v1beta1",
            "other/as-v1alpha3",
        ]
        assert names(found, "DestinationRule") == ["default/reviews"]
        assert names(found, "PeerAuthentication") == ["istio-system/strict"]
        config = found.store.get(ConfigKey("VirtualService", "default", "as-v1beta1"))
        assert config is not None and list(config.spec.hosts) == ["reviews"]  # type: ignore[attr-defined]
        assert config.origin.source == "k8s://"
        api.apply(vs("as-v1", host="ratings"))
        api.delete(VS, "other", "as-v1alpha3")
        await until(
            lambda: names(found, "VirtualService") == ["default/as-v1", "default/as-v1beta1"]
        )

        def hosts() -> list[str]:
            config = found.store.get(ConfigKey("VirtualService", "default", "as-v1"))
            return list(config.spec.hosts) if config is not None else []  # type: ignore[attr-defined]

        await until(lambda: hosts() == ["ratings"])
    # Nothing was written: only reads reached the API server.
    assert {r.method for r in api.requests} == {"GET"}


async def test_an_invalid_object_is_skipped_with_a_line_naming_it(
    api: FakeApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = vs("broken")
    bad["spec"]["http"][0]["route"][0]["weight"] = -5
    api.create(bad)
    api.create(vs("good"))
    with caplog.at_level(logging.WARNING, "pilothouse.sources.kubernetes"):
        async with Running(source(api, tmp_path)) as found:
            assert names(found, "VirtualService") == ["default/good"]
            problems = found.problems()[ConfigKey("VirtualService", "default", "broken")]
            assert problems
            assert found.config_errors() == 1
            (view,) = sources_view([found])
            assert [p["text"] for p in view["problems"]] == [str(p) for p in problems]
            assert "VirtualService default/broken" in view["problems"][0]["text"]
            # A later invalid edit of a good object keeps its last good version.
            worse = vs("good", host="ratings")
            worse["spec"]["http"][0]["route"][0]["weight"] = -1
            api.apply(worse)
            await until(lambda: ConfigKey("VirtualService", "default", "good") in found.problems())
            kept = found.store.get(ConfigKey("VirtualService", "default", "good"))
            assert kept is not None and list(kept.spec.hosts) == ["reviews"]  # type: ignore[attr-defined]
    lines = [r.getMessage() for r in caplog.records]
    assert any("VirtualService default/broken" in line and "weight" in line for line in lines), (
        lines
    )
    assert any("VirtualService default/good" in line and "last good" in line for line in lines), (
        lines
    )


@pytest.mark.parametrize("refusal", ["uninstalled", "forbidden"])
async def test_a_missing_or_forbidden_kind_does_not_stop_the_others(
    api: FakeApiServer, tmp_path: Path, refusal: str, caplog: pytest.LogCaptureFixture
) -> None:
    api.create(vs("reviews"))
    api.create(dr("reviews"))
    if refusal == "uninstalled":
        api.uninstall(DR)
    else:
        api.forbid(DR)
    with caplog.at_level(logging.WARNING, "pilothouse.sources.kubernetes"):
        async with Running(source(api, tmp_path)) as found:
            assert names(found, "VirtualService") == ["default/reviews"]
            assert names(found, "DestinationRule") == []
            reason = "404 NotFound" if refusal == "uninstalled" else "403 Forbidden"
            assert found.unread() == {DR: reason}
            (view,) = sources_view([found])
            assert view["unread"] == {DR: reason} and view["synced"] is True
            api.create(vs("later"))
            await until(lambda: len(names(found, "VirtualService")) == 2)
            # When the CRD appears (or the permission is granted), its objects follow.
            if refusal == "uninstalled":
                api.install(DR)
                api.create(dr("reviews"))
            else:
                api.allow(DR)
            await until(lambda: names(found, "DestinationRule") == ["default/reviews"])
    assert any(DR in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_an_older_crd_is_read_at_a_version_it_serves(
    api: FakeApiServer, tmp_path: Path
) -> None:
    api.create(vs("old", version="v1alpha3"))
    api.serve_versions(VS, "v1alpha3")
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "VirtualService") == ["default/old"]
    assert any("/networking.istio.io/v1alpha3/virtualservices" in r.path for r in api.requests)


async def test_namespace_and_label_selectors(api: FakeApiServer, tmp_path: Path) -> None:
    api.create(vs("mine", "team", team="payments"))
    api.create(vs("theirs", "team", team="search"))
    api.create(vs("elsewhere", "default", team="payments"))
    address = "k8s://?namespace=team&labelSelector=team%3Dpayments"
    assert str(parse_address(address)) == address
    async with Running(source(api, tmp_path, address)) as found:
        assert names(found, "VirtualService") == ["team/mine"]
    # every kind at its newest served version (v1; EnvoyFilter v1alpha3, ProxyConfig
    # v1beta1), always in the namespace
    assert all(re.match(r"/apis/(networking|security)\.istio\.io/v1\w*/namespaces/team/",
                        r.path) for r in api.requests)  # fmt: skip


def test_k8s_addresses_refuse_what_they_cannot_mean(tmp_path: Path) -> None:
    for address, words in [
        ("k8s://cluster:6443", "names no host"),
        ("k8s://?ns=a", "unknown parameter"),
        ("k8s://?namespace=Team", "namespace"),
        ("k8s://?labelSelector=a%3D%3D%3Db", "label selector"),
        ("k8s://?namespace=a&namespace=b", "twice"),
    ]:
        with pytest.raises(AddressError, match=words):
            parse_address(address)
    with pytest.raises(AddressError, match="no cluster to read"):
        build_source("k8s://", kube=KubeSettings())
    with pytest.raises(AddressError, match="/nonexistent"):
        build_source("k8s://", kube=KubeSettings("/nonexistent/kubeconfig"))
    (tmp_path / "empty").write_text("kind: Config\n")
    with pytest.raises(AddressError, match="not a kubeconfig"):
        build_source("k8s://", kube=KubeSettings(str(tmp_path / "empty")))


async def test_write_status_records_validation_messages(api: FakeApiServer, tmp_path: Path) -> None:
    bad = vs("broken")
    bad["spec"]["http"][0]["route"][0]["weight"] = -5
    api.create(bad)
    api.create(vs("good"))
    async with Running(source(api, tmp_path, write_status=True)):

        def status(name: str) -> dict[str, Any]:
            found = api.get(VS, "default", name)
            assert found is not None
            return dict(found.get("status") or {})

        await until(lambda: bool(status("broken").get("validationMessages")))
        messages = status("broken")["validationMessages"]
        assert messages[0]["type"] == {"name": "SchemaValidationError", "code": "IST0106"}
        assert messages[0]["level"] == "ERROR"
        assert "weight" in messages[0]["message"]
        assert status("broken")["observedGeneration"] == 1
        assert status("good") == {}
        # Fixed, the messages go away.
        api.apply(vs("broken"))
        await until(lambda: "validationMessages" not in status("broken"))
        writes = [r for r in api.requests if r.method != "GET"]
        assert writes and all(r.path.endswith("/status") for r in writes)
