"""The response editor, driven from the keyboard against a store the sample apps
wrote: select ids, edit, dry run, submit, watch, before/after; refusals write
nothing; re-drive and cancel are audited. Every write goes through the real
Runner; assertions read the store afterwards."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from rich.console import Console

from console.answering.jobs import WriteJob, execute
from console.screens.answer import AnswerScreen
from console.screens.answer_dialogs import ConfirmWrite, OutcomeScreen
from console.screens.inbox import InboxScreen
from console.screens.session import SessionScreen
from console.widgets.answer_editor import AnswerEditor, check_answer, json_highlights
from console.widgets.answer_views import (
    nothing_ran,
    outcome_error,
    outcome_renderable,
    preview_renderable,
    resume_command,
    shown_open,
)
from engine import Content, Runner
from engine.apps import AppRegistry, default_operator
from engine.models import NodeStatus
from engine.store import MemoryStore

from .answer_store import NOW, demo_store, invocation, new_incident, registry
from .conftest import drive, make_app

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


def app_for(store: MemoryStore, **kw: Any) -> Any:
    kw.setdefault("registry", registry())
    kw.setdefault("clock", lambda: NOW)
    return make_app(store, **kw)


async def settle(pilot: Any, rounds: int = 2) -> None:
    """Workers done and their messages handled (faster than conftest.settle: no timers to wait for)."""
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def wait_until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


async def open_session(pilot: Any, session_id: str, path: str | None = None) -> SessionScreen:
    await settle(pilot)
    pilot.app.open_session(session_id, path=path)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SessionScreen)
    return screen


@asynccontextmanager
async def answering(
    store: MemoryStore, session_id: str, size: tuple[int, int] = (120, 40), **kw: Any
) -> AsyncIterator[tuple[Any, Any, SessionScreen]]:
    """``app_for(store, **kw)`` running at ``size`` with ``session_id`` open: the
    app, its pilot and the session screen."""
    app = app_for(store, **kw)
    async with app.run_test(size=size) as pilot:
        yield app, pilot, await open_session(pilot, session_id)


async def editor_screen(pilot: Any, *keys: str) -> AnswerScreen:
    await pilot.press(*keys)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, AnswerScreen), type(screen)
    return screen


def editor(screen: AnswerScreen, interrupt_id: str) -> AnswerEditor:
    return next(e for e in screen.editors() if e.interrupt.id == interrupt_id)


async def write(pilot: Any, screen: AnswerScreen, answers: dict[str, str]) -> None:
    for iid, text in answers.items():
        editor(screen, iid).set_text(text)
    await settle(pilot)
    await wait_until(pilot, lambda: screen.submit_problem() is None)


async def submit(pilot: Any, reason: str = "ok") -> OutcomeScreen:
    """ctrl+s, a reason, ctrl+s again; wait for the before/after view."""
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmWrite)
    await pilot.press(*reason, "ctrl+s")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, OutcomeScreen))
    return pilot.app.screen


def plain(renderable: Any) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


# ------------------------------------------------------------------ pure parts
def test_check_answer_reports_syntax_then_schema_with_paths() -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
    assert check_answer('{"amount": 3}', schema).ok
    assert check_answer('{"amount": "3"}', schema).ok  # coerced like the Runner does (DESIGN.md 3.7)
    bad = check_answer('{"amount": "3x"}', schema)
    assert bad.errors == ['amount: expected integer, got "3x"'] and not bad.syntax
    broken = check_answer('{"amount": 3,,}', schema)
    assert broken.syntax and broken.errors[0].startswith("line 1 col 14:")
    control = check_answer('{"amount": "a\x1bb"}', schema)  # the parser says "Invalid control character at"
    assert control.errors == ["line 1 col 14: Invalid control character"]
    assert check_answer("  ", None).errors and check_answer("{}", None).ok
    assert check_answer('{"result": "42"}', {"type": "integer"}).ok  # unwrapped like the Runner does


def test_json_highlights_use_byte_offsets_and_mark_keys() -> None:
    hl = json_highlights('{"é": true,\n "n": [1, null]}')
    assert (1, 5, "json.label") in hl[0]  # "é" is 4 bytes with its quotes
    assert (7, 11, "boolean") in hl[0]
    names = [name for _, _, name in hl[1]]
    assert names == ["json.label", "punctuation.delimiter", "punctuation.bracket", "number",
                     "punctuation.delimiter", "json.null", "punctuation.bracket", "punctuation.bracket"]


def test_resume_command_is_shell_quoted() -> None:
    cmd = resume_command("s-1", {"a": {"note": "it's ok"}}, "inv", operator="ann", reason="two words")
    assert cmd == "hitl resume s-1 'a={\"note\":\"it'\"'\"'s ok\"}' --invocation inv --operator ann --reason 'two words'"


def test_default_operator_prefers_config(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_operator() == "tester"
    (tmp_path / "hitl.toml").write_text('[console]\noperator = "fiona"\n')
    assert default_operator() == "fiona"


# ------------------------------------------------------------------ answering
async def test_partial_answer_of_a_parallel_fanout_runs_one_branch() -> None:
    """fan-a answered: ask_a completes and ship_a runs with the answer; fan-b stays open, ship_b never runs."""
    store = await demo_store()
    async with answering(store, "fanout-1") as (app, pilot, session):
        assert session.run_tree.cursor_path == "fanout@1/ask_a@1"  # the first waiting node
        await pilot.press("space")
        assert session.selection.ids == ["fan-a"]
        bar = str(session.query_one("#answer-bar").render())
        assert "1 of 2 open selected: fan-a" in bar and "stays open: fan-b" in bar
        assert "● " in str(session.run_tree.node_for("fanout@1/ask_a@1").label)  # type: ignore[union-attr]
        screen = await editor_screen(pilot, "e")
        ed = editor(screen, "fan-a")
        assert screen.selected == ["fan-a"] and ed.mode == "form" and ed.text == ""  # nothing chosen for the operator
        assert ed.check.errors == ["answer: required -- press y or n"] and screen.submit_problem()
        await pilot.press("y")  # the form's boolean: y yes (true) / n no (false)
        await settle(pilot)
        await wait_until(pilot, lambda: screen.submit_problem() is None)
        assert ed.check.value is True and ed.text == "true"
        preview = screen.preview
        assert preview is not None and preview.plan is not None
        assert preview.plan.still_open == ["fan-b"]
        assert "ship_a runs, with ask_a's output" in preview.downstream
        assert preview.command.startswith("hitl resume fanout-1 fan-a=true --invocation ")
        outcome = (await submit(pilot, "ok")).outcome
        assert outcome.error is None and outcome.status_after is NodeStatus.WAITING
        assert outcome.still_open == ["fan-b"]
        assert any(r.key == "fanout@1/ship_a@1" and r.after == "new run COMPLETED" for r in outcome.rows)
        assert any(r.area == "state" and r.key == "shipped_a" for r in outcome.rows)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is session and "COMPLETED" in str(session.run_tree.node_for("fanout@1/ship_a@1").label)  # type: ignore[union-attr]
        assert session.selection.ids == []
    inv, proj = await invocation(store, "fanout-1")
    assert proj.get(inv, "fanout@1/ask_a@1").status is NodeStatus.COMPLETED  # type: ignore[union-attr]
    assert proj.get(inv, "fanout@1/ship_a@1").output == "A shipped (True)"  # type: ignore[union-attr]
    assert proj.get(inv, "fanout@1/ask_b@1").status is NodeStatus.WAITING  # type: ignore[union-attr]
    assert proj.get(inv, "fanout@1/ship_b@1") is None
    fr = [se.event for se in await store.events("fanout-1") if se.event.kind == "response"]
    assert len(fr) == 1 and fr[0].custom_metadata == {"action": "resume", "operator": "tester", "reason": "ok"}


async def test_full_answer_of_a_two_id_leaf_auto_completes_and_feeds_downstream() -> None:
    """incident: choose_mitigation raised two ids; `a` selects both, one message answers both."""
    store = await demo_store()
    inv, proj = await new_incident(store, "incident-new", "cpu 99% on web-3")
    ids = [i.id for i in proj.open_interrupts(inv)]
    assert len(ids) == 2
    async with answering(store, "incident-new") as (app, pilot, _):
        screen = await editor_screen(pilot, "a", "e")
        assert screen.selected == ids
        assert editor(screen, ids[0]).text == "" and not editor(screen, ids[0]).check.ok  # no action chosen for them
        mitigation, notice = {"action": "rollback", "page_oncall": False}, {"publish": True, "text": "degraded"}
        await write(pilot, screen, {ids[0]: '{"action": "rollback", "page_oncall": false}',
                                    ids[1]: '{"publish": true, "text": "degraded"}'})
        (auto,) = [c for c in screen.preview.plan.changes if c.effect == "auto-complete"]  # type: ignore[union-attr]
        assert auto.path == "incident@1/choose_mitigation@1"
        assert auto.output == {ids[0]: mitigation, ids[1]: notice}
        assert "mitigate runs, with choose_mitigation's output" in screen.preview.downstream  # type: ignore[union-attr]
        outcome = (await submit(pilot)).outcome
        # mitigate fails on its first call in a session (the sample's pager 503): written, FAILED, said so.
        assert outcome.error_kind == "failed" and "PAGER_503" in (outcome_error(outcome) or "")
    _, proj = await invocation(store, "incident-new")
    leaf = proj.get(inv, "incident@1/choose_mitigation@1")
    assert leaf is not None and leaf.status is NodeStatus.COMPLETED and leaf.auto_completed and leaf.starts == 1
    assert leaf.output == {ids[0]: mitigation, ids[1]: notice}
    assert proj.get(inv, "incident@1/mitigate@1").input == {ids[0]: mitigation, ids[1]: notice}  # type: ignore[union-attr]


async def test_answer_to_an_orchestration_node_re_executes_it_with_the_same_run_id() -> None:
    store = await demo_store()
    inv, before = await invocation(store, "labels-partial-1")
    caller = before.get(inv, "labelling@1/label_all@1")
    assert caller is not None and caller.rerun_on_resume and caller.status is NodeStatus.WAITING
    starts, last = caller.starts, (await store.get_session("labels-partial-1")).last_seq
    async with answering(store, "labels-partial-1") as (app, pilot, session):
        target = session.run_tree.cursor_path
        assert target is not None and target.startswith("labelling@1/label_all@1/label_item@")
        screen = await editor_screen(pilot, "space", "e")
        (iid,) = screen.selected
        await write(pilot, screen, {iid: '"bird"'})
        change = next(c for c in screen.preview.plan.changes if c.path == "labelling@1/label_all@1")  # type: ignore[union-attr]
        assert (change.before, change.after, change.effect) == (NodeStatus.WAITING, NodeStatus.PENDING, "re-execute")
        outcome = (await submit(pilot)).outcome
        assert any(r.key == "labelling@1/label_all@1 executions" and r.after == starts + 1 for r in outcome.rows)
        label = str(session.run_tree.node_for("labelling@1/label_all@1").label)  # type: ignore[union-attr]
        assert "label_all@1" in label and "↻" in label
    # The store: answer, then PENDING (projected), then a start record of the same run id.
    events = await store.events("labels-partial-1", after_seq=last)
    assert events[0].event.kind == "response"
    caller_events = [se.event for se in events if se.event.path == "labelling@1/label_all@1"]
    assert [e.kind for e in caller_events] == ["start", "end"]
    assert caller_events[0].node_info.run_id == "1"  # type: ignore[union-attr]
    _, after = await invocation(store, "labels-partial-1")
    run = after.get(inv, "labelling@1/label_all@1")
    assert run is not None and run.starts == starts + 1 and run.status is NodeStatus.WAITING
    assert after.get(inv, target).status is NodeStatus.COMPLETED  # type: ignore[union-attr]


async def test_an_invalid_answer_cannot_be_submitted() -> None:
    store = await demo_store()
    last = (await store.get_session("refund-waiting-1")).last_seq
    async with answering(store, "refund-waiting-1") as (app, pilot, _):
        screen = await editor_screen(pilot, "e")  # nothing selected: the cursor node's id
        assert screen.selected == ["finance-order-1001"]
        ed = editor(screen, "finance-order-1001")
        assert ed.mode == "form" and not ed.check.ok  # nothing chosen: invalid
        await pilot.press("ctrl+t")  # the JSON view of the same (empty) answer: a skeleton, not JSON
        assert ed.mode == "json" and ed.text_area.has_focus and ed.text == '{\n  "approved": \n}'
        assert ed.check.errors == ["(root): nothing written yet: give each key its value"]
        await pilot.press("f7", "{", "}")  # typed: replaces the skeleton
        await settle(pilot)
        assert ed.text == "{}" and ed.check.errors == ["(root): 'approved' is a required property"]
        ed.set_text('{"approved": "maybe"}')
        await settle(pilot)
        assert ed.check.errors == ['approved: expected boolean, got "maybe"']
        assert "approved: expected boolean" in str(ed.query_one(".answer-status").render())
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen  # no confirmation: refused in the editor
        assert "approved: expected boolean" in (screen.submit_problem() or "")
        ed.set_text('{"approved": tru')
        await settle(pilot)
        assert ed.check.syntax and ed.check.errors[0].startswith("line 1 col")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen
    assert (await store.get_session("refund-waiting-1")).last_seq == last


async def test_an_id_answered_meanwhile_is_refused_nothing_written_text_kept() -> None:
    """Another writer answers first: the submit is refused, the editor comes back
    with the text and a reload offer; the reload says who answered it."""
    store = await demo_store()
    async with answering(store, "refund-waiting-1") as (app, pilot, session):
        screen = await editor_screen(pilot, "A", "e")
        mine = {"finance-order-1001": '{"approved": true, "note": "mine"}',
                "risk-order-1001": '{"approved": true}'}
        await write(pilot, screen, mine)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrite)
        other = Runner("refund_approval", AppRegistry().get("refund_approval"), store)
        async for _ in other.run("alice", "refund-waiting-1", Content.from_responses(
                {"finance-order-1001": {"approved": False}}), operator="rick"):
            pass
        last = (await store.get_session("refund-waiting-1")).last_seq
        audit = (await store.audit_log(session_id="refund-waiting-1")).items
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen) and app.screen is not screen)
        again = app.screen
        assert isinstance(again, AnswerScreen)
        await settle(pilot)
        banner = str(again.query_one("#answer-banner").render())
        assert "finance-order-1001 was already answered" in banner and "nothing was written" in banner
        assert "ctrl+r" in banner
        assert (await store.get_session("refund-waiting-1")).last_seq == last
        assert (await store.audit_log(session_id="refund-waiting-1")).items == audit
        assert "finance-order-1001: already answered at event" in banner and "by rick" in banner
        assert again.selected == ["risk-order-1001"]  # the closed id is dropped, its text kept
        # Kept as the answer it was (the form shows it; its text is the same JSON value).
        assert json.loads(editor(again, "risk-order-1001").text) == json.loads(mine["risk-order-1001"])
        await pilot.press("ctrl+r")  # reload and re-apply: the same text, a fresh dry run
        await settle(pilot)
        assert again.selected == ["risk-order-1001"] and again.draft.error is None
        assert json.loads(editor(again, "risk-order-1001").text) == json.loads(mine["risk-order-1001"])
        await wait_until(pilot, lambda: again.submit_problem() is None)
        assert json.loads(again.draft.texts["finance-order-1001"]) == json.loads(mine["finance-order-1001"])  # kept, not sent
        assert session.drafts[again.draft.invocation_id] is again.draft


async def test_unknown_id_is_refused_by_the_engine_and_nothing_is_written() -> None:
    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")
    last = (await store.get_session("refund-waiting-1")).last_seq
    job = WriteJob(kind="answer", session_id="refund-waiting-1", invocation_id=inv, app_name="refund_approval",
                   user_id="alice", operator="tester", reason=None, answers={"no-such-id": True})
    outcome = await execute(store, registry(), job)
    assert not outcome.written and outcome.error_kind == "rejected"
    assert "no open interrupt with id no-such-id" in (outcome_error(outcome) or "")
    assert "nothing was written" in (outcome_error(outcome) or "")
    assert (await store.get_session("refund-waiting-1")).last_seq == last
    # The editor says so too, before anything is sent.
    async with answering(store, "refund-waiting-1") as (app, pilot, session):
        session.action_answer(["no-such-id", "risk-order-1001"])
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.selected == ["risk-order-1001"]
        assert "no-such-id: unknown in this invocation" in str(screen.query_one("#answer-banner").render())


async def test_two_concurrent_submitters_exactly_one_wins() -> None:
    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")

    def job(op: str, approved: bool) -> WriteJob:
        return WriteJob(kind="answer", session_id="refund-waiting-1", invocation_id=inv, app_name="refund_approval",
                        user_id="alice", operator=op, reason=None, answers={"finance-order-1001": {"approved": approved}})

    one, two = await asyncio.gather(execute(store, registry(), job("ann", True)),
                                    execute(store, registry(), job("bob", False)))
    winners = [o for o in (one, two) if o.written]
    losers = [o for o in (one, two) if not o.written]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0].error_kind == "conflict"
    lost = outcome_error(losers[0]) or ""
    assert "finance-order-1001" in lost and "nothing was written" in lost
    responses = [se.event for se in await store.events("refund-waiting-1") if se.event.kind == "response"]
    assert len(responses) == 1
    assert responses[0].custom_metadata["operator"] == winners[0].operator  # type: ignore[index]


async def test_app_not_importable_makes_the_editor_read_only() -> None:
    store = await demo_store()
    last = (await store.get_session("refund-waiting-1")).last_seq
    app = app_for(store, registry=AppRegistry(samples=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        screen = await editor_screen(pilot, "e")
        assert "app 'refund_approval' is not registered" in str(screen.query_one("#answer-banner").render())
        await write_no_wait(pilot, screen, {"finance-order-1001": '{"approved": true}'})
        assert screen.preview is not None and screen.preview.plan is not None  # the dry run needs no code
        assert "next nodes unknown" in (screen.preview.downstream_note or "")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen and "is not registered" in (screen.submit_problem() or "")
    assert (await store.get_session("refund-waiting-1")).last_seq == last


async def write_no_wait(pilot: Any, screen: AnswerScreen, answers: dict[str, str]) -> None:
    for iid, text in answers.items():
        editor(screen, iid).set_text(text)
    await settle(pilot)


async def test_read_only_mode_disables_selection_and_answering() -> None:
    store = await demo_store()
    async with answering(store, "refund-waiting-1", read_only=True) as (app, pilot, session):
        await pilot.press("space", "a", "X")
        await settle(pilot)
        assert app.screen is session and session.selection.ids == []
        await pilot.press("e")  # the editor still opens, for a dry run (issue 11); submitting stays disabled
        await settle(pilot)
        assert isinstance(app.screen, AnswerScreen) and session.selection.ids == []


async def test_inbox_selection_opens_the_editor_on_that_invocation() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(140, 40)) as pilot:
        inbox = await drive(pilot, "i", expect=InboxScreen, wait=settle)
        while inbox.selected is not None and inbox.selected.session_id != "refund-multi-1":
            await pilot.press("down")
        rec = inbox.selected
        assert rec is not None
        await pilot.press("A")  # every loaded row of that invocation
        picked = [r.interrupt_id for r in inbox.marks.values()]
        assert {(r.session_id, r.invocation_id) for r in inbox.marks.values()} == {(rec.session_id, rec.invocation_id)}
        same = [r.interrupt_id for r in inbox.rows if r.invocation_id == rec.invocation_id]
        assert picked == same
        assert len(same) == 2 and "● 2 marked in refund-multi-1" in str(inbox.query_one("#inbox-info").render())
        screen = await editor_screen(pilot, "e")
        assert screen.draft.invocation_id == rec.invocation_id and screen.selected == picked
        assert isinstance(app.screen_stack[-2], SessionScreen)
        screen.id_list.focus()
        await pilot.press("space")  # on the list: unselect the highlighted id, its editor goes
        await settle(pilot)
        assert len(screen.selected) == len(screen.editors()) == 1
        await pilot.press("A")  # every open id of the invocation again
        await settle(pilot)
        assert len(screen.selected) == len(screen.editors()) == 2


# ------------------------------------------------------------------ re-drive and cancel
async def test_redrive_a_failed_invocation_is_confirmed_and_audited() -> None:
    store = await demo_store()
    inv, before = await invocation(store, "incident-failed-1")
    assert before.invocation_status(inv) is NodeStatus.FAILED
    async with answering(store, "incident-failed-1") as (app, pilot, session):
        await pilot.press("R")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmWrite)
        body = plain(dialog.body)
        assert "incident@1/mitigate@1 (FAILED) runs again with run id 1" in body
        await pilot.press(*"back", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
        outcome = app.screen.outcome  # type: ignore[attr-defined]
        assert outcome.error is None and outcome.status_after is NodeStatus.COMPLETED
        command = app.screen.command  # type: ignore[attr-defined]
        assert "hitl redrive incident-failed-1" in command and "--reason back" in command
        await pilot.press("escape")
        await settle(pilot)
        assert "COMPLETED" in str(session.run_tree.root.label)
    _, after = await invocation(store, "incident-failed-1")
    run = after.get(inv, "incident@1/mitigate@1")
    assert run is not None and run.status is NodeStatus.COMPLETED and run.run_id == "1"
    (audit,) = (await store.audit_log(session_id="incident-failed-1", action="redrive")).items
    assert (audit.operator, audit.reason) == ("tester", "back")


async def test_cancel_needs_a_reason_and_is_audited() -> None:
    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")
    async with answering(store, "refund-waiting-1") as (app, pilot, _):
        await pilot.press("X")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmWrite)
        assert "finance-order-1001, risk-order-1001" in plain(dialog.body)
        await pilot.press("ctrl+s")  # no reason yet
        await settle(pilot)
        assert app.screen is dialog and "reason is required" in str(dialog.query_one("#confirm-problem").render())
        await pilot.press(*"gone", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
        assert app.screen.outcome.status_after is NodeStatus.CANCELLED  # type: ignore[attr-defined]
    _, after = await invocation(store, "refund-waiting-1")
    assert after.invocation_status(inv) is NodeStatus.CANCELLED and not after.open_interrupts(inv)
    (audit,) = (await store.audit_log(session_id="refund-waiting-1", action="cancel")).items
    assert (audit.operator, audit.reason) == ("tester", "gone")


async def test_an_interrupted_invocation_is_refused_in_the_dry_run_and_offered_a_redrive() -> None:
    """A turn started and its process died (a start record, no end, no lease): the
    engine refuses answers until it is continued; the editor says so and how."""
    from engine.models import Event, NodeInfo

    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")
    await store.append_event("refund-waiting-1", Event(
        invocation_id=inv, author="refund",
        node_info=NodeInfo(path="refund@1", run_id="1", lifecycle="start", is_container=True, rerun_on_resume=True)))
    last = (await store.get_session("refund-waiting-1")).last_seq
    async with answering(store, "refund-waiting-1") as (app, pilot, session):
        screen = await editor_screen(pilot, "e")
        await write_no_wait(pilot, screen, {"finance-order-1001": '{"approved": true}'})
        await wait_until(pilot, lambda: screen.preview is not None)
        assert "interrupted mid-run" in (screen.preview.error or "")  # type: ignore[union-attr]
        assert "hitl redrive refund-waiting-1" in (screen.submit_problem() or "")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is session and session.can_redrive()
        await pilot.press("R")
        await settle(pilot)
        assert "is interrupted mid-run" in plain(app.screen.body)  # type: ignore[attr-defined]
    assert (await store.get_session("refund-waiting-1")).last_seq == last


async def test_a_partial_answer_to_a_leaf_is_flagged_answered_but_nothing_ran() -> None:
    store = await demo_store()
    inv, proj = await new_incident(store, "incident-new", "disk full on db-9")
    first, second = (i.id for i in proj.open_interrupts(inv))
    async with answering(store, "incident-new") as (app, pilot, session):
        session.action_answer([second])
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        await write(pilot, screen, {second: '{"publish": false}'})
        assert screen.preview is not None and not screen.preview.plan.runs_anything  # type: ignore[union-attr]
        assert "nothing runs" in plain(preview_renderable(screen.preview, redactor=app.redactor))
        outcome = (await submit(pilot)).outcome
        assert nothing_ran(outcome) and len(outcome.written) == 1 and shown_open(outcome) == [first]
        assert "Answered, but nothing ran" in plain(outcome_renderable(outcome, app.redactor))


async def test_answer_without_the_code_is_queued_then_a_worker_runs_it(tmp_path: Any) -> None:
    """Issue 18: a console with no code for the app stores the answer, says it is
    queued (and that no worker is alive), and follows the worker's turn when one starts."""
    from engine.store.sqlite import SQLiteStore
    from engine.worker import Worker
    from tests.reliability import crash_app

    db = tmp_path / "w.sqlite"
    store = await SQLiteStore.open(db)
    async for _ in Runner(crash_app.APP, crash_app.workflow, store).run("u", "q-1", Content.from_text("o")):
        pass
    inv = (await store.list_invocations("q-1"))[0].invocation_id
    app = app_for(store, registry=AppRegistry(samples=False))
    worker_store = await SQLiteStore.open(db)
    worker = Worker(worker_store, {crash_app.APP: crash_app.workflow}, heartbeat=0.2)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await open_session(pilot, "q-1")
            screen = await editor_screen(pilot, "A", "e")
            banner = str(screen.query_one("#answer-banner").render())
            assert "No code for crash_refund here: the answer is stored and a worker runs the turn" in banner
            await write_no_wait(pilot, screen, {"finance": '{"approved": true}', "risk": '{"approved": true}'})
            assert screen.submit_problem() is None
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmWrite))
            await pilot.press(*"ok", "ctrl+s")
            said = lambda: [n.message for n in app._notifications]  # noqa: E731
            await wait_until(pilot, lambda: any("no worker for crash_refund is alive" in m for m in said()))
            assert (await load_status(store, "q-1", inv)) is NodeStatus.PENDING  # stored, queued, not run
            assert app.running_writes  # the console follows the queued turn
            task = asyncio.ensure_future(worker.run())
            await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen), timeout=60)
            assert (await load_status(store, "q-1", inv)) is NodeStatus.COMPLETED
            assert not app.running_writes
            worker.stop()
            await task
    finally:
        await worker_store.close()
        await store.close()


async def load_status(store: Any, sid: str, inv: str) -> Any:
    from engine.resume import load_invocation

    return (await load_invocation(store, sid, inv)).invocation_status(inv)
