"""Analysis messages as ``status.validationMessages`` entries, as istiod writes them.

Each entry is ``{"type": {"name", "code"}, "level", "documentationUrl", "message"}``
(istiod's ``AnalysisMessageBase``, with the sentence ``analyze`` prints added, as the
validation messages ``--write-status`` already wrote carry it), grouped by the object
each message is about. ``serve --write-status`` hands them to the Kubernetes config
sources, which keep each object's status to its validation and analysis messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pilothouse.analysis.follower import Analysis
from pilothouse.analysis.messages import Message
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.gateway_api.kinds import KINDS

GATEWAY_API_KINDS = frozenset(kind.name for kind in KINDS)


@runtime_checkable
class WritesStatus(Protocol):
    """A config source that writes its objects' status (``k8s://`` with ``write_status``)."""

    write_status: bool

    def set_analysis(self, messages: Mapping[ConfigKey, Sequence[Mapping[str, Any]]]) -> None: ...


def status_entry(message: Message) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": {"name": message.type.name, "code": message.type.code},
        "level": message.type.level.label.upper(),
    }
    if message.type.documentation:
        entry["documentationUrl"] = message.type.documentation
    entry["message"] = message.text
    return entry


def validation_messages(messages: Iterable[Message]) -> dict[ConfigKey, list[dict[str, Any]]]:
    """Each object's entries, in the order of ``messages``; none for the Gateway API's
    objects, whose status is the conditions those findings are read from (their CRDs
    have no ``validationMessages``; the conditions are written as they are)."""
    found: dict[ConfigKey, list[dict[str, Any]]] = {}
    for message in messages:
        if message.key is not None and message.key.kind not in GATEWAY_API_KINDS:
            found.setdefault(message.key, []).append(status_entry(message))
    return found


def status_writer(sources: Iterable[object]) -> Callable[[Analysis], None] | None:
    """What ``serve`` gives the analysis follower as ``on_result``: each result handed to
    every source that writes status (None when no source does)."""
    writers = [s for s in sources if isinstance(s, WritesStatus) and s.write_status]
    if not writers:
        return None

    def write(result: Analysis) -> None:
        messages = validation_messages(result.messages)
        for writer in writers:
            writer.set_analysis(messages)

    return write
