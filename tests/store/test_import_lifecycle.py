"""An import satisfies the lifecycle as the runner writes it (issue 42.2).

Each forgery is an edit of the export of a completed refund that kept seqs and
the header's count consistent (so the forgery is the only thing wrong):

* the risk answer and its completion record deleted -- it imported COMPLETED
  and paid while ``risk-order-1003`` was still open and answerable;
* an auto-completed node's output changed -- it is its answer (DESIGN 3.4);
* two records swapped so that a node starts before its predecessor ended
  (3.12's order).

A property test mutates the exports of completed refunds -- deletes a record,
swaps two, edits an output -- and finds none accepted. The exceptions are the
edits the runner can write itself, which must import as what they say: a swap
of two records of independent branches (nothing orders them) or of two that
say the same (two resumed starts of the root: only their ids move), the log cut
before its last record (a killed turn: it imports interrupted mid-run, never
COMPLETED), and an auto-completion's completion record left out (an older
writer's log: the answer completes the run all the same).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.models import NodeStatus
from engine.projection import Projection
from engine.store import MemoryStore
from engine.store.jsonl import ImportFormatError, parse_export
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db
from tests.store.test_import_strict import render

COMPLETED = ("refund-completed-1", "refund-rejected-1")


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    path = tmp_path_factory.mktemp("import-lifecycle") / "demo.sqlite"

    async def go() -> dict[str, list[dict[str, Any]]]:
        await build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0)
        async with SQLiteStore.open(path, read_only=True) as store:
            return {
                sid: [json.loads(line) async for line in store.export_session(sid)]  # type: ignore[attr-defined]
                for sid in COMPLETED
            }

    return asyncio.run(go())


def _find(objs: list[dict[str, Any]], pred: Any) -> int:
    return next(i for i, o in enumerate(objs) if i and pred(o["event"]))


def _info(e: dict[str, Any]) -> dict[str, Any]:
    return e.get("node_info") or {}


def _answers(e: dict[str, Any], interrupt_id: str) -> bool:
    parts = (e.get("content") or {}).get("parts") or []
    return any((p.get("function_response") or {}).get("id") == interrupt_id for p in parts)


def _refused(lines: list[str]) -> str:
    with pytest.raises(ImportFormatError, match=r"^line \d+: .*nothing was imported") as info:
        parse_export(lines)
    return str(info.value)


def _outcome(lines: list[str]) -> dict[str, Any]:
    """What an imported log says: each run's status and output, the open interrupts."""
    proj = Projection()
    for n, event in enumerate(parse_export(lines).events, start=1):
        proj.apply(event, n)
    return {
        "runs": {(r.invocation_id, r.path): (r.status, r.output) for r in proj.nodes.values()},
        "open": sorted(i.id for i in proj.open_interrupts()),
        "status": {inv: proj.invocation_status(inv) for inv in proj.invocations},
    }


# ----------------------------------------------------------------- the forgeries
def test_deleting_an_answer_and_its_completion_record_is_refused(exports: dict[str, list[dict[str, Any]]]) -> None:
    objs = exports["refund-completed-1"]
    fr = _find(objs, lambda e: _answers(e, "risk-order-1003"))
    assert _info(objs[fr + 1]["event"]).get("path", "").endswith("risk_approval@1")
    message = _refused(render([o for i, o in enumerate(objs) if i not in (fr, fr + 1)]))
    assert "starts after risk_approval, which has not completed" in message, message


def test_an_auto_completion_with_another_output_is_refused(exports: dict[str, list[dict[str, Any]]]) -> None:
    objs = json.loads(json.dumps(exports["refund-completed-1"]))
    fr = _find(objs, lambda e: _answers(e, "finance-order-1003"))
    objs[fr + 1]["event"]["output"] = {"approved": False, "note": "forged"}
    message = _refused(render(objs))
    assert "an auto-completion's output is its answer" in message, message


def test_a_node_starting_before_its_predecessor_ended_is_refused(exports: dict[str, list[dict[str, Any]]]) -> None:
    objs = list(exports["refund-completed-1"])
    end = _find(objs, lambda e: _info(e).get("path", "").endswith("approvals@1") and _info(e).get("lifecycle") == "end")
    assert _info(objs[end + 1]["event"]).get("after") == ["approvals"]
    objs[end], objs[end + 1] = objs[end + 1], objs[end]
    message = _refused(render(objs))
    assert "starts after approvals, which has not completed" in message, message


def test_a_completed_invocation_with_an_open_interrupt_is_refused(exports: dict[str, list[dict[str, Any]]]) -> None:
    """The root re-started and ended COMPLETED (with the paid output) after only
    the finance answer: risk is still open."""
    objs = json.loads(json.dumps(exports["refund-completed-1"]))
    fr = _find(objs, lambda e: _answers(e, "risk-order-1003"))
    root_end = objs[-1]
    cut = objs[:fr]
    restart = json.loads(json.dumps(objs[fr + 2]))  # the root's resumed start
    for k, o in enumerate((restart, root_end)):
        o["event"]["id"] = f"{k}" * 32
    message = _refused(render([*cut, restart, root_end]))
    assert "ends COMPLETED while" in message and "risk_approval" in message, message


def test_a_cut_log_imports_interrupted_not_completed(exports: dict[str, list[dict[str, Any]]]) -> None:
    for sid in COMPLETED:
        got = _outcome(render(exports[sid][:-1]))
        assert list(got["status"].values()) == [NodeStatus.RUNNING], sid  # mid-run: shown interrupted


# ----------------------------------------------------------------- property
def _independent(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Nothing in the lifecycle orders these two records: node records of one
    invocation's different runs, neither inside the other, neither triggered by
    the other (``after``). User events (messages, answers, re-drives) order
    everything around them."""
    ia, ib = a.get("node_info"), b.get("node_info")
    if ia is None or ib is None or a["invocation_id"] != b["invocation_id"]:
        return ia is not None and ib is not None
    pa, pb = ia["path"], ib["path"]
    if pa == pb or pa.startswith(pb + "/") or pb.startswith(pa + "/"):
        return False
    name = lambda p: p.rsplit("/", 1)[-1].split("@")[0]  # noqa: E731
    parent = lambda p: p.rsplit("/", 1)[0] if "/" in p else None  # noqa: E731
    for x, y in ((ia, ib), (ib, ia)):
        if y.get("after") and name(x["path"]) in y["after"] and parent(x["path"]) == parent(y["path"]):
            return False
    return True


def _same_but_id(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two records that say the same (a resumed start, a WAITING end): swapping them swaps ids only."""
    strip = lambda e: {k: v for k, v in e.items() if k not in ("id", "timestamp")}  # noqa: E731
    return strip(a) == strip(b)


def _auto_completion_record(objs: list[dict[str, Any]], k: int) -> bool:
    """Record ``k`` is a completion record an answer wrote with it (the run of
    end records right after an answer)."""
    def is_end(e: dict[str, Any]) -> bool:
        return _info(e).get("lifecycle") == "end" and _info(e).get("status") == "COMPLETED"

    if not is_end(objs[k]["event"]):
        return False
    m = k - 1
    while m > 0 and is_end(objs[m]["event"]):
        m -= 1
    parts = (objs[m]["event"].get("content") or {}).get("parts") or [] if m > 0 else []
    return any(p.get("function_response") for p in parts)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sid=st.sampled_from(COMPLETED),
    kind=st.sampled_from(["delete", "swap", "output"]),
    i=st.integers(0, 10_000),
    j=st.integers(0, 10_000),
    value=st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(),
                    st.dictionaries(st.sampled_from(["status", "approved", "amount"]), st.integers(0, 3), max_size=2)),
)
def test_mutated_completed_refunds_are_refused(
    exports: dict[str, list[dict[str, Any]]], sid: str, kind: str, i: int, j: int, value: Any
) -> None:
    objs = json.loads(json.dumps(exports[sid]))
    n = len(objs) - 1
    original = _outcome(render(objs))
    if kind == "delete":
        k = 1 + i % (n - 1)  # not the last record: a cut log is a killed turn (test_a_cut_log_...)
        allowed = _auto_completion_record(objs, k)
        del objs[k]
        lines = render(objs)
        if allowed:
            try:
                parse_export(lines)
            except ImportFormatError:
                return
            got = _outcome(lines)
            assert got["runs"].keys() == original["runs"].keys() and got["open"] == original["open"]
            assert all(got["runs"][p] == original["runs"][p] for p in got["runs"]), "an older writer's log says the same"
            return
        _refused(lines)
        return
    if kind == "swap":
        a, b = sorted((1 + i % n, 1 + j % n))
        if a == b:
            return
        moved = [objs[a]["event"], objs[b]["event"]]
        between = [o["event"] for o in objs[a + 1 : b]]
        free = _same_but_id(*moved) or (
            _independent(*moved) and all(_independent(moved[0], x) and _independent(x, moved[1]) for x in between)
        )
        objs[a], objs[b] = objs[b], objs[a]
        lines = render(objs)
        if free:  # the runner could have written them in either order
            assert _outcome(lines)["runs"] == original["runs"]
        else:
            _refused(lines)
        return
    with_output = [k for k in range(1, n + 1) if objs[k]["event"].get("output") is not None]
    k = with_output[i % len(with_output)]
    if objs[k]["event"]["output"] == value or json.dumps(objs[k]["event"]["output"]) == json.dumps(value):
        return
    objs[k]["event"]["output"] = value
    _refused(render(objs))


def test_every_record_of_a_completed_refund_is_covered(exports: dict[str, list[dict[str, Any]]]) -> None:
    """Every deletion (the last record aside) and every output edit of the
    completed refund is refused, exhaustively (the property samples)."""
    objs = exports["refund-completed-1"]
    n = len(objs) - 1
    accepted = []
    for k in range(1, n):
        if _auto_completion_record(objs, k):
            continue
        try:
            parse_export(render([o for x, o in enumerate(objs) if x != k]))
            accepted.append(("delete", k))
        except ImportFormatError:
            pass
    for k in range(1, n + 1):
        if objs[k]["event"].get("output") is None:
            continue
        forged = json.loads(json.dumps(objs))
        forged[k]["event"]["output"] = {"forged": True}
        try:
            parse_export(render(forged))
            accepted.append(("output", k))
        except ImportFormatError:
            pass
    assert accepted == []


def test_the_unmutated_exports_import(exports: dict[str, list[dict[str, Any]]]) -> None:
    async def go() -> None:
        store = MemoryStore()
        for sid in COMPLETED:
            session = await store.import_session(render(exports[sid]), session_id=f"copy-{sid}")
            assert session.last_seq == len(exports[sid]) - 1

    asyncio.run(go())
