"""``pilothouse workload entry configure``: for a WorkloadGroup, the files a workload outside
Kubernetes needs (the mesh's root, a token the TLS port trusts, its WorkloadEntry, the
agent's command) and the exact agent command as the next step; every bad input an error
naming it, with nothing written."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import jwt
import pytest
import yaml

from pilothouse.cli import agent
from pilothouse.cli.main import build_parser
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.security.identity import SpiffeId
from pilothouse.security.jwt_authn import JwtAuthenticator
from pilothouse.security.local_issuer import LocalIssuerKeys
from tests.e2e.harness.cli_in_process import Ran, run_cli

GROUPS = """\
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: ratings, namespace: shop}
spec:
  metadata:
    labels: {app: ratings, version: v1}
    annotations: {proxy.istio.io/config: '{"concurrency": 1}'}
  template: {serviceAccount: ratings, ports: {http: 9081}, network: vm-net}
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: legacy, namespace: shop}
spec:
  metadata: {labels: {app: legacy}}
  template: {labels: {security.istio.io/tlsMode: disabled}}
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "groups.yaml").write_text(GROUPS)
    return tmp_path


def configure(*args: str) -> Ran:
    return run_cli("workload", "entry", "configure", "--issuer-dir", "issuer", *args)


def shell_words(text: str) -> list[str]:
    """What a shell makes of ``text``'s words (a backslash-newline continues the line)."""
    return shlex.split(text.replace("\\\n", " "))


def printed_command(out: str) -> list[str]:
    return shell_words(out[out.index("pilothouse agent") :])


def test_a_group_gives_root_token_entry_and_the_agent_command(work: Path) -> None:
    done = configure("-f", "groups.yaml", "--name", "ratings", "--address", "10.0.0.7",
                     "-o", "vm/ratings", "--token-duration", "90m", "--admin-port", "15100",
                     "--status-port", "15120", "--xds-address", "10.0.0.1:15012")  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = work / "vm" / "ratings"
    ca_root = Path(os.environ["PILOTHOUSE_CA_DIR"]) / "root-cert.pem"
    assert (out / "root-cert.pem").read_bytes() == ca_root.read_bytes()
    assert stat.S_IMODE((out / "istio-token").stat().st_mode) == 0o600

    # the token: what the TLS port, trusting the issuer directory, takes for the account
    token = (out / "istio-token").read_text().strip()
    trusting = JwtAuthenticator({}, ("istio-ca",), "cluster.local", LocalIssuerKeys(Path("issuer")))
    assert trusting.identity(token) == SpiffeId("cluster.local", "shop", "ratings")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == "istio-ca" and claims["exp"] - claims["iat"] == 5400

    # the entry: the template, the address, the labels and tlsMode; valid as written
    text = (out / "workloadentry.yaml").read_text()
    assert yaml.safe_load(text) == {
        "apiVersion": "networking.istio.io/v1",
        "kind": "WorkloadEntry",
        "metadata": {"name": "ratings-10-0-0-7", "namespace": "shop"},
        "spec": {
            "address": "10.0.0.7",
            "ports": {"http": 9081},
            "network": "vm-net",
            "serviceAccount": "ratings",
            "labels": {"app": "ratings", "security.istio.io/tlsMode": "istio", "version": "v1"},
        },
    }
    loaded = Loader(SCHEMAS, source="test").load_bytes(text.encode(), "workloadentry.yaml")
    assert not loaded.problems and [c.kind for c in loaded.configs] == ["WorkloadEntry"]

    # the next step: the agent command, as agent.sh runs it, that builds this workload's agent
    words = printed_command(done.stdout)
    script = (out / "agent.sh").read_text()
    assert script.startswith("#!/bin/sh\nexec pilothouse agent ")
    assert shell_words(script.split("exec ", 1)[1])[:-1] == words  # and "$@"
    assert os.access(out / "agent.sh", os.X_OK)
    assert "WorkloadEntry shop/ratings-10-0-0-7" in done.stdout
    args = build_parser().parse_args(words[1:])
    assert args.node == "sidecar~10.0.0.7~ratings-10-0-0-7.shop~shop.svc.cluster.local"
    assert args.token == "vm/ratings/istio-token" and args.root_cert == "vm/ratings/root-cert.pem"
    assert args.label == ["app=ratings", "security.istio.io/tlsMode=istio", "version=v1"]
    assert args.annotation == ['proxy.istio.io/config={"concurrency": 1}']
    assert (args.admin_port, args.status_port) == (15100, 15120)
    assert args.xds_address == ["10.0.0.1:15012"]
    built = agent.build(args)
    assert str(built.options.identity) == "spiffe://cluster.local/ns/shop/sa/ratings"
    assert built.options.sds_socket == (out / "sds").absolute()


def test_a_template_tls_mode_is_kept_and_a_group_can_be_made_from_a_name(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = configure("-f", ".", "--name", "legacy", "--address", "10.0.0.8", "-o", "legacy")
    assert done.returncode == 0, done.stderr
    spec = yaml.safe_load((work / "legacy" / "workloadentry.yaml").read_text())["spec"]
    assert spec["labels"]["security.istio.io/tlsMode"] == "disabled"
    assert spec["serviceAccount"] == "default"

    done = configure("--name", "reviews", "-n", "books", "--service-account", "bookinfo-reviews",
                     "--address", "fd00::5", "-o", "reviews")  # fmt: skip
    assert done.returncode == 0, done.stderr
    entry = yaml.safe_load((work / "reviews" / "workloadentry.yaml").read_text())
    assert entry["metadata"] == {"name": "reviews-fd00--5", "namespace": "books"}
    assert entry["spec"]["labels"] == {"app": "reviews", "security.istio.io/tlsMode": "istio"}
    words = printed_command(done.stdout)
    assert words[words.index("--service-account") + 1] == "bookinfo-reviews"
    assert words[words.index("--xds-address") + 1] == "127.0.0.1:15012"  # the default
    assert "--local-issuer-dir issuer" in done.stderr  # not the directory serve trusts
    monkeypatch.setenv("PILOTHOUSE_AUTH_LOCAL_ISSUER_DIR", "issuer")  # now it is
    done = configure("--name", "reviews", "--address", "10.0.0.9", "-o", "again")
    assert done.returncode == 0 and done.stderr == ""


def test_a_group_is_read_from_a_config_source_as_serve_reads_one(work: Path) -> None:
    (work / "store").mkdir()
    (work / "store" / "groups.yaml").write_text(GROUPS)
    source = f"fs://{work / 'store'}"
    done = configure("--config-source", source, "--name", "ratings", "-n", "shop",
                     "--address", "10.0.0.7", "-o", "out")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ratings-10-0-0-7" in (work / "out" / "workloadentry.yaml").read_text()
    done = configure("--config-source", f"fs://{work / 'gone'}", "--name", "ratings",
                     "--address", "10.0.0.7", "-o", "none")  # fmt: skip
    assert done.returncode == 1 and str(work / "gone") in done.stderr
    assert not (work / "none").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-f", "groups.yaml", "--name", "reviews"],
         "no WorkloadGroup reviews in groups.yaml (WorkloadGroups there: shop/legacy, "
         "shop/ratings)"),
        (["-f", "groups.yaml", "-n", "other"],
         "no WorkloadGroup in namespace other in groups.yaml"),
        (["-f", "groups.yaml"],
         "2 WorkloadGroups in groups.yaml (shop/legacy, shop/ratings): say which with --name"),
        (["-f", "missing.yaml", "--name", "ratings"], "-f missing.yaml: No such file"),
        ([], "give the WorkloadGroup: -f FILE, --config-source ADDRESS, or --name"),
        (["--name", "ratings", "--address", "ratings.vm"],
         "--address 'ratings.vm': not an IP address"),
        (["--name", "ratings", "--ca-dir", "nowhere"],
         "CA root nowhere/root-cert.pem: No such file or directory (pilothouse serve makes "
         "its CA in nowhere on its first start"),
        (["--name", "ratings", "--ca-dir", "bad-ca"],
         "CA root bad-ca/root-cert.pem: the PEM certificate does not parse"),
        (["--name", "ratings", "-o", "groups.yaml"],
         "-o groups.yaml: exists and is not a directory"),
        (["--name", "ratings", "--token-duration", "forever"], "--token-duration forever:"),
        (["--name", "Ratings"],
         "the WorkloadEntry for Ratings would not validate: metadata.name 'Ratings-10-0-0-7' "
         "must be a lowercase RFC 1123 subdomain"),
    ],
)  # fmt: skip
def test_bad_input_is_an_error_naming_it_and_nothing_is_written(
    work: Path, args: list[str], says: str
) -> None:
    (work / "bad-ca").mkdir()
    (work / "bad-ca" / "root-cert.pem").write_text(
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    )
    given = {"--address": "10.0.0.7", "-o": "out"}
    for flag, value in given.items():
        if flag not in args:
            args = [*args, flag, value]
    done = configure(*args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("pilothouse workload entry configure: ")
    assert says in done.stderr
    assert not (work / "out").exists()
