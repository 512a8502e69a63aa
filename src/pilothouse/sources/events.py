"""Config events: what every store and source tells its subscribers, and the store interface."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple, Protocol

from pilothouse.config.model import Config, ConfigKey


class EventType(StrEnum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


class ConfigEvent(NamedTuple):
    """One change to one object. ``old`` is None on ADD, ``new`` is None on DELETE.

    A named tuple: every object of a bulk load makes two of these (its source's and the
    aggregate's), and a tuple is built in C.
    """

    type: EventType
    key: ConfigKey
    old: Config | None
    new: Config | None
    revision: int

    @property
    def config(self) -> Config:
        """The object as it is now, or as it was for a delete."""
        current = self.new if self.new is not None else self.old
        assert current is not None
        return current


Handler = Callable[[ConfigEvent], None]
Unsubscribe = Callable[[], None]


class ConfigStore(Protocol):
    """Read access to a set of configs plus change notification."""

    @property
    def name(self) -> str: ...

    def get(self, key: ConfigKey) -> Config | None: ...

    def configs(self, kind: str, namespace: str | None = None) -> list[Config]: ...

    def keys(self) -> list[ConfigKey]: ...

    def subscribe(self, handler: Handler) -> Unsubscribe: ...

    def has_synced(self) -> bool: ...

    @property
    def revision(self) -> int: ...
