"""The action registry is the single source of keys: check it is consistent and
that bindings, help and commands really are derived from it."""

from __future__ import annotations

import pytest

from console.actions import ACTIONS, BY_ID, bindings, for_screen, lookup
from console.app import HitlApp
from console.screens.answer import AnswerScreen
from console.screens.audit import AuditScreen
from console.screens.command import CommandError, parse_command
from console.screens.graph import GraphScreen
from console.screens.inbox import InboxScreen
from console.screens.replay import ReplayScreen
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.event_log import EventLog
from console.widgets.node_tree import NodeTree
from console.widgets.plain import DataTable

OWNERS = {
    "app": HitlApp,
    "sessions": SessionsScreen,
    "inbox": InboxScreen,
    "session": SessionScreen,
    "log": EventLog,
    "replay": ReplayScreen,
    "answer": AnswerScreen,
    "graph": GraphScreen,
    "audit": AuditScreen,
    "table": DataTable,
    "tree": NodeTree,
}


def test_ids_are_dotted_and_unique():
    assert len({a.id for a in ACTIONS}) == len(ACTIONS)
    for a in ACTIONS:
        assert a.id.count(".") >= 1 and a.id == a.id.lower(), a.id


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.id)
def test_every_action_has_a_method_on_its_owner(action):
    for screen in action.screens:
        owner = OWNERS[screen]
        assert hasattr(owner, f"action_{action.action_name}"), f"{owner.__name__} lacks action_{action.action_name}"


def test_keys_do_not_clash_within_a_view():
    """Within a screen no key means two things. The navigation keys of the focused
    table, tree or log (``nav.*``) are checked apart: the ones a screen also binds
    (``/``, ``n``) step aside when they do not apply (test_vocabulary checks that)."""
    views = {
        "sessions": ("app", "sessions"),
        "inbox": ("app", "inbox"),
        "session": ("app", "session"),
        "replay": ("app", "replay"),  # its log (ReplayLog) binds no registry keys
        "answer": ("app", "answer"),
        "graph": ("app", "graph"),
        "audit": ("app", "audit"),
        "table": ("table",),
        "tree": ("tree",),
        "log": ("log",),
    }
    for view, screens in views.items():
        seen: dict[str, str] = {}
        for screen in screens:
            for a in for_screen(screen):
                if a.key is None:
                    continue
                assert a.key not in seen or seen[a.key] == a.id, f"{view}: {a.key} is {seen.get(a.key)} and {a.id}"
                seen[a.key] = a.id


def test_bindings_are_derived_with_ids():
    for screen, cls in OWNERS.items():
        registered = {a.id for a in for_screen(screen) if a.key}
        declared = {b.id for b in cls.BINDINGS if getattr(b, "id", None)}
        if screen == "app":
            registered.discard("app.palette")  # Textual's own palette binding, rebound by COMMAND_PALETTE_BINDING
        assert registered <= declared, f"{cls.__name__}: missing {registered - declared}"
    assert BY_ID["app.palette"].key == HitlApp.COMMAND_PALETTE_BINDING


def test_answering_actions_write_and_name_their_command():
    """Selecting, answering, re-driving and cancelling are real now, and all of
    them are disabled by --read-only; only the ones that append say writes=True
    (selecting ids and copying the command serve a write: write_flow=True)."""
    serve = {"interrupts.toggle", "interrupts.select_node", "interrupts.select_all", "answer.toggle", "answer.node",
             "answer.all", "answer.copy", "answer.view", "answer.apply_all"}
    for a in ACTIONS:
        if a.area in ("interrupts", "invocation", "answer") and a.id != "answer.reload":
            assert a.read_only_disabled and a.cli and a.cli.startswith("hitl "), a.id
            assert a.writes is (a.id not in serve) and a.write_flow is (a.id in serve), a.id
    assert BY_ID["interrupts.toggle"].binding().priority  # the tree would take space otherwise


def test_every_action_names_a_cli_equivalent_or_is_pure_ui():
    ui_only = {"app.command", "app.palette", "app.back", "app.quit", "sessions.sort", "tree.collapse_all",
               "replay.faster", "replay.slower", "replay.mark"}
    for a in ACTIONS:
        pure_ui = a.id in ui_only or a.area == "nav" or ".sort." in a.id  # column sorts: sessions, inbox, audit
        assert a.cli or pure_ui, a.id


def test_lookup_resolves_parametrised_actions():
    assert lookup("sessions", "set_status", ("waiting",)).id == "sessions.status.waiting"  # type: ignore[union-attr]
    assert lookup("sessions", "set_status", (None,)).id == "sessions.status.all"  # type: ignore[union-attr]
    assert lookup("session", "answer").id == "interrupts.answer"  # type: ignore[union-attr]
    assert lookup("session", "nope") is None


def test_palette_titles_are_area_verb():
    assert BY_ID["tree.next_waiting"].title == "Tree: Move to the next WAITING node"
    assert BY_ID["sessions.open"].title == "Sessions: Open the selected session"


def test_parse_command():
    c = parse_command(":sessions status=waiting app=refunds foo")
    assert (c.name, c.args, c.options) == ("sessions", ["foo"], {"status": "waiting", "app": "refunds"})
    assert parse_command("q").name == "quit"
    assert parse_command("open s-1 inv-2").args == ["s-1", "inv-2"]
    assert parse_command("tree.follow").name == "tree.follow"
    with pytest.raises(CommandError, match="unknown command :bogus"):
        parse_command("bogus")
    with pytest.raises(CommandError, match="empty"):
        parse_command(":  ")


def test_bindings_helper_matches_registry():
    assert [b.id for b in bindings("log")] == [a.id for a in for_screen("log")]


# A value for each placeholder the ``cli=`` templates use.
PLACEHOLDERS = {
    "session_id": "refund-waiting-1",
    "invocation_id": "72b1ebac39e8",
    "interrupt_id": "finance-order-1001",
    "answers": "finance-order-1001=true",
    "status": "waiting",
    "text": "refund",
    "position": "3",
    "mark": "1",
}


@pytest.mark.parametrize("action", [a for a in ACTIONS if a.cli], ids=lambda a: a.id)
def test_every_cli_template_is_a_command_the_cli_accepts(action):
    """The help screen and the palette show ``action.cli`` as the equivalent
    shell command: it must parse against the real click group (command, options
    and arguments), or an operator copies a command that does not exist."""
    import shlex

    import click

    from console.cli import cli

    words = shlex.split(action.cli.format(**PLACEHOLDERS))
    assert words[0] == "hitl", action.cli
    if words[1:] == ["--help"]:
        with pytest.raises(click.exceptions.Exit) as done:
            cli.make_context("hitl", ["--help"])
        assert done.value.exit_code == 0
        return
    ctx = cli.make_context("hitl", words[1:], resilient_parsing=False)
    # click 8 keeps the subcommand apart from the rest; click 9 will keep it in args.
    args = [*getattr(ctx, "_protected_args", []), *ctx.args]
    if not args:  # `hitl --help` or the bare console
        return
    command = cli.get_command(ctx, args[0])
    assert command is not None, f"{action.id}: no command {args[0]!r} in {action.cli!r}"
    try:
        command.make_context(args[0], args[1:], parent=ctx)
    except click.UsageError as exc:
        raise AssertionError(f"{action.id}: {action.cli!r} does not parse: {exc.format_message()}") from exc
