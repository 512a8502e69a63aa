"""What was wrong with a REST DiscoveryRequest, in words fit for the client.

``json_format.ParseDict`` explains a bad request as a chain of ``Failed to parse X
field: ...`` around a reason, and the reason is sometimes protobuf's own sentence
(``Couldn't parse integer: 12.5``) and sometimes the text of whatever Python exception
the conversion hit (``expected string or bytes-like object, got 'int'``, ``int too large
to convert to float``, ``Value 5 has unexpected type <class 'int'>``). :func:`describe`
keeps the field path and protobuf's own sentences, clipped, and replaces everything
else with a sentence of ours.
"""

from __future__ import annotations

import re
from typing import Final

_FIELD: Final = re.compile(r"Failed to parse (\w+) field: ")
_PROTOBUF_REASONS: Final = (
    "Couldn't parse",
    "Bool value",
    "Can not find message descriptor",
    "Expected ",
    "Float value too",
    "Invalid enum value",
    "Message too deep",
    "Message type",
    "@type is missing",
    "Unpaired surrogate",
    "null is not allowed",
    "Value out of range",
)
WRONG_VALUE: Final = "a value of the wrong JSON type, or out of range, for this field"
MAX_REASON_CHARS: Final = 160


def describe(problem: BaseException) -> str:
    """``field node.locality.zone: <reason>`` for one ParseDict failure (or any exception
    the mapping let out: an ``OverflowError`` is a number out of range)."""
    if isinstance(problem, OverflowError):
        return "a number out of range for its field"
    if isinstance(problem, RecursionError):
        return "nested too deeply"
    text = str(problem)
    path: list[str] = []
    while (step := _FIELD.match(text)) is not None:
        path.append(step.group(1))
        text = text[step.end() :]
    reason = text.rstrip(".").strip()
    if not reason.startswith(_PROTOBUF_REASONS):
        reason = WRONG_VALUE
    elif " at " in reason and not reason.startswith("Message type"):
        reason = reason[: reason.rindex(" at ")]  # the path again, in protobuf's spelling
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return f"field {'.'.join(path)}: {reason}" if path else reason
