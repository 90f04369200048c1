"""A worker's connections made ready for its turns before it claims any (:meth:`_Warm.warm_turns`).

A new server backend pays, at its first call of the turn's PL/pgSQL functions
(``hitl_acquire_append``, ``hitl_append_release`` and the ``hitl_append_many``
and ``hitl_append`` they call), the compile of each function and the parse
analysis and planning of every statement in them: ~20 ms of server CPU, against
~1 ms for a later call. A pool of N worker processes pays it once per
connection, inside its first turns -- at 16 workers, about a second of server
CPU while a backlog waits. The client side is paid there too: each statement's
first use on a connection is a COPY with literals (:mod:`.onetrip`), its second
a prepare.

So before a worker claims anything, each connection it will use runs the turn's
statements -- the claim, the first write and the last write, twice each, so
that both first-use paths are behind it, and the last write that claims the
next request (a backlog's turns) -- on a scratch session, in ONE
transaction that is then rolled back: nothing is written, nobody is notified
(PostgreSQL sends a transaction's notifications only at its commit), and the
only lasting effects are the backend's caches and the connection's prepared
statements, which is the point.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

import asyncpg

from ..sql.prepared import Prepared
from . import onetrip
from .core import _Core
from .schema import NOTIFY_CHANNEL
from .statements import _append_many_args
from .workers import _CLAIM_READ_SQL, _SETTLE_CLAIM_SQL, _SETTLE_SQL, TURNS_CHANNEL, _claim_args, _skip_columns
from .writes import _acquire_append

log = logging.getLogger(__name__)


class _RollBack(Exception):
    """Raised inside the warm-up's transaction to roll it back."""


def _event(inv: str, n: int, *, status: str | None = None, opened: str | None = None,
           resolved: str | None = None, audit: bool = False) -> Prepared:
    """A scratch event: each of a turn's paths through ``hitl_append`` (a new
    invocation, an interrupt opened then resolved, a state delta, a status, an
    operator's audit row) is taken at least once."""
    return Prepared(
        json="{}", event_id=f"warm-{uuid.uuid4().hex}", invocation_id=inv, timestamp=time.time(),
        path="warm", kind="warm", delta={"warm": n} if n % 2 else None,
        opened=[(opened, "warm", "warm", "{}")] if opened else [], resolved=[resolved] if resolved else [],
        cancel=False, invocation_status=status, new_message="" if status == "running" else None,
        audit=("warm", None, None, "{}") if audit else None,
    )


async def _warm(conn: asyncpg.Connection, apps: list[str], owner: str) -> None:
    """The turn's statements on ``conn``, rolled back (see the module's docstring)."""
    sid, inv = f"hitl-warm-{uuid.uuid4().hex}", "warm"
    now = time.time()
    ttl = now + 30.0
    # Generic plans from the first call, for the connection's life (outside the
    # transaction rolled back, which would undo it): a statement is otherwise
    # planned again for its parameters at each of its first five executions on a
    # backend -- the turn's statements and every statement inside their
    # functions, ~0.5 ms for the last write's alone. A worker's connection runs
    # the same few statements for hours, where that is nothing; but a pool of
    # many worker processes on a backlog of 200 spreads it over so many
    # connections that most turns paid it (16 processes: ~4 turns a connection).
    await conn.execute("SET plan_cache_mode = force_generic_plan")
    try:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)"
                " VALUES ($1, $2, 'warm', '{}'::jsonb, $3, $3, 0, 'new')", sid, apps[0] if apps else "warm", now,
            )
            # the claim as a worker sends it; its apps match nothing here, so it claims nothing
            await conn.fetchrow(_CLAIM_READ_SQL, [], owner, ttl, now, *_skip_columns(None), [], [])
            last = 0
            for first, second, claims in (
                ([_event(inv, 1, status="running", opened="w1")], [_event(inv, 2, resolved="w1"),
                                                                   _event(inv, 3, status="completed", audit=True)], False),
                ([_event(inv, 4, status="running")], [_event(inv, 5, status="completed")], False),
                # the last write that also claims the next request (a backlog's turns): no app, no claim
                ([_event(inv, 6, status="running")], [_event(inv, 7, status="completed")], True),
            ):
                args = _append_many_args(sid, first, last, owner)
                row = await _acquire_append(conn, sid, inv, owner, ttl, last, args, last)
                last = int(row[1])
                args = _append_many_args(sid, second, last, owner)
                extra = (sid, inv, owner, now, NOTIFY_CHANNEL, TURNS_CHANNEL)
                head = (inv, last + len(second), "{}", *args, *extra)
                if claims:
                    seq = (await conn.fetchrow(_SETTLE_CLAIM_SQL, *head, *_claim_args([], owner, 30.0, None, None)))[0]
                else:
                    [(seq, *_)] = await onetrip.fetch(conn, _SETTLE_SQL, head, "ibtt")
                last = int(seq)
            raise _RollBack
    except _RollBack:
        pass


class _Warm(_Core):
    """The worker's warm-up (``engine.store.capabilities.WarmTurns``)."""

    _warmed = False
    """A warm-up ran on this pool (:meth:`warm_turns` runs again only if the pool lost connections)."""

    async def warm_turns(self, connections: int, apps: list[str], owner: str) -> int:
        """Open up to ``connections`` pooled connections at once (at most the pool's
        size) and run the turn's statements on each in a transaction rolled back:
        returns how many were made ready. Nothing is written. Called again (a
        worker's idle heartbeat), it does nothing while the pool still holds as
        many open connections (the pool closes those idle for five minutes; a
        connection it opened for a turn since was made ready by that turn). A
        failure is logged and only means the turns pay the first use themselves."""
        if self.read_only or self._pool is None or connections < 1:
            return 0
        n = min(connections, int(self._pool.get_max_size()))
        if self._warmed and self._pool.get_size() >= n:
            return 0
        self._warmed = True
        arrived = 0
        together = asyncio.Event()

        async def fn(conn: asyncpg.Connection) -> None:
            nonlocal arrived
            try:
                await _warm(conn, apps, owner)
            finally:
                arrived += 1
                if arrived >= n:
                    together.set()
            # hold this connection until every warm-up has one of its own (else two
            # of them could take turns on one connection, and another stays cold)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(together.wait(), timeout=10)

        done = await asyncio.gather(*(self._run(fn) for _ in range(n)), return_exceptions=True)
        failed = [d for d in done if isinstance(d, BaseException)]
        if failed:
            log.warning("warming the worker's connections failed (%s: %s); its first turns pay for it",
                        type(failed[0]).__name__, failed[0])
        return n - len(failed)
