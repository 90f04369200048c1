"""The one projection: fold events into node runs, statuses and interrupts.

This module is pure (no I/O, no workflow code) and incremental: ``apply`` takes
one event at a time. The runner reconstructs node state for a resume with it,
the console renders its tree from it, replay steps it, and the CLI prints it.
Nothing else computes a node's status.

Rules, in DESIGN.md terms:

* a start record makes a run RUNNING (a second start with the same run id is a
  re-execution of a resumed run: ``resumed`` becomes True);
* an end record sets the final status (COMPLETED / WAITING / FAILED /
  CANCELLED) and the run's output;
* an event with ``long_running_tool_ids`` raises interrupts owned by that run;
* a FunctionResponse message resolves interrupts. The owning run then becomes
  PENDING when it is ``rerun_on_resume=True``; otherwise COMPLETED once every id
  it raised is answered (output: the single value, or ``{id: value}`` when it
  raised several) -- an *auto-completion*, which has no event of its own -- or
  stays WAITING. Ancestors of a run that became PENDING or auto-completed become
  PENDING (they are Workflows/orchestration nodes and will re-execute);
* a re-drive makes FAILED, CANCELLED and stranded RUNNING/PENDING runs PENDING;
  a cancel makes every unfinished run CANCELLED and closes its interrupts.

What the projection cannot see:

* whether a RUNNING (or PENDING) run is running *now*: a process that died
  mid-turn writes nothing, so its runs stay RUNNING here forever. The store's
  leases tell a live turn from a dead one (:mod:`engine.liveness`: INTERRUPTED,
  and IN DOUBT for a leaf that started and recorded no end);
* the workflow's graph: a node that has not run yet has no record (PENDING is
  "scheduled", not "every node to come");
* earlier loop iterations left out of a compact snapshot (:meth:`Projection.compact`):
  a run id still says how many there were (:mod:`engine.views` counts them);
* store rows (leases, the audit log, the sessions summary): they are the
  store's, derived in the same transaction as the event.

Views of the projection (tree rows, allowed actions, diffs) live in
:mod:`engine.views`; the records it folds into (``NodeRun``, ``Interrupt``,
``Invocation``, ``Change``, re-exported here) are in
:mod:`engine.projection_records`: mutable, and owned by the projection that
holds them -- renderers read them, never change them.

Copies are cheap: run, interrupt and invocation records are copy-on-write
(each carries the generation of the projection that may mutate it in place), so
``fork()`` costs a few dict copies, not a deep copy. Replay keeps forks as
checkpoints and steps or jumps from the nearest one.
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol, Self, TypeVar

from .models import Event, NodeInfo, NodeStatus, leaf_name, leaf_run_id, parent_path, path_parts
from .projection_records import Change, Interrupt, Invocation, NodeRun, _record, _revive, _run_no
from .responses import unwrap_response
from .store.owner_index import OWNER_ACTIONS, owner_change

__all__ = ["Change", "Interrupt", "Invocation", "NodeRun", "Projection", "project"]

_GEN = itertools.count(1)


class _Record(Protocol):
    """A copy-on-write record (engine/projection_records.py)."""

    _gen: int

    def clone(self, gen: int) -> Self: ...


K = TypeVar("K")
R = TypeVar("R", bound=_Record)


def _node_record(run: NodeRun) -> dict[str, Any]:
    """A node run as a snapshot holds it: its fields, the status as its value."""
    record = _record(run)
    record["status"] = run.status.value
    return record


def _layout(
    position: int, nodes: list[dict[str, Any]], interrupts: list[dict[str, Any]],
    invocations: list[dict[str, Any]], state: dict[str, Any],
) -> dict[str, Any]:
    """A snapshot's layout, as :meth:`Projection.from_dict` reads it back."""
    return {"position": position, "nodes": nodes, "interrupts": interrupts, "invocations": invocations, "state": state}


class Projection:
    """Incremental fold of a session's (or one invocation's) events."""

    def __init__(self) -> None:
        self.position = 0
        """Position of the last event applied (the store's seq; 0: none)."""
        self.nodes: dict[tuple[str, str], NodeRun] = {}
        """(invocation_id, path) -> run."""
        self.interrupts: dict[tuple[str, str], Interrupt] = {}
        """(invocation_id, interrupt_id) -> interrupt (the latest with that id)."""
        self.invocations: dict[str, Invocation] = {}
        """invocation_id -> invocation, in the order they started."""
        self.state: dict[str, Any] = {}
        """Session state as the folded ``state_delta``s leave it (``temp:`` keys never)."""
        self._latest: dict[tuple[str, str | None, str], str] = {}
        """(invocation, parent path, name) -> path of the latest run."""
        self._max_run: dict[tuple[str, str | None, str], int] = {}
        self._counts: dict[str, dict[NodeStatus, int]] = {}
        """invocation_id -> runs per status, kept as events are applied (a long loop is
        never recounted): from its first event for an invocation that started here;
        an invocation put in otherwise (a snapshot, a compaction) is counted when asked."""
        self._gen = next(_GEN)
        """Records whose ``_gen`` equals this may be mutated in place; others are
        shared with a fork and are cloned before their first change here."""

    # ------------------------------------------------------- copy-on-write
    def _own(self, table: dict[K, R], key: K) -> R:
        obj = table[key]
        if obj._gen == self._gen:
            return obj
        clone = obj.clone(self._gen)
        table[key] = clone
        return clone

    def fork(self) -> Projection:
        """An independent copy that shares unchanged records (cheap)."""
        other = Projection.__new__(Projection)
        other.position = self.position
        other.nodes = dict(self.nodes)
        other.interrupts = dict(self.interrupts)
        other.invocations = dict(self.invocations)
        other.state = dict(self.state)
        other._latest = dict(self._latest)
        other._max_run = dict(self._max_run)
        other._counts = {inv: dict(c) for inv, c in self._counts.items()}
        other._gen = next(_GEN)
        self._gen = next(_GEN)  # shared records are now read-only for both
        return other

    # ------------------------------------------------------------------ apply
    def apply(self, event: Event, pos: int | None = None) -> Change:
        """Fold one event. ``pos`` is its position (the store's seq); default: next."""
        # Once per event of every fold (a long session's show, replay, import):
        # each record looked up once, and nothing built for what an event lacks.
        self.position = pos = pos if pos is not None else self.position + 1
        iid = event.invocation_id
        info = event.node_info
        inv = self.invocations.get(iid)
        if inv is None:
            inv = Invocation(id=iid, started_pos=pos, timestamp=event.timestamp, _gen=self._gen)
            if event.content and info is None:
                inv.message = event.content.text
            self.invocations[iid] = inv
            self._counts[iid] = {}  # its runs are all created here: counted as they are
        elif inv._gen != self._gen:
            inv = self.invocations[iid] = inv.clone(self._gen)
        inv.last_pos = pos
        inv.last_timestamp = event.timestamp
        change = Change(pos, iid)
        if event.state_delta:
            for k, v in event.state_delta.items():
                if not k.startswith("temp:"):
                    self.state[k] = v
                    change.state_keys.add(k)
        if info is None:
            if event.author == "user":
                self._apply_user(event, inv, pos, change)
            return change
        self._apply_node_event(event, iid, info, pos, change)
        return change

    def _apply_user(self, event: Event, inv: Invocation, pos: int, change: Change) -> None:
        frs = event.function_responses
        action = event.action
        iid = event.invocation_id
        if frs and inv.cancel is None:
            inv.actions.append(pos)
            operator = (event.custom_metadata or {}).get("operator")
            owners: dict[str, None] = {}
            for fr in frs:
                itr = self.interrupts.get((iid, fr.id))
                if itr is None or not itr.open:
                    continue  # the runner rejects these before persisting
                itr = self._own(self.interrupts, (iid, fr.id))
                itr.resolved = True
                itr.response = unwrap_response(fr.response)
                itr.resolved_pos = pos
                itr.resolved_by = event.id
                itr.operator = operator
                change.interrupts.add(fr.id)
                if (iid, itr.path) in self.nodes:
                    run = self._own(self.nodes, (iid, itr.path))
                    run.resolved[fr.id] = itr.response
                    owners[run.path] = None
                    change.paths.add(run.path)  # also when a partial answer leaves it WAITING
            for path in owners:
                self._on_answered(iid, path, pos, change)
        elif inv.cancel is not None:
            return  # a cancel is final: the runner refuses whatever follows it
        elif action in OWNER_ACTIONS or action == "approve":
            self._apply_owners(event, iid, action, pos, change)
        elif action == "redrive":
            inv.actions.append(pos)
            # A failure stops its workflow, so failed, cancelled and stranded runs
            # are always the latest run of their node: re-drive them all.
            for run in self.runs(iid):
                if run.status in (NodeStatus.FAILED, NodeStatus.CANCELLED, NodeStatus.RUNNING, NodeStatus.PENDING):
                    self._set(iid, run.path, NodeStatus.PENDING, pos, change)
                    self._mark_ancestors_pending(iid, run.parent, pos, change)
        elif action == "fail":
            self._apply_fail(event, inv, pos, change)
        elif action == "cancel":
            inv.actions.append(pos)
            meta = event.custom_metadata or {}
            inv.cancel = {
                "pos": pos,
                "timestamp": event.timestamp,
                "operator": meta.get("operator"),
                "reason": meta.get("reason"),
            }
            # Final (DESIGN 3.11): a failed run is unfinished business too, so it
            # and its failed ancestors become CANCELLED; only completions stand.
            for run in self.runs(iid):
                if run.status is not NodeStatus.COMPLETED:
                    self._set(iid, run.path, NodeStatus.CANCELLED, pos, change)
            self._close_open(iid, pos, change)

    def _apply_fail(self, event: Event, inv: Invocation, pos: int, change: Change) -> None:
        """A deadline's ``fail`` (engine.deadlines): the waiting run at ``path``
        fails with the named error, as if its body had raised it; its ancestors
        fail with it and the invocation's other unfinished runs are CANCELLED (a
        failed child cancels its siblings); every open interrupt closes. Not
        final: a re-drive runs the failed node again, which asks again."""
        iid = event.invocation_id
        meta = event.custom_metadata or {}
        path = meta.get("path")
        inv.actions.append(pos)
        failed: set[str] = set()
        at = path if isinstance(path, str) else None
        while at is not None and (iid, at) in self.nodes:
            failed.add(at)
            at = self.nodes[(iid, at)].parent
        for run in self.runs(iid):
            if run.status.is_final and run.status is not NodeStatus.FAILED:
                continue
            if run.path in failed:
                self._set(iid, run.path, NodeStatus.FAILED, pos, change)
                own = self._own(self.nodes, (iid, run.path))  # ancestors carry the error up, as a raise does
                own.error_code = str(meta.get("error_code") or "DeadlinePassed")
                own.error_message = str(meta.get("error_message") or meta.get("reason") or "")
            elif not run.status.is_final:
                self._set(iid, run.path, NodeStatus.CANCELLED, pos, change)
        self._close_open(iid, pos, change)

    def _close_open(self, iid: str, pos: int, change: Change) -> None:
        """Close the invocation's open interrupts unanswered (a cancel, a deadline's fail)."""
        for key, itr in list(self.interrupts.items()):
            if itr.invocation_id == iid and itr.open:
                itr = self._own(self.interrupts, key)
                itr.cancelled = True
                itr.resolved_pos = pos
                change.interrupts.add(itr.id)

    def _apply_owners(self, event: Event, iid: str, action: str, pos: int, change: Change) -> None:
        """A claim, assignment or release sets the owner of the open ids it names; an
        approval (multi-approver rules) adds to their approvals. Node state is untouched."""
        meta = event.custom_metadata or {}
        if action == "approve":
            values = meta.get("interrupts")
            for itr_id, value in (values.items() if isinstance(values, dict) else ()):
                itr = self.interrupts.get((iid, itr_id))
                if itr is not None and itr.open:
                    itr = self._own(self.interrupts, (iid, itr_id))
                    itr.approvals.append(
                        {"operator": meta.get("operator"), "value": value, "pos": pos, "at": event.timestamp}
                    )
                    change.interrupts.add(itr_id)
            return
        ch = owner_change(meta)
        for itr_id in ch.ids:
            itr = self.interrupts.get((iid, itr_id))
            if itr is not None and itr.open:
                itr = self._own(self.interrupts, (iid, itr_id))
                itr.owner, itr.owned_at = ch.owner, event.timestamp if ch.owner else None
                change.interrupts.add(itr_id)

    def _on_answered(self, iid: str, path: str, pos: int, change: Change) -> None:
        run = self._own(self.nodes, (iid, path))
        if run.rerun_on_resume:
            self._set(iid, path, NodeStatus.PENDING, pos, change)
        elif not run.own_pending:
            values = [run.resolved[i] for i in run.interrupt_ids]
            run.output = values[0] if len(values) == 1 else {i: run.resolved[i] for i in run.interrupt_ids}
            run.auto_completed = True
            run.completed_pos = pos
            self._set(iid, path, NodeStatus.COMPLETED, pos, change)
            change.auto_completed.append(path)
        else:
            return  # partial answer to a leaf: it keeps waiting, nothing runs
        self._mark_ancestors_pending(iid, run.parent, pos, change)

    def _mark_ancestors_pending(self, iid: str, parent: str | None, pos: int, change: Change) -> None:
        while parent is not None and (iid, parent) in self.nodes:
            anc = self.nodes[(iid, parent)]
            if anc.status is not NodeStatus.COMPLETED:
                self._set(iid, parent, NodeStatus.PENDING, pos, change)
            parent = anc.parent

    def _set(self, iid: str, path: str, status: NodeStatus, pos: int, change: Change) -> None:
        run = self._own(self.nodes, (iid, path))
        if run.status is not status:
            self._count(iid, run.status, status)
            run.status = status
        run.updated_pos = pos
        change.paths.add(path)

    def _new_run(self, iid: str, path: str) -> NodeRun:
        """The run at ``path``, first seen now (its missing ancestors too), PENDING."""
        parent, name, run_id = path_parts(path)
        run = self.nodes[(iid, path)] = NodeRun(
            invocation_id=iid, path=path, name=name, run_id=run_id, parent=parent, _gen=self._gen
        )
        self._count(iid, None, NodeStatus.PENDING)
        if parent is None:
            self._own(self.invocations, iid).roots.append(path)
        else:
            up = self.nodes.get((iid, parent))
            if up is None:
                up = self._new_run(iid, parent)
            elif up._gen != self._gen:
                up = self.nodes[(iid, parent)] = up.clone(self._gen)
            up.children.append(path)
        lkey = (iid, parent, name)
        n = _run_no(run_id)
        if n >= self._max_run.get(lkey, 0):
            self._max_run[lkey] = n
            self._latest[lkey] = path
        return run

    def _apply_node_event(self, event: Event, iid: str, info: NodeInfo, pos: int, change: Change) -> None:
        # The hot path of every long fold: attributes read once, no call for what an event lacks.
        path = info.path
        run = self.nodes.get((iid, path))
        if run is None:
            run = self._new_run(iid, path)
        elif run._gen != self._gen:
            run = self.nodes[(iid, path)] = run.clone(self._gen)
        run.updated_pos = pos
        change.paths.add(path)
        lifecycle = info.lifecycle
        if lifecycle == "start":
            run.starts += 1
            run.last_start_pos = pos
            run.has_end = False
            if run.starts == 1:
                run.started_pos = pos
                run.input = info.input
                if info.after is not None:
                    run.after = list(info.after)
            if info.rerun_on_resume is not None:
                run.rerun_on_resume = info.rerun_on_resume
            if info.is_container is not None:
                run.is_container = info.is_container
            if info.call_key is not None:
                run.call_key = info.call_key
            if run.status is not NodeStatus.RUNNING:
                self._count(iid, run.status, NodeStatus.RUNNING)
                run.status = NodeStatus.RUNNING
        if event.long_running_tool_ids:
            for call in event.interrupt_calls:
                self.interrupts[(iid, call.id)] = Interrupt(
                    id=call.id,
                    invocation_id=iid,
                    path=path,
                    name=call.name,
                    args=call.args,
                    event_id=event.id,
                    raised_pos=pos,
                    timestamp=event.timestamp,
                    _gen=self._gen,
                )
                run.resolved.pop(call.id, None)  # an id reused by a re-execution
                if call.id not in run.interrupt_ids:
                    run.interrupt_ids.append(call.id)
                change.interrupts.add(call.id)
        if event.error_code:
            run.error_code = event.error_code
            run.error_message = event.error_message
            if lifecycle is None:
                run.errors += 1
        if event.route is not None:
            run.route = event.route
        if lifecycle == "end":
            run.has_end = True
            run.output = event.output
            status = info.status
            if status is not None and status is not run.status:
                self._count(iid, run.status, status)
                run.status = status
            if run.status is NodeStatus.COMPLETED:
                run.completed_pos = pos
        elif event.output is not None:
            run.output = event.output

    # ---------------------------------------------------------------- queries
    def runs(self, invocation_id: str) -> list[NodeRun]:
        return [r for (inv, _), r in self.nodes.items() if inv == invocation_id]

    def _count(self, invocation_id: str, old: NodeStatus | None, new: NodeStatus) -> None:
        if old is new:
            return
        counts = self._counts.get(invocation_id)
        if counts is None:
            return
        if old is not None:
            counts[old] -= 1
        counts[new] = counts.get(new, 0) + 1

    def status_counts(self, invocation_id: str) -> dict[NodeStatus, int]:
        """How many runs of the invocation are in each status (none: left out).
        Counted once, then kept as events are applied."""
        counts = self._counts.get(invocation_id)
        if counts is None:
            counts = {}
            for r in self.runs(invocation_id):
                counts[r.status] = counts.get(r.status, 0) + 1
            self._counts[invocation_id] = counts
        return {s: n for s, n in counts.items() if n}

    def get(self, invocation_id: str, path: str) -> NodeRun | None:
        return self.nodes.get((invocation_id, path))

    def root(self, invocation_id: str) -> NodeRun | None:
        inv = self.invocations.get(invocation_id)
        if inv is None or not inv.roots:
            return None
        return self.nodes.get((invocation_id, inv.roots[-1]))

    def latest_run(self, invocation_id: str, parent: str | None, name: str) -> NodeRun | None:
        path = self._latest.get((invocation_id, parent, name))
        return self.nodes.get((invocation_id, path)) if path else None

    def next_run_id(self, invocation_id: str, parent: str | None, name: str) -> str:
        """Run ids come from recorded runs, never from dispatch order."""
        return str(self._max_run.get((invocation_id, parent, name), 0) + 1)

    def children(self, invocation_id: str, path: str) -> list[NodeRun]:
        run = self.nodes.get((invocation_id, path))
        if run is None:
            return []
        return [self.nodes[(invocation_id, c)] for c in run.children]

    def descendant_answers(self, invocation_id: str, path: str) -> dict[str, Any]:
        """Standing answers to the interrupt ids of a run's descendants, by id
        (what an orchestration node sees in ``ctx.resume_inputs`` besides its own)."""
        out: dict[str, Any] = {}
        stack = list(reversed(self.nodes[(invocation_id, path)].children)) if (invocation_id, path) in self.nodes else []
        while stack:
            run = self.nodes[(invocation_id, stack.pop())]
            out.update(run.resolved)
            stack.extend(reversed(run.children))
        return out

    def pending_ids(self, invocation_id: str, path: str) -> list[str]:
        """Open interrupt ids of a run and all its descendants (what it waits on)."""
        run = self.nodes.get((invocation_id, path))
        if run is None:
            return []
        out = [i for i in run.own_pending if self._is_open(invocation_id, i)]
        for child in run.children:
            out.extend(self.pending_ids(invocation_id, child))
        return out

    def _is_open(self, invocation_id: str, interrupt_id: str) -> bool:
        itr = self.interrupts.get((invocation_id, interrupt_id))
        return itr is not None and itr.open

    def open_interrupts(self, invocation_id: str | None = None) -> list[Interrupt]:
        return [
            i
            for i in self.interrupts.values()
            if i.open and (invocation_id is None or i.invocation_id == invocation_id)
        ]

    def invocation_status(self, invocation_id: str) -> NodeStatus | None:
        root = self.root(invocation_id)
        return root.status if root else None

    # ---------------------------------------------------------- persistence
    def compact(
        self,
        invocation_id: str,
        _runs: list[tuple[str, NodeRun]] | None = None,
        _interrupts: list[tuple[tuple[str, str], Interrupt]] | None = None,
    ) -> Projection:
        """What a resume of one invocation needs: the latest run of every
        (parent, name) whose ancestors are latest runs too, and their interrupts.
        Earlier loop iterations are dropped, so the snapshot stays small however
        long the invocation ran. Run-id counters survive (latest = highest).

        ``_runs`` / ``_interrupts``: the invocation's (path, run) and (key,
        interrupt) pairs in this projection's order, when the caller has them
        (:meth:`compact_all` groups them once; else every record is scanned)."""
        out = Projection()
        out.position = self.position
        out.state = dict(self.state)
        inv = self.invocations.get(invocation_id)
        if inv is None:
            return out
        out.invocations[invocation_id] = inv.clone(out._gen)
        kept = self._kept(invocation_id, inv, _runs)
        for path in sorted(kept):  # sorted: snapshots are byte-reproducible
            run = self.nodes[(invocation_id, path)].clone(out._gen)
            run.children = [c for c in run.children if c in kept]
            out.nodes[(invocation_id, path)] = run
            lkey = (invocation_id, run.parent, run.name)
            if lkey not in out._latest or _run_no(run.run_id) > _run_no(leaf_run_id(out._latest[lkey])):
                out._latest[lkey] = path
            out._max_run[(invocation_id, run.parent, run.name)] = self._max_run.get(
                (invocation_id, run.parent, run.name), 0
            )
        out.invocations[invocation_id].roots = [p for p in inv.roots if p in kept]
        for key, itr in self._kept_interrupts(invocation_id, kept, _interrupts):
            out.interrupts[key] = itr.clone(out._gen)
        return out

    def _kept(self, invocation_id: str, inv: Invocation, _runs: list[tuple[str, NodeRun]] | None) -> set[str]:
        """The paths of one invocation's runs that :meth:`compact` keeps."""
        kept: set[str] = set()
        stack = [p for p in inv.roots if self._latest.get((invocation_id, None, leaf_name(p))) == p]
        while stack:
            path = stack.pop()
            kept.add(path)
            # Latest run per child identity: (name, call_key). Dynamic children of
            # one caller share a name but are distinct by their call key.
            latest: dict[tuple[str, str | None], NodeRun] = {}
            for c in self.children(invocation_id, path):
                key = (c.name, c.call_key)
                if key not in latest or _run_no(c.run_id) > _run_no(latest[key].run_id):
                    latest[key] = c
            stack.extend(c.path for c in latest.values())
        # Earlier runs that did not complete too (and their ancestors): a later
        # event may still end one (runs that overlap), a re-drive or a cancel
        # changes them, and a fold from the snapshot must find them.
        if _runs is None:
            _runs = [(path, run) for (iid, path), run in self.nodes.items() if iid == invocation_id]
        for path, run in _runs:
            if path not in kept and run.status is not NodeStatus.COMPLETED:
                up: str | None = path
                while up is not None and up not in kept:
                    kept.add(up)
                    up = parent_path(up)
        return kept

    def _kept_interrupts(
        self, invocation_id: str, kept: set[str], pairs: list[tuple[tuple[str, str], Interrupt]] | None
    ) -> list[tuple[tuple[str, str], Interrupt]]:
        """The (key, interrupt) pairs of one invocation that :meth:`compact` keeps: the
        open ones and those of the ``kept`` runs, in this projection's order (``pairs``:
        the invocation's, when the caller has them)."""
        scanned = self.interrupts.items() if pairs is None else pairs
        return [(key, itr) for key, itr in scanned if key[0] == invocation_id and (itr.open or itr.path in kept)]

    def snapshot_dict(self, invocation_id: str) -> dict[str, Any]:
        """``compact(invocation_id).to_dict()`` -- the same dict, so the same stored
        bytes -- without cloning the kept records into a projection first (a turn's
        last write builds one; the clones were only read back into dicts). Values
        are shared with this projection: serialise it before this projection changes."""
        inv = self.invocations.get(invocation_id)
        if inv is None:
            return self.compact(invocation_id).to_dict()
        kept = self._kept(invocation_id, inv, None)
        nodes = []
        for path in sorted(kept):
            run = self.nodes[(invocation_id, path)]
            record = _node_record(run)
            record["children"] = [c for c in run.children if c in kept]
            nodes.append(record)
        invocation = _record(inv)
        invocation["roots"] = [p for p in inv.roots if p in kept]
        interrupts = [_record(itr) for _, itr in self._kept_interrupts(invocation_id, kept, None)]
        return _layout(self.position, nodes, interrupts, [invocation], dict(self.state))

    def compact_all(self) -> Projection:
        """:meth:`compact` of every invocation, side by side (the session's
        state once): what a seek checkpoint keeps (:mod:`engine.checkpoints`).
        Folding later events into it gives the same latest runs as folding them
        into the full projection; earlier loop iterations are left out."""
        out = Projection()
        out.position = self.position
        out.state = dict(self.state)
        # Each invocation's records, grouped in one pass: compacting them one
        # invocation at a time over every record was quadratic in the invocations
        # (a 100k-event session of 14k invocations: a minute per checkpoint).
        runs: dict[str, list[tuple[str, NodeRun]]] = {}
        for (iid, path), run in self.nodes.items():
            runs.setdefault(iid, []).append((path, run))
        itrs: dict[str, list[tuple[tuple[str, str], Interrupt]]] = {}
        for key, itr in self.interrupts.items():
            itrs.setdefault(key[0], []).append((key, itr))
        for inv in self.invocations:
            part = self.compact(inv, runs.get(inv, []), itrs.get(inv, []))
            out.invocations.update(part.invocations)
            out.nodes.update(part.nodes)
            out.interrupts.update(part.interrupts)
            out._latest.update(part._latest)
            out._max_run.update(part._max_run)
        out.interrupts = {k: out.interrupts[k] for k in self.interrupts if k in out.interrupts}  # raised order
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe snapshot (for store caches). Values are shared with the
        projection, not copied: serialise it (or deep-copy it) before mutating."""
        return _layout(
            self.position,
            [_node_record(r) for r in self.nodes.values()],
            [_record(i) for i in self.interrupts.values()],
            [_record(i) for i in self.invocations.values()],
            self.state,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Projection:
        p = cls()
        p.position = data["position"]
        for inv in data["invocations"]:
            p.invocations[inv["id"]] = _revive(Invocation, inv)
        for n in data["nodes"]:
            run = _revive(NodeRun, n)
            run.status = NodeStatus(run.status)
            p.nodes[(run.invocation_id, run.path)] = run
            lkey = (run.invocation_id, run.parent, run.name)
            num = _run_no(run.run_id)
            if num >= p._max_run.get(lkey, 0):
                p._max_run[lkey] = num
                p._latest[lkey] = run.path
        for i in data["interrupts"]:
            itr = _revive(Interrupt, i)
            p.interrupts[(itr.invocation_id, itr.id)] = itr
        p.state = dict(data["state"])
        return p


def project(events: list[Event] | list[tuple[int, Event]]) -> Projection:
    """Fold a whole event list (optionally ``(seq, event)`` pairs)."""
    p = Projection()
    for item in events:
        if isinstance(item, tuple):
            p.apply(item[1], item[0])
        else:
            p.apply(item)
    return p
