"""``google.adk.events`` look-alike: ``Event``, ``EventActions``, ``RequestInput`` and the response helpers."""

from .._events import (
    REQUEST_INPUT_FUNCTION_CALL_NAME,
    Event,
    EventActions,
    RequestInput,
    create_request_input_response,
    get_request_input_interrupt_ids,
    has_request_input_function_call,
)

__all__ = [
    "REQUEST_INPUT_FUNCTION_CALL_NAME",
    "Event",
    "EventActions",
    "RequestInput",
    "create_request_input_response",
    "get_request_input_interrupt_ids",
    "has_request_input_function_call",
]
