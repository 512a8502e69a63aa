"""``pilothouse analyze``: istioctl analyze's checks over a whole config set.

Validation (``config/``) judges one object at a time; analysis judges them together:
references that lead nowhere (a gateway, host or subset that does not exist), selectors
that select nothing, and objects that contradict each other. :mod:`.mesh_view` builds
the view of the set once, each analyzer module reads it and yields
:class:`~pilothouse.analysis.messages.Message`s with Istio's codes, and
:mod:`.analyzers` runs them all. The CLI (:mod:`pilothouse.cli.analyze`) and ``serve``
(:mod:`.follower`, ``/debug/analyzez``) share it.

This package reads config, kinds and host names; no pipeline stage imports it.
"""
