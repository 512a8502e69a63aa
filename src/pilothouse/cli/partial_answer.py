"""The header that marks a ``serve --workers N`` debug answer as missing some workers' part.

Written by the worker that merges the answer (:mod:`pilothouse.cli.worker_debug`) and read
by the CLI's admin client (:mod:`pilothouse.cli.admin_client`), which imports this alone so
that ``proxy-status`` and ``proxy-config`` load none of the server's debug handling.
"""

from __future__ import annotations

from typing import Final

PARTIAL: Final = "Pilothouse-Workers-Missing"
"""Response header naming the workers whose answer is missing from a merged answer."""
