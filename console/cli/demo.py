"""``hitl demo``: build the demo store with the sample apps."""

from __future__ import annotations

import click

from .options import _opts, common
from .output import fail, out, out_json, run


# ----------------------------------------------------------------------- demo
@click.command()
@common
@click.option("--sessions", "count", type=click.IntRange(0), default=0, help="Add N bulk sessions for scale tests.")
@click.option("--fresh", is_flag=True, help="Delete the database first.")
@click.option(
    "--clock", "epoch", type=float, metavar="EPOCH", help="Start the simulated clock here (reproducible store)."
)
@click.option("--long-iterations", type=click.IntRange(0), default=None, help="Loop iterations of deploy-long-1.")
def demo(count: int, fresh: bool, epoch: float | None, long_iterations: int | None) -> None:
    """Build the demo store: the sample apps run through the real Runner.

    Always with the sample apps' own code (a config or --app entry of the same
    name does not replace it here)."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    from engine.store.factory import store_label
    from sample_sessions.demo import DEFAULT_LONG_ITERATIONS, build_demo_db, format_report

    opts = _opts()
    if opts.read_only:
        fail("hitl demo writes the store; drop --read-only")
    path = opts.db_path()

    async def body() -> None:
        report = await build_demo_db(
            path,
            sessions=count,
            fresh=fresh,
            epoch=epoch,
            long_iterations=DEFAULT_LONG_ITERATIONS if long_iterations is None else long_iterations,
            progress=lambda what: click.echo(f"  building {what}", err=True),
            store_options=opts.store_options(),
        )
        if opts.json:
            out_json(red,
                {
                    "db": store_label(path),
                    "created": report.created,
                    "kept": report.skipped,
                    "bulk": report.bulk,
                    "seconds": report.seconds,
                }
            )
        else:
            out(red, format_report(report, store_label(path)))

    run(red, body())


from console.serve.command import serve  # noqa: E402, F401 -- `hitl serve`, found here by the group
