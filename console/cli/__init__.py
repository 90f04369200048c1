"""``hitl``: the headless console. Every console action, scriptable.

``hitl`` alone opens the Textual console; the subcommands read and write the
same store through the engine's public API (no SQL here) and compute every
node status with :mod:`engine.projection`::

    hitl sessions [--app NAME] [--user U] [--status S] [--older-than 2h] [--text T] [--limit N] [--cursor C]
    hitl show SESSION [--invocation INV] [--all-runs]
    hitl inbox [--app NAME] [--session S] [--limit N] [--cursor C] [FILTER]...
    hitl resume SESSION ID=JSON|ID=@file.json ... [--answer ID=JSON] [--invocation INV] [--dry-run]
                [--operator NAME] [--reason TEXT]
    hitl bulk-answer [FILTER]... [--item SESSION INVOCATION ID]... [--items FILE] --answer JSON [--dry-run]
                [--operator NAME] [--reason TEXT]   (FILTER: app=NAME node=NAME age>2h text=T amount<50 ...)
    hitl redrive SESSION INVOCATION [--ack-in-doubt] [--operator NAME] [--reason TEXT]
    hitl cancel SESSION INVOCATION [--operator NAME] [--reason TEXT]
    hitl start APP [--session S] [--user U] MESSAGE
    hitl events SESSION [--after SEQ] [--limit N] [--tail]
    hitl replay SESSION|--file export.jsonl [--at N [--diff-from M]] [--ui]
    hitl export SESSION > session.jsonl ; hitl import session.jsonl [--as NEW_ID] [--operator NAME] [--reason TEXT]
    hitl audit [--operator NAME] [--session S] [--action A] [--since WHEN] [--until WHEN] [--limit N]
    hitl demo [--sessions N] [--fresh] [--clock EPOCH]

Options accepted before or after the subcommand: ``--db PATH`` (default
``$HITL_DB`` or ``~/.local/share/hitl-console/hitl.sqlite``), ``--json``,
``--read-only`` (the store is opened read-only: every writing command fails),
``--config hitl.toml``, ``--show-secrets`` and ``--secret-pattern P``
(repeatable; values of keys matching ``password``, ``secret``, ``token``,
``api_key``, the config's ``[secrets] patterns`` and these are shown as ``***``
unless ``--show-secrets``; ``hitl export`` is never masked); ``--app [NAME=]module:attr``
(repeatable) registers workflow code, before the subcommand or on the commands
that run workflows (``resume``, ``redrive``). Without ``--config``, the first
of ``./hitl.toml`` and ``$XDG_CONFIG_HOME/hitl/hitl.toml`` (``~/.config/hitl/hitl.toml``)
that exists is read (:func:`engine.configfile.find_config`). Invocation ids may be abbreviated to a
unique prefix.

Exit codes: 0 ok; 1 operator error (:class:`~engine.errors.HitlError`: unknown
or answered id, invalid answer, bad JSON, missing session, conflict, read-only
store, failed run...) with a one-line reason on stderr and no traceback; 2 usage.

Modules: :mod:`.options` (global options, store opener), :mod:`.output`
(printing, errors), :mod:`.loads` (reading a session for display),
:mod:`.render` (the shared views as text), :mod:`.group` (the group, ``main``),
and one module per command group: :mod:`.reads`, :mod:`.writes`, :mod:`.bulk`,
:mod:`.replay`, :mod:`.transfer`, :mod:`.audit`, :mod:`.demo`.
"""

from __future__ import annotations

import gc

__all__ = [
    "CONFIG_NAME",
    "OperatorError",
    "Options",
    "_opts",
    "age",
    "app_spec_option",
    "cli",
    "common",
    "fail",
    "interactive",
    "main",
    "open_store",
    "operator_option",
    "out",
    "out_json",
    "reason_option",
    "render_plan",
    "render_tree",
    "run",
    "tree_rows",
]

_HOMES = {
    "age": "times",
    "cli": "group",
    **dict.fromkeys(("CONFIG_NAME", "Options", "_opts", "app_spec_option", "common", "open_store", "operator_option",
                     "reason_option"), "options"),
    **dict.fromkeys(("OperatorError", "fail", "interactive", "out", "out_json", "run"), "output"),
    # the text renderers load with the commands that print trees (engine.owners and the
    # socket module with them), not with every command
    **dict.fromkeys(("render_plan", "render_tree", "tree_rows"), "render"),
}
"""Which module each name of this package lives in. Importing the package loads none of
them: the ``hitl`` script's ``from console.cli import main`` costs nothing before
:func:`main` has deferred the GC's first collection (:func:`defer_first_collection`),
so the CLI's own imports (click, the group, its options) run without collections too."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    # plain import statements: code is imported by name only in the app registry
    if home == "times":
        from console import times

        return getattr(times, name)
    if home == "group":
        from . import group

        return getattr(group, name)
    if home == "options":
        from . import options

        return getattr(options, name)
    if home == "output":
        from . import output

        return getattr(output, name)
    if home == "render":
        from . import render

        return getattr(render, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STARTUP_GEN0 = 100_000
"""Allocations the cyclic GC lets pass before its first collection in a ``hitl``
process (its usual threshold is 700). A cold command's work is mostly imports,
whose objects all live on: each collection during them (~65 in a ``hitl resume``
with its app) only walks new survivors to find no garbage -- 2.5 % of that
process's instructions, 2 % of ``hitl --help``'s. The first collection, if a command gets that far,
puts the interpreter's own thresholds back: a long-running command (the console,
``hitl worker``, ``hitl serve``, a node's own code) collects as Python always does."""


def defer_first_collection(gen0: int = STARTUP_GEN0) -> None:
    """Raise the GC's first threshold to ``gen0`` until its first collection, then
    restore the thresholds it had (see :data:`STARTUP_GEN0`)."""
    before = gc.get_threshold()
    if before[0] == 0 or before[0] >= gen0:  # collection disabled by threshold, or already this lax: leave it
        return

    done = False

    def restore(phase: str, info: dict[str, int]) -> None:
        nonlocal done
        if phase != "stop" or done:
            return
        done = True
        if gc.get_threshold()[0] == gen0:  # unless something set its own since
            gc.set_threshold(*before)
        # The GC calls its callbacks by index over the live list: removing one that
        # others follow would skip the next one's "stop". Last, it can go; else it stays, inert.
        if gc.callbacks and gc.callbacks[-1] is restore:
            gc.callbacks.pop()

    gc.callbacks.append(restore)
    gc.set_threshold(gen0, *before[1:])


def main() -> None:
    """Console-script entry point: the GC's first collection deferred, then the
    group's :func:`console.cli.group.main` (imported here, after the deferral)."""
    defer_first_collection()
    from .group import main as group_main

    group_main()
