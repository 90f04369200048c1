"""A session whose every field carries a hostile string, written by the real Runner.

``hostile_store(h)`` puts ``h`` (tagged per field, so each field's text can be
found on screen) into the app name, user and session ids, the first message,
an interrupt's message, payload and id, a node's output, the session state,
an error message, and the operator and reason of an answer and of a cancel.
"""

from __future__ import annotations

from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, cancel_invocation, node
from engine.apps import AppRegistry
from engine.errors import WorkflowFailed
from engine.store import MemoryStore

NASTY = [
    "Write to [/tmp]?",
    "[/var/log/pay]",
    "[b]export[/b] [red]y",
    "[@click=app.quit]click me[/]",
    "\x1b[2J\x1b[31mred",
    "\x1b]52;c;SGVsbG8=\x07",
    "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07",
    "\u202egnp.exe",
    "nul\x00here\x9b",
    "emoji 🧨🔥",
    "x" * 10_000,
]
"""Fragments every generated string is built from (plus random text)."""


def field_value(tag: str, h: str) -> str:
    """What goes into one field: a literal marker first (it survives any truncation),
    then the hostile text."""
    return f"[b]{tag}[/b]{h}"


def marker(tag: str) -> str:
    return f"[b]{tag}[/b]"


def workflow(h: str) -> Workflow:
    @node
    async def intake(ctx: Any, node_input: Any) -> Any:
        ctx.state[field_value("SK", h)[:200]] = field_value("SV", h)
        return field_value("OUT", h)

    @node
    async def ask(node_input: Any) -> Any:
        yield RequestInput(
            field_value("MSG", h),
            payload={"note": field_value("PAY", h)},
            interrupt_id=field_value("ID", h)[:300],
        )

    @node
    async def after(node_input: Any) -> Any:
        raise RuntimeError(field_value("ERR", h))

    return Workflow("wf", [(START, intake, ask, after)])


async def hostile_store(h: str) -> tuple[MemoryStore, AppRegistry, dict[str, str]]:
    """The store, a registry with the app, and the ids written."""
    store = MemoryStore()
    app_name = field_value("APP", h)[:200]
    user = field_value("USR", h)[:200]
    sid = field_value("SID", h)[:200]
    wf = workflow(h)
    reg = AppRegistry()
    reg.register(app_name, wf)
    runner = Runner(app_name, wf, store)
    inv = ""
    async for e in runner.run(user, sid, Content.from_text(field_value("TXT", h))):
        inv = e.invocation_id
    iid = field_value("ID", h)[:300]
    # A second invocation, left waiting: the inbox and the answer screen show it.
    async for e in runner.run(user, sid, Content.from_text(field_value("TX2", h))):
        inv2 = e.invocation_id
    try:
        async for _ in runner.run(
            user, sid, Content.from_responses({iid: field_value("ANS", h)}), inv,
            operator=field_value("OPR", h)[:200], reason=field_value("RSN", h),
        ):
            pass
    except WorkflowFailed:
        pass
    # A third, cancelled with a hostile reason.
    async for e in runner.run(user, sid, Content.from_text(field_value("TX3", h))):
        inv3 = e.invocation_id
    await cancel_invocation(store, sid, inv3, operator=field_value("OPC", h)[:200], reason=field_value("RSC", h))
    return store, reg, {"app": app_name, "user": user, "session": sid, "inv": inv, "inv2": inv2, "id": iid}
