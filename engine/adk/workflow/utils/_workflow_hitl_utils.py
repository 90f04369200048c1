"""``google.adk.workflow.utils._workflow_hitl_utils`` look-alike: the request-input helpers."""

from ..._events import (
    REQUEST_INPUT_FUNCTION_CALL_NAME,
    create_request_input_response,
    get_request_input_interrupt_ids,
    has_request_input_function_call,
)

__all__ = [
    "REQUEST_INPUT_FUNCTION_CALL_NAME",
    "create_request_input_response",
    "get_request_input_interrupt_ids",
    "has_request_input_function_call",
]
