"""The process's open-file limit, raised to what the system allows.

Every proxy stream is a socket, so a control plane runs out of file descriptors long
before it runs out of memory when the soft limit is the common default of 1,024. Go
programs such as istiod raise the soft limit to the hard one at start; ``serve`` does
the same before it opens anything (workers inherit it). The hard limit itself is the
operator's to set (``ulimit -Hn``, systemd's ``LimitNOFILE``, the container runtime).
"""

from __future__ import annotations

import resource


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard one; returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # a hard limit the kernel still refuses (nr_open)
        return soft, soft
    return soft, hard
