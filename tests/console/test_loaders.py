"""Store reads of the console (no UI): corrupt rows, snapshot + tail, history, formatting."""

from __future__ import annotations

from console.screens.loaders import is_complete, load_history, load_view, pick_invocation, read_events
from console.widgets.event_log import log_line
from console.widgets.format import format_age, id_list, short
from engine.models import Content, Event, NodeInfo, NodeStatus, StoredEvent
from engine.projection import project
from engine.redact import Redactor
from engine.store import MemoryStore
from engine.store.base import InvocationSummary
from engine.views import focus_path

from .conftest import CorruptingStore, copy_into
from .scenarios import build_store


async def _plain(n: int) -> MemoryStore:
    store = MemoryStore()
    await store.create_session("a", "u", "s")
    for i in range(n):
        await store.append_event("s", Event(invocation_id="i", author="user", content=Content.from_text(str(i))))
    return store


async def test_read_events_reads_around_corrupt_rows_without_skip_support():
    src = await _plain(10)
    store = await copy_into(src, CorruptingStore({("s", 3), ("s", 4), ("s", 9)}))
    events, bad = await read_events(store, "s", after_seq=0, limit=None)
    assert [e.seq for e in events] == [1, 2, 5, 6, 7, 8, 10]
    assert bad == [3, 4, 9]
    events, bad = await read_events(store, "s", after_seq=2, limit=3)
    assert [e.seq for e in events] == [5] and bad == [3, 4]
    # A corrupt row at the very end is found when the caller knows the last seq.
    tail = await copy_into(src, CorruptingStore({("s", 10)}))
    events, bad = await read_events(tail, "s", after_seq=8, limit=None, last_seq=10)
    assert [e.seq for e in events] == [9] and bad == [10]


class SkippingStore(CorruptingStore):
    """Like the SQLite store: ``skip_corrupt=True`` leaves bad rows out (and says so)."""

    capabilities = frozenset({"skip_corrupt"})

    async def events(self, session_id, *, after_seq=0, limit=None, skip_corrupt=False):  # type: ignore[override]
        if not skip_corrupt:
            return await super().events(session_id, after_seq=after_seq, limit=limit)
        rows = await MemoryStore.events(self, session_id, after_seq=after_seq)
        good = [e for e in rows if (session_id, e.seq) not in self.corrupt]
        return good if limit is None else good[:limit]


async def test_read_events_uses_skip_corrupt_and_reports_gaps():
    store = await copy_into(await _plain(10), SkippingStore({("s", 2), ("s", 10)}))
    events, bad = await read_events(store, "s", after_seq=0, limit=5, last_seq=10)
    assert [e.seq for e in events] == [1, 3, 4, 5, 6] and bad == [2]
    events, bad = await read_events(store, "s", after_seq=6, limit=5, last_seq=10)
    assert [e.seq for e in events] == [7, 8, 9] and bad == [10]


async def test_load_view_uses_snapshot_then_history_completes_it():
    store = await build_store()
    view = await load_view(store, "drafting-loop", None)
    assert view.invocation_id == "inv1"
    paths = {r.path for r in view.projection.runs("inv1")}
    assert "drafting@1/review@3" in paths
    assert "drafting@1/draft@1" not in paths  # compact snapshot: earlier iterations dropped
    assert view.complete is False
    full = await load_history(store, "drafting-loop", "inv1")
    assert full.complete and "drafting@1/draft@1" in {r.path for r in full.projection.runs("inv1")}
    events = await store.events("drafting-loop")
    reference = project([(e.seq, e.event) for e in events])
    for run in reference.runs("inv1"):
        got = full.projection.get("inv1", run.path)
        assert got is not None and got.status is run.status, run.path


async def test_load_view_without_snapshot_folds_everything():
    store = await build_store(snapshots=False)
    view = await load_view(store, "labelling-fan", None)
    assert view.complete
    assert {r.path: r.status for r in view.projection.runs("inv1")}["labelling@1/fan@1/label@2"] is NodeStatus.COMPLETED


async def test_load_view_of_a_session_without_invocations():
    store = await build_store()
    view = await load_view(store, "refund-new", None)
    assert view.invocation_id is None and view.invocations == []


def _inv(iid: str, status: str, seq: int) -> InvocationSummary:
    return InvocationSummary(
        session_id="s", invocation_id=iid, status=status, started_seq=seq, started_at=0, updated_at=0  # type: ignore[arg-type]
    )


def test_pick_invocation_prefers_wanted_then_latest_waiting():
    invs = [_inv("a", "waiting", 1), _inv("b", "waiting", 5), _inv("c", "completed", 9)]
    assert pick_invocation(invs, "a") == "a"
    assert pick_invocation(invs, "zzz") == "b"
    assert pick_invocation(invs[2:], None) == "c"
    assert pick_invocation([], None) is None


async def test_focus_path_waiting_then_failed_then_in_doubt():
    store = await build_store()
    for sid, expected in (
        ("refund-partial", "refund@1/legal@1"),
        ("billing-failed", "billing@1/charge@1"),
        ("billing-stuck", "billing@1/fetch@1"),
        ("refund-done", None),
    ):
        events = await store.events(sid)
        proj = project([(e.seq, e.event) for e in events])
        inv = next(iter(proj.invocations))
        assert focus_path(proj, inv) == expected, sid


def test_is_complete_detects_dropped_loop_runs():
    def start(path: str) -> Event:
        return Event(invocation_id="i", author="x", node_info=NodeInfo(path=path, run_id=path[-1], lifecycle="start"))

    proj = project([start("wf@1"), start("wf@1/step@1"), start("wf@1/step@2")])
    assert is_complete(proj, "i")
    proj = project([start("wf@1"), start("wf@1/step@3")])
    assert not is_complete(proj, "i")
    proj = project([start("wf@2"), start("wf@2/step@1")])  # root run ids count invocations
    assert is_complete(proj, "i")


def test_log_line_summaries():
    e = Event(
        invocation_id="i",
        author="approve",
        node_info=NodeInfo(path="wf@1/approve@1", run_id="1"),
        long_running_tool_ids=["x-1"],
        content=Content(role="model", parts=[{"function_call": {"id": "x-1", "name": "request_input", "args": {"message": "Ok?"}}}]),  # type: ignore[list-item]
    )
    line = log_line(StoredEvent(seq=4, session_id="s", event=e), Redactor())
    assert (line.kind, line.path, line.summary) == ("interrupt", "wf@1/approve@1", 'x-1 "Ok?"')
    fr = Event(invocation_id="i", author="user", content=Content.from_responses({"x-1": True}), custom_metadata={"action": "resume", "operator": "ann"})
    line = log_line(StoredEvent(seq=5, session_id="s", event=fr), Redactor())
    assert (line.author, line.summary) == ("ann", "answers x-1=true")  # the operator, not "user"
    fr.custom_metadata = {"action": "cancel", "operator": "ann", "reason": "dup [/x]"}
    line = log_line(StoredEvent(seq=6, session_id="s", event=fr), Redactor())
    assert (line.author, line.summary) == ("ann", 'reason "dup [/x]" · answers x-1=true')


def test_format_helpers():
    assert [format_age(s) for s in (None, -5, 5, 125, 3 * 3600 + 300, 2 * 86400 + 4 * 3600)] == [
        "-", "0s", "5s", "2m", "3h05m", "2d04h",
    ]
    assert short({"a": 1}, 40) == '{"a": 1}'
    assert short("x" * 50, 10) == "xxxxxxxxx…"
    assert id_list(["a", "b", "c", "d", "e"]) == "a, b, c +2"
