"""Pure text formatting shared by the console's widgets: short values, status
glyphs. Ages and times are :mod:`console.times` (one module with the CLI),
re-exported here. No state is computed here -- statuses come from
:mod:`engine.projection` or the store's summaries; this only spells them."""

from __future__ import annotations

from typing import Any

from engine.redact import Redactor
from engine.status import DisplayStatus

from .. import text
from ..text import clean, id_list, to_json  # noqa: F401 -- one-line forms shared with the CLI, re-exported
from ..times import age, date_time, format_age, stamp  # noqa: F401 -- the shared time formats, re-exported

STATUS_ICON: dict[str, str] = {
    DisplayStatus.PENDING: "○",
    DisplayStatus.RUNNING: "▶",
    DisplayStatus.WAITING: "◆",
    DisplayStatus.COMPLETED: "✓",
    DisplayStatus.FAILED: "✗",
    DisplayStatus.CANCELLED: "⊘",
    DisplayStatus.NEW: "·",
    DisplayStatus.INTERRUPTED: "⚠",
    DisplayStatus.IN_DOUBT: "⚠",
    DisplayStatus.QUEUED: "◷",
}
"""One-cell glyph per :class:`~engine.status.DisplayStatus` (the word is always
shown too: colour is not the only cue). ``INTERRUPTED`` and ``IN DOUBT`` come
from ``engine.liveness``: the projection says RUNNING, but no live process holds
the invocation's lease (it stopped mid-run); ``QUEUED`` too, when a turn request
waits for a worker of the app."""
assert set(STATUS_ICON) == set(DisplayStatus), "an icon per display status"

STATUS_CLASSES: set[str] = {s.css_class for s in DisplayStatus}
"""Component classes ``status--waiting`` etc.; their colours live in app.tcss."""


def status_class(status: str) -> str:
    """The component class of a status word (``waiting`` or ``WAITING`` -> ``status--waiting``)."""
    try:
        return DisplayStatus.of(status).css_class
    except ValueError:
        return f"status--{status.lower()}"


def shown(value: Any, red: Redactor | None = None) -> Any:
    """A stored value as the operator may see it: masked by ``red`` (the app's
    :class:`~engine.redact.Redactor`, which every console renderer is given);
    without one, by the default patterns -- never shown unmasked."""
    return (red if red is not None else Redactor()).value(value)


def shown_entry(key: str, value: Any, red: Redactor | None = None) -> Any:
    """``value`` stored under ``key`` (a top-level state key, say): masked when
    the key itself looks secret."""
    return shown({key: value}, red)[key]


def short(value: Any, width: int = 40, red: Redactor | None = None, *, quoted: bool = False) -> str:
    """:func:`console.text.short`: data masked by ``red`` (the renderer's Redactor);
    None is for the console's own words and ids, which are not masked. ``quoted``
    for answered values (strings as JSON)."""
    return text.short(value, width, red, quoted=quoted)


def short_tail(value: Any, width: int, red: Redactor | None = None) -> str:
    """:func:`short` cut at the front (``…label_all@1/label_item@2``): of a node path
    the end says which node it is, so that is what a narrow column keeps."""
    whole = short(value, 1_000_000, red)
    return whole if len(whole) <= width else "…" + whole[len(whole) - max(width - 1, 0):]


def short_id(value: str, width: int = 12) -> str:
    value = clean(value, one_line=True)
    return value if len(value) <= width else value[: width - 1] + "…"


def choose_columns(
    natural: dict[str, int], room: int, *, first: tuple[str, ...], then: tuple[str, ...], readable: dict[str, int],
    pad: int = 2,
) -> tuple[str, ...]:
    """Which columns a narrow table shows: every ``first`` column, then each of
    ``then`` in its order while it still fits at a readable width (its natural
    width, at most ``readable[key]``) with ``pad`` columns of padding, the others
    left out. A column that does not fit is skipped and the next tried, so a short
    one later in the order may still be shown. ``room``: the width left after the
    columns that are never cut (statuses, ages). Then :func:`fit_widths` sizes
    the chosen ones."""
    def need(key: str) -> int:
        return min(natural[key], readable.get(key, natural[key])) + pad

    used = sum(need(k) for k in first)
    shown = list(first)
    for key in then:
        if used + need(key) <= room:
            shown.append(key)
            used += need(key)
    return tuple(shown)


def fit_widths(
    natural: dict[str, int], room: int, *, order: tuple[str, ...], minimum: dict[str, int], comfortable: int = 14
) -> dict[str, int]:
    """Column widths that fit ``room`` columns: each column its ``natural`` width
    when everything fits; else the columns in ``order`` give way one after the other
    (each down to its ``minimum``), and what is still missing is shared out. The
    caller keeps statuses and counts out of ``natural``: those are never cut.
    Two rounds: first each column gives way only down to ``comfortable``
    characters (enough to tell values apart), then down to its ``minimum``, so
    one very long value does not squeeze every other column to its minimum."""
    widths = dict(natural)
    excess = sum(widths.values()) - max(room, 0)
    for floor in (lambda k: max(minimum.get(k, 1), min(natural[k], comfortable)), lambda k: minimum.get(k, 1)):
        for key in order:
            if excess <= 0:
                return widths
            give = min(excess, max(widths[key] - floor(key), 0))
            widths[key] -= give
            excess -= give
    return widths
