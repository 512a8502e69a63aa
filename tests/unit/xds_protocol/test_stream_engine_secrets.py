"""SDS through the stream engine: a withheld answer sends nothing at all, and a later
secret push sends only the changed secrets, on SotW and delta alike."""

from __future__ import annotations

from collections.abc import Mapping

from pilothouse.protocol.type_urls import SDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.withheld import WITHHELD
from tests.integration.test_stream_engine import PROTOCOLS, Client, Sent, Source


class SecretSource(Source):
    """Serves SDS from ``held[SDS]``; withholds the answer when none of it is there."""

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        found = super().generate(type_url, names)
        return WITHHELD if type_url == SDS and not found else found


def secrets(*held: tuple[str, str]) -> SecretSource:
    return SecretSource(held={SDS: dict(held)})


@PROTOCOLS
def test_a_withheld_answer_sends_nothing_and_a_push_answers_later(delta: bool) -> None:
    source = secrets()
    client = Client(delta, source)
    assert client.request(SDS, ("default", "ROOTCA")) == []
    assert client.decode(client.engine.push_secrets(frozenset({"default"}), 2.0)) == []
    source.held[SDS]["default"] = "1"
    (pushed,) = client.decode(client.engine.push_secrets(frozenset({"default"}), 2.0))
    assert pushed.type_url == SDS and pushed.names == ("default",)
    assert client.ack(pushed) == []


@PROTOCOLS
def test_a_secret_push_sends_the_changed_secret_only(delta: bool) -> None:
    source = secrets(("default", "1"), ("ROOTCA", "1"), ("kubernetes://gw", "1"))
    client = Client(delta, source)
    (answer,) = client.request(SDS, ("default", "ROOTCA"))
    assert sorted(answer.names) == ["ROOTCA", "default"]
    assert client.ack(answer) == []
    assert client.engine.watches_secrets(frozenset({"ROOTCA", "other"}))
    assert not client.engine.watches_secrets(frozenset({"kubernetes://gw"}))
    source.held[SDS]["default"] = "2"
    source.held[SDS]["kubernetes://gw"] = "2"  # not watched: never sent
    changed = frozenset({"default", "kubernetes://gw"})
    (pushed,) = client.decode(client.engine.push_secrets(changed, 3.0))
    assert pushed == Sent(SDS, pushed.nonce, ("default",))
    assert client.decode(client.engine.push_secrets(frozenset({"default"}), 4.0)) == []
