"""/ready's reasons name each config source that has not synced, and why."""

from __future__ import annotations

from dataclasses import dataclass, field

from pilothouse.admin.readiness import discovery_checks, missing, sources_synced
from pilothouse.sources.availability import Availability


@dataclass
class Plain:
    name: str
    synced: bool = False

    def has_synced(self) -> bool:
        return self.synced


@dataclass
class Unavailable(Plain):
    reason: str = ""

    def availability(self) -> Availability:
        return Availability(self.name, False, self.reason)


@dataclass(frozen=True)
class Status:
    last_error: str


@dataclass
class Upstream(Plain):
    error: str = ""

    def status(self) -> Status:
        return Status(self.error)


@dataclass
class Discovery:
    synced: bool
    pending: list[Plain] = field(default_factory=list)

    @property
    def store(self) -> Discovery:
        return self

    def has_synced(self) -> bool:
        return self.synced

    def ready(self) -> bool:
        return False


def test_each_waiting_source_is_named_with_its_reason() -> None:
    sources = [
        Plain("fs:///mesh", synced=True),
        Unavailable("etcd://10.0.0.5:2379/mesh", reason="connection refused"),
        Upstream("xds://10.0.0.6:15010", error="UNAVAILABLE: no route"),
        Upstream("xds://10.0.0.7:15010"),
    ]
    assert sources_synced(lambda: sources)() == (
        "etcd://10.0.0.5:2379/mesh (unavailable: connection refused); "
        "xds://10.0.0.6:15010 (unavailable: UNAVAILABLE: no route); "
        "xds://10.0.0.7:15010 (its first load has not finished)"
    )
    for source in sources:
        source.synced = True
    assert sources_synced(lambda: sources)() is None


def test_ready_says_which_sources_it_waits_for() -> None:
    waiting = [Unavailable("etcd://e:1/m", reason="down")]
    checks = discovery_checks(Discovery(synced=False), lambda: waiting)
    assert (
        missing(checks)[0] == "config sources have not synced yet: etcd://e:1/m (unavailable: down)"
    )
    assert missing(discovery_checks(Discovery(synced=False)))[0] == (
        "config sources have not synced yet"
    )
