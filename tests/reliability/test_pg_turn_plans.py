"""A worker's warmed PostgreSQL connection plans its turn's statements once, not
at each of their first five executions: PostgreSQL re-plans a prepared
statement for its parameters (a custom plan) until it has run five times on
that backend, which a pool of many worker processes on a backlog spreads over
so many connections that most turns paid for it (at 16 processes, about four
turns a connection; the last write's plan alone ~0.5 ms of server CPU).
Counted from the server's own record of the connection's prepared statements."""

from __future__ import annotations

import pytest

from engine.store import open_store
from tests.contract.builders import pg_fresh_url
from tests.reliability.test_worker_turn_cost import _queued, _serve

pytestmark = pytest.mark.postgres


async def test_a_warmed_worker_connection_runs_its_turns_on_generic_plans() -> None:
    url = pg_fresh_url()
    await _queued(url, 4)
    store = await open_store(url, max_size=1)  # the worker's one connection: warmed, then its turns
    try:
        await _serve(store, 4)
        plans = await store._run(  # type: ignore[attr-defined]
            lambda conn: conn.fetchrow(
                "SELECT coalesce(sum(custom_plans), 0) AS custom, coalesce(sum(generic_plans), 0) AS generic,"
                " count(*) FILTER (WHERE statement LIKE '%hitl_append_release%') AS settles"
                " FROM pg_prepared_statements"
            )
        )
    finally:
        await store.close()
    assert plans["settles"] >= 1  # the turn's statements were prepared on this connection
    assert plans["custom"] == 0
    assert plans["generic"] >= 8  # the four turns' two writes at least
