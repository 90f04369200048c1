"""Pure text formatting shared by the console's widgets: short values, status
glyphs. Ages and times are :mod:`console.times` (one module with the CLI),
re-exported here. No state is computed here -- statuses come from
:mod:`engine.projection` or the store's summaries; this only spells them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.redact import DEFAULT_SECRET_PATTERNS, Redactor
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
}
"""One-cell glyph per :class:`~engine.status.DisplayStatus` (the word is always
shown too: colour is not the only cue). ``INTERRUPTED`` and ``IN DOUBT`` come
from ``engine.liveness``: the projection says RUNNING, but no live process holds
the invocation's lease (it stopped mid-run)."""
assert set(STATUS_ICON) == set(DisplayStatus), "an icon per display status"

STATUS_CLASSES: set[str] = {s.css_class for s in DisplayStatus}
"""Component classes ``status--waiting`` etc.; their colours live in app.tcss."""


def status_class(status: str) -> str:
    """The component class of a status word (``waiting`` or ``WAITING`` -> ``status--waiting``)."""
    try:
        return DisplayStatus.of(status).css_class
    except ValueError:
        return f"status--{status.lower()}"


_SECRETS: dict[str, Any] = {"redactor": Redactor(DEFAULT_SECRET_PATTERNS)}
"""How stored values are shown: the app's one :class:`~engine.redact.Redactor`
(secret keys masked, known secret values and DSN/bearer patterns masked in
text) unless the console was started with --show-secrets (set by HitlApp)."""


def configure_secrets(show: bool, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> Redactor:
    """Make the app's one Redactor (HitlApp keeps it as ``app.redactor`` and passes
    it to the answer editor, the dry run and the outcome; other widgets reach it here)."""
    red = _SECRETS["redactor"] = Redactor(patterns, show=show)
    return red


def redactor() -> Redactor:
    """The console's Redactor (see :func:`configure_secrets`)."""
    return _SECRETS["redactor"]


def shown(value: Any) -> Any:
    """A stored value as the operator may see it (the console's Redactor)."""
    return redactor().value(value)


def shown_entry(key: str, value: Any) -> Any:
    """``value`` stored under ``key`` (a top-level state key, say): masked when
    the key itself looks secret."""
    return shown({key: value})[key]


def short(value: Any, width: int = 40, red: Redactor | None = None) -> str:
    """:func:`console.text.short` with the app's Redactor unless ``red``."""
    return text.short(value, width, red or redactor())


def short_id(value: str, width: int = 12) -> str:
    value = clean(value, one_line=True)
    return value if len(value) <= width else value[: width - 1] + "…"
