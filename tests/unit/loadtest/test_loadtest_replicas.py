"""A fleet given several server addresses (replicas behind one Service): each connect
picks one at random, so the fleet spreads over them, and proxies whose replica goes
away reconnect to the others."""

from __future__ import annotations

import random

import pytest

from pilothouse.loadtest import ProxyFleet, fleet_identities
from pilothouse.loadtest.server_channels import ServerChannels

from .conftest import FAST_BACKOFF, FAST_CHANNEL, eventually
from .fake_ads import FakeAdsServer
from .mesh_fixtures import sidecar_mesh


async def test_a_fleet_spreads_over_replicas_and_leaves_one_that_stops() -> None:
    replicas = [FakeAdsServer(sidecar_mesh()), FakeAdsServer(sidecar_mesh())]
    for replica in replicas:
        await replica.start()
    first, second = (replica.target for replica in replicas)
    fleet = ProxyFleet(
        [first, second],
        fleet_identities(120),
        streams_per_channel=10,
        backoff=FAST_BACKOFF,
        channel_options=FAST_CHANNEL,
        seed=3,
    )
    try:
        await fleet.start()
        report = await fleet.wait_converged(timeout=20)
        assert report.converged
        spread = fleet.by_server()
        # 120 fair coin tosses: each side gets 60 ± 5.5 (one standard deviation); 36 is
        # more than four deviations away (and the seed makes it the same every run)
        assert sum(spread.values()) == 120
        assert min(spread[first], spread[second]) >= 36, spread
        # streams to each address share channels of up to 10: at most 12 per address
        assert len(fleet.channels) <= 24

        await replicas[0].stop()
        await eventually(lambda: fleet.by_server() == {second: 120}, timeout=20)
        report = await fleet.wait_converged(timeout=20)
        assert report.converged
    finally:
        await fleet.close()
        for replica in replicas:
            await replica.stop()


async def test_one_address_draws_no_randomness_and_groups_share_a_channel() -> None:
    channels = ServerChannels(["127.0.0.1:1"], streams_per_channel=3)
    try:
        rng = random.Random(5)
        state = rng.getstate()
        dialled = [channels.dial(slot, rng) for slot in range(7)]
        assert rng.getstate() == state
        assert {address for address, _ in dialled} == {"127.0.0.1:1"}
        assert len({id(channel) for _, channel in dialled}) == 3  # slots 0-2, 3-5, 6
        assert dialled[0][1] is dialled[2][1] and dialled[3][1] is not dialled[2][1]
        assert len(channels.channels) == 3
    finally:
        await channels.close()
    assert channels.channels == []


def test_several_addresses_are_picked_uniformly() -> None:
    addresses = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
    channels = ServerChannels(addresses)
    rng = random.Random(11)
    picks = [channels.pick(rng) for _ in range(3000)]
    for address in addresses:
        # 1000 expected, standard deviation 26: 850 is more than five away
        assert 850 <= picks.count(address) <= 1150


def test_new_addresses_are_picked_from_the_next_connect() -> None:
    channels = ServerChannels(["127.0.0.1:1"])
    rng = random.Random(2)
    channels.set_addresses(["127.0.0.1:2", "127.0.0.1:3"])
    assert {channels.pick(rng) for _ in range(50)} == {"127.0.0.1:2", "127.0.0.1:3"}


def test_server_channels_need_an_address_and_a_group_size() -> None:
    with pytest.raises(ValueError):
        ServerChannels([])
    with pytest.raises(ValueError):
        ServerChannels(["127.0.0.1:1"]).set_addresses([])
    with pytest.raises(ValueError):
        ServerChannels(["127.0.0.1:1"], streams_per_channel=0)
