"""``hitl audit``: operator writes, who, when and why."""

from __future__ import annotations

import click

from console.text import audit_what
from console.times import zone_name
from engine.redact import learn_written

from .options import _opts, _when, common, open_store, page_of
from .output import clock, id_list, more, out, out_json, run, short, table

# ---------------------------------------------------------------------- audit
AUDIT_ACTIONS = ("answer", "redrive", "cancel", "import")


@click.command()
@common
@click.option("--operator", metavar="NAME", help="Only writes by this operator.")
@click.option("--session", "session_id", metavar="SESSION", help="Only writes to this session.")
@click.option("--action", type=click.Choice(AUDIT_ACTIONS), help="Only this kind of write.")
@click.option("--since", metavar="WHEN", callback=_when, help="At or after WHEN (2h = two hours ago, 2026-01-31, ...).")
@click.option("--until", metavar="WHEN", callback=_when, help="Before WHEN.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
def audit(
    operator: str | None,
    session_id: str | None,
    action: str | None,
    since: float | None,
    until: float | None,
    limit: int,
    cursor: str | None,
) -> None:
    """Operator writes (answers, re-drives, cancels, imports): who, when, why; newest first."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders

    async def body() -> None:
        async with open_store(write=False) as store:
            page = await page_of(
                store.audit_log(
                    operator=operator,
                    session_id=session_id,
                    action=action,
                    since=since,
                    until=until,
                    limit=limit,
                    cursor=cursor,
                )
            )
            await learn_written(red, store, page.items)  # a reason may repeat what was answered
        if _opts().json:
            out_json(red, {"audit": [r.model_dump() for r in page.items], "next_cursor": page.next_cursor})
            return
        rows = []
        for r in page.items:
            what = audit_what(r.action, r.details, id_list)
            rows.append(
                [
                    clock(r.at),
                    r.action,
                    r.operator or "-",
                    r.session_id,
                    (r.invocation_id or "-")[:12],
                    short(what, 60),
                    short(red.text(r.reason or ""), 40) or "-",
                ]
            )
        out(red,
            table(rows, [f"TIME ({zone_name()})", "ACTION", "OPERATOR", "SESSION", "INVOCATION", "WHAT", "REASON"])
            if rows
            else "no operator writes match"
        )
        more(red, page.next_cursor)

    run(red, body())
