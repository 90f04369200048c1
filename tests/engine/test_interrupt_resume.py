"""DESIGN.md 3.1 (interrupt), 3.2 (persist), 3.4 (continue / rerun_on_resume)."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import START, Content, Event, FunctionCall, JoinNode, Part, RequestInput, Workflow, node
from engine.models import NodeStatus

from .conftest import Harness, asking, starts
from .deploy_loop import deploy, gate, review, verify

# --------------------------------------------------------------------- 3.1


async def test_leaf_single_interrupt_then_full_resume(calls):
    ask = asking("ask", "i1", "ok?", calls)

    @node
    async def after(node_input):
        return f"got {node_input}"

    h = Harness(Workflow("wf", [(START, ask, after)]))
    await h.start()
    assert await h.status("wf@1/ask@1") == "WAITING"
    assert await h.status("wf@1") == "WAITING"
    events = await h.answer({"i1": "yes"})
    assert calls["ask"] == 1, "a rerun_on_resume=False leaf must not re-execute"
    assert starts(events, "wf@1/ask@1") == 0
    assert (await h.run("wf@1/ask@1")).output == "yes"
    assert (await h.run("wf@1/after@1")).output == "got yes"
    assert await h.status("wf@1") == "COMPLETED"


async def test_interrupt_by_long_running_event_is_equivalent_to_request_input():
    @node
    async def tool(node_input):
        call = FunctionCall(id="lr-1", name="approve_payment", args={"amount": 5})
        yield Event(invocation_id="", author="", content=Content(role="model", parts=[Part(function_call=call)]), long_running_tool_ids=["lr-1"])

    h = Harness(Workflow("wf", [(START, tool)]))
    await h.start()
    p = await h.projection()
    (itr,) = p.open_interrupts()
    assert (itr.id, itr.name, itr.path) == ("lr-1", "approve_payment", "wf@1/tool@1")
    await h.answer({"lr-1": {"ok": True}})
    assert (await h.run("wf@1/tool@1")).output == {"ok": True}


async def test_node_body_runs_to_the_end_after_interrupting():
    @node
    async def multi(node_input):
        yield RequestInput("first", interrupt_id="a")
        yield "draft"
        yield RequestInput("second", interrupt_id="b")

    h = Harness(Workflow("wf", [(START, multi)]))
    await h.start()
    run = await h.run("wf@1/multi@1")
    assert run.status is NodeStatus.WAITING
    assert run.interrupt_ids == ["a", "b"]
    assert run.output == "draft", "output produced in a waiting run is kept as prior output"


async def test_only_the_leaf_interrupt_event_is_persisted():
    @node
    async def ask(node_input):
        yield RequestInput("?", interrupt_id="x")

    inner = Workflow("inner", [(START, ask)])
    h = Harness(Workflow("outer", [(START, inner)]))
    events = await h.start()
    interrupting = [e for e in events if e.long_running_tool_ids]
    assert [e.path for e in interrupting] == ["outer@1/inner@1/ask@1"]
    # ancestors are WAITING through their end records, which carry no interrupt
    assert await h.status("outer@1/inner@1") == "WAITING"
    assert await h.status("outer@1") == "WAITING"
    p = await h.projection()
    inv = next(iter(p.invocations))
    assert p.pending_ids(inv, "outer@1") == ["x"]


async def test_waiting_node_does_not_trigger_downstream(calls):
    ask = asking("ask", "x", "?", first="prior")

    @node
    async def down(node_input):
        calls["down"] = calls.get("down", 0) + 1

    h = Harness(Workflow("wf", [(START, ask, down)]))
    await h.start()
    assert "down" not in calls
    p = await h.projection()
    assert [r.name for r in p.nodes.values()] == ["wf", "ask"]


async def test_workflow_runs_other_branches_then_ends_waiting_with_the_union():
    a, b = asking("a", "ia", "a?"), asking("b", "ib", "b?")

    @node
    async def c(node_input):
        return "c done"

    @node
    async def c2(node_input):
        return node_input + "!"

    h = Harness(Workflow("wf", [(START, (a, b, c)), (c, c2)]))
    events = await h.start()  # a waiting turn is a normal return, not an exception
    assert await h.status("wf@1/c2@1") == "COMPLETED"
    p = await h.projection()
    inv = next(iter(p.invocations))
    assert sorted(p.pending_ids(inv, "wf@1")) == ["ia", "ib"]
    assert events[-1].node_info.status is NodeStatus.WAITING and events[-1].path == "wf@1"


# --------------------------------------------------------------------- 3.2


async def test_persisted_records_start_end_and_completion_for_none_output(calls):
    @node
    async def side_effect(node_input):
        calls["side"] = calls.get("side", 0) + 1
        return None

    @node
    async def ask(node_input):
        yield RequestInput("?", interrupt_id="x")

    h = Harness(Workflow("wf", [(START, side_effect, ask)]))
    events = await h.start("hello")
    kinds = [(e.kind, e.path) for e in events]
    assert kinds[0] == ("message", None)
    assert ("start", "wf@1/side_effect@1") in kinds and ("end", "wf@1/side_effect@1") in kinds
    end = next(e for e in events if e.kind == "end" and e.path == "wf@1/side_effect@1")
    assert end.node_info.status is NodeStatus.COMPLETED and end.output is None
    await h.answer({"x": 1})
    assert calls["side"] == 1, "a node that returned None must not re-execute on resume"
    stored = await h.store.events("s1")
    fr = [s.event for s in stored if s.event.kind == "response"]
    assert len(fr) == 1 and fr[0].invocation_id == events[0].invocation_id


async def test_start_record_makes_a_running_node_visible_to_other_readers():
    gate = asyncio.Event()
    release = asyncio.Event()

    @node
    async def slow(node_input):
        gate.set()
        await release.wait()
        return "done"

    h = Harness(Workflow("wf", [(START, slow)]))
    task = asyncio.ensure_future(h.start())
    await gate.wait()
    assert await h.status("wf@1/slow@1") == "RUNNING"
    release.set()
    await task
    assert await h.status("wf@1/slow@1") == "COMPLETED"


# --------------------------------------------------------------------- 3.4


async def test_leaf_with_two_ids_partial_then_full(calls):
    @node
    async def pair(node_input):
        calls["pair"] = calls.get("pair", 0) + 1
        yield RequestInput("one", interrupt_id="p1")
        yield RequestInput("two", interrupt_id="p2")

    @node
    async def down(node_input):
        calls["down"] = calls.get("down", 0) + 1
        return node_input

    h = Harness(Workflow("wf", [(START, pair, down)]))
    await h.start()
    events = await h.answer({"p1": "A"})
    assert [e.kind for e in events] == ["response"], "partial answer to a leaf runs nothing"
    assert await h.status("wf@1/pair@1") == "WAITING"
    assert await h.status("wf@1") == "WAITING"
    await h.answer({"p2": "B"})
    assert calls == {"pair": 1, "down": 1}
    assert (await h.run("wf@1/pair@1")).output == {"p1": "A", "p2": "B"}
    assert (await h.run("wf@1/down@1")).output == {"p1": "A", "p2": "B"}


async def test_parallel_children_resumed_one_at_a_time_join_waits_for_both(calls):
    def approval(name):
        @node(name=name)
        async def ask(node_input):
            calls[name] = calls.get(name, 0) + 1
            yield RequestInput(f"{name}?", interrupt_id=f"i-{name}")

        return ask

    fin, risk = approval("finance"), approval("risk")

    @node
    async def after_fin(node_input):
        return f"fin said {node_input}"

    join = JoinNode("join")

    @node
    async def pay(node_input):
        calls["pay"] = calls.get("pay", 0) + 1
        return node_input

    h = Harness(Workflow("wf", [(START, (fin, risk)), (fin, after_fin, join), (risk, join), (join, pay)]))
    await h.start()
    await h.answer({"i-finance": "ok"})
    assert await h.status("wf@1/after_fin@1") == "COMPLETED", "resolved branch's downstream runs at once"
    assert await h.status("wf@1/risk@1") == "WAITING"
    p = await h.projection()
    assert p.get(next(iter(p.invocations)), "wf@1/join@1") is None, "join waits for both"
    await h.answer({"i-risk": "fine"})
    assert (await h.run("wf@1/pay@1")).output == {"after_fin": "fin said ok", "risk": "fine"}
    assert calls == {"finance": 1, "risk": 1, "pay": 1}


async def test_rerun_true_leaf_partial_answer_re_executes_with_partial_inputs():
    seen: list[dict[str, Any]] = []

    @node(rerun_on_resume=True)
    async def review(ctx, node_input):
        seen.append(dict(ctx.resume_inputs))
        for iid in ("r1", "r2"):
            if iid not in ctx.resume_inputs:
                yield RequestInput(iid, interrupt_id=iid)
        if not ctx.unresolved_ids:
            yield sorted(ctx.resume_inputs.values())

    h = Harness(Workflow("wf", [(START, review)]))
    await h.start()
    events = await h.answer({"r1": "x"})
    assert seen[-1] == {"r1": "x"}, "re-executes immediately with the partial resume_inputs"
    assert starts(events, "wf@1/review@1") == 1
    assert await h.status("wf@1/review@1") == "WAITING"
    run = await h.run("wf@1/review@1")
    assert run.run_id == "1" and run.resumed
    await h.answer({"r2": "y"})
    assert seen[-1] == {"r1": "x", "r2": "y"}
    assert (await h.run("wf@1/review@1")).output == ["x", "y"]
    assert (await h.run("wf@1/review@1")).run_id == "1"


async def test_pending_is_observed_between_fr_and_re_execution():
    h = Harness(Workflow("wf", [(START, review)]))
    await h.start()
    await h.answer({"r": 1})
    stored = await h.store.events("s1")
    fr_seq = next(s.seq for s in stored if s.event.kind == "response")
    from engine.projection import project

    at_fr = project([(s.seq, s.event) for s in stored if s.seq <= fr_seq])
    inv = next(iter(at_fr.invocations))
    assert at_fr.get(inv, "wf@1/review@1").status is NodeStatus.PENDING
    assert at_fr.get(inv, "wf@1").status is NodeStatus.PENDING
    after = project([(s.seq, s.event) for s in stored if s.seq <= fr_seq + 2])
    assert after.get(inv, "wf@1/review@1").status is NodeStatus.RUNNING
    assert await h.status("wf@1/review@1") == "COMPLETED"


async def test_output_and_interrupt_in_same_run_rerun_false_keeps_prior_output():
    reviewer = asking("reviewer", "sign", "sign off?", first="draft v1")

    @node
    async def publish(node_input):
        return f"published {node_input}"

    h = Harness(Workflow("wf", [(START, reviewer, publish)]))
    await h.start()
    assert (await h.run("wf@1/reviewer@1")).output == "draft v1"
    await h.answer({"sign": "approved"})
    # rerun_on_resume=False: auto-completes with the answer as output
    assert (await h.run("wf@1/publish@1")).output == "published approved"


async def test_output_and_interrupt_in_same_run_rerun_true_carries_prior_forward():
    observed: list[tuple[Any, list[str], dict[str, Any]]] = []

    @node(rerun_on_resume=True)
    async def reviewer(ctx, node_input):
        observed.append((ctx.output, list(ctx.interrupt_ids), dict(ctx.resume_inputs)))
        if ctx.attempt_count and not ctx.resume_inputs:
            yield "draft v1"
            yield RequestInput("a", interrupt_id="a")
            yield RequestInput("b", interrupt_id="b")
        elif "b" in ctx.resume_inputs:
            yield f"final {ctx.resume_inputs}"

    @node
    async def publish(node_input):
        return node_input

    h = Harness(Workflow("wf", [(START, reviewer, publish)]))
    await h.start()
    await h.answer({"a": 1})
    # on the re-execution the context was pre-populated with prior output and the open id
    assert observed[1] == ("draft v1", ["b"], {"a": 1})
    run = await h.run("wf@1/reviewer@1")
    assert run.status is NodeStatus.WAITING and run.output == "draft v1", "no new output: prior output stands"
    assert run.own_pending == ["b"]
    await h.answer({"b": 2})
    assert (await h.run("wf@1/publish@1")).output == "final {'a': 1, 'b': 2}"
    assert (await h.run("wf@1/reviewer@1")).run_id == "1"


async def test_nested_workflow_interrupt_and_resume(calls):
    @node
    async def draft(node_input):
        return "text"

    approve = asking("approve", "ap", "approve draft?", calls)

    @node
    async def publish(node_input):
        return f"published:{node_input}"

    inner = Workflow("inner", [(START, draft, approve)])
    h = Harness(Workflow("outer", [(START, inner, publish)]))
    await h.start()
    assert await h.status("outer@1/inner@1/approve@1") == "WAITING"
    events = await h.answer({"ap": "yes"})
    assert starts(events, "outer@1/inner@1") == 1 and starts(events, "outer@1") == 1
    assert starts(events, "outer@1/inner@1/draft@1") == 0
    assert (await h.run("outer@1/inner@1")).output == "yes"
    assert (await h.run("outer@1/publish@1")).output == "published:yes"
    assert (await h.run("outer@1/inner@1")).run_id == "1"
    assert calls["approve"] == 1


async def test_loop_retrigger_gets_new_run_id_resumed_node_keeps_its_own():
    @node
    async def done(node_input):
        return "shipped"

    h = Harness(Workflow("wf", [(START, deploy, gate, verify), (verify, {"retry": deploy, "ok": done})]))
    await h.start()
    await h.answer({"gate-1": "bad"})
    assert await h.status("wf@1/gate@2") == "WAITING"
    assert (await h.run("wf@1/deploy@2")).output == 2
    gate1 = await h.run("wf@1/gate@1")
    assert gate1.status is NodeStatus.COMPLETED and gate1.run_id == "1"
    await h.answer({"gate-2": "good"})
    assert (await h.run("wf@1/done@1")).output == "shipped"
    assert (await h.run("wf@1/verify@2")).route == "ok"
    p = await h.projection()
    assert sorted(r.path for r in p.nodes.values() if r.name == "deploy") == ["wf@1/deploy@1", "wf@1/deploy@2"]


async def test_completed_nodes_never_run_again_in_the_invocation(calls):
    def counted(name):
        @node(name=name)
        async def f(node_input):
            calls[name] = calls.get(name, 0) + 1
            return name

        return f

    @node
    async def ask(node_input):
        yield RequestInput("?", interrupt_id=f"q-{node_input}")

    a, b = counted("a"), counted("b")
    h = Harness(Workflow("wf", [(START, a, (ask, b), JoinNode("j"))]))  # one output (3.9)
    await h.start()
    await h.answer({"q-a": 1})
    assert calls == {"a": 1, "b": 1}


async def test_dynamic_children_resumed_partially_then_fully(calls):
    @node
    async def label(ctx, node_input):
        calls[node_input] = calls.get(node_input, 0) + 1
        yield RequestInput(f"label {node_input}", interrupt_id=f"lbl-{node_input}")

    @node(rerun_on_resume=True)
    async def orchestrate(ctx, node_input):
        calls["orch"] = calls.get("orch", 0) + 1
        items = ["x", "y", "z"]
        results = await asyncio.gather(*(ctx.run_node(label, it, key=it) for it in items))
        yield dict(zip(items, results, strict=True))

    @node
    async def summary(node_input):
        return node_input

    h = Harness(Workflow("wf", [(START, orchestrate, summary)]))
    await h.start()
    p = await h.projection()
    inv = next(iter(p.invocations))
    assert sorted(p.pending_ids(inv, "wf@1/orchestrate@1")) == ["lbl-x", "lbl-y", "lbl-z"]
    assert {r.path for r in p.children(inv, "wf@1/orchestrate@1")} == {
        "wf@1/orchestrate@1/label@1",
        "wf@1/orchestrate@1/label@2",
        "wf@1/orchestrate@1/label@3",
    }
    events = await h.answer({"lbl-y": "cat"})
    assert calls["orch"] == 2 and calls["y"] == 1, "caller re-executes; answered leaf child auto-completes"
    assert sum(1 for e in events if e.kind == "start" and "/label@" in (e.path or "")) == 0
    run = await h.run("wf@1/orchestrate@1")
    assert run.status is NodeStatus.WAITING and run.run_id == "1"
    p = await h.projection()
    assert sorted(p.pending_ids(inv, "wf@1/orchestrate@1")) == ["lbl-x", "lbl-z"]
    await h.answer({"lbl-x": "dog", "lbl-z": "cow"})
    assert (await h.run("wf@1/summary@1")).output == {"x": "dog", "y": "cat", "z": "cow"}
    assert calls == {"orch": 3, "x": 1, "y": 1, "z": 1}


async def test_run_node_requires_rerun_on_resume():
    @node
    async def child(node_input):
        return 1

    @node
    async def orch(ctx, node_input):
        yield await ctx.run_node(child)

    h = Harness(Workflow("wf", [(START, orch)]))
    import pytest

    from engine import WorkflowFailed

    with pytest.raises(WorkflowFailed, match="rerun_on_resume=True"):
        await h.start()


async def test_dynamic_completed_child_returns_recorded_output_without_running(calls):
    @node
    async def compute(node_input):
        calls["compute"] = calls.get("compute", 0) + 1
        return node_input * 10

    @node
    async def ask(node_input):
        yield RequestInput("?", interrupt_id="ask")

    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        first = await ctx.run_node(compute, 4)
        answer = await ctx.run_node(ask)
        yield (first, answer)

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    await h.answer({"ask": "z"})
    assert (await h.run("wf@1/orch@1")).output == (40, "z") or (await h.run("wf@1/orch@1")).output == [40, "z"]
    assert calls["compute"] == 1


async def test_run_ids_come_from_persisted_state_not_replay_order():
    @node
    async def ask(node_input):
        yield RequestInput("?", interrupt_id=f"i-{node_input}")

    @node
    async def route(ctx, node_input):
        ctx.route = "again" if node_input == "more" else "stop"
        return node_input

    @node
    async def fin(node_input):
        return "end"

    wf = Workflow("wf", [(START, ask, route), (route, {"again": ask, "stop": fin})])
    h = Harness(wf)
    await h.start("a")
    await h.answer({"i-a": "more"})
    # a brand-new runner with the same store: run ids continue from what is stored
    from engine import Runner

    h.runner = Runner("test", Workflow("wf", [(START, ask, route), (route, {"again": ask, "stop": fin})]), h.store)
    await h.answer({"i-more": "done"})
    assert (await h.run("wf@1/route@2")).output == "done"
    assert (await h.run("wf@1/fin@1")).output == "end"


async def test_answered_dynamic_child_with_rerun_true_re_executes_with_its_run_id(calls):
    @node(rerun_on_resume=True)
    async def check(ctx, node_input):
        calls[node_input] = calls.get(node_input, 0) + 1
        if f"c-{node_input}" not in ctx.resume_inputs:
            yield RequestInput(f"check {node_input}", interrupt_id=f"c-{node_input}")
        else:
            yield f"{node_input}:{ctx.resume_inputs[f'c-{node_input}']}"

    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        yield await asyncio.gather(*(ctx.run_node(check, item, key=item) for item in ("a", "b")))

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    events = await h.answer({"c-b": "ok"})
    # the answered child re-executes (its own rerun_on_resume=True) with the same
    # run id; the unanswered one does not run at all
    assert starts(events, "wf@1/orch@1/check@2") == 1 and starts(events, "wf@1/orch@1/check@1") == 0
    assert calls == {"a": 1, "b": 2}
    assert (await h.run("wf@1/orch@1/check@2")).output == "b:ok"
    await h.answer({"c-a": "fine"})
    assert (await h.run("wf@1/orch@1")).output == ["a:fine", "b:ok"]
