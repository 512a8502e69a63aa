"""The files a bootstrap names, checked before it is printed.

Envoy reads the TLS files of the ``xds-grpc`` cluster only when it starts, and then says
little more than that the cluster cannot be built; a bootstrap naming a file that is not
there, cannot be read or holds something else (no PEM block of the kind, or one that does
not parse) is refused here instead, with the flag and the path (``--xds-tls-root
/nonexistent: No such file or directory``). ``workload entry configure`` checks the CA's
root the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from cryptography import x509
from cryptography.hazmat.primitives import serialization

FileKind = Literal["certificate", "key", "token"]

_MARKERS: Final[dict[str, tuple[str, str]]] = {
    "certificate": ("-----BEGIN CERTIFICATE-----", "no PEM certificate in it"),
    "key": ("PRIVATE KEY-----", "no PEM private key in it"),
}


def checked_file(path: str, flag: str, kind: FileKind) -> str:
    """The text of the file ``flag`` names; ValueError saying what is wrong with it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as problem:
        raise ValueError(f"{flag} {path}: {problem.strerror or problem}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{flag} {path}: not a text file") from None
    if not text.strip():
        raise ValueError(f"{flag} {path}: the file is empty")
    marker = _MARKERS.get(kind)
    if marker is not None and marker[0] not in text:
        raise ValueError(f"{flag} {path}: {marker[1]}")
    try:
        if kind == "certificate":
            x509.load_pem_x509_certificates(text.encode())
        elif kind == "key":
            serialization.load_pem_private_key(text.encode(), None)
    except (ValueError, TypeError) as problem:
        raise ValueError(f"{flag} {path}: the PEM {kind} does not parse ({problem})") from None
    return text
