"""``engine.adk``: Google ADK 2.x's workflow API on this engine.

An ADK 2.x workflow module runs here with its imports changed::

    from google.adk import Context, Event, Workflow      ->  from engine.adk import ...
    from google.adk.events import RequestInput           ->  from engine.adk.events import ...
    from google.adk.workflow import BaseNode, node, ...  ->  from engine.adk.workflow import ...
    from google.adk.runners import Runner                ->  from engine.adk.runners import ...
    from google.adk.sessions import InMemorySessionService -> from engine.adk.sessions import ...
    from google.adk.apps import App                      ->  from engine.adk.apps import ...
    from google.genai import types                       ->  from engine.adk.genai import types

The names and signatures are ADK's; the engine underneath is this project's
(run ids, interrupts, resume, persistence, validation), so where DESIGN.md
section 4 differs from ADK this does too (README, "Coming from ADK").
"""

from ._context import Context
from ._events import Event, RequestInput
from ._nodes import BaseNode, FunctionNode, JoinNode, ParallelWorker, RetryConfig, node
from ._runner import App, InMemoryRunner, InMemorySessionService, Runner
from ._workflow import Workflow

__all__ = [
    "App",
    "BaseNode",
    "Context",
    "Event",
    "FunctionNode",
    "InMemoryRunner",
    "InMemorySessionService",
    "JoinNode",
    "ParallelWorker",
    "RequestInput",
    "RetryConfig",
    "Runner",
    "Workflow",
    "node",
]
