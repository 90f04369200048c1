"""The served console in a real (headless, system) Chromium: sign in, triage, answer, as
an operator would; a viewer who cannot write. Each step leaves a screenshot."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .served import PASSWORDS, hitl_bin, label, serve, write_config
from .term import SCREEN_TEXT, focus_terminal, open_console, shot, wait_text


def sign_in(page: Any, url: str, name: str, shots: Path | None = None) -> None:
    open_console(page)
    page.goto(url + "/")
    page.wait_for_url(url + "/login")
    page.fill("#name", name)
    page.fill("#secret", PASSWORDS[name])
    if shots is not None:
        shot(page, shots, "01-sign-in")
    page.click("#sign-in")
    page.wait_for_url(url + "/")


def hitl_out(db: Path | str, *args: str) -> str:
    out = subprocess.run([hitl_bin(), "--db", str(db), "--read-only", *args, "--json"], check=True,
                         capture_output=True, text=True, timeout=60)
    return out.stdout


def all_shown(db: Path | str) -> str:
    """The home's count line: it opens in triage order, the sessions that need an
    operator (an open interrupt, stopped mid-run, or failed: a re-drive)."""
    rows = json.loads(hitl_out(db, "sessions"))["sessions"]
    return f"{sum(1 for r in rows if r['open_interrupts'] or r['interrupted'] or r['status'] == 'failed')} shown"


def open_refund_waiting(page: Any, db: Path | str) -> str:
    wait_text(page, "hitl ▸ Sessions", "refund-waiting-1", all_shown(db))
    focus_terminal(page)
    page.keyboard.press("/")
    wait_text(page, "search ids")  # the filter has the focus: type into it
    page.keyboard.type("refund-waiting")
    page.keyboard.press("Enter")
    wait_text(page, "1 shown")
    page.keyboard.press("Enter")
    return wait_text(page, "Session refund-waiting-1", "finance-order-1001", "WAITING")


def test_operator_signs_in_and_answers_one_id_with_the_keyboard(
    browser_page: Any, any_store: Path | str, tmp_path: Path, shots: Path
) -> None:
    page, store = browser_page, any_store
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        sign_in(page, served.url, "alice", shots)
        assert page.title() == f"hitl console (test) · {label(store)}"
        assert page.locator("link[rel=icon]").get_attribute("href").startswith("data:image/svg+xml")
        assert page.inner_text("#hitl-connected") == f"connected to {label(store)}"
        assert "signed in as alice" in page.inner_text("#hitl-bar")

        wait_text(page, "refund-waiting-1", all_shown(store))
        shot(page, shots, "02-sessions")

        open_refund_waiting(page, store)
        shot(page, shots, "03-waiting-session")

        page.keyboard.press("e")  # answer this node's id in the editor
        # The form: nothing is chosen for the operator, so it cannot be submitted yet.
        wait_text(page, "Answer ▸ refund-waiting-1", "approved *", "Not ready to submit", "press y or n")
        page.keyboard.press("y")  # approve; the focus moves on to the note
        wait_text(page, "● y yes")
        # The note typed without waiting, as a fast operator does: the keys reach the console in
        # bursts and must still be applied in order (console/widgets/keys.py).
        page.keyboard.type("ok, paid")
        for _ in "paid":
            page.keyboard.press("Backspace")
        page.keyboard.type("fine")
        # The dry run of the final answer done: its shell command carries the final note. ("ok, fine"
        # alone is the note field, which can be ahead of the dry run: ctrl+s then says the dry run is
        # still running, as it should, and ci10 waited for a confirm dialog that never came.)
        wait_text(page, "● y yes", "ok, fine", "✓ valid", "auto-complete", "finance-order-1001=", '"note":"ok, fine"}\'')
        shot(page, shots, "04-answer-editor")

        page.keyboard.press("Control+s")
        screen = wait_text(page, "Submit 1 answer", "alice")
        shot(page, shots, "05-confirm")
        assert "--operator alice" in screen.replace("\n", " ")  # the signed-in name, not $USER
        page.keyboard.type("approved in the browser")
        page.keyboard.press("Control+s")
        wait_text(page, "Outcome · session refund-waiting-1", "Answered finance-order-1001 by alice")
        shot(page, shots, "06-outcome")

    audit = json.loads(hitl_out(store, "audit", "--session", "refund-waiting-1"))["audit"]
    mine = [r for r in audit if r["reason"] == "approved in the browser"]
    assert [(r["action"], r["operator"], r["details"]["ids"]) for r in mine] == [
        ("answer", "alice", ["finance-order-1001"])
    ], audit
    events = [json.loads(line) for line in hitl_out(store, "events", "refund-waiting-1").splitlines()]
    answers = [e for e in events if (e.get("custom_metadata") or {}).get("reason") == "approved in the browser"]
    assert len(answers) == 1
    assert answers[0]["custom_metadata"]["operator"] == "alice"
    # the note as typed in a burst (its backspaces applied in order)
    assert answers[0]["content"]["parts"][0]["function_response"]["response"] == {"approved": True, "note": "ok, fine"}
    assert "signed in: 'alice' (operator)" in served.log()
    assert PASSWORDS["alice"] not in served.log()


def store_state(db: Path | str) -> tuple[str, str]:
    """What a write would change, on any store kind: every session's counts and times, and the audit."""
    return hitl_out(db, "sessions", "--limit", "10000"), hitl_out(db, "audit")


def test_viewer_signs_in_and_cannot_write(browser_page: Any, any_store: Path | str, tmp_path: Path,
                                          shots: Path) -> None:
    page, store = browser_page, any_store
    before = store_state(store)
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        sign_in(page, served.url, "val")
        assert "viewer · read-only" in page.inner_text("#hitl-bar")
        screen = wait_text(page, "READ-ONLY", "refund-waiting-1")
        shot(page, shots, "01-viewer-sessions")
        open_refund_waiting(page, store)
        for key in (" ", "X"):  # (e opens the editor for a read-only dry run)
            page.keyboard.press(key)
        # The second refusal replaces the first toast: wait for the screen that shows it alone, and read
        # that very screen (a fresh read could land between the old toast's removal and the new one).
        screen = page.wait_for_function(
            f"() => {{ const t = ({SCREEN_TEXT})(); return t.split('is disabled').length === 2"
            " && t.includes('Cancel is disabled') && t.includes('viewer') ? t : false; }",
            timeout=45_000, polling=100,
        ).json_value()
        shot(page, shots, "02-viewer-write-refused")
        assert "Answer ▸" not in screen and "Cancel invocation" not in screen
        assert "invocation.cancel" not in screen and "interrupts.toggle" not in screen  # no internal ids
        assert screen.count("is disabled") == 1  # one toast, the last refused key's
        served.wait_log("console opened for 'val' (viewer)")
    assert store_state(store) == before


def test_the_terminal_has_the_keyboard_once_the_page_loads(browser_page: Any, store: Path, tmp_path: Path) -> None:
    """Issue 34: after load the terminal had no focus -- keys were ignored and the footer
    hints blank until a click. No click here, no focus call: the page gives it the keys."""
    page = browser_page
    with serve(store, cwd=tmp_path) as served:  # loopback, no sign-in
        open_console(page)
        page.goto(served.url + "/")
        wait_text(page, "hitl ▸ Sessions", "refund-waiting-1", "palette")  # the footer's hints are drawn
        assert page.evaluate("document.activeElement.className").find("xterm-helper-textarea") >= 0
        page.keyboard.press("/")
        wait_text(page, "search ids")
