"""Claiming, assigning and releasing from the console (session screen and inbox).

One place for both screens: which of the ids someone else owns (the session
screen asks before answering those, :class:`~console.screens.owner_dialogs.AnswerOwned`),
and running a claim / assign / release through :mod:`engine.ownership` in a
worker of the app, telling the outcome in a toast (the refusal's one line when
another operator owns an id). ``c`` claims, and releases ids the operator
already owns; ``C`` asks whom to assign to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..app import HitlApp


def owned_by_others(
    owners: Iterable[tuple[str, str | None, float | None]], operator: str | None, policy: Any
) -> list[tuple[str, str, float | None]]:
    """``(id, owner, since)`` of the ids another operator owns (a group the operator
    belongs to is theirs too). ``owners``: ``(id, owner, owned_at)`` of each id."""
    return [(i, who, at) for i, who, at in owners if who and not policy.is_member(operator, who)]


def change_owners(
    app: HitlApp,
    action: str,
    targets: dict[str, list[tuple[str, str | None]]],
    *,
    then: Callable[[], None],
    to: str | None = None,
) -> None:
    """``action`` (``claim``: release instead when the operator owns every id) on
    ``targets`` (session -> [(interrupt id, its owner)]), then ``then()``."""
    from engine import ownership

    operator = app.default_operator
    if action == "claim" and all(owner == operator for pairs in targets.values() for _, owner in pairs):
        action = "release"
    policy = app.policy

    async def run() -> None:
        lines, bad = [], False
        for sid, pairs in targets.items():
            ids = [i for i, _ in pairs]
            kw: dict[str, Any] = {"to": to} if action == "assign" else {}
            try:
                done = await getattr(ownership, action)(app.store, sid, ids, operator=operator or None,
                                                        policy=policy, **kw)
            except Exception as e:  # noqa: BLE001 -- a store failure: one line, never a traceback
                lines.append(f"{sid}: {' '.join(str(e).split())}")
                bad = True
                continue
            bad = bad or done.error is not None
            lines.append(done.summary())
        app.notify("\n".join(lines), title=action.title(), severity="error" if bad else "information", timeout=8)
        then()

    app.run_worker(run(), group="hitl-owners", exit_on_error=False)


def ask_assignee(app: HitlApp, what: str, done: Callable[[str], None]) -> None:
    """Ask whom to assign ``what`` to, then ``done(name)`` (nothing on esc)."""
    from ..screens.owner_dialogs import AssignTo

    groups = sorted(app.policy.groups)
    app.push_screen(AssignTo(what, groups), lambda name: done(name) if name else None)
