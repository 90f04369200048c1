"""The hitl console: a Textual app over a ``SessionStore``.

``run_app(db_path, read_only=..., registry=...)`` is what ``hitl`` calls: it
opens the SQLite store inside the app (in a worker) and shows the sessions
list. Tests and embedders build :class:`HitlApp` directly with any store (a
``MemoryStore`` works), a ``clock`` so ages render deterministically, and
``poll_interval=None`` to freeze live updates.

Screens: Sessions (home) → Session (node tree, details, event log) → Replay
(its history, event by event, read-only); Inbox (every open interrupt) → Session
at that node; Help (``?``); ``:`` command mode; the command palette
(``ctrl+p``). Every key comes from :mod:`console.actions`. ``replay=`` opens on
the Replay screen (``hitl replay --ui``); an exported ``.jsonl`` file needs no store.

``config=`` is the :class:`~console.config.ConsoleConfig` that ``hitl`` read
once (``--config``): its operator signs console writes, its registry runs
them, ``utc`` picks the zone of every time shown. Quitting (``q``, ``ctrl+q``,
``ctrl+c``, ``:quit``) while a write started here still runs asks first
(:class:`~console.screens.answer_dialogs.QuitGuard`; "wait for it" is the default).
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import work
from textual.actions import SkipAction
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, TextArea

from engine.apps import default_operator
from engine.redact import Redactor
from engine.status import SESSION_FILTERS
from engine.store.base import SessionStore
from engine.store.capabilities import WorkerQueue, capability

from .actions import ACTIONS, BY_COMMAND, BY_ID, READ_ONLY_DRY_RUN, Action, bindings, for_screen, lookup
from .answering.jobs import WriteJob
from .config import ConsoleConfig
from .messages import SessionQuery
from .screens.answer_dialogs import QUIT_NOW, QuitGuard
from .screens.audit import AuditFilterError, AuditQuery, AuditScreen
from .screens.base import HitlScreen
from .screens.command import ActionsProvider, CommandError, CommandLine, parse_command
from .screens.help import FORM_KEY_NAMES, HelpScreen, help_cache, sections_for
from .screens.inbox import InboxScreen
from .screens.loaders import one_line
from .screens.replay import ReplayScreen, ReplaySource
from .screens.session import SessionScreen
from .screens.sessions import SessionsScreen
from .text import clean
from .themes import save_theme, status_variables
from .times import use_utc
from .widgets.plain import Static

if TYPE_CHECKING:
    from engine.permissions import Policy

SESSION_STATUSES = set(SESSION_FILTERS)
_S = TypeVar("_S", bound=Screen[Any])



class HitlApp(App[None]):
    """The operator console."""

    CSS_PATH = "app.tcss"
    TITLE = "hitl console"
    BINDINGS: ClassVar[list[BindingType]] = [
        b for b in bindings("app") if not (isinstance(b, Binding) and b.action == "command_palette")
    ]
    COMMAND_PALETTE_BINDING = BY_ID["app.palette"].key or "ctrl+p"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {ActionsProvider}

    def __init__(
        self,
        store: SessionStore | None = None,
        *,
        db_path: str | os.PathLike[str] | None = None,
        read_only: bool = False,
        registry: Any = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float | None = 0.5,
        refresh_interval: float | None = 2.0,
        cursor_blink: bool = True,
        replay: ReplaySource | None = None,
        show_secrets: bool = False,
        secret_patterns: Iterable[str] | None = None,
        operator: str | None = None,
        read_only_reason: str | None = None,
        store_options: dict[str, Any] | None = None,
        screenshot_dir: str | os.PathLike[str] | None = None,
        screenshot_limit: int | None = None,
        config: ConsoleConfig | None = None,
        utc: bool | None = None,
    ) -> None:
        super().__init__()
        from engine.telemetry import set_surface

        set_surface("console")  # what this process's writes are, in spans and hitl_answers_total
        self.running_writes: list[WriteJob] = []
        """Writes started from this console that have not settled (answer, re-drive, cancel)."""
        self._quit_guard: QuitGuard | None = None
        self._quit_waiting = False
        self._read_only_note: Any = None
        """The toast of the last write key refused read-only (the next one replaces it)."""
        """The operator chose "wait for it": quit when the last running write settles."""
        self.config = config if config is not None else ConsoleConfig(operator=default_operator())
        """hitl.toml and the command line, read once by ``hitl`` (None: ./hitl.toml's operator or $USER)."""
        from engine.permissions import use_policy

        use_policy(self.config.path)  # the writes check who may answer with this file's rules
        if registry is None:
            registry = self.config.registry
        if utc is None and config is not None:
            utc = config.utc
        if utc is not None:
            use_utc(utc)  # every time on screen: UTC, or the local zone
        self.store_options = dict(store_options or {})
        """Backend options for opening ``db_path`` (a PostgreSQL password from hitl.toml)."""
        self.screenshot_dir = Path(
            screenshot_dir or os.environ.get("HITL_SCREENSHOT_DIR") or Path.home() / "hitl-screenshots"
        )
        """Where the palette's screenshot goes (created when needed; the toast says the file)."""
        self.screenshot_limit = screenshot_limit
        """At most this many screenshots from this console (``hitl serve``: a browser user
        must not fill the server's disk); None: no limit."""
        self._screenshots = 0
        patterns = self.config.secret_patterns if secret_patterns is None else tuple(secret_patterns)
        self.redactor = Redactor(patterns, show=show_secrets)
        """The one masking policy of this console (the config's patterns + --show-secrets):
        every screen passes it to the renderers it calls (no module keeps one)."""
        self._store = store
        self.db_path = db_path
        self.read_only = read_only
        """Every action with ``writes=True`` or ``write_flow=True`` is disabled, and the store is opened read-only."""
        self.registry = registry
        """The app registry (``engine.apps``), needed by write actions; may be None."""
        self.clock = clock
        """Returns "now" (epoch seconds): ages are computed against it."""
        self.poll_interval = poll_interval
        """Seconds between reads of new events on the session screen (None: no live updates)."""
        self.refresh_interval = refresh_interval
        """Seconds between refreshes of the sessions list and the inbox (None: never)."""
        self.cursor_blink = cursor_blink
        self.replay_source = replay
        """Open on the Replay screen of this session or exported file (a file needs no store)."""
        self.operator = operator
        """Who is signed in (``hitl serve``): every write is recorded under this name and the
        confirmation does not let it be changed. None: the confirmation offers the config's operator."""
        self.read_only_reason = read_only_reason
        """Why writes are disabled, said when a write key is pressed read-only (``hitl serve``:
        the viewer role). None: the plain ``--read-only`` wording."""
        self._owns_store = store is None
        if store is not None:
            self.store_label = "memory store" if type(store).__name__ == "MemoryStore" else str(getattr(store, "path", ""))
        else:
            from engine.store.factory import store_label

            self.store_label = store_label(db_path) if db_path else "default store"
        if replay is not None and replay.file is not None and store is None:
            self.store_label = f"file {replay.file}"
        if self.config.theme and self.config.theme in self.available_themes:
            self.theme = self.config.theme  # [console] theme: the one chosen last time

    # ------------------------------------------------------------ themes
    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables plus the status colours, readable on this theme
        (:func:`console.themes.status_variables`)."""
        variables = super().get_css_variables()
        variables.update(status_variables(variables))
        return variables

    def _theme_chosen(self, theme: Any) -> None:
        """A theme picked in the palette (or set at run time) is kept in hitl.toml."""
        path = self.config.save_path
        if path is None or theme.name == self.config.theme:
            return
        said = save_theme(path, theme.name)
        self.config = replace(self.config, theme=theme.name)
        self.notify(said, severity="warning" if "not saved" in said else "information", timeout=6)

    # ------------------------------------------------------------ quitting
    def write_started(self, job: WriteJob) -> None:
        """A console-started write runs (an app worker): quitting asks first until it settles."""
        self.running_writes.append(job)

    def write_settled(self, job: WriteJob) -> None:
        with contextlib.suppress(ValueError):
            self.running_writes.remove(job)
        if not self.running_writes and self._quit_guard is not None:
            guard, self._quit_guard = self._quit_guard, None
            if self._quit_waiting:
                self.exit()
            elif guard.is_attached:
                guard.dismiss(None)  # nothing left to wait for: the dialog has no question any more

    async def action_quit(self) -> None:
        """``q``, ``ctrl+q``, ``:quit``: at once, unless a write started here is still running."""
        self._quit()

    def action_help_quit(self) -> None:
        """Textual's own ``ctrl+c`` binding: quits like ``q`` (the registry binds
        ``ctrl+c`` to ``app.quit`` too), asking first while a write runs."""
        self._quit()

    def _quit(self) -> None:
        if self.running_writes:
            self._ask_before_quitting()
            return
        self.exit()

    def _ask_before_quitting(self) -> None:
        if self._quit_guard is not None:
            return  # already asking
        running = [f"{j.kind} of session {j.session_id}, invocation {j.invocation_id}" for j in self.running_writes]
        guard = QuitGuard(running)
        self._quit_guard, self._quit_waiting = guard, False

        def chosen(choice: str | None) -> None:
            if self._quit_guard is guard:
                self._quit_guard = None
            self._quit_waiting = False
            if choice == QUIT_NOW:
                self._quit_now()

        self.push_screen(guard, chosen)

    def quit_when_settled(self, guard: QuitGuard) -> None:
        """The guard's default: wait for every running write, then quit."""
        if not self.running_writes:
            self.exit()
            return
        self._quit_waiting = True
        guard.waiting()

    def _quit_now(self) -> None:
        """The operator insisted: stop the turns (the Runner revokes their leases, so
        they stay interrupted mid-run, never cancelled) and say how to continue."""
        stopped = list(self.running_writes)
        for worker in self.workers:
            if worker.group == "hitl-write":
                worker.cancel()
        lines = [
            f"Stopped mid-run: {j.kind} of session {j.session_id}, invocation {j.invocation_id}; "
            f"check its nodes in doubt, then continue it: hitl redrive {j.session_id} {j.invocation_id} --ack-in-doubt"
            for j in stopped
        ]
        self.quit_message = "\n".join(lines)
        """Printed after the console closed (what was stopped, how to continue)."""
        self.exit(message=self.quit_message or None)

    @property
    def default_operator(self) -> str:
        """The operator a write is recorded under unless changed in the confirmation:
        the signed-in one (``hitl serve``), else the config's ([console] operator, $USER)."""
        return self.operator or self.config.operator

    @property
    def policy(self) -> Policy:
        """Groups, who may answer and the stale-claim age (:mod:`engine.permissions`):
        the config file's; a malformed one allows everything here and the writes refuse saying why."""
        from engine.errors import HitlError
        from engine.permissions import Policy, load_policy

        if getattr(self, "_policy", None) is None:  # read once: every inbox row asks
            try:
                self._policy = load_policy(self.config.path)
            except HitlError:
                self._policy = Policy()
        return self._policy

    # ------------------------------------------------------------ store
    @property
    def store(self) -> SessionStore:
        if self._store is None:
            raise RuntimeError("the store is not open yet")
        return self._store

    def compose(self) -> ComposeResult:
        yield Static(f"Opening {self.store_label}…", id="splash")
        yield Footer(compact=True)

    @property
    def storeless(self) -> bool:
        """Replaying an exported file: there is no store to browse."""
        return self._store is None and self.replay_source is not None and self.replay_source.file is not None

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_chosen)
        source = self.replay_source
        if self.storeless and source is not None:
            self.push_screen(ReplayScreen(source))
        elif self._store is None:
            self._open_store()
        else:
            self._start()

    def _start(self) -> None:
        self.push_screen(SessionsScreen())
        self.call_after_refresh(self._freeze_startup)
        if self.is_web:
            # In a browser the page gives the terminal the keyboard as it loads (hitl serve's
            # hitl.js), before this screen exists: say so now, so its footer shows its keys.
            from textual import events

            self.call_after_refresh(self.post_message, events.AppFocus())
        if self.replay_source is not None:
            self.push_screen(ReplayScreen(self.replay_source))
        if capability(self._store, WorkerQueue) is not None:  # a store that keeps workers: the title bar counts them
            self._read_workers()
            if self.refresh_interval:
                self.set_interval(self.refresh_interval, self._read_workers)

    failing_channels: list[str] = []
    """Notification channels that failed for good (engine.store.notify.failing_channels): named in the title bar."""
    worker_view: tuple[list[Any], list[Any], float] | None = None
    """The workers' heartbeats, the queued turns and when they were read (None: not yet,
    or a store without workers): the title bars' worker count."""

    @work(group="worker-badge", exclusive=True, exit_on_error=False)
    async def _read_workers(self) -> None:
        """Read the workers and the queued turns, then redraw every screen's worker count."""
        store = self.store
        if (q := capability(store, WorkerQueue)) is None:
            return
        try:
            rows = await q.list_workers()
            queued = await q.turn_requests()
        except Exception:  # noqa: BLE001 -- a failed read keeps the last count; the next refresh retries
            return
        self.worker_view = (rows, queued, self.clock())
        try:
            from engine.store.notify import failing_channels

            self.failing_channels = await failing_channels(store)
        except Exception:  # noqa: BLE001 -- as above: the last verdict stands until a read succeeds
            pass
        for screen in self.screen_stack:
            if isinstance(screen, HitlScreen):
                screen.show_worker_badge()

    def can_show_sessions(self, query: SessionQuery | None = None) -> bool:
        return not self.storeless

    def can_show_inbox(self, app_name: str | None = None) -> bool:
        return not self.storeless

    @work(exclusive=True, group="open-store", exit_on_error=False)
    async def _open_store(self) -> None:
        try:
            from engine.store.factory import default_db_path, open_store, store_label

            target = self.db_path if self.db_path is not None else default_db_path()
            self._store = await open_store(target, read_only=self.read_only, **self.store_options)
            self.store_label = store_label(target)
        except Exception as e:  # noqa: BLE001 -- told to the operator, never a traceback
            text = one_line(e)
            self.query_one("#splash", Static).update(f"Cannot open the session store.\n\n{text}\n\nPress q to quit.")
            self.notify(text, severity="error", timeout=15)
            return
        self._start()

    def _freeze_startup(self) -> None:
        """Leave what the started console holds (modules, styles, its first screen) out
        of the cyclic collector's full passes: one took 40-80 ms over it, inside
        whichever key it fell on. Garbage among it is freed when the app ends, or
        sooner: the last long-history screen to close (console/heap.py) hands
        everything back to the collector -- a frozen set kept for the app's life
        would also keep the cycles of every screen open when a later freeze came."""
        gc.freeze()

    async def on_unmount(self) -> None:
        gc.unfreeze()
        if self._owns_store and self._store is not None:
            with contextlib.suppress(Exception):  # closing on exit must not raise
                await self._store.close()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast is literal text (data is never markup), with terminal control neutralised."""
        super().notify(clean(message), title=clean(title, one_line=True), severity=severity, timeout=timeout, markup=False)

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Save an SVG of the screen in :attr:`screenshot_dir` and say where (or why not)."""
        where = Path(path) if path else self.screenshot_dir
        if self.screenshot_limit is not None and self._screenshots >= self.screenshot_limit:
            self.notify(f"Screenshot not saved: this console has saved its {self.screenshot_limit} "
                        "(the server's limit per console).", severity="warning", timeout=10)
            return None
        self._screenshots += 1
        try:
            where.mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(filename, str(where), time_format)
        except OSError as e:
            self.notify(f"Screenshot not saved to {where}: {one_line(e)}", severity="error", timeout=10)
            return None
        self.notify(f"Screenshot saved to {saved}", title="Screenshot", timeout=10)
        return saved

    def _refuse_read_only(self, message: str) -> None:
        """One toast for refused write keys, replaced by the next one (not a stack over the screen)."""
        from textual.notifications import Notification, Notify

        if self._read_only_note is not None:
            self._unnotify(self._read_only_note)
        self._read_only_note = note = Notification(clean(message), "", "warning", self.NOTIFICATION_TIMEOUT)
        self.post_message(Notify(note))

    def _on_notify(self, event: Any) -> None:
        note = event.notification
        if note.message.startswith("Read-only: ") and self._read_only_note is not None and note is not self._read_only_note:
            return  # a refused-key toast already replaced before it was shown
        super()._on_notify(event)

    async def run_action(self, action: Any, default_namespace: Any = None, namespaces: Any = None) -> bool:
        """A key bound to a write in read-only mode says why it does nothing
        (Textual would pass a disabled binding over without a word)."""
        if self.read_only and isinstance(action, str):
            with contextlib.suppress(Exception):
                _, name, params = parse_action(action)
                area = getattr(default_namespace, "AREA", "") or ("app" if default_namespace is self else "log")
                entry = lookup(area, name, params)
                if entry is not None and entry.read_only_disabled and entry.id not in READ_ONLY_DRY_RUN:
                    why = self.read_only_reason or (
                        "it writes to the store. Start hitl without --read-only to do this"
                    )
                    self._refuse_read_only(f"Read-only: {entry.label} is disabled -- {why}.")
                    return True
        return await super().run_action(action, default_namespace, namespaces)

    # ------------------------------------------------------------ registry plumbing
    def owner_of(self, action: Action, screen: Screen[Any]) -> Any | None:
        """The object that runs ``action`` on ``screen`` (app, the screen, or its log widget)."""
        if "app" in action.screens:
            return self
        if isinstance(screen, HitlScreen) and screen.AREA in action.screens:
            return screen
        focused = screen.focused
        if focused is not None and getattr(focused, "AREA", None) in action.screens:
            return focused  # a navigation key of the focused table, tree or log
        if "log" in action.screens and isinstance(screen, SessionScreen):
            from .widgets.event_log import EventLog

            return screen.query_one(EventLog)
        return None

    def action_state(self, action: Action, owner: Any) -> bool | None:
        """True: enabled; None: shown but disabled (read-only, or does not apply now).
        In read-only mode the response editor still opens, for a dry run."""
        if action.read_only_disabled and self.read_only and action.id not in READ_ONLY_DRY_RUN:
            return None
        check = getattr(owner, f"can_{action.action_name}", None)
        if check is not None and not check(*action.params):
            return None
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = lookup("app", action, parameters)
        if entry is None:
            return True
        return self.action_state(entry, self)

    def applicable_actions(self, screen: Screen[Any]) -> list[tuple[Action, Callable[[], Any]]]:
        """What the palette offers on ``screen``: the actions that apply now."""
        out: list[tuple[Action, Callable[[], Any]]] = []
        for action in ACTIONS:
            owner = self.owner_of(action, screen)
            if owner is None or self.action_state(action, owner) is not True:
                continue
            out.append((action, partial(self._run_on, owner, action.method)))
        return out

    def _run_on(self, owner: Any, method: str) -> None:
        self.call_later(owner.run_action, method)

    # ------------------------------------------------------------ navigation
    def open_session(self, session_id: str, *, invocation_id: str | None = None, path: str | None = None) -> None:
        self.push_screen(SessionScreen(session_id, invocation_id, path))

    def _back_to(self, kind: type[_S]) -> _S | None:
        """Pop back to the screen of ``kind`` already on the stack, if there is one
        (the sessions, inbox and audit screens have fixed ids: a second instance
        pushed over the first would be a duplicate id -- the inbox, a session
        opened from it, then ``i`` again)."""
        if not any(isinstance(s, kind) for s in self.screen_stack):
            return None
        while not isinstance(self.screen, kind):
            self.pop_screen()
        return self.screen

    def _home(self) -> SessionsScreen | None:
        return self._back_to(SessionsScreen)

    def action_show_sessions(self, query: SessionQuery | None = None) -> None:
        home = self._home()
        if home is not None and query is not None:
            home.apply_query(query)

    def action_show_inbox(self, app_name: str | None = None) -> None:
        inbox = self._back_to(InboxScreen)
        if inbox is not None:
            if app_name != inbox.app_name:
                inbox.set_app(app_name)
            return
        if isinstance(self.screen, ModalScreen):
            self.pop_screen()
        self.push_screen(InboxScreen(app_name))

    def action_show_workers(self) -> None:
        """The workers screen, over rows read in a worker first."""
        store = self.store

        async def load() -> None:
            from .screens.workers import WorkersScreen

            if (q := capability(store, WorkerQueue)) is None:
                self.notify("this store keeps no workers", severity="warning")
                return
            rows = await q.list_workers()
            queued = await q.turn_requests()
            self.push_screen(WorkersScreen(rows, queued, self.clock()))

        self.run_worker(load(), group="workers", exclusive=True, exit_on_error=False)
    def action_show_audit(self, options: dict[str, str] | None = None) -> None:
        """The audit view (``:audit operator=... since=2h``); again on it: new filters."""
        try:
            query = AuditQuery.parse(options or {}, self.clock())
        except AuditFilterError as e:
            self.notify(str(e), severity="error")
            return
        audit = self._back_to(AuditScreen)
        if audit is not None:
            audit.set_query(query)
            return
        if isinstance(self.screen, ModalScreen):
            self.pop_screen()
        self.push_screen(AuditScreen(query))

    def command_show_audit(self, args: list[str], options: dict[str, str]) -> None:
        if args:
            self.notify(f"usage: :audit operator=NAME session=ID action=answer since=2h until=WHEN (not {args[0]!r})",
                        severity="error")
            return
        self.action_show_audit(options)

    def can_show_audit(self, options: dict[str, str] | None = None) -> bool:
        return not self.storeless

    async def action_back(self) -> None:
        screen = self.screen
        if isinstance(screen, HitlScreen) and screen.on_back():
            return
        if isinstance(screen, ModalScreen):
            screen.dismiss(None)
        elif len(self.screen_stack) > 2:
            self.pop_screen()

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        title, sections, form_keys = self.help_for(screen)
        self.push_screen(HelpScreen(title, sections, read_only=self.read_only, form_keys=form_keys))

    def warm_help(self, screen: Screen[Any]) -> None:
        """Lay ``screen``'s help out in the background (its first ``?`` shows it at once)."""
        _title, sections, form_keys = self.help_for(screen)
        help_cache(self).warm(self, sections, read_only=self.read_only, form_keys=form_keys)

    def help_for(self, screen: Screen[Any]) -> tuple[str, list[tuple[str, list[Action]]], bool]:
        """The help of ``screen``: its title, sections and whether it lists an answer form's keys."""
        by_screen = {
            s: for_screen(s) for s in ("app", "sessions", "inbox", "session", "log", "replay", "answer", "audit")
        }
        by_screen["nav"] = [a for a in ACTIONS if a.area == "nav"]
        by_screen["log"] = [a for a in by_screen["log"] if a.area != "nav"]
        areas = (*screen.HELP_AREAS, "nav", "app") if isinstance(screen, HitlScreen) else ("app",)
        title = {"sessions": "Sessions", "inbox": "Inbox", "session": "Session", "replay": "Replay", "answer": "Answer",
                 "audit": "Audit"}.get(
            getattr(screen, "AREA", ""), "Console"
        )
        taken = FORM_KEY_NAMES if "answer" in areas else ()
        return title, sections_for(areas, by_screen, taken), "answer" in areas

    def action_command_line(self) -> None:
        """``:`` opens the command line -- bound with priority, so that it is open
        before the keys typed after it are handed out (they go into it, see
        :meth:`CommandLine.on_key`); a ``:`` typed into a text field stays there."""
        if isinstance(self.focused, (Input, TextArea)):
            raise SkipAction()
        if isinstance(self.screen, CommandLine):
            return

        def done(text: str | None) -> None:
            if text:
                self.run_command(text)

        self.push_screen(CommandLine(), done)

    def run_command(self, text: str) -> None:
        """Execute one ``:`` command; errors become a notification."""
        try:
            cmd = parse_command(text)
        except CommandError as e:
            self.notify(str(e), severity="error")
            return
        opts, args = cmd.options, cmd.args
        if cmd.name == "sessions":
            status = opts.get("status")
            if status in ("all", ""):
                status = None
            if status is not None and status not in SESSION_STATUSES:
                self.notify(f"unknown status {status!r} (one of: {', '.join(sorted(SESSION_STATUSES))})", severity="error")
                return
            text_filter = opts.get("text") or (" ".join(args) or None)
            self.action_show_sessions(SessionQuery(status, text_filter, opts.get("app"), opts.get("user")))
        elif cmd.name == "inbox":
            self.action_show_inbox(opts.get("app"))
        elif cmd.name == "open":
            if not args:
                self.notify("usage: :open SESSION [INVOCATION]", severity="error")
                return
            self.open_session(args[0], invocation_id=args[1] if len(args) > 1 else opts.get("invocation"))
        else:
            action = BY_COMMAND.get(cmd.name) or BY_ID[cmd.name]
            owner = self.owner_of(action, self.screen)
            if owner is None:
                where = ", ".join(action.screens)
                self.notify(f"'{action.words}' applies on the {where} screen, not here", severity="error")
                return
            state = self.action_state(action, owner)
            if state is not True:
                reason = "read-only mode (it writes to the store)" if action.read_only_disabled and self.read_only else "it does not apply now"
                self.notify(f"Cannot {action.words}: {reason}", severity="warning")
                return
            takes_args = getattr(owner, f"command_{action.action_name}", None)
            if takes_args is not None and (args or opts):
                self.call_later(takes_args, args, opts)  # e.g. ":at 120" on the replay screen
                return
            self._run_on(owner, action.method)


def run_app(
    db_path: str | os.PathLike[str] | None,
    read_only: bool = False,
    registry: Any = None,
    replay: ReplaySource | None = None,
    show_secrets: bool = False,
    secret_patterns: Iterable[str] | None = None,
    store_options: dict[str, Any] | None = None,
    headless: bool = False,
    config: ConsoleConfig | None = None,
) -> None:
    """Run the console on the store at ``db_path``, a path or a URL (None: the default file);
    ``replay``: open on the Replay screen of a session or of an exported file.
    Values of secret-looking keys are masked unless ``show_secrets``.
    A crash of the console exits non-zero (SystemExit with the app's return code)."""
    app = HitlApp(
        db_path=db_path if db_path is None or isinstance(db_path, str) and "://" in db_path else Path(db_path),
        read_only=read_only,
        registry=registry,
        replay=replay,
        show_secrets=show_secrets,
        secret_patterns=secret_patterns,
        store_options=store_options,
        config=config,
    )
    app.run(headless=headless)
    if app.return_code:
        raise SystemExit(app.return_code)
