"""ControlZ's ``scope`` topic: logging scopes read and changed over HTTP, as istio's.

- ``GET /scopej`` and ``GET /scopej/``: every scope, ``[{"name", "description",
  "output_level", "stack_trace_level", "log_callers", "inherited"}]``;
- ``GET /scopej/{scope}``: one scope;
- ``PUT /scopej/{scope}`` with any of ``output_level``, ``stack_trace_level`` (a level:
  ``debug``, ``info``, ``warn``, ``error``, ``none``) and ``log_callers`` (true or false);
  fields left out stay as they are (``istioctl admin log --level xds:debug`` sends only
  ``output_level``). camelCase (``outputLevel``...) is read too. 202 with the scope as
  it is now, which is what ``istioctl admin log`` expects.

The field names are istio's (``pkg/ctrlz/topics/scopes.go``), so ``istioctl admin log``
can read and set pilothouse's scopes through a port-forward to ControlZ. A value that
cannot be used is 400 naming the field and the accepted values; an unknown scope is 404
naming the nearest one. Each field changed is logged (old and new value, client address).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from pilothouse import logscopes
from pilothouse.admin.api import client, knob_value
from pilothouse.admin.knob_values import flag
from pilothouse.boundary.contain import json_error
from pilothouse.boundary.json_body import BadJson

VIA: Final = "controlz"
_FIELDS: Final = {
    "output_level": "output_level",
    "outputLevel": "output_level",
    "stack_trace_level": "stack_trace_level",
    "stackTraceLevel": "stack_trace_level",
    "log_callers": "log_callers",
    "logCallers": "log_callers",
}
_READ_ONLY: Final = frozenset({"name", "description", "inherited"})

_log = logging.getLogger("pilothouse.admin")


def routes() -> list[web.RouteDef]:
    return [
        web.get("/scopej", list_scopes),
        web.get("/scopej/", list_scopes),
        web.get("/scopej/{scope}", get_scope),
        web.put("/scopej/{scope}", put_scope),
    ]


async def list_scopes(request: web.Request) -> web.Response:
    return web.json_response([logscopes.state(name).as_json() for name in logscopes.scope_names()])


def _unknown(scope: str) -> web.Response:
    known = logscopes.scope_names()
    close = difflib.get_close_matches(scope, known, n=1, cutoff=0.5)
    hint = f": did you mean {close[0]!r}?" if close else f"; the scopes are: {', '.join(known)}"
    return json_error(404, f"unknown scope {scope!r}{hint}")


async def get_scope(request: web.Request) -> web.Response:
    scope = request.match_info["scope"]
    try:
        return web.json_response(logscopes.state(scope).as_json())
    except logscopes.UnknownScope:
        return _unknown(scope)


async def put_scope(request: web.Request) -> web.Response:
    scope = request.match_info["scope"]
    try:
        before = logscopes.state(scope)
    except logscopes.UnknownScope:
        return _unknown(scope)
    try:
        body = await knob_value(request)
    except BadJson as problem:
        return json_error(400, f"scope {scope}: body: {problem.reason}")
    try:
        changes = _changes(body)
    except ValueError as problem:
        return json_error(400, f"scope {scope}: {problem}")
    setters: dict[str, Callable[[str, Any], None]] = {
        "output_level": logscopes.set_output_level,
        "stack_trace_level": logscopes.set_stack_trace_level,
        "log_callers": logscopes.set_log_callers,
    }
    for field, value in changes.items():
        setters[field](scope, value)
    after = logscopes.state(scope)
    for field in changes:
        old, new = getattr(before, field), getattr(after, field)
        _log.info(
            "log scope changed",
            extra={"scope": scope, "field": field, "old": old, "new": new,
                   "by": client(request), "via": VIA},
        )  # fmt: skip
    return web.json_response(after.as_json(), status=202)


def _changes(body: object) -> dict[str, Any]:
    """The fields to set, by istio's name, parsed; ValueError naming a bad one."""
    if not isinstance(body, dict):
        raise ValueError(
            f'expected a JSON object such as {{"output_level": "debug"}}; got {type(body).__name__}'
        )
    changes: dict[str, Any] = {}
    for key, value in body.items():
        field = _FIELDS.get(key)
        if field is None:
            if key in _READ_ONLY:
                continue  # istioctl sends the name back; it names the scope in the path
            raise ValueError(
                f"unknown field {key!r}; the fields are output_level, stack_trace_level "
                "and log_callers"
            )
        if value is None or value == "":
            continue  # istio's omitempty: not given
        try:
            if field == "log_callers":
                changes[field] = flag(value)
            else:
                changes[field] = logscopes.parse_level(value)
        except ValueError as problem:
            raise ValueError(f"{key}: {problem}") from None
    return changes
