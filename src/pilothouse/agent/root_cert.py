"""The root the agent trusts pilothouse with, waited for when the agent starts.

The root file (``--root-cert``, or ``rootCert`` in node mode) is often mounted or copied
in by something else, so the agent waits for it: until it exists and holds at least one
PEM certificate that parses. It says why it waits once (and again only when the reason
changes), and gives up after ``--root-cert-timeout`` seconds (0: waits forever, as
istio-agent does) with :class:`RootCertUnusable` naming the file and what is wrong with
it; the command then exits 1 with that one line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from cryptography import x509

log = logging.getLogger("pilothouse.agent")

TIMEOUT: Final = 60.0
"""Seconds the agent waits for its root by default."""
POLL: Final = 0.25
"""Seconds between two looks at the file."""
PEM_CERTIFICATE: Final = b"-----BEGIN CERTIFICATE-----"


class RootCertUnusable(Exception):
    """The root file was still missing or unusable when the wait ended."""


def root_problem(path: Path) -> str | None:
    """What keeps ``path`` from being a root (missing, unreadable, no PEM certificate, a
    certificate that does not parse), or None when it is one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "no such file"
    except OSError as problem:
        return f"cannot be read ({problem.strerror or problem})"
    if PEM_CERTIFICATE not in data:
        return "holds no PEM certificate" if data.strip() else "is empty"
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError as problem:
        return f"a certificate in it does not parse ({str(problem).splitlines()[0]})"
    return None


async def wait_for_root(
    path: Path,
    timeout: float,
    *,
    poll: float = POLL,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once ``path`` is a root; RootCertUnusable when it is not after ``timeout``
    seconds (0 or less: wait forever)."""
    deadline = clock() + timeout if timeout > 0 else None
    told: str | None = None
    while (problem := root_problem(path)) is not None:
        if deadline is not None and clock() >= deadline:
            raise RootCertUnusable(
                f"root certificate {path}: {problem} (waited {timeout:g} s, --root-cert-timeout)"
            )
        if problem != told:
            limit = f"up to {timeout:g} s" if deadline is not None else "with no time limit"
            log.warning("waiting %s for the root certificate %s: %s", limit, path, problem)
            told = problem
        pause = poll if deadline is None else max(0.0, min(poll, deadline - clock()))
        await asyncio.sleep(pause)
    if told is not None:
        log.info("root certificate %s is there; starting", path)
