"""The home screen's summary line: :class:`engine.home.HomeSummary` spelled to fit
the width. Counts and states are never cut: what does not fit is the least
important part (apps after the first ones, then the sparkline, then the apps,
then the oldest age); the state counts are always there whole."""

from __future__ import annotations

from rich.text import Text

from engine.home import HomeSummary, sparkline
from engine.redact import Redactor

from ..times import age
from .format import short


def summary_text(
    s: HomeSummary, now: float, width: int, red: Redactor | None = None, operator: str | None = None
) -> Text:
    """The summary line for a terminal ``width`` columns wide; once anybody owns an
    open interrupt it says how many are ``operator``'s ("3 yours")."""
    states = Text(" ")
    parts = [
        ("waiting", s.waiting, "status--waiting"),
        ("interrupted", s.interrupted, "status--interrupted"),
        ("in doubt" if s.in_doubt_exact else "in doubt (≥)", s.in_doubt, "status--in-doubt"),
        *([("queued", s.queued, "status--queued")] if s.queued else []),  # only once workers are in use
        ("failed", s.failed, "status--failed"),
        ("running", s.running, "status--running"),
    ]
    for i, (word, n, _cls) in enumerate(parts):
        if i:
            states.append(" · ", "dim")
        states.append(f"{n:,}", "b" if n else "dim")
        states.append(f" {word}")
    if s.open_by_owner:
        mine = s.yours(operator)
        states.append("  ")
        states.append(f"{mine:,}", "b" if mine else "dim")
        states.append(" yours")
    oldest = Text("  oldest ")
    oldest.append(age(s.oldest_open_at, now) if s.oldest_open_at is not None else "-", "b")
    spark = Text("  raised/h (24h) ")
    spark.append(sparkline(list(s.raised_per_hour)))
    spark.append(f" {sum(s.raised_per_hour):,}")

    def apps(n: int) -> Text:
        t = Text("  open: " if s.open_by_app else "")
        for i, (app, count) in enumerate(s.open_by_app[:n]):
            if i:
                t.append(" · ", "dim")
            t.append(short(app, 20, red))
            t.append(f" {count:,}", "b")
        rest = len(s.open_by_app) - n
        if rest > 0 and n > 0:
            t.append(f" · +{rest} more", "dim")
        return t

    # What gives way first: apps after the first ones, then the sparkline, then the rest of the apps.
    n_apps = len(s.open_by_app)
    candidates: list[list[Text]] = [[states, oldest, apps(n), spark] for n in range(n_apps, 0, -1)]
    candidates += [[states, oldest, apps(n)] for n in range(n_apps, 0, -1)]
    candidates += [[states, oldest, spark], [states, oldest], [states]]
    for parts_ in candidates:
        line = Text().join(parts_)
        if line.cell_len <= width:
            return line
    return states
