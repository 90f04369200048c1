"""pydantic's plugin lookup, spared for a command that runs turns when no plugin is installed.

The first validator a process builds makes pydantic look for plugins through
importlib.metadata; :func:`skip_empty_plugin_scan` answers that lookup from a
quick look at the path instead, and keeps importlib.metadata itself unimported.
Only the commands that write or run turns import this module (console.cli.options.open_store).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any


def skip_empty_plugin_scan() -> None:
    """Spare a command that runs turns pydantic's plugin lookup when no plugin is installed.

    The first validator a process builds makes pydantic look for plugins: it
    reads the entry points of every installed distribution through
    importlib.metadata (~5 ms of a cold ``hitl resume`` with 150 packages).
    The same look, done here over the ``*.dist-info``/``*.egg-info`` folders on
    ``sys.path`` (a quarter of the cost), finding no ``[pydantic]`` entry point,
    gives pydantic's plugin cache that answer (no plugins) before its first
    lookup, which then has nothing left to read: the plugins it uses are the
    same (none). Wherever the look is not sure to see what importlib.metadata
    would -- a zip or egg on the path, a finder of its own kind -- or the
    operator set ``PYDANTIC_DISABLE_PLUGINS``, nothing changes. The process's
    environment is left as it is (the app's child processes see what the
    operator set). A pydantic without that cache ignores the answer: its own
    lookup runs, as before.

    pydantic's loader imports importlib.metadata when it is imported, which a
    spared lookup then never uses: with email, zipfile, csv and
    importlib.resources behind it, ~12 ms of an installed ``hitl resume``. So
    the loader is handed a stand-in that imports it when first read from
    (:func:`_import_plugin_loader`)."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ or not _no_pydantic_plugins():
        return
    _import_plugin_loader()
    from pydantic.plugin import _loader

    if getattr(_loader, "_plugins", {}) is None:  # not looked up yet
        _loader._plugins = {}


class _ImportedOnFirstRead(ModuleType):
    """Stands in for importlib.metadata while it is not imported: reading one of
    its functions gives a function that imports the module when first called
    (pydantic 2.14's loader runs ``from importlib.metadata import entry_points``
    at its import); any other read but a dunder imports the module and is its own attribute."""

    FUNCTIONS = frozenset({"distribution", "distributions", "entry_points", "files", "metadata",
                           "packages_distributions", "requires", "version"})

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # e.g. the import system's look for a package's __path__: none yet
            raise AttributeError(attr)
        if attr not in self.FUNCTIONS:
            return getattr(self._module(), attr)

        def on_first_call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._module(), attr)(*args, **kwargs)

        on_first_call.__name__ = on_first_call.__qualname__ = attr
        return on_first_call

    def _module(self) -> ModuleType:
        import sys

        if sys.modules.get(self.__name__) is self:  # not the stand-in again
            del sys.modules[self.__name__]
        import importlib.metadata  # the one module this stands in for, by its fixed name

        return importlib.metadata


def _import_plugin_loader() -> None:
    """Import pydantic's plugin loader with a stand-in for importlib.metadata if that is not imported yet.

    Only the loader holds the stand-in (pydantic 2.13: the module, 2.14: its
    ``entry_points``): ``sys.modules`` holds it just while the loader's module
    runs its import of importlib.metadata, so anyone else
    importing that module later gets it as usual; a lookup the loader runs after
    all (its answer reset, or another pydantic) reads through the stand-in."""
    import sys

    import pydantic.plugin  # noqa: F401  (pydantic itself, before the stand-in is put in place)

    name = "importlib.metadata"
    if name in sys.modules or "pydantic.plugin._loader" in sys.modules:
        return
    stand_in = sys.modules[name] = _ImportedOnFirstRead(name)
    try:
        import pydantic.plugin._loader  # noqa: F401
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]


def _no_pydantic_plugins() -> bool:
    """No distribution on ``sys.path`` declares a ``pydantic`` entry point (False when unsure)."""
    import sys

    for finder in sys.meta_path:  # what importlib.metadata.distributions() asks
        # (the interpreter's own path finder, told by name: this module imports no importlib)
        standard = getattr(finder, "__module__", "") == "_frozen_importlib_external" and getattr(finder, "__qualname__", "") == "PathFinder"
        if not standard and hasattr(finder, "find_distributions"):
            return False
    for entry in sys.path:
        try:
            folder = os.scandir(entry or ".")
        except NotADirectoryError:  # a zip: importlib.metadata reads distributions inside it
            return False
        except OSError:  # missing: no distributions
            continue
        with folder:
            for item in folder:
                name = item.name.lower()
                if name.endswith(".egg"):
                    return False
                if not name.endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(item.path, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                        text = f.read()
                except OSError:  # none (or an egg-info file): no entry points
                    continue
                if "pydantic" in text and any(
                    line.strip()[1:-1].strip() == "pydantic" for line in text.splitlines() if line.strip().startswith("[")
                ):
                    return False
    return True
