"""The token bookkeeping of :mod:`pilothouse.sources.etcd_auth` (the retry itself runs
against a real etcd in ``tests/integration/test_etcd_protected.py``)."""

from __future__ import annotations

import grpc

from pilothouse.sources.etcd_auth import token_in, with_token


def test_the_token_is_read_from_tuples_and_grpc_metadata() -> None:
    assert token_in((("token", "abc"),)) == "abc"
    assert token_in(grpc.aio.Metadata(("x-other", "1"), ("token", "def"))) == "def"
    assert token_in(None) is None
    assert token_in((("x-other", "1"),)) is None


def test_a_new_token_replaces_the_old_one_and_keeps_the_rest() -> None:
    replaced = with_token(grpc.aio.Metadata(("token", "old"), ("x-other", "1")), "new")
    assert sorted(replaced) == [("token", "new"), ("x-other", "1")]
    assert list(with_token(None, "new")) == [("token", "new")]
