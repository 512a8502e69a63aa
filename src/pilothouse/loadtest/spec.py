"""What a load run does: the scenario, the fleet, the trigger and the limits, as one value.

``LoadSpec`` is built (and validated) by ``pilothouse loadtest`` from its flags,
handed to every worker process as JSON, and read back unchanged.  ``fleet_slices``
splits the fleet over the processes; ``slice_identities`` gives each process its
own proxies, numbered so that together they are one fleet of distinct nodes.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any, Final

from pilothouse.loadtest.fleet import fleet_identities
from pilothouse.loadtest.identity import ProxyFlavour, ProxyNode
from pilothouse.loadtest.plans import ALL_TYPES

APP: Final = "loadtest"
"""The app label (and pod name prefix) of every simulated proxy."""


class Scenario(enum.Enum):
    """What the run measures."""

    CONNECT = "connect"
    """Every proxy connects at once (or over ``ramp``); time until each has converged."""
    PUSH = "push"
    """Converge, then ``repeat`` times: fire the trigger, time until every proxy has it."""
    CHURN = "churn"
    """Converge, then fire the trigger at ``rate`` per second for ``duration`` seconds."""


@dataclass(frozen=True)
class Trigger:
    """How a change is made: a shell command, or a file written with some text.

    In ``content``, ``{n}`` becomes the change's number (from 1); the command gets
    it as ``PILOTHOUSE_LOADTEST_CHANGE``.
    """

    command: str | None = None
    file: str | None = None
    content: str = ""

    @property
    def given(self) -> bool:
        return self.command is not None or self.file is not None

    def describe(self) -> str:
        if self.command is not None:
            return f"command {self.command!r}"
        if self.file is not None:
            return f"write {self.file}"
        return "none"


@dataclass(frozen=True)
class LoadSpec:
    """One load run, as the flags gave it (validated by the CLI)."""

    server: str
    """The ADS server's address, or its replicas' separated by commas."""
    proxies: int = 100
    processes: int = 1
    delta: bool = False
    flavour: ProxyFlavour = ProxyFlavour.SIDECAR
    targets: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ("default",)
    scenario: Scenario = Scenario.CONNECT
    ramp: float = 0.0
    timeout: float = 30.0
    """Longest wait for convergence: at the start and after each change."""
    duration: float = 30.0
    """``churn``: how long changes are made."""
    rate: float = 1.0
    """``churn``: changes per second."""
    repeat: int = 1
    """``push``: how many changes."""
    quiet: float = 0.5
    """``push`` and ``churn``: seconds the fleet must see nothing before a change goes (the
    previous push over)."""
    trigger: Trigger = Trigger()
    streams_per_connection: int = 100
    types: tuple[str, ...] = tuple(sorted(ALL_TYPES))
    """The xDS type URLs every proxy asks for (``--types``; default all four)."""

    @property
    def type_set(self) -> frozenset[str]:
        return frozenset(self.types)

    @property
    def servers(self) -> tuple[str, ...]:
        """The server's addresses (one, or its replicas')."""
        return tuple(self.server.split(","))

    @property
    def transport(self) -> str:
        return "delta" if self.delta else "SotW"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["flavour"] = self.flavour.value
        data["scenario"] = self.scenario.value
        data["targets"] = list(self.targets)
        data["namespaces"] = list(self.namespaces)
        data["types"] = list(self.types)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoadSpec:
        fields = dict(data)
        fields["flavour"] = ProxyFlavour(fields["flavour"])
        fields["scenario"] = Scenario(fields["scenario"])
        fields["targets"] = tuple(fields["targets"])
        fields["namespaces"] = tuple(fields["namespaces"])
        if "types" in fields:
            fields["types"] = tuple(fields["types"])
        fields["trigger"] = Trigger(**fields["trigger"])
        return cls(**fields)


@dataclass(frozen=True)
class FleetSlice:
    """The proxies one process runs: ``count`` of them, numbered from ``first``."""

    index: int
    first: int
    count: int


def fleet_slices(proxies: int, processes: int) -> list[FleetSlice]:
    """Split ``proxies`` over ``processes`` as evenly as possible (the first get one more)."""
    if processes < 1 or proxies < processes:
        raise ValueError(f"cannot split {proxies} proxies over {processes} processes")
    base, extra = divmod(proxies, processes)
    shares = []
    first = 0
    for index in range(processes):
        count = base + (1 if index < extra else 0)
        shares.append(FleetSlice(index, first, count))
        first += count
    return shares


def slice_identities(spec: LoadSpec, part: FleetSlice) -> list[ProxyNode]:
    """The identities of one slice's proxies."""
    return fleet_identities(
        part.count,
        namespaces=spec.namespaces,
        flavour=spec.flavour,
        targets=spec.targets,
        app=APP,
        start=part.first,
    )
