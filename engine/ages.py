"""An age as an operator reads it (``45s``, ``12m``, ``3h05m``, ``2d04h``): one spelling for
the engine's labels (a stale claim's) and every surface's lists (console/times.py)."""

from __future__ import annotations


def readable_age(seconds: float | None) -> str:
    """``45s``, ``12m``, ``3h05m``, ``2d04h``; ``-`` for None. Negative ages (clock skew) read ``0s``."""
    if seconds is None:
        return "-"
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h{m:02d}m"
    d, h = divmod(s // 3600, 24)
    return f"{d}d{h:02d}h"
