"""The kind of an event (:attr:`engine.models.Event.kind`) read from its stored
JSON form, without pydantic: a long event log's lines (``hitl events``) classify
each event without building it, and a read that needs no model starts without
pydantic's import."""

from __future__ import annotations

from typing import Any

__all__ = ["ACTION_KINDS", "stored_kind"]

ACTION_KINDS = ("redrive", "cancel", "fail", "claim", "assign", "release", "approve")
"""Operator actions that are an event's kind (:attr:`engine.models.Event.kind`)."""


def stored_kind(data: dict[str, Any]) -> str:
    """:attr:`~engine.models.Event.kind` of the event whose JSON form (``Event.to_json``, as the
    store keeps it) is ``data``: a long event log's lines read it without building
    each Event (tests/cli/test_event_log_speed_paths.py holds the two to the same answer)."""
    info = data.get("node_info")
    if info is None and data.get("author") == "user":
        parts = (data.get("content") or {}).get("parts") or ()
        if any(p.get("function_response") is not None for p in parts):
            return "response"
        action = (data.get("custom_metadata") or {}).get("action")
        return action if action in ACTION_KINDS else "message"
    if info and info.get("lifecycle"):
        return str(info["lifecycle"])
    if data.get("long_running_tool_ids"):
        return "interrupt"
    if data.get("error_code"):
        return "error"
    if data.get("output") is not None:
        return "output"
    if data.get("state_delta"):
        return "state"
    return "event"
