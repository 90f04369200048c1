"""The app registry: which workflow code runs which app's sessions.

A session records only its ``app_name``. To resume, re-drive or start one, the
caller needs that app's root workflow; :class:`AppRegistry` maps app names to
it. Entries are *specs* -- ``"package.module:attribute"`` -- imported lazily, on
first use, and only ever the specs a user registered: session data never names
code to import. The sample apps (``sample_sessions``) are registered by default.

Ways to register an app::

    registry.register("my_app", my_workflow)            # a node object
    registry.add_spec("my_app=pkg.mod:wf")              # hitl --app my_app=pkg.mod:wf
    registry.add_spec("pkg.my_app:wf")                  # name = last module part: "my_app"
    registry.load_config("hitl.toml")                   # [apps] my_app = "pkg.mod:wf"

A session whose app is not registered or cannot be imported can still be read
(the console opens it read-only); :meth:`AppRegistry.get` raises
:class:`AppUnavailableError` saying why, which every resume action surfaces.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .configfile import read_toml
from .errors import HitlError
from .nodes import BaseNode

if TYPE_CHECKING:  # the runner is imported where one is made: listing commands never load it (their start-up stays short)
    from .runner import Runner
    from .store.base import SessionStore

SAMPLE_APPS: dict[str, str] = {
    "refund_approval": "sample_sessions.refund_approval:workflow",
    "document_review": "sample_sessions.document_review:workflow",
    "deploy_pipeline": "sample_sessions.deploy_pipeline:workflow",
    "labelling_batch": "sample_sessions.labelling_batch:workflow",
    "incident": "sample_sessions.incident:workflow",
    "contract_review": "sample_sessions.contract_review:workflow",
}
"""The sample apps every default registry knows."""


class AppUnavailableError(HitlError):
    """The workflow code for an app is not registered or does not import."""

    def __init__(self, app_name: str, reason: str) -> None:
        super().__init__(f"app {app_name!r} {reason}; its sessions can be read but not resumed")
        self.app_name = app_name
        self.reason = reason


class AppSpecError(HitlError):
    """A malformed ``module:attribute`` spec or config file."""


@dataclass
class _Entry:
    spec: str | None = None
    """``module:attribute``, or None when registered as an object."""
    source: str = "code"
    """Where the entry came from (``samples``, ``--app``, a config path...), for messages."""
    node: BaseNode | None = None
    error: str | None = None
    """Why importing the spec failed (cached so the import is tried once)."""
    dirs: list[str] = field(default_factory=list)
    """Directories added to ``sys.path`` while importing (cwd, the config's directory)."""


def parse_spec(text: str) -> tuple[str, str]:
    """``"name=pkg.mod:attr"`` or ``"pkg.mod:attr"`` -> ``(app_name, "pkg.mod:attr")``.

    Without ``name=`` the app name is the last component of the module path.
    """
    name, eq, spec = text.strip().partition("=")
    if not eq:
        name, spec = "", name
    module, colon, attr = spec.strip().partition(":")
    if not colon or not module or not attr or not all(p.isidentifier() for p in module.split(".")):
        raise AppSpecError(f"app spec {text!r} is not of the form [NAME=]package.module:attribute")
    if not all(p.isidentifier() for p in attr.split(".")):
        raise AppSpecError(
            f"app spec {text!r}: {attr!r} is not an attribute name (expected [NAME=]package.module:attribute)"
        )
    name = name.strip() or module.rsplit(".", 1)[-1]
    return name, f"{module}:{attr}"


class AppRegistry:
    """App name -> root workflow node, resolved lazily from registered specs."""

    def __init__(self, *, samples: bool = True) -> None:
        self._entries: dict[str, _Entry] = {}
        self.deadline_rules: tuple[Any, ...] = ()
        """hitl.toml ``[[deadlines]]`` (:func:`engine.deadlines.load_rules`): every runner built here stores them."""
        if samples:
            for name, spec in SAMPLE_APPS.items():
                self._entries[name] = _Entry(spec=spec, source="samples")

    @classmethod
    def from_options(
        cls, specs: list[str] | tuple[str, ...] = (), config: str | os.PathLike[str] | None = None
    ) -> AppRegistry:
        """The registry the CLI and console build: samples, then the config file,
        then ``--app`` specs (later entries replace earlier ones of the same name)."""
        reg = cls()
        if config is not None:
            reg.load_config(config)
        for spec in specs:
            reg.add_spec(spec, source="--app")
        return reg

    # ------------------------------------------------------------ register
    def register(self, app_name: str, workflow: BaseNode) -> None:
        workflow = _adk_node(workflow)
        if not isinstance(workflow, BaseNode):
            raise TypeError(f"app {app_name!r}: {workflow!r} is not a node")
        self._entries[app_name] = _Entry(node=workflow)

    def add_spec(self, text: str, *, source: str = "code", base_dir: str | None = None) -> str:
        """Register ``[NAME=]module:attribute`` (not imported yet); returns the app name."""
        name, spec = parse_spec(text)
        dirs = [os.getcwd()] + ([base_dir] if base_dir else [])
        self._entries[name] = _Entry(spec=spec, source=source, dirs=dirs)
        return name

    def load_config(self, path: str | os.PathLike[str]) -> list[str]:
        """Register the ``[apps]`` table of a ``hitl.toml``; returns the app names."""
        p = Path(path)
        try:
            data = read_toml(p)
        except FileNotFoundError:
            raise AppSpecError(f"config file {str(p)!r} does not exist") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: tomllib.TOMLDecodeError
            raise AppSpecError(f"config file {str(p)!r} cannot be read: {exc}") from None
        from .deadlines import DeadlineConfigError, load_rules

        try:
            self.deadline_rules = load_rules(data, str(p))
        except DeadlineConfigError as exc:
            raise AppSpecError(str(exc)) from None
        apps = data.get("apps", {})
        if not isinstance(apps, dict):
            raise AppSpecError(f'config file {str(p)!r}: [apps] must be a table of name = "module:attribute"')
        names = []
        for name, spec in apps.items():
            if not isinstance(spec, str):
                raise AppSpecError(f'config file {str(p)!r}: apps.{name} must be a "module:attribute" string')
            names.append(self.add_spec(f"{name}={spec}", source=str(p), base_dir=str(p.parent.resolve())))
        return names

    # --------------------------------------------------------------- query
    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, app_name: object) -> bool:
        return app_name in self._entries

    def spec(self, app_name: str) -> str | None:
        entry = self._entries.get(app_name)
        return entry.spec if entry else None

    def get(self, app_name: str) -> BaseNode:
        """The app's root workflow, importing its spec on first use.

        Raises :class:`AppUnavailableError` (a HitlError) saying why not."""
        entry = self._entries.get(app_name)
        if entry is None:
            raise AppUnavailableError(
                app_name,
                f"is not registered (register it with --app {app_name}=package.module:workflow or in hitl.toml [apps])",
            )
        if entry.node is None and entry.error is None:
            try:
                entry.node = _import(entry)
            except Exception as exc:  # any import-time failure of user code
                entry.error = f"{type(exc).__name__}: {exc}"
        if entry.node is None:
            raise AppUnavailableError(app_name, f"cannot be loaded from {entry.spec} ({entry.source}): {entry.error}")
        return entry.node

    def unavailable_reason(self, app_name: str) -> str | None:
        """None when the app can run, else a one-line reason (for read-only views)."""
        try:
            self.get(app_name)
        except AppUnavailableError as exc:
            return str(exc)
        return None

    def runner(self, app_name: str, store: SessionStore) -> Runner:
        from .runner import Runner

        return Runner(app_name, self.get(app_name), store, deadline_rules=self.deadline_rules)


def _import(entry: _Entry) -> BaseNode:
    assert entry.spec is not None
    module_name, _, attr = entry.spec.partition(":")
    for d in entry.dirs:
        if d not in sys.path:
            sys.path.append(d)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"module {module_name!r} has no attribute {attr!r}") from None
    obj = _adk_node(obj)
    if not isinstance(obj, BaseNode):
        from .runner import Runner

        if isinstance(obj, Runner):  # the README's first mistake: register the Workflow, named as the Runner names it
            raise TypeError(
                f"{entry.spec} is a Runner, not a workflow node: register the Workflow it runs, "
                f"as --app {obj.app_name}={module_name}:<the Workflow's attribute> (NAME is the Runner's app name)"
            )
        raise TypeError(f"{entry.spec} is a {type(obj).__name__}, not a workflow node (the attribute must be the Workflow)")
    return obj


def _adk_node(obj: Any) -> Any:
    """An ``engine.adk`` node (an ADK 2.x workflow run on this engine) or ``App`` as
    the engine node it runs as; anything else unchanged."""
    if not any(k.__module__.startswith("engine.adk.") for k in type(obj).__mro__):
        return obj
    root = getattr(obj, "root", None)  # an App
    if root is not None:
        obj = root
    build = getattr(obj, "_engine_node", None)
    return build() if callable(build) else obj


def default_operator(config: str | os.PathLike[str] | None = None) -> str:
    """Who is writing: ``[console] operator`` of ``hitl.toml`` (``./hitl.toml``, else
    the user's config directory, unless given), else ``$USER``, else the login name; ``""`` when none is known
    (the confirmation then asks for one)."""
    from .configfile import find_config

    found = Path(config) if config is not None else find_config()
    try:
        data = read_toml(found) if found is not None else {}  # no config file anywhere: $USER
        name = data.get("console", {}).get("operator")
        if isinstance(name, str) and name.strip():
            return name.strip()
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):  # ValueError: tomllib.TOMLDecodeError
        pass  # no config, or not ours to judge here: `hitl` reports a bad config
    try:
        if user := os.environ.get("USER"):
            return user
        import getpass  # here: $USER is set in an operator's shell

        return getpass.getuser()
    except Exception:  # noqa: BLE001 -- no login name in this environment
        return ""
