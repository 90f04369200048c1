"""What the PostgreSQL store's Python costs a worker turn, counted (never timed).

The request a worker's last write claims is built once, with the graph version
the claim read with it -- not built and then copied (a pydantic ``model_copy``
per turn).
"""

from __future__ import annotations

import pytest

from engine.store.workers import TurnRequest
from tests.reliability.test_worker_turn_python import _Calls, backlog_per_turn


@pytest.mark.postgres
async def test_a_claimed_request_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The request the last write claims is built with the graph version read with
    # it, not built and then copied with it (1 copy a turn before).
    assert await backlog_per_turn(lambda: _Calls(monkeypatch, TurnRequest, "model_copy")) == 0

