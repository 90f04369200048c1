"""Moving sessions between stores: ``hitl export``, ``import``, ``copy``, ``migrate``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from console.inputs import (
    MAX_IMPORT_BYTES,
    bounded_lines,
)
from engine.errors import require_id
from engine.store.factory import migrate_sqlite, store_kind, store_label
from engine.store.factory import open_store as open_target

from .options import _operator, _opts, common, open_store, operator_option, reason_option, require_asyncpg
from .output import fail, out, out_json, run
from .progress import Progress, bulk_read, counted


# -------------------------------------------------------------- export/import
@click.command(name="export")
@common
@click.argument("session_id", metavar="SESSION")
def export_cmd(session_id: str) -> None:
    """Write a session as JSON Lines to stdout (hitl import reads it back)."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders

    async def body() -> None:
        async with open_store(write=False) as store:
            # JSON Lines are UTF-8 whatever the terminal's locale (the lines keep
            # non-ASCII text as is): bytes to stdout's buffer, past its text layer.
            binary = getattr(sys.stdout, "buffer", None)
            sys.stdout.flush()
            progress = Progress(f"export {session_id}", (await store.get_session(session_id)).last_seq)
            from engine.store.jsonl import export_pages  # every store's export_session is its lines

            header = True
            async for page in export_pages(store, session_id):  # a page at a time: one write, one tick
                text = "".join(page)
                if binary is None:
                    sys.stdout.write(text)
                else:
                    binary.write(text.encode("utf-8"))
                if header:
                    header = False
                else:
                    progress.tick(len(page))
            (binary or sys.stdout).flush()
            progress.done()

    with bulk_read():
        run(red, body())


@click.command(name="import")
@common
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--as", "as_id", metavar="SESSION", help="Import under a new session id.")
@operator_option
@reason_option
def import_cmd(file: str, as_id: str | None, operator: str | None, reason: str | None) -> None:
    """Create a session from a `hitl export` file (validated before anything is written).

    The import is recorded in the audit log with the operator, the reason and the file."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders

    async def body() -> None:
        if as_id is not None:
            require_id(as_id, "--as (the new session id)")
        lines = counted(bounded_lines(file, MAX_IMPORT_BYTES, "import"), Progress(f"import {file}", unit="lines"))
        source = "stdin" if file == "-" else str(Path(file).resolve())
        async with open_store(write=True) as store:
            # The store derives the seek checkpoints from the validated events, never from the file.
            session = await store.import_session(
                lines, session_id=as_id, operator=_operator(operator), reason=reason, source=source
            )
        if _opts().json:
            out_json(red, {**session.model_dump(), "state": red.value(session.state)})
        else:
            out(red,
                f"imported session {session.id} ({session.app_name}, user {session.user_id}, {session.last_seq} events)"
            )

    with bulk_read():
        run(red, body())


@click.command()
@common
def migrate() -> None:
    """Upgrade the store's schema to this hitl's version (a writer also does it when
    it opens the store). A store from a newer hitl is refused and left untouched."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()
    if opts.read_only:
        fail("hitl migrate writes the store's schema; drop --read-only")
    target = opts.db_path()
    label = store_label(target)

    async def body() -> None:
        if store_kind(target) == "sqlite":
            before, after = await migrate_sqlite(target)
        else:
            store = await open_target(target, migrate=False, inline=True, **opts.store_options())
            try:
                from engine.store.capabilities import Migrates, capability

                if (migrates := capability(store, Migrates)) is None:
                    fail(f"{label} has no schema to migrate")
                before, after = await migrates.migrate()
            finally:
                await store.close()
        if opts.json:
            out_json(red, {"db": label, "from": before, "to": after, "changed": before != after})
        elif before == after:
            out(red, f"{label}: already at schema version {after}, up to date")
        else:
            out(red, f"{label}: migrated from schema version {before} -> {after}")

    run(red, body())


@click.command()
@common
@click.option("--from", "source", required=True, metavar="PATH_OR_URL", help="The store to copy.")
@click.option("--to", "dest", required=True, metavar="PATH_OR_URL", help="The store to copy into (created if new).")
@click.option("--operator", metavar="NAME", help="Recorded on each imported session's audit row.")
def copy(source: str, dest: str, operator: str | None) -> None:
    """Copy every session of one store into another (e.g. SQLite to PostgreSQL).

    Each session is validated and written in one transaction; run the same
    command again to resume a copy that was stopped (sessions already in the
    target with the same log are skipped; a session that differs is reported
    and left alone). Leases and snapshot caches are not copied."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    from engine.apps import default_operator
    from engine.store.copy import copy_store, session_ids

    opts = _opts()
    if opts.read_only:
        fail("hitl copy writes the --to store; drop --read-only")
    for url in (source, dest):
        require_asyncpg(url)
    src_label, dst_label = store_label(source), store_label(dest)
    if source == dest:
        fail(f"--from and --to are the same store ({src_label})")
    who = operator or default_operator(opts.config_path())

    async def body() -> None:
        src = await open_target(source, read_only=True, inline=True)
        try:
            dst = await open_target(dest, inline=True, **opts.store_options())
            try:
                ids = await session_ids(src)
                with click.progressbar(
                    length=max(1, len(ids)),
                    label=f"copying {src_label} -> {dst_label}",
                    file=sys.stderr,
                ) as bar:
                    report = await copy_store(
                        src, dst, source_label=src_label, operator=who, ids=ids, progress=lambda _s, _o: bar.update(1)
                    )
            finally:
                await dst.close()
        finally:
            await src.close()
        if opts.json:
            out_json(red,
                {
                    "from": src_label,
                    "to": dst_label,
                    "sessions": report.total,
                    "copied": len(report.copied),
                    "skipped": len(report.skipped),
                    "diverged": report.diverged,
                    "events": report.events,
                }
            )
        else:
            out(red,
                f"copied {len(report.copied)} of {report.total} sessions ({report.events} events) "
                f"from {src_label} to {dst_label}"
                + (f"; {len(report.skipped)} already there (resumed)" if report.skipped else "")
            )
            for sid in report.diverged:
                out(red, f"  not copied: {sid} exists in {dst_label} with a different log (left alone)")
        if report.diverged:
            raise SystemExit(1)

    run(red, body(), on_interrupt="copy stopped: every session copied so far is complete; run the same command to resume")
