"""engine.views: the folding rule, the paths a change touches, display states and
the one rule for what an invocation allows (runner, cancel_invocation and console)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import views
from engine.errors import InvocationCancelledError, NotRedrivableError
from engine.models import Content, Event, NodeInfo, NodeStatus
from engine.operator_actions import cancel_invocation
from engine.projection import Projection
from engine.status import DisplayStatus
from engine.store import MemoryStore

INV = "i1"


def start(path: str, container: bool = False, key: str | None = None) -> Event:
    run_id = path.rsplit("@", 1)[1]
    return Event(
        invocation_id=INV,
        author=path.rsplit("/", 1)[-1].split("@")[0],
        node_info=NodeInfo(path=path, run_id=run_id, lifecycle="start", is_container=container or None,
                           rerun_on_resume=container or None, call_key=key),
    )


def end(path: str, status: NodeStatus = NodeStatus.COMPLETED, **kw: Any) -> Event:
    return Event(
        invocation_id=INV,
        author=path.rsplit("/", 1)[-1].split("@")[0],
        node_info=NodeInfo(path=path, run_id=path.rsplit("@", 1)[1], lifecycle="end", status=status),
        **kw,
    )


def message() -> Event:
    return Event(invocation_id=INV, author="user", content=Content.from_text("go"))


def fold(events: list[Event]) -> Projection:
    proj = Projection()
    for e in events:
        proj.apply(e)
    return proj


def loop() -> list[Event]:
    """wf@1 runs a, b, a, b, a: a loop edge re-ran a and b."""
    out = [message(), start("wf@1", container=True)]
    for p in ("wf@1/a@1", "wf@1/b@1", "wf@1/a@2", "wf@1/b@2", "wf@1/a@3"):
        out += [start(p), end(p, output=p)]
    return out


def test_loop_reruns_fold_into_the_latest_run_of_each_node() -> None:
    proj = fold(loop())
    kids = views.visible_children(proj, proj.get(INV, "wf@1"))  # type: ignore[arg-type]
    assert [(r.path, n) for r, n in kids.shown] == [("wf@1/b@2", 1), ("wf@1/a@3", 2)]
    assert kids.earlier == ("wf@1/a@1", "wf@1/b@1", "wf@1/a@2") and kids.folded == 3
    rows = views.tree_rows(proj, INV)
    assert [(r.node, r.depth, r.earlier_runs) for r in rows] == [("wf@1", 0, 0), ("b@2", 1, 1), ("a@3", 1, 2)]
    every = views.tree_rows(proj, INV, all_runs=True)
    assert [r.node for r in every] == ["wf@1", "a@1", "b@1", "a@2", "b@2", "a@3"]
    assert views.run_order(proj, INV) == [r.path for r in every]


def test_a_snapshot_without_earlier_runs_counts_them_by_run_id() -> None:
    proj = fold([message(), start("wf@1", container=True), start("wf@1/a@3"), end("wf@1/a@3")])
    (row,) = [r for r in views.tree_rows(proj, INV) if r.depth == 1]
    assert row.node == "a@3" and row.earlier_runs == 2
    assert views.visible_children(proj, proj.get(INV, "wf@1")).earlier == ()  # type: ignore[arg-type]


def test_dynamic_children_fold_only_by_their_own_call_key() -> None:
    events = [message(), start("wf@1", container=True)]
    for path, key in (("wf@1/label@1", "a"), ("wf@1/label@2", "b"), ("wf@1/label@3", "a")):
        events += [start(path, key=key), end(path)]
    rows = views.tree_rows(fold(events), INV)
    assert [(r.node, r.earlier_runs) for r in rows[1:]] == [("label@2", 0), ("label@3", 1)]


def test_change_paths_include_interrupt_owners_and_ancestors() -> None:
    proj = fold([message(), start("wf@1", container=True), start("wf@1/inner@1", container=True),
                 start("wf@1/inner@1/ask@1")])
    ask = Event(
        invocation_id=INV, author="ask",
        node_info=NodeInfo(path="wf@1/inner@1/ask@1", run_id="1"),
        content=Content.model_validate({"role": "model", "parts": [{"function_call": {"id": "q1", "name": "request_input"}}]}),
        long_running_tool_ids=["q1"],
    )
    proj.apply(ask)
    answer = Event(invocation_id=INV, author="user", content=Content.from_responses({"q1": "yes"}))
    change = proj.apply(answer)
    assert views.change_paths(proj, change) >= {"wf@1/inner@1/ask@1", "wf@1/inner@1", "wf@1"}
    assert views.with_ancestors(["a@1/b@1/c@1"]) == {"a@1/b@1/c@1", "a@1/b@1", "a@1"}


def test_display_status_says_what_liveness_knows() -> None:
    proj = fold([message(), start("wf@1", container=True), start("wf@1/pay@1")])
    root, pay = proj.get(INV, "wf@1"), proj.get(INV, "wf@1/pay@1")
    assert root is not None and pay is not None
    assert views.display_status(pay) is DisplayStatus.RUNNING  # the projection alone cannot tell
    assert views.display_status(pay, True, {"wf@1/pay@1"}) is DisplayStatus.IN_DOUBT
    assert views.display_status(root, True, {"wf@1/pay@1"}) is DisplayStatus.INTERRUPTED
    assert views.invocation_display(proj, INV, interrupted=True) is DisplayStatus.INTERRUPTED
    rows = views.tree_rows(proj, INV, in_doubt=["wf@1/pay@1"])
    assert [(r.display, r.status, r.in_doubt) for r in rows] == [
        (DisplayStatus.INTERRUPTED, NodeStatus.RUNNING, False),
        (DisplayStatus.IN_DOUBT, NodeStatus.RUNNING, True),
    ]


def failed() -> list[Event]:
    return [message(), start("wf@1", container=True), start("wf@1/a@1"),
            end("wf@1/a@1", NodeStatus.FAILED, error_code="E", error_message="boom"),
            end("wf@1", NodeStatus.FAILED, error_code="E", error_message="boom")]


def cancel() -> Event:
    return Event(invocation_id=INV, author="user", custom_metadata={"action": "cancel", "operator": "ops"})


@pytest.mark.parametrize(
    ("events", "answer", "redrive", "cancel_"),
    [
        ([message()], False, True, True),  # a message and no root run yet: interrupted before it began
        (failed(), False, True, True),
        (loop() + [end("wf@1")], False, False, False),  # completed
        (failed() + [cancel()], False, False, False),  # cancelled after it failed: the root stays FAILED
    ],
)
def test_allowed_actions(events: list[Event], answer: bool, redrive: bool, cancel_: bool) -> None:
    allowed = views.allowed_actions(fold(events), INV)
    assert (allowed.answer, allowed.redrive, allowed.cancel) == (answer, redrive, cancel_)
    assert views.allowed_actions(fold(events), "nope") == views.Allowed(False, False, False, None, None)


def test_the_runner_refuses_by_the_same_rule() -> None:
    """cancel_invocation and a re-drive refuse what allowed_actions does not allow."""

    async def go() -> None:
        store = MemoryStore()
        await store.create_session("app", "u", "s")
        for e in failed() + [cancel()]:
            await store.append_event("s", e)
        with pytest.raises(InvocationCancelledError):
            await cancel_invocation(store, "s", INV, operator="ops", reason="again")
        done = MemoryStore()
        await done.create_session("app", "u", "s")
        for e in loop() + [end("wf@1")]:
            await done.append_event("s", e)
        with pytest.raises(NotRedrivableError):
            await cancel_invocation(done, "s", INV, operator="ops", reason="late")

    asyncio.run(go())


def test_focus_and_waiting_paths_reach_folded_runs() -> None:
    events = loop()
    ask = Event(
        invocation_id=INV, author="a", node_info=NodeInfo(path="wf@1/a@1", run_id="1"),
        content=Content.model_validate({"role": "model", "parts": [{"function_call": {"id": "q", "name": "request_input"}}]}),
        long_running_tool_ids=["q"],
    )
    events.insert(3, ask)  # a@1 raised q before it ended
    events[4] = end("wf@1/a@1", NodeStatus.WAITING)
    proj = fold(events)
    assert views.waiting_paths(proj, INV) == ["wf@1/a@1"]
    assert views.focus_path(proj, INV) == "wf@1/a@1"
    assert "wf@1/a@1" not in [r.path for r in views.tree_rows(proj, INV)]  # folded, still found
