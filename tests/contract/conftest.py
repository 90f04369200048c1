"""The store every contract test runs against: each kind of ``KINDS`` in turn, fresh
and empty (a module needing another setup defines its own ``store``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine.store.base import SessionStore

from .builders import KINDS, open_store


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    s = await open_store(request.param, tmp_path)
    yield s
    await s.close()
