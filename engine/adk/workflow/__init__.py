"""``google.adk.workflow`` look-alike: nodes, edges, ``Workflow``, ``RetryConfig`` and the HITL helpers."""

from .._events import (
    REQUEST_INPUT_FUNCTION_CALL_NAME,
    create_request_input_response,
    get_request_input_interrupt_ids,
    has_request_input_function_call,
)
from .._graph import DEFAULT_ROUTE, Graph
from .._node_runner import NodeRunner
from .._nodes import START, BaseNode, Edge, FunctionNode, JoinNode, ParallelWorker, RetryConfig, node
from .._workflow import Workflow

__all__ = [
    "DEFAULT_ROUTE",
    "REQUEST_INPUT_FUNCTION_CALL_NAME",
    "START",
    "BaseNode",
    "Edge",
    "FunctionNode",
    "Graph",
    "JoinNode",
    "NodeRunner",
    "ParallelWorker",
    "RetryConfig",
    "Workflow",
    "create_request_input_response",
    "get_request_input_interrupt_ids",
    "has_request_input_function_call",
    "node",
]
