"""Reading the console off the page: the text of xterm.js's screen buffer.

textual-serve's page draws the terminal on a canvas, so its text is not in the
DOM. An init script notes every object that gets an xterm ``_core`` (the
``Terminal`` instances the page creates) so the test can read the buffer the
canvas is drawn from -- what the operator sees, cell for cell. Waits poll the
page's state with deadlines; nothing sleeps for a fixed time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CAPTURE_TERMINALS = """
(() => {
  const terms = (window.__hitlTerms = []);
  Object.defineProperty(Object.prototype, "_core", {
    configurable: true,
    get() { return undefined; },
    set(value) {
      Object.defineProperty(this, "_core", { value, writable: true, configurable: true });
      terms.push(this);
    },
  });
})();
"""

SCREEN_TEXT = """
() => {
  const term = (window.__hitlTerms || []).find((t) => t.buffer && t.buffer.active && t.rows);
  if (!term) return "";
  const buffer = term.buffer.active, lines = [];
  for (let i = 0; i < term.rows; i++) {
    const line = buffer.getLine(buffer.viewportY + i);
    lines.push(line ? line.translateToString(true) : "");
  }
  return lines.join("\\n");
}
"""


def screen_text(page: Any) -> str:
    return page.evaluate(SCREEN_TEXT)


def wait_text(page: Any, *needles: str, timeout: float = 45.0) -> str:
    """Wait until every needle is on the terminal screen; the screen text."""
    try:
        page.wait_for_function(
            f"(needles) => {{ const t = ({SCREEN_TEXT})(); return needles.every((n) => t.includes(n)); }}",
            arg=list(needles),
            timeout=timeout * 1000,
            polling=100,
        )
    except Exception as exc:
        raise AssertionError(
            f"never on screen: {needles!r} (page: {failure_shot(page)})\n--- screen ---\n{screen_text(page)}"
        ) from exc
    return screen_text(page)


def failure_shot(page: Any) -> str:
    """A screenshot of the page as a wait gave up, next to the test's others when they are kept."""
    import os
    import tempfile

    directory = os.environ.get("HITL_TEST_ARTIFACTS") or tempfile.gettempdir()
    path = Path(tempfile.mkstemp(prefix="browser-failure-", suffix=".png", dir=directory)[1])
    page.screenshot(path=str(path))
    return str(path)


def wait_gone(page: Any, needle: str, timeout: float = 45.0) -> str:
    try:
        page.wait_for_function(
            f"(needle) => !({SCREEN_TEXT})().includes(needle)", arg=needle, timeout=timeout * 1000, polling=100
        )
    except Exception as exc:
        raise AssertionError(f"still on screen: {needle!r}\n--- screen ---\n{screen_text(page)}") from exc
    return screen_text(page)


def open_console(page: Any) -> None:
    """Arm the terminal capture before the page's scripts run."""
    page.add_init_script(CAPTURE_TERMINALS)


def focus_terminal(page: Any) -> None:
    page.locator(".xterm-helper-textarea").focus()


def shot(page: Any, directory: Path, name: str) -> Path:
    path = directory / f"{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 0
    return path


CELL_GEOMETRY = """
() => {
  const term = (window.__hitlTerms || []).find((t) => t.buffer && t.buffer.active && t.rows);
  const box = document.querySelector(".xterm-screen").getBoundingClientRect();
  return { x: box.left, y: box.top, w: box.width / term.cols, h: box.height / term.rows };
}
"""


def click_after(page: Any, needle: str) -> None:
    """Click the terminal cell just after the first ``needle`` on screen (as an operator clicks
    into an editor at the end of a word): focus and cursor go there, whatever had the focus."""
    lines = screen_text(page).split("\n")
    found = [(row, line.find(needle)) for row, line in enumerate(lines) if needle in line]
    if not found:
        raise AssertionError(f"{needle!r} is not on screen:\n" + "\n".join(lines))
    row, col = found[0]
    cell = page.evaluate(CELL_GEOMETRY)
    col += len(needle)
    page.mouse.click(cell["x"] + (col + 0.5) * cell["w"], cell["y"] + (row + 0.5) * cell["h"])
