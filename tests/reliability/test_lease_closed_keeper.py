"""A lease row left by a turn of this very process whose last write failed
(its keeper closed, but lapsing the row could not be written, e.g. on a full
disk) is not live: the process knows that turn is over. Found when the index of
issue 15 moved the point where the tmpfs of test_a_really_full_disk fills up."""

from __future__ import annotations

import pytest

from engine.errors import StoreFullError
from engine.liveness import LeaseKeeper, acquire_invocation_lease, lease_is_live, owner_state
from engine.store import MemoryStore


async def test_a_lease_whose_keeper_closed_is_not_live_even_if_its_row_stays() -> None:
    store = MemoryStore()
    await store.create_session("app", "u", "s")
    lease = await acquire_invocation_lease(store, "s", "i", wait=0)
    if lease.owner.split(":")[2] == "-":
        pytest.skip("no /proc here: liveness falls back to lease expiry only")
    keeper = LeaseKeeper(store, lease, 60)
    assert owner_state(lease.owner) == "alive" and lease_is_live(await store.get_lease("s", "i"))

    async def full(*args: object, **kwargs: object) -> None:
        raise StoreFullError("the disk is full")

    store.renew_lease = full  # type: ignore[method-assign]  # lapsing the row fails
    await keeper.close(clean=False)
    row = await store.get_lease("s", "i")
    assert row is not None and not row.expired()  # the row could not be lapsed
    assert owner_state(lease.owner) == "dead" and not lease_is_live(row)
    again = await acquire_invocation_lease(store, "s", "i", wait=0)  # taken over at once, no wait for the ttl
    assert again.owner != lease.owner
