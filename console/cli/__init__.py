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

from console.times import age

# The command groups register themselves on `cli` when imported.
from . import audit, bulk, demo, notify, owners, reads, replay, start, transfer, workers, writes  # noqa: F401
from .group import cli, main
from .options import (
    CONFIG_NAME,
    Options,
    _opts,
    app_spec_option,
    common,
    open_store,
    operator_option,
    reason_option,
)
from .output import OperatorError, fail, interactive, out, out_json, run
from .render import render_plan, render_tree, tree_rows

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
