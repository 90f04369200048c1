"""Views over the projection: what every surface renders, computed once.

Pure functions of a :class:`~engine.projection.Projection` (no I/O, no widgets,
no status logic: every status, output and interrupt comes from the projection;
what it cannot see comes from :mod:`engine.liveness`, passed in). The console's
tree, ``hitl show``, ``hitl replay`` and the runner's checks call these, so they
show and allow the same things.

Tree
  :func:`visible_children`, :func:`tree_rows` -- an invocation's runs
  depth-first under **the folding rule** (below); :func:`run_order` -- every
  run depth-first, nothing folded; :func:`waiting_paths`, :func:`focus_path`
  (where a cursor starts); :func:`display_status` (a run's word with liveness:
  INTERRUPTED, IN DOUBT); :func:`change_paths` (the runs a
  :class:`~engine.projection.Change` touches, ancestors included: what a
  live tree relabels).

Actions
  :func:`allowed_actions` -- whether an invocation can be answered, re-driven
  or cancelled, and why not (the runner and :func:`engine.operator_actions.cancel_invocation`
  refuse with the same rule the console uses to offer a key).

Replay
  :func:`goto` moves a :class:`~engine.replay.Replay` and returns a
  :class:`Frame` (the event, its markers, the state just before and after it);
  :func:`frame_markers`, :func:`effects`, :func:`status_changes`,
  :func:`node_statuses`, :func:`frame_dict` (``hitl replay --json``).

The folding rule (loop re-runs)
  Under each parent, children are listed in the order they first ran. A loop
  edge re-runs a node with a new run id: of the runs of one ``(name,
  call_key)`` under one parent only the **latest** is a row; the earlier ones
  are *folded*. The row counts them (``earlier_runs``); when the projection
  does not hold them (a compact snapshot keeps only the latest run of a node)
  its run id does (``review@3`` had two before it). ``hitl show`` prints
  ``(+N earlier runs)`` on the row and lists them with ``--all-runs``; the
  console puts them under one ``⋯ N earlier runs`` node before the parent's
  rows, built when it is expanded. Roots (one per invocation turn) never fold.

What these views cannot see
  A RUNNING run in the projection may be running now or belong to a process
  that died: only the store's leases tell (:mod:`engine.liveness`). Pass its
  verdict (``interrupted``, ``in_doubt``) to :func:`display_status` and
  :func:`tree_rows`; without it a dead run reads RUNNING.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from .models import REDRIVABLE, Event, NodeStatus, parent_path
from .projection import Change, Interrupt, NodeRun, Projection
from .replay import DiffRow, Marker, Replay, Step, diff
from .status import DisplayStatus, status_word


@dataclass
class Frame:
    """The replay at one position: the event that led there and the state around it.

    ``projection`` is the replay's live projection: read it before moving the
    cursor again (the next forward step mutates it in place)."""

    position: int
    """Events applied (0: before the first event)."""
    total: int
    """Events in the history."""
    step: Step | None
    """The event at ``position`` and its markers; None at position 0."""
    before: Projection | None
    """The state after ``position - 1`` events (a cheap fork); None at position 0."""
    projection: Projection
    """The state after ``position`` events."""

    @property
    def event(self) -> Event | None:
        return self.step.event if self.step else None

    @property
    def invocation_id(self) -> str | None:
        return self.step.event.invocation_id if self.step else None

    @property
    def markers(self) -> list[Marker]:
        return frame_markers(self.step)

    @property
    def effects(self) -> list[DiffRow]:
        return effects(self)


def goto(replay: Replay, position: int) -> Frame:
    """Move ``replay`` to ``position`` (clamped) and describe it.

    The cursor goes to ``position - 1`` first and forks the projection there
    (copy-on-write, a few dict copies; the replay keeps the fork, so stepping
    back later starts from it), then applies the one event at ``position``: the
    cost is that of one seek."""
    position = max(0, min(position, len(replay)))
    if position == 0:
        replay.seek(0)
        return Frame(0, len(replay), None, None, replay.projection)
    if not replay.restore(position - 1):
        replay.seek(position - 1)
    before = replay.projection.fork()
    replay.keep(position - 1, before)  # a step back from here starts from it
    step = replay.seek(position)
    return Frame(position, len(replay), step, before, replay.projection)


def frame_markers(step: Step | None) -> list[Marker]:
    """The step's markers, led by ``invocation`` when the event starts one."""
    if step is None:
        return []
    event = step.event
    out = list(step.markers)
    if event.kind == "message":
        text = event.content.text if event.content else ""
        out.insert(0, Marker("invocation", None, f'new invocation {event.invocation_id}: "{text}"'))
    return out


@dataclass
class _Slice:
    """The part of a projection one event touched (what :func:`diff` reads)."""

    nodes: dict[tuple[str, str], Any] = field(default_factory=dict)
    interrupts: dict[tuple[str, str], Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def _slice(proj: Projection, nodes: list[tuple[str, str]], interrupts: list[tuple[str, str]], keys: set[str]) -> _Slice:
    return _Slice(
        {k: proj.nodes[k] for k in nodes if k in proj.nodes},
        {k: proj.interrupts[k] for k in interrupts if k in proj.interrupts},
        {k: proj.state[k] for k in keys if k in proj.state},
    )


def effects(frame: Frame) -> list[DiffRow]:
    """What the event at the frame's position changed: :func:`engine.replay.diff`
    of the state before and after it, over the runs, interrupts and state keys
    the event touched."""
    if frame.step is None or frame.before is None:
        return []
    change = frame.step.change
    inv = change.invocation_id
    nodes = [(inv, p) for p in change.paths]
    itrs = [(inv, i) for i in change.interrupts]
    keys = set(change.state_keys)
    return diff(_slice(frame.before, nodes, itrs, keys), _slice(frame.projection, nodes, itrs, keys))


def status_changes(rows: list[DiffRow]) -> dict[str, str]:
    """``{path: new status}`` for the runs whose status changed (or that started) in ``rows``."""
    out: dict[str, str] = {}
    for row in rows:
        if row.area != "node":
            continue
        if row.key.endswith(" status"):
            out[row.key[: -len(" status")]] = str(row.after)
        elif row.before is None and isinstance(row.after, str) and row.after.startswith("new run "):
            out[row.key] = row.after[len("new run ") :]
    return out


def node_statuses(proj: Projection, invocation_id: str) -> dict[str, str]:
    """``{path: status}`` of every run of one invocation, in tree order (nothing folded)."""
    return {p: proj.nodes[(invocation_id, p)].status.value for p in run_order(proj, invocation_id)}


def marker_dict(m: Marker) -> dict[str, Any]:
    return {"kind": m.kind, "path": m.path, "text": m.text}


def diff_dict(row: DiffRow) -> dict[str, Any]:
    return {"area": row.area, "key": row.key, "before": row.before, "after": row.after}


def frame_dict(frame: Frame, *, nodes: bool = True) -> dict[str, Any]:
    """The JSON of one position: the event, its markers, what it changed and
    (``nodes``) the status of every run of its invocation after it."""
    out: dict[str, Any] = {"position": frame.position, "of": frame.total}
    step = frame.step
    if step is None:
        return out
    event, inv = step.event, step.event.invocation_id
    rows = effects(frame)
    out.update(
        seq=step.seq,
        timestamp=event.timestamp,
        invocation_id=inv,
        kind=event.kind,
        author=event.author,
        path=event.path,
        markers=[marker_dict(m) for m in frame_markers(step)],
        statuses=status_changes(rows),
        changes=[diff_dict(r) for r in rows],
    )
    if nodes:
        out["nodes"] = node_statuses(frame.projection, inv)
        out["open"] = [i.id for i in frame.projection.open_interrupts(inv)]
    return out


# ------------------------------------------------------------------ tree
@dataclass(frozen=True)
class Children:
    """A run's children under the folding rule (module docstring)."""

    shown: tuple[tuple[NodeRun, int], ...]
    """The rows: each latest run with how many earlier runs of it are folded."""
    earlier: Sequence[str]
    """Paths of the folded runs the projection holds, in the order they ran
    (a tuple, or for a long list a lazy sequence: reading it costs the runs)."""

    @property
    def folded(self) -> int:
        """Earlier runs folded, counted by run id where the projection lacks them."""
        return sum(n for _, n in self.shown)


def visible_children(proj: Projection, run: NodeRun, all_runs: bool = False, *, index: bool = True) -> Children:
    """``run``'s children in the order they ran; unless ``all_runs``, only the
    latest run of each (name, call key), with the count of earlier ones.

    A loop's parent may hold tens of thousands of runs: past ``INDEX_FROM``
    children the rows come from a :class:`_KidIndex` (the work is the number of
    distinct nodes, not of runs) and ``earlier`` is a lazy sequence over it."""
    if all_runs:
        kids = [c for c in (proj.get(run.invocation_id, p) for p in run.children) if c is not None]
        return Children(tuple((k, 0) for k in kids), ())
    if index and len(run.children) >= INDEX_FROM:
        return _indexed_children(proj, run)
    kids = [c for c in (proj.get(run.invocation_id, p) for p in run.children) if c is not None]
    latest: dict[tuple[str, str | None], NodeRun] = {}
    seen: dict[tuple[str, str | None], int] = {}
    for k in kids:
        key = (k.name, k.call_key)
        latest[key] = k
        seen[key] = seen.get(key, 0) + 1
    shown_paths = {r.path for r in latest.values()}
    shown: list[tuple[NodeRun, int]] = []
    for k in kids:
        if k.path not in shown_paths:
            continue
        shown.append((k, _folded_count(k, seen[(k.name, k.call_key)] - 1)))
    return Children(tuple(shown), tuple(k.path for k in kids if k.path not in shown_paths))


def _folded_count(run: NodeRun, hidden: int) -> int:
    """Earlier runs folded into ``run``'s row: those the projection holds, or more."""
    if run.call_key is None and run.run_id.isdigit():
        # Run ids count the runs of a (parent, name): a projection loaded from a
        # snapshot keeps only the latest run, but its id still says how many came before.
        return max(hidden, int(run.run_id) - 1)
    return hidden


INDEX_FROM = 64
"""Children of one run from which :func:`visible_children` reads a :class:`_KidIndex`
(below it, folding the list directly costs less than checking an index)."""
INDEXES_KEPT = 32
"""Indexes kept (least recently used dropped): a few large loops per process."""
_indexes: OrderedDict[tuple[str, str], _KidIndex] = OrderedDict()
_indexes_lock = threading.Lock()
_Key = tuple[str, str | None]


class _KidIndex:
    """One run's children grouped by (name, call key): where each group's runs
    are in the children list. Built once per run, extended by the runs appended
    since, and it answers for any prefix of what it indexed: the same run in an
    earlier replay frame, a fork, or the session screen's projection of the same
    history. A run's group is fixed by its first record (its start), so an entry
    never changes once indexed."""

    __slots__ = ("at", "missing", "paths", "seen_list", "seen_len")

    def __init__(self) -> None:
        self.paths: list[str] = []
        """Copy of the children list indexed (what a later list is checked against)."""
        self.at: dict[_Key, list[int]] = {}
        """group -> positions of its runs in ``paths``, ascending."""
        self.missing: list[int] = []
        """Positions of paths the projection held no run for (none, but for a hand-made projection)."""
        self.seen_list: list[str] | None = None
        """The list object last indexed: appended to in place, it needs no check."""
        self.seen_len = 0

    def covers(self, children: list[str]) -> bool:
        """``children`` is a prefix or an extension of what this indexed."""
        n, m = len(self.paths), len(children)
        if children is self.seen_list and m >= self.seen_len:
            return True  # a projection only appends to a run's list of children
        if m >= n:
            return children[:n] == self.paths if m > n else children == self.paths
        return children == self.paths[:m]

    def extend(self, proj: Projection, invocation_id: str, children: list[str]) -> None:
        for i in range(len(self.paths), len(children)):
            path = children[i]
            self.paths.append(path)
            run = proj.get(invocation_id, path)
            if run is None:
                self.missing.append(i)
            else:
                self.at.setdefault((run.name, run.call_key), []).append(i)
        self.seen_list, self.seen_len = children, len(children)

    def rows(self, upto: int) -> tuple[list[int], dict[int, int]]:
        """For the first ``upto`` children: the positions of the latest run of each
        group in list order, and how many runs of its group each of them ends."""
        latest: dict[int, int] = {}
        for positions in self.at.values():
            count = bisect.bisect_left(positions, upto)
            if count:
                latest[positions[count - 1]] = count
        return sorted(latest), latest


class _Earlier(Sequence[str]):
    """The folded runs of a long list of children, computed when read: a fold
    shut in a tree never lists them."""

    def __init__(self, paths: list[str], upto: int, shown: list[int], count: int) -> None:
        self._paths, self._upto, self._shown, self._count = paths, upto, shown, count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        for p in self._shown:  # skip the rows before it (a few: one per node)
            if p <= i:
                i += 1
        return self._paths[i]

    def __iter__(self) -> Iterator[str]:
        shown = set(self._shown)
        return (self._paths[i] for i in range(self._upto) if i not in shown)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


def _kid_index(proj: Projection, run: NodeRun) -> _KidIndex:
    key = (run.invocation_id, run.path)
    children = run.children
    with _indexes_lock:
        index = _indexes.get(key)
        if index is None or not index.covers(children):
            index = _KidIndex()
        if len(children) > len(index.paths) or index.seen_list is None:
            index.extend(proj, run.invocation_id, children)
        _indexes[key] = index
        _indexes.move_to_end(key)
        while len(_indexes) > INDEXES_KEPT:
            _indexes.popitem(last=False)
        return index


def _indexed_children(proj: Projection, run: NodeRun) -> Children:
    index = _kid_index(proj, run)
    upto = len(run.children)
    if index.missing and index.missing[0] < upto:
        return visible_children(proj, run, all_runs=False, index=False)
    order, ends = index.rows(upto)
    shown: list[tuple[NodeRun, int]] = []
    for pos in order:
        kid = proj.get(run.invocation_id, index.paths[pos])
        if kid is not None:
            shown.append((kid, _folded_count(kid, ends[pos] - 1)))
    return Children(tuple(shown), _Earlier(index.paths, upto, order, upto - len(order)))


def _walk(proj: Projection, invocation_id: str, all_runs: bool) -> Iterator[tuple[NodeRun, int, int]]:
    """(run, depth, earlier runs folded into it) depth-first: the one tree walk."""
    inv = proj.invocations.get(invocation_id)
    if inv is None:
        return
    stack: list[tuple[NodeRun, int, int]] = [
        (r, 0, 0) for r in reversed([proj.get(invocation_id, p) for p in inv.roots]) if r is not None
    ]
    while stack:
        run, depth, hidden = stack.pop()
        yield run, depth, hidden
        if run.children:  # (most runs of a long session are leaves)
            kids = visible_children(proj, run, all_runs).shown
            stack.extend((k, depth + 1, h) for k, h in reversed(kids))


def run_order(proj: Projection, invocation_id: str) -> list[str]:
    """Every run path of the invocation depth-first, children in the order they ran."""
    return [r.path for r, _, _ in _walk(proj, invocation_id, all_runs=True)]


def display_status(run: NodeRun, interrupted: bool = False, in_doubt: Iterable[str] = ()) -> DisplayStatus:
    """The word shown for a run. In an invocation ``engine.liveness`` reports
    interrupted, a run it names in doubt is IN DOUBT and any other RUNNING or
    PENDING run is INTERRUPTED (nothing runs it any more); otherwise the
    projected status."""
    if interrupted:
        if run.path in in_doubt:
            return DisplayStatus.IN_DOUBT
        if run.status in (NodeStatus.RUNNING, NodeStatus.PENDING):
            return DisplayStatus.INTERRUPTED
    return _DISPLAY[run.status]


_DISPLAY = {s: DisplayStatus.of(s) for s in NodeStatus}
"""A run status's word, looked up (once per row of a long tree)."""


def invocation_display(
    proj: Projection, invocation_id: str, interrupted: bool = False, queued: bool = False
) -> DisplayStatus | None:
    """The word shown for an invocation (its root's), INTERRUPTED or QUEUED (a turn
    request waits for a worker) when liveness says so."""
    if interrupted:
        return DisplayStatus.INTERRUPTED
    if queued:
        return DisplayStatus.QUEUED
    status = proj.invocation_status(invocation_id)
    return DisplayStatus.of(status) if status is not None else None


@dataclass(frozen=True)
class TreeRow:
    """One row of an invocation's node tree (what ``hitl show`` prints and the console draws)."""

    invocation_id: str
    path: str
    name: str
    run_id: str
    depth: int
    """0 for a root run."""
    status: NodeStatus
    """The projected status."""
    display: DisplayStatus
    """What to show: ``status``, or INTERRUPTED / IN DOUBT from liveness."""
    earlier_runs: int
    """Earlier runs of the same (name, call key) folded into this row."""
    in_doubt: bool

    @property
    def node(self) -> str:
        return f"{self.name}@{self.run_id}"


def approval_progress(app_name: str, itr: Any, policy: Any = None) -> str | None:
    """``1 of 2 approvals`` for an open interrupt under a multi-approver rule of
    ``hitl.toml`` (None: no rule applies, or it is no longer open): the approvers so
    far (``itr.approvals``, folded by the projection) against the rule. Every surface
    shows this one string, before an approval as after it. ``policy``: the process's
    (:func:`engine.permissions.current_policy`) unless given."""
    if not getattr(itr, "open", True):
        return None
    from .permissions import current_policy

    pol = policy if policy is not None else current_policy()
    rule = pol.approval(app_name, itr.path, itr.args)
    if rule is None:
        return None
    return rule.progress([a.get("operator") for a in itr.approvals if a.get("operator")], pol)


async def approvals_of_rows(store: Any, rows: Iterable[Any], policy: Any = None) -> dict[tuple[str, str], str]:
    """:func:`approval_progress` of index rows (the inbox), by (session id, interrupt id):
    only the rows a multi-approver rule covers load their invocation (once each)."""
    from .loading import load_invocation
    from .permissions import current_policy

    pol = policy if policy is not None else current_policy()
    covered = [r for r in rows if pol.approval(r.app_name, r.path, r.args) is not None]
    out: dict[tuple[str, str], str] = {}
    loaded: dict[tuple[str, str], Projection] = {}
    for r in covered:
        key = (r.session_id, r.invocation_id)
        if key not in loaded:
            loaded[key] = await load_invocation(store, r.session_id, r.invocation_id)
        itr = loaded[key].interrupts.get((r.invocation_id, r.interrupt_id))
        if itr is not None and (label := approval_progress(r.app_name, itr, pol)):
            out[(r.session_id, r.interrupt_id)] = label
    return out


def _pending(itr: Any) -> dict[str, Any]:
    """An open interrupt of a row: id, message and, when it has a deadline, when it is due."""
    from .deadlines import due_at

    out: dict[str, Any] = {"id": itr.id, "message": itr.message}
    due = due_at(itr.args, itr.timestamp)
    if due is not None:
        out["due_at"] = due
    return out


def row_json(proj: Projection, row: TreeRow) -> dict[str, Any]:
    """A row with its run's output, error and interrupts, JSON-ready (``hitl show --json``)."""
    run = proj.nodes[(row.invocation_id, row.path)]
    status = run.status
    open_ = [proj.interrupts.get((run.invocation_id, i)) for i in run.own_pending] if run.interrupt_ids else ()
    return {
        "path": run.path,
        "node": row.node,
        "depth": row.depth,
        "status": status_word(status),
        "display": status_word(row.display),
        "output": run.output,
        "error": f"{run.error_code}: {run.error_message}" if status is NodeStatus.FAILED else None,
        "failed_attempts": run.errors,
        "pending": [_pending(i) for i in open_ if i is not None and i.open],
        "answered": sorted(run.resolved) if status is not NodeStatus.COMPLETED and run.resolved else [],
        "earlier_runs": row.earlier_runs,
        "resumed": run.resumed,
        "in_doubt": row.in_doubt,
    }


def tree_rows(
    proj: Projection,
    invocation_id: str,
    all_runs: bool = False,
    in_doubt: Iterable[str] = (),
    interrupted: bool | None = None,
) -> list[TreeRow]:
    """The invocation's rows depth-first under the folding rule (every run with
    ``all_runs``). ``in_doubt``/``interrupted``: the liveness verdict (by default
    an invocation with paths in doubt is interrupted)."""
    doubt = frozenset(in_doubt)
    stopped = bool(doubt) if interrupted is None else interrupted
    return [
        TreeRow(
            invocation_id, run.path, run.name, run.run_id, depth, run.status,
            display_status(run, stopped, doubt), hidden, run.path in doubt,
        )
        for run, depth, hidden in _walk(proj, invocation_id, all_runs)
    ]


def waiting_paths(proj: Projection, invocation_id: str) -> list[str]:
    """WAITING runs that raised open interrupts themselves, in tree order (folded runs included)."""
    out = []
    for run, _, _ in _walk(proj, invocation_id, all_runs=True):
        if run.status is NodeStatus.WAITING and run.own_pending:
            out.append(run.path)
    return out


def focus_path(proj: Projection, invocation_id: str) -> str | None:
    """Where a cursor starts: the first run waiting on its own open interrupts
    (tree order), else the deepest failed leaf, else the deepest leaf started
    without an end record (in doubt if nothing runs it), else None (the invocation)."""
    order: list[NodeRun] = []
    for run, _, _ in _walk(proj, invocation_id, all_runs=True):
        if run.status is NodeStatus.WAITING and run.own_pending:
            return run.path
        order.append(run)
    for status in (NodeStatus.FAILED, NodeStatus.RUNNING):
        hits = [r.path for r in order if r.status is status and not r.is_container]
        if hits:
            return max(hits, key=lambda p: p.count("/"))
    return None


def change_paths(proj: Projection, change: Change) -> set[str]:
    """The runs ``change`` touched, the owners of the interrupts it touched, and
    all their ancestors (a parent's label shows its descendants' pending ids)."""
    inv = change.invocation_id
    touched = set(change.paths)
    for iid in change.interrupts:
        itr = proj.interrupts.get((inv, iid))
        if itr is not None:
            touched.add(itr.path)
    return with_ancestors(touched)


def with_ancestors(paths: Iterable[str]) -> set[str]:
    """``paths`` and every ancestor path of them."""
    out = set(paths)
    for path in list(out):
        p = parent_path(path)
        while p is not None and p not in out:
            out.add(p)
            p = parent_path(p)
    return out


# --------------------------------------------------------------- actions
@dataclass(frozen=True)
class Allowed:
    """What an invocation allows now, by the projection (liveness refines it:
    a RUNNING invocation can be re-driven only once no live process holds it)."""

    answer: bool
    """It has open interrupts and is not cancelled."""
    redrive: bool
    """FAILED, or mid-run (RUNNING, PENDING, or a message and no root run yet), and not cancelled."""
    cancel: bool
    """Not COMPLETED and not cancelled already (a FAILED one can be cancelled)."""
    status: NodeStatus | None
    """The root run's status (None: no run yet)."""
    cancelled: dict[str, Any] | None
    """The cancel record, when the invocation was cancelled (final)."""


def allowed_actions(proj: Projection, invocation_id: str) -> Allowed:
    """The one rule for answer / re-drive / cancel (DESIGN 3.5, 3.11)."""
    inv = proj.invocations.get(invocation_id)
    status = proj.invocation_status(invocation_id)
    if inv is None:
        return Allowed(False, False, False, status, None)
    cancelled = inv.cancel
    live = cancelled is None
    return Allowed(
        answer=live and bool(proj.open_interrupts(invocation_id)),
        redrive=live and status in REDRIVABLE,
        cancel=live and (status is None or not status.is_final or status is NodeStatus.FAILED),
        status=status,
        cancelled=cancelled,
    )


def distinguishing_fields(payloads: list[Any], limit: int = 3) -> list[str]:
    """The top-level payload fields whose values differ between items (a bulk
    answer's rows: ``amount`` and ``customer``, not the ``currency`` they share),
    in the order the first payload has them; at most ``limit``. Only scalar
    values are compared: a nested value is not a row's one-word label."""
    dicts = [p for p in payloads if isinstance(p, dict)]
    if len(dicts) < 2:
        return []
    keys = [k for k in dicts[0] if all(k in d for d in dicts)]
    out: list[str] = []
    for k in keys:
        values = [d[k] for d in dicts]
        if any(isinstance(v, (dict, list)) for v in values):
            continue
        if len({repr(v) for v in values}) > 1:
            out.append(k)
            if len(out) == limit:
                break
    return out


def latest_run(proj: Projection, invocation_id: str, paths: Iterable[str]) -> str | None:
    """The run that changed last, preferring leaves (where the work happens) to
    the containers whose end records close a turn."""
    runs = [r for p in paths if (r := proj.get(invocation_id, p)) is not None]
    leaves = [r for r in runs if not r.is_container] or runs
    if not leaves:
        return None
    return max(leaves, key=lambda r: (r.updated_pos, r.path.count("/"))).path


def waits_below(proj: Projection, invocation_id: str, path: str) -> list[str]:
    """The open interrupt ids raised by the runs below ``path``, in the tree's order
    (``proj.pending_ids`` less the run's own), found from the invocation's open
    interrupts: a loop's node has tens of thousands of runs below it and a few open
    ids (walking them all cost the console's details pane ~40 ms per key landing on it)."""
    prefix = path + "/"

    def order(i: Interrupt) -> list[int]:
        run = proj.get(invocation_id, i.path)
        key = [-1, run.interrupt_ids.index(i.id) if run is not None and i.id in run.interrupt_ids else 0]
        while run is not None and run.path != path:
            parent = proj.get(invocation_id, run.parent) if run.parent else None
            if parent is None:
                break
            key[:0] = [parent.children.index(run.path) if run.path in parent.children else 0]
            run = parent
        return key

    return [i.id for i in sorted((i for i in proj.open_interrupts(invocation_id) if i.path.startswith(prefix)), key=order)]
