"""Data is text: the one place where strings from outside become printable.

Anything that came from a session, an answer, an operator, a file or an
exception passes through here before the console or the CLI shows it:

* :func:`clean` neutralises terminal control -- ESC sequences (``\\x1b[2J``,
  OSC 52 clipboard writes, OSC 8 links), every other C0/C1 control character
  and the bidi overrides that reorder what a line seems to say. C0 characters
  become their visible "control pictures" (``␛``, ``␀``), C1 characters and
  bidi controls the replacement character ``�``: one character for one, so a
  styled ``Text`` can be cleaned without moving its spans. Newlines and tabs
  are kept unless ``one_line``.
* :func:`clean_text` does that to a ``rich.text.Text`` (styles kept), and
  :class:`Cleaned` to the segments of any Rich renderable: the console's text
  widgets (:mod:`console.widgets.plain`) pass everything through them, so a
  string that reached a Text or a table unnoticed is neutralised anyway.
* :func:`literal` wraps a cleaned string in a ``rich.text.Text``, which Rich
  and Textual never parse as markup: ``[/tmp]`` stays ``[/tmp]`` and
  ``[@click=app.quit]`` is never clickable. Pass a ``Text`` -- never a ``str``
  -- to a Label, Static, DataTable cell, Tree label or Rich table whenever any
  part of it came from data.

One-line forms of values, shared by the CLI and the console: :func:`short`,
:func:`to_json`, :func:`id_list`.

``--json`` output does not come through here: it is exact (JSON escapes control
characters itself).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the CLI's clean() needs no Rich (a shorter start-up)
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement
    from rich.style import Style
    from rich.text import Text

    from engine.redact import Redactor

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Bidi marks, embeddings, overrides and isolates (they reorder what follows)."""

_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]")
_CONTROL_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI}]")


def _picture(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ ... ␟ (␛ for ESC)
    if code == 0x7F:
        return "\u2421"  # ␡
    return "\ufffd"  # C1 controls, bidi controls


_PLAIN = bytes(range(0x20, 0x7F)) + b"\t\n"
"""The ASCII characters :func:`clean` keeps as they are (``one_line``: not the last two)."""
_PLAIN_ONE_LINE = _PLAIN[:-2]


def clean(value: Any, *, one_line: bool = False) -> str:
    """``value`` as printable text: no terminal control, no bidi reordering.
    ``one_line``: newlines and tabs become ``␊`` / ``␉`` too."""
    text = value if isinstance(value, str) else str(value)
    # Printable ASCII -- nearly every line a long read prints -- is returned as it is:
    # deleting the printable characters in one C pass and finding none left costs a
    # tenth of the pattern's scan of a long text (tests/cli/test_event_log_speed_paths.py).
    if text.isascii() and not text.encode().translate(None, _PLAIN_ONE_LINE if one_line else _PLAIN):
        return text
    return (_CONTROL_ONE_LINE if one_line else _CONTROL).sub(_picture, text)


def clean_text(text: Text) -> Text:
    """``text`` with its characters cleaned (same length: its styles stay put)."""
    plain = text.plain
    cleaned = clean(plain)
    if cleaned == plain:
        return text
    out = text.copy()
    out.plain = cleaned
    return out


class Cleaned:
    """A Rich renderable whose rendered segments carry no terminal control."""

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for seg in console.render(self.renderable, options):
            if seg.control or not _CONTROL.search(seg.text):
                yield seg
            else:
                yield Segment(clean(seg.text), seg.style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.renderable)


def literal(value: Any, style: str | Style = "", *, one_line: bool = False) -> Text:
    """A ``Text`` showing ``value`` exactly (cleaned), never parsed as markup."""
    from rich.text import Text

    return Text(clean(value, one_line=one_line), style=style)


def assemble(*parts: str | tuple[Any, str | Style] | Text) -> Text:
    """Own words and data in one ``Text``: plain ``str`` parts are the console's
    own (no markup either), ``(value, style)`` tuples are data, cleaned."""
    from rich.text import Text

    t = Text()
    for part in parts:
        if isinstance(part, Text):
            t.append_text(part)
        elif isinstance(part, tuple):
            t.append(clean(part[0]), part[1])
        else:
            t.append(part)
    return t


# ------------------------------------------------------------ short values
def _kept_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, which builds its C encoder again on every call (half
    its time on a small value: :func:`short` encodes every output of a long
    read), with that C encoder built once per thread instead -- and the dict of
    the containers being encoded, which detects circular values, emptied when
    an encoding fails half-way (so that no stale id is taken for a circular
    reference afterwards). For an encoder ``encode`` gives to the C encoder
    (no indent)."""
    make = getattr(json.encoder, "c_make_encoder", None)  # (json's C accelerator: typeshed does not declare it)
    if make is None or encoder.indent is not None:  # (an interpreter without it: encode as ever)
        return encoder.encode
    strings = json.encoder.encode_basestring_ascii if encoder.ensure_ascii else json.encoder.encode_basestring
    local = threading.local()

    def encode(value: Any) -> str:
        state = getattr(local, "state", None)
        if state is None:
            markers: dict[int, Any] = {}
            state = local.state = (markers, make(markers, encoder.default, strings, None, encoder.key_separator,
                                                 encoder.item_separator, encoder.sort_keys, encoder.skipkeys,
                                                 encoder.allow_nan))
        try:
            return "".join(state[1](value, 0))
        except BaseException:
            state[0].clear()
            raise

    return encode


_COMPACT_JSON = _kept_encoder(json.JSONEncoder(default=str, ensure_ascii=False, separators=(",", ":")))
"""``json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))`` (a long
event log and a long tree shorten every output)."""


def short(
    value: Any,
    width: int = 40,
    red: Redactor | None = None,
    *,
    compact: bool = False,
    ellipsis: str = "…",
    quoted: bool = False,
) -> str:
    """``value`` on one line of at most ``width`` characters, cleaned: strings
    as they are, other values as JSON, whitespace folded, cut with ``ellipsis``.
    ``quoted``: strings as JSON too -- an answered value, where a bare ``none``
    would read as "no answer" and ``true`` as a boolean.
    ``red`` masks secrets first (the console's widgets pass the app's Redactor;
    the CLI masks before). ``compact`` (the CLI's form): JSON without spaces
    after separators, and None is empty rather than ``null``."""
    if red is not None:
        value = red.value(value)
    if compact and value is None:
        return ""
    if isinstance(value, str) and not quoted:
        text = value
    elif compact:
        text = _COMPACT_JSON(value)
    else:
        text = to_json(value)
    text = clean(" ".join(text.split()), one_line=True)
    return text if len(text) <= width else text[: max(width - len(ellipsis), 0)] + ellipsis


_display_json = _kept_encoder(json.JSONEncoder(default=repr, ensure_ascii=False))
"""``json.dumps(value, ensure_ascii=False, default=repr)``."""


def to_json(value: Any, indent: int | None = None) -> str:
    """JSON for display (terminal control and bidi controls neutralised); values
    JSON cannot encode are shown with ``repr``."""
    try:
        if indent is None:
            return clean(_display_json(value))
        return clean(json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=False, default=repr))
    except (TypeError, ValueError):
        return clean(repr(value))


def id_list(ids: list[str], limit: int = 3, *, more: str = " +{n}", empty: str = "") -> str:
    """``a, b, c +2``: a long id list stays one short line (``more`` says how many
    were left out: the CLI's ``" (+{n} more)"``; ``empty`` when there are none)."""
    if not ids:
        return empty
    head = clean(", ".join(ids[:limit]), one_line=True)
    return head + (more.format(n=len(ids) - limit) if len(ids) > limit else "")


def audit_what(action: str, details: dict[str, Any], ids: Callable[..., str] = id_list) -> str:
    """What an operator write did, in a few words: ``hitl audit``'s WHAT column and
    the console audit view's (``answered a, b``, ``re-drove``, ``cancelled``...);
    ``ids`` spells an id list (the CLI's says ``(+3 more)``)."""
    d = details
    if action == "answer":
        return f"answered {ids(d.get('ids', []), 4)}" + (f" ({d['batch']})" if d.get("batch") else "")
    if action == "import":
        return f"imported {d.get('events', '?')} events" + (f" from {d['source']}" if d.get("source") else "")
    if action == "redrive" and d.get("in_doubt"):
        return f"re-drove, acknowledged in doubt: {ids(d['in_doubt'], 3)}"
    if action == "fail":
        return f"failed {d.get('path') or '?'} with {d.get('error_code') or '?'}"
    if action == "deadline":
        to = d.get("group") or ", ".join(d.get("channels") or []) or d.get("owner") or "no one"
        verb = {"remind": "reminded", "notify": "notified", "assign": "assigning to"}.get(d.get("step", ""), "told")
        return f"{verb} {to} about {d.get('interrupt_id', '?')}"
    return {"redrive": "re-drove", "cancel": "cancelled"}.get(action, action)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 edge``, ``2 edges``, ``1 open id``: a count with its noun agreeing."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
