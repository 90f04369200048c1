"""What an imported log must satisfy: the lifecycle as the runner writes it.

:class:`Replay` checks an export event by event before a store writes
anything (:class:`engine.store.jsonl.ExportReader` calls it), folding each
event through the one projection and refusing, naming the event, a log the
engine cannot write:

* an invocation begins with the user message that started it;
* answers go through the same validation as ``resume``: each id answers an
  interrupt open at that point *in that invocation*, no id twice in one
  message, and the value passes the interrupt's stored ``response_schema``
  and the size limit (:func:`engine.responses.validate_response`);
* the completion record of a run an answer auto-completed comes right after
  that answer (written in its transaction, DESIGN 3.2; logs of older writers
  have none) and carries the output the rule gives -- the answer itself (3.4),
  never another value;
* the node records are folded through the one projection, and a record it
  cannot follow is refused: a start of a run that is already running or whose
  parent is not running, an end (or output, interrupt, error) of a run that is
  not running (an auto-completion's record is the exception), anything after
  the invocation was cancelled;
* a node starts only after what triggered it ended (3.12's order): a start
  record's ``after`` names siblings that completed, and its input is their
  output (a join's: each one's, by name);
* an answer comes between turns, never while one runs;
* a run ends only after its children did (none still running or pending),
  WAITING only with something open to wait on, and ends COMPLETED only with
  nothing open below it: no interrupt of its own open,
  no child waiting, and for an invocation's root no interrupt of the invocation
  open; a Workflow's output is one of its children's (its terminal node's, 3.9).

Cheap per event (what the checks need is kept as the events are folded), so a
large import pays for the checks once, not per event seen so far.

One fold serves the checks and the seek checkpoints alike: given a
:class:`engine.checkpoints.Builder`, :class:`Replay` folds into the builder's
projection, which each checkpoint compacts, and keeps what compaction drops
(:class:`_Dropped`: completed runs off the latest tree) so that every check
reads what the whole fold would hold. A dropped run is never changed by a log
the checks accept -- except by an event that names it again (a record of it or
under it, an answer to its interrupt, a deadline's fail at its path) or by a
tie the dropped runs cannot order; then the checks switch to the whole fold,
refolded from the events read so far, and the builder goes on by itself
(:meth:`Replay._unfold`): exact either way, the fast way for the logs the
runner writes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from ..models import Event, NodeStatus, parent_path, path_parts
from ..projection import NodeRun, Projection
from ..projection_records import Invocation, _run_no
from ..responses import PlainProps, coerce_response, plain_object, plainly_valid, same_json, unwrap_response

if TYPE_CHECKING:
    from ..checkpoints import Builder

ACTIVE = (NodeStatus.RUNNING, NodeStatus.PENDING)
_NONE_OPEN: frozenset[str] = frozenset()
UNFINISHED = (NodeStatus.RUNNING, NodeStatus.PENDING, NodeStatus.WAITING)


class Replay:
    """The events of one export so far, and what the next one may be.
    :meth:`check` returns why ``event`` cannot come next (None: it can, and it
    is folded in). With ``checkpoints`` (a fresh Builder) the same fold makes
    the session's seek checkpoints (the builder's ``rows``)."""

    def __init__(self, checkpoints: Builder | None = None) -> None:
        self.builder = checkpoints
        self.proj = checkpoints.proj if checkpoints is not None else Projection()
        self._gone: _Dropped | None = _Dropped() if checkpoints is not None else None
        """What the checkpoints' compaction dropped from the fold (None: the whole fold)."""
        self._texts: list[str | bytes] = []
        """Each event's JSON so far, while the fold is compacted (for :meth:`_unfold`)."""
        self._owed: dict[tuple[str, str], int] = {}
        """(invocation, path) -> the position of the answer that auto-completed
        the run, whose completion record must come next."""
        self._open: dict[str, set[str]] = {}
        """invocation -> its open interrupt ids."""
        self._names: dict[tuple[str, str], set[str]] = {}
        """(invocation, container path) -> the names of its children."""
        self._answers: dict[tuple[bytes, bytes], tuple[Any, list[str], bool]] = {}
        """The schema checks' verdicts so far (:func:`_verdict`)."""

    def check(self, event: Event, seq: int, text: str | bytes | None = None) -> str | None:
        """``text``: the event's JSON as read, if the caller has it (kept while
        the fold is compacted; else the event is serialised)."""
        # What both checks read, looked up once: the invocation, and the run a node record is of
        iid, info = event.invocation_id, event.node_info
        inv = self.proj.invocations.get(iid)
        kept = None if info is None else self.proj.nodes.get((iid, info.path))
        run = kept if kept is not None or info is None else self.get(iid, info.path)
        problem = _impossible(self, event, inv, run) or self._order(event, inv, run)
        if problem:
            return problem
        builder, gone = self.builder, self._gone
        if gone is not None:
            # (a record of a run the fold kept names nothing dropped: its ancestors are kept too)
            if gone.runs and kept is None and _names_dropped(self.proj, gone, event):
                self._unfold()
            else:
                self._texts.append(text if text is not None else event.to_json())
        change = self.proj.apply(event, seq)
        self._track(event, change)
        if builder is not None:
            if self._gone is None:
                builder.add(event, seq)
            elif seq == builder.next:
                before = builder.take(seq)
                self._gone.drop(self, before, builder.proj)
                self.proj = builder.proj
        return None

    def _unfold(self) -> None:
        """From now on the checks read the whole fold (the events so far, folded
        again) and the builder folds by itself: the compacted fold and what it
        dropped could no longer say what the whole fold holds."""
        whole = Projection()
        for n, text in enumerate(self._texts, start=1):
            whole.apply(Event.from_json(text), n)
        self.proj, self._gone, self._texts = whole, None, []

    # ------------------------------------------- the whole fold's answers
    def get(self, iid: str, path: str) -> NodeRun | None:
        run = self.proj.nodes.get((iid, path))
        if run is None and self._gone is not None:
            return self._gone.runs.get((iid, path))
        return run

    def latest_run(self, iid: str, parent: str | None, name: str) -> NodeRun | None:
        kept = self.proj.latest_run(iid, parent, name)
        gone = self._gone
        if gone is None or not (gone.latest or gone.tied):
            return kept
        key = (iid, parent, name)
        dropped = gone.latest.get(key)
        if key not in gone.tied:
            if dropped is None:
                return kept
            if kept is None:
                return dropped[1]
            a = _run_no(kept.run_id)
            if a != dropped[0]:
                return kept if a > dropped[0] else dropped[1]
        self._unfold()  # two runs of one number: which was made last, only the whole fold knows
        return self.proj.latest_run(iid, parent, name)

    def root(self, iid: str) -> NodeRun | None:
        """The invocation's latest root (the last one made)."""
        gone = self._gone
        if gone is not None and (last := gone.last_root.get(iid)) is not None:
            inv = self.proj.invocations.get(iid)
            if inv is not None and len(inv.roots) == last[1]:  # none made since it was dropped
                return gone.runs.get((iid, last[0]))
        return self.proj.root(iid)

    def children(self, iid: str, parent: str) -> list[NodeRun]:
        """Every run under ``parent`` (any order)."""
        up = self.proj.nodes.get((iid, parent))
        kids = [self.proj.nodes[(iid, c)] for c in up.children] if up is not None else []
        if self._gone is not None:
            kids += self._gone.kids.get((iid, parent), ())
        return kids

    # ------------------------------------------------------------ before
    def _order(self, event: Event, inv: Invocation | None, run: NodeRun | None) -> str | None:
        """The runner's order, beyond what the projection can fold (``inv``: the
        event's invocation in the fold; ``run``: the whole fold's run at the
        record's path, if it is a node record)."""
        iid = event.invocation_id
        info = event.node_info
        if self._owed and (info is None or info.lifecycle != "end" or (iid, info.path) not in self._owed):
            self._owed.clear()  # no completion records after the answer: an older writer's log
        if inv is None:
            if info is not None or event.author != "user" or event.content is None or event.function_responses:
                return f"invocation {iid} does not begin with the user message that started it"
            return None
        if info is None:
            root = self.root(iid)
            if event.function_responses and root is not None and root.status is NodeStatus.RUNNING:
                return f"it answers while a turn of invocation {iid} runs (its root {root.path} has not ended)"
            return None
        if info.lifecycle == "start":
            if run is not None and run.starts == 0:
                return f"{info.path} starts after records of its run"
            if run is not None and (info.input is not None or info.after is not None):
                return f"{info.path} starts again with an input: only a run's first start record carries one"
            if run is None and info.after:
                return self._triggered(iid, info.path, info.after, info.input)
            return None
        if info.lifecycle != "end" or run is None:
            return None
        if run.auto_completed and run.status is NodeStatus.COMPLETED:
            if (iid, info.path) not in self._owed:
                return (
                    f"a completion record of {info.path} away from the answer that auto-completed it at event "
                    f"{run.completed_pos} (it is written with the answer)"
                )
            if not _same(event.output, run.output):
                return (
                    f"the completion record of {info.path} says output {_short(event.output)}, but an "
                    f"auto-completion's output is its answer ({_short(run.output)})"
                )
            return None
        return self._ends(iid, run, info.status, event.output)

    def _triggered(self, iid: str, path: str, after: list[str], node_input: Any) -> str | None:
        """A start dispatched by an edge: each sibling named in ``after`` completed,
        and the input is its output (a join's input: each one's by name)."""
        parent = parent_path(path)
        for name in after:
            want = node_input if len(after) == 1 else (node_input or {}).get(name, _MISSING) if isinstance(
                node_input, dict
            ) else _MISSING
            done = self._completed(iid, parent, name)
            if not done:
                return f"{path} starts after {name}, which has not completed at that point"
            if not any(_same(r.output, want) for r in done):
                return f"{path} starts with an input that is not the output of {name}, which triggered it"
        return None

    def _completed(self, iid: str, parent: str | None, name: str) -> list[NodeRun]:
        """The completed runs of ``name`` under ``parent``: the latest first, the
        others only when it is not (a loop's earlier runs)."""
        latest = self.latest_run(iid, parent, name)
        if latest is not None and latest.status is NodeStatus.COMPLETED:
            return [latest]
        if parent is None or self.get(iid, parent) is None:
            return []
        return [r for r in self.children(iid, parent) if r.name == name and r.status is NodeStatus.COMPLETED]

    def _ends(self, iid: str, run: NodeRun, status: NodeStatus | None, output: Any) -> str | None:
        """A run's end: after its children's, and COMPLETED only with nothing open below it."""
        names = self._names.get((iid, run.path))
        kids = [r for name in names if (r := self.latest_run(iid, run.path, name))] if names else []
        opened = self._open.get(iid, _NONE_OPEN)
        waiting: list[str] = []
        if kids:  # (most runs that end are leaves)
            if any(r.status in ACTIVE and r.starts for r in kids):
                busy = sorted(r.path for r in kids if r.status in ACTIVE and r.starts)
                return f"{run.path} ends while {', '.join(busy)} still runs"
            # (a leaf of an older writer has no start nor end record: it waits while its ids are open)
            waiting = sorted(
                r.path for r in kids
                if r.status is NodeStatus.WAITING or (not r.starts and any(i in opened for i in r.own_pending))
            )
        if status is NodeStatus.WAITING and not waiting and not any(i in opened for i in run.own_pending):
            return f"{run.path} ends WAITING with nothing open to wait on"
        if status is not NodeStatus.COMPLETED:
            return None
        if waiting:
            return f"{run.path} ends COMPLETED while {', '.join(waiting)} waits"
        own = [i for i in run.own_pending if i in opened]
        if run.parent is None:
            own = sorted(opened)
        if own:
            return f"{run.path} ends COMPLETED while interrupt {', '.join(own)} is still open"
        return _workflow_output(run, kids, output)

    # ------------------------------------------------------------ after
    def _track(self, event: Event, change: Any) -> None:
        iid = event.invocation_id
        info = event.node_info
        if info is not None:
            path = info.path
            if self._owed:
                self._owed.pop((iid, path), None)
            parent, name, _ = path_parts(path)
            if parent is not None:  # the run's name is its path's: no look-up
                names = self._names.get((iid, parent))
                if names is None:
                    names = self._names[(iid, parent)] = set()
                names.add(name)
        elif event.function_responses:
            for path in change.auto_completed:
                self._owed[(iid, path)] = change.pos
        if change.interrupts:
            opened = self._open.setdefault(iid, set())
            for interrupt_id in change.interrupts:
                itr = self.proj.interrupts.get((iid, interrupt_id))
                if itr is not None and itr.open:
                    opened.add(interrupt_id)
                else:
                    opened.discard(interrupt_id)

class _Dropped:
    """The runs the checkpoints' compaction dropped from an import's fold:
    completed runs off the latest tree (with their whole subtrees), frozen
    while no event names them again, indexed as the checks read them."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], NodeRun] = {}
        self.kids: dict[tuple[str, str | None], list[NodeRun]] = {}
        """(invocation, parent path) -> its dropped children."""
        self.latest: dict[tuple[str, str | None, str], tuple[int, NodeRun]] = {}
        """(invocation, parent path, name) -> the highest run number of a dropped run, and that run."""
        self.tied: set[tuple[str, str | None, str]] = set()
        """Keys with two dropped runs of the same number (which is latest: the order they were made)."""
        self.last_root: dict[str, tuple[str, int]] = {}
        """invocation -> (its last root made, dropped; how many roots the fold kept then)."""

    def drop(self, seen: Replay, before: Projection, after: Projection) -> None:
        """Keep what compacting ``before`` into ``after`` left out (``seen`` still reads ``before``)."""
        for iid in before.invocations:
            root = seen.root(iid)
            if root is None or (iid, root.path) in after.nodes:
                self.last_root.pop(iid, None)
            else:
                self.last_root[iid] = (root.path, len(after.invocations[iid].roots))
        kept = after.nodes
        numbers: dict[tuple[str, str | None, str], set[int]] = {}
        for (iid, _), run in kept.items():
            seen_nos = numbers.setdefault((iid, run.parent, run.name), set())
            n = _run_no(run.run_id)
            if n in seen_nos:
                self.tied.add((iid, run.parent, run.name))
            seen_nos.add(n)
        for key, run in before.nodes.items():
            if key in kept:
                continue
            iid = key[0]
            self.runs[key] = run
            self.kids.setdefault((iid, run.parent), []).append(run)
            lkey = (iid, run.parent, run.name)
            top = self.latest.get(lkey)
            n = _run_no(run.run_id)
            if top is None or n > top[0]:
                self.latest[lkey] = (n, run)
            elif n == top[0]:
                self.tied.add(lkey)


def _names_dropped(proj: Projection, gone: _Dropped, event: Event) -> bool:
    """Whether ``event`` (accepted) would change a dropped run in the whole fold:
    a record of it or of a run under it, an answer to its interrupt, a
    deadline's fail at its path."""
    iid = event.invocation_id
    info = event.node_info
    if info is not None:
        path: str | None = info.path
        nodes, runs = proj.nodes, gone.runs
        while path is not None:
            if (iid, path) in nodes:
                return False  # in the fold, and so is every run above it
            if (iid, path) in runs:
                return True
            path = parent_path(path)
        return False
    for fr in event.function_responses:
        itr = proj.interrupts.get((iid, fr.id))
        if itr is not None and (iid, itr.path) in gone.runs:
            return True
    if event.action == "fail":
        at = (event.custom_metadata or {}).get("path")
        return isinstance(at, str) and (iid, at) in gone.runs
    return False


_MISSING = object()


def _workflow_output(run: NodeRun, kids: list[NodeRun], output: Any) -> str | None:
    """A Workflow (its children dispatched by edges: ``after``) ends COMPLETED with
    the output of its terminal node (3.9): a child no sibling came after. Which
    children are terminal the log shows only in part (a successor not reached
    looks terminal), so: the output is a terminal-looking child's, and None only
    when the child that completed last is not a terminal-looking one with output."""
    graph = [r for r in kids if r.after is not None]
    if not graph:
        return None  # an orchestration node or a leaf: its output is its own
    named = {name for r in graph for name in r.after or ()}
    ends = [r for r in graph if r.status is NodeStatus.COMPLETED and r.name not in named]
    if output is None:
        last = max((r for r in graph if r.completed_pos is not None), key=lambda r: r.completed_pos or 0, default=None)
        if last is None or last.output is None or last.name in named:
            return None
    elif any(_same(output, r.output) for r in ends):
        return None
    return f"workflow {run.path} ends with output {_short(output)}, which is not its terminal node's"


def _same(a: Any, b: Any) -> bool:
    """The same JSON value (``1`` is not ``True`` at the top; deeper, Python's ``==``,
    which is cheap: an import compares every triggered input with its source)."""
    return a is b or (type(a) is type(b) and a == b)


def _impossible(seen: Replay, event: Event, inv: Invocation | None, run: NodeRun | None) -> str | None:
    """Why ``event`` cannot come next after the events folded into ``seen``
    (None when it can; ``inv``: its invocation in the fold, ``run``: the fold's
    run at a node record's path). Reads the fold, changes nothing in it."""
    proj = seen.proj
    iid = event.invocation_id
    cancel = inv.cancel if inv is not None else None
    info = event.node_info
    if info is None:
        if event.author != "user":
            return None
        frs = event.function_responses
        if cancel is not None and (frs or event.action in ("redrive", "cancel", "fail")):
            return f"invocation {iid} was cancelled at event {cancel['pos']} (a cancel is final)"
        if frs:
            return _bad_answer(proj, iid, event, seen._answers)
        return None
    if cancel is not None:
        return f"a record of {info.path} after invocation {iid} was cancelled at event {cancel['pos']}"
    if not info.path.strip() or not info.run_id.strip():
        return "a node record with an empty path or run id"
    running = run is not None and run.status is NodeStatus.RUNNING
    if info.lifecycle == "start":
        if running:
            return f"{info.path} starts again before its run ended"
        if not _parent_running(seen, iid, info.path):
            return f"{info.path} starts while its parent {parent_path(info.path)} is not running"
        return None
    if running:
        return None
    if run is None or run.starts == 0:
        if info.lifecycle is None and _parent_running(seen, iid, info.path):
            return None  # an event of a leaf whose start record is not kept (older writers)
        return f"a record of {info.path}, which never started"
    if info.lifecycle == "end" and run.auto_completed and run.status is NodeStatus.COMPLETED:
        return None  # the completion record of an auto-completion (DESIGN 3.2)
    return f"a record of {info.path}, whose run is not running ({run.status.value})"


_ANSWERS_KEPT = 4096
"""Verdicts on (schema, answer) pairs an import remembers (then it starts over)."""


def _verdict(
    schema: dict[str, Any] | None, value: Any, seen: dict[tuple[bytes, bytes], tuple[Any, list[str], bool]]
) -> tuple[Any, list[str], bool]:
    """(coerced, errors, whether the coerced value is the answer as sent) of
    ``value`` against ``schema``: :func:`coerce_response` once per distinct pair
    (a long session answers the same few schemas with the same few values).
    The key is both as JSON text, which tells apart every value JSON can hold
    (``1`` from ``1.0`` and ``true``, NaN and the infinities from ``null``)."""
    key = (to_json(schema, inf_nan_mode="constants"), to_json(value, inf_nan_mode="constants"))
    found = seen.get(key)
    if found is None:
        if key[0] in _PLAIN_SCHEMAS:
            plain = _PLAIN_SCHEMAS[key[0]]
        else:
            if len(_PLAIN_SCHEMAS) >= _ANSWERS_KEPT:
                _PLAIN_SCHEMAS.clear()
            plain = _PLAIN_SCHEMAS[key[0]] = plain_object(schema)
        if plain is not None and plainly_valid(plain, value, key[1]):
            return value, [], True  # what coerce_response gives it, and without a copy to remember
        coerced, errors = coerce_response(schema, value)
        found = (coerced, errors, not errors and (_surely_same(coerced, value) or same_json(coerced, value)))
        if len(seen) >= _ANSWERS_KEPT:
            seen.clear()
        seen[key] = found
    return found


_PLAIN_SCHEMAS: dict[bytes, PlainProps | None] = {}
"""Schema JSON -> :func:`plain_object` of it (once per distinct schema, for the process)."""


def _surely_same(a: Any, b: Any) -> bool:
    """True only when :func:`same_json` is: the same JSON types and values
    (without serialising both); False: not known here."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return a.keys() == b.keys() and all(_surely_same(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(map(_surely_same, a, b))
    if kind is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)  # 0.0 is not -0.0 in JSON
    return kind in _SCALARS and a == b


_SCALARS = (str, int, bool, type(None))


def _bad_answer(
    proj: Projection, iid: str, event: Event, seen: dict[tuple[bytes, bytes], tuple[Any, list[str], bool]]
) -> str | None:
    ids = [fr.id for fr in event.function_responses]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        return f"interrupt {', '.join(dupes)} is answered twice in one message"
    for fr in event.function_responses:
        if not fr.id.strip():
            return "an answer has an empty interrupt id"
        itr = proj.interrupts.get((iid, fr.id))
        if itr is None or not itr.open:
            return f"it answers interrupt {fr.id}, which is not open at that point in invocation {iid}"
        coerced, errors, same = _verdict(itr.response_schema, unwrap_response(fr.response), seen)
        if errors:
            return f"the answer to {fr.id} fails its interrupt's schema: {'; '.join(errors)[:200]}"
        if not same:
            # A live answer is persisted coerced; one stored as the raw text
            # (``"no"`` for a boolean) is not what the engine writes, and the
            # workflow would receive it as it is (a truthy string).
            return f"the answer to {fr.id} is not in its schema's form (a live answer would be stored as {_short(coerced)})"
    return None


def _parent_running(seen: Replay, invocation_id: str, path: str) -> bool:
    parent = parent_path(path)
    if parent is None:
        return True
    up = seen.get(invocation_id, parent)
    return up is not None and up.status is NodeStatus.RUNNING


def _short(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
