"""hitl-console engine: workflows that interrupt for a human and resume.

Public API::

    from engine import Workflow, node, RequestInput, JoinNode, START, Runner
    from engine.store import MemoryStore
"""

from types import ModuleType
from typing import TYPE_CHECKING, Any

# Names resolve on first use (PEP 562), so ``import engine`` -- and a command that
# only lists sessions -- does not pay for the runner, the nodes and jsonschema.
_LAZY = {
    "Context": "context",
    "NodeFailed": "context",
    "NodeInterrupted": "context",
    "NodeRunner": "context",
    "HitlError": "errors",
    "WorkflowFailed": "errors",
    "Content": "models",
    "Event": "models",
    "FunctionCall": "models",
    "FunctionResponse": "models",
    "NodeInfo": "models",
    "NodeStatus": "models",
    "Part": "models",
    "Session": "models",
    "START": "nodes",
    "BaseNode": "nodes",
    "FunctionNode": "nodes",
    "JoinNode": "nodes",
    "RequestInput": "nodes",
    "RetryConfig": "nodes",
    "node": "nodes",
    "ParallelWorker": "parallel",
    "Projection": "projection",
    "project": "projection",
    "Runner": "runner",
    "cancel_invocation": "operator_actions",
    "Workflow": "workflow",
}

if TYPE_CHECKING:
    from .context import Context, NodeFailed, NodeInterrupted, NodeRunner
    from .errors import HitlError, WorkflowFailed
    from .models import Content, Event, FunctionCall, FunctionResponse, NodeInfo, NodeStatus, Part, Session
    from .nodes import START, BaseNode, FunctionNode, JoinNode, RequestInput, RetryConfig, node
    from .operator_actions import cancel_invocation
    from .parallel import ParallelWorker
    from .projection import Projection, project
    from .runner import Runner
    from .workflow import Workflow


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(_submodule(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def _submodule(module: str) -> ModuleType:
    # Static imports: the product imports code by name only in its app registry.
    if module == "context":
        from . import context
        return context
    elif module == "errors":
        from . import errors
        return errors
    elif module == "models":
        from . import models
        return models
    elif module == "nodes":
        from . import nodes
        return nodes
    elif module == "operator_actions":
        from . import operator_actions
        return operator_actions
    elif module == "parallel":
        from . import parallel
        return parallel
    elif module == "projection":
        from . import projection
        return projection
    elif module == "runner":
        from . import runner
        return runner
    else:
        from . import workflow
        return workflow


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "START",
    "BaseNode",
    "Content",
    "Context",
    "Event",
    "FunctionCall",
    "FunctionNode",
    "FunctionResponse",
    "HitlError",
    "JoinNode",
    "NodeFailed",
    "NodeInfo",
    "NodeInterrupted",
    "NodeRunner",
    "NodeStatus",
    "ParallelWorker",
    "Part",
    "Projection",
    "RequestInput",
    "RetryConfig",
    "Runner",
    "Session",
    "Workflow",
    "WorkflowFailed",
    "cancel_invocation",
    "node",
    "project",
]
