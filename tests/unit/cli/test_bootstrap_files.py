"""Every file ``pilothouse bootstrap`` names is checked before anything is printed.

A missing, unreadable, empty or wrong file (no PEM block of its kind, or one that does
not parse) behind any file flag is a usage error (exit 2) naming the flag and the path,
never a bootstrap Envoy fails on later.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e.harness.cli_in_process import run_cli

NODE = "sidecar~127.0.0.1~ratings-v1.shop~shop.svc.cluster.local"
BAD_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
BAD_KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


def certificate_and_key() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), pem_key.decode()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    cert, key = certificate_and_key()
    made = {"root": cert, "cert": cert, "key": key, "token": "a.b.c\n", "empty": "", "text": "x"}
    made |= {"bad-cert": BAD_CERT, "bad-key": BAD_KEY}
    for name, text in made.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in made}


def bootstrap(*args: str) -> tuple[int, str, str]:
    done = run_cli("bootstrap", "--node", NODE, *args)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("flag", "others"),
    [
        ("--xds-tls-root", ()),
        ("--xds-tls-cert", ("--xds-tls-key", "key")),
        ("--xds-tls-key", ("--xds-tls-cert", "cert")),
        ("--xds-token-file", ()),
        ("--config", ()),
        ("--mesh", ()),
    ],
)
def test_a_missing_file_is_a_usage_error_naming_flag_and_path(
    files: dict[str, str], flag: str, others: tuple[str, ...]
) -> None:
    extra = [files.get(o, o) for o in others]
    root = [] if flag == "--xds-tls-root" else ["--xds-tls-root", files["root"]]
    if flag in ("--config", "--mesh"):
        root = []
    code, out, err = bootstrap(*root, *extra, flag, "/nonexistent")
    assert code == 2 and out == ""
    assert f"{flag} /nonexistent" in err
    assert "No such file or directory" in err or "no such" in err.lower()


@pytest.mark.parametrize(
    ("flag", "given", "says"),
    [
        ("--xds-tls-root", "text", "no PEM certificate"),
        ("--xds-tls-root", "bad-cert", "the PEM certificate does not parse"),
        ("--xds-tls-root", "empty", "the file is empty"),
        ("--xds-token-file", "empty", "the file is empty"),
    ],
)
def test_a_file_holding_the_wrong_thing_is_refused(
    files: dict[str, str], flag: str, given: str, says: str
) -> None:
    root = [] if flag == "--xds-tls-root" else ["--xds-tls-root", files["root"]]
    code, out, err = bootstrap(*root, flag, files[given])
    assert code == 2 and out == ""
    assert f"{flag} {files[given]}: {says}" in err


def test_a_client_key_that_is_no_key_is_refused(files: dict[str, str]) -> None:
    given = ("--xds-tls-root", files["root"], "--xds-tls-cert", files["cert"])
    code, _, err = bootstrap(*given, "--xds-tls-key", files["cert"])
    assert code == 2 and "no PEM private key" in err
    code, _, err = bootstrap(*given, "--xds-tls-key", files["bad-key"])
    assert code == 2 and f"--xds-tls-key {files['bad-key']}: the PEM key does not parse" in err


def test_good_files_give_a_bootstrap(files: dict[str, str]) -> None:
    code, out, err = bootstrap("--xds-tls-root", files["root"], "--xds-token-file", files["token"])
    assert code == 0, err
    assert "Bearer a.b.c" in out


def test_a_tls_sidecar_not_labelled_for_mutual_tls_gets_a_note(files: dict[str, str]) -> None:
    tls = ("--xds-tls-root", files["root"], "--xds-token-file", files["token"])
    _, _, err = bootstrap(*tls)
    assert "security.istio.io/tlsMode: istio" in err
    _, _, err = bootstrap(*tls, "--label", "security.istio.io/tlsMode=istio")
    assert err == ""
    _, _, err = bootstrap()  # plaintext: no certificate, nothing to say
    assert err == ""
