"""The dry run of an answer: what it would resolve, complete, re-execute or leave
waiting (:func:`plan_resume`), and what each auto-completion makes runnable
(:func:`next_runs`). ``hitl resume --dry-run`` and the console's preview call
it; the Runner applies the very same projection rules. Apart from
:mod:`engine.resume` so that a turn does not build the plan's dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvocationBusyError, InvocationInterruptedError
from .models import Content, Event, NodeStatus, leaf_name, parent_path, split_path
from .projection import Projection
from .resume import ResumeTarget, load_invocation, validate_responses

if TYPE_CHECKING:
    from .nodes import BaseNode
    from .store.base import SessionStore
    from .workflow import Workflow


@dataclass
class NodeChange:
    path: str
    before: NodeStatus
    after: NodeStatus
    effect: str
    """``auto-complete``, ``re-execute``, ``keep waiting`` or ``re-run``."""
    output: Any = None
    still_open: list[str] = field(default_factory=list)


@dataclass
class ResumePlan:
    """What a resume would do, computed without writing anything."""

    invocation_id: str
    resolves: list[str]
    still_open: list[str]
    changes: list[NodeChange]
    runs_anything: bool
    side_effect_warnings: list[str] = field(default_factory=list)
    after: Projection | None = field(default=None, repr=False, compare=False)
    """The invocation's projection with the answer applied (not serialised)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "invocation_id": self.invocation_id,
            "resolves": self.resolves,
            "still_open": self.still_open,
            "runs_anything": self.runs_anything,
            "changes": [
                {
                    "path": c.path,
                    "before": c.before.value,
                    "after": c.after.value,
                    "effect": c.effect,
                    "output": c.output,
                    "still_open": c.still_open,
                }
                for c in self.changes
            ],
            "side_effect_warnings": self.side_effect_warnings,
        }


def plan_from_projection(proj: Projection, target: ResumeTarget) -> ResumePlan:
    """Apply the validated answer to a copy of the projection and describe the diff."""
    inv = target.invocation_id
    before = {r.path: r.status for r in proj.runs(inv)}
    after_proj = proj.fork()
    change = after_proj.apply(Event(invocation_id=inv, author="user", content=target.content))
    changes: list[NodeChange] = []
    for path in sorted(change.paths, key=lambda p: (p.count("/"), p)):
        run = after_proj.get(inv, path)
        assert run is not None
        old = before.get(path, NodeStatus.PENDING)
        if path in change.auto_completed:
            effect = "auto-complete"
        elif run.status is NodeStatus.PENDING:
            effect = "re-execute"
        else:
            effect = "keep waiting"
        changes.append(
            NodeChange(
                path=path,
                before=old,
                after=run.status,
                effect=effect,
                output=run.output if effect == "auto-complete" else None,
                still_open=run.own_pending,
            )
        )
    # Answered leaves that stay WAITING (partial answer to rerun_on_resume=False).
    touched = {c.path for c in changes}
    for rec in target.records.values():
        run = after_proj.get(inv, rec.path)
        if run is not None and rec.path not in touched:
            touched.add(rec.path)
            changes.append(
                NodeChange(path=rec.path, before=run.status, after=run.status, effect="keep waiting", still_open=run.own_pending)
            )
    warnings = []
    for c in changes:
        run = after_proj.get(inv, c.path)
        if c.effect == "re-execute" and run is not None and not run.is_container:
            warnings.append(
                f"{c.path} already ran once (run {run.run_id}) and will re-execute: "
                "its side effects may repeat unless it checks ctx.resume_inputs"
            )
    root = after_proj.root(inv)
    return ResumePlan(
        invocation_id=inv,
        resolves=list(target.answers),
        still_open=[i.id for i in after_proj.open_interrupts(inv)],
        changes=changes,
        runs_anything=bool(root and root.status is NodeStatus.PENDING),
        side_effect_warnings=warnings,
        after=after_proj,
    )


async def plan_resume(
    store: SessionStore, session_id: str, content: Content, invocation_id: str | None = None
) -> ResumePlan:
    """Validate and dry-run an FR message; raises what the real resume would raise
    (also InvocationBusyError while a process runs the invocation, and
    InvocationInterruptedError when it stopped mid-run)."""
    from .liveness import in_doubt_paths, is_mid_run, stopped_mid_run

    target = await validate_responses(store, session_id, content, invocation_id)
    inv = target.invocation_id
    proj = await load_invocation(store, session_id, inv)
    if is_mid_run(proj, inv):
        stopped, lease = await stopped_mid_run(store, session_id, inv, proj)
        if stopped:
            raise InvocationInterruptedError(session_id, inv, in_doubt_paths(proj, inv))
        raise InvocationBusyError(inv, lease)  # running (or just finished: the caller may retry)
    return plan_from_projection(proj, target)


def _container(root: BaseNode, path: str) -> Workflow | None:
    """The Workflow object that runs the node at ``path`` (None: a dynamic child, unknown code)."""
    from .workflow import Workflow

    segments = [name for name, _ in split_path(path)]
    node: BaseNode = root
    if not segments or segments[0] != root.name:
        return None
    for name in segments[1:-1]:
        if not isinstance(node, Workflow) or name not in node.nodes:
            return None
        node = node.nodes[name]
    return node if isinstance(node, Workflow) and segments[-1] in node.nodes else None


def next_runs(plan: ResumePlan, after: Projection, root: BaseNode) -> list[str]:
    """What each auto-completed node makes runnable in this turn, one line each:
    ``pay runs (after approvals)``, ``approvals (join) waits for risk_approval``,
    ``decide runs if route is 'ok'``. Uses the workflow graph of ``root`` (the
    app's code); ``after`` is the projection with the answer applied. The console
    editor and ``hitl resume --dry-run`` both show it."""
    from .nodes import JoinNode
    from .workflow import ANY_ROUTE

    inv = plan.invocation_id
    lines: list[str] = []
    for change in plan.changes:
        if change.effect != "auto-complete":
            continue
        wf = _container(root, change.path)
        name = leaf_name(change.path)
        parent = parent_path(change.path)
        if wf is None:
            if parent is not None:
                lines.append(f"{name}: its caller {leaf_name(parent)} re-executes and receives the answer")
            continue
        for dst, route in wf.succ.get(name, []):
            node = wf.nodes.get(dst)
            when = "" if route is ANY_ROUTE else f" if the route is {route!r}"
            if isinstance(node, JoinNode):
                missing = [
                    p
                    for p in wf.preds.get(dst, [])
                    if (r := after.latest_run(inv, parent, p)) is None or r.status is not NodeStatus.COMPLETED
                ]
                if missing:
                    lines.append(f"{dst} (join) waits for {', '.join(missing)}")
                else:
                    lines.append(f"{dst} (join) runs{when}: every branch is complete")
            else:
                lines.append(f"{dst} runs{when}, with {name}'s output")
        if not wf.succ.get(name):
            lines.append(f"{name} is a last node: {leaf_name(parent or '') or 'the workflow'} can complete")
    return list(dict.fromkeys(lines))
