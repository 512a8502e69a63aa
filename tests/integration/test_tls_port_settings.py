"""The TLS port off means no CA at all; a CA directory that cannot be used stops serve
with a message naming the file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pilothouse.cli.serve import Bound, serve
from pilothouse.settings import AdminSettings, CaSettings, ControlZSettings, Settings, XdsSettings


def settings(tmp_path: Path, tls_address: str) -> Settings:
    return Settings(
        config_dirs=(tmp_path / "mesh",),
        xds=XdsSettings(address="127.0.0.1:0", tls_address=tls_address),
        admin=AdminSettings(address="127.0.0.1:0"),
        ctrlz=ControlZSettings(address="off"),
        ca=CaSettings(dir=str(tmp_path / "ca")),
        drain_seconds=0.1,
    )


async def test_no_tls_port_no_ca(tmp_path: Path) -> None:
    (tmp_path / "mesh").mkdir()
    stop = asyncio.Event()
    bound: list[Bound] = []
    task = asyncio.create_task(serve(settings(tmp_path, ""), stop, bound.append))
    try:
        async with asyncio.timeout(10):
            while not bound:
                await asyncio.sleep(0.01)
        assert bound[0].xds_tls_port == 0
        assert not (tmp_path / "ca").exists()
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_an_unusable_ca_directory_stops_serve(tmp_path: Path) -> None:
    (tmp_path / "mesh").mkdir()
    (tmp_path / "ca").mkdir()
    (tmp_path / "ca" / "cert-chain.pem").write_text("")  # plugged-in, but the rest is missing
    with pytest.raises(SystemExit, match=r"CA: .*lacks ca-cert\.pem, ca-key\.pem"):
        await serve(settings(tmp_path, "127.0.0.1:0"), asyncio.Event())
