"""Connection.when_answered: what the push workers hold a connection's next push for."""

from __future__ import annotations

import asyncio

from google.rpc import status_pb2

from pilothouse.protocol.type_urls import CDS
from pilothouse.push.request import PushRequest
from tests.unit.xds_server.test_connection_push import (
    CLUSTERS,
    RULE,
    converged,
    push,
    request,
    responses,
)


async def test_resolved_once_every_response_of_the_push_is_acked() -> None:
    connection, generation = converged()
    assert connection.when_answered() is None, "a converged proxy owes no answer"
    generation.generators[CDS].set(CLUSTERS[0], "2")
    push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
    clusters, assignment = responses(connection)
    answer = connection.when_answered()
    assert answer is not None and not answer.done()
    assert connection.when_answered() is answer, "one future however many ask"
    connection.on_request(request(CDS, (), clusters.nonce), 4.0)
    assert not answer.done(), "the assignment is not ACKed yet"
    connection.on_request(request(assignment.type_url, CLUSTERS, assignment.nonce), 4.1)
    assert answer.done() and connection.when_answered() is None


async def test_a_nack_is_an_answer_and_a_closed_stream_owes_none() -> None:
    connection, generation = converged()
    generation.generators[CDS].set(CLUSTERS[0], "2")
    push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
    clusters, assignment = responses(connection)
    answer = connection.when_answered()
    assert answer is not None
    connection._patching = lambda type_url: []  # type: ignore[method-assign]  # no EnvoyFilters here
    nack = request(CDS, (), clusters.nonce)
    nack.error_detail.CopyFrom(status_pb2.Status(code=13, message="bad cluster"))
    connection.on_request(nack, 4.0)
    connection.on_request(request(assignment.type_url, CLUSTERS, assignment.nonce), 4.1)
    assert answer.done()
    generation.generators[CDS].set(CLUSTERS[0], "3")
    push(generation, connection, PushRequest.for_configs([RULE]), 5.0)
    assert responses(connection)
    pending = connection.when_answered()
    assert pending is not None and not pending.done()
    connection.close()
    await asyncio.wait_for(pending, 1.0)
