"""An info line that never wraps (the session's and the replay's header).

Its parts are joined with `` · ``; while they do not fit the width, the parts
named droppable go first, in the order given (the user before the app, say),
then the line is cut with an ellipsis at its end -- so a status word that comes
early is never cut, and a cut always says so. Refitted on every resize."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text

from ..text import literal
from .plain import Static

SEP = " · "


def fit_parts(parts: Sequence[Text | str], width: int, drop: Iterable[int] = ()) -> Text:
    """`` a · b · c`` at most ``width`` cells: the parts at the indices of ``drop``
    left out one by one until it fits, then an ellipsis at the end."""
    kept = [literal(p) if isinstance(p, str) else p for p in parts]
    alive = list(range(len(kept)))

    def join() -> Text:
        return Text(" ").append_text(Text(SEP).join(kept[i] for i in alive))

    line = join()
    for i in drop:
        if line.cell_len <= width:
            break
        if i in alive and len(alive) > 1:
            alive.remove(i)
            line = join()
    line.truncate(max(width, 1), overflow="ellipsis")
    return line


class FitLine(Static):
    """A one-line header: :meth:`show` its parts; see the module docstring."""

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(text, id=id, classes=classes)
        self._parts: list[Text | str] | None = None
        self._drop: tuple[int, ...] = ()

    def show(self, parts: Sequence[Text | str], drop: Iterable[int] = ()) -> None:
        self._parts, self._drop = list(parts), tuple(drop)
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        if self._parts is not None:
            width = self.size.width or self.app.size.width
            self.update(fit_parts(self._parts, width, self._drop), layout=False)
