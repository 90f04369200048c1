"""One invocation's projection as the store holds it: its cached snapshot and
the events after it, folded (:func:`load_invocation`).

Below both :mod:`engine.resume` (which re-exports it) and :mod:`engine.liveness`,
which need it and each other's nothing else.
"""

from __future__ import annotations

from .errors import InvocationNotFoundError
from .projection import Projection
from .store.base import LoadedInvocation, SessionStore, snapshot_and_events


async def load_invocation(
    store: SessionStore, session_id: str, invocation_id: str, loaded: LoadedInvocation | None = None
) -> Projection:
    """The projection of one invocation: cached snapshot + events after it
    (``loaded``: as already read, when it is that invocation's)."""
    if loaded is not None and loaded.invocation_id == invocation_id:
        snap, events = loaded.snapshot, loaded.events
    else:
        snap, events = await snapshot_and_events(store, session_id, invocation_id)
    proj = Projection()
    if snap is not None:
        try:
            proj = Projection.from_dict(snap[1])
        except (KeyError, TypeError, ValueError, AttributeError):
            # a damaged cache is no cache: fold the invocation's events instead
            snap, events = None, await store.invocation_events(session_id, invocation_id)
    if not events and snap is None:
        raise InvocationNotFoundError(session_id, invocation_id)
    for se in events:
        proj.apply(se.event, se.seq)
    return proj
