"""Resume support shared by the Runner, the CLI and the console.

* :func:`validate_responses` -- the one validation of an FR message (DESIGN.md
  3.3): index lookup, never a session scan; raises a typed
  :class:`~engine.errors.ResumeRejected` naming the ids.
* :func:`load_invocation` -- reconstruct one invocation's projection from a
  cached snapshot plus the events after it (cost independent of unrelated
  history and of how many earlier iterations the invocation ran).
* :func:`plan_resume` -- the dry run: what an answer would resolve, complete,
  re-execute or leave waiting. ``hitl resume --dry-run`` and the console's
  preview both call it; the Runner applies the very same projection rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyResolvedError,
    AmbiguousInterruptError,
    EmptyMessageError,
    InvalidResponseError,
    InvocationBusyError,
    InvocationCancelledError,
    InvocationInterruptedError,
    MixedInvocationsError,
    ResumeRejected,
    TextWithResponsesError,
    UnknownInterruptError,
    WrongInvocationError,
    require_id,
)
from .loading import load_invocation  # noqa: F401 (re-exported: callers read invocations through engine.resume)
from .models import Content, Event, FunctionResponse, NodeStatus, Part, leaf_name, parent_path, split_path
from .projection import Projection
from .responses import coerce_response, same_json, unwrap_response
from .store.base import InterruptRecord, LoadedInvocation, SessionStore, answer_reads

if TYPE_CHECKING:  # the node classes are imported where next_runs needs them: a read (hitl show) never does
    from .nodes import BaseNode
    from .workflow import Workflow


@dataclass
class ResumeTarget:
    """A validated FR message: which invocation it resumes and with what."""

    invocation_id: str
    content: Content
    """The message to persist (names filled in from the interrupts' calls)."""
    records: dict[str, InterruptRecord]
    answers: dict[str, Any]
    """Unwrapped answers by interrupt id."""
    loaded: LoadedInvocation | None = None
    """The invocation as read with the interrupts (:func:`~engine.store.base.answer_reads`),
    for the turn's first look at it; None: read it then."""


async def validate_responses(
    store: SessionStore, session_id: str, content: Content, invocation_id: str | None = None
) -> ResumeTarget:
    """Validate an FR message against the interrupt index; nothing is written."""
    if content.is_empty:
        raise EmptyMessageError()
    if invocation_id is not None:
        require_id(invocation_id, "the invocation id")
    frs = content.function_responses
    if not frs:
        raise ResumeRejected("the message contains no FunctionResponse")
    if any(p.text or p.function_call for p in content.parts):
        raise TextWithResponsesError()
    ids = [fr.id for fr in frs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ResumeRejected(f"interrupt {', '.join(dupes)} is answered twice in one message", dupes)
    rows, loaded = await answer_reads(store, session_id, ids, invocation_id)
    open_by_id: dict[str, list[InterruptRecord]] = {}
    seen: set[str] = set()
    for r in rows:
        if invocation_id is not None and r.invocation_id != invocation_id:
            continue
        seen.add(r.interrupt_id)
        if r.status == "open":
            open_by_id.setdefault(r.interrupt_id, []).append(r)
    unknown = [i for i in ids if i not in seen]
    if unknown and invocation_id is not None:
        owners = {r.invocation_id for r in rows if r.interrupt_id in unknown and r.status == "open"}
        if owners:
            raise WrongInvocationError([i for i in unknown if any(r.interrupt_id == i for r in rows)], invocation_id, owners)
    if unknown:
        raise UnknownInterruptError(unknown)
    resolved = [i for i in ids if i not in open_by_id]
    if resolved:
        closed = [r for r in rows if r.interrupt_id in resolved and (invocation_id is None or r.invocation_id == invocation_id)]
        if closed and all(r.status == "cancelled" for r in closed):
            inv_id = closed[0].invocation_id
            cancel = await cancel_of(store, session_id, inv_id)
            if cancel is not None:
                raise InvocationCancelledError(inv_id, cancel, resolved, what=f"interrupt {', '.join(sorted(resolved))}")
            raise AlreadyResolvedError(resolved, cancelled=True)
        seqs = sorted({r.resolved_seq for r in closed if r.resolved_seq})
        raise AlreadyResolvedError(resolved, f" (at event {', '.join(map(str, seqs))})" if seqs else "")
    ambiguous = {i: recs for i, recs in open_by_id.items() if len(recs) > 1}
    if ambiguous:
        raise AmbiguousInterruptError(ambiguous, {r.invocation_id for recs in ambiguous.values() for r in recs})
    by_inv: dict[str, list[str]] = {}
    for i in ids:
        by_inv.setdefault(open_by_id[i][0].invocation_id, []).append(i)
    if len(by_inv) > 1:
        raise MixedInvocationsError(by_inv)
    records = {i: open_by_id[i][0] for i in ids}
    answers: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    stored: dict[str, Any] = {}
    for fr in frs:
        value = unwrap_response(fr.response)
        coerced, errs = coerce_response(records[fr.id].response_schema, value)
        if errs:
            errors[fr.id] = errs
            continue
        answers[fr.id] = coerced
        stored[fr.id] = fr.response if same_json(coerced, value) else _as_response(coerced)
    if errors:
        raise InvalidResponseError(errors)
    named = Content(
        role="user",
        parts=[
            Part(function_response=FunctionResponse(id=fr.id, name=fr.name or records[fr.id].name, response=stored[fr.id]))
            for fr in frs
        ],
    )
    target_inv = next(iter(by_inv))
    if loaded is not None and loaded.invocation_id != target_inv:
        loaded = None
    return ResumeTarget(target_inv, named, records, answers, loaded)


def _as_response(value: Any) -> Any:
    """The persisted form of a coerced answer: one that unwraps back to ``value``."""
    return {"result": value} if isinstance(value, dict) and set(value) == {"result"} else value


async def cancel_of(store: SessionStore, session_id: str, invocation_id: str) -> dict[str, Any] | None:
    """The operator's cancel of an invocation (who, when, why), or None."""
    inv = (await load_invocation(store, session_id, invocation_id)).invocations.get(invocation_id)
    return inv.cancel if inv is not None else None


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
