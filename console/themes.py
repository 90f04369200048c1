"""Themes: status colours that stay readable, and the chosen theme kept in ``hitl.toml``.

The status colours (``$status-running`` ...) are theme variables computed here
(:func:`status_variables`, from :meth:`HitlApp.get_css_variables`) rather than
fixed in app.tcss: each starts from the theme's own text colour for its meaning
(``$text-primary`` for RUNNING, ``$text-warning`` for WAITING ...) and, when the
theme gives RGB colours, is moved towards the theme's foreground until it has a
WCAG contrast of at least :data:`MIN_CONTRAST` against the background and the
surface the tables and trees are drawn on. ANSI themes name terminal colours
(their RGB is the terminal's): there RUNNING would be the cursor's own blue
(``ansi-light``: a selected RUNNING row was blue on blue), so it takes magenta.

A theme chosen in the palette is written to ``[console] theme`` of the config
file (:func:`save_theme`), and ``hitl`` starts with it next time.
"""

from __future__ import annotations

from pathlib import Path

from textual.color import Color

MIN_CONTRAST = 4.5
"""WCAG AA for normal text."""

STATUS_BASE: dict[str, str] = {
    "status-pending": "text-secondary",
    "status-running": "text-primary",
    "status-waiting": "text-warning",
    "status-completed": "text-success",
    "status-failed": "text-error",
    "status-cancelled": "text-muted",
    "status-new": "text-muted",
    "status-queued": "text-accent",
}
"""Each status colour: the theme variable it starts from."""

ANSI_AVOID = "ansi_magenta"
"""An ANSI status colour equal to the cursor's takes this one instead."""


def _luminance(c: Color) -> float:
    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two opaque colours (1 to 21)."""
    la, lb = _luminance(a), _luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def _rgb(value: str | None) -> Color | None:
    """An opaque RGB colour, or None for ANSI names, ``auto``, percentages..."""
    if not value or value.startswith("ansi_") or " " in value or value.startswith("auto"):
        return None
    try:
        c = Color.parse(value)
    except Exception:  # noqa: BLE001 -- not a colour this module can reason about
        return None
    return c if c.a == 1 else None


def readable(colour: Color, backgrounds: list[Color], towards: Color) -> Color:
    """``colour`` blended towards ``towards`` (the theme's foreground) just enough to
    reach :data:`MIN_CONTRAST` against every background (as close as it gets)."""
    best = colour
    for step in range(11):
        c = colour.blend(towards, step / 10)
        best = c
        if all(contrast(c, bg) >= MIN_CONTRAST for bg in backgrounds):
            return c
    return best


def status_variables(variables: dict[str, str]) -> dict[str, str]:
    """The ``status-*`` CSS variables for a theme's variables (see the module docstring)."""
    out: dict[str, str] = {}
    backgrounds = [c for c in (_rgb(variables.get("background")), _rgb(variables.get("surface"))) if c is not None]
    fg = _rgb(variables.get("foreground"))
    cursor = variables.get("block-cursor-background")
    for name, base in STATUS_BASE.items():
        value = variables.get(base, "")
        rgb = _rgb(value)
        if rgb is not None and backgrounds and fg is not None:
            value = readable(rgb, backgrounds, fg).hex
        elif value.startswith("ansi_") and value in (cursor, variables.get("primary")):
            value = ANSI_AVOID
        out[name] = value or variables.get("foreground", "")
    return out


def save_theme(path: Path, theme: str) -> str:
    """Write ``[console] theme`` to ``path``; the one line to tell the operator."""
    from engine.configfile import set_value

    try:
        set_value(path, "console", "theme", theme)
    except (OSError, ValueError) as e:
        return f"Theme {theme} is used now but not saved: {path}: {e}"
    return f"Theme {theme} saved to {path} ([console] theme)"
