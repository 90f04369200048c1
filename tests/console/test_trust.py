"""Issue 11, the console's promises to an operator that the happy path does not
show: quitting never abandons a turn silently, what was typed is never dropped,
a refusal says so, `--config` reaches the console, times say their date and
zone, the inbox says what stopped mid-run, imported sessions keep their age.

Every wait is on state (predicates with generous deadlines), never on time."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from console.screens.answer import AnswerScreen
from console.screens.answer_dialogs import ConfirmWrite, OutcomeScreen
from console.screens.inbox import InboxScreen
from console.screens.session import SessionScreen
from console.widgets.event_log import EventLog
from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.apps import AppRegistry
from engine.liveness import in_doubt_paths
from engine.models import Event, NodeInfo, NodeStatus
from engine.store import MemoryStore

from .answer_store import demo_store, invocation
from .test_answer import app_for, editor, open_session, settle, wait_until
from .test_answer import write as ready_to_submit

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def to_confirmation(pilot: Any, session_id: str, answers: dict[str, str]) -> tuple[SessionScreen, AnswerScreen]:
    """Open the session, `e` (the cursor node's ids), type the answers, ctrl+s: the confirmation is up."""
    session = await open_session(pilot, session_id)
    await pilot.press("e")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, AnswerScreen) and screen.selected == list(answers)
    await ready_to_submit(pilot, screen, answers)
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmWrite)
    return session, screen


async def open_inbox(pilot: Any) -> InboxScreen:
    await settle(pilot)
    pilot.app.action_show_inbox()
    await settle(pilot)
    inbox = pilot.app.screen
    assert isinstance(inbox, InboxScreen)
    await wait_until(pilot, lambda: inbox.loaded_once and inbox.selected is not None)
    return inbox


def toasts(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


# ------------------------------------------------------------------ 1. quit guard
GATE: dict[str, asyncio.Event] = {}


@node
async def ask_go(node_input: Any) -> Any:
    yield RequestInput("Go?", response_schema=bool, interrupt_id="go")


@node
async def slow_pay(node_input: Any) -> str:
    GATE["started"].set()
    await GATE["release"].wait()
    return f"paid ({node_input})"


slow_wf = Workflow("slow", [(START, ask_go), (ask_go, slow_pay)])


async def slow_session(session_id: str) -> tuple[MemoryStore, Any]:
    """A store with ``session_id`` waiting on ``go`` and an app whose turn, once
    answered, waits in ``pay`` for ``GATE["release"]`` (a fresh GATE each time)."""
    GATE.update(started=asyncio.Event(), release=asyncio.Event())
    store = MemoryStore()
    reg = AppRegistry()
    reg.register("slow", slow_wf)
    async for _ in Runner("slow", slow_wf, store).run("u", session_id, Content.from_text("x")):
        pass
    return store, app_for(store, registry=reg)


async def test_quit_while_a_console_turn_runs_asks_first_and_waits_for_it() -> None:
    """ctrl+s, then q (and ctrl+q, ctrl+c) while the turn runs: a dialog whose
    default is "wait for it"; the app quits once the turn settled; nothing in doubt."""
    store, app = await slow_session("slow-1")
    from console.screens.answer_dialogs import QuitGuard

    async with app.run_test(size=(120, 40)) as pilot:
        session, _ = await to_confirmation(pilot, "slow-1", {"go": "true"})
        await pilot.press("ctrl+s")
        await wait_until(pilot, GATE["started"].is_set)
        assert session.writing == "answer"
        for key in ("q", "ctrl+q", "ctrl+c"):
            await pilot.press(key)
            await pilot.pause()
            guard = app.screen
            assert isinstance(guard, QuitGuard), f"{key}: {type(guard).__name__}"
            assert app.return_code is None  # not quitting
            assert guard.focused is not None and guard.focused.id == "quit-wait"  # the default choice
            text = " ".join(str(w.render()) for w in guard.query("Static, Label"))
            assert "answer" in text and "slow-1" in text and "in doubt" in text
            if key != "ctrl+c":
                await pilot.press("escape")  # keep working: back where we were
                await pilot.pause()
                assert not isinstance(app.screen, QuitGuard)
        await pilot.press("enter")  # wait for it, then quit
        await pilot.pause()
        assert app.return_code is None  # still waiting: the turn has not settled
        assert "waiting" in str(app.screen.query_one("#quit-status").render())
        GATE["release"].set()
        await wait_until(pilot, lambda: app.return_code is not None)
    inv, proj = await invocation(store, "slow-1")
    run = proj.get(inv, "slow@1/slow_pay@1")
    assert run is not None and run.status is NodeStatus.COMPLETED
    assert in_doubt_paths(proj, inv) == [] and proj.invocation_status(inv) is NodeStatus.COMPLETED


async def test_quit_without_a_running_turn_quits_at_once() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_code is not None)


# ------------------------------------------------------------------ 4. refusal
async def test_a_refused_submit_says_so_and_keeps_the_text_visible() -> None:
    """Another process answers the only selected id between open and submit: the
    outcome is the refusal (never "answer: running…"), and the text stays on screen."""
    store = await demo_store()
    app = app_for(store)
    mine = '{"approved": true, "note": "mine-7"}'
    async with app.run_test(size=(120, 40)) as pilot:
        session, screen = await to_confirmation(pilot, "refund-waiting-1", {"finance-order-1001": mine})
        other = Runner("refund_approval", AppRegistry().get("refund_approval"), store)
        async for _ in other.run("alice", "refund-waiting-1", Content.from_responses(
                {"finance-order-1001": {"approved": False}}), operator="rick"):
            pass
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen) and app.screen is not screen)
        again = app.screen
        await settle(pilot)
        assert session.writing is None
        assert "running…" not in str(session.query_one("#session-info").render())
        assert any("Not submitted" in t or "already answered" in t for t in toasts(app)), toasts(app)
        banner = str(again.query_one("#answer-banner").render())
        assert "already answered" in banner and "nothing was written" in banner
        shown = " ".join(str(w.render()) for w in again.query("#answer-editors Static"))
        kept = [a.text for a in again.query("#answer-editors TextArea")]  # type: ignore[attr-defined]
        assert "mine-7" in shown or any("mine-7" in k for k in kept), (shown, kept)


# ------------------------------------------------------------------ 5. reason after Tab
async def test_the_reason_survives_tab_to_submit() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_confirmation(pilot, "refund-waiting-1", {"finance-order-1001": '{"approved": true}'})
        dialog = app.screen
        labels = " ".join(str(w.render()) for w in dialog.query("Label"))
        assert "Operator" in labels and "Reason" in labels
        await pilot.press(*"checked with bob", "tab")
        await pilot.pause()
        assert dialog.focused is not None and dialog.focused.id != "confirm-reason"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    fr = [se.event for se in await store.events("refund-waiting-1") if se.event.kind == "response"]
    assert fr[-1].custom_metadata == {"action": "resume", "operator": "tester", "reason": "checked with bob"}


# ------------------------------------------------------------------ 6. --config reaches the console
async def test_the_config_file_names_the_operator_of_console_writes(tmp_path: Path) -> None:
    from console.config import ConsoleConfig

    team = tmp_path / "cfg" / "team.toml"
    team.parent.mkdir()
    team.write_text('[console]\noperator = "carol"\n')
    store = await demo_store()
    app = app_for(store, config=ConsoleConfig.load(team))
    async with app.run_test(size=(120, 40)) as pilot:
        await to_confirmation(pilot, "refund-waiting-1", {"finance-order-1001": '{"approved": true}'})
        await pilot.press(*"ok", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    fr = [se.event for se in await store.events("refund-waiting-1") if se.event.kind == "response"]
    assert fr[-1].custom_metadata["operator"] == "carol"
    (audit,) = (await store.audit_log(session_id="refund-waiting-1", action="answer")).items
    assert audit.operator == "carol"


def test_hitl_config_is_read_once_and_given_to_the_console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import console.app
    from console.cli import cli

    team = tmp_path / "team.toml"
    team.write_text('[console]\noperator = "carol"\n[secrets]\npatterns = ["iban"]\n')
    seen: dict[str, Any] = {}
    monkeypatch.setattr(console.app, "run_app", lambda *a, **kw: seen.update(kw))
    result = CliRunner().invoke(cli, ["--config", str(team), "--db", str(tmp_path / "x.sqlite"), "--utc"])
    assert result.exit_code == 0, result.output
    config = seen["config"]
    assert config.operator == "carol" and config.path == team and "iban" in config.secret_patterns
    assert config.utc is True


def test_the_config_file_is_parsed_once_for_every_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Operator, apps, secret patterns and the store table come from one parse
    of the file (engine/configfile.py), not one read per reader."""
    import tomllib

    import console.app
    import engine.configfile
    from console.cli import cli

    engine.configfile._parse.cache_clear()
    parses: list[str] = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parses.append(text) or real(text))  # configfile imports it when it parses
    team = tmp_path / "team.toml"
    team.write_text('[console]\noperator = "carol"\n[secrets]\npatterns = ["iban"]\n[store]\n')
    monkeypatch.setattr(console.app, "run_app", lambda *a, **kw: None)
    result = CliRunner().invoke(cli, ["--config", str(team), "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 0, result.output
    assert len(parses) == 1, parses


# ------------------------------------------------------------------ 8. keys right after `e`
class HeldLoad:
    """The answer editor's store load, held until :meth:`release` (a slow store, on purpose)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import console.screens.answer as answer_module

        self.gate = asyncio.Event()
        self.real = answer_module.load_invocation
        self.monkeypatch, self.module = monkeypatch, answer_module

    def hold(self) -> None:
        self.monkeypatch.setattr(self.module, "load_invocation", self._held)

    def release(self) -> None:
        self.gate.set()

    async def _held(self, *a: Any, **kw: Any) -> Any:
        await self.gate.wait()
        return await self.real(*a, **kw)


async def test_keys_typed_right_after_e_reach_the_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store answers slowly (the load is held until the keys are typed):
    what is typed right after `e` lands in the editor, not in the id list."""
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        held = HeldLoad(monkeypatch)
        held.hold()
        await pilot.press("e", "n", *"dup")  # reject, and a note (the form's first field, then the next)
        held.release()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        assert screen.selected == ["finance-order-1001"]  # nothing went to the id list
        ed = editor(screen, "finance-order-1001")
        assert ed.check.value == {"approved": False, "note": "dup"}, ed.check


# ------------------------------------------------------------------ 2. times
def test_one_age_function_for_the_cli_and_the_console() -> None:
    import console.cli as cli
    import console.times as times
    import console.widgets.format as fmt

    assert cli.age is times.age
    assert getattr(fmt, "age", times.age) is times.age
    now = 1_800_000_000.0
    assert times.age(now - 45, now) == "45s"
    assert times.age(now - 3700, now) == "1h01m"
    assert times.age(now - 8 * 86400 - 7200, now) == "8d02h"
    assert times.age(None, now) == "-"
    assert times.age(now + 5, now) == "0s"  # clock skew


@pytest.fixture
def tokyo() -> Any:
    import os

    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    yield
    os.environ["TZ"] = "UTC"  # conftest's pin, restored by it afterwards
    time.tzset()


def test_times_show_the_date_when_not_today_and_the_zone(tokyo: Any) -> None:
    import console.times as times

    now = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC, 17:00 in Tokyo
    times.use_utc(False)
    assert times.stamp(now - 60, now) == "16:59:00"
    assert times.stamp(now - 8 * 86400, now) == "2027-01-07 17:00:00"
    assert times.stamp(now - 18 * 3600, now) == "2027-01-14 23:00:00"  # yesterday in Tokyo
    assert "JST" in times.zone_label() and "local" in times.zone_label()
    try:
        times.use_utc(True)
        assert times.stamp(now - 60, now) == "07:59:00"
        assert times.stamp(now - 9 * 3600, now) == "2027-01-14 23:00:00"  # yesterday in UTC
        assert times.zone_label() == "UTC"
        assert times.date_time(now) == "2027-01-15 08:00:00"
    finally:
        times.use_utc(False)


async def test_the_event_log_shows_dates_and_labels_the_zone_once() -> None:
    """The demo's events are 8 days before the app's clock: each line has its date."""
    import console.times as times

    store = await demo_store()
    app = app_for(store, utc=True)
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "refund-waiting-1")
        log = session.query_one(EventLog)
        await wait_until(pilot, lambda: log.line(1) is not None)
        first = log.line(1)
        assert first is not None
        line = log._text(first, 4, 30).plain
        assert times.date_time(first.timestamp) in line  # 2026-..-.. HH:MM:SS, not just HH:MM:SS
        assert "UTC" in str(log.border_title)
    times.use_utc(False)


def test_hitl_utc_switches_cli_times(tmp_path: Path, tokyo: Any) -> None:
    from console.cli import cli

    db = tmp_path / "d.sqlite"
    assert CliRunner().invoke(cli, ["demo", "--db", str(db)]).exit_code == 0
    local = CliRunner().invoke(cli, ["--db", str(db), "audit"])
    utc = CliRunner().invoke(cli, ["--db", str(db), "--utc", "audit"])
    assert local.exit_code == 0 and utc.exit_code == 0, (local.output, utc.output)
    assert "JST" in local.output and "UTC" in utc.output
    assert local.output != utc.output


def test_hitl_show_names_the_zone_of_its_times(tmp_path: Path, tokyo: Any) -> None:
    from console.cli import cli

    db = tmp_path / "d.sqlite"
    assert CliRunner().invoke(cli, ["demo", "--db", str(db)]).exit_code == 0
    local = CliRunner().invoke(cli, ["--db", str(db), "show", "refund-waiting-1"])
    utc = CliRunner().invoke(cli, ["--db", str(db), "--utc", "show", "refund-waiting-1"])
    assert local.exit_code == 0 and utc.exit_code == 0, (local.output, utc.output)
    started = [line for line in local.output.splitlines() if " started " in line]
    assert started and all(re.search(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST ", line) for line in started)
    assert all(" UTC " in line for line in utc.output.splitlines() if " started " in line)


# ------------------------------------------------------------------ 3. inbox states
async def test_the_inbox_shows_interrupted_and_in_doubt_rows() -> None:
    """refund-waiting-1's turn was started again and its process died mid-node:
    its open ids are INTERRUPTED and IN DOUBT in the inbox; others stay WAITING."""
    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")
    for path, container in (("refund@1", True), ("refund@1/notify@1", False)):
        await store.append_event("refund-waiting-1", Event(
            invocation_id=inv, author="refund",
            node_info=NodeInfo(path=path, run_id="1", lifecycle="start", is_container=container,
                               rerun_on_resume=container)))
    app = app_for(store)
    async with app.run_test(size=(160, 40)) as pilot:
        inbox = await open_inbox(pilot)
        from console.widgets.plain import DataTable

        table = inbox.query_one("#inbox-table", DataTable)
        cells = {r.interrupt_id: str(table.get_cell(inbox._key(r), "status")) for r in inbox.rows}
        assert "INTERRUPTED" in cells["finance-order-1001"] and "IN DOUBT" in cells["finance-order-1001"]
        others = [c for i, c in cells.items() if i not in ("finance-order-1001", "risk-order-1001")]
        assert others and all("WAITING" in c and "INTERRUPTED" not in c for c in others)


# ------------------------------------------------------------------ 7. imported session age
async def test_an_imported_session_shows_its_events_age() -> None:
    store = await demo_store()
    lines = [line async for line in store.export_session("refund-waiting-1")]
    await store.import_session(lines, session_id="copy-1", operator="ivan", reason="restore")
    app = app_for(store, clock=lambda: time.time())  # "now" is the import's time: events are days older
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        home = app.screen
        await wait_until(pilot, lambda: any(r.id == "copy-1" for r in home.rows))  # type: ignore[attr-defined]
        from console.screens.sessions import SessionTable

        cell = str(home.query_one(SessionTable).get_cell("copy-1", "active"))
        assert cell.endswith(("d", "h")) and cell != "0s" and "d" in cell, cell


async def test_keys_typed_right_after_e_in_the_inbox_reach_the_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the inbox the session is not loaded yet either: typed text waits for the editor."""
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(160, 40)) as pilot:
        inbox = await open_inbox(pilot)
        wanted = inbox.selected.interrupt_id  # type: ignore[union-attr]
        held = HeldLoad(monkeypatch)
        held.hold()
        await pilot.press("e", "y")  # typed before the editor exists: kept, then given to the form
        held.release()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen), type(screen).__name__
        assert screen.selected == [wanted]
        assert editor(screen, wanted).check.value == {"approved": True}, editor(screen, wanted).check


async def test_quit_now_leaves_the_turn_interrupted_mid_run_and_says_how_to_continue() -> None:
    """The explicit third choice: the turn stops, is not cancelled, and the exit message says what to run."""
    store, app = await slow_session("slow-2")
    async with app.run_test(size=(120, 40)) as pilot:
        await to_confirmation(pilot, "slow-2", {"go": "true"})
        await pilot.press("ctrl+s")
        await wait_until(pilot, GATE["started"].is_set)
        await pilot.press("q")
        await pilot.pause()
        await pilot.click("#quit-now")
        await wait_until(pilot, lambda: app.return_code is not None)
    assert "hitl redrive slow-2" in app.quit_message
    inv, proj = await invocation(store, "slow-2")
    assert proj.invocation_status(inv) is not NodeStatus.CANCELLED
    assert in_doubt_paths(proj, inv) == ["slow@1/slow_pay@1"]  # said, not silent: re-drive with --ack-in-doubt
