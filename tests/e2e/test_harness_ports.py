"""The test harness's port picker keeps handed-out ports away from the ephemeral range."""

from __future__ import annotations

import socket
from itertools import combinations

from tests.e2e.harness.ports import LOOPBACK, PortPicker, worker_share


def test_picked_ports_sit_below_the_ephemeral_range_and_are_never_repeated() -> None:
    picker = PortPicker((32768, 60999), seed=7)
    picked = picker.pick(50, LOOPBACK) + [picker.pick(1, LOOPBACK)[0] for _ in range(50)]
    assert all(10000 <= port < 32768 for port in picked), picked
    assert len(set(picked)) == len(picked)


def test_a_port_in_use_is_not_picked() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind((LOOPBACK, PortPicker((32768, 60999)).pick(1, LOOPBACK)[0]))
        held.listen()
        busy = held.getsockname()[1]
        assert PortPicker((busy + 1, 60999), lowest=busy, room=1).candidates() == range(
            busy, busy + 1
        )
        # The only candidate is taken: the picker falls back to a kernel-chosen port.
        assert PortPicker((busy + 1, 60999), lowest=busy, room=1).pick(1, LOOPBACK) != [busy]
        assert busy not in PortPicker((32768, 60999), given={busy}).pick(40, LOOPBACK)


def test_an_unknown_range_falls_back_to_the_kernel_choice() -> None:
    picker = PortPicker(None)
    assert picker.candidates() == range(0)
    (port,) = picker.pick(1, LOOPBACK)
    assert 0 < port < 65536


def test_a_range_that_leaves_no_room_falls_back_too() -> None:
    assert PortPicker((1024, 65000)).candidates() == range(0)
    assert PortPicker((11000, 60000)).candidates() == range(60001, 65536)


def test_workers_draw_from_disjoint_shares_that_cover_the_range() -> None:
    """Two pytest-xdist workers can never hand out the same port, whatever they bind."""
    shares = [PortPicker((32768, 60999), share=(index, 3)).candidates() for index in range(3)]
    for one, other in combinations(shares, 2):
        assert not set(one) & set(other)
    assert set().union(*shares) == set(range(10000, 32768))
    picked = [PortPicker((32768, 60999), share=(1, 3)).pick(20, LOOPBACK) for _ in range(2)]
    assert all(port % 3 == 1 for ports in picked for port in ports), picked


def test_the_share_comes_from_the_xdist_worker_variables() -> None:
    assert worker_share({"PYTEST_XDIST_WORKER": "gw2", "PYTEST_XDIST_WORKER_COUNT": "4"}) == (2, 4)
    assert worker_share({}) == (0, 1)
    assert worker_share({"PYTEST_XDIST_WORKER": "gw4", "PYTEST_XDIST_WORKER_COUNT": "4"}) == (0, 1)
    assert worker_share({"PYTEST_XDIST_WORKER": "master"}) == (0, 1)
