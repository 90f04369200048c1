"""hitl-console engine: workflows that interrupt for a human and resume.

Public API::

    from engine import Workflow, node, RequestInput, JoinNode, START, Runner
    from engine.store import MemoryStore
"""

from .context import Context, NodeFailed, NodeInterrupted, NodeRunner
from .errors import HitlError, WorkflowFailed
from .models import Content, Event, FunctionCall, FunctionResponse, NodeInfo, NodeStatus, Part, Session
from .nodes import START, BaseNode, FunctionNode, JoinNode, RequestInput, RetryConfig, node
from .parallel import ParallelWorker
from .projection import Projection, project
from .runner import Runner, cancel_invocation
from .workflow import Workflow

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
