"""Which open interrupt ids the operator selected, and what they typed.

No Textual here: the session screen and the inbox each own one
:class:`InterruptSelection` and draw it; the tests drive it directly.

One message answers one invocation, so a selection belongs to one
``(session, invocation)``: selecting ids of another invocation starts a new
selection (the methods say so, for the screen to tell the operator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

Key = tuple[str, str]
"""``(session_id, invocation_id)``."""


class InterruptSelection:
    """Selected interrupt ids of one invocation, in the order they were selected."""

    def __init__(self) -> None:
        self.key: Key | None = None
        """The invocation the ids belong to (None: nothing selected)."""
        self._ids: list[str] = []

    @property
    def ids(self) -> list[str]:
        """The selected ids (a copy), in selection order."""
        return list(self._ids)

    def __bool__(self) -> bool:
        return bool(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def ids_for(self, key: Key) -> list[str]:
        """The selected ids when they belong to ``key``, else none."""
        return list(self._ids) if key == self.key else []

    def contains(self, key: Key, interrupt_id: str) -> bool:
        return key == self.key and interrupt_id in self._ids

    def toggle(self, key: Key, ids: Iterable[str]) -> bool:
        """Unselect ``ids`` when all of them are selected, else select the missing
        ones. True when a selection of another invocation was dropped."""
        ids = list(dict.fromkeys(ids))
        moved = self._move_to(key)
        if ids and all(i in self._ids for i in ids):
            self._ids = [i for i in self._ids if i not in ids]
        else:
            self._ids += [i for i in ids if i not in self._ids]
        self._settle()
        return moved

    def add(self, key: Key, ids: Iterable[str]) -> bool:
        """Select ``ids`` too. True when a selection of another invocation was dropped."""
        moved = self._move_to(key)
        self._ids += [i for i in dict.fromkeys(ids) if i not in self._ids]
        self._settle()
        return moved

    def replace(self, key: Key, ids: Iterable[str]) -> None:
        """Exactly ``ids`` of ``key``."""
        self.key, self._ids = key, list(dict.fromkeys(ids))
        self._settle()

    def keep_open(self, key: Key | None, open_ids: Iterable[str]) -> None:
        """Drop ids that are no longer open (answered meanwhile, by anyone), and
        everything when ``key`` is not the selection's invocation."""
        if key != self.key:
            self.clear()
            return
        allowed = set(open_ids)
        self._ids = [i for i in self._ids if i in allowed]
        self._settle()

    def clear(self) -> bool:
        """Unselect everything; True when something was selected."""
        had = bool(self._ids)
        self.key, self._ids = None, []
        return had

    def _move_to(self, key: Key) -> bool:
        moved = self.key is not None and self.key != key and bool(self._ids)
        if self.key != key:
            self.key, self._ids = key, []
        return moved

    def _settle(self) -> None:
        if not self._ids:
            self.key = None


@dataclass
class AnswerDraft:
    """What the operator is answering: kept by the session screen, so the text
    survives closing the editor, a refused submit, or a reload."""

    session_id: str
    invocation_id: str
    app_name: str
    user_id: str
    selected: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """Editor text by interrupt id (also for ids no longer selected)."""
    error: str | None = None
    """The last refusal, shown as a banner when the editor reopens."""
    conflict: bool = False
    """The refusal came from another writer: offer reload and re-apply."""
    unsent: dict[str, str] = field(default_factory=dict)
    """Ids that closed before the operator's text could be sent, and why: their
    text stays on screen (read-only, "not sent") until a write goes through."""
    force: bool = False
    """The operator was told whose claim the ids are under and answers anyway."""

    def settled(self, still_open: Iterable[str]) -> None:
        """A write went through: keep only the texts of ids still open, select none."""
        keep = set(still_open)
        self.texts = {k: v for k, v in self.texts.items() if k in keep}
        self.selected = []
        self.force = False
        self.unsent = {}
