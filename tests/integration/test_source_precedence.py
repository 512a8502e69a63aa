"""Two config sources holding the same object: the source listed first wins.

Uses the same source construction as ``pilothouse serve`` (``config_sources``) over two
real directories, watched for real; the documented rule (``docs/guides/configuration.md``,
"Several sources") is that the earlier source wins and the later copy takes over if the
first goes away.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pilothouse.cli.config_sources import config_sources
from pilothouse.config.model import ConfigKey
from pilothouse.settings import Settings
from pilothouse.sources.aggregate import AggregateStore

GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {{name: shared, namespace: edge}}
spec:
  servers: [{{port: {{number: {port}, name: http, protocol: HTTP}}, hosts: ["*"]}}]
"""
KEY = ConfigKey("Gateway", "edge", "shared")


def port_of(store: AggregateStore) -> int | None:
    config = store.get(KEY)
    return None if config is None else int(config.spec.servers[0].port.number)  # type: ignore[attr-defined]


async def test_first_source_wins_and_the_second_takes_over(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "gw.yaml").write_text(GATEWAY.format(port=1001))
    (second / "gw.yaml").write_text(GATEWAY.format(port=2002))
    settings = Settings(
        config_dirs=(first,), config_sources=(f"fs://{second}",), file_debounce=0.05
    )
    sources = config_sources(settings)
    assert [s.name for s in sources] == [f"fs://{first.resolve()}", f"fs://{second.resolve()}"]
    store = AggregateStore([s.store for s in sources])
    tasks = [asyncio.create_task(s.run()) for s in sources]
    try:
        while not store.has_synced():
            await asyncio.sleep(0.01)
        assert port_of(store) == 1001
        assert store.conflicts() == {KEY: [sources[0].name, sources[1].name]}

        (second / "gw.yaml").write_text(GATEWAY.format(port=2003))  # shadowed: no effect
        await asyncio.sleep(0.5)
        assert port_of(store) == 1001

        (first / "gw.yaml").unlink()
        deadline = time.monotonic() + 5
        while port_of(store) != 2003:
            assert time.monotonic() < deadline, "the second source never took over"
            await asyncio.sleep(0.02)
    finally:
        for source in sources:
            source.close()
        await asyncio.gather(*tasks, return_exceptions=True)
