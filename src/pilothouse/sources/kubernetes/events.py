"""One Kubernetes watch event and the feed an informer offers: shared by the ``k8s://``
source, the mesh config reader and the Kubernetes service registry."""

from __future__ import annotations
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

class WatchEventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"

@dataclass(frozen=True, slots=True)
class KubeEvent:
    """One change to one Kubernetes object, as the API server's JSON (apiVersion, kind,
    metadata, spec, status). For DELETED, ``obj`` is the last state seen."""
    type: WatchEventType
    obj: dict[str, Any]

KubeHandler = Callable[[KubeEvent], None]

class KubeFeed(Protocol):
    """What an informer offers a consumer: events for one resource, after the initial list
    (the list itself arrives as ADDED events, in order), and whether that list is done."""
    @property
    def resource(self) -> str: ...          # e.g. "services", "endpointslices.discovery.k8s.io"
    def subscribe(self, handler: KubeHandler) -> Callable[[], None]: ...
    def has_synced(self) -> bool: ...
