"""What a replay shows at one position, for every view of it (the console's
Replay screen and ``hitl replay``), so both show the same data.

Pure helpers over :class:`engine.replay.Replay`: no I/O, no widgets, and no
status logic -- every status, output and interrupt comes from the one
projection (:mod:`engine.projection`) the replay keeps at its cursor.

* :func:`goto` moves the cursor and returns a :class:`Frame`: the event at that
  position, its markers, and the state just before and just after it (so a view
  can say what *this* event changed, whatever jump led there);
* :func:`frame_markers` adds to the engine's markers the one they leave out (a
  new invocation starts);
* :func:`effects` is :func:`engine.replay.diff` restricted to what the event
  touched (cheap, however large the session);
* :func:`node_statuses` lists an invocation's node runs in tree order;
* :func:`frame_dict` is the JSON of a frame (``hitl replay --json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .models import Event
from .projection import Projection
from .replay import DiffRow, Marker, Replay, Step, diff


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
    (copy-on-write, a few dict copies), then applies the one event at
    ``position``: the cost is that of one seek."""
    position = max(0, min(position, len(replay)))
    if position == 0:
        replay.seek(0)
        return Frame(0, len(replay), None, None, replay.projection)
    replay.seek(position - 1)
    before = replay.projection.fork()
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
    return diff(_slice(frame.before, nodes, itrs, keys), _slice(frame.projection, nodes, itrs, keys))  # type: ignore[arg-type]


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


def tree_order(proj: Projection, invocation_id: str) -> list[str]:
    """The invocation's run paths depth-first, children in the order they ran
    (the order the console's tree lists them)."""
    inv = proj.invocations.get(invocation_id)
    if inv is None:
        return []
    out: list[str] = []
    stack = list(reversed(inv.roots))
    while stack:
        path = stack.pop()
        run = proj.get(invocation_id, path)
        if run is None:
            continue
        out.append(path)
        stack.extend(reversed(run.children))
    return out


def node_statuses(proj: Projection, invocation_id: str) -> dict[str, str]:
    """``{path: status}`` of every run of one invocation, in tree order."""
    return {p: proj.nodes[(invocation_id, p)].status.value for p in tree_order(proj, invocation_id)}


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
