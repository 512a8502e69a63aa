"""istioctl's and kubectl's habits in the debug commands, without a server: the ``ps`` and
``pc`` aliases, ``--admin`` that takes one address (repeatable, or ``A,B``) and leaves
the proxy name alone, ``-n`` completing a pod name, ``--version``, ``proxy-config``'s
filters, and the secret table read from an Envoy config dump (certificates made here);
kubectl's label selectors and kind lists of the store commands."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pilothouse import __version__
from pilothouse.cli.config_filters import ConfigFilter
from pilothouse.cli.label_selector import BadSelector, parse_selector
from pilothouse.cli.main import build_parser
from pilothouse.cli.proxy_status import admin_urls, in_namespace, proxy_name
from pilothouse.cli.secret_table import SECRETS, secret_rows, secrets_of
from pilothouse.kinds.names import UnknownKind, resolve_kinds
from pilothouse.kinds.table import SCHEMAS

REVIEWS = "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"


def test_aliases_and_admin_addresses_that_do_not_swallow_the_proxy() -> None:
    parse = build_parser().parse_args
    args = parse(["ps", "--admin", "a:1", "productpage-v1", "-n", "bookinfo"])
    assert (args.proxy, args.admin, args.namespace) == ("productpage-v1", ["a:1"], "bookinfo")
    args = parse(["pc", "cluster", "--admin", "a:1", "p.ns", "--admin", "b:2,c:3"])
    assert (args.kind, args.proxy) == ("cluster", "p.ns")
    assert admin_urls(args.admin) == ["http://a:1", "http://b:2", "http://c:3"]
    assert parse(["proxy-status", "-n", "bookinfo"]).namespace == "bookinfo"
    args = parse(["inspect", "p", "-n", "ns", "--admin", "a:1", "--admin", "b:2"])
    assert (args.proxy, args.namespace, args.admin) == ("p", "ns", ["a:1", "b:2"])


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == f"pilothouse {__version__}\n"


def test_namespace_completes_a_pod_name_and_selects_entries() -> None:
    assert proxy_name("productpage-v1", "bookinfo") == "productpage-v1.bookinfo"
    assert proxy_name("productpage-v1.bookinfo", "other") == "productpage-v1.bookinfo"
    assert proxy_name("sidecar~1.2.3.4~p.ns~ns.svc.cluster.local", "x").startswith("sidecar~")
    assert proxy_name("p", None) == "p"
    assert in_namespace({"proxy": "a.b", "namespace": "bookinfo"}, "bookinfo")
    assert in_namespace({"proxy": "a.bookinfo"}, "bookinfo")  # istiod's entries: by name
    assert not in_namespace({"proxy": "a.bookinfo", "namespace": "default"}, "bookinfo")


def test_filters_keep_what_istioctls_keep() -> None:
    ratings = "outbound|9080||ratings.bookinfo.svc.cluster.local"
    clusters = [{"name": n} for n in (REVIEWS, "inbound|9080||", "BlackHoleCluster", ratings)]
    assert ConfigFilter().clusters(clusters) == clusters and not ConfigFilter()
    assert ConfigFilter(fqdn="reviews").clusters(clusters) == [{"name": REVIEWS}]
    assert ConfigFilter(subset="v3", port=9080).clusters(clusters) == [{"name": REVIEWS}]
    assert ConfigFilter(direction="inbound").clusters(clusters) == [{"name": "inbound|9080||"}]
    assert ConfigFilter(fqdn="BlackHole").clusters(clusters) == [{"name": "BlackHoleCluster"}]
    assert ConfigFilter(port=1).clusters(clusters) == []
    listeners = [{"address": {"socket_address": {"address": "0.0.0.0", "port_value": p}}}
                 for p in (8080, 9080)]  # fmt: skip
    assert ConfigFilter(port=9080).listeners(listeners) == listeners[1:]

    def endpoint(port: int) -> dict[str, object]:
        return {"endpoint": {"address": {"socket_address": {"address": "a", "port_value": port}}}}

    assignments = [
        {"cluster_name": REVIEWS, "endpoints": [{"lb_endpoints": [endpoint(1), endpoint(2)]}]},
        {"cluster_name": "outbound|80||x.ns", "endpoints": [{"lb_endpoints": [endpoint(2)]}]},
    ]
    assert ConfigFilter(port=2, fqdn="reviews").endpoints(assignments) == [
        {"cluster_name": REVIEWS, "endpoints": [{"lb_endpoints": [endpoint(2)]}]}
    ]
    assert ConfigFilter(port=3).endpoints(assignments) == []


def certificate(serial: int, before: datetime.datetime, after: datetime.datetime) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
    made = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(serial)
        .not_valid_before(before).not_valid_after(after)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return made.public_bytes(serialization.Encoding.PEM)


def test_secret_table_from_an_envoy_dump() -> None:
    now = datetime.datetime(2026, 11, 29, 6, 0, tzinfo=datetime.UTC)
    hour = datetime.timedelta(hours=1)
    chain = base64.b64encode(certificate(0xABC, now - hour, now + hour)).decode()
    roots = certificate(0x123, now - 48 * hour, now - 24 * hour).decode()  # expired
    dump = {
        "configs": [
            {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"},
            {
                "@type": SECRETS,
                "dynamic_active_secrets": [
                    {"name": "default", "secret": {"name": "default", "tls_certificate": {
                        "certificate_chain": {"inline_bytes": chain},
                        "private_key": {"inline_bytes": "W3JlZGFjdGVkXQ=="}}}},
                    {"name": "ROOTCA", "secret": {"name": "ROOTCA", "validation_context": {
                        "trusted_ca": {"inline_string": roots}}}},
                ],
                "dynamic_warming_secrets": [{"name": "kubernetes://db", "secret": {}}],
            },
        ]
    }  # fmt: skip
    header, rows = secret_rows(secrets_of(dump), now)
    assert header == ["RESOURCE NAME", "TYPE", "STATUS", "VALID CERT", "SERIAL NUMBER",
                      "NOT AFTER", "NOT BEFORE"]  # fmt: skip
    assert rows == [
        ["ROOTCA", "CA", "ACTIVE", "false", "123", "2026-11-28T06:00:00Z", "2026-11-27T06:00:00Z"],
        ["default", "Cert Chain", "ACTIVE", "true", "abc", "2026-11-29T07:00:00Z",
         "2026-11-29T05:00:00Z"],
        ["kubernetes://db", "-", "WARMING", "false", "-", "-", "-"],
    ]  # fmt: skip


def test_label_selectors_read_as_kubectl_does() -> None:
    labels = {"app": "reviews", "version": "v2"}
    assert parse_selector(None).matches(labels) and parse_selector("").matches({})
    for holds in ("app=reviews", "app==reviews", "app!=ratings", "app", "!canary",
                  "version in (v1, v2)", "version notin (v3),app", "tier!=web"):  # fmt: skip
        assert parse_selector(holds).matches(labels), holds
    for fails in ("app=ratings", "!app", "version in (v1)", "app,canary", "version notin (v2)"):
        assert not parse_selector(fails).matches(labels), fails
    for bad, said in (("=x", "cannot read '=x'"), ("a in ()", "lists no values"),
                      ("a b", "cannot read 'a b'")):  # fmt: skip
        with pytest.raises(BadSelector, match=said):
            parse_selector(bad)


def test_kinds_are_named_by_their_short_names_in_lists_with_a_hint() -> None:
    assert [s.kind for s in resolve_kinds("vs,dr,ef,se,gw,pa,ra,ap,we,wg,vs", SCHEMAS)] == [
        "VirtualService", "DestinationRule", "EnvoyFilter", "ServiceEntry", "Gateway",
        "PeerAuthentication", "RequestAuthentication", "AuthorizationPolicy",
        "WorkloadEntry", "WorkloadGroup",
    ]  # fmt: skip
    with pytest.raises(UnknownKind, match=r"\"destinationrul\" \(did you mean 'destinationrule'"):
        resolve_kinds("vs,destinationrul", SCHEMAS)
