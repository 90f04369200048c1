"""Prometheus metrics: this process's counters and histograms, plus gauges read
from the store at each scrape, in the text exposition format (version 0.0.4).

No client library: a handful of counters and histograms, rendered by
:func:`render`. Counted here (process-local, since the process started):

* ``hitl_turns_total{app,kind,outcome}`` and ``hitl_turn_duration_seconds`` --
  turns a worker ran (outcome: ran, failed, held, busy, refused, settled, lost);
* ``hitl_worker_claims_total{app}``, ``hitl_worker_lease_losses_total{app}``;
* ``hitl_answers_total{surface,via}`` -- answers written (``via``: here / worker);
* ``hitl_notifications_total{channel,result}``;
* ``hitl_serve_signins_total{result}`` -- sign-ins on ``hitl serve`` (ok, refused, limited, busy).

Read from the store at each scrape (:meth:`~engine.store.base.SessionStore.metric_reads`:
aggregates over the open-interrupt and turn-request indexes, whose size is
what waits now, never history):

* ``hitl_open_interrupts{app,node}``, ``hitl_oldest_open_interrupt_age_seconds{app,node}``;
* ``hitl_queued_turns{app}``, ``hitl_held_turns{app}`` (held for an acknowledged
  re-drive), ``hitl_oldest_queued_turn_age_seconds{app}``;
* ``hitl_live_workers{app}`` when the store has a worker table.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from typing import Any

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Turn-duration histogram buckets, seconds."""


class _Family:
    def __init__(self, name: str, kind: str, help_text: str, labels: tuple[str, ...]) -> None:
        self.name, self.kind, self.help, self.labels = name, kind, help_text, labels
        self.values: dict[tuple[str, ...], Any] = {}
        self.lock = threading.Lock()
        self._names = frozenset(labels)

    def _key(self, labels: dict[str, str]) -> tuple[str, ...]:
        # Once per turn and per claim of every worker: the dict's keys compared as a set,
        # no set built for the comparison.
        if labels.keys() != self._names:
            raise ValueError(f"{self.name} takes labels {self.labels}, not {tuple(labels)}")
        return tuple([str(labels[k]) for k in self.labels])


class Counter(_Family):
    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(name, "counter", help_text, labels)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = self._key(labels)
        with self.lock:
            self.values[key] = self.values.get(key, 0.0) + amount

    def samples(self) -> Iterable[tuple[str, tuple[str, ...], float]]:
        with self.lock:
            items = sorted(self.values.items())
        for key, value in items:
            yield self.name + "_total" if not self.name.endswith("_total") else self.name, key, value


class Histogram(_Family):
    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(name, "histogram", help_text, labels)

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self.lock:
            cell = self.values.setdefault(key, [[0] * len(_BUCKETS), 0, 0.0])
            for i, bound in enumerate(_BUCKETS):
                if value <= bound:
                    cell[0][i] += 1
            cell[1] += 1
            cell[2] += value

    def samples(self) -> Iterable[tuple[str, tuple[str, ...], float]]:
        with self.lock:
            items = sorted((k, ([*v[0]], v[1], v[2])) for k, v in self.values.items())
        for key, (buckets, count, total) in items:
            for bound, n in zip(_BUCKETS, buckets, strict=True):
                yield f"{self.name}_bucket", (*key, _num(bound)), float(n)
            yield f"{self.name}_bucket", (*key, "+Inf"), float(count)
            yield f"{self.name}_count", key, float(count)
            yield f"{self.name}_sum", key, total


TURNS = Counter("hitl_turns", "Turns a worker of this process ran, by outcome.", ("app", "kind", "outcome"))
TURN_SECONDS = Histogram("hitl_turn_duration_seconds", "How long a worker's turn took, by outcome.", ("app", "outcome"))
CLAIMS = Counter("hitl_worker_claims", "Turn requests this process's worker claimed.", ("app",))
LEASE_LOSSES = Counter("hitl_worker_lease_losses", "Turns this process's worker lost the lease of mid-run.", ("app",))
ANSWERS = Counter("hitl_answers", "Answers written by this process, by surface and where the turn runs.", ("surface", "via"))
NOTIFICATIONS = Counter("hitl_notifications", "Notifications sent, by channel and result.", ("channel", "result"))
SIGNINS = Counter("hitl_serve_signins", "Sign-ins on hitl serve, by result.", ("result",))

FAMILIES: tuple[Counter | Histogram, ...] = (TURNS, TURN_SECONDS, CLAIMS, LEASE_LOSSES, ANSWERS, NOTIFICATIONS, SIGNINS)

STORE_GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "hitl_open_interrupts": ("Open interrupts waiting for a human, by app and node.", ("app", "node")),
    "hitl_oldest_open_interrupt_age_seconds": ("Age of the oldest open interrupt, by app and node.", ("app", "node")),
    "hitl_queued_turns": ("Turn requests waiting for a worker (held ones included), by app.", ("app",)),
    "hitl_held_turns": ("Turn requests held for an acknowledged re-drive (nodes in doubt), by app.", ("app",)),
    "hitl_oldest_queued_turn_age_seconds": ("Age of the oldest turn request, by app.", ("app",)),
    "hitl_live_workers": ("Workers whose heartbeat is fresh, by app they serve.", ("app",)),
    "hitl_store_up": ("1 when the last scrape read the store, 0 when the read failed.", ()),
}
"""The gauges :func:`store_samples` reads at each scrape."""


def _num(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _line(name: str, labels: tuple[str, ...], names: tuple[str, ...], value: float) -> str:
    if names:
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(names, labels, strict=True))
        return f"{name}{{{inner}}} {_num(value)}"
    return f"{name} {_num(value)}"


async def store_samples(store: Any, now: float | None = None) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """The store gauges' samples, read in one store call (plus the worker table
    where the store has one); ``hitl_store_up`` 0 and nothing else when the read fails."""
    from .errors import HitlError
    from .store.capabilities import WorkerQueue, capability

    now = time.time() if now is None else now
    out: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name in STORE_GAUGES}
    try:
        m = await store.metric_reads()
        workers = await q.list_workers() if (q := capability(store, WorkerQueue)) is not None else []
    except (HitlError, OSError):
        out["hitl_store_up"].append(((), 0.0))
        return out
    out["hitl_store_up"].append(((), 1.0))
    for app, node, count, oldest in m.open_interrupts:
        out["hitl_open_interrupts"].append(((app, node), float(count)))
        out["hitl_oldest_open_interrupt_age_seconds"].append(((app, node), max(0.0, now - oldest)))
    for app, count, held, oldest in m.queued_turns:
        out["hitl_queued_turns"].append(((app,), float(count)))
        out["hitl_held_turns"].append(((app,), float(held)))
        out["hitl_oldest_queued_turn_age_seconds"].append(((app,), max(0.0, now - oldest)))
    live: dict[str, int] = {}
    for w in workers:
        if now - w.heartbeat_at <= w.stale_after:
            for app in w.apps:
                live[app] = live.get(app, 0) + 1
    for app in sorted({*live, *(a for a, *_ in m.queued_turns)}):
        out["hitl_live_workers"].append(((app,), float(live.get(app, 0))))
    return out


async def render(store: Any | None = None) -> str:
    """The exposition text: this process's families, then (``store``) the store gauges."""
    lines: list[str] = []
    for fam in FAMILIES:
        lines.append(f"# HELP {fam.name} {fam.help}")
        lines.append(f"# TYPE {fam.name} {fam.kind}")
        names = fam.labels + (("le",) if fam.kind == "histogram" else ())
        for name, labels, value in fam.samples():
            lines.append(_line(name, labels, names if name.endswith("_bucket") else fam.labels, value))
    if store is not None:
        for name, values in (await store_samples(store)).items():
            help_text, names = STORE_GAUGES[name]
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} gauge")
            lines.extend(_line(name, labels, names, value) for labels, value in values)
    return "\n".join(lines) + "\n"


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metric_names() -> set[str]:
    """Every metric name this project exports (the dashboard and alert rules' test reads it)."""
    names = set(STORE_GAUGES)
    for fam in FAMILIES:
        if fam.kind == "counter":
            names.add(fam.name + "_total")
        else:
            names.update({f"{fam.name}_bucket", f"{fam.name}_count", f"{fam.name}_sum"})
    return names
