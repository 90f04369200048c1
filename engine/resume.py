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
  It lives in :mod:`engine.resume_plan` (a turn does not load it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyResolvedError,
    AmbiguousInterruptError,
    EmptyMessageError,
    InvalidResponseError,
    InvocationCancelledError,
    MixedInvocationsError,
    ResumeRejected,
    TextWithResponsesError,
    UnknownInterruptError,
    WrongInvocationError,
    require_id,
)
from .loading import load_invocation  # noqa: F401 (re-exported: callers read invocations through engine.resume)
from .models import Content, FunctionResponse, Part
from .responses import coerce_response, same_json, unwrap_response
from .store.base import AnswerRead, InterruptRecord, LoadedInvocation, SessionStore, answer_reads

if TYPE_CHECKING:  # for annotations that still name it here; import it from engine.resume_plan
    from .resume_plan import ResumePlan  # noqa: F401


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
    store: SessionStore, session_id: str, content: Content, invocation_id: str | None = None,
    *, read: AnswerRead | None = None,
) -> ResumeTarget:
    """Validate an FR message against the interrupt index; nothing is written.
    ``read``: :func:`~engine.store.base.answer_reads` of this message's ids and
    ``invocation_id`` as the caller made it for its own checks (else read here)."""
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
    rows, loaded = read if read is not None else await answer_reads(store, session_id, ids, invocation_id)
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
