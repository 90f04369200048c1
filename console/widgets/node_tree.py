"""``NodeTree``: one invocation's node runs as a Tree, drawn from a Projection.

The projection (``engine.projection``) decides every status, run id and pending
id; this widget only spells them. It is updated by path: :meth:`NodeTree.update_paths`
relabels the touched nodes and adds new runs where they belong, so a live
session never rebuilds (or flickers) the whole tree.

Rows follow :func:`engine.views.visible_children` (the folding rule ``hitl show``
uses too): of a loop's runs only the latest run of each node is a row; the
earlier ones sit under one ``⋯ N earlier runs`` node before the parent's rows,
whose children are created only when it is expanded. Statuses are
:func:`engine.views.display_status`: the projected one, or INTERRUPTED / IN
DOUBT once :meth:`NodeTree.set_liveness` passes ``engine.liveness``'s verdict.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from engine import views
from engine.liveness import is_mid_run
from engine.models import NodeStatus
from engine.projection import NodeRun, Projection
from engine.redact import Redactor
from engine.status import DisplayStatus

from ..actions import bindings
from ..text import clean, clean_text, literal
from .format import STATUS_CLASSES, STATUS_ICON, id_list, short, short_id
from .nav import Navigable

ROOT = "#root"
FOLD = "#fold:"
FOLD_WINDOW = 200
"""Earlier runs a fold lists when it is opened: the latest ones, under a fold of
the rest (opened the same way), so no key lists a 46,000-run loop at once."""
DATA = 400
"""Characters of a value (output, message, error) a label is built with: wider than any
terminal; :meth:`NodeTree.render_label` cuts each line at the widget's width."""

FIND_LABELS_HERE = 2 * FOLD_WINDOW
"""A fold of more runs than this is labelled for ``/`` in a thread, not on a key."""

FIND_OPENS = 64
"""Folds one ``/`` move opens at most on its way to a match (a fold's window may
hold another fold: the older runs)."""


def run_label(
    run: NodeRun, proj: Projection, style: dict[str, Style], display: DisplayStatus | None = None, *, red: Redactor
) -> Text:
    """``approve@1 ◆ WAITING  approve-b "Approve B?"`` -- one line per run
    (``display``: the word to show, by default the projected status; data masked by ``red``)."""
    word = display or DisplayStatus.of(run.status)
    t = Text()
    t.append(clean(f"{run.name}@{run.run_id}", one_line=True), style.get("name", Style()))
    t.append(" ")
    t.append(f"{STATUS_ICON[word]} {word}", style.get(word.css_class, Style()))
    if run.resumed:
        t.append(" ↻", style.get("resumed", Style()))
    extra = _extra(run, proj, red, word)
    if extra:
        t.append("  ")
        t.append(extra, style.get("detail", Style()))
    return t


def _extra(run: NodeRun, proj: Projection, red: Redactor, display: DisplayStatus | None = None) -> str:
    inv = run.invocation_id
    if run.status is NodeStatus.WAITING:
        own = run.own_pending
        if own and not run.children:
            if len(own) == 1:
                itr = proj.interrupts.get((inv, own[0]))
                msg = itr.message if itr else ""
                return f"{own[0]} " + (f'"{short(msg, DATA, red)}"' if msg else "")
            return id_list(own)
        pending = proj.pending_ids(inv, run.path)
        return f"waits on {len(pending)}: {id_list(pending, 2)}" if pending else ""
    if run.status is NodeStatus.FAILED:
        return short(f"{run.error_code}: {run.error_message}", DATA, red) if run.error_code else ""
    if run.status is NodeStatus.COMPLETED:
        if run.auto_completed:
            return "answered → " + short(run.output, DATA, red, quoted=True)
        return "" if run.output is None or run.is_container else "→ " + short(run.output, DATA, red)
    if run.status is NodeStatus.PENDING:
        return "will re-execute" if run.rerun_on_resume else ""
    if display is DisplayStatus.IN_DOUBT:
        return "started, no end record"
    if display is DisplayStatus.INTERRUPTED:
        return "stopped mid-run"
    if run.unfinished:
        return "started, no end record yet"
    return ""


def invocation_label(
    proj: Projection, invocation_id: str, style: dict[str, Style], interrupted: bool = False, *, red: Redactor,
    queued: bool = False,
) -> Text:
    inv = proj.invocations.get(invocation_id)
    word = views.invocation_display(proj, invocation_id, interrupted, queued)
    t = Text()
    t.append("invocation ", style.get("detail", Style()))
    t.append(short_id(invocation_id, 14), style.get("name", Style()))
    if word is not None:
        t.append(" ")
        t.append(f"{STATUS_ICON[word]} {word}", style.get(word.css_class, Style()))
    if inv and inv.message:
        t.append(f'  "{short(inv.message, DATA, red)}"', style.get("detail", Style()))
    return t


def liveness_word(proj: Projection, invocation_id: str, seen: Any, red: Redactor) -> Text:
    """The session screen's word for its invocation: the read model's, with what
    liveness (``seen``: ``interrupted``, ``in_doubt``, ``queued_for``, ``held``) says
    -- ``⚠ INTERRUPTED mid-run, N in doubt`` when no process runs it (the log alone
    still says RUNNING), with why the workers hold its turn if they do (as ``hitl
    show`` says it), ``◷ QUEUED for a worker of APP`` when a turn request waits."""
    word = views.invocation_display(proj, invocation_id, seen.interrupted, seen.queued_for is not None)
    status = word.value if word else "-"
    t = Text(f"{STATUS_ICON.get(status, '')} {status}", "b red" if seen.interrupted else "")
    if seen.interrupted:
        t.append(" mid-run" + (f", {len(seen.in_doubt)} in doubt" if seen.in_doubt else ""), "b red")
        if seen.held:
            t.append(f" · held by the workers: {short(' '.join(seen.held.split()), 80, red)}", "b yellow")
    elif seen.queued_for is not None:
        t.append(f" for a worker of {short(seen.queued_for, 30, red)}", "b")
    return t


def _runs_under(proj: Projection, invocation_id: str, paths: Iterable[str]) -> Iterator[NodeRun]:
    """The runs at ``paths`` and every run below them, depth first."""
    stack = list(reversed(list(paths)))
    while stack:
        run = proj.get(invocation_id, stack.pop())
        if run is not None:
            yield run
            stack.extend(reversed(run.children))


def _texts(
    paths: Sequence[str], runs: Iterable[NodeRun], label: Callable[[NodeRun], Text]
) -> tuple[Sequence[str], list[str], list[int]]:
    """(``paths``, the lower-case label of each run under them, depth first, and the
    index in ``paths`` of the run each one is under): what ``/`` matches a fold by."""
    index = {p: i for i, p in enumerate(paths)}
    texts: list[str] = []
    owners: list[int] = []
    top = 0
    for run in runs:
        top = index.get(run.path, top)
        texts.append(label(run).plain.lower())
        owners.append(top)
    return paths, texts, owners


class _Window(Sequence[str]):
    """``paths[start:stop]`` without copying them (a fold's older runs)."""

    def __init__(self, paths: Sequence[str], start: int, stop: int) -> None:
        self._paths, self._start, self._stop = paths, start, stop

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._paths[self._start + i % len(self)]


class NodeTree(Navigable, Tree[str]):
    """The node runs of one invocation. ``node.data`` is the run's path.
    The console's navigation keys (:class:`~console.widgets.nav.Navigable`) move
    over its visible lines; ``y`` copies the node path under the cursor."""

    AREA = "tree"
    BINDINGS: ClassVar[list[BindingType]] = bindings("tree")

    COMPONENT_CLASSES: ClassVar[set[str]] = Tree.COMPONENT_CLASSES | STATUS_CLASSES | {
        "nodetree--name",
        "nodetree--detail",
        "nodetree--resumed",
        "nodetree--fold",
        "nodetree--marked",
    }

    def __init__(self, *, redactor: Redactor, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", data=ROOT, id=id, classes=classes)
        self.redactor = redactor
        """Masks the data in labels (outputs, messages, errors): the app's Redactor."""
        self.show_root = True
        self.guide_depth = 3
        self.proj: Projection | None = None
        self.invocation_id: str | None = None
        self._by_path: dict[str, TreeNode[str]] = {}
        self._folds: dict[str, Sequence[str]] = {}
        """fold node data -> paths not yet created under it."""
        self._fold_texts: dict[str, tuple[Sequence[str], list[str], list[int]]] = {}
        """fold key -> (its paths, the texts of its runs and those below them, the index of
        the run each is under), :meth:`folded_texts`."""
        self._preparing: Projection | None = None
        """The projection whose folds a thread is labelling for ``/`` (:meth:`prepare_find`)."""
        self._styles: dict[str, Style] | None = None
        self.marked: set[str] = set()
        """Runs whose open ids are selected for answering: their labels start with ``●``."""
        self.interrupted = False
        """``engine.liveness`` says the invocation stopped mid-run (:meth:`set_liveness`)."""
        self.in_doubt: frozenset[str] = frozenset()
        """Leaf paths liveness reports in doubt."""
        self.queued = False
        """``engine.liveness`` says a turn request waits for a worker (the root reads QUEUED)."""
        self._shown: dict[tuple[str, str, str | None], str] = {}
        """(parent path, name, call key) -> the path of the run shown as its row."""

    def process_label(self, label: str | Text) -> Text:
        """A ``str`` label is literal text, never markup."""
        return super().process_label(literal(label, one_line=True) if isinstance(label, str) else clean_text(label))

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        """The line cut at the widget's width with ``…`` (a wider tree shows more of an
        output or a question; a resize re-renders every line), never before the end of
        the status word: the name, run id and status stay whole."""
        text = super().render_label(node, base_style, style)
        room = self.scrollable_content_region.width - self._guide_width(node)
        if room <= 0 or text.cell_len <= room:
            return text
        head = text.plain.find("  ")  # run_label / invocation_label: the details follow two spaces
        text.truncate(max(room, head + 1 if head >= 0 else 0), overflow="ellipsis")
        return text

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """The scrollbar takes columns from the labels: cut them again (a resize does too)."""
        self._invalidate()

    def _guide_width(self, node: TreeNode[str]) -> int:
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        return depth * self.guide_depth if self.show_root else max(depth - 1, 0) * self.guide_depth

    # ------------------------------------------------------------ styles
    @property
    def styles_map(self) -> dict[str, Style]:
        if self._styles is None:
            get = self.get_component_rich_style
            m = {c: get(c, partial=True) for c in STATUS_CLASSES}
            m.update(
                name=get("nodetree--name", partial=True),
                detail=get("nodetree--detail", partial=True),
                resumed=get("nodetree--resumed", partial=True),
                fold=get("nodetree--fold", partial=True),
                marked=get("nodetree--marked", partial=True),
            )
            self._styles = m
        return self._styles

    def notify_style_update(self) -> None:
        self._styles = None
        super().notify_style_update()

    # ------------------------------------------------------------ building
    def load(self, proj: Projection, invocation_id: str, *, cursor_path: str | None = None) -> None:
        """(Re)build the whole tree: on open, on invocation switch, after history loads."""
        same = invocation_id == self.invocation_id
        collapsed = {p for p, n in self._by_path.items() if not n.is_expanded} if same else set()
        opened = {p for p, n in self._by_path.items() if p.startswith(FOLD) and n.is_expanded} if same else set()
        keep = cursor_path or (self.cursor_path if invocation_id == self.invocation_id else None)
        if invocation_id != self.invocation_id or not is_mid_run(proj, invocation_id):
            self.interrupted, self.in_doubt, self.queued = False, frozenset(), False  # a verdict holds for one mid-run invocation
        self.proj, self.invocation_id = proj, invocation_id
        self.clear()
        self._by_path.clear()
        self._folds.clear()
        self._fold_texts.clear()
        self._shown.clear()
        self.root.set_label(
            invocation_label(proj, invocation_id, self.styles_map, self.interrupted, red=self.redactor, queued=self.queued)
        )
        self.root.expand()
        inv = proj.invocations.get(invocation_id)
        for path in inv.roots if inv else []:
            run = proj.get(invocation_id, path)
            if run is not None:
                self._add_subtree(self.root, run, collapsed)
        if keep and cursor_path is None and keep not in self._by_path:
            keep = self._in_place_of(keep, opened)
        if not (keep and self.select_path(keep)):
            _ = self.last_line
            self.move_cursor(self.root)

    def _in_place_of(self, path: str, opened: set[str]) -> str | None:
        """Where the cursor goes when ``path``, its row, went into a fold of earlier
        runs (a loop re-ran it since): onto the run that took its place, rather than
        opening a fold of thousands of runs (a replay step or a live update rebuilt
        the tree with every earlier run drawn); into the fold when the operator had
        opened it (``opened``: the fold nodes expanded before the rebuild)."""
        run = self.proj.get(self.invocation_id, path) if self.proj and self.invocation_id else None
        if run is None or run.parent is None or FOLD + run.parent in opened:
            return path
        return self._shown.get((run.parent, run.name, run.call_key))

    def _add_subtree(self, parent: TreeNode[str], run: NodeRun, collapsed: set[str] | frozenset[str] = frozenset()) -> TreeNode[str]:
        assert self.proj is not None
        node = parent.add(
            self._label(run),
            data=run.path,
            expand=run.path not in collapsed,
            allow_expand=bool(run.children) or run.is_container,
        )
        self._by_path[run.path] = node
        kids = views.visible_children(self.proj, run)
        if kids.folded:
            key = FOLD + run.path
            fold = node.add(self._fold_label(kids.folded), data=key, expand=False, allow_expand=True)
            self._folds[key] = kids.earlier  # lazy for a long loop: read when the fold is opened
            self._by_path[key] = fold
        for child, _ in kids.shown:
            self._shown[(run.path, child.name, child.call_key)] = child.path
            self._add_subtree(node, child, collapsed)
        return node

    def _label(self, run: NodeRun, proj: Projection | None = None) -> Text:
        proj = proj if proj is not None else self.proj
        assert proj is not None
        label = run_label(run, proj, self.styles_map, views.display_status(run, self.interrupted, self.in_doubt),
                          red=self.redactor)
        if run.path in self.marked:
            label = Text("● ", self.styles_map.get("marked", Style())) + label
        return label

    def set_marked(self, paths: set[str]) -> None:
        """Mark these runs (selected ids) and relabel only the runs whose mark changed."""
        changed = paths ^ self.marked
        self.marked = set(paths)
        if not changed or self.proj is None or self.invocation_id is None:
            return
        for path in changed:
            node = self._by_path.get(path)
            run = self.proj.get(self.invocation_id, path)
            if node is not None and run is not None:
                node.set_label(self._label(run))

    def set_liveness(self, interrupted: bool, in_doubt: frozenset[str], queued: bool = False) -> None:
        """``engine.liveness``'s verdict on the invocation: relabel the runs
        whose display state it changes (INTERRUPTED, IN DOUBT) and the root
        (QUEUED too: a turn request waits for a worker)."""
        if (interrupted, in_doubt, queued) == (self.interrupted, self.in_doubt, self.queued):
            return
        self.interrupted, self.in_doubt, self.queued = interrupted, in_doubt, queued
        proj, inv = self.proj, self.invocation_id
        if proj is None or inv is None:
            return
        for path, node in self._by_path.items():
            run = proj.get(inv, path)
            if run is not None and run.status in (NodeStatus.RUNNING, NodeStatus.PENDING):
                node.set_label(self._label(run))
        self.root.set_label(invocation_label(proj, inv, self.styles_map, interrupted, red=self.redactor, queued=queued))

    def _fold_label(self, n: int) -> Text:
        return Text(f"⋯ {n:,} earlier runs (expand to list)", self.styles_map["fold"])

    def _populate_fold(self, key: str, around: int | None = None) -> None:
        """List a window of the fold's runs: its latest ``FOLD_WINDOW`` (or those
        around the run at index ``around``, for ``/``), with a fold of the runs
        before it and, around a run, one of those after it."""
        paths = self._folds.pop(key, None)
        if not paths or self.proj is None or self.invocation_id is None:
            return
        fold = self._by_path[key]
        labelled = self._fold_texts.pop(key, None)

        def carry(sub: str, window: _Window, start: int, stop: int) -> None:
            """The new fold's texts: a slice of this one's (``/`` labels nothing again)."""
            if labelled is not None and labelled[0] is paths:
                owners = labelled[2]
                a, b = bisect.bisect_left(owners, start), bisect.bisect_left(owners, stop)
                self._fold_texts[sub] = (window, labelled[1][a:b], [o - start for o in owners[a:b]])

        hi = len(paths) if around is None else min(len(paths), around + max(1, FOLD_WINDOW // 2))
        lo = max(0, hi - FOLD_WINDOW)
        if lo:  # the older runs: one fold more, listed when it is opened
            rest = f"{key}<{lo}"
            self._by_path[rest] = fold.add(self._fold_label(lo), data=rest, expand=False, allow_expand=True)
            self._folds[rest] = window = _Window(paths, 0, lo)
            carry(rest, window, 0, lo)
        for i in range(lo, hi):
            run = self.proj.get(self.invocation_id, paths[i])
            if run is not None:
                self._add_subtree(fold, run)
        if hi < len(paths):  # the later runs (a window opened around an older run)
            later = f"{key}>{hi}"
            label = Text(f"⋯ {len(paths) - hi:,} later runs (expand to list)", self.styles_map["fold"])
            self._by_path[later] = fold.add(label, data=later, expand=False, allow_expand=True)
            self._folds[later] = window = _Window(paths, hi, len(paths))
            carry(later, window, hi, len(paths))

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[str]) -> None:
        data = event.node.data
        if data and data.startswith(FOLD) and data in self._folds:
            self._populate_fold(data)

    # ------------------------------------------------------------ updating
    def update_paths(self, paths: Iterable[str]) -> list[str]:
        """Relabel touched runs, create new ones; return the paths created."""
        proj, inv = self.proj, self.invocation_id
        if proj is None or inv is None:
            return []
        created: list[str] = []
        for path in sorted(set(paths), key=lambda p: p.count("/")):
            run = proj.get(inv, path)
            if run is None:
                continue
            node = self._by_path.get(path)
            if node is not None:
                node.set_label(self._label(run))
                if run.children and not node.allow_expand:
                    node.allow_expand = True
                continue
            parent = self.root if run.parent is None else self._by_path.get(run.parent)
            if parent is None:
                continue  # under a fold that was never expanded: created when it is
            if run.parent is not None and (run.parent, run.name, run.call_key) in self._shown:
                # A loop re-ran a node: its earlier row moves into the fold (rebuild, keeping cursor and folds).
                self.load(proj, inv)
                return [path]
            if run.parent is not None:
                self._shown[(run.parent, run.name, run.call_key)] = run.path
            self._add_subtree(parent, run)
            if not parent.allow_expand:
                parent.allow_expand = True
            created.append(path)
        self.root.set_label(invocation_label(proj, inv, self.styles_map, self.interrupted, red=self.redactor, queued=self.queued))
        return created

    # ------------------------------------------------------------ navigation
    def nav_index(self) -> int:
        return self.cursor_line

    def nav_count(self) -> int:
        return self.last_line + 1

    def nav_goto(self, index: int) -> None:
        self.move_cursor_to_line(index)
        self.scroll_to_line(index, animate=False)

    def nav_text(self, index: int) -> str | None:
        node = self.get_node_at_line(index)
        return None if node is None else str(node.label)  # a Text's str is its plain text

    def matches(self) -> list[int]:
        """``/`` searches folded runs too, without unfolding them: the lines that
        match, and the line of each fold holding a run (or a child of one) whose
        label matches -- :meth:`find_from` opens a fold when the cursor is to land
        in it. A large fold's texts are made off the UI's thread (:meth:`prepare_find`,
        when a long history loads, else when a find first needs them: until then it
        is not counted); a small one's here. (Typing a find on a loop of 46,000 runs
        labelled every one and unfolded every matching window, recursively, on each
        key: seconds.)"""
        lines = super().matches()
        needle = self.find_query.lower()
        proj, inv = self.proj, self.invocation_id
        if not needle or not self._folds or proj is None or inv is None:
            return lines
        found = set(lines)
        for key, paths in list(self._folds.items()):
            node = self._by_path.get(key)
            if node is not None and self._fold_match(key, paths, needle, 1) is not None:
                parent = node.parent
                while parent is not None and not parent.is_expanded:  # reachable by the cursor
                    parent.expand()
                    parent = parent.parent
                if node.line >= 0:
                    found.add(node.line)
        return sorted(found)

    def _fold_match(self, key: str, paths: Sequence[str], needle: str, direction: int) -> int | None:
        """The index in ``paths`` of the first (``direction`` < 0: last) of the fold's
        runs whose label, or that of a run below it, holds ``needle``; None: none."""
        kept = self._fold_texts.get(key)
        if kept is None or kept[0] is not paths:  # not labelled yet, or a loop grown since
            if len(paths) > FIND_LABELS_HERE:  # labelled in a thread; the find goes on when they are
                self.prepare_find()
                return None
            assert self.proj is not None and self.invocation_id is not None
            kept = self._fold_texts[key] = _texts(paths, _runs_under(self.proj, self.invocation_id, paths), self._label)
        texts, owners = kept[1], kept[2]
        order = range(len(texts)) if direction >= 0 else range(len(texts) - 1, -1, -1)
        return next((owners[k] for k in order if needle in texts[k]), None)

    def folded_texts(self, proj: Projection, invocation_id: str) -> dict[str, tuple[Sequence[str], list[str], list[int]]]:
        """Each fold's runs' labels (and those of the runs below them) as lower-case
        text, for ``/`` (:meth:`matches`): made in a thread from ``proj``, a fork of
        the tree's projection (records shared with it are read-only for both).
        Folded runs are finished ones: the live updates change the runs shown."""
        return {key: _texts(paths, _runs_under(proj, invocation_id, paths), lambda run: self._label(run, proj))
                for key, paths in list(self._folds.items())}

    def prepare_find(self, then: Callable[[], None] | None = None) -> None:
        """Label the folded runs for ``/`` in a thread (:meth:`folded_texts`), then
        call ``then`` on the UI's thread (also when there is nothing to label);
        without ``then``, go on with the find being typed."""
        proj, inv = self.proj, self.invocation_id
        if proj is None or inv is None or not self._folds:
            if then is not None:
                then()
            return
        if then is None and self._preparing is proj:
            return  # under way
        self._preparing = proj
        fork = proj.fork()  # the thread reads its own projection: live updates apply to ours

        def label() -> None:
            try:
                texts = self.folded_texts(fork, inv)
            except Exception:  # noqa: BLE001 -- a cache: without it / labels on demand
                texts = {}
            self.app.call_from_thread(done, texts)

        def done(texts: dict[str, tuple[Sequence[str], list[str], list[int]]]) -> None:
            if self._preparing is proj:
                self._preparing = None
            if proj is self.proj:  # else the tree was loaded again meanwhile: its folds differ
                self._fold_texts.update(texts)
            if then is not None:
                then()
            elif self.find_query and proj is self.proj and self.nav_index() not in self.matches():
                self.find_from(0, 1, announce=False)

        self.run_worker(label, thread=True, exclusive=True, group="find-texts", exit_on_error=False)

    def find_from(self, offset: int, direction: int, *, announce: bool = True) -> int | None:
        """As :meth:`Navigable.find_from`; a match that is a fold's line (for the runs
        folded in it) opens a window of the fold around the matching run and goes on
        to the match there."""
        needle = self.find_query.lower()
        for _ in range(FIND_OPENS):
            target = super().find_from(offset, direction, announce=False)
            if target is None:
                return None  # said so already
            node = self.cursor_node
            key = node.data if node is not None else None
            paths = self._folds.get(key) if key is not None else None
            if node is None or key is None or paths is None or needle in str(node.label).lower():
                break  # a run's line, or a fold whose own line matches
            index = self._fold_match(key, paths, needle, direction)
            if index is None:
                break
            self._populate_fold(key, around=index)
            node.expand()
            run_node = self._by_path.get(paths[index])
            if run_node is None:
                break
            if direction < 0:  # from the run's last line back: a match below it comes first
                while run_node.children and run_node.is_expanded:
                    run_node = run_node.children[-1]
            self._go(max(run_node.line, 0))
            offset = 0
        return super().find_from(0, direction, announce=True) if announce else self.nav_index()

    async def copy_payload(self) -> tuple[str, str] | None:
        path = self.cursor_path
        return ("node path", path) if path else None

    @property
    def cursor_path(self) -> str | None:
        node = self.cursor_node
        if node is None or node.data is None or node.data == ROOT or node.data.startswith(FOLD):
            return None
        return node.data

    def node_for(self, path: str) -> TreeNode[str] | None:
        node = self._by_path.get(path)
        if node is None and self.proj is not None and self.invocation_id is not None:
            # Maybe folded: open the folds on the way down.
            p: str | None = path
            chain: list[str] = []
            while p is not None:
                chain.append(p)
                run = self.proj.get(self.invocation_id, p)
                p = run.parent if run else None
            down = chain[::-1]
            for anc, child in zip(down, [*down[1:], None], strict=True):
                key = FOLD + anc
                if key in self._folds:
                    self._populate_fold(key)
                    self._by_path[key].expand()
                while child is not None and child not in self._by_path:
                    # an older run: in the fold of the rest, window after window
                    older = next((k for k in self._folds if k.startswith(key + "<")), None)
                    if older is None:
                        break
                    self._populate_fold(older)
                    self._by_path[older].expand()
            node = self._by_path.get(path)
        return node

    def select_path(self, path: str) -> bool:
        """Expand the ancestors of ``path`` and put the cursor on it."""
        node = self.node_for(path)
        if node is None:
            return False
        anc = node.parent
        while anc is not None:
            anc.expand()
            anc = anc.parent
        _ = self.last_line  # number the lines now (the tree builds them lazily)
        self.move_cursor(node)
        self.call_after_refresh(self.scroll_to_node, node, animate=False)
        return True

    def _tree_key(self, path: str) -> tuple[int, ...]:
        """Where ``path`` is in tree order (depth-first, children in the order they
        ran): its position among its siblings at each level from the root down.
        Costs the run's depth, never a walk of the invocation's runs."""
        proj, inv = self.proj, self.invocation_id
        if proj is None or inv is None:
            return ()
        invocation = proj.invocations.get(inv)
        key: list[int] = []
        run = proj.get(inv, path)
        while run is not None:
            parent = proj.get(inv, run.parent) if run.parent is not None else None
            siblings = parent.children if parent is not None else (invocation.roots if invocation else [])
            key.append(siblings.index(run.path) if run.path in siblings else 0)
            run = parent
        return tuple(reversed(key))

    def waiting_paths(self) -> list[str]:
        """WAITING runs that raised open interrupts themselves, in tree order.
        Found from the invocation's interrupts and ordered by :meth:`_tree_key`:
        ``n`` never walks every run (a loop may have 50,000)."""
        proj, inv = self.proj, self.invocation_id
        if proj is None or inv is None:
            return []
        paths = {i.path for i in proj.open_interrupts(inv)}
        runs = [r for r in (proj.get(inv, p) for p in paths) if r is not None]
        waiting = [r.path for r in runs if r.status is NodeStatus.WAITING and r.own_pending]
        return sorted(waiting, key=self._tree_key)

    def next_waiting(self, after: str | None) -> str | None:
        """The first waiting run after ``after`` in tree order, wrapping around."""
        waiting = self.waiting_paths()
        if not waiting:
            return None
        if after is None or self.proj is None or self.proj.get(self.invocation_id or "", after) is None:
            return waiting[0]
        pos = self._tree_key(after)
        at = bisect.bisect_right([self._tree_key(p) for p in waiting], pos)
        return waiting[at % len(waiting)]

    def set_all_expanded(self, expanded: bool) -> None:
        for key, node in self._by_path.items():
            if key.startswith(FOLD):
                continue
            if expanded:
                node.expand()
            else:
                node.collapse()
        self.root.expand()
