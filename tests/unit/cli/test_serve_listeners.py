"""The rule ``serve`` opens and closes its ports by (:class:`Listeners`): a start call
is all or nothing, and stopping (after a failed start or at shutdown) drains the xDS
ports together before stopping the rest, newest first. Fake listeners record what
happens to them: the rule is about order, not sockets (the real ports are covered by
the serve process tests). A real gRPC server on a taken port says so in plain words."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from pilothouse.addresses import parse_host_port
from pilothouse.cli.serve_listen import bind_problem
from pilothouse.cli.serve_listeners import CannotListen, Listeners, XdsListener


class Recorded:
    """A listener that logs ``start``/``stop`` calls into a shared journal."""

    def __init__(
        self,
        name: str,
        journal: list[str],
        *,
        port: int = 1,
        drains: bool = False,
        fails: bool = False,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.name = name
        self.drains = drains
        self._journal = journal
        self._port = port
        self._fails = fails
        self._gate = gate

    async def start(self) -> int:
        self._journal.append(f"start {self.name}")
        if self._fails:
            raise CannotListen(f"pilothouse: cannot listen on {self.name}: taken")
        return self._port

    async def stop(self, grace: float) -> None:
        self._journal.append(f"stop {self.name} grace={grace:g}")
        if self._gate is not None:  # a draining port waits for its streams
            await self._gate.wait()
            self._journal.append(f"drained {self.name}")


async def test_a_failed_start_stops_what_that_call_started_newest_first_and_exits() -> None:
    journal: list[str] = []
    listeners = Listeners()
    with pytest.raises(SystemExit) as exit_:
        await listeners.start(
            Recorded("xds", journal, drains=True),
            Recorded("admin", journal),
            Recorded("webhook", journal, fails=True),
            Recorded("ctrlz", journal),
        )
    assert str(exit_.value) == "pilothouse: cannot listen on webhook: taken"
    assert journal == [
        "start xds",
        "start admin",
        "start webhook",  # failed: it released what it had itself
        "stop xds grace=0",  # the one shutdown path: xDS ports first, then the rest
        "stop admin grace=0",
    ]  # ControlZ, after it, never started
    assert listeners.started == ()


async def test_a_later_failed_start_leaves_earlier_listeners_to_the_shutdown_path() -> None:
    journal: list[str] = []
    listeners = Listeners()
    ports = await listeners.start(
        Recorded("xds", journal, port=15010, drains=True), Recorded("admin", journal, port=8080)
    )
    assert ports == {"xds": 15010, "admin": 8080}
    with pytest.raises(SystemExit, match="cannot listen on xds-tls"):
        await listeners.start(Recorded("xds-tls", journal, drains=True, fails=True))
    assert [entry for entry in journal if entry.startswith("stop")] == []
    assert [listener.name for listener in listeners.started] == ["xds", "admin"]

    await listeners.stop(5)
    assert journal[-2:] == ["stop xds grace=5", "stop admin grace=0"]


async def test_shutdown_drains_xds_ports_together_then_stops_the_rest_newest_first() -> None:
    journal: list[str] = []
    streams_gone = asyncio.Event()
    listeners = Listeners()
    await listeners.start(
        Recorded("xds", journal, drains=True, gate=streams_gone),
        Recorded("admin", journal),
        Recorded("webhook", journal),
        Recorded("ctrlz", journal),
    )
    await listeners.start(Recorded("xds-tls", journal, drains=True, gate=streams_gone))
    del journal[:]

    stopping = asyncio.create_task(listeners.stop(3))
    await asyncio.sleep(0.05)
    # both xDS ports drain at once; admin (/ready, /metrics) still answers meanwhile
    assert journal == ["stop xds-tls grace=3", "stop xds grace=3"]
    streams_gone.set()
    await stopping
    assert journal[2:] == [
        "drained xds-tls",
        "drained xds",
        "stop ctrlz grace=0",
        "stop webhook grace=0",
        "stop admin grace=0",
    ]

    await listeners.stop(3)  # a second shutdown stops nothing twice
    assert len(journal) == 7


async def test_an_xds_port_in_use_is_named_as_such_with_its_address() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    address = f"127.0.0.1:{taken.getsockname()[1]}"
    parsed = parse_host_port(address, "--xds-address")
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    try:
        listener = XdsListener(server, parsed, address, discovery=None)  # type: ignore[arg-type]
        with pytest.raises(CannotListen) as refused:
            await listener.start()  # fails before it would tell discovery its port
        said = str(refused.value)
        assert said == f"pilothouse: cannot listen on {address}: address already in use"
        assert bind_problem(parsed) == "address already in use"
    finally:
        taken.close()
        await server.stop(None)
    assert bind_problem(parsed) == ""  # free again
