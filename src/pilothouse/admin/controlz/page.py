"""ControlZ's HTML: one shell page per topic, filled in by the browser from the topic's JSON.

:func:`topic_page` fills ``assets/shell.html`` (a header, the topic list, the topic's
title and description, an empty content area, a link to the JSON); ``controlz.js``
fetches ``/<topic>j`` and draws it, and sends changes back with ``fetch``. The home page
(``/``) is the same shell with the list of topics as its content. Every value put into
the page is escaped here, and the script writes text with ``textContent`` only, so
nothing a scope name or an environment variable holds can become markup.

The pages need no outside resource: the stylesheet and script are served from
``/static/`` by the same server, and the Content-Security-Policy header that comes with
every page lets them load nothing else (no inline script, no frames).
"""

from __future__ import annotations

import html
import importlib.resources
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template
from typing import Final

from aiohttp import web

ASSETS: Final = importlib.resources.files("pilothouse.admin.controlz") / "assets"
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATIC_TYPES: Final = {
    "controlz.js": "text/javascript",
    "controlz.css": "text/css",
    "favicon.svg": "image/svg+xml",
}


@dataclass(frozen=True, slots=True)
class Topic:
    """One ControlZ topic: ``/<name>z`` (the page) and ``/<name>j`` (its JSON)."""

    name: str
    title: str
    description: str

    @property
    def page(self) -> str:
        return f"/{self.name}z"

    @property
    def json(self) -> str:
        return f"/{self.name}j"


def _shell() -> Template:
    return Template((ASSETS / "shell.html").read_text(encoding="utf-8"))


def _identity() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _nav(topics: Sequence[Topic], current: str) -> str:
    items = []
    for topic in topics:
        here = ' aria-current="page"' if topic.name == current else ""
        items.append(
            f'      <li><a href="{html.escape(topic.page)}"{here}>'
            f"{html.escape(topic.title)}</a></li>"
        )
    return "\n".join(items)


def topic_page(topics: Sequence[Topic], topic: Topic) -> web.Response:
    json_link = html.escape(topic.json)
    body = _shell().substitute(
        title=html.escape(topic.title),
        topic=html.escape(topic.name),
        identity=html.escape(_identity()),
        nav=_nav(topics, topic.name),
        description=html.escape(topic.description),
        content=(
            "      <noscript>This page draws its data with JavaScript; the data itself is "
            f'at <a href="{json_link}">{json_link}</a>.</noscript>'
        ),
        raw=f'JSON: <a href="{json_link}">{json_link}</a>',
    )
    return page_response(body)


def home_page(topics: Sequence[Topic]) -> web.Response:
    rows = "\n".join(
        f'      <dt><a href="{html.escape(t.page)}">{html.escape(t.title)}</a></dt>'
        f"<dd>{html.escape(t.description)}</dd>"
        for t in topics
    )
    body = _shell().substitute(
        title="Topics",
        topic="home",
        identity=html.escape(_identity()),
        nav=_nav(topics, ""),
        description=(
            "Look inside this pilothouse and change it while it runs. Each topic has a page "
            "and the same data as JSON for scripts."
        ),
        content=f'      <dl class="topics">\n{rows}\n      </dl>',
        raw="",
    )
    return page_response(body)


def page_response(body: str) -> web.Response:
    response = web.Response(text=body, content_type="text/html", charset="utf-8")
    response.headers.update(SECURITY_HEADERS)
    return response


def static_file(name: str) -> web.Response:
    """``controlz.js``, ``controlz.css`` or ``favicon.svg``; 404 for anything else."""
    content_type = STATIC_TYPES.get(name)
    if content_type is None:
        raise web.HTTPNotFound()
    response = web.Response(
        text=(ASSETS / name).read_text(encoding="utf-8"),
        content_type=content_type,
        charset="utf-8",
    )
    response.headers.update(SECURITY_HEADERS)
    return response
