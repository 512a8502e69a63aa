"""Bulk loads and Python's cyclic garbage collector.

A source that takes in tens of thousands of objects at once (the initial file scan, an
upstream's full state) creates millions of long-lived objects. The cyclic collector
would scan the growing heap again and again while they arrive, for nothing: none of
them is garbage. :func:`collector_paused` switches it off for the duration of one bulk
load and back on afterwards (reference counting still frees everything as usual).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the ``with`` block (nesting is fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
