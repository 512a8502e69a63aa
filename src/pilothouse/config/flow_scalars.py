"""A YAML loader that reads colons inside flow collections as Kubernetes' YAML does.

libyaml (and PyYAML's own scanner) refuse or split a plain scalar holding a ``:`` right
before a flow indicator: ``addresses: [1.2.3.4, 001:db8::]`` fails with "found unexpected
':'", and ``[a:]`` becomes a one-pair mapping. The YAML library Kubernetes decodes
manifests with ends a plain scalar at ``:`` only when a blank follows, and in a flow
collection at ``,``, ``[``, ``]``, ``{``, ``}`` (and at ``?`` when a blank follows): so
``001:db8::`` is the string it looks like, and ``kubectl apply`` accepts the manifest.

:class:`FlowColonLoader` is the pure-Python safe loader with that one rule changed. The
document reader uses the fast libyaml loader first and reads a text again with this one
only when libyaml stopped at such a colon, so ordinary files keep the fast path.
"""

from __future__ import annotations

import yaml
from yaml.tokens import ScalarToken

_BLANK_OR_END = "\0 \t\r\n\x85\u2028\u2029"
_FLOW_ENDS = ",[]{}"

UNEXPECTED_COLON = "found unexpected ':'"
"""The libyaml scanner's problem text for such a colon (the sign to read again)."""


class FlowColonLoader(yaml.SafeLoader):
    """PyYAML's safe loader whose plain scalars end where Kubernetes' YAML ends them."""

    def scan_plain(self) -> ScalarToken:
        start = self.get_mark()
        end = start
        indent = self.indent + 1
        parts: list[str] = []
        spaces: list[str] = []
        while self.peek() != "#":
            length = self._plain_run()
            if length == 0:
                break
            self.allow_simple_key = False
            parts.extend(spaces)
            parts.append(self.prefix(length))
            self.forward(length)
            end = self.get_mark()
            spaces = self.scan_plain_spaces(indent, start) or []
            if not spaces or self.peek() == "#" or (not self.flow_level and self.column < indent):
                break
        return ScalarToken("".join(parts), True, start, end)

    def _plain_run(self) -> int:
        """How many characters from here belong to the plain scalar, up to a blank."""
        length = 0
        while True:
            char = self.peek(length)
            if char in _BLANK_OR_END:
                return length
            ends_here = char == ":" or (char == "?" and self.flow_level)
            if ends_here and self.peek(length + 1) in _BLANK_OR_END:
                return length
            if self.flow_level and char in _FLOW_ENDS:
                return length
            length += 1
