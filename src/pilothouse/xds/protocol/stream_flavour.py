"""What differs between a SotW and a delta stream, behind one interface.

The stream engine (:mod:`pilothouse.xds.protocol.stream_engine`) orders pushes and
keeps make-before-break state the same way for both protocols; everything that
depends on the protocol (which session classifies requests, how a response is
planned and encoded, what counts as ACKed) is a flavour: :class:`SotwFlavour` here, and
:class:`~pilothouse.xds.protocol.delta_flavour.DeltaFlavour`. No I/O:
each step returns the bytes to write, or None (also when the generator withheld the
type's answer, :mod:`pilothouse.xds.protocol.withheld`). Each also keeps what the proxy ACKed
(:mod:`pilothouse.xds.protocol.acked`), from the resources it sends, by reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, Protocol

from pilothouse.protocol.messages import DeltaRequest, SotwRequest
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.acked import AckedResources
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.endpoint_basis import EndpointBasis
from pilothouse.xds.protocol.ordering import MakeBeforeBreak
from pilothouse.xds.protocol.shared_content import SotwContent, same_content
from pilothouse.xds.protocol.sotw import SotwKind, SotwSession
from pilothouse.xds.protocol.sotw_watch import SotwWatch, plan_sotw
from pilothouse.xds.protocol.wire import (
    NO_CONTROL_PLANE,
    ControlPlaneField,
    FanOutResponses,
)
from pilothouse.xds.protocol.withheld import withheld

_BY_NAME = frozenset({CDS, EDS, LDS, RDS})
"""Types whose generators (Envoy's and gRPC's) return only the names asked for: what
they return for a subscription's names is the whole of what it takes."""


class Outgoing(NamedTuple):
    """One response to write: its encoded bytes and how many resources it carries (a
    named tuple: one is made per response pushed, and a frozen dataclass costs more)."""

    type_url: str
    body: bytes
    resources: int


class EndpointsDue(NamedTuple):
    """What a full push owes a stream of EDS: the assignments to send (None: all of
    them), and the mapping generated for every watched name that told it (None: none
    was), from which the response takes them instead of generating them again."""

    names: frozenset[str] | None
    generated: Mapping[str, Resource] | None = None


_ALL_ENDPOINTS = EndpointsDue(None)


class ResourceSource(Protocol):
    """Where a stream's resources come from: the proxy's generated view."""

    @property
    def version(self) -> str:
        """The push version responses carry."""
        ...

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        """The resources of ``type_url`` for ``names`` (None: all the proxy may see), a
        mapping never changed afterwards (streams keep it, and share its summary)."""
        ...

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        """Of the clusters ``added`` to the proxy, those it warms (waits for EDS for)."""
        ...


class FlavourBase:
    """What both flavours hold: the resource source, the ordering, the control plane
    field responses carry, and what the proxy ACKed."""

    def __init__(
        self,
        source: ResourceSource,
        order: MakeBeforeBreak,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
    ) -> None:
        self._source = source
        self._order = order
        self._control_plane = control_plane
        self.acked = AckedResources()
        """What the proxy ACKed, per type (read through ``acked.held``)."""

    def _generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        return self._order.with_lingering(type_url, self._source.generate(type_url, names))


class Flavour(Protocol):
    """The protocol-specific half of a stream engine."""

    @property
    def session(self) -> SotwSession | DeltaSession: ...

    @property
    def acked(self) -> AckedResources:
        """What the proxy ACKed, per type."""
        ...

    def answer(
        self, request: SotwRequest | DeltaRequest, now: float, names: int | None = None
    ) -> Outgoing | None:
        """Classify ``request``; the response it is owed, if any (``names``: a
        fingerprint of a SotW request's names, or None)."""
        ...

    def respond(
        self,
        type_url: str,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
        *,
        resend: bool = False,
        refresh: frozenset[str] = frozenset(),
        among: Mapping[str, Resource] | None = None,
    ) -> Outgoing | None:
        """A server-initiated response for one type: only what changed, if anything;
        with ``resend`` (a forced push), everything watched even if unchanged; the names
        in ``refresh`` (among ``changed``) even if unchanged. ``among``: the type's
        resources already generated this push for every watched name (before lingering
        ones are added), to take ``changed`` from instead of generating them again."""
        ...

    def changed_endpoints(self) -> EndpointsDue:
        """For EDS in a full push: the assignments to send, and what they were found in."""
        ...

    def confirmed(self, names: frozenset[str]) -> bool:
        """Whether the proxy has ACKed EDS for every one of ``names``."""
        ...

    def awaiting(self, type_url: str) -> bool:
        """Whether the latest response of ``type_url`` is neither ACKed nor NACKed."""
        ...


class SotwFlavour(FlavourBase):
    """State of the world: every response carries the full set of watched names."""

    def __init__(
        self,
        source: ResourceSource,
        order: MakeBeforeBreak,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        responses: FanOutResponses | None = None,
    ) -> None:
        super().__init__(source, order, control_plane)
        self._responses = FanOutResponses(kept=2) if responses is None else responses
        """Where responses come from: the server's, shared by every stream it pushes the
        same content to (a stream of its own keeps only its last few)."""
        self.sotw = SotwSession(self._responses.name_sets)
        self._serials: dict[str, int] = {}
        """The serial of the last response sent per type: the next must be above it."""
        self._endpoints = EndpointBasis()

    @property
    def session(self) -> SotwSession:
        return self.sotw

    def answer(
        self, request: SotwRequest | DeltaRequest, now: float, names: int | None = None
    ) -> Outgoing | None:
        decision = self.sotw.receive(request, now, names)  # type: ignore[arg-type]
        kind = decision.kind
        if kind is SotwKind.ACK or kind is SotwKind.NACK:
            self.acked.answered(
                decision.type_url,
                request.response_nonce,
                rejected=kind is SotwKind.NACK,
                subscription=decision.subscription,
            )
        if not decision.respond:
            return None
        return self._respond(decision.type_url, True, None, now)

    def respond(
        self,
        type_url: str,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
        *,
        resend: bool = False,
        refresh: frozenset[str] = frozenset(),
        among: Mapping[str, Resource] | None = None,
    ) -> Outgoing | None:
        # per-name types (EDS) carry only ``changed``: answering sends all of those
        return self._respond(type_url, resend or bool(refresh), changed, now, generated, among)

    def _respond(
        self,
        type_url: str,
        answering: bool,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
        among: Mapping[str, Resource] | None = None,
    ) -> Outgoing | None:
        watch = self.sotw.watch(type_url)
        if watch is None:
            return None
        subscription = watch.subscription
        names = None if subscription.wildcard else subscription.names
        if changed is not None:
            # a push names watched clusters only: the set it was handed (shared by the
            # scope's streams) rather than a copy made per stream
            names = changed if names is None or changed <= names else names & changed
        if generated is None:
            if among is not None and names is not None:
                # the names of a mapping generated for all of them: the same resources,
                # one mapping for every stream taking the same names of it
                made = self._responses.contents.subset(among, names)
            else:
                made = self._source.generate(type_url, names)
            resources = self._order.with_lingering(type_url, made)
            # the subscription asks for all of it (nothing lingers beside it)
            whole = resources is made and (subscription.wildcard or type_url in _BY_NAME)
        else:
            resources = generated
            whole = subscription.wildcard
        if withheld(resources):
            return None
        content = self._responses.contents.of(resources) if whole else None
        if content is not None:
            return self._deliver(watch, type_url, answering, changed, content, now)
        available = {name: r.version for name, r in resources.items()}
        plan = plan_sotw(watch, available, answering=answering)
        if plan is None:
            return None
        if changed is not None and not plan.resources:
            return None
        version = self._source.version
        response = self._responses.sotw(
            version,
            type_url,
            tuple([resources[n].body for n in sorted(plan.resources)]),
            self._control_plane,
            self._serials.get(type_url, 0),
        )
        self._serials[type_url] = response.serial
        nonce, body = response.nonce, response.body
        self.sotw.record_sent(type_url, version, nonce, plan.resources, now)
        chosen = plan.resources
        sent = resources if len(chosen) == len(resources) else {n: resources[n] for n in chosen}
        self.acked.sent(type_url, nonce, sent, replace=watch.carriers is None)
        if self._order.records(type_url):
            self._order.record(type_url, sent, replace=changed is None)
        if type_url == EDS:
            self._endpoints.sent(
                subscription, changed, resources, whole=whole and sent is resources
            )
        return Outgoing(type_url, body, len(plan.resources))

    def _deliver(
        self,
        watch: SotwWatch,
        type_url: str,
        answering: bool,
        changed: frozenset[str] | None,
        content: SotwContent,
        now: float,
    ) -> Outgoing | None:
        """``_respond`` for a generated mapping the subscription takes whole, summarised
        once for every stream sent it: digest comparisons, the shared response, and
        references to the shared content recorded (nothing here walks its resources)."""
        versions = content.versions
        if watch.rejected is not None and same_content(watch.rejected, versions):
            return None  # exactly what the proxy rejected: not resent until it changes
        if not answering and watch.sent_anything and same_content(watch.last_sent, versions):
            return None
        if changed is not None and not versions:
            return None
        version = self._source.version
        response = self._responses.shared(
            version, type_url, content, self._control_plane, self._serials.get(type_url, 0)
        )
        self._serials[type_url] = response.serial
        nonce = response.nonce
        self.sotw.record_sent(type_url, version, nonce, versions, now)
        resources = content.resources
        self.acked.sent(type_url, nonce, resources, replace=watch.carriers is None)
        if self._order.records(type_url):
            self._order.record(type_url, resources, replace=changed is None)
        if type_url == EDS:
            self._endpoints.sent(watch.subscription, changed, resources, whole=True)
        return Outgoing(type_url, response.body, len(versions))

    def changed_endpoints(self) -> EndpointsDue:
        """Only the assignments whose content differs from what the proxy was last sent
        (:mod:`pilothouse.xds.protocol.endpoint_basis`: per stream, only what changed),
        and the mapping generated to find them (the response takes them from it)."""
        watch = self.sotw.watch(EDS)
        if watch is None or watch.subscription.wildcard:
            return _ALL_ENDPOINTS
        made = self._source.generate(EDS, watch.subscription.names)
        current = self._order.with_lingering(EDS, made)
        changed = self._endpoints.changed(watch, current, self._responses.contents)
        return EndpointsDue(changed, made)

    def confirmed(self, names: frozenset[str]) -> bool:
        watch = self.sotw.watch(EDS)
        if watch is None:
            return False
        return all(watch.acked_resource(n) for n in names)

    def awaiting(self, type_url: str) -> bool:
        watch = self.sotw.watch(type_url)
        return (
            watch is not None
            and bool(watch.nonce_sent)
            and (watch.nonce_acked != watch.nonce_sent and watch.last_error is None)
        )
