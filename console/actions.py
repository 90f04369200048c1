"""The one registry of operator actions.

Every thing an operator can do in the console has one dotted id here
(``sessions.open``, ``tree.next_waiting``, ``interrupts.answer`` ...). Key
bindings (``Binding(..., id=...)``, so a keymap can rebind them), the footer,
the help screen (``?``), the command palette and ``:`` command mode are all
derived from :data:`ACTIONS`. Keys that are not operator actions stay with their
widgets and modals (cursor keys of the event log and replay panels, a dialog's
confirm/back/close): they are not in the footer, the help or the palette. Each action also
names the headless ``hitl`` command that does the same thing, so a runbook can
repeat what an operator did.

``screen`` says where an action is bound: ``app`` (everywhere), a screen
(``sessions``, ``inbox``, ``session``, ``answer``) or a widget (``log``). ``writes=True``
marks actions that append to the store; ``write_flow=True`` those that write
nothing themselves but only serve a write (selecting ids to answer, copying the
resume command). ``--read-only`` disables both (:attr:`Action.read_only_disabled`;
``READ_ONLY_DRY_RUN`` keeps the response editor's dry run open).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.actions import parse
from textual.binding import Binding, BindingType

from engine.status import STATUS_CYCLE

NAV = ("table", "tree", "log")
"""The widget areas of the navigation keys: every DataTable, the node tree, the event log."""

READ_ONLY_DRY_RUN = frozenset({"interrupts.answer", "inbox.bulk_answer", "graph.answer"})
"""Write actions that still open in read-only mode: the editor, for a dry run (submitting stays disabled)."""

AREA_TITLES: dict[str, str] = {
    "nav": "Navigate",
    "table": "Table",
    "tree": "Tree",
    "app": "App",
    "sessions": "Sessions",
    "inbox": "Inbox",
    "session": "Session",
    "log": "Log",
    "interrupts": "Interrupts",
    "invocation": "Invocation",
    "replay": "Replay",
    "graph": "Graph",
    "workers": "Workers",
    "audit": "Audit",
}
"""Palette title prefix (``Area: Verb``) by the first part of an action id."""


@dataclass(frozen=True)
class Action:
    """One operator action."""

    id: str
    """Dotted id, unique; also the Binding id (keymaps use it)."""
    key: str | None
    """Textual key name (``enter``, ``slash``, ``R``...); None: palette/command only."""
    label: str
    """Short footer text."""
    description: str
    """One sentence for the help screen and the palette."""
    screen: str | tuple[str, ...]
    """Where it is bound: ``app``, ``sessions``, ``inbox``, ``session``, ``replay`` or ``log`` (or several)."""
    method: str
    """Textual action string run on the owner (``open_selected``, ``set_status('waiting')``)."""
    cli: str | None = None
    """The equivalent headless command (a template with ``{placeholders}``)."""
    writes: bool = False
    """Appends to the store; disabled by ``--read-only``."""
    write_flow: bool = False
    """Writes nothing itself, only serves a write (selects ids to answer, copies
    the resume command); disabled by ``--read-only`` like the write."""
    show: bool = True
    """Shown in the footer."""
    command: str | None = None
    """Name in ``:`` command mode (besides the id itself)."""
    key_display: str | None = None
    priority: bool = False
    """Bound with priority: the key reaches the screen before the focused widget
    (``space`` on the session screen, which the tree would otherwise take)."""
    footer_rank: int = 50
    """When the footer is too short for every key (:mod:`console.widgets.footer`), the
    lower ranks stay (then the registry's order); the others are in the help and palette."""

    @property
    def read_only_disabled(self) -> bool:
        """``--read-only`` disables it: it writes, or only serves a write."""
        return self.writes or self.write_flow

    @property
    def words(self) -> str:
        """What it does, in words, for a refusal (``submit the answers as one message``):
        the description without its parenthesis, never the dotted id alone."""
        text = self.description.split(" (", 1)[0].rstrip(".")
        return text[:1].lower() + text[1:]

    @property
    def screens(self) -> tuple[str, ...]:
        return (self.screen,) if isinstance(self.screen, str) else self.screen

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def title(self) -> str:
        """``Area: Verb`` for the command palette."""
        return f"{AREA_TITLES.get(self.area, self.area.title())}: {self.description.rstrip('.')}"

    @property
    def action_name(self) -> str:
        """The method name Textual calls (``action_<name>``), without parameters."""
        return parse(self.method)[1]

    @property
    def params(self) -> tuple[object, ...]:
        return tuple(parse(self.method)[2])

    def binding(self) -> Binding:
        assert self.key is not None
        return Binding(
            self.key,
            self.method,
            self.label,
            show=self.show,
            id=self.id,
            key_display=self.key_display,
            tooltip=self.description,
            priority=self.priority,
        )


def _status(key: str, status: str | None, label: str) -> Action:
    arg = "None" if status is None else repr(status)
    return Action(
        f"sessions.status.{status or 'all'}",
        key,
        label,
        f"Show {status} sessions" if status else "Show all sessions (clears every filter: status, text, app, user)",
        "sessions",
        f"set_status({arg})",
        cli="hitl sessions" + (f" --status {status}" if status else ""),
        show=False,
    )


def _sorts(screen: str, columns: tuple[tuple[str, str, str], ...]) -> tuple[Action, ...]:
    """The column sorts of a table screen (``<screen>.sort.<column>``, shift+letter as in k9s;
    a header click does the same): :class:`console.screens.base.SortableRows` runs them."""
    return tuple(
        Action(f"{screen}.sort.{col}", key, label, f"Sort the loaded rows by {label} (again: reverse, a third "
               "time: back)", screen, f"sort_column({col!r})", show=False, key_display=key)
        for col, key, label in columns
    )


ACTIONS: tuple[Action, ...] = (
    # ---------------------------------------------------------------- global
    Action("app.help", "question_mark", "Help", "Keys of this screen", "app", "help", cli="hitl --help",
           command="help", key_display="?"),
    Action("app.command", "colon", "Cmd", "Command mode (:sessions status=waiting, :inbox, :open ID)", "app",
           "command_line", key_display=":", priority=True),  # priority: the command line opens before the keys typed after ':' are handed out
    Action("app.palette", "ctrl+p", "Palette", "Command palette", "app", "command_palette", show=False),
    Action("app.back", "escape", "Back", "Back to the previous screen", "app", "back", command="back",
           key_display="esc", show=False),
    Action("app.quit", "q,ctrl+c", "Quit", "Quit the console (asks first while a write started here runs)", "app",
           "quit", command="quit", show=False, key_display="q"),
    Action("sessions.show", "h", "Sessions", "Show the sessions list", "app", "show_sessions",
           cli="hitl sessions", command="sessions", show=False),
    Action("inbox.show", "i", "Inbox", "Show every open interrupt, oldest first", "app", "show_inbox",
           cli="hitl inbox", command="inbox"),
    Action("workers.show", None, "Workers", "Show the workers that run turns per app, and the queued turns", "app",
           "show_workers", cli="hitl workers", command="workers", show=False),
    Action("audit.show", None, "Audit", "Operator writes, newest first (:audit operator= session= action= "
           "since= until=)", "app", "show_audit", cli="hitl audit", command="audit"),
    # -------------------------------------------------------------- sessions
    Action("sessions.open", "enter", "Open", "Open the selected session", "sessions", "open_selected",
           cli="hitl show {session_id}", command="open", footer_rank=10),
    Action("sessions.filter", "slash", "Filter", "Search session ids, users, apps and interrupt ids", "sessions", "filter",
           cli="hitl sessions --text {text}", key_display="/"),
    Action("sessions.status_filter", "s", "Status", "Cycle the status filter", "sessions", "cycle_status",
           cli="hitl sessions --status {status}"),
    # 0 all, 1 waiting, 2 running, 3 failed, 4 completed, 5 cancelled, 6 interrupted (engine.status.STATUS_CYCLE)
    *(_status(str(n), s, s.title() if s else "All") for n, s in enumerate(STATUS_CYCLE)),
    Action("sessions.sort", "o", "Sort", "Sort by last activity / triage: due first, then oldest open interrupt", "sessions",
           "toggle_sort"),
    *_sorts("sessions", (("status", "S", "STATUS"), ("open", "O", "OPEN"), ("oldest", "W", "OLDEST waiting"),
                         ("app", "P", "APP"), ("user", "U", "USER"), ("session", "I", "SESSION id"),
                         ("active", "T", "ACTIVE"))),
    Action("sessions.refresh", "r", "Refresh", "Reload the list now", "sessions", "refresh", show=False,
           cli="hitl sessions"),
    # ----------------------------------------------------------------- inbox
    Action("inbox.open", "enter", "Jump", "Jump to the interrupt's node in its session", "inbox", "open_selected",
           cli="hitl show {session_id} --invocation {invocation_id}", footer_rank=10),
    Action("inbox.refresh", "r", "Refresh", "Reload the inbox now", "inbox", "refresh", show=False,
           cli="hitl inbox"),
    Action("inbox.filter", "slash", "Filter", "Filter by app=, node=, age>2h, text, payload fields (amount<50)",
           "inbox", "filter", cli="hitl inbox {text}"),
    Action("inbox.mark_all", "a", "Mark all", "Mark every row the filter shows (again: unmark them)", "inbox",
           "mark_all", cli="hitl bulk-answer {text} --answer JSON --dry-run", write_flow=True, show=False),
    Action("inbox.bulk_answer", "b", "Bulk", "One answer for the marked (else the filtered) rows: dry run, then "
           "one audited batch", "inbox", "bulk_answer", cli="hitl bulk-answer {text} --answer JSON --dry-run",
           writes=True),
    *_sorts("inbox", (("status", "S", "STATUS"), ("age", "W", "AGE (waiting since)"), ("due", "U", "DUE (time left)"),
                      ("interrupt", "D", "INTERRUPT id"),
                      ("session", "I", "SESSION id"), ("asks", "K", "ASKS"), ("node", "O", "NODE path"),
                      ("app", "P", "APP"), ("owner", "R", "OWNER"))),
    # Selecting ids and answering them: part of the write flow, so --read-only disables them too.
    Action("interrupts.toggle", "space", "Select", "Select / unselect the open ids of this node (or inbox row)",
           ("inbox", "session"), "toggle_interrupt", cli="hitl resume {session_id} {interrupt_id}=JSON",
           write_flow=True, show=False, priority=True),
    Action("interrupts.select_node", "a", "Node ids", "Select every open id of this node (and of nodes below it)",
           "session", "select_node", cli="hitl resume {session_id} {interrupt_id}=JSON",
           write_flow=True, show=False),
    Action("interrupts.select_all", "A", "All ids", "Select every open id of this invocation", ("inbox", "session"),
           "select_invocation", cli="hitl resume {session_id} {interrupt_id}=JSON --invocation {invocation_id}",
           write_flow=True, show=False),
    Action("interrupts.claim", "c", "Claim", "Claim the selected ids (else this node's, or the marked rows) for "
           "yourself; again: release them", ("inbox", "session"), "claim",
           cli="hitl claim {session_id} {interrupt_id}", writes=True, show=False),
    Action("interrupts.assign", "C", "Assign", "Assign the selected ids (else this node's, or the marked rows) to "
           "an operator or @group", ("inbox", "session"), "assign",
           cli="hitl assign {session_id} {interrupt_id} --to NAME", writes=True, show=False),
    Action("interrupts.answer", "e", "Answer", "Answer the selected ids (else this node's) in the response editor",
           ("inbox", "session"), "answer",
           cli="hitl resume {session_id} {interrupt_id}=JSON --invocation {invocation_id}", writes=True,
           footer_rank=10),
    # ----------------------------------------------------------------- audit
    Action("audit.open", "enter", "Open", "Open the session the write went to", "audit", "open_selected",
           cli="hitl show {session_id} --invocation {invocation_id}"),
    Action("audit.refresh", "r", "Refresh", "Reload the audit log now", "audit", "refresh", show=False,
           cli="hitl audit"),
    *_sorts("audit", (("time", "T", "TIME"), ("action", "A", "ACTION"), ("operator", "O", "OPERATOR"),
                      ("session", "I", "SESSION id"), ("invocation", "V", "INVOCATION"), ("what", "W", "WHAT"),
                      ("reason", "R", "REASON"))),
    # --------------------------------------------------------------- session
    Action("tree.next_waiting", "n", "Next", "Move to the next WAITING node", "session", "next_waiting",
           cli="hitl show {session_id} --invocation {invocation_id}", footer_rank=20),
    Action("tree.follow", "f", "Follow", "Follow live changes (cursor and log tail)", "session", "toggle_follow",
           cli="hitl events {session_id} --tail"),
    Action("tree.expand_all", "plus", "Expand", "Expand every node", "session", "expand_all", show=False,
           key_display="+", cli="hitl show {session_id} --all-runs"),
    Action("tree.collapse_all", "minus", "Collapse", "Collapse every node", "session", "collapse_all", show=False,
           key_display="-"),
    Action("session.invocations", "p", "Invocations", "Pick another invocation of this session", "session",
           "pick_invocation", cli="hitl show {session_id} --invocation {invocation_id}", footer_rank=60),
    Action("session.show_all", "w", "Whole", "Show the selected node's (or event's) values in full; the details "
           "pane shows a preview of large ones", "session", "show_all",
           cli="hitl show {session_id} --invocation {invocation_id} --json", show=False),
    Action("session.refresh", "r", "Reload", "Reload the session from the store", "session", "reload", show=False,
           cli="hitl show {session_id}"),
    Action("invocation.redrive", "R", "Re-drive", "Re-drive the failed or interrupted invocation (asks first)",
           "session", "redrive", cli="hitl redrive {session_id} {invocation_id}", writes=True),
    Action("invocation.cancel", "X", "Cancel", "Cancel the invocation with a reason (closes its open interrupts)",
           "session", "cancel", cli="hitl cancel {session_id} {invocation_id} --reason TEXT", writes=True),
    # ----------------------------------------------------------------- graph
    Action("session.graph", "v", "Graph", "Draw the invocation as a graph (edges, groups, what an answer would run)",
           "session", "open_graph", cli="hitl show {session_id} --invocation {invocation_id} --graph",
           command="graph", footer_rank=30),
    Action("graph.reload", "r", "Redraw", "Redraw the graph from the session as it is now", "graph", "reload",
           cli="hitl show {session_id} --invocation {invocation_id} --graph"),
    Action("graph.down", "j", "Next node", "Pick the next node of the graph (its name shows above the picture)",
           "graph", "pick(1)", cli="hitl show {session_id} --invocation {invocation_id} --graph"),
    Action("graph.up", "k", "Prev node", "Pick the previous node of the graph", "graph", "pick(-1)",
           cli="hitl show {session_id} --invocation {invocation_id} --graph", show=False),
    Action("graph.open", "enter", "Open", "Open the picked node in the session's node tree", "graph", "open_node",
           cli="hitl show {session_id} --invocation {invocation_id}", footer_rank=10),
    Action("graph.answer", "e", "Answer", "Answer the picked waiting node's open ids in the response editor",
           "graph", "answer_node", cli="hitl resume {session_id} {answers} --invocation {invocation_id}",
           write_flow=True, footer_rank=10),
    # ------------------------------------------------------------ navigation
    # Bound on every table, tree and log (console.widgets.nav.Navigable); keys that do
    # not apply now (; without a find, / where the screen has its own filter) fall
    # through to the screen.
    *(Action(f"nav.{name}", key, label, desc, NAV, method, show=False, key_display=disp)
      for name, key, label, desc, method, disp in (
        ("down", "j", "Down", "Move the cursor down", "nav_move(1)", "j"),
        ("up", "k", "Up", "Move the cursor up", "nav_move(-1)", "k"),
        ("first", "g", "First", "Move to the first line", "nav_first('g')", "g"),
        ("home", "home", "First", "Move to the first line", "nav_first('home')", "home"),
        ("last", "G", "Last", "Move to the last line (loaded so far)", "nav_last('G')", "G"),
        ("end", "end", "Last", "Move to the last line (loaded so far)", "nav_last('end')", "end"),
        ("half_down", "ctrl+d", "½ down", "Move half a page down", "nav_half(1)", "^d"),
        ("half_up", "ctrl+u", "½ up", "Move half a page up", "nav_half(-1)", "^u"),
        # ; and , (vim's repeat keys), not n / N: on the session screen n is the next waiting node, always
        ("find", "slash", "Find", "Find text in this list (then ; / ,)", "find", "/"),
        ("next_match", "semicolon", "Next match", "Move to the next match of the find", "find_next(1)", ";"),
        ("prev_match", "comma", "Prev match", "Move to the previous match of the find", "find_next(-1)", ","),
    )),
    Action("nav.copy", "y", "Copy", "Copy the id, path or event JSON under the cursor (OSC 52)", NAV, "copy",
           key_display="y", show=False),
    # ---------------------------------------------------------------- answer
    # The response editor (console.screens.answer). Its text areas take printable
    # keys, so only ctrl keys reach these while an answer is being typed.
    Action("answer.submit", "ctrl+s", "Submit", "Submit the answers as one message (asks operator and reason)",
           "answer", "submit", cli="hitl resume {session_id} {answers} --invocation {invocation_id}", writes=True),
    Action("answer.toggle", "space", "Select", "Select / unselect the highlighted id", "answer", "toggle_highlighted",
           cli="hitl resume {session_id} {interrupt_id}=JSON", write_flow=True, show=False),
    Action("answer.node", "a", "Node ids", "Select every open id of the highlighted id's node", "answer",
           "select_node", cli="hitl resume {session_id} {interrupt_id}=JSON", write_flow=True, show=False),
    Action("answer.all", "A", "All ids", "Select every open id of the invocation", "answer", "select_all",
           cli="hitl resume {session_id} {answers} --invocation {invocation_id}", write_flow=True, show=False),
    Action("answer.reload", "ctrl+r", "Reload", "Reload the open ids from the store and re-apply the answers",
           "answer", "reload", cli="hitl show {session_id} --invocation {invocation_id}"),
    Action("answer.copy", "ctrl+o", "Copy cmd", "Copy the equivalent hitl resume command", "answer", "copy_command",
           cli="hitl resume {session_id} {answers} --invocation {invocation_id}", write_flow=True),
    Action("answer.view", "ctrl+t", "Form/JSON", "Show the answer under the cursor as a form or as JSON (same value)",
           "answer", "toggle_view", cli="hitl resume {session_id} {interrupt_id}=JSON", write_flow=True),
    Action("answer.apply_all", "ctrl+g", "Apply to all", "Give every selected id with the same schema this answer",
           "answer", "apply_all", cli="hitl resume {session_id} {answers} --invocation {invocation_id}",
           write_flow=True),
    # ---------------------------------------------------------------- replay
    # Read-only by construction: nothing bound on the replay screen writes.
    Action("replay.open", "t", "Replay", "Replay this session's history, event by event", "session", "open_replay",
           cli="hitl replay {session_id}", command="replay", footer_rank=30),
    Action("replay.step", "right_square_bracket", "Step", "Step one event forward", "replay", "step(1)",
           cli="hitl replay {session_id} --at {position}", key_display="]"),
    Action("replay.step_back", "left_square_bracket", "Back", "Step one event back", "replay", "step(-1)",
           cli="hitl replay {session_id} --at {position}", key_display="["),
    Action("replay.next_action", "right_curly_bracket", "Next act", "Jump to the next operator action "
           "(answer, re-drive, cancel)", "replay", "next_action", cli="hitl replay {session_id} --at {position}",
           key_display="}"),
    Action("replay.prev_action", "left_curly_bracket", "Prev act", "Jump to the previous operator action", "replay",
           "prev_action", cli="hitl replay {session_id} --at {position}", key_display="{"),
    Action("replay.start", "g", "Start", "Jump to the start (before the first event)", "replay", "start",
           cli="hitl replay {session_id} --at 0", show=False),
    Action("replay.end", "G", "End", "Jump to the end (the session as it is now)", "replay", "end",
           cli="hitl replay {session_id} --at {position}", show=False),
    Action("replay.at", None, "At", "Jump to event N (:at N)", "replay", "at",
           cli="hitl replay {session_id} --at {position}", command="at"),
    Action("replay.play", "p", "Play", "Play / pause through the events", "replay", "toggle_play",
           cli="hitl replay {session_id}"),
    Action("replay.faster", "plus", "Faster", "Play faster", "replay", "speed(1)", show=False, key_display="+"),
    Action("replay.slower", "minus", "Slower", "Play slower", "replay", "speed(-1)", show=False, key_display="-"),
    Action("replay.mark", "m", "Mark", "Mark this position (one end of a diff)", "replay", "mark"),
    Action("replay.diff", "d", "Diff", "What changed between the mark and here", "replay", "diff",
           cli="hitl replay {session_id} --at {position} --diff-from {mark}"),
)
"""Every operator action, in help-screen order."""

BY_ID: dict[str, Action] = {a.id: a for a in ACTIONS}
assert len(BY_ID) == len(ACTIONS), "duplicate action id"

BY_COMMAND: dict[str, Action] = {a.command: a for a in ACTIONS if a.command}
COMMAND_ALIASES: dict[str, str] = {"q": "quit", "s": "sessions", "o": "open", "?": "help"}


def for_screen(screen: str) -> list[Action]:
    return [a for a in ACTIONS if screen in a.screens]


def bindings(screen: str) -> list[BindingType]:
    """The Textual bindings of one screen (or ``app``/``log``), from the registry
    (typed as Textual's ``BINDINGS`` is, so a screen assigns them as they are)."""
    return [a.binding() for a in for_screen(screen) if a.key is not None]


def lookup(screen: str, action_name: str, params: Iterable[object] = ()) -> Action | None:
    """The registry entry behind a Textual action call on ``screen``."""
    params = tuple(params)
    for a in ACTIONS:
        if screen in a.screens and a.action_name == action_name and (not a.params or a.params == params):
            return a
    return None

