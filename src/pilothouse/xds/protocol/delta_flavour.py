"""The delta half of a stream engine: requests classified by the delta session, responses
planned from what the client holds (:mod:`pilothouse.xds.protocol.delta_plan`).

A full push compares only the names the push's mapping changed since the stream's basis
(:mod:`pilothouse.xds.protocol.delta_basis`); every response is this stream's own (its
own nonce), encoded from the resources' cached bytes. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from pilothouse.protocol.messages import DeltaRequest, SotwRequest
from pilothouse.protocol.type_urls import EDS, is_full_state_type
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.delta import DeltaDecision, DeltaKind, DeltaSession
from pilothouse.xds.protocol.delta_basis import DeltaBasis, ResourceVersions
from pilothouse.xds.protocol.delta_plan import plan_delta
from pilothouse.xds.protocol.ordering import MakeBeforeBreak
from pilothouse.xds.protocol.shared_content import SharedContents
from pilothouse.xds.protocol.stream_flavour import (
    EndpointsDue,
    FlavourBase,
    Outgoing,
    ResourceSource,
)
from pilothouse.xds.protocol.versions import NonceSource
from pilothouse.xds.protocol.wire import NO_CONTROL_PLANE, ControlPlaneField, delta_response
from pilothouse.xds.protocol.withheld import withheld


class DeltaFlavour(FlavourBase):
    """Incremental: responses carry what changed and what was removed; a full push
    compares only the names its mapping changed since the stream's basis
    (:mod:`pilothouse.xds.protocol.delta_basis`)."""

    def __init__(
        self,
        source: ResourceSource,
        order: MakeBeforeBreak,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        contents: SharedContents | None = None,
    ) -> None:
        super().__init__(source, order, control_plane)
        self.delta = DeltaSession()
        self._nonces = NonceSource()
        """Each delta response is this stream's own (SotW ones come from FanOutResponses)."""
        self._contents = SharedContents(kept=32) if contents is None else contents
        """Where the difference between two generated mappings is worked out once for
        every stream that moves between them (the server's, shared)."""
        self._bases: dict[str, DeltaBasis] = {}
        """Per type: the generated mapping what the client holds agrees with."""

    @property
    def session(self) -> DeltaSession:
        return self.delta

    def answer(
        self, request: SotwRequest | DeltaRequest, now: float, names: int | None = None
    ) -> Outgoing | None:
        decision = self.delta.receive(request, now)  # type: ignore[arg-type]
        kind = decision.kind
        if kind is DeltaKind.ACK or kind is DeltaKind.NACK:
            self.acked.answered(
                decision.type_url,
                request.response_nonce,
                rejected=kind is DeltaKind.NACK,
                subscription=decision.subscription,
            )
            if kind is DeltaKind.NACK:
                basis = self._bases.get(decision.type_url)
                if basis is not None:
                    basis.drop()  # the client's holdings rolled back
        if not decision.respond:
            return None
        return self._respond(decision.type_url, decision, None, now)

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
        return self._respond(
            type_url, None, changed, now, generated, resend=resend, refresh=refresh
        )

    def _respond(
        self,
        type_url: str,
        decision: DeltaDecision | None,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
        *,
        resend: bool = False,
        refresh: frozenset[str] = frozenset(),
    ) -> Outgoing | None:
        watch = self.delta.watch(type_url)
        if watch is None:
            return None
        subscription = watch.subscription
        names = None if subscription.wildcard else subscription.names
        if changed is not None and decision is None and names is not None:
            names = names & changed
        resources = self._generate(type_url, names) if generated is None else generated
        if withheld(resources):
            return None
        whole = changed is None  # planned over every resource of the type
        basis = self._bases.get(type_url)
        if basis is None:
            basis = self._bases[type_url] = DeltaBasis()
        candidates = None
        if whole and decision is None and not resend:
            candidates = basis.candidates(watch, resources, self._contents)
        if candidates is None:
            available = {name: r.version for name, r in resources.items()}
            plan = plan_delta(
                watch, available, decision, changed, resend_all=resend, refresh=refresh
            )
        else:  # only the names the push's mapping changed since the stream's basis
            plan = plan_delta(watch, ResourceVersions(resources), None, candidates, refresh=refresh)
        initial = decision is not None and decision.kind in (DeltaKind.INIT, DeltaKind.RECONNECT)
        if decision is not None and decision.kind is DeltaKind.RECONNECT:
            self.acked.seed(type_url, _still_held(watch.confirmed, resources))
        # once a whole plan is sent (or owes nothing), the client holds, of every name it
        # subscribes to, what ``resources`` has: the basis of the next push
        rebase = whole and not watch.rejected
        if plan.empty and not initial:
            if rebase:
                basis.rebase(watch.subscription, resources)
            return None
        version = self._source.version
        nonce = self._nonces.next(version)
        chosen = [resources[n] for n in sorted(plan.resources)]
        body = delta_response(
            version, type_url, nonce, chosen, sorted(plan.removed), self._control_plane
        )
        watch = self.delta.record_sent(
            type_url, nonce, plan.resources, plan.removed, now, system_version=version
        )
        # the generated mapping itself when all of it goes (shared by a scope's proxies)
        sent = resources if len(chosen) == len(resources) else {r.name: r for r in chosen}
        self.acked.sent(type_url, nonce, sent, plan.removed, replace=False)
        if rebase and not watch.rejected:
            basis.rebase(watch.subscription, resources)
            if is_full_state_type(type_url):
                # what the proxy holds is the generated mapping itself, kept by reference
                # (a scope's streams then share it, and its difference with the next one)
                self._order.record(type_url, resources, replace=True)
            else:
                self._order.record(type_url, sent, plan.removed, replace=False)
        else:
            if not whole:
                basis.sent(plan.resources.keys() | plan.removed)
            else:
                basis.drop()
            self._order.record(type_url, sent, plan.removed, replace=False)
        return Outgoing(type_url, body, len(chosen))

    def changed_endpoints(self) -> EndpointsDue:
        """All of them: the delta plan sends only what the proxy does not hold."""
        return EndpointsDue(None)

    def confirmed(self, names: frozenset[str]) -> bool:
        watch = self.delta.watch(EDS)
        return watch is not None and all(n in watch.confirmed for n in names)

    def awaiting(self, type_url: str) -> bool:
        watch = self.delta.watch(type_url)
        return watch is not None and bool(watch.in_flight)


def _still_held(
    reported: Mapping[str, str], resources: Mapping[str, Resource]
) -> Mapping[str, Resource]:
    """Of the versions a reconnecting delta client reports, the resources it holds as
    they are now (a delta version is the resource's content hash)."""
    held = {}
    for name, version in reported.items():
        resource = resources.get(name)
        if resource is not None and resource.version == version:
            held[name] = resource
    return held
