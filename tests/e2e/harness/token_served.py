"""``pilothouse serve`` over the example mesh with its TLS port, trusting the tokens of a
fresh issuer: what the TLS-port tests start (each with its own extra settings)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

from tests.e2e.harness.serve_process import ServeProcess
from tests.unit.security.tokens import Issuer

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@contextlib.asynccontextmanager
async def served_with_issuer(
    tmp_path: Path,
    environment: Mapping[str, str] | None = None,
    *,
    started: Callable[[ServeProcess], None] | None = None,
) -> AsyncIterator[tuple[ServeProcess, Issuer]]:
    """A ready ``serve`` on ports of its choosing (info logs in ``tmp_path``) whose TLS
    port accepts the issuer's tokens; ``started`` runs on the process before it is
    waited for (to lower its limits, say). Stopped on exit."""
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    process = ServeProcess(
        [EXAMPLES],
        xds_port=0,
        admin_port=0,
        log_path=tmp_path / "serve.log",
        log_level="info",
        environment={
            "PILOTHOUSE_AUTH_JWT_ISSUERS": f"{issuer.name}={jwks}",
            # these tests' Envoys have no node agent: the server makes their keys
            "PILOTHOUSE_SDS_SERVER_KEYS": "true",
            **(environment or {}),
        },
    )
    process.start()
    try:
        if started is not None:
            started(process)
        await process.wait_listening()
        await process.wait_ready()
        assert process.xds_tls_port, process.log_tail()
        yield process, issuer
    finally:
        await process.stop()
