"""What the PostgreSQL store's Python costs a worker turn, counted (never timed).

The request a worker's last write claims is built once, with the graph version
the claim read with it -- not built and then copied (a pydantic ``model_copy``
per turn).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.store import open_store
from engine.store.workers import TurnRequest
from tests.contract.builders import pg_fresh_url
from tests.reliability.test_worker_turn_cost import _queued, _serve
from tests.reliability.test_worker_turn_python import _Calls, _per_turn


async def _backlog_per_turn(counter: Callable[[], _Calls]) -> float:
    """On a new PostgreSQL store whose worker has served its first turns: what one
    more queued turn adds to the count of ``counter()`` (made once warm)."""
    url = pg_fresh_url()
    store = await open_store(url, max_size=2)
    try:
        await _queued(url, 2, "warm")
        await _serve(store, 2)
        return await _per_turn(store, url, counter())
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_claimed_request_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The request the last write claims is built with the graph version read with
    # it, not built and then copied with it (1 copy a turn before).
    assert await _backlog_per_turn(lambda: _Calls(monkeypatch, TurnRequest, "model_copy")) == 0

