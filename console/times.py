"""Times as the operator reads them, one module for the CLI and the console.

* :func:`age` -- ``45s``, ``12m``, ``3h05m``, ``2d04h`` since an epoch time
  (``hitl sessions``, the console's lists, the invocation picker).
* :func:`stamp` -- a wall-clock time with the date when it is not today
  (``18:47:33`` today, ``2026-11-23 18:47:33`` otherwise): the event log,
  the details pane, ``hitl log``.
* :func:`date_time` -- always with the date.
* :func:`zone_label` -- which zone those are in, said once per view.

Times are local by default; ``hitl --utc`` (and so the console it opens)
switches every one of them to UTC with :func:`use_utc`. "Today" is judged in
the same zone, against the caller's clock (the console's injectable clock).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from engine.ages import readable_age as format_age

_SETTINGS = {"utc": False}
"""Process-wide, like the terminal the operator reads: set once by ``hitl --utc`` / HitlApp(utc=)."""


def use_utc(flag: bool) -> None:
    """Show every time in UTC (True) or in the local zone (False, the default)."""
    _SETTINGS["utc"] = bool(flag)


def utc() -> bool:
    return _SETTINGS["utc"]


def _dt(ts: float) -> datetime:
    if _SETTINGS["utc"]:
        return datetime.fromtimestamp(ts, UTC)
    return datetime.fromtimestamp(ts).astimezone()  # the local zone (honours TZ after tzset)


def age(then: float | None, now: float | None = None) -> str:
    """How long ago ``then`` was (epoch seconds), against ``now`` (default: the wall clock)."""
    if then is None:
        return "-"
    return format_age((time.time() if now is None else now) - then)


_LAST_SECOND: list[tuple[int, bool, str]] = [(-1, False, "")]
"""date_time's last (whole second, utc?, text): a long event log formats each second once."""


def date_time(ts: float | None) -> str:
    """``2026-11-23 18:47:33`` in the shown zone; ``-`` for None."""
    if ts is None:
        return "-"
    whole = int(ts)
    # Reused only well inside the second: datetime rounds to microseconds, which
    # must not carry into the next second.
    cacheable = ts >= 0 and ts - whole < 0.999999
    if cacheable:
        last, zone, text = _LAST_SECOND[0]
        if last == whole and zone == _SETTINGS["utc"]:
            return text
    text = _dt(ts).strftime("%Y-%m-%d %H:%M:%S")
    if cacheable:
        _LAST_SECOND[0] = (whole, _SETTINGS["utc"], text)
    return text


def stamp(ts: float | None, now: float | None = None) -> str:
    """``18:47:33`` when ``ts`` is today (in the shown zone, against ``now``), else with the date."""
    if ts is None:
        return "--:--:--"
    at = _dt(ts)
    today = _dt(time.time() if now is None else now).date()
    return at.strftime("%H:%M:%S") if at.date() == today else at.strftime("%Y-%m-%d %H:%M:%S")


def _offset(at: datetime) -> str:
    raw = at.strftime("%z")
    return f"UTC{raw[:3]}:{raw[3:]}" if raw else "UTC"


def zone_name(ts: float | None = None) -> str:
    """The short name of the shown zone: ``UTC``, ``JST``, or ``UTC+05:30`` when it has none."""
    if _SETTINGS["utc"]:
        return "UTC"
    at = _dt(time.time() if ts is None else ts)
    name = at.tzname() or ""
    return name if name and name[0] not in "+-" else _offset(at)


def zone_label(ts: float | None = None) -> str:
    """``UTC``, or ``local time, JST (UTC+09:00)``: said once where times are listed."""
    if _SETTINGS["utc"]:
        return "UTC"
    at = _dt(time.time() if ts is None else ts)
    name, offset = zone_name(ts), _offset(at)
    if offset == "UTC+00:00" and name in ("UTC", "GMT", offset):
        return "local time, UTC"
    return f"local time, {name} ({offset})" if name != offset else f"local time ({offset})"
