"""Config file bytes into text, as YAML allows: UTF-8 (with or without a byte order mark),
or UTF-16 / UTF-32 with one. Bytes that are not valid in their encoding are an
:class:`EncodingProblem` naming the line and the byte, never an exception of the codec's.
"""

from __future__ import annotations

import codecs

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


class EncodingProblem(Exception):
    """Text that cannot be decoded; ``line`` is where the first bad byte is."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def decode_config(data: bytes) -> str:
    """The text of a config file; raises :class:`EncodingProblem`."""
    codec, name, body = "utf-8", "UTF-8", data
    for bom, bom_codec, bom_name in _BOMS:
        if data.startswith(bom):
            codec, name, body = bom_codec, bom_name, data[len(bom) :]
            break
    try:
        return body.decode(codec)
    except UnicodeDecodeError as problem:
        text = body[: problem.start].decode(codec, errors="replace")
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
        bad = body[problem.start : problem.start + 4][: max(1, problem.end - problem.start)]
        shown = " ".join(f"0x{b:02x}" for b in bad)
        raise EncodingProblem(
            line, f"not valid {name} text: byte(s) {shown} at line {line}, column {column}"
        ) from None
