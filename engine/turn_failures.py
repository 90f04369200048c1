"""How a turn's failure is reported: what ``Runner.run`` raises for a failed node,
the original failure among its ancestors, and a store error behind an exception
(split out of :mod:`engine.runner`, which keeps the turn itself)."""

from __future__ import annotations

from .context import NodeFailed
from .errors import StoreError, WorkflowFailed
from .models import NodeStatus
from .projection import Projection


def workflow_failed(exc: NodeFailed) -> WorkflowFailed:
    """What ``Runner.run`` raises for a node failure, with every sibling failure it stands for."""
    failed = WorkflowFailed(exc.path, exc.error_code, exc.error_message, exc.original)
    if exc.failures:
        failed.failures = [
            failed if f is exc else WorkflowFailed(f.path, f.error_code, f.error_message, f.original)
            for f in exc.failures
        ]
    return failed


def store_error_in(exc: BaseException) -> StoreError | None:
    """The first StoreError in an exception's cause/context chain."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, StoreError):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def failed_leaf(proj: Projection, invocation_id: str) -> tuple[str, str, str] | None:
    """The deepest FAILED run (the original failure, not its ancestors)."""
    failed = [r for r in proj.runs(invocation_id) if r.status is NodeStatus.FAILED]
    if not failed:
        return None
    leaf = max(failed, key=lambda r: (r.path.count("/"), r.updated_pos))
    return leaf.path, leaf.error_code or "Error", leaf.error_message or ""
