"""Typed errors. Every one that can reach an operator names the offending
id(s) or path and says what to do; ``HitlError`` is the base the CLI and the
console catch to show a one-line reason instead of a traceback."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store.base import Lease


class HitlError(Exception):
    """Base for errors an operator can act on (CLI exit code 1)."""


class BlankIdError(HitlError):
    """An empty or blank id where one is required: never "the only one"."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is empty; give an id (is a variable in the runbook unset?); nothing was written")


def require_id(value: str | None, what: str) -> str:
    """``value`` when it is a non-blank id, else :class:`BlankIdError`."""
    if value is None or not value.strip():
        raise BlankIdError(what)
    return value


class SessionNotFoundError(HitlError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} does not exist (list them with `hitl sessions`)")
        self.session_id = session_id


class InvocationNotFoundError(HitlError):
    def __init__(self, session_id: str, invocation_id: str) -> None:
        super().__init__(f"invocation {invocation_id!r} is not in session {session_id!r}")
        self.invocation_id = invocation_id


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(sorted(ids))


class ResumeRejected(HitlError):
    """An FR message that was rejected before anything was persisted."""

    def __init__(self, message: str, ids: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.ids = sorted(ids)


class UnknownInterruptError(ResumeRejected):
    def __init__(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        super().__init__(
            f"no open interrupt with id {_ids(ids)} in this session (see `hitl show SESSION` for open ids)", ids
        )


class AlreadyResolvedError(ResumeRejected):
    def __init__(self, ids: Iterable[str], detail: str = "", *, cancelled: bool = False) -> None:
        ids = list(ids)
        what = "is closed: its invocation was cancelled" if cancelled else f"was already answered{detail}"
        super().__init__(f"interrupt {_ids(ids)} {what}; nothing was written", ids)


class MixedInvocationsError(ResumeRejected):
    def __init__(self, by_invocation: dict[str, list[str]]) -> None:
        parts = "; ".join(f"{inv}: {_ids(ids)}" for inv, ids in sorted(by_invocation.items()))
        super().__init__(
            f"the answered ids belong to different invocations ({parts}); send one message per invocation",
            [i for ids in by_invocation.values() for i in ids],
        )


class AmbiguousInterruptError(ResumeRejected):
    def __init__(self, ids: Iterable[str], invocations: Iterable[str]) -> None:
        ids = list(ids)
        super().__init__(
            f"interrupt {_ids(ids)} is open in several invocations ({_ids(invocations)}); "
            "name the invocation (--invocation)",
            ids,
        )


class TextWithResponsesError(ResumeRejected):
    def __init__(self) -> None:
        super().__init__(
            "a message that answers interrupts must contain only FunctionResponses; "
            "send text as a separate new message"
        )


class TextToWaitingInvocationError(ResumeRejected):
    def __init__(self, invocation_id: str) -> None:
        super().__init__(
            f"invocation {invocation_id} is waiting for answers; text cannot resume it, answer its interrupt ids"
        )


def _clip(text: str, width: int = 160) -> str:
    """One error detail, short enough for one line (schema errors quote the value)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


class InvalidResponseError(ResumeRejected):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        detail = "; ".join(f"{i}: {' | '.join(_clip(e) for e in errs[:5])}" for i, errs in sorted(errors.items()))
        super().__init__(f"invalid answer for {detail}", errors)
        self.errors = errors


class InvocationBusyError(HitlError):
    """Another process holds the invocation's lease: it is running right now."""

    def __init__(self, invocation_id: str, lease: Lease | None = None) -> None:
        holder = ""
        if lease is not None:
            until = time.strftime("%H:%M:%S", time.localtime(lease.expires_at))
            holder = f" in {lease.holder} (lease renewed until {until})"
        super().__init__(
            f"invocation {invocation_id} is running right now{holder}; wait for it to settle and retry. "
            "If that process died, the invocation shows as interrupted mid-run once its lease lapses "
            "(at once on the same host); then continue it with `hitl redrive`"
        )
        self.invocation_id = invocation_id
        self.lease = lease


class InvocationInterruptedError(HitlError):
    """The invocation stopped mid-run (its process died): it must be continued
    (re-driven) before it takes answers."""

    def __init__(self, session_id: str, invocation_id: str, in_doubt: Iterable[str] = ()) -> None:
        self.session_id = session_id
        self.invocation_id = invocation_id
        self.in_doubt = sorted(in_doubt)
        ack = " --ack-in-doubt" if self.in_doubt else ""
        doubt = (
            f"; in doubt (started, no end record, may have done their side effects): {', '.join(self.in_doubt)}"
            if self.in_doubt
            else ""
        )
        super().__init__(
            f"invocation {invocation_id} was interrupted mid-run (no process is running it){doubt}; "
            f"continue it first: hitl redrive {session_id} {invocation_id}{ack} -- nothing was written"
        )


class InDoubtError(HitlError):
    """A re-drive would re-execute nodes that may already have done their side
    effects; the operator must acknowledge that explicitly."""

    def __init__(
        self, session_id: str, invocation_id: str, paths: Iterable[str], *, acknowledged: Iterable[str] = ()
    ) -> None:
        self.session_id = session_id
        self.invocation_id = invocation_id
        self.paths = sorted(paths)
        acked = sorted(acknowledged)
        since = (
            f" (not covered by the acknowledgement given, of {', '.join(acked)}: an acknowledgement covers the "
            "runs it names as they were when it was given, once)"
            if acked
            else ""
        )
        super().__init__(
            f"invocation {invocation_id} has nodes in doubt: {', '.join(self.paths)} started but never recorded "
            f"an end{since}, so they may have done their side effects before their turn stopped, and re-driving "
            "runs them again. Check their effects, then re-drive with --ack-in-doubt (acknowledge_in_doubt=True); "
            "nothing was written"
        )


class NotRedrivableError(HitlError):
    pass


class InvocationCancelledError(ResumeRejected, NotRedrivableError):
    """An answer, re-drive or cancel of an invocation an operator cancelled
    (DESIGN 3.11: a cancel is final). Names the cancel: who, when, why."""

    def __init__(self, invocation_id: str, cancel: dict[str, object], ids: Iterable[str] = (), *, what: str = "") -> None:
        when = cancel.get("timestamp")
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(when))) if isinstance(when, int | float) else "?"
        by = cancel.get("operator") or "an unnamed operator"
        reason = cancel.get("reason")
        why = f" (reason: {reason})" if reason else " (no reason given)"
        head = f"{what}: " if what else ""
        super().__init__(
            f"{head}invocation {invocation_id} was cancelled by {by} at {at}{why}; "
            "a cancel is final, nothing was written",
            ids,
        )
        self.invocation_id = invocation_id
        self.cancel = cancel


class WorkflowFailed(HitlError):
    """Raised by ``Runner.run`` after a node failed; all events are persisted."""

    def __init__(
        self,
        path: str,
        error_code: str,
        error_message: str,
        exception: BaseException | None = None,
        failures: list[WorkflowFailed] | None = None,
    ) -> None:
        super().__init__(f"node {path} failed: {error_code}: {error_message}")
        self.path = path
        """Path of the node that failed first (the leaf, not its ancestors)."""
        self.error_code = error_code
        self.error_message = error_message
        self.exception = exception
        """The node body's original exception (None when only the log knows it)."""
        self.failures: list[WorkflowFailed] = failures or [self]
        """Every failure of the turn that this one stands for, in order: a parallel
        worker's failed items in item order (the first is this one); else just this one."""


class OutputAlreadySetError(HitlError):
    """A node run produced a second output (DESIGN.md 3.5): it fails, naming the node."""

    def __init__(self, path: str, how: str) -> None:
        super().__init__(
            f"node {path}: output already set; a node run has one output, and this one {how} "
            "(yield it once, or set ctx.output once)"
        )
        self.path = path


class OutputNotJSONError(HitlError):
    """A node's output cannot be stored: outputs are JSON (DESIGN.md 3.2)."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"node {path}: its output cannot be stored as JSON ({detail}); return dicts, lists, "
            "strings, numbers, booleans, None or a pydantic model"
        )
        self.path = path


class StoreError(HitlError):
    """The store cannot be used (missing, read-only, locked, newer schema...)."""


class SchemaUpgradeNeeded(StoreError):
    """A read-only open of a file with an older schema: a writer must upgrade it first."""


class ConflictError(StoreError):
    """Another writer appended first; re-read and retry is the caller's choice."""


class ReadOnlyError(StoreError):
    pass


class StoreFullError(StoreError):
    """The disk (or the database's size limit) has no room: the write was rolled back."""


class LeaseLostError(StoreError):
    """This process no longer holds the invocation's lease (another process took
    it over after it lapsed): the write was refused, nothing was written."""

    def __init__(self, session_id: str, invocation_id: str, owner: str, holder: str | None) -> None:
        now = f"now held by {holder}" if holder else "released"
        super().__init__(
            f"invocation {invocation_id} of session {session_id}: this process ({owner}) lost its lease ({now}); "
            "it stopped without writing more"
        )
        self.session_id = session_id
        self.invocation_id = invocation_id
        self.owner = owner
        self.holder = holder


class CorruptEventError(StoreError):
    def __init__(self, session_id: str, seq: int, detail: str) -> None:
        super().__init__(f"event {seq} of session {session_id} is corrupted: {detail}")
        self.session_id = session_id
        self.seq = seq


class EmptyMessageError(ResumeRejected):
    """A message with no parts, or only parts with neither text nor a response."""

    def __init__(self) -> None:
        super().__init__(
            "the message is empty (no text and no FunctionResponse); nothing was written"
        )


class WrongInvocationError(ResumeRejected):
    """An id answered under an invocation that does not own it."""

    def __init__(self, ids: Iterable[str], named: str, owners: Iterable[str]) -> None:
        ids = list(ids)
        super().__init__(
            f"interrupt {_ids(ids)} is not open in invocation {named}; it is open in invocation "
            f"{_ids(owners)} (name that one, or leave the invocation out); nothing was written",
            ids,
        )
        self.owners = sorted(owners)
